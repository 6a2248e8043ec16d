//! The steps `Runtime::start` is assembled from, in the order it takes them; the policy and
//! registry are shared with `explain`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Config, StartError};
use crate::budget::Budget;
use crate::emit::Emitter;
use crate::execute::Executor;
use crate::hooks::{HookConfig, HookEnv, HookRunner, Hooks};
use crate::permission::{Permission, Policy, PolicyBuilder, RuleFilter};
use crate::protocol::ServerMessage;
use crate::registry::{Naming, Registry, Selection};
use crate::session::Session;
use crate::settings::{Limits, Settings};
use crate::supervisor::Stages;
use crate::tool::Tool;
use crate::tools::ToolState;
use crate::validate::Validator;

/// Start-up warnings (settings keys toolrt does not know or ignores): each printed once on
/// stderr, or, with `strict`, refused all together.
pub(super) fn report_warnings(strict: bool, warnings: &[String]) -> Result<(), StartError> {
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
pub(super) fn build_policy_and_registry(
    config: &Config,
    cwd: &Path,
    output_dir: Option<&Path>,
    tool_state: &ToolState,
    agent_tool: &Arc<crate::scope::agent_tool::AgentTool>,
    mcp_tools: Vec<Arc<dyn Tool>>,
    sandbox: Option<Arc<dyn crate::session::ShellSandbox>>,
) -> Result<(Arc<Policy>, Registry, Vec<String>), StartError> {
    let settings = &config.settings;
    let mut policy = PolicyBuilder::new(cwd.to_path_buf(), crate::paths::home_dir());
    if let Some(sandbox) = sandbox {
        policy.set_sandbox(sandbox);
    }
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
    // The Agent tool is built in, but needs the runtime (scopes, the client): it comes in with
    // the tools made at start-up, connected once the runtime exists.
    let mut aliases = settings.aliases.clone();
    if config.builtins {
        tools.push(agent_tool.clone());
        // `Task` is the reference CLI's former name of `Agent`.
        aliases
            .entry("Task".into())
            .or_insert_with(|| "Agent".into());
    }
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
            aliases: &aliases,
            alias_files: &settings.alias_files,
            late_prefixes: &late_prefixes,
        },
        move |name| removes.removes_tool(name),
    )?;
    Ok((policy, registry, warnings))
}

/// Where MCP servers' status events go: an `mcp_server` event each. A server's newer status
/// replaces one the client has not read yet, so however often a server restarts or changes its
/// tools, it holds at most one unwritten event.
pub(super) fn mcp_event_sink(events: Emitter) -> crate::mcp::EventSink {
    let send = latest_event_sender(events, "mcp_server");
    Arc::new(move |event: serde_json::Value| {
        if let serde_json::Value::Object(mut body) = event {
            body.remove("event");
            let server = body.get("server").and_then(|v| v.as_str()).unwrap_or("");
            send(server.to_string(), body);
        }
    })
}

/// Where worker nodes' `node` events go, one unwritten event per node at most, as for MCP
/// servers.
pub(super) fn node_event_sink(events: Emitter) -> crate::cluster::NodeEvents {
    let send = latest_event_sender(events, "node");
    Arc::new(
        move |node: &str, status: crate::cluster::NodeStatus, sandbox| {
            let mut body = serde_json::Map::new();
            body.insert("node".into(), node.into());
            body.insert("status".into(), status.as_str().into());
            if let Some(sandbox) = sandbox {
                body.insert("sandbox".into(), sandbox);
            }
            send(node.to_string(), body);
        },
    )
}

/// Sends `event` events whose body is keyed by a name, through an `emit::Latest` per name.
fn latest_event_sender(
    events: Emitter,
    event: &'static str,
) -> impl Fn(String, serde_json::Map<String, serde_json::Value>) + Send + Sync {
    let latest: std::sync::Mutex<std::collections::HashMap<String, Arc<crate::emit::Latest>>> =
        Default::default();
    move |key, body| {
        let stream = latest
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_default()
            .clone();
        events.send_latest(
            &stream,
            ServerMessage::event(event, serde_json::Value::Object(body)),
        );
    }
}

