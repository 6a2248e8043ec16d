//! What paths resolved to on one worker, kept from its answers.
//!
//! A permission decision about a worker's path needs what the path resolves to there, which
//! costs a round trip to the worker. An answer kept from an earlier call saves it, and is safe
//! to decide on because the worker checks, just before it runs the call, that every path the
//! decision looked at still resolves as it did ([`super::wire::RunReq::expect`]); if one does
//! not, nothing runs, the answer is dropped here and the decision is made again on a fresh one.
//! A new link to the worker starts with nothing kept (it may be another process, other files).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The most bytes of paths kept per worker; beyond it everything kept is let go.
const MAX_BYTES: usize = 4 << 20;

/// Answers of one worker: each absolute path with what it resolves to there, itself first.
#[derive(Default)]
pub(crate) struct Resolved {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    paths: HashMap<PathBuf, Vec<PathBuf>>,
    bytes: usize,
}

impl Resolved {
    /// The kept answer for `path`, if any.
    pub(crate) fn get(&self, path: &Path) -> Option<Vec<PathBuf>> {
        self.lock().paths.get(path).cloned()
    }

    /// Keeps the worker's answer for `path`.
    pub(crate) fn keep(&self, path: PathBuf, paths: Vec<PathBuf>) {
        self.forget(&path);
        let size = size(&path, &paths);
        let mut kept = self.lock();
        if kept.bytes + size > MAX_BYTES {
            kept.paths.clear();
            kept.bytes = 0;
        }
        if size <= MAX_BYTES {
            kept.bytes += size;
            kept.paths.insert(path, paths);
        }
    }

    /// Lets the answer for `path` go.
    pub(crate) fn forget(&self, path: &Path) {
        let mut kept = self.lock();
        if let Some(old) = kept.paths.remove(path) {
            kept.bytes -= size(path, &old);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The bytes an answer holds.
fn size(path: &Path, paths: &[PathBuf]) -> usize {
    path.as_os_str().len() + paths.iter().map(|p| p.as_os_str().len()).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_kept_until_forgotten_and_the_bytes_stay_bounded() {
        let r = Resolved::default();
        let a = PathBuf::from("/w/a");
        r.keep(a.clone(), vec![a.clone(), PathBuf::from("/real/a")]);
        assert_eq!(r.get(&a).unwrap().len(), 2);
        // Kept again with another answer: the new one counts, the old one no longer.
        r.keep(a.clone(), vec![a.clone()]);
        assert_eq!(r.get(&a), Some(vec![a.clone()]));
        assert_eq!(r.lock().bytes, 8);
        r.forget(&a);
        assert_eq!((r.get(&a), r.lock().bytes), (None, 0));
        // Many long paths: never more than the bound held.
        let long = "x".repeat(4000);
        for i in 0..3000 {
            let p = PathBuf::from(format!("/{long}/{i}"));
            r.keep(p.clone(), vec![p]);
            assert!(r.lock().bytes <= MAX_BYTES);
        }
        assert!(r.lock().paths.len() < 3000);
    }
}
