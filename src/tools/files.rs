//! What Read, Write and Edit share: the session's [`FileState`] (which files were read, and the
//! checkpoints of every change, each per [`StateKey`]: the session's calls', or one agent
//! scope's), the target path of a call, the read-before-change rule, the one way a change is
//! committed, and lines numbered as Read shows them.
//!
//! Everything here touches the file system synchronously: the tools call it on the blocking
//! pool ([`super::on_blocking_pool`]), never on the pipeline's thread.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::checkpoint::{CheckpointStore, RewindError, Rewound};
use super::read_state::ReadState;
use super::str_field;
use crate::call::Input;
use crate::session::{Guard, Session};
use crate::tool::StateKey;

/// Longer lines are cut to this many characters when numbered.
pub(crate) const MAX_LINE_CHARS: usize = 2_000;

/// What the file tools of one session remember.
#[derive(Debug)]
pub(crate) struct FileState {
    /// Files read (or written) and their state at that moment, per state.
    read_state: ReadState,
    /// Prior states of files changed by Write and Edit, per call (each call of one state).
    checkpoints: CheckpointStore,
    /// `tools.requireReadBeforeEdit`: Edit, and Write over an existing file, need a fresh read.
    require_read_before_edit: bool,
    /// Locks by path (a path's stripe): a change's check, write and record, and a read with its
    /// record, happen under the lock of the file's path, so two changes of one file never both
    /// pass the check against the same content (the later one sees the earlier).
    path_locks: Box<[Mutex<()>]>,
    /// Held while a file over [`LARGE_FILE_BYTES`] is read whole into memory (Read, Edit):
    /// one at a time, so parallel calls cannot hold many such files at once.
    large_read: Mutex<()>,
}

/// Files larger than this are read whole one at a time (each may cost a few times its size in
/// memory while it is decoded and changed).
pub(crate) const LARGE_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// How many path locks a session has: changes of different files rarely share one.
const PATH_LOCKS: usize = 256;

impl FileState {
    /// State for one session; checkpoints are kept under `checkpoint_dir` (`None`: under the
    /// session's output folder, decided at the first save).
    pub(crate) fn new(require_read_before_edit: bool, checkpoint_dir: Option<PathBuf>) -> Self {
        Self {
            read_state: ReadState::default(),
            checkpoints: CheckpointStore::new(checkpoint_dir),
            require_read_before_edit,
            path_locks: (0..PATH_LOCKS).map(|_| Mutex::new(())).collect(),
            large_read: Mutex::new(()),
        }
    }

    /// For a file of `len` bytes over [`LARGE_FILE_BYTES`], waits for and holds the one turn
    /// to read such a file whole; `None` for a smaller file. Take it after the path's lock.
    pub(crate) fn large_read_turn(&self, len: u64) -> Option<MutexGuard<'_, ()>> {
        (len > LARGE_FILE_BYTES).then(|| self.large_read.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Holds the lock of `path`'s file until the guard is dropped: the file's identity when it
    /// exists (device and inode, through links, so two names of one file share it; one `stat`),
    /// else the path. Blocking: call it on the blocking pool.
    pub(crate) fn lock_path(&self, path: &Path) -> MutexGuard<'_, ()> {
        self.lock_stated(path, std::fs::metadata(path).ok().as_ref())
    }

