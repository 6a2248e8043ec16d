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

use crate::tool::Tool;

pub mod background;
pub mod bash;
pub mod capture;
pub mod checkpoint;
pub mod edit;
pub mod file_bytes;
pub mod glob;
pub mod grep;
pub mod noop;
pub(crate) mod patch;
pub mod read;
pub mod read_state;
mod shell_run;
pub mod task_output;
pub mod task_stop;
pub mod web_fetch;
pub mod write;

pub use checkpoint::RewindError;

/// The longest string each built-in tool's input fields take, in characters (each schema's
/// `maxLength`). A longer value is a `schema_error` naming the field, and is refused before it
/// is copied or looked at further (`validate::check_input`).
pub mod limits {
    /// A file or folder path: Linux's PATH_MAX.
    pub const PATH_CHARS: u64 = 4096;
    /// A Bash command: Linux passes at most 131,071 bytes in one argument (`bash -c COMMAND`);
    /// Bash also refuses a command over that many bytes.
    pub const COMMAND_CHARS: u64 = 131_071;
    /// A file's content, and Edit's old and new text.
    pub const CONTENT_CHARS: u64 = 16 * 1024 * 1024;
    /// A Grep regular expression or a glob pattern.
    pub const PATTERN_CHARS: u64 = 16 * 1024;
    /// A URL.
    pub const URL_CHARS: u64 = 8 * 1024;
    /// Free text that only describes (Bash's `description`, WebFetch's `prompt`).
    pub const TEXT_CHARS: u64 = 64 * 1024;
    /// A short name: a task id, a file type.
    pub const NAME_CHARS: u64 = 256;
}

/// The names of every built-in tool, in the order [`builtin_tools`] returns them (`--tools
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

/// One instance of every built-in tool, in the order of [`DEFAULT_TOOLS`]. The tools themselves
/// are stateless; what they remember lives in [`ToolState`] inside the session.
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(bash::Bash),
        Arc::new(read::Read),
        Arc::new(write::Write),
        Arc::new(edit::Edit),
        Arc::new(glob::Glob),
        Arc::new(grep::Grep),
        Arc::new(web_fetch::WebFetch::default()),
        Arc::new(task_output::TaskOutput),
        Arc::new(task_stop::TaskStop),
    ]
}

/// Per-session state of the built-in tools: which files were read (and in what state), the
/// checkpoints Write and Edit leave for rewind, and the running background tasks.
///
/// Dropping it kills every background task, as [`ToolState::shutdown`] does.
#[derive(Debug)]
pub struct ToolState {
    /// Files read (or written) in this session and their state at that moment.
    pub(crate) read_state: read_state::ReadState,
    /// Prior states of files changed by Write and Edit, per call.
    pub(crate) checkpoints: checkpoint::CheckpointStore,
    /// Background Bash tasks.
    pub(crate) tasks: background::Tasks,
    /// `tools.requireReadBeforeEdit`: Edit, and Write over an existing file, need a fresh read.
    pub(crate) require_read_before_edit: bool,
}

impl ToolState {
    /// State for one session. `require_read_before_edit` is the `tools.requireReadBeforeEdit`
    /// setting (default true); checkpoints are kept under `checkpoint_dir` (the lead passes
    /// `<output dir>/checkpoints`).
    pub fn new(require_read_before_edit: bool, checkpoint_dir: PathBuf) -> Self {
        Self {
            read_state: read_state::ReadState::default(),
            checkpoints: checkpoint::CheckpointStore::new(Some(checkpoint_dir)),
            tasks: background::Tasks::default(),
            require_read_before_edit,
        }
    }

    /// Kills every background task still running (its whole process group). Called at server
    /// shutdown; also runs on drop. Idempotent.
    pub fn shutdown(&self) {
        self.tasks.kill_all();
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

impl Default for ToolState {
    /// Read-before-edit on; checkpoints go to `<session output dir>/checkpoints`, decided at the
    /// first save.
    fn default() -> Self {
        Self {
            read_state: read_state::ReadState::default(),
            checkpoints: checkpoint::CheckpointStore::new(None),
            tasks: background::Tasks::default(),
            require_read_before_edit: true,
        }
    }
}

impl Drop for ToolState {
    fn drop(&mut self) {
        self.shutdown();
    }
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
    if let Some(raw) = str_field(input, key) {
        let abs = crate::paths::absolutize(raw, &session.cwd, &session.home);
        input.insert(
            key.to_string(),
            serde_json::Value::String(abs.to_string_lossy().into_owned()),
        );
    }
}
