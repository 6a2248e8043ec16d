//! The parts `Runtime::start` is assembled from, the policy and registry shared with
//! `explain`.

use std::path::Path;
use std::sync::Arc;

use super::{Config, StartError};
use crate::emit::Emitter;
use crate::permission::{Policy, PolicyBuilder};
use crate::protocol::ServerMessage;
use crate::registry::{Naming, Registry};
use crate::tool::Tool;
use crate::tools::ToolState;

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

/// Where MCP servers' status events go: an `mcp_server` event each. A server's newer status
/// replaces one the client has not read yet, so however often a server restarts or changes its
/// tools, it holds at most one unwritten event.
pub(super) fn mcp_event_sink(events: Emitter) -> crate::mcp::EventSink {
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
pub(super) fn limits_for_hello(config: &Config, limits: &crate::settings::Limits) -> serde_json::Value {
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
