//! Assembling a runtime: settings, registry, policy, stage actors, dispatcher. This is the
//! library's entry point; `toolrt serve` and `toolrt run` are thin loops over it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::budget::Budget;
use crate::client_tools::{ClientTools, Exchange, RegisterError};
use crate::dispatch::{Dispatcher, Limits};
use crate::emit::{Emitter, Outbox};
use crate::execute::Executor;
use crate::hooks::{HookConfig, HookEnv, HookEvent, HookRunner, Hooks, InProcessHook};
use crate::permission::{Mode, Permission, Policy, PolicyBuilder, RuleFilter};
use crate::protocol::{ClientMessage, ServerMessage};
use crate::registry::{GroupChange, Naming, Registry, Selection};
use crate::session::Session;
use crate::settings::{Settings, SettingsError};
use crate::supervisor::{AskPolicy, Pipeline, PipelineOptions, Stages};
use crate::tool::Tool;
use crate::tools::ToolState;
use crate::validate::Validator;

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

/// At shutdown, how long async hooks still running may take before they are killed.
const ASYNC_HOOK_GRACE: Duration = Duration::from_secs(5);

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
    /// Name prefixes of tools added while running ([`Runtime::set_tools`]): a `--tools` name
    /// or an alias target with one of them may name a tool that does not exist at start-up.
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
    /// The working or output directory.
    #[error("{0}")]
    Io(String),
    /// `--strict-settings`, and settings toolrt would only have warned about (one per line).
    #[error("{0}")]
    Strict(String),
    /// An actor could not start.
    #[error("could not start the {0} stage")]
    Spawn(&'static str),
}

