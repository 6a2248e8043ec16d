//! Path specifiers (SEMANTICS.md §3.4): anchors, gitignore-style globs, symlinks, protected paths.

use std::path::{Component, Path, PathBuf};

use std::collections::HashMap;

use globset::{Candidate, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};

pub(crate) use crate::paths::candidates;
use crate::paths::normalize;

/// Where a rule's relative anchors point.
#[derive(Debug, Clone)]
pub(crate) struct Anchors<'a> {
    /// The directory of the settings file holding the rule (the cwd for flags).
    pub(crate) settings_dir: &'a Path,
    pub(crate) cwd: &'a Path,
    pub(crate) home: &'a Path,
}

/// Turns one path specifier into absolute glob patterns. `is_allow` selects the single-segment
/// directory asymmetry: `src/**` as an allow is only `<cwd>/src/**`, as a deny or ask `src` at any
/// depth.
pub(crate) fn glob_patterns(spec: &str, anchors: &Anchors<'_>, is_allow: bool) -> Vec<String> {
    let (anchor, rest, explicit): (&Path, &str, bool) = if let Some(r) = spec.strip_prefix("//") {
        (Path::new("/"), r, true)
    } else if spec == "~" {
        (anchors.home, "", true)
    } else if let Some(r) = spec.strip_prefix("~/") {
        (anchors.home, r, true)
    } else if let Some(r) = spec.strip_prefix('/') {
        (anchors.settings_dir, r, true)
    } else if let Some(r) = spec.strip_prefix("./") {
        (anchors.cwd, r, true)
    } else {
        (anchors.cwd, spec, false)
    };
    let rest = rest.trim_end_matches('/');
    let mut out = Vec::new();
    for anchor in anchor_variants(anchor) {
        let base = globset::escape(&anchor.to_string_lossy());
        let base = base.trim_end_matches('/');
        let single_dir = rest
            .strip_suffix("/**")
            .is_some_and(|seg| !seg.is_empty() && !seg.contains('/'));
        let any_depth = !explicit && (!rest.contains('/') || (single_dir && !is_allow));
        let pattern = if rest.is_empty() {
            base.to_string()
        } else if any_depth {
            format!("{base}/**/{rest}")
        } else {
            let joined = normalize(Path::new(&format!("{base}/{rest}")));
            joined.to_string_lossy().into_owned()
        };
        // gitignore: a pattern that matches a directory covers everything below it.
        // A rule on a directory's contents covers the directory itself too (a Grep or Glob
        // rooted there reads exactly those contents).
        match pattern.strip_suffix("/**") {
            Some(dir) if !dir.is_empty() => out.push(dir.to_string()),
            Some(_) => {}
            None => out.push(format!("{pattern}/**")),
        }
        out.push(pattern);
    }
    out
}

/// The anchor and, when it differs, the anchor with symlinks resolved.
fn anchor_variants(anchor: &Path) -> Vec<PathBuf> {
    let mut v = vec![normalize(anchor)];
    if let Ok(c) = std::fs::canonicalize(anchor)
        && c != v[0]
    {
        v.push(c);
    }
    v
}

/// Compiled path patterns of one rule list. Patterns whose last segment is literal (`.env`,
/// `page7.md`, `<dir>`) are indexed by that file name and tested one by one — there are few per
/// name — while the rest (`*.pem`, `dir/**`) share one `GlobSet`. Without the index a set of
/// many `**/name` patterns degrades into running every regex in turn.
#[derive(Debug, Default)]
pub(crate) struct PathSet {
    /// Every pattern built, as written (a worker node rebuilds the Read deny ones).
    patterns: Vec<String>,
    by_name: HashMap<String, Vec<(GlobMatcher, usize)>>,
    set: Option<GlobSet>,
    owner: Vec<usize>,
    pending: Vec<(String, usize)>,
    /// Each pattern's directory before its first glob character, for "could a pattern match
    /// something below this directory".
    prefixes: Vec<(PathBuf, usize)>,
}

impl PathSet {
    pub(crate) fn add(&mut self, patterns: Vec<String>, rule: usize) {
        for p in patterns {
            self.pending.push((p, rule));
        }
    }

    /// Builds the set; on a glob that does not compile, returns its rule index and why.
    pub(crate) fn build(&mut self) -> Result<(), (usize, String)> {
        let mut b = GlobSetBuilder::new();
        for (p, rule) in self.pending.drain(..) {
            let g = GlobBuilder::new(&p)
                .literal_separator(true)
                .build()
                .map_err(|e| (rule, e.kind().to_string()))?;
            self.patterns.push(p.clone());
            let literal_end = p.find(['*', '?', '[', '{', '\\']).unwrap_or(p.len());
            let dir = match p[..literal_end].rfind('/') {
                Some(0) | None => PathBuf::from("/"),
                Some(k) => PathBuf::from(&p[..k]),
            };
            let dir = if literal_end == p.len() {
                PathBuf::from(&p)
            } else {
                dir
            };
            self.prefixes.push((dir, rule));
            let last = p.rsplit('/').next().unwrap_or("");
            if !last.is_empty() && !last.contains(['*', '?', '[', ']', '{', '}', '\\']) {
                self.by_name
                    .entry(last.to_string())
                    .or_default()
                    .push((g.compile_matcher(), rule));
            } else {
                b.add(g);
                self.owner.push(rule);
            }
        }
        if !self.owner.is_empty() {
            self.set = Some(b.build().map_err(|e| (self.owner[0], e.to_string()))?);
        }
        Ok(())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.owner.is_empty() && self.by_name.is_empty()
    }

