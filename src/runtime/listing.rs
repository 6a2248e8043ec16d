//! `toolrt tools` and `list_tools`: the effective registry as tool definitions for a model.

use std::sync::Arc;

use super::assemble::{build_policy_and_registry, report_warnings, working_dir};
use super::{Config, StartError};
use crate::formats::ToolDef;
use crate::registry::Registry;
use crate::tools::ToolState;

/// The definitions of every tool in `registry` now, sorted by name.
pub(crate) fn definitions(registry: &Registry) -> Vec<ToolDef> {
    registry
        .listing()
        .into_iter()
        .map(|(entry, aliases)| ToolDef {
            name: entry.name.to_string(),
            description: entry.tool.description().to_string(),
            input_schema: entry.schema.clone(),
            aliases,
        })
        .collect()
}

/// The tools a session started with `config` would have before its first line: the built-ins
/// after `--tools`, their aliases, a library user's tools, and the tools of every MCP server
/// that connects (the servers are started, listed and stopped; one that fails is reported on
/// stderr and its tools are absent). No hook runs and nothing is written.
pub async fn list_tools(config: &Config) -> Result<Vec<ToolDef>, StartError> {
    let cwd = working_dir(config)?;
    let settings = &config.settings;
    let events: crate::mcp::EventSink = Arc::new(|event: serde_json::Value| {
        if event.get("status").and_then(|s| s.as_str()) != Some("connected") {
            tracing::warn!("MCP server: {event}");
        }
    });
    let started =
        crate::mcp::McpServers::start(settings, &config.mcp, &cwd, &settings.env_scrub, events)
            .await?;
    // A session that has done nothing yet: its tools remember nothing, and write nowhere.
    let tool_state = ToolState::new(settings.require_read_before_edit, std::env::temp_dir());
    let agent_tool = crate::scope::agent_tool::AgentTool::new();
    let built = build_policy_and_registry(
        config,
        &cwd,
        None,
        &tool_state,
        &agent_tool,
        started.tools,
        None,
    );
    let listed = built.and_then(|(_, registry, mut warnings)| {
        warnings.extend(started.warnings);
        report_warnings(config.strict_settings, &warnings)?;
        let registry = Arc::new(registry);
        let weak = Arc::downgrade(&registry);
        started.servers.attach(Arc::new(move |group: &str, tools| {
            weak.upgrade()
                .map(|r| r.set_group(group, tools))
                .unwrap_or_default()
        }));
        Ok(definitions(&registry))
    });
    started.servers.shutdown().await;
    listed
}