/// The session's output folder, and the temporary folder to delete at the end when it is one.
fn output_folder(
    choice: &OutputDir,
    session_id: &str,
    cwd: &Path,
) -> Result<(PathBuf, Option<tempfile::TempDir>), StartError> {
    match choice {
        // Made by the first file written into it (a session that writes none leaves no trace),
        // readable by its owner only.
        OutputDir::Default => Ok((default_output_dir(session_id), None)),
        OutputDir::Temporary => {
            let tmp = tempfile::Builder::new()
                .prefix("toolrt-out-")
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
pub fn default_output_dir(session_id: &str) -> PathBuf {
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

/// Start-up warnings (settings keys toolrt does not know or ignores): each printed once on
/// stderr, or, with `strict`, refused all together.
fn report_warnings(strict: bool, warnings: &[String]) -> Result<(), StartError> {
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<&String> = warnings.iter().filter(|w| seen.insert(*w)).collect();
    if strict && !unique.is_empty() {
        let mut message =
            "--strict-settings: toolrt would ignore these settings, so it does not start:"
                .to_string();
        for w in unique {
            message.push_str("\n  ");
            message.push_str(w);
        }
        return Err(StartError::Strict(message));
    }
    for w in unique {
        tracing::warn!("{w}");
    }
    Ok(())
}

/// Compiles the permission policy and the tool registry of a config (shared by `start` and
/// `explain`), with the warnings of the settings so far.
fn build_policy_and_registry(
    config: &Config,
    cwd: &Path,
    output_dir: Option<&Path>,
    tool_state: &ToolState,
    mcp_tools: Vec<Arc<dyn Tool>>,
) -> Result<(Arc<Policy>, Registry, Vec<String>), StartError> {
    let settings = &config.settings;
    let mut policy = PolicyBuilder::new(cwd.to_path_buf(), crate::paths::home_dir());
    if let Some(dir) = output_dir {
        policy.add_output_dir(dir);
    }
    for (file, permissions) in settings.sections("permissions") {
        policy.add_settings_file(file, permissions)?;
    }
    for rule in &config.allowed_tools {
        policy.add_cli_allow(rule)?;
    }
    for rule in &config.disallowed_tools {
        policy.add_cli_deny(rule)?;
    }
    if let Some(mode) = config.permission_mode {
        policy.set_cli_mode(mode);
    }
    let mut warnings = settings.warnings.clone();
    warnings.extend(policy.warnings().iter().cloned());
    let policy = Arc::new(policy.build()?);
    // A notice (bypass taken away) says what toolrt does, not a setting it ignores: printed,
    // never refused by --strict-settings.
    for notice in policy.notices() {
        tracing::warn!("{notice}");
    }
    let mut tools: Vec<Arc<dyn Tool>> = if config.builtins {
        tool_state.tools()
    } else {
        Vec::new()
    };
    tools.extend(config.extra_tools.iter().cloned());
    tools.extend(mcp_tools);
    // MCP tools join while running (a server's group): `--tools` and aliases may name them.
    let mut late_prefixes = config.late_tool_prefixes.clone();
    late_prefixes.push("mcp__".into());
    let removes = policy.clone();
    let registry = Registry::build(
        tools,
        Naming {
            selection: &config.selection,
            aliases: &settings.aliases,
            alias_files: &settings.alias_files,
            late_prefixes: &late_prefixes,
        },
        move |name| removes.removes_tool(name),
    )?;
    Ok((policy, registry, warnings))
}

/// What `toolrt explain` found.
#[derive(Debug)]
pub enum Explained {
    /// The input is usable: the decision for it.
    Decision {
        /// The canonical tool name.
        tool: String,
        /// The input after coercion and normalisation.
        input: crate::call::Input,
        /// The decision.
        decision: crate::permission::Decision,
        /// What the tool's own validation would say in a session that has done nothing yet,
        /// when it refuses: it depends on the session (read-before-edit, task ids), so it is
        /// made when the call runs and is no part of the decision.
        at_run_time: Option<String>,
    },
    /// The call would not reach the permission stage: its outcome and why.
    Rejected(crate::validate::Rejection),
}

/// Decides one call the way the pipeline would (the validate stage's input checks, then the
/// permission decision, no hooks), without running anything. The tool's own validation needs
/// a session's state, so it decides nothing here; what it would say in a fresh session is
/// reported beside the decision.
pub async fn explain(
    config: &Config,
    tool: &str,
    input: serde_json::Value,
) -> Result<Explained, StartError> {
    let cwd = std::fs::canonicalize(&config.cwd)
        .map_err(|e| StartError::Io(format!("--cwd {}: {e}", config.cwd.display())))?;
    // Only a folder given by name is known before a session starts.
    let output_dir = match &config.output_dir {
        OutputDir::At(dir) => std::fs::canonicalize(dir).ok(),
        _ => None,
    };
    // A session that has done nothing yet: its tools remember nothing.
    let tool_state = ToolState::new(
        config.settings.require_read_before_edit,
        std::env::temp_dir(),
    );
    let (policy, registry, warnings) =
        build_policy_and_registry(config, &cwd, output_dir.as_deref(), &tool_state, Vec::new())?;
    report_warnings(config.strict_settings, &warnings)?;
    if tool.starts_with("mcp__") {
        return explain_mcp(config, &cwd, &policy, tool, input);
    }
    let mut session = Session::new(cwd, std::env::temp_dir());
    session.guard = policy.clone();
    let call = crate::call::ToolCall::new("explain", tool, input);
    match crate::validate::check(&registry, &session, call) {
        Err(rejection) => Ok(Explained::Rejected(rejection)),
        Ok(prepared) => {
            let at_run_time = crate::validate::validate_tool(&prepared, &session)
                .await
                .err()
                .map(|r| r.content);
            let decision = policy.decide(&crate::permission::DecisionRequest {
                tool: prepared.tool_name(),
                access: prepared.entry.tool.access(),
                input: &prepared.input,
                mode: policy.starting_mode(),
                hook: None,
            });
            Ok(Explained::Decision {
                tool: prepared.tool_name().to_string(),
                input: prepared.input,
                decision,
                at_run_time,
            })
        }
    }
}

/// `explain` for an MCP tool. MCP servers are not started (explain runs nothing), so the tool
/// is known by its server's configuration, and its input is not checked against the server's
/// schema here; the permission decision does not depend on the input.
fn explain_mcp(
    config: &Config,
    cwd: &Path,
    policy: &Policy,
    tool: &str,
    input: serde_json::Value,
) -> Result<Explained, StartError> {
    use crate::call::Outcome;
    use crate::mcp::config::Approval;
    use crate::validate::Rejection;
    let unavailable = |content: String| {
        Ok(Explained::Rejected(Rejection {
            outcome: Outcome::Unavailable,
            content,
        }))
    };
    let plan = crate::mcp::config::plan(&config.settings, &config.mcp, cwd)?;
    let server = crate::mcp::names::server_of(tool).unwrap_or("");
    let planned = plan
        .servers
        .iter()
        .find(|p| crate::mcp::names::normalize(&p.config.name) == server);
    match planned.map(|p| p.approval) {
        None => {
            return unavailable(format!(
                "No such tool: {tool}. No MCP server named {server:?} is configured."
            ));
        }
        Some(Approval::Pending) => {
            return unavailable(format!(
                "No such tool: {tool}. MCP server {server:?} is in the project's .mcp.json and not approved, so it is not started."
            ));
        }
        Some(Approval::Rejected) => {
            return unavailable(format!(
                "No such tool: {tool}. MCP server {server:?} is disabled (disabledMcpjsonServers)."
            ));
        }
        Some(Approval::Approved) => {}
    }
    if let Selection::Only(names) = &config.selection
        && !names
            .iter()
            .any(|n| n == tool || *n == format!("mcp__{server}"))
    {
        return unavailable(format!(
            "No such tool: {tool}. It is not selected by --tools."
        ));
    }
    if policy.removes_tool(tool) {
        return unavailable(format!(
            "No such tool: {tool}. A deny rule removes it from this session."
        ));
    }
    let serde_json::Value::Object(input) = input else {
        return Ok(Explained::Rejected(Rejection {
            outcome: Outcome::SchemaError,
            content: "The input must be a JSON object.".into(),
        }));
    };
    let decision = policy.decide(&crate::permission::DecisionRequest {
        tool,
        access: crate::tool::Access::default(),
        input: &input,
        mode: policy.starting_mode(),
        hook: None,
    });
    Ok(Explained::Decision {
        tool: tool.to_string(),
        input,
        decision,
        at_run_time: Some(format!(
            "the input is checked against the input schema MCP server {server:?} gives when it starts; explain starts no server"
        )),
    })
}
/// Where MCP servers' status events go: an `mcp_server` event each. A server's newer status
/// replaces one the client has not read yet, so however often a server restarts or changes its
/// tools, it holds at most one unwritten event.
fn mcp_event_sink(events: Emitter) -> crate::mcp::EventSink {
    let latest: std::sync::Mutex<std::collections::HashMap<String, Arc<crate::emit::Latest>>> =
        Default::default();
    Arc::new(move |event: serde_json::Value| {
        if let serde_json::Value::Object(mut body) = event {
            body.remove("event");
            let server = body.get("server").and_then(|v| v.as_str()).unwrap_or("");
            let stream = latest
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(server.to_string())
                .or_default()
                .clone();
            events.send_latest(
                &stream,
                ServerMessage::event("mcp_server", serde_json::Value::Object(body)),
            );
        }
    })
}

/// The `limits` of the `hello` answer: what a client may send and what it gets back.
fn limits_for_hello(config: &Config, limits: &crate::settings::Limits) -> serde_json::Value {
    serde_json::json!({
        "max_line_bytes": crate::server::MAX_LINE_BYTES,
        "max_in_flight": config.max_in_flight,
        "max_queued": config.max_queued,
        "max_parked": config.max_parked,
        "max_parallel": config.max_parallel,
        "bash_chars": limits.bash_chars,
        "tool_chars": limits.tool_chars,
        "mcp_chars": limits.mcp_chars,
        "error_chars": limits.error_chars,
        "preview_chars": limits.preview_chars,
        "per_tool": limits.per_tool,
        "read_lines": crate::tools::read::DEFAULT_LINES,
        "read_chars": crate::budget::success_limit_for("Read", crate::tool::BudgetClass::Other, limits),
    })
}

/// A running runtime: submit client messages, read server messages.
///
/// Embedding toolrt: start a runtime with a tool of your own, submit a call, read its one
/// result from the outbox, shut down.
///
/// ```
/// use std::sync::Arc;
///
/// use async_trait::async_trait;
/// use serde_json::{Value, json};
/// use toolrt::call::Input;
/// use toolrt::protocol::{ClientMessage, ServerMessage};
/// use toolrt::supervisor::AskPolicy;
/// use toolrt::{Config, Outcome, Runtime, Tool, ToolCall, ToolContext, ToolOutput};
///
/// /// Answers with its `text` field.
/// struct Echo;
///
/// #[async_trait]
/// impl Tool for Echo {
///     fn name(&self) -> &str {
///         "Echo"
///     }
///     fn description(&self) -> &str {
///         "Answers with its text."
///     }
///     fn input_schema(&self) -> Value {
///         json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
///     }
///     async fn call(&self, input: Input, _ctx: ToolContext) -> ToolOutput {
///         ToolOutput::success(input["text"].as_str().unwrap_or_default())
///     }
/// }
///
/// # fn main() {
/// # let dir = tempfile::tempdir().unwrap();
/// # let cwd = dir.path().to_path_buf();
/// let run = async {
///     let mut config = Config::new(cwd).tool(Arc::new(Echo));
///     config.builtins = false;
///     config.output_dir = toolrt::runtime::OutputDir::Temporary;
///     // A tool that is not built in needs a rule to run without asking.
///     config.allowed_tools = vec!["Echo".into()];
///     config.ask_policy = AskPolicy::Deny;
///     let (runtime, mut outbox) = Runtime::start(config).await.expect("a valid configuration");
///
///     let call = ToolCall::new("call-1", "Echo", json!({"text": "hello"}));
///     runtime.submit(ClientMessage::ToolUse(call)).await;
///     let result = loop {
///         match outbox.recv().await {
///             Some(ServerMessage::ToolResult(result)) => break result,
///             Some(_) => continue, // events: hooks, progress, ...
///             None => panic!("the outbox closed before the result"),
///         }
///     };
///     assert_eq!(result.tool_use_id, "call-1");
///     assert_eq!(result.outcome, Outcome::Success);
///     assert_eq!(result.content, "hello");
///     runtime.shutdown().await;
/// };
/// tokio::runtime::Builder::new_current_thread()
///     .enable_all()
///     .build()
///     .unwrap()
///     .block_on(run);
/// # }
/// ```
pub struct Runtime {
    dispatcher: Dispatcher,
    /// Tools the client (or the library user) defines and runs.
    client_tools: Arc<ClientTools>,
    session: Arc<Session>,
    mcp: Arc<crate::mcp::McpServers>,
    /// Which tools exist; it changes with [`Runtime::set_tools`].
    registry: Arc<Registry>,
    /// The `limits` of the answer to `hello`.
    hello_limits: serde_json::Value,
    /// What the built-in tools remember (rewind, shutdown).
    tool_state: ToolState,
    _temp_output: Option<tempfile::TempDir>,
}

impl Runtime {
    /// Builds and starts a runtime. Messages for the client arrive in the returned outbox; it
    /// ends once the runtime is shut down and every message is out. Read it steadily: a call's
    /// admission place is given back only when its result has been taken from the outbox.
    pub async fn start(config: Config) -> Result<(Self, Outbox), StartError> {
        let cwd = std::fs::canonicalize(&config.cwd)
            .map_err(|e| StartError::Io(format!("--cwd {}: {e}", config.cwd.display())))?;
        if !cwd.is_dir() {
            return Err(StartError::Io(format!(
                "--cwd {}: not a directory",
                cwd.display()
            )));
        }
        let mut session = Session::new(cwd.clone(), PathBuf::new());
        let (output_dir, temp_output) = output_folder(&config.output_dir, &session.id, &cwd)?;
        session.output_dir = output_dir.clone();
        let settings = &config.settings;

        let tool_state = ToolState::new(
            settings.require_read_before_edit,
            output_dir.join("checkpoints"),
        );
        let (emitter, rx) = Emitter::channel();
        // Every MCP server answers or times out before the first call is read.
        let mcp_events = mcp_event_sink(emitter.clone());
        let started = crate::mcp::McpServers::start(
            settings,
            &config.mcp,
            &cwd,
            &settings.env_scrub,
            mcp_events,
        )
        .await?;
        let mcp = started.servers;
        let (policy, registry, mut warnings) = build_policy_and_registry(
            &config,
            &cwd,
            Some(&output_dir),
            &tool_state,
            started.tools,
        )?;
        warnings.extend(started.warnings);

        session.env_remove = crate::process::scrubbed_names(&settings.env_scrub);
        session.env = settings
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        session.guard = policy.clone();
        let mut limits = settings.limits.clone();
        if let Some(tokens) = crate::mcp::lookup_var(settings, "MAX_MCP_OUTPUT_TOKENS") {
            match tokens.trim().parse::<usize>() {
                // The reference counts four characters a token.
                Ok(n) if n > 0 => limits.mcp_chars = n.saturating_mul(4),
                _ => warnings.push(format!(
                    "MAX_MCP_OUTPUT_TOKENS={tokens:?} is not a positive number of tokens; ignored"
                )),
            }
        }
        let session = Arc::new(session);

        let mut hook_config = HookConfig::new();
        for (file, hooks) in settings.sections("hooks") {
            hook_config.add_settings_file(file, hooks, &crate::permission::check_rule)?;
        }
        // Plugin data lives under the home directory, so it outlives the session.
        let data_root = session.home.join(".toolrt").join("plugin-data");
        for dir in &config.plugin_dirs {
            let plugin = crate::hooks::plugin::load(dir, &data_root)?;
            for file in &plugin.hooks {
                hook_config.add_plugin_file(
                    &file.file,
                    &file.hooks,
                    &crate::permission::check_rule,
                    plugin.info.clone(),
                )?;
            }
        }
        for (event, matcher, timeout, hook) in &config.in_process_hooks {
            hook_config.register_fn(*event, matcher, *timeout, hook.clone())?;
        }
        warnings.extend(hook_config.warnings());
        report_warnings(config.strict_settings, &warnings)?;
        let hooks = if hook_config.is_empty() {
            Hooks::none()
        } else {
            let env = HookEnv {
                cwd: session.cwd.clone(),
                project_dir: session.cwd.clone(),
                // The client's id for hooks; toolrt's own id still names its output folder, so a
                // client-chosen id never becomes a path.
                session_id: config
                    .session_id
                    .clone()
                    .unwrap_or_else(|| session.id.clone()),
                transcript_path: config.transcript_path.clone(),
                env_scrub: settings.env_scrub.clone(),
                env: session.env.clone(),
                output_dir: session.output_dir.clone(),
            };
            let events = emitter.clone();
            let emit = Arc::new(move |event: serde_json::Value| {
                if let serde_json::Value::Object(mut body) = event {
                    body.remove("type");
                    events.send(ServerMessage::Event(crate::protocol::EventBody(body)));
                }
            });
            let runner = HookRunner::new(
                Arc::new(hook_config),
                env,
                Arc::new(RuleFilter(policy.clone())),
                emit,
            );
            Hooks::spawn(Arc::new(runner))
                .await
                .map_err(|_| StartError::Spawn("hooks"))?
        };
        let hello_limits = limits_for_hello(&config, &limits);
        let registry = Arc::new(registry);
        // Weak: the registry holds the servers' tools, which hold their server.
        let weak = Arc::downgrade(&registry);
        mcp.attach(Arc::new(move |group: &str, tools| {
            weak.upgrade()
                .map(|r| r.set_group(group, tools))
                .unwrap_or_default()
        }));
        if let Selection::Only(names) = &config.selection {
            let available = registry.available();
            for name in names.iter().filter(|n| n.starts_with("mcp__")) {
                if !available.iter().any(|a| {
                    config.selection.allows(a)
                        && (a == name
                            || crate::mcp::names::server_of(a)
                                == crate::mcp::names::server_of(name))
                }) {
                    tracing::warn!("--tools: {name:?} is no tool of a connected MCP server (yet)");
                }
            }
        }
        let (validator, _) = Validator::spawn(registry.clone(), session.clone())
            .await
            .map_err(|_| StartError::Spawn("validate"))?;
        let (permission, _) = Permission::spawn(policy.clone())
            .await
            .map_err(|_| StartError::Spawn("permission"))?;
        let (executor, _) = Executor::spawn()
            .await
            .map_err(|_| StartError::Spawn("execute"))?;
        let (budget, _) = Budget::spawn(limits, output_dir, temp_output.is_some())
            .await
            .map_err(|_| StartError::Spawn("budget"))?;
        let pipeline = Pipeline::new(
            Stages {
                validator,
                hooks,
                permission,
                executor,
                budget,
            },
            session.clone(),
            emitter,
            PipelineOptions {
                max_in_flight: config.max_in_flight,
                mode: policy.starting_mode(),
                ask_policy: config.ask_policy,
                clock: config.clock.clone(),
            },
        );
        let pipeline = Arc::new(pipeline);
        let exchange = Exchange::new(pipeline.emitter.clone(), pipeline.client_waits_counter());
        let client_tools = Arc::new(ClientTools::new(registry.clone(), Arc::new(exchange)));
        // Before any call is accepted, as the reference runs SessionStart before the first turn.
        pipeline
            .hooks
            .session_start(crate::supervisor::mode_name(pipeline.mode))
            .await;
        let dispatcher = Dispatcher::new(
            pipeline,
            Limits {
                capacity: config.max_in_flight + config.max_queued,
                max_parallel: config.max_parallel,
                max_parked: config.max_parked,
            },
        );
        Ok((
            Self {
                dispatcher,
                client_tools,
                session,
                mcp,
                registry,
                hello_limits,
                tool_state,
                _temp_output: temp_output,
            },
            rx,
        ))
    }

    /// Handles one client message. A call is accepted at once, and admitted when a place is
    /// free; this waits only while the parked queue is full. Answer permission requests from
    /// another task than the one submitting, or a full queue can wait on them forever.
    pub async fn submit(&self, msg: ClientMessage) {
        match msg {
            ClientMessage::Hello { client } => {
                tracing::debug!(client = client.as_deref().unwrap_or("-"), "hello");
                let hello = ServerMessage::Hello {
                    protocol: crate::protocol::PROTOCOL_VERSION,
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    tools: self.registry.available(),
                    limits: self.hello_limits.clone(),
                };
                // An answer to an input line: it counts toward the reader's backlog.
                self.dispatcher.pipeline().emitter.send_reply(hello);
            }
            ClientMessage::Rewind { to } => self.rewind(to).await,
            ClientMessage::RegisterTools { tools } => {
                let answer = self.client_tools.register(tools);
                self.report_tools_change(answer);
            }
            ClientMessage::UnregisterTools { names } => {
                let answer = self.client_tools.unregister(&names);
                self.report_tools_change(answer);
            }
            ClientMessage::ExecuteResult(result) => self.answer_execute(result),
            msg => self.dispatcher.submit(msg).await,
        }
    }

    /// Answers `register_tools` / `unregister_tools`: a `tools_changed` event, or an error line
    /// naming each refused tool and why.
    fn report_tools_change(&self, answer: Result<GroupChange, RegisterError>) {
        let message = match answer {
            Ok(change) => ServerMessage::event(
                "tools_changed",
                serde_json::json!({"added": change.added, "removed": change.removed}),
            ),
            Err(e) => ServerMessage::error(e.to_string(), None),
        };
        // An answer to an input line: it counts toward the reader's backlog.
        self.dispatcher.pipeline().emitter.send_reply(message);
    }

    /// Hands an `execute_result` to the call waiting for it; an answer no call waits for (an
    /// unknown `request_id`, a second answer, an answer after a cancel or a timeout) gets an
    /// error line and changes nothing. Never waits: it is read even while admission is full.
    pub fn answer_execute(&self, result: crate::protocol::ExecuteResult) {
        if let Err(e) = self.client_tools.exchange().answer(result) {
            self.dispatcher
                .pipeline()
                .emitter
                .send_reply(ServerMessage::error(e.to_string(), None));
        }
    }

    /// Registers tools the client runs, as `register_tools` does: all of them or none. Each call
    /// of one walks the whole pipeline; at execution the outbox receives a
    /// [`ServerMessage::Execute`], answered by submitting
    /// [`ClientMessage::ExecuteResult`] (or through [`Runtime::answer_execute`]).
    pub fn register_tools(
        &self,
        tools: Vec<crate::protocol::ClientToolSpec>,
    ) -> Result<GroupChange, RegisterError> {
        self.client_tools.register(tools)
    }

    /// Registers a client tool whose calls an async function of yours runs, in this process.
    /// The call walks the whole pipeline (coercion, schema, hooks, the permission decision —
    /// rules name it like any tool, and with none it asks — PostToolUse hooks, the output
    /// budget); `run` gets the input as approved. toolrt owns cancellation and the time limit
    /// (`timeout_ms`, else [`crate::client_tools::DEFAULT_TIMEOUT`]): it drops the future and
    /// answers `cancelled` or `timed_out`. The same names are refused as for `register_tools`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::json;
    /// use toolrt::protocol::{ClientMessage, ClientToolSpec, ServerMessage};
    /// use toolrt::supervisor::AskPolicy;
    /// use toolrt::{Config, Outcome, Runtime, ToolCall, ToolOutput};
    ///
    /// # fn main() {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let run = async {
    ///     let mut config = Config::new(dir.path().to_path_buf());
    ///     config.output_dir = toolrt::runtime::OutputDir::Temporary;
    ///     // A client tool asks unless a rule allows it.
    ///     config.allowed_tools = vec!["Shout".into()];
    ///     config.ask_policy = AskPolicy::Deny;
    ///     let (runtime, mut outbox) = Runtime::start(config).await.expect("a valid configuration");
    ///     let schema = json!({
    ///         "type": "object",
    ///         "properties": {"text": {"type": "string"}},
    ///         "required": ["text"],
    ///     });
    ///     runtime
    ///         .register_tool_fn(ClientToolSpec::new("Shout", schema), |input, _ctx| async move {
    ///             let text = input["text"].as_str().unwrap_or_default();
    ///             ToolOutput::success(text.to_uppercase())
    ///         })
    ///         .expect("the name is free");
    ///
    ///     let call = ToolCall::new("c1", "Shout", json!({"text": "hello"}));
    ///     runtime.submit(ClientMessage::ToolUse(call)).await;
    ///     let result = loop {
    ///         match outbox.recv().await {
    ///             Some(ServerMessage::ToolResult(result)) => break result,
    ///             Some(_) => continue,
    ///             None => panic!("the outbox closed before the result"),
    ///         }
    ///     };
    ///     assert_eq!((result.outcome, result.content.as_str()), (Outcome::Success, "HELLO"));
    ///     runtime.shutdown().await;
    /// };
    /// tokio::runtime::Builder::new_current_thread()
    ///     .enable_all()
    ///     .build()
    ///     .unwrap()
    ///     .block_on(run);
    /// # }
    /// ```
    pub fn register_tool_fn<F, Fut>(
        &self,
        spec: crate::protocol::ClientToolSpec,
        run: F,
    ) -> Result<GroupChange, RegisterError>
    where
        F: Fn(crate::call::Input, crate::tool::ToolContext) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = crate::tool::ToolOutput> + Send + 'static,
    {
        let run: crate::client_tools::ToolFn =
            Arc::new(move |input, ctx| Box::pin(run(input, ctx)));
        self.client_tools.register_fn(spec, run)
    }

    /// Removes client tools (registered either way): all of them or none. Calls in flight
    /// finish with the tool they resolved; later calls are `unavailable`.
    pub fn unregister_tools(&self, names: &[String]) -> Result<GroupChange, RegisterError> {
        self.client_tools.unregister(names)
    }

    /// Restores the files changed by call `to` and every later call (file I/O on the blocking
    /// pool), then emits `rewound`, or an error line naming what went wrong.
    async fn rewind(&self, to: String) {
        let state = self.tool_state.clone();
        let target = to.clone();
        let outcome = tokio::task::spawn_blocking(move || state.rewind(&target)).await;
        let message = match outcome {
            Ok(Ok(files)) => ServerMessage::event(
                "rewound",
                serde_json::json!({"to": to, "files": crate::protocol::paths_value(&files)}),
            ),
            Ok(Err(e)) => ServerMessage::error(format!("rewind to {to:?}: {e}"), None),
            Err(_) => ServerMessage::error(
                format!("rewind to {to:?}: internal error while restoring files"),
                None,
            ),
        };
        // An answer to an input line: it counts toward the reader's backlog.
        self.dispatcher.pipeline().emitter.send_reply(message);
    }

    /// Adds, replaces or removes tools while the runtime serves: the tools of `group` become
    /// `tools` (an empty list removes the group). `--tools` selection, aliases and bare-name
    /// deny rules apply to them as to the tools known at start-up; a tool whose name is taken
    /// (by a built-in, another group or an alias) or whose schema does not compile is left out
    /// and reported in [`GroupChange::skipped`]. Calls already past name resolution keep the
    /// tool they resolved and finish with it; calls resolved after a removal are answered
    /// `unavailable`.
    pub fn set_tools(&self, group: &str, tools: Vec<Arc<dyn Tool>>) -> GroupChange {
        let change = self.registry.set_group(group, tools);
        tracing::debug!(group, added = ?change.added, removed = ?change.removed, skipped = ?change.skipped, "tools changed");
        change
    }

    /// The names of the tools that exist now, sorted.
    pub fn tools(&self) -> Vec<String> {
        self.registry.available()
    }

    /// The dispatcher (cancellation, idleness).
    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }

    /// The session.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Every configured MCP server's last reported status (the `mcp_server` events' content).
    pub fn mcp_servers(&self) -> Vec<crate::mcp::ServerStatus> {
        self.mcp.statuses()
    }

    /// What the built-in tools remember (rewind, background tasks).
    pub fn tool_state(&self) -> &ToolState {
        &self.tool_state
    }

    /// The client can no longer answer: waiting and future permission asks are denied, and
    /// calls waiting for an `execute_result` (or starting one later) end `cancelled`, each with
    /// an `execute_cancel`.
    pub fn close_asks(&self) {
        self.dispatcher.pipeline().close_asks();
        self.client_tools.exchange().close();
    }

    /// Finishes everything in flight, runs SessionEnd hooks, gives async hooks still running
    /// a few seconds, stops the stages and closes the message stream.
    pub async fn shutdown(self) {
        self.dispatcher.drain().await;
        let pipeline = self.dispatcher.pipeline();
        pipeline
            .hooks
            .session_end(
                crate::supervisor::mode_name(pipeline.mode),
                ASYNC_HOOK_GRACE,
            )
            .await;
        // After every call has its result: no MCP call is in flight any more.
        self.mcp.shutdown().await;
        pipeline.stop();
        // Background tasks end with the session.
        self.tool_state.shutdown();
    }
}
