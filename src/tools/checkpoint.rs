//! Checkpoints: the prior state of every file a Write or Edit changes, per call, in call order,
//! so a rewind can restore files exactly (or delete a file a Write created).
//!
//! # Repeated ids
//! A client may reuse a call id once the call's result is out, so an id does not name one call.
//! Checkpoints are kept per call, not per id: each call's id is its own `Arc<str>` (made when the
//! call is accepted), and the store tells calls apart by that allocation. A rewind to an id
//! undoes the most recent call that used it (and everything after); an earlier call with the same
//! id is reached by rewinding to that id again.
//!
//! # Scopes
//! Every entry belongs to a [`StateKey`]: the session's, or an agent scope's. A rewind undoes the
//! named call and every later call *of the same state*, never another agent's; a scope's entries
//! go when it ends. The limit is shared, so all scopes together keep at most
//! [`MAX_CHECKPOINTS`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::tool::StateKey;

/// Checkpoints kept (one per file a call changed); past it the oldest calls' are dropped, so a
/// long session's history costs bounded memory and disk.
pub(crate) const MAX_CHECKPOINTS: usize = 10_000;

/// Why a rewind failed.
#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    /// No checkpoint carries this call id.
    #[error(
        "no checkpoint for tool_use_id {0:?}: that call changed no file, was already rewound, is \
         older than the last 10,000 checkpoints kept, or was made by an agent that has ended"
    )]
    Unknown(String),
    /// A file could not be restored; it and the checkpoints not yet restored are kept, so the
    /// rewind can be tried again.
    #[error("could not restore {}: {source}", path.display())]
    Io {
        /// The file that could not be restored.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
}

/// What a rewind did: the files restored, in the order they were first changed, and those it
/// left as they are (a symlink now on their path, or no longer a regular file), with why.
#[derive(Debug, Default, PartialEq)]
pub struct Rewound {
    /// The files restored.
    pub files: Vec<PathBuf>,
    /// The files not restored, and why.
    pub not_restored: Vec<(PathBuf, String)>,
}

/// One file's state before one call changed it.
#[derive(Debug)]
struct Entry {
    /// Whose change it was: the session's or an agent scope's.
    state: StateKey,
    /// Its place in call order, to put entries back in order after a failed rewind.
    order: u64,
    /// The call, by identity (see the module docs); its text is the call id.
    call: Arc<str>,
    /// The call's path, as the rewind's answer names it.
    path: PathBuf,
    /// The file's own name when it was saved (no symlink on it): what a rewind restores, never
    /// following a symlink that has appeared on it since.
    real: PathBuf,
    /// Where its prior bytes are kept; `None`: the file did not exist.
    blob: Option<PathBuf>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: Vec<Entry>,
    seq: u64,
    /// Entries saved so far (their `order`).
    saved: u64,
}

/// The checkpoints of one session, every scope's.
#[derive(Debug)]
pub(crate) struct CheckpointStore {
    dir: Option<PathBuf>,
    inner: Mutex<Inner>,
    /// [`MAX_CHECKPOINTS`] but in tests.
    limit: usize,
}

