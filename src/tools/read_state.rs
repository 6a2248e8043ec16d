//! Which files were read in this session, and in what state, so that Edit and Write never
//! overwrite a change the model has not seen.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// A file's state at the moment it was read (or written by toolrt).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    mtime: Option<SystemTime>,
    len: u64,
    hash: u64,
}

/// The files read in one session.
#[derive(Debug, Default)]
pub(crate) struct ReadState {
    files: Mutex<HashMap<PathBuf, Stamp>>,
}

/// A content hash: not cryptographic, only to tell "touched" from "changed".
fn hash(bytes: &[u8]) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

fn mtime(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl ReadState {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Stamp>> {
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that `path` was seen holding `bytes` (read whole or in part, or just written).
    pub(crate) fn record(&self, path: &Path, bytes: &[u8]) {
        let stamp = Stamp {
            mtime: mtime(path),
            len: bytes.len() as u64,
            hash: hash(bytes),
        };
        self.lock().insert(path.to_path_buf(), stamp);
    }

    /// Forgets `path` (after a rewind changed it behind the model's back).
    pub(crate) fn forget(&self, path: &Path) {
        self.lock().remove(path);
    }

    /// Ok when `path` was read and is unchanged since; otherwise the text telling the model to
    /// read it (again). A file whose mtime moved but whose bytes are the same still counts.
    pub(crate) fn check(&self, path: &Path) -> Result<(), String> {
        let Some(stamp) = self.lock().get(path).cloned() else {
            return Err(format!(
                "{} has not been read in this session. Read it first with the Read tool, then \
                 make the change.",
                path.display()
            ));
        };
        let changed = || {
            format!(
                "{} has changed since it was last read (by the user or another program). Read it \
                 again with the Read tool, then make the change against its current content.",
                path.display()
            )
        };
        let meta = std::fs::metadata(path).map_err(|_| changed())?;
        let modified = meta.modified().ok();
        // A same-size rewrite within the file system's timestamp granularity keeps the mtime, so
        // a recent mtime alone proves nothing: then the bytes decide.
        let recent = modified
            .and_then(|m| m.elapsed().ok())
            .is_none_or(|age| age < std::time::Duration::from_secs(2));
        if modified == stamp.mtime && meta.len() == stamp.len && !recent {
            return Ok(());
        }
        if meta.len() != stamp.len {
            return Err(changed());
        }
        // Bounded by the length it had when read (the path may name something else by now).
        let bytes = super::file_bytes::read_regular(path, stamp.len).map_err(|_| changed())?;
        if hash(&bytes) == stamp.hash {
            // Touched, not changed: remember the new mtime so the next check is cheap.
            self.record(path, &bytes);
            Ok(())
        } else {
            Err(changed())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unread_changed_touched() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "one").unwrap();
        let rs = ReadState::default();
        assert!(rs.check(&p).unwrap_err().contains("has not been read"));
        rs.record(&p, b"one");
        assert!(rs.check(&p).is_ok());
        std::fs::write(&p, "two").unwrap();
        assert!(rs.check(&p).unwrap_err().contains("has changed"));
        std::fs::write(&p, "one").unwrap();
        assert!(rs.check(&p).is_ok(), "same bytes count as unchanged");
        rs.forget(&p);
        assert!(rs.check(&p).is_err());
    }
}
