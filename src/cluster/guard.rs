//! The coordinator's Read deny patterns, rebuilt on a worker node.
//!
//! Glob and Grep leave out the files a Read deny rule covers while they search; on a worker
//! they search the worker's files, so the coordinator sends its patterns (absolute globs,
//! their anchors resolved) with each call and the worker answers the question for its own
//! files, each path judged with what it resolves to through the worker's symlinks. Only that
//! question is answered here: the call's permission decision was made on the coordinator.
//! No fetch is allowed by it (a WebFetch redirect is reported, never followed, on a worker).

use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::session::Guard;

/// A guard answering [`Guard::read_denied`] from the coordinator's patterns.
#[derive(Debug)]
pub(super) struct ReadDenies(GlobSet);

impl ReadDenies {
    /// Builds `patterns` as the coordinator's rules build them (`*` stops at `/`); why one
    /// does not compile, naming it.
    pub(super) fn new(patterns: &[String]) -> Result<Self, String> {
        let mut set = GlobSetBuilder::new();
        for p in patterns {
            let glob = GlobBuilder::new(p)
                .literal_separator(true)
                .build()
                .map_err(|e| format!("the Read deny pattern {p:?} does not compile: {e}"))?;
            set.add(glob);
        }
        let set = set
            .build()
            .map_err(|e| format!("the Read deny patterns do not compile: {e}"))?;
        Ok(Self(set))
    }
}

impl Guard for ReadDenies {
    fn read_denied(&self, path: &Path) -> bool {
        crate::paths::candidates(path)
            .iter()
            .any(|c| self.0.is_match(c))
    }

    fn write_denied(&self, _path: &Path) -> bool {
        false
    }

    fn fetch_allowed(&self, _url: &str) -> bool {
        false
    }

    fn judges_fetches(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_the_rules_do_and_bad_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("secret/deep")).unwrap();
        std::fs::write(root.join("secret/deep/k"), "").unwrap();
        std::os::unix::fs::symlink(root.join("secret/deep/k"), root.join("alias")).unwrap();
        let guard = ReadDenies::new(&[
            format!("{}/secret/**", root.display()),
            "**/.env".to_string(),
            format!("{}/*.key", root.display()),
        ])
        .unwrap();
        assert!(guard.read_denied(&root.join("secret/deep/k")));
        assert!(
            guard.read_denied(&root.join("alias")),
            "judged where it points"
        );
        assert!(guard.read_denied(&root.join("a/b/.env")));
        assert!(guard.read_denied(&root.join("x.key")));
        assert!(!guard.read_denied(&root.join("sub/x.key")), "* stops at /");
        assert!(!guard.read_denied(&root.join("open.txt")));
        let err = ReadDenies::new(&["a[".to_string()]).unwrap_err();
        assert!(err.contains("\"a[\""), "{err}");
    }
}
