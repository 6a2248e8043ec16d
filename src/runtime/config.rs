//! How to build a runtime (`Config`), where its output files go (`OutputDir`), and why it
//! may not start (`StartError`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::hooks::{HookEvent, InProcessHook};
use crate::permission::Mode;
use crate::registry::Selection;
use crate::settings::{Settings, SettingsError};
use crate::supervisor::AskPolicy;
use crate::tool::Tool;

/// Where a session's output files go: externalized results, long Bash output, background
/// tasks' output, checkpoints. This session's folder is readable by Read, Glob and Grep without
/// a rule (its `checkpoints` folder excepted), so a result that points to a file there can be
/// read back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OutputDir {
    /// A folder of the session's own, kept after it ends: `$XDG_STATE_HOME/toolrt/sessions/<session
    /// id>`, or `~/.local/state/toolrt/sessions/<session id>` without `$XDG_STATE_HOME`. Created
    /// when the first file is written.
    #[default]
    Default,
    /// This folder (`--output-dir`), created if missing and kept. It becomes toolrt's own, so it
    /// may not be the root, the home folder or a folder holding it, or a folder holding the cwd.
    At(PathBuf),
    /// A fresh temporary folder deleted when the runtime is dropped (`--temp-output-dir`);
    /// notices that point into it say so.
    Temporary,
}

/// How to build a runtime.
#[derive(Clone)]
pub struct Config {
    /// Working directory and workspace root.
    pub cwd: PathBuf,
    /// Where output files go.
    pub output_dir: OutputDir,
    /// Settings files, loaded and merged.
    pub settings: Settings,
    /// `--tools`.
    pub selection: Selection,
    /// `--allowed-tools` rules.
    pub allowed_tools: Vec<String>,
    /// `--disallowed-tools` rules.
    pub disallowed_tools: Vec<String>,
    /// `--permission-mode`.
    pub permission_mode: Option<Mode>,
    /// `--strict-settings`: a settings key toolrt does not know or ignores is an error rather
    /// than a warning.
    pub strict_settings: bool,
    /// Calls executing at once across batches.
    pub max_in_flight: usize,
    /// Admitted calls waiting beyond those executing.
    pub max_queued: usize,
    /// Accepted calls waiting for admission (the parked queue; also bounded in bytes).
    pub max_parked: usize,
    /// Calls of one batch running at once.
    pub max_parallel: usize,
    /// What an ask becomes.
    pub ask_policy: AskPolicy,
    /// Whether the built-in tools are known (library users may want only their own).
    pub builtins: bool,
    /// Extra tools registered by a library user (selected by `default` like built-ins).
    pub extra_tools: Vec<Arc<dyn Tool>>,
    /// Name prefixes of tools added while running
    /// ([`Runtime::set_tools`](super::Runtime::set_tools)): a `--tools` name or an alias target
    /// with one of them may name a tool that does not exist at start-up.
    pub late_tool_prefixes: Vec<String>,
    /// Receives per-stage timings (benchmarks); None in normal runs.
    pub clock: Option<Arc<dyn crate::supervisor::StageClock>>,
    /// In-process hooks registered by a library user: event, matcher, timeout, function.
    pub in_process_hooks: Vec<(HookEvent, String, Duration, Arc<dyn InProcessHook>)>,
    /// `--plugin-dir`: plugin directories whose hooks load after the settings files' hooks.
    pub plugin_dirs: Vec<PathBuf>,
    /// `--session-id`: the `session_id` hooks see (default: a fresh id per run).
    pub session_id: Option<String>,
    /// `--transcript-path`: the `transcript_path` hooks see (default: null).
    pub transcript_path: Option<String>,
    /// `--mcp-config` files and `--strict-mcp-config` (servers also come from settings'
    /// `mcpServers` and the project's approved `.mcp.json`).
    pub mcp: crate::mcp::config::McpOptions,
    /// The session's model-API format (`--format`): lines in its shape are turns of calls, and
    /// `list_tools` answers in it by default.
    pub format: crate::formats::Format,
    /// Where calls' OpenTelemetry spans go (OTLP/HTTP); None: calls are not traced. The CLI
    /// sets it from the standard variables ([`OtlpConfig::from_env`](crate::OtlpConfig::from_env)).
    #[cfg(feature = "otel")]
    pub otel: Option<crate::OtlpConfig>,
    /// Worker nodes that run calls' execute steps (`serve --worker`); None: every call runs
    /// here.
    pub cluster: Option<crate::cluster::ClusterConfig>,
}

impl Config {
    /// Defaults for a runtime rooted at `cwd`.
    pub fn new(cwd: PathBuf) -> Self {
        Self {
            cwd,
            output_dir: OutputDir::Default,
            settings: Settings {
                require_read_before_edit: true,
                ..Default::default()
            },
            selection: Selection::All,
            allowed_tools: Vec::new(),
            disallowed_tools: Vec::new(),
            permission_mode: None,
            strict_settings: false,
            max_in_flight: 64,
            max_queued: 4096,
            max_parked: crate::dispatch::DEFAULT_MAX_PARKED,
            max_parallel: 10,
            ask_policy: AskPolicy::Client,
            builtins: true,
            extra_tools: Vec::new(),
            late_tool_prefixes: Vec::new(),
            in_process_hooks: Vec::new(),
            clock: None,
            plugin_dirs: Vec::new(),
            session_id: None,
            transcript_path: None,
            mcp: Default::default(),
            format: Default::default(),
            #[cfg(feature = "otel")]
            otel: None,
            cluster: None,
        }
    }