    /// [`FileState::lock_path`] for a caller that has just read `path`'s metadata (through
    /// links), or found it missing (`None`): the same lock, without a second `stat`.
    pub(crate) fn lock_stated(
        &self,
        path: &Path,
        meta: Option<&std::fs::Metadata>,
    ) -> MutexGuard<'_, ()> {
        use std::os::unix::fs::MetadataExt;
        let mut h = std::hash::DefaultHasher::new();
        match meta {
            Some(m) => (m.dev(), m.ino()).hash(&mut h),
            None => path.hash(&mut h),
        }
        let stripe = (h.finish() % PATH_LOCKS as u64) as usize;
        self.path_locks[stripe]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Gives an agent scope's state an empty record of what it read (at the scope's start).
    pub(crate) fn open_scope(&self, state: StateKey) {
        self.read_state.open(state);
    }

    /// Drops an agent scope's state (at the scope's end): what it read, and its checkpoints.
    /// Returns the checkpoint files to delete, which the caller does off the pipeline's thread.
    /// Afterwards nothing is recorded for the state, so a late call of it cannot grow it again.
    pub(crate) fn close_scope(&self, state: StateKey) -> Vec<PathBuf> {
        if state.is_session() {
            return Vec::new();
        }
        self.read_state.close(state);
        self.checkpoints.drop_state(state)
    }

    /// Records that a call of `state` saw `path` holding `bytes`.
    pub(crate) fn record(&self, state: StateKey, path: &Path, bytes: &[u8]) {
        self.read_state.record(state, path, bytes);
    }

    /// The read-before-change rule shared by Write and Edit, for a file that exists, for a call
    /// of `state`.
    pub(crate) fn check_fresh(&self, state: StateKey, path: &Path) -> Result<(), String> {
        if self.require_read_before_edit {
            self.read_state.check(state, path)
        } else {
            Ok(())
        }
    }

    /// Writes `bytes` (parents created), saving the checkpoint of call `id` of `state` from
    /// the file the write checked, just before it changes, and records the result as read by
    /// that state. The text on error is for the model.
    pub(crate) fn commit(
        &self,
        state: StateKey,
        id: &Arc<str>,
        path: &Path,
        bytes: &[u8],
        output_dir: &Path,
        decided: Option<&[PathBuf]>,
    ) -> Result<(), String> {
        let fallback = output_dir.join("checkpoints");
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("could not create the folder {}: {e}", parent.display()))?;
        }
        let mut save = |prior: Option<&mut std::fs::File>, real: &Path| {
            let saved = self
                .checkpoints
                .save(state, id, (path, real), prior, &fallback);
            saved.map_err(|e| {
                format!(
                    "could not save a checkpoint of {} before changing it ({e}); the file was \
                     not changed",
                    path.display()
                )
            })
        };
        super::file_bytes::write_as_decided(path, bytes, decided, &mut save).map_err(
            |e| match e {
                super::file_bytes::FileError::Io { source, .. } => {
                    format!("could not write {}: {source}", path.display())
                }
                other => other.to_string(),
            },
        )?;
        self.read_state.record(state, path, bytes);
        Ok(())
    }

    /// Restores every file changed by call `to` and by every later Write or Edit of the same
    /// state (the session's calls, or one agent's) to its state before call `to` (later calls
    /// are undone first; a file a Write created is deleted), drops those checkpoints and
    /// says which files were restored (in the order they were first changed) and which were
    /// left as they are (a symlink now on their way). The files count as unread for that state
    /// afterwards, so an Edit needs a fresh Read (for any other state they have changed, unless
    /// restored to what it read).
    pub(crate) fn rewind(&self, to: &str) -> Result<Rewound, RewindError> {
        let (state, rewound) = self.checkpoints.rewind(to)?;
        let left = rewound.not_restored.iter().map(|(path, _)| path);
        for file in rewound.files.iter().chain(left) {
            self.read_state.forget(state, file);
        }
        Ok(rewound)
    }
}

/// A path that is a symbolic link to nothing: the message naming where it points (resolved
/// against the link's folder when relative); `None` for any other path.
pub(crate) fn dangling_link(path: &Path) -> Option<String> {
    let link = std::fs::symlink_metadata(path).ok()?;
    if !link.file_type().is_symlink() || std::fs::metadata(path).is_ok() {
        return None;
    }
    let to = std::fs::read_link(path).ok()?;
    let to = match path.parent() {
        Some(dir) if to.is_relative() => dir.join(&to),
        _ => to,
    };
    Some(format!(
        "{} is a symbolic link to {}, which does not exist",
        path.display(),
        to.display()
    ))
}

/// Write and Edit do not create a file through a dangling link: the file would appear where
/// the link points, under the link's name in the result, and a rewind would remove the link
/// rather than the file. The model is told where the link points, to write there instead.
pub(crate) fn refuse_dangling_link(path: &Path) -> Result<(), String> {
    match dangling_link(path) {
        Some(what) => Err(format!("{what}; write to the link's target path instead")),
        None => Ok(()),
    }
}

/// The absolute path of a file tool's `file_path`.
pub(crate) fn target(input: &Input, session: &Session) -> PathBuf {
    crate::paths::absolutize(
        str_field(input, "file_path").unwrap_or_default(),
        &session.cwd,
        &session.home,
    )
}

/// Whether Write and Edit validation should look at `path` at all: not when a rule denies
/// writing it, since the permission stage then denies the call, and a validation message would
/// send the model to read the file first.
pub(crate) fn worth_checking(path: &Path, guard: &dyn Guard) -> bool {
    !guard.write_denied(path)
}

/// A file's text before a change, for hooks: `None` when it cannot be read or is larger than
/// a diff is made of (the response then says `originalFile: null`, as the reference does).
pub(crate) fn prior_text(path: &Path) -> Option<String> {
    let bytes = super::file_bytes::read_regular(path, super::patch::MAX_DIFF_BYTES as u64).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Formats one numbered line as Read shows it, cutting it at [`MAX_LINE_CHARS`].
pub(crate) fn number_line(out: &mut String, number: usize, line: &str) {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let count = line.chars().count();
    if count > MAX_LINE_CHARS {
        let cut = line
            .char_indices()
            .nth(MAX_LINE_CHARS)
            .map(|(i, _)| i)
            .unwrap_or(line.len());
        out.push_str(&format!(
            "{number:>6}\t{}… [line cut: {count} characters in all]\n",
            &line[..cut]
        ));
    } else {
        out.push_str(&format!("{number:>6}\t{line}\n"));
    }
}