    /// The patterns built, as written (absolute globs, their anchors resolved).
    pub(crate) fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// The lowest rule index of a pattern that could match `dir` or something below it (a
    /// recursive read of `dir` might reach a file it matches).
    pub(crate) fn first_under(&self, dir: &Path) -> Option<usize> {
        self.prefixes
            .iter()
            .filter(|(p, _)| p.starts_with(dir) || dir.starts_with(p))
            .map(|&(_, i)| i)
            .min()
    }

    /// The lowest rule index matching `path`.
    pub(crate) fn first_match(&self, path: &Path) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        self.first_match_candidate(path, &Candidate::new(path))
    }

    /// Like [`PathSet::first_match`] with a prepared candidate; the cheap `is_match` runs first
    /// because almost every path matches nothing.
    pub(crate) fn first_match_candidate(&self, path: &Path, c: &Candidate<'_>) -> Option<usize> {
        let named = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| self.by_name.get(n))
            .and_then(|v| {
                v.iter()
                    .filter(|(g, _)| g.is_match_candidate(c))
                    .map(|&(_, i)| i)
                    .min()
            });
        let general = match &self.set {
            Some(set) if set.is_match_candidate(c) => set
                .matches_candidate(c)
                .into_iter()
                .map(|i| self.owner[i])
                .min(),
            _ => None,
        };
        match (named, general) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Directories and files whose writes are never auto-approved (SEMANTICS.md §3.6).
pub(crate) fn is_protected(path: &Path) -> bool {
    let parts: Vec<&std::ffi::OsStr> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s),
            _ => None,
        })
        .collect();
    for (i, p) in parts.iter().enumerate() {
        let Some(p) = p.to_str() else { continue };
        match p {
            ".git" | ".vscode" | ".idea" | ".husky" | ".cargo" | ".devcontainer" => return true,
            // jq loads `~/.jq` (a file, or a folder of modules) into every filter.
            ".jq" => return true,
            ".claude" if parts.get(i + 1).and_then(|n| n.to_str()) != Some("worktrees") => {
                return true;
            }
            _ => {}
        }
    }
    // `~/.config/git/…` (git's XDG configuration).
    if parts.windows(2).any(|w| w[0] == ".config" && w[1] == "git") {
        return true;
    }
    // jq 1.7+ loads `~/jq/main.jq` into every filter when there is no `~/.jq`.
    if parts.windows(2).any(|w| w[0] == "jq" && w[1] == "main.jq") {
        return true;
    }
    matches!(
        parts.last().and_then(|p| p.to_str()),
        Some(
            ".gitconfig"
                | ".gitmodules"
                | ".bashrc"
                | ".bash_profile"
                | ".bash_login"
                | ".bash_logout"
                | ".zshrc"
                | ".zshenv"
                | ".zprofile"
                | ".zlogin"
                | ".profile"
                | ".npmrc"
                | ".mcp.json"
        )
    )
}

/// What makes a folder a git directory (a bare layout git discovers anywhere): a write to one
/// of these names in a folder that already has the others is protected too. Looks at the file
/// system.
pub(crate) fn is_git_layout_write(path: &Path) -> bool {
    const NAMES: [&str; 8] = [
        "HEAD",
        "config",
        "objects",
        "refs",
        "config.worktree",
        "commondir",
        "packed-refs",
        "hooks",
    ];
    let mut cur = path;
    // The written name itself, or a `hooks`/`refs`/`objects` directory above it.
    for _ in 0..3 {
        let (Some(dir), Some(name)) = (cur.parent(), cur.file_name().and_then(|n| n.to_str()))
        else {
            return false;
        };
        if NAMES.contains(&name) {
            let has = |n: &str| n != name && dir.join(n).symlink_metadata().is_ok();
            let others = ["objects", "refs", "config"]
                .iter()
                .filter(|n| has(n))
                .count();
            if has("HEAD") || others >= 2 {
                return true;
            }
        }
        cur = dir;
    }
    false
}

/// Whether a path the Read, Write or Edit tool would open names one of toolrt's own file
/// descriptors (its stdin and stdout are the protocol) or its terminal, rather than a file.
pub(crate) fn names_own_descriptor(path: &Path) -> bool {
    let s = path.to_string_lossy();
    let own = format!("/proc/{}/fd", std::process::id());
    matches!(
        s.as_ref(),
        "/dev/stdin" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
    ) || s.starts_with("/dev/fd")
        || s.starts_with("/proc/self/fd")
        || s.starts_with("/proc/thread-self/fd")
        || s.starts_with(&own)
}

