//! State shared by every call of one server session.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The permission questions a tool may need to ask while it runs (a Read deny hides a file from
/// Grep and Glob results; WebFetch checks every redirect hop). The permission stage implements
/// it; [`AllowAll`] is the stand-in when no policy is configured.
pub trait Guard: Send + Sync + std::fmt::Debug {
    /// Whether a Read deny rule covers this absolute, normalised path.
    fn read_denied(&self, path: &Path) -> bool;
    /// Whether a deny rule forbids writing this absolute, normalised path (a Read or Edit deny).
    /// Edit and Write then skip their own checks, so the call is reported as `denied` by the
    /// permission stage rather than as a validation problem the model would try to fix.
    fn write_denied(&self, path: &Path) -> bool;
    /// Whether fetching this URL (e.g. a redirect target) is allowed without asking.
    fn fetch_allowed(&self, url: &str) -> bool;
    /// Whether [`Guard::fetch_allowed`] answers from permission rules here. On a worker node,
    /// where the rules are the coordinator's, it does not: WebFetch there follows no redirect
    /// and reports where it leads instead, so that a new call is decided on the coordinator.
    fn judges_fetches(&self) -> bool {
        true
    }
    /// The glob patterns behind [`Guard::read_denied`] (absolute, their anchors resolved),
    /// for a worker node that answers it for its own files; none by default.
    fn read_deny_patterns(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The Bash input field with which a call asks to run outside the sandbox (honoured only with
/// `sandbox.allowUnsandboxedCommands`, and never auto-allowed).
pub const UNSANDBOXED_FIELD: &str = "dangerouslyDisableSandbox";

/// How to start a shell command inside the sandbox: `program args… -- bash -c <command>`, with
/// `env` added to the child's environment (the session's `TMPDIR`).
#[derive(Debug, Clone)]
pub struct ShellLaunch {
    /// The helper that restricts itself and then runs the command (`toolrt`).
    pub program: PathBuf,
    /// Its arguments before `--` (`sandbox-exec --policy …`).
    pub args: Vec<std::ffi::OsString>,
    /// Variables set for the sandboxed command.
    pub env: Vec<(String, String)>,
}

/// How one shell command runs.
#[derive(Debug, Clone)]
pub enum ShellPlan {
    /// Directly, without a sandbox (none configured, an excluded command, or a call that asked
    /// to run outside it).
    Direct,
    /// Inside the sandbox.
    Sandboxed(Arc<ShellLaunch>),
    /// Not at all: the sandbox is required (`sandbox.failIfUnavailable`) and cannot start.
    Refused(String),
}

/// The Bash sandbox as the shell tools and the permission engine see it: the same answer for
/// the same command in both, so what was auto-allowed because it runs sandboxed does run
/// sandboxed.
pub trait ShellSandbox: Send + Sync + std::fmt::Debug {
    /// How `command` runs; `unsandboxed_requested`: the call set [`UNSANDBOXED_FIELD`].
    fn plan(&self, command: &str, unsandboxed_requested: bool) -> ShellPlan;
    /// Whether a Bash call that no deny or ask rule matches is allowed because it runs
    /// sandboxed (`sandbox.autoAllowBashIfSandboxed`).
    fn auto_allows(&self, command: &str, unsandboxed_requested: bool) -> bool;
    /// One line for `toolrt explain`: how the command would run, and under which policy.
    fn describe(&self, command: &str, unsandboxed_requested: bool) -> String;
    /// Starts call `tool_use_id`'s sandboxed command: its own launch (naming the call to the
    /// network proxy), and a ticket that collects what the sandbox refused it.
    fn enter(&self, launch: Arc<ShellLaunch>, _tool_use_id: &str) -> SandboxedCall {
        SandboxedCall {
            launch,
            ticket: None,
        }
    }
}

/// One call's sandboxed command, while it runs.
pub struct SandboxedCall {
    /// How to start it.
    pub launch: Arc<ShellLaunch>,
    /// What the sandbox refused it (its proxy's refusals); the call ends there when dropped.
    pub ticket: Option<Box<dyn SandboxTicket>>,
}

impl SandboxedCall {
    /// What the sandbox refused the command so far, one line each.
    pub fn refusals(&self) -> Vec<String> {
        self.ticket
            .as_ref()
            .map(|t| t.refusals())
            .unwrap_or_default()
    }
}

/// A sandboxed call as the sandbox tracks it.
pub trait SandboxTicket: Send + Sync {
    /// What the sandbox refused the call, one line each.
    fn refusals(&self) -> Vec<String>;
}

/// A [`Guard`] that permits everything.
#[derive(Debug, Default)]
pub(crate) struct AllowAll;

impl Guard for AllowAll {
    fn read_denied(&self, _path: &Path) -> bool {
        false
    }
    fn write_denied(&self, _path: &Path) -> bool {
        false
    }
    fn fetch_allowed(&self, _url: &str) -> bool {
        true
    }
}

/// What every stage and tool of one server run shares: where it runs, where outputs go, what
/// child processes get, and the permission questions a running tool may ask. (Built-in tools'
/// own state lives in the tools; this module depends on nothing else in the crate.)
#[derive(Debug, Clone)]
pub struct Session {
    /// A fresh id per server run (hooks see it as `session_id`).
    pub id: String,
    /// The working directory and root of the workspace.
    pub cwd: PathBuf,
    /// The home directory (`~` in paths).
    pub home: PathBuf,
    /// Where externalized outputs are written.
    pub output_dir: PathBuf,
    /// Whether `output_dir` is a temporary folder, deleted when the session ends (what a notice
    /// naming a file in it says).
    pub output_dir_temporary: bool,
    /// Names of toolrt's environment variables removed from every process a tool starts
    /// (those matching `toolrt.envScrub`, worked out once).
    pub env_remove: Vec<std::ffi::OsString>,
    /// Variables set for every tool and hook process (settings `env`), after the scrub.
    pub env: Vec<(String, String)>,
    /// The `bash` that shell commands run: its absolute path on the children's `PATH`, found
    /// once for the session, or the bare name (looked up at each start) when that is not sure.
    pub shell: PathBuf,
    /// Permission questions asked while a tool runs.
    pub guard: Arc<dyn Guard>,
    /// The Bash sandbox (`sandbox.enabled`), if any.
    pub sandbox: Option<Arc<dyn ShellSandbox>>,
    /// With worker nodes: a call's relative paths are made absolute on the node that runs it
    /// (against its folder, in the supervisor's `place` step), not against `cwd` here.
    pub paths_on_nodes: bool,
}

/// Said after a path in a temporary output folder, wherever a notice names one.
pub(crate) const TEMPORARY_NOTE: &str =
    " (a temporary folder: deleted when this toolrt session ends)";

impl Session {
    /// A session rooted at `cwd`, writing outputs to `output_dir`.
    pub fn new(cwd: PathBuf, output_dir: PathBuf) -> Self {
        Self {
            id: new_session_id(),
            cwd,
            home: home_dir(),
            output_dir,
            output_dir_temporary: false,
            env_remove: Vec::new(),
            env: Vec::new(),
            shell: PathBuf::from("bash"),
            guard: Arc::new(AllowAll),
            sandbox: None,
            paths_on_nodes: false,
        }
    }
}

/// The home directory: `$HOME`, else `/`.
pub(crate) fn home_dir() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

fn new_session_id() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("toolrt-{}-{:x}", std::process::id(), nanos)
}
