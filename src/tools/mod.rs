//! The built-in tools, one file each, and the per-session state they share.
//!
//! # Layout
//! - `bash`: `Bash`, foreground and background shell commands; `shell_run` runs one command to
//!   its end (started through [`crate::process`]); `capture` bounds what a command's output
//!   costs in memory; `background` is the registry of background tasks that `task_output` and
//!   `task_stop` read and stop.
//! - `read`, `write`, `edit`: the file tools; `file_bytes` reads what a path names, regular files
//!   only and bounded; `read_state` remembers what was read so Edit and
//!   Write never overwrite a change the model has not seen; `checkpoint` keeps every file's prior
//!   state so [`ToolState::rewind`] can undo; `patch` describes their change to hooks.
//! - `glob`, `grep`: search by name and by content.
//! - `web_fetch`: `WebFetch`.

use std::path::PathBuf;
use std::sync::Arc;

use crate::call::Input;
use crate::tool::{StateKey, Tool, ToolContext, ToolOutput};

pub(crate) mod background;
pub(crate) mod bash;
pub(crate) mod capture;
pub(crate) mod checkpoint;
pub(crate) mod edit;
pub(crate) mod file_bytes;
pub(crate) mod files;
pub(crate) mod glob;
pub(crate) mod grep;
pub(crate) mod noop;
pub(crate) mod patch;
mod quotes;
pub(crate) mod read;
pub(crate) mod read_state;
mod shell_run;
pub(crate) mod task_output;
pub(crate) mod task_stop;
pub(crate) mod web_fetch;
pub(crate) mod write;

pub(crate) use background::Tasks;
pub use checkpoint::{RewindError, Rewound};
pub(crate) use files::FileState;

/// The longest string each built-in tool's input fields take, in characters (each schema's
/// `maxLength`). A longer value is a `schema_error` naming the field, and is refused before it
/// is copied or looked at further (`validate::check_input`).
pub(crate) mod limits {
    /// A file or folder path: Linux's PATH_MAX.
    pub(crate) const PATH_CHARS: u64 = 4096;
    /// A Bash command: Linux passes at most 131,071 bytes in one argument (`bash -c COMMAND`);
    /// Bash also refuses a command over that many bytes.
    pub(crate) const COMMAND_CHARS: u64 = 131_071;
    /// A file's content, and Edit's old and new text.
    pub(crate) const CONTENT_CHARS: u64 = 16 * 1024 * 1024;
    /// A Grep regular expression or a glob pattern.
    pub(crate) const PATTERN_CHARS: u64 = 16 * 1024;
    /// A URL.
    pub(crate) const URL_CHARS: u64 = 8 * 1024;
    /// Free text that only describes (Bash's `description`, WebFetch's `prompt`).
    pub(crate) const TEXT_CHARS: u64 = 64 * 1024;
    /// A short name: a task id, a file type.
    pub(crate) const NAME_CHARS: u64 = 256;
}

/// The names of every built-in tool, in the order [`ToolState::tools`] returns them (`--tools
/// default`).
pub const DEFAULT_TOOLS: &[&str] = &[
    "Bash",
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "WebFetch",
    "TaskOutput",
    "TaskStop",
];

/// What the built-in tools of one session remember, shared by the tools that need it: the
/// file tools' [`FileState`] (read-before-edit, checkpoints) and the background [`Tasks`] of
/// Bash, TaskOutput and TaskStop. The runtime keeps this handle for rewind and shutdown; the
/// tools hold their parts.
#[derive(Debug, Clone)]
pub struct ToolState {
    files: Arc<FileState>,
    tasks: Arc<Tasks>,
}

impl ToolState {
    /// State for one session. `require_read_before_edit` is the `tools.requireReadBeforeEdit`
    /// setting (default true); checkpoints are kept under `checkpoint_dir` (the runtime passes
    /// `<output dir>/checkpoints`).
    pub fn new(require_read_before_edit: bool, checkpoint_dir: PathBuf) -> Self {
        Self {
            files: Arc::new(FileState::new(
                require_read_before_edit,
                Some(checkpoint_dir),
            )),
            tasks: Arc::default(),
        }
    }

