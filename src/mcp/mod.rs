//! MCP servers: their tools run through the whole pipeline like built-in tools
//! (docs/SEMANTICS.md, "MCP servers").
//!
//! - `config`: which servers, from settings, `--mcp-config` files and the project's `.mcp.json`
//!   (with its approvals); `${VAR}` expansion.
//! - `server`: one server supervised: connect (stdio or streamable HTTP, through the official
//!   SDK `rmcp`), call, progress, cancel, death, restart with backoff, shutdown.
//! - `process`: a stdio server's process (own group, watchdog, minimal environment, bounded
//!   stderr, capped stdout).
//! - `tool`: a server's tool as a [`crate::tool::Tool`]; `resources`: `ListMcpResourcesTool`
//!   and `ReadMcpResourceTool`.
//! - `content`: a result's content blocks as a tool output.
//! - `transport`: the stdio transport given to rmcp: rmcp's writer and codec, with a tool
//!   result decoded straight into its type.
//! - `names`: `mcp__<server>__<tool>`.
//!
//! [`McpServers::start`] starts every approved server in parallel, each within its start-up
//! timeout, and returns when all have answered or timed out: a server that fails is reported
//! (an `mcp_server` event) and its tools are absent; toolrt itself never fails for it.

pub(crate) mod config;
pub(crate) mod content;
pub(crate) mod names;
pub(crate) mod process;
pub(crate) mod resources;
pub(crate) mod server;
pub(crate) mod tool;
pub(crate) mod transport;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use config::{Approval, McpConfigError, McpOptions};
pub(crate) use server::{EventSink, ToolsSink};
use server::{McpServer, Timeouts};
pub use server::{ServerStatus, Status};

use crate::settings::Settings;
use crate::tool::Tool;

/// Start-up timeout without `MCP_TIMEOUT` (the reference's default).
pub(crate) const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Tool-call timeout without `MCP_TOOL_TIMEOUT` or a server `timeout` (the reference's
/// default: 100,000,000 ms, about 28 hours: a call is normally ended by its client).
pub(crate) const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_millis(100_000_000);

/// Looks a variable up as MCP configuration sees it: the settings' `env` first, then toolrt's
/// own environment.
pub(crate) fn lookup_var(settings: &Settings, name: &str) -> Option<String> {
    settings
        .env
        .get(name)
        .cloned()
        .or_else(|| std::env::var(name).ok())
}

/// A positive number of milliseconds from variable `name`; a value that is not one warns.
fn millis_var(settings: &Settings, name: &str, warnings: &mut Vec<String>) -> Option<Duration> {
    let text = lookup_var(settings, name)?;
    match text.trim().parse::<u64>() {
        Ok(ms) if ms > 0 => Some(Duration::from_millis(ms)),
        _ => {
            warnings.push(format!(
                "{name}={text:?} is not a positive number of milliseconds; ignored"
            ));
            None
        }
    }
}

/// The MCP servers of a runtime.
#[derive(Default)]
pub(crate) struct McpServers {
    servers: Vec<Arc<McpServer>>,
    /// Servers not started (awaiting approval, disabled), as reported.
    not_started: Vec<ServerStatus>,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers")
            .field("servers", &self.servers.len())
            .finish()
    }
}

/// What [`McpServers::start`] gives back.
pub(crate) struct Started {
    /// The servers.
    pub servers: Arc<McpServers>,
    /// The resource tools, when a server connected (the servers' own tools join the registry
    /// through [`McpServers::attach`]).
    pub tools: Vec<Arc<dyn Tool>>,
    /// Settings ignored, one line each.
    pub warnings: Vec<String>,
}

