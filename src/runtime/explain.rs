//! `toolrt explain`: one call decided the way the pipeline would, without running it.

use std::path::Path;

use super::assemble::{build_policy_and_registry, report_warnings, scope_table};
use super::{Config, OutputDir, StartError};
use crate::call::Outcome;
use crate::permission::Policy;
use crate::registry::Selection;
use crate::session::Session;
use crate::tools::ToolState;
use crate::validate::Rejection;

/// What `toolrt explain` found.
#[derive(Debug)]
// One value per `explain` run: boxing the decision would buy nothing.
#[allow(clippy::large_enum_variant)]
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
    explain_as(config, &[], tool, input).await
}

/// [`explain`] for a call made in an agent scope: `agent_types` are the types of the agents
/// from the top-level one down to the caller (`toolrt explain --agent-type lead --agent-type
/// tester`), each started under the one before as `agent_start` would. The decision names the
/// level of the chain that decided.
pub async fn explain_as(
    config: &Config,
    agent_types: &[String],
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
    let agent_tool = crate::scope::agent_tool::AgentTool::new();
    let home = crate::paths::home_dir();
    let sandbox = crate::sandbox::Sandbox::start(&config.settings, &cwd, &home).await?;
    let sandbox_handle = sandbox
        .sandbox
        .clone()
        .map(|s| s as std::sync::Arc<dyn crate::session::ShellSandbox>);
    let (policy, registry, mut warnings) = build_policy_and_registry(
        config,
        &cwd,
        output_dir.as_deref(),
        &tool_state,
        &agent_tool,
        Vec::new(),
        sandbox_handle.clone(),
    )?;
    warnings.extend(sandbox.warnings);
    let scope = if agent_types.is_empty() {
        None
    } else {
        // The same output folder as the session's rules above: a stand-in (the temporary
        // directory) would let an agent type's own rules read every path under it without a
        // rule, as `serve` never does. An agent type's node does not change how its calls are
        // decided.
        let table = scope_table(
            &config.settings,
            &cwd,
            output_dir.as_deref(),
            &policy,
            &mut warnings,
        )?
        .with_nodes(true);
        Some(crate::scope::control::explain_chain(&table, agent_types))
    };
    report_warnings(config.strict_settings, &warnings)?;
    let refused = |content: String| {
        Ok(Explained::Rejected(Rejection {
            outcome: Outcome::Denied,
            content,
        }))
    };
    let scope = match scope {
        None => None,
        Some(Err(why)) => return refused(why),
        Some(Ok(scope)) => Some(scope),
    };
    if tool.starts_with("mcp__") {
        return explain_mcp(config, &cwd, &policy, scope.as_deref(), tool, input);
    }
    let mut session = Session::new(cwd, std::env::temp_dir());
    session.guard = policy.clone();
    session.sandbox = sandbox_handle;
    let call = crate::call::ToolCall::new("explain", tool, input);
    let prepared = match crate::validate::check(&registry, &session, call) {
        Err(rejection) => return Ok(Explained::Rejected(rejection)),
        Ok(prepared) => prepared,
    };
    let at_run_time = crate::validate::validate_tool(&prepared, &session)
        .await
        .err()
        .map(|r| r.content);
    let (name, access) = (prepared.tool_name(), prepared.entry.tool.access());
    let decision = match &scope {
        Some(scope) if !scope.may_use(name) => {
            return Ok(Explained::Rejected(Rejection {
                outcome: Outcome::Unavailable,
                content: scope.unavailable(name),
            }));
        }
        Some(scope) => scope.chain.decide(name, access, &prepared.input, None),
        None => policy.decide(&crate::permission::DecisionRequest {
            tool: name,
            access,
            input: &prepared.input,
            mode: policy.starting_mode(),
            hook: None,
        }),
    };
    Ok(Explained::Decision {
        tool: prepared.tool_name().to_string(),
        input: prepared.input,
        decision,
        at_run_time,
    })
}

/// `explain` for an MCP tool, in `scope` when one is given. MCP servers are not started
/// (explain runs nothing), so the tool is known by its server's configuration, and its input is
/// not checked against the server's schema here; the permission decision does not depend on the
/// input. A scope's tools name MCP tools by name (`mcp__server` or the tool's own), so whether
/// the scope has the tool needs no server either.
fn explain_mcp(
    config: &Config,
    cwd: &Path,
    policy: &Policy,
    scope: Option<&crate::scope::Scope>,
    tool: &str,
    input: serde_json::Value,
) -> Result<Explained, StartError> {
    use crate::mcp::config::Approval;
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
    let access = crate::tool::Access::default();
    let decision = match scope {
        Some(scope) if !scope.may_use(tool) => return unavailable(scope.unavailable(tool)),
        Some(scope) => scope.chain.decide(tool, access, &input, None),
        None => policy.decide(&crate::permission::DecisionRequest {
            tool,
            access,
            input: &input,
            mode: policy.starting_mode(),
            hook: None,
        }),
    };
    Ok(Explained::Decision {
        tool: tool.to_string(),
        input,
        decision,
        at_run_time: Some(format!(
            "the input is checked against the input schema MCP server {server:?} gives when it starts; explain starts no server"
        )),
    })
}