    /// One instance of every built-in tool holding this state, in the order of
    /// [`DEFAULT_TOOLS`].
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(bash::Bash::new(self.tasks.clone())),
            Arc::new(read::Read::new(self.files.clone())),
            Arc::new(write::Write::new(self.files.clone())),
            Arc::new(edit::Edit::new(self.files.clone())),
            Arc::new(glob::Glob),
            Arc::new(grep::Grep),
            Arc::new(web_fetch::WebFetch::default()),
            Arc::new(task_output::TaskOutput::new(self.tasks.clone())),
            Arc::new(task_stop::TaskStop::new(self.tasks.clone())),
        ]
    }

    /// Bash, TaskOutput and TaskStop over background tasks of their own, named after `name`
    /// (`bg-<name>-1`, …): a worker node keeps one set per coordinator. When the last holder
    /// of the returned tasks drops them, every task still running is killed.
    pub(crate) fn task_tools(name: &str) -> (Arc<Tasks>, [Arc<dyn Tool>; 3]) {
        let tasks = Arc::new(Tasks::named(name));
        let tools: [Arc<dyn Tool>; 3] = [
            Arc::new(bash::Bash::new(tasks.clone())),
            Arc::new(task_output::TaskOutput::new(tasks.clone())),
            Arc::new(task_stop::TaskStop::new(tasks.clone())),
        ];
        (tasks, tools)
    }

    /// Kills every background task still running (its whole process group). Called at
    /// shutdown; also runs when the last holder of the tasks is dropped. Idempotent.
    pub fn shutdown(&self) {
        self.tasks.kill_all();
    }

    /// Restores every file changed by call `to` and by every later Write or Edit of the same
    /// caller (the session's calls, or one agent scope's) to its state before call `to` (later
    /// calls are undone first; a file a Write created is deleted), drops those checkpoints and
    /// returns the restored files in the order they were first changed, and those left as they
    /// are because a symlink now lies on their path (a rewind never follows one). The files
    /// count as unread for that caller afterwards, so an Edit needs a fresh Read. Touches the
    /// file system: call it on the blocking pool.
    pub fn rewind(&self, to: &str) -> Result<Rewound, RewindError> {
        self.files.rewind(to)
    }

    /// A top-level agent scope started: its calls get file state of their own
    /// (read-before-edit, checkpoints), empty. Same as [`ToolState::open_child_scope`] under
    /// [`StateKey::SESSION`].
    pub fn open_scope(&self, state: StateKey) {
        self.open_child_scope(state, StateKey::SESSION);
    }

    /// An agent scope started below `parent` (its parent scope's key, [`StateKey::SESSION`]
    /// for a top-level one): its calls get file state of their own, empty; the background
    /// tasks it starts belong to it, and TaskOutput and TaskStop of `parent` (and of the
    /// scopes above) may act on them too.
    pub fn open_child_scope(&self, state: StateKey, parent: StateKey) {
        self.files.open_scope(state);
        self.tasks.open_scope(state, parent);
    }

    /// An agent scope ended: the background tasks it started that still run are killed (their
    /// whole process groups), and its file state goes (its checkpoint files are deleted on the
    /// blocking pool when called inside a tokio runtime). The session's state and tasks are
    /// never dropped here.
    pub fn close_scope(&self, state: StateKey) {
        self.tasks.close_scope(state);
        let blobs = self.files.close_scope(state);
        if blobs.is_empty() {
            return;
        }
        let delete = move || {
            for blob in blobs {
                let _ = std::fs::remove_file(blob);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(delete)),
            Err(_) => delete(),
        }
    }
}

