//! What Read, Write and Edit share: the session's [`FileState`] (which files were read, and the
//! checkpoints of every change), the target path of a call, the read-before-change rule, the
//! one way a change is committed, and lines numbered as Read shows them.
//!
//! Everything here touches the file system synchronously: the tools call it on the blocking
//! pool ([`super::on_blocking_pool`]), never on the pipeline's thread.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::checkpoint::{CheckpointStore, RewindError};
use super::read_state::ReadState;
use super::str_field;
use crate::call::Input;
use crate::session::{Guard, Session};

/// Longer lines are cut to this many characters when numbered.
pub(crate) const MAX_LINE_CHARS: usize = 2_000;

/// What the file tools of one session remember.
#[derive(Debug)]
pub struct FileState {
    /// Files read (or written) in this session and their state at that moment.
    read_state: ReadState,
    /// Prior states of files changed by Write and Edit, per call.
    checkpoints: CheckpointStore,
    /// `tools.requireReadBeforeEdit`: Edit, and Write over an existing file, need a fresh read.
    require_read_before_edit: bool,
}

impl FileState {
    /// State for one session; checkpoints are kept under `checkpoint_dir` (`None`: under the
    /// session's output folder, decided at the first save).
    pub fn new(require_read_before_edit: bool, checkpoint_dir: Option<PathBuf>) -> Self {
        Self {
            read_state: ReadState::default(),
            checkpoints: CheckpointStore::new(checkpoint_dir),
            require_read_before_edit,
        }
    }

    /// Records that `path` was seen holding `bytes`.
    pub(crate) fn record(&self, path: &Path, bytes: &[u8]) {
        self.read_state.record(path, bytes);
    }

    /// The read-before-change rule shared by Write and Edit, for a file that exists.
    pub(crate) fn check_fresh(&self, path: &Path) -> Result<(), String> {
        if self.require_read_before_edit {
            self.read_state.check(path)
        } else {
            Ok(())
        }
    }

    /// Saves the checkpoint of call `id`, writes `bytes` (parents created), and records the
    /// result as read. The text on error is for the model.
    pub(crate) fn commit(
        &self,
        id: &Arc<str>,
        path: &Path,
        bytes: &[u8],
        output_dir: &Path,
    ) -> Result<(), String> {
        let fallback = output_dir.join("checkpoints");
        self.checkpoints.save(id, path, &fallback).map_err(|e| {
            format!(
                "could not save a checkpoint of {} before changing it ({e}); the file was not changed",
                path.display()
            )
        })?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("could not create the folder {}: {e}", parent.display()))?;
        }
        std::fs::write(path, bytes)
            .map_err(|e| format!("could not write {}: {e}", path.display()))?;
        self.read_state.record(path, bytes);
        Ok(())
    }

    /// Restores every file changed by call `to` and by every later Write or Edit to its state
    /// before call `to` (later calls are undone first; a file a Write created is deleted), drops
    /// those checkpoints and returns the restored files in the order they were first changed.
    /// The restored files count as unread afterwards, so an Edit needs a fresh Read.
    pub fn rewind(&self, to: &str) -> Result<Vec<PathBuf>, RewindError> {
        let files = self.checkpoints.rewind(to)?;
        for file in &files {
            self.read_state.forget(file);
        }
        Ok(files)
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
