//! Which files were read in this session, and in what state, so that Edit and Write never
//! overwrite a change the model has not seen.
//!
//! Kept per [`StateKey`]: the session's calls share one record, and each agent scope has its own
//! from its start to its end, so a file one agent read does not count as read for another.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use crate::tool::StateKey;

/// A file's state at the moment it was read (or written by toolrt).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    mtime: Option<SystemTime>,
    len: u64,
    hash: u64,
}

/// The files read, per state: the session's, and each open scope's.
#[derive(Debug)]
pub(crate) struct ReadState {
    states: Mutex<HashMap<StateKey, HashMap<PathBuf, Stamp>>>,
}

impl Default for ReadState {
    fn default() -> Self {
        Self {
            states: Mutex::new(HashMap::from([(StateKey::SESSION, HashMap::new())])),
        }
    }
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
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<StateKey, HashMap<PathBuf, Stamp>>> {
        self.states.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts an empty record for a scope's state (a no-op if it has one).
    pub(crate) fn open(&self, state: StateKey) {
        self.lock().entry(state).or_default();
    }

    /// Drops a scope's record (the session's is kept). Afterwards what its calls read is no
    /// longer recorded, so a call still finishing in an ended scope cannot grow the table.
    pub(crate) fn close(&self, state: StateKey) {
        if !state.is_session() {
            self.lock().remove(&state);
        }
    }

    /// Records that `path` was seen holding `bytes` (read whole or in part, or just written)
    /// by a call of `state`; nothing if that state is not open.
    pub(crate) fn record(&self, state: StateKey, path: &Path, bytes: &[u8]) {
        let stamp = Stamp {
            mtime: mtime(path),
            len: bytes.len() as u64,
            hash: hash(bytes),
        };
        if let Some(files) = self.lock().get_mut(&state) {
            files.insert(path.to_path_buf(), stamp);
        }
    }

    /// Forgets `path` for `state` (after a rewind changed it behind the model's back).
    pub(crate) fn forget(&self, state: StateKey, path: &Path) {
        if let Some(files) = self.lock().get_mut(&state) {
            files.remove(path);
        }
    }

    /// Ok when `path` was read by a call of `state` and is unchanged since; otherwise the text
    /// telling the model to read it (again). A file whose mtime moved but whose bytes are the
    /// same still counts.
    pub(crate) fn check(&self, state: StateKey, path: &Path) -> Result<(), String> {
        let stamp = self
            .lock()
            .get(&state)
            .and_then(|files| files.get(path))
            .cloned();
        let Some(stamp) = stamp else {
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
            self.record(state, path, &bytes);
            Ok(())
        } else {
            Err(changed())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: StateKey = StateKey::SESSION;

    #[test]
    fn unread_changed_touched() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "one").unwrap();
        let rs = ReadState::default();
        assert!(rs.check(S, &p).unwrap_err().contains("has not been read"));
        rs.record(S, &p, b"one");
        assert!(rs.check(S, &p).is_ok());
        std::fs::write(&p, "two").unwrap();
        assert!(rs.check(S, &p).unwrap_err().contains("has changed"));
        std::fs::write(&p, "one").unwrap();
        assert!(rs.check(S, &p).is_ok(), "same bytes count as unchanged");
        rs.forget(S, &p);
        assert!(rs.check(S, &p).is_err());
    }

    #[test]
    fn each_state_has_its_own_record_and_a_closed_one_records_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "one").unwrap();
        let rs = ReadState::default();
        let (a, b) = (StateKey::scope(1), StateKey::scope(2));
        rs.open(a);
        rs.open(b);
        // (reader, checker, counts as read)
        let cases = [
            (a, a, true),
            (a, b, false),
            (a, S, false),
            (S, a, false),
            (S, S, true),
        ];
        for (reader, checker, read) in cases {
            let rs = ReadState::default();
            rs.open(a);
            rs.open(b);
            rs.record(reader, &p, b"one");
            assert_eq!(
                rs.check(checker, &p).is_ok(),
                read,
                "{reader:?} then {checker:?}"
            );
        }
        rs.record(a, &p, b"one");
        rs.close(a);
        rs.record(a, &p, b"one");
        assert!(rs.check(a, &p).is_err(), "a closed state records nothing");
        assert_eq!(rs.lock().len(), 2, "the session's and b's");
        rs.close(S);
        assert!(
            rs.lock().contains_key(&S),
            "the session's record is never dropped"
        );
    }
}