impl McpServers {
    /// Starts every approved server of the configuration in parallel and lists their tools.
    /// Errors are configuration errors (a wrong type, an unset `${VAR}`): toolrt does not
    /// start. A server that fails to start is reported through `events` and left out.
    pub(crate) async fn start(
        settings: &Settings,
        options: &McpOptions,
        cwd: &Path,
        env_scrub: &[String],
        events: EventSink,
    ) -> Result<Started, McpConfigError> {
        let plan = config::plan(settings, options, cwd)?;
        let mut warnings = plan.warnings;
        let startup =
            millis_var(settings, "MCP_TIMEOUT", &mut warnings).unwrap_or(DEFAULT_STARTUP_TIMEOUT);
        let call =
            millis_var(settings, "MCP_TOOL_TIMEOUT", &mut warnings).unwrap_or(DEFAULT_CALL_TIMEOUT);
        let settings_env: Vec<(String, String)> = settings
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let lookup = |name: &str| lookup_var(settings, name);
        let mut servers = Vec::new();
        let mut not_started = Vec::new();
        for planned in plan.servers {
            let status = match planned.approval {
                Approval::Approved => None,
                Approval::Pending => Some((
                    Status::NeedsApproval,
                    format!(
                        "a server of the project's .mcp.json; approve it with enabledMcpjsonServers or enableAllProjectMcpServers in user or local settings (file {})",
                        planned.config.file.display()
                    ),
                )),
                Approval::Rejected => Some((
                    Status::Disabled,
                    "listed in disabledMcpjsonServers".to_string(),
                )),
            };
            if let Some((status, reason)) = status {
                let s = ServerStatus {
                    server: planned.config.name.clone(),
                    status,
                    tools: None,
                    reason: Some(reason),
                    stderr: None,
                };
                events(s.event());
                not_started.push(s);
                continue;
            }
            let launch = config::expand(&planned.config, &lookup)?;
            let (dir, env) = match &launch.transport {
                config::Transport::Stdio { env, cwd: dir, .. } => (
                    dir.as_ref().map_or(cwd.to_path_buf(), |d| cwd.join(d)),
                    process::server_env(env_scrub, &settings_env, env),
                ),
                _ => (cwd.to_path_buf(), Vec::new()),
            };
            let timeouts = Timeouts {
                startup,
                call: planned.config.call_timeout.unwrap_or(call),
            };
            servers.push(McpServer::new(launch, dir, env, timeouts, events.clone()));
        }
        let listed = futures::future::join_all(servers.iter().map(|server| server.start())).await;
        let servers = Arc::new(McpServers {
            servers,
            not_started,
        });
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        if listed.iter().any(Result::is_ok) {
            tools.push(Arc::new(resources::ListMcpResources::new(servers.clone())));
            tools.push(Arc::new(resources::ReadMcpResource::new(servers.clone())));
        }
        Ok(Started {
            servers,
            tools,
            warnings,
        })
    }

    /// Publishes every connected server's tools through `sink` (the registry's groups), each
    /// reported connected with the number that joined, and keeps them current from then on.
    pub(crate) fn attach(&self, sink: ToolsSink) {
        for server in &self.servers {
            server.attach(sink.clone());
        }
    }

    /// Every configured server's last reported status, by name.
    pub(crate) fn statuses(&self) -> Vec<ServerStatus> {
        let mut all: Vec<ServerStatus> = self
            .servers
            .iter()
            .map(|s| s.status())
            .chain(self.not_started.iter().cloned())
            .collect();
        all.sort_by(|a, b| a.server.cmp(&b.server));
        all
    }

    /// The server named `name` (or whose name normalises alike), if it connected at start-up.
    pub(crate) fn server(&self, name: &str) -> Option<&Arc<McpServer>> {
        let up = || self.servers.iter().filter(|s| s.ever_connected());
        up().find(|s| s.name() == name)
            .or_else(|| up().find(|s| names::same_server(s.name(), name)))
    }

    /// The servers that connected at start-up (their tools are registered).
    pub(crate) fn servers(&self) -> Vec<&Arc<McpServer>> {
        self.servers.iter().filter(|s| s.ever_connected()).collect()
    }

    /// Shuts every server down, in parallel.
    pub(crate) async fn shutdown(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.shutdown())).await;
    }
}