impl Default for ToolState {
    /// Read-before-edit on; checkpoints go to `<session output dir>/checkpoints`, decided at the
    /// first save.
    fn default() -> Self {
        Self {
            files: Arc::new(FileState::new(true, None)),
            tasks: Arc::default(),
        }
    }
}

/// Runs file-system work on the blocking pool and waits for it: on the pipeline's one thread
/// it would hold up every other call. `Err` is text for the model.
pub(crate) async fn on_blocking_pool<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(format!("toolrt failed while working on the file: {e}")))
}

/// Runs a file tool's call (`work`, over the session's file state) on the blocking pool, as
/// Read, Write and Edit do.
pub(crate) async fn file_call(
    files: &Arc<files::FileState>,
    input: Input,
    ctx: ToolContext,
    work: fn(&files::FileState, &Input, &ToolContext) -> ToolOutput,
) -> ToolOutput {
    let files = files.clone();
    on_blocking_pool(move || Ok(work(&files, &input, &ctx)))
        .await
        .unwrap_or_else(ToolOutput::failed)
}

/// A path as the reference CLI names it to hooks in Glob's and Grep's responses: relative to
/// the working directory when inside it, else absolute.
pub(crate) fn hook_path(path: &std::path::Path, cwd: &std::path::Path) -> String {
    path.strip_prefix(cwd)
        .ok()
        .filter(|rel| !rel.as_os_str().is_empty())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// The string field `key` of a call's input, if present.
pub(crate) fn str_field<'a>(input: &'a crate::call::Input, key: &str) -> Option<&'a str> {
    input.get(key).and_then(|v| v.as_str())
}

/// The non-negative integer field `key` of a call's input, if present.
pub(crate) fn u64_field(input: &crate::call::Input, key: &str) -> Option<u64> {
    input.get(key).and_then(|v| {
        v.as_u64()
            .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
    })
}

/// The boolean field `key` of a call's input, or `default`.
pub(crate) fn bool_field(input: &crate::call::Input, key: &str, default: bool) -> bool {
    input.get(key).and_then(|v| v.as_bool()).unwrap_or(default)
}

/// Makes the string field `key` an absolute, normalised path (coercion step of the file tools).
pub(crate) fn absolutize_field(
    input: &mut crate::call::Input,
    key: &str,
    session: &crate::session::Session,
) {
    if session.paths_on_nodes {
        // The call runs on a worker node: its path means one there (`Session::paths_on_nodes`).
        return;
    }
    if let Some(raw) = str_field(input, key) {
        let abs = crate::paths::absolutize(raw, &session.cwd, &session.home);
        input.insert(
            key.to_string(),
            serde_json::Value::String(abs.to_string_lossy().into_owned()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_scope_loses_what_it_read_and_its_checkpoint_files() {
        let dir = tempfile::tempdir().unwrap();
        let cp = dir.path().join("cp");
        let state = ToolState::new(true, cp.clone());
        let file = dir.path().join("f");
        std::fs::write(&file, "one").unwrap();
        let scope = StateKey::scope(7);
        state.open_scope(scope);
        let id: Arc<str> = Arc::from("w1");
        state.files.record(scope, &file, b"one");
        assert!(state.files.check_fresh(scope, &file).is_ok());
        state
            .files
            .commit(scope, &id, &file, b"two", dir.path(), None)
            .unwrap();
        assert_eq!(std::fs::read_dir(&cp).unwrap().count(), 1);
        // Outside a tokio runtime the files go at once.
        state.close_scope(scope);
        assert_eq!(std::fs::read_dir(&cp).unwrap().count(), 0);
        assert!(state.files.check_fresh(scope, &file).is_err());
        assert!(matches!(state.rewind("w1"), Err(RewindError::Unknown(_))));
        state.close_scope(StateKey::SESSION);
        state.files.record(StateKey::SESSION, &file, b"two");
        assert!(state.files.check_fresh(StateKey::SESSION, &file).is_ok());
    }
}