impl CheckpointStore {
    /// A store keeping prior contents under `dir`; `None`: under the directory each save names.
    pub(crate) fn new(dir: Option<PathBuf>) -> Self {
        Self {
            dir,
            inner: Mutex::new(Inner::default()),
            limit: MAX_CHECKPOINTS,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Saves the state of the file a write is about to change (`source`: its bytes, read from
    /// the handle the write checked; `None`: the write created it) as the state of `path`
    /// (whose own name is `real`) before `call` (its id as the runtime made it for this call:
    /// `ToolContext::tool_use_id`) of `state`. A second save of the same file by the same call
    /// keeps the first; a later call reusing the id is another call. `fallback_dir` is used
    /// when the store was made without a directory.
    pub(crate) fn save(
        &self,
        state: StateKey,
        call: &Arc<str>,
        (path, real): (&Path, &Path),
        source: Option<&mut std::fs::File>,
        fallback_dir: &Path,
    ) -> std::io::Result<()> {
        let mut inner = self.lock();
        if inner
            .entries
            .iter()
            .any(|e| Arc::ptr_eq(&e.call, call) && e.path == path)
        {
            return Ok(());
        }
        // Copied, not read into memory: a checkpoint of a large file costs disk, not RSS.
        let blob = match source {
            Some(source) => {
                let dir = self.dir.as_deref().unwrap_or(fallback_dir);
                crate::paths::create_private_dir(dir)?;
                inner.seq += 1;
                // A unique name: several sessions may share one output directory.
                let mut file = tempfile::Builder::new()
                    .prefix(&format!("cp-{:06}-", inner.seq))
                    .suffix(".bin")
                    .tempfile_in(dir)?;
                std::io::copy(source, &mut file)?;
                let (_, blob) = file.keep().map_err(|e| e.error)?;
                Some(blob)
            }
            None => None,
        };
        inner.saved += 1;
        let order = inner.saved;
        inner.entries.push(Entry {
            state,
            order,
            call: call.clone(),
            path: path.to_path_buf(),
            real: real.to_path_buf(),
            blob,
        });
        // Whole calls go, oldest first: a rewind to a later call needs nothing older.
        while inner.entries.len() > self.limit {
            let oldest = inner.entries[0].call.clone();
            inner.entries.retain(|e| {
                if !Arc::ptr_eq(&e.call, &oldest) {
                    return true;
                }
                if let Some(blob) = &e.blob {
                    let _ = std::fs::remove_file(blob);
                }
                false
            });
        }
        Ok(())
    }

    /// Undoes the most recent call with id `to` and every later call of the same state (the
    /// session's, or that agent scope's), newest first; returns that state and what was done.
    pub(crate) fn rewind(&self, to: &str) -> Result<(StateKey, Rewound), RewindError> {
        let mut inner = self.lock();
        let Some(last) = inner.entries.iter().rposition(|e| &*e.call == to) else {
            return Err(RewindError::Unknown(to.to_string()));
        };
        let (call, state) = (inner.entries[last].call.clone(), inner.entries[last].state);
        let Some(start) = inner
            .entries
            .iter()
            .position(|e| Arc::ptr_eq(&e.call, &call))
        else {
            return Err(RewindError::Unknown(to.to_string()));
        };
        // Other states' later entries stay, in order.
        let (mut undone, kept): (Vec<Entry>, Vec<Entry>) = inner
            .entries
            .split_off(start)
            .into_iter()
            .partition(|e| e.state == state);
        inner.entries.extend(kept);
        let mut files: Vec<PathBuf> = Vec::new();
        for e in &undone {
            if !files.contains(&e.path) {
                files.push(e.path.clone());
            }
        }
        let mut not_restored: Vec<(PathBuf, String)> = Vec::new();
        while let Some(entry) = undone.pop() {
            match restore(&entry) {
                Ok(()) => {}
                // Trying again would not help: reported, and its checkpoint dropped.
                Err(Restore::Refused(why)) => {
                    if !not_restored.iter().any(|(p, _)| *p == entry.path) {
                        not_restored.push((entry.path.clone(), why));
                    }
                }
                Err(Restore::Io(source)) => {
                    let path = entry.path.clone();
                    undone.push(entry);
                    inner.entries.append(&mut undone);
                    inner.entries.sort_by_key(|e| e.order);
                    return Err(RewindError::Io { path, source });
                }
            }
            if let Some(blob) = &entry.blob {
                let _ = std::fs::remove_file(blob);
            }
        }
        // Both in the order the files were first changed.
        not_restored.sort_by_key(|(p, _)| files.iter().position(|f| f == p));
        files.retain(|f| !not_restored.iter().any(|(p, _)| p == f));
        Ok((
            state,
            Rewound {
                files,
                not_restored,
            },
        ))
    }

    /// Drops every checkpoint of `state` (an agent scope that ended) and returns the files
    /// holding their prior contents, for the caller to delete off the pipeline's thread.
    pub(crate) fn drop_state(&self, state: StateKey) -> Vec<PathBuf> {
        let mut blobs = Vec::new();
        self.lock().entries.retain_mut(|e| {
            if e.state != state {
                return true;
            }
            blobs.extend(e.blob.take());
            false
        });
        blobs
    }
}

/// Why an entry was not restored.
enum Restore {
    /// Its path now leads through a symlink, or names something other than a regular file:
    /// never followed or replaced.
    Refused(String),
    /// Anything else (the rewind stops; it can be tried again).
    Io(std::io::Error),
}

impl From<nix::errno::Errno> for Restore {
    fn from(e: nix::errno::Errno) -> Self {
        Restore::Io(e.into())
    }
}

/// Puts `entry`'s prior state back at its own name, the path saved, without following a symlink
/// in any component: one that has appeared since is refused, so a rewind never writes or
/// deletes outside what the call itself changed.
fn restore(entry: &Entry) -> Result<(), Restore> {
    use nix::errno::Errno;
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::Mode;
    let real = &entry.real;
    let (Some(parent), Some(name)) = (real.parent(), real.file_name()) else {
        return Err(Restore::Refused(format!(
            "{} names no file",
            real.display()
        )));
    };
    let link = || {
        Restore::Refused(format!(
            "{} now leads through a symbolic link; it was left as it is",
            real.display()
        ))
    };
    let not_file = || {
        Restore::Refused(format!(
            "{} is no longer a regular file; it was left as it is",
            real.display()
        ))
    };
    let Some(blob) = &entry.blob else {
        let dir = match open_dir(parent, false) {
            Err(Restore::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            other => other?,
        };
        let flag = nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW;
        use nix::sys::stat::SFlag;
        let kind = nix::sys::stat::fstatat(&dir, name, flag)
            .map(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT);
        return match kind {
            Err(Errno::ENOENT) => Ok(()),
            Err(e) => Err(e.into()),
            Ok(SFlag::S_IFLNK) => Err(link()),
            Ok(kind) if kind != SFlag::S_IFREG => Err(not_file()),
            Ok(_) => Ok(nix::unistd::unlinkat(
                &dir,
                name,
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            )?),
        };
    };
    let bytes = std::fs::read(blob).map_err(Restore::Io)?;
    let dir = open_dir(parent, true)?;
    let flags = OFlag::O_WRONLY
        | OFlag::O_CREAT
        | OFlag::O_NOFOLLOW
        | OFlag::O_NONBLOCK
        | OFlag::O_NOCTTY
        | OFlag::O_CLOEXEC;
    let fd = match openat(&dir, name, flags, Mode::from_bits_truncate(0o666)) {
        Err(Errno::ELOOP) => return Err(link()),
        Err(Errno::EISDIR | Errno::ENXIO) => return Err(not_file()),
        other => other?,
    };
    let mut file = std::fs::File::from(fd);
    if !file.metadata().map_err(Restore::Io)?.is_file() {
        return Err(not_file());
    }
    file.set_len(0).map_err(Restore::Io)?;
    std::io::Write::write_all(&mut file, &bytes).map_err(Restore::Io)
}

/// Opens the folder `dir` (absolute) one component at a time, never through a symlink;
/// `create`: missing folders are made.
fn open_dir(dir: &Path, create: bool) -> Result<std::os::fd::OwnedFd, Restore> {
    use nix::errno::Errno;
    use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
    let how = || {
        OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS)
    };
    let mut fd = openat2(nix::fcntl::AT_FDCWD, "/", how())?;
    for part in dir.components().skip(1) {
        let part = part.as_os_str();
        let mut next = openat2(&fd, part, how());
        if create && matches!(next, Err(Errno::ENOENT)) {
            match nix::sys::stat::mkdirat(
                &fd,
                part,
                nix::sys::stat::Mode::from_bits_truncate(0o777),
            ) {
                Ok(()) | Err(Errno::EEXIST) => next = openat2(&fd, part, how()),
                Err(e) => return Err(e.into()),
            }
        }
        fd = match next {
            Err(Errno::ELOOP | Errno::ENOTDIR) => {
                return Err(Restore::Refused(format!(
                    "{} now leads through a symbolic link (or a file where a folder was); it was \
                     left as it is",
                    dir.display()
                )));
            }
            other => other?,
        };
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: StateKey = StateKey::SESSION;

    fn rewound(file: &Path) -> Rewound {
        Rewound {
            files: vec![file.to_path_buf()],
            not_restored: Vec::new(),
        }
    }

    /// A symlink put on a checkpointed path after the write (at the file, or at a folder on
    /// its way): the rewind neither writes through it nor deletes what it leads to, and says so.
    #[test]
    fn a_rewind_follows_no_symlink_that_appeared_since() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let store = CheckpointStore::new(Some(root.join("cp")));
        let (ws, outside) = (root.join("ws"), root.join("outside"));
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let (notes, new, plain) = (ws.join("notes.txt"), ws.join("sub/new.txt"), ws.join("p"));
        std::fs::write(&notes, "old notes").unwrap();
        std::fs::write(&plain, "p0").unwrap();
        let c1: Arc<str> = Arc::from("c1");
        store.save_path(S, &c1, &notes, &root);
        store.save_path(S, &c1, &new, &root);
        store.save_path(S, &c1, &plain, &root);
        std::fs::write(&plain, "p1").unwrap();
        // The writes' files replaced: notes.txt by a link to a secret, sub by a link outside.
        let secret = outside.join("secret");
        std::fs::write(&secret, "SECRET").unwrap();
        std::fs::write(outside.join("new.txt"), "theirs").unwrap();
        std::fs::remove_file(&notes).unwrap();
        std::os::unix::fs::symlink(&secret, &notes).unwrap();
        std::fs::remove_dir_all(ws.join("sub")).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("sub")).unwrap();

        let (_, done) = store.rewind("c1").unwrap();
        assert_eq!(std::fs::read(&secret).unwrap(), b"SECRET");
        assert_eq!(std::fs::read(outside.join("new.txt")).unwrap(), b"theirs");
        assert_eq!(
            std::fs::read(&plain).unwrap(),
            b"p0",
            "the rest is restored"
        );
        assert_eq!(done.files, vec![plain.clone()]);
        let left: Vec<&PathBuf> = done.not_restored.iter().map(|(p, _)| p).collect();
        assert_eq!(left, [&notes, &new], "{done:?}");
        assert!(done.not_restored[0].1.contains("symbolic link"), "{done:?}");
    }

    impl CheckpointStore {
        /// Saves `path`'s state as a write would (`path` has no symlink on it).
        fn save_path(&self, state: StateKey, call: &Arc<str>, path: &Path, dir: &Path) {
            let mut prior = std::fs::File::open(path).ok();
            self.save(state, call, (path, path), prior.as_mut(), dir)
                .unwrap();
        }
    }

    #[test]
    fn the_oldest_calls_checkpoints_go_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let store = CheckpointStore {
            limit: 3,
            ..CheckpointStore::new(Some(dir.path().join("cp")))
        };
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, b"v").unwrap();
        std::fs::write(&b, b"w").unwrap();
        let calls: Vec<Arc<str>> = (0..4).map(|i| Arc::from(format!("c{i}"))).collect();
        // c0 changes two files: both of its checkpoints go together.
        store.save_path(S, &calls[0], &a, dir.path());
        store.save_path(S, &calls[0], &b, dir.path());
        for call in &calls[1..] {
            store.save_path(S, call, &a, dir.path());
        }
        assert_eq!(store.lock().entries.len(), 3);
        let blobs = std::fs::read_dir(dir.path().join("cp")).unwrap().count();
        assert_eq!(blobs, 3, "a dropped checkpoint's file is deleted");
        assert!(matches!(store.rewind("c0"), Err(RewindError::Unknown(_))));
        assert_eq!(store.rewind("c1").unwrap().1.files, vec![a.clone()]);
    }