/// Whether `path` is inside one of `roots` (or is one).
pub(crate) fn inside(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|r| path.starts_with(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_follow_every_symlink_and_only_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir_all(root.join("real/dir")).unwrap();
        std::fs::write(root.join("real/dir/f.txt"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("real/target.txt"), root.join("dangling")).unwrap();
        let p = |rel: &str| root.join(rel);
        let cases: [(&str, Vec<PathBuf>); 7] = [
            // No symlink on the way: the path alone, existing or not.
            ("real/dir/f.txt", vec![p("real/dir/f.txt")]),
            ("real/dir/new.txt", vec![p("real/dir/new.txt")]),
            (
                "real/missing/deeper/new.txt",
                vec![p("real/missing/deeper/new.txt")],
            ),
            // Through a symlinked directory: also where it really is.
            (
                "link/dir/f.txt",
                vec![p("link/dir/f.txt"), p("real/dir/f.txt")],
            ),
            (
                "link/dir/new.txt",
                vec![p("link/dir/new.txt"), p("real/dir/new.txt")],
            ),
            (
                "link/missing/new.txt",
                vec![p("link/missing/new.txt"), p("real/missing/new.txt")],
            ),
            // A dangling symlink: where a write would land.
            ("dangling", vec![p("dangling"), p("real/target.txt")]),
        ];
        for (rel, want) in cases {
            assert_eq!(candidates(&p(rel)), want, "{rel}");
        }
        // `..` is resolved lexically before anything is looked up.
        assert_eq!(
            candidates(&p("real/dir/../dir/f.txt")),
            vec![p("real/dir/f.txt")]
        );
    }

    fn set(spec: &str, is_allow: bool) -> PathSet {
        let a = Anchors {
            settings_dir: Path::new("/cfg"),
            cwd: Path::new("/w/p"),
            home: Path::new("/h/u"),
        };
        let mut s = PathSet::default();
        s.add(glob_patterns(spec, &a, is_allow), 0);
        s.build().unwrap();
        s
    }

    #[test]
    fn anchors_table() {
        for (spec, allow, path, want) in [
            ("//etc/passwd", false, "/etc/passwd", true),
            ("~/.ssh/**", false, "/h/u/.ssh/id_rsa", true),
            ("~/.ssh/**", false, "/w/p/.ssh/id_rsa", false),
            ("/secrets/**", false, "/cfg/secrets/a", true),
            ("/secrets/**", false, "/w/p/secrets/a", false),
            ("./.env", false, "/w/p/.env", true),
            ("./.env", false, "/w/p/sub/.env", false),
            (".env", false, "/w/p/sub/deep/.env", true),
            (".env", false, "/w/.env", false),
            ("*.key", false, "/w/p/a/b.key", true),
            ("src/*.rs", false, "/w/p/src/a.rs", true),
            ("src/*.rs", false, "/w/p/src/x/a.rs", false),
            ("src/**/*.rs", false, "/w/p/src/x/a.rs", true),
            ("src/**", true, "/w/p/src/a/b", true),
            ("src/**", true, "/w/p/lib/src/a", false),
            ("src/**", false, "/w/p/lib/src/a", true),
            ("secrets", false, "/w/p/x/secrets/key", true),
            ("../other/**", false, "/w/other/a", true),
            ("~", false, "/h/u/anything", true),
        ] {
            let got = set(spec, allow).first_match(Path::new(path)).is_some();
            assert_eq!(got, want, "{spec} allow={allow} {path}");
        }
    }

    #[test]
    fn git_layout_writes_are_protected() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let d = root.join("d");
        std::fs::create_dir_all(d.join("objects")).unwrap();
        // One of the names alone is not a git directory yet.
        assert!(!is_git_layout_write(&d.join("config")));
        assert!(!is_git_layout_write(&d.join("notes.txt")));
        std::fs::create_dir_all(d.join("refs")).unwrap();
        for name in [
            "config",
            "HEAD",
            "hooks/post-index-change",
            "config.worktree",
        ] {
            assert!(is_git_layout_write(&d.join(name)), "{name}");
        }
        assert!(!is_git_layout_write(&d.join("src/config")));
        let e = root.join("e");
        std::fs::create_dir_all(&e).unwrap();
        std::fs::write(e.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(is_git_layout_write(&e.join("config")));
        assert!(is_git_layout_write(&e.join("objects")));
    }

    #[test]
    fn protected_table() {
        for (p, want) in [
            ("/w/.git/config", true),
            ("/w/.git", true),
            ("/w/.vscode/settings.json", true),
            ("/w/.claude/settings.json", true),
            ("/w/.claude/worktrees/x/a.rs", false),
            ("/h/.bashrc", true),
            ("/w/.mcp.json", true),
            ("/w/src/git.rs", false),
            ("/w/.gitignore", false),
            ("/h/.config/git/config", true),
            ("/h/.config/gitx", false),
            ("/h/.jq", true),
            ("/h/.jq/lib.jq", true),
            ("/h/jq/main.jq", true),
            ("/w/x.jq", false),
            ("/w/jq/other.jq", false),
        ] {
            assert_eq!(is_protected(Path::new(p)), want, "{p}");
        }
    }
}