/// The `limits` of the `hello` answer: what a client may send and what it gets back.
pub(super) fn limits_for_hello(config: &Config, limits: &Limits) -> serde_json::Value {
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

/// The agent types of the settings, compiled against the session's rules, in an empty table of
/// agent scopes. `output_dir` is the session's output folder, whose reads need no rule at an
/// agent type's level either: exactly the folder the session's own rules were given (None
/// when it is not known, as for `toolrt explain` without `--output-dir`), never a stand-in.
pub(super) fn scope_table(
    settings: &Settings,
    cwd: &Path,
    output_dir: Option<&Path>,
    policy: &Arc<Policy>,
    warnings: &mut Vec<String>,
) -> Result<crate::scope::ScopeTable, StartError> {
    let home = crate::paths::home_dir();
    let base = crate::scope::types::Base {
        cwd,
        home: &home,
        workspace: policy.workspace(),
        output_dir,
    };
    let (types, more) = crate::scope::AgentTypes::compile(settings, &base)?;
    warnings.extend(more);
    let session = crate::permission::Level {
        policy: policy.clone(),
        mode: policy.starting_mode(),
        label: Arc::from("the session's rules"),
    };
    Ok(crate::scope::ScopeTable::new(Arc::new(types), session))
}

/// What follows the scopes: the built-in tools' state (each scope's calls get their own
/// read-before-edit state and checkpoints from its start, dropped at its end; the background
/// tasks a scope started are killed at its end) and the
/// dispatcher's parked calls (an ended scope's calls see their tokens; its parked calls are
/// answered at once too, not when an admission place frees for them).
pub(super) struct ScopeFollowers {
    pub(super) files: crate::tools::ToolState,
    pub(super) parked: Arc<dyn Fn() + Send + Sync>,
}

impl crate::scope::ScopeListener for ScopeFollowers {
    fn started(&self, scope: &crate::scope::Scope) {
        let parent = scope
            .parent
            .as_ref()
            .map_or(crate::tool::StateKey::SESSION, |p| p.state_key());
        self.files.open_child_scope(scope.state_key(), parent);
    }
    fn ended(&self, scopes: &[Arc<crate::scope::Scope>]) {
        for scope in scopes {
            self.files.close_scope(scope.state_key());
        }
        (self.parked)();
    }
}

/// The working directory, canonical, which must be a directory.
pub(super) fn working_dir(config: &Config) -> Result<PathBuf, StartError> {
    let cwd = std::fs::canonicalize(&config.cwd)
        .map_err(|e| StartError::Io(format!("--cwd {}: {e}", config.cwd.display())))?;
    if !cwd.is_dir() {
        return Err(StartError::Io(format!(
            "--cwd {}: not a directory",
            cwd.display()
        )));
    }
    Ok(cwd)
}

/// The settings' output limits, with `MAX_MCP_OUTPUT_TOKENS` applied (a warning when it is not
/// a positive number).
pub(super) fn output_limits(settings: &Settings, warnings: &mut Vec<String>) -> Limits {
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
    limits
}

/// Every hook of the session: the settings files', the plugin directories', the library
/// user's in-process ones.
pub(super) fn hook_config(config: &Config, session: &Session) -> Result<HookConfig, StartError> {
    let mut hook_config = HookConfig::new();
    for (file, hooks) in config.settings.sections("hooks") {
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
    Ok(hook_config)
}

/// The hook stage: none at all without hooks, else a runner whose events go to the client.
pub(super) async fn spawn_hooks(
    hook_config: HookConfig,
    config: &Config,
    session: &Session,
    policy: &Arc<Policy>,
    emitter: &Emitter,
) -> Result<Hooks, StartError> {
    if hook_config.is_empty() {
        return Ok(Hooks::none());
    }
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
        env_scrub: config.settings.env_scrub.clone(),
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
        .map_err(|_| StartError::Spawn("hooks"))
}

/// Warns about each `--tools` name of an MCP tool that no connected server offers (its server
/// may still add it later).
pub(super) fn warn_unmatched_mcp_selection(selection: &Selection, registry: &Registry) {
    let Selection::Only(names) = selection else {
        return;
    };
    let available = registry.available();
    for name in names.iter().filter(|n| n.starts_with("mcp__")) {
        if !available.iter().any(|a| {
            selection.allows(a)
                && (a == name
                    || crate::mcp::names::server_of(a) == crate::mcp::names::server_of(name))
        }) {
            tracing::warn!("--tools: {name:?} is no tool of a connected MCP server (yet)");
        }
    }
}

/// The stage actors, with the hook stage already running.
pub(super) async fn spawn_stages(
    registry: &Arc<Registry>,
    session: &Arc<Session>,
    policy: &Arc<Policy>,
    hooks: Hooks,
    limits: Limits,
    output_dir: PathBuf,
    temporary_output: bool,
) -> Result<Stages, StartError> {
    let (validator, _) = Validator::spawn(registry.clone(), session.clone())
        .await
        .map_err(|_| StartError::Spawn("validate"))?;
    let (permission, _) = Permission::spawn(policy.clone())
        .await
        .map_err(|_| StartError::Spawn("permission"))?;
    let (executor, _) = Executor::spawn()
        .await
        .map_err(|_| StartError::Spawn("execute"))?;
    let (budget, _) = Budget::spawn(limits, output_dir, temporary_output)
        .await
        .map_err(|_| StartError::Spawn("budget"))?;
    Ok(Stages {
        validator,
        hooks,
        permission,
        executor,
        budget,
    })
}