    #[test]
    fn rewind_restores_in_reverse_and_deletes_created() {
        let dir = tempfile::tempdir().unwrap();
        let store = CheckpointStore::new(Some(dir.path().join("cp")));
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        let (c1, c2, c3) = (Arc::from("c1"), Arc::from("c2"), Arc::from("c3"));
        std::fs::write(&a, b"v0").unwrap();
        store.save_path(S, &c1, &a, dir.path());
        std::fs::write(&a, b"v1").unwrap();
        store.save_path(S, &c2, &b, dir.path());
        std::fs::write(&b, b"new").unwrap();
        store.save_path(S, &c3, &a, dir.path());
        std::fs::write(&a, b"v2").unwrap();

        assert!(matches!(store.rewind("nope"), Err(RewindError::Unknown(_))));
        assert_eq!(
            store.rewind("c2").unwrap().1.files,
            vec![b.clone(), a.clone()]
        );
        assert_eq!(std::fs::read(&a).unwrap(), b"v1");
        assert!(!b.exists());
        assert_eq!(store.rewind("c1").unwrap().1.files, vec![a.clone()]);
        assert_eq!(std::fs::read(&a).unwrap(), b"v0");
        assert!(matches!(store.rewind("c3"), Err(RewindError::Unknown(_))));
    }