    /// Registers an in-process hook: an async Rust function run for `event` on tools matching
    /// `matcher` (same matcher rules, merge rules and timeouts as command hooks).
    pub fn hook(
        mut self,
        event: HookEvent,
        matcher: &str,
        timeout: Duration,
        hook: Arc<dyn InProcessHook>,
    ) -> Self {
        self.in_process_hooks
            .push((event, matcher.to_string(), timeout, hook));
        self
    }

    /// Registers a tool of the library user's.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.extra_tools.push(tool);
        self
    }
}

/// A runtime that cannot start. `Display` names what was wrong; the CLI exits 2.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A settings file.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The tool registry (selection, aliases, schemas).
    #[error(transparent)]
    Registry(#[from] crate::registry::RegistryError),
    /// Permission rules.
    #[error(transparent)]
    Policy(#[from] crate::permission::PolicyError),
    /// Hook configuration.
    #[error(transparent)]
    Hooks(#[from] crate::hooks::HookConfigError),
    /// A plugin directory.
    #[error(transparent)]
    Plugin(#[from] crate::hooks::plugin::PluginError),
    /// MCP server configuration (a wrong type, an unset `${VAR}`).
    #[error(transparent)]
    Mcp(#[from] crate::mcp::config::McpConfigError),
    /// Agent types (`agents`, `toolrt.maxAgentDepth`).
    #[error(transparent)]
    Agents(#[from] crate::scope::AgentsError),
    /// The working or output directory.
    #[error("{0}")]
    Io(String),
    /// `--strict-settings`, and settings toolrt would only have warned about (one per line).
    #[error("{0}")]
    Strict(String),
    /// An actor could not start.
    #[error("could not start the {0} stage")]
    Spawn(&'static str),
    /// The OTLP exporter (a header that cannot be sent, no HTTP client).
    #[error("{0}")]
    Otel(String),
    /// Worker nodes (a cookie file, an address, a worker that refused the cookie).
    #[error("{0}")]
    Cluster(String),
}

/// What the name of a temporary output folder starts with (then the owner's pid).
const TEMP_OUTPUT_PREFIX: &str = "toolrt-out-";

/// The session's output folder, and the temporary folder to delete at the end when it is one.
pub(super) fn output_folder(
    choice: &OutputDir,
    session_id: &str,
    cwd: &Path,
) -> Result<(PathBuf, Option<tempfile::TempDir>), StartError> {
    match choice {
        // Made by the first file written into it (a session that writes none leaves no trace),
        // readable by its owner only.
        OutputDir::Default => Ok((default_output_dir(session_id), None)),
        OutputDir::Temporary => {
            // Named with our pid, so a later session removes the folder of one that was killed
            // before it could (SIGKILL) and leaves live sessions' folders alone.
            crate::paths::sweep_dead_owners(&std::env::temp_dir(), TEMP_OUTPUT_PREFIX);
            let tmp = tempfile::Builder::new()
                .prefix(&format!("{TEMP_OUTPUT_PREFIX}{}-", std::process::id()))
                .tempdir()
                .map_err(|e| {
                    StartError::Io(format!("cannot create a temporary output folder: {e}"))
                })?;
            Ok((tmp.path().to_path_buf(), Some(tmp)))
        }
        OutputDir::At(dir) => {
            let err =
                |why: String| StartError::Io(format!("--output-dir {}: {why}", dir.display()));
            if dir.exists() && !dir.is_dir() {
                return Err(err("not a folder".into()));
            }
            crate::paths::create_private_dir(dir).map_err(|e| err(e.to_string()))?;
            let abs = std::fs::canonicalize(dir).map_err(|e| err(e.to_string()))?;
            let home = std::fs::canonicalize(crate::paths::home_dir())
                .unwrap_or_else(|_| crate::paths::home_dir());
            // Its files are readable without asking: it must not hand out more than outputs.
            let holds = |p: &Path| p.starts_with(&abs);
            if abs == Path::new("/") || holds(&home) || (holds(cwd) && abs != cwd) {
                return Err(err(
                    "toolrt's output folder is readable without asking, so it may not be the \
                     root, the home folder or a folder holding it, or a folder holding the \
                     working directory; give it a folder of its own"
                        .into(),
                ));
            }
            Ok((abs, None))
        }
    }
}

/// `$XDG_STATE_HOME/toolrt/sessions/<id>`, else `~/.local/state/toolrt/sessions/<id>`; without
/// a usable home, under the system's temporary folder (still kept after the session).
pub(crate) fn default_output_dir(session_id: &str) -> PathBuf {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            let home = crate::paths::home_dir();
            (home != Path::new("/")).then(|| home.join(".local/state"))
        })
        .unwrap_or_else(|| std::env::temp_dir().join("toolrt-state"));
    state.join("toolrt/sessions").join(session_id)
}