    #[test]
    fn a_reused_id_is_another_call_and_rewinds_to_the_latest_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = CheckpointStore::new(Some(dir.path().join("cp")));
        let a = dir.path().join("a");
        std::fs::write(&a, b"v0").unwrap();
        let first: Arc<str> = Arc::from("x");
        store.save_path(S, &first, &a, dir.path());
        std::fs::write(&a, b"v1").unwrap();
        // The same id, reused by a later call that changes the same file: its own checkpoint.
        let second: Arc<str> = Arc::from("x");
        store.save_path(S, &second, &a, dir.path());
        std::fs::write(&a, b"v2").unwrap();
        // The same call saving the file again keeps its first checkpoint.
        store.save_path(S, &second, &a, dir.path());
        assert_eq!(store.rewind("x").unwrap().1.files, vec![a.clone()]);
        assert_eq!(
            std::fs::read(&a).unwrap(),
            b"v1",
            "the latest call with the id is undone"
        );
        assert_eq!(store.rewind("x").unwrap().1.files, vec![a.clone()]);
        assert_eq!(std::fs::read(&a).unwrap(), b"v0", "then the earlier one");
        assert!(matches!(store.rewind("x"), Err(RewindError::Unknown(_))));
    }

    #[test]
    fn a_rewind_undoes_only_its_own_states_later_calls_and_an_ended_state_goes() {
        let dir = tempfile::tempdir().unwrap();
        let store = CheckpointStore::new(Some(dir.path().join("cp")));
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let (x, y) = (StateKey::scope(1), StateKey::scope(2));
        let [c1, c2, c3, c4]: [Arc<str>; 4] = ["c1", "c2", "c3", "c4"].map(Arc::from);
        std::fs::write(&a, b"a0").unwrap();
        std::fs::write(&b, b"b0").unwrap();
        store.save_path(x, &c1, &a, dir.path());
        std::fs::write(&a, b"a1").unwrap();
        store.save_path(y, &c2, &b, dir.path());
        std::fs::write(&b, b"b1").unwrap();
        store.save_path(x, &c3, &a, dir.path());
        std::fs::write(&a, b"a2").unwrap();
        store.save_path(S, &c4, &b, dir.path());
        std::fs::write(&b, b"b2").unwrap();

        // x's c1 and c3 are undone; y's c2 and the session's c4 stay.
        assert_eq!(store.rewind("c1").unwrap(), (x, rewound(&a)));
        assert_eq!(std::fs::read(&a).unwrap(), b"a0");
        assert_eq!(std::fs::read(&b).unwrap(), b"b2");
        let left: Vec<String> = store
            .lock()
            .entries
            .iter()
            .map(|e| e.call.to_string())
            .collect();
        assert_eq!(left, ["c2", "c4"], "in call order");

        let blobs = store.drop_state(y);
        assert_eq!(blobs.len(), 1, "c2's copy of b, for the caller to delete");
        assert!(matches!(store.rewind("c2"), Err(RewindError::Unknown(_))));
        assert_eq!(store.rewind("c4").unwrap(), (S, rewound(&b)));
        assert_eq!(std::fs::read(&b).unwrap(), b"b1");
    }
}
