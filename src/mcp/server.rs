//! One MCP server, supervised: connecting (stdio or streamable HTTP, through rmcp), listing its
//! tools, calling them with a timeout, progress and cancellation, noticing its death, restarting
//! it with backoff on the next call, and shutting it down.

mod call;
mod connection;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::service::{Peer, RoleClient};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::config::Launch;
use crate::registry::GroupChange;
use connection::{Connection, list_tools};

/// Where `mcp_server` events go (the client's `event` lines, or a library user's function).
pub(crate) type EventSink = Arc<dyn Fn(Value) + Send + Sync>;

/// Where a server's tools go: replaces the registry group named by the first argument with
/// the tools, and says what changed.
pub(crate) type ToolsSink =
    Arc<dyn Fn(&str, Vec<Arc<dyn crate::tool::Tool>>) -> GroupChange + Send + Sync>;

/// The longest message a stdio server may write on one line (its stdout fails past it).
pub(crate) const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// Consecutive failed restarts after which toolrt stops restarting a server for the session.
pub(crate) const MAX_RESTART_FAILURES: u32 = 5;

/// How long a server may take to exit after its stdin closes at shutdown, then after SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
const TERM_GRACE: Duration = Duration::from_secs(1);

/// How a server stands, as `mcp_server` events report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Initialized; its tools are registered.
    Connected,
    /// Could not start, or died; its tools are absent (or fail until it is restarted).
    Failed,
    /// A project server nobody approved: not started.
    NeedsApproval,
    /// A project server listed in `disabledMcpjsonServers`: not started.
    Disabled,
}

impl Status {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Connected => "connected",
            Status::Failed => "failed",
            Status::NeedsApproval => "needs-approval",
            Status::Disabled => "disabled",
        }
    }
}

/// What toolrt last reported about a server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    /// The server's configured name.
    pub server: String,
    /// Its status.
    pub status: Status,
    /// How many of its tools are registered (when connected).
    pub tools: Option<usize>,
    /// Why it is not connected, in words.
    pub reason: Option<String>,
    /// The last lines of its stderr, when it failed.
    pub stderr: Option<String>,
}

impl ServerStatus {
    /// The `mcp_server` event's fields.
    pub fn event(&self) -> Value {
        let mut v =
            json!({"event": "mcp_server", "server": self.server, "status": self.status.as_str()});
        if let Some(n) = self.tools {
            v["tools"] = n.into();
        }
        if let Some(r) = &self.reason {
            v["reason"] = r.clone().into();
        }
        if let Some(s) = &self.stderr {
            v["stderr"] = s.clone().into();
        }
        v
    }
}

/// A tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RemoteTool {
    /// Its name on the server.
    pub name: String,
    /// Its description (may be empty).
    pub description: String,
    /// Its input schema.
    pub input_schema: Value,
    /// Its annotations' hints, as the server gives them.
    pub hints: crate::tool::Hints,
}

/// Timeouts of one server.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    /// Connecting: initialize and the first tools/list (`MCP_TIMEOUT`).
    pub startup: Duration,
    /// One tool call (`timeout` of the server, else `MCP_TOOL_TIMEOUT`).
    pub call: Duration,
}

/// Why a connection attempt failed.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    /// In words.
    pub reason: String,
    /// The last lines of the server's stderr.
    pub stderr: Option<String>,
}

#[derive(Debug, Default)]
struct Restarts {
    /// Failed attempts in a row.
    failures: u32,
    /// No attempt before this.
    not_before: Option<Instant>,
    /// Successful restarts so far.
    restarts: u64,
}

/// A supervised MCP server.
pub(crate) struct McpServer {
    name: String,
    launch: Launch,
    cwd: PathBuf,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    timeouts: Timeouts,
    events: EventSink,
    current: Mutex<Option<Arc<Connection>>>,
    restarts: tokio::sync::Mutex<Restarts>,
    closing: AtomicBool,
    status: Mutex<ServerStatus>,
    /// Bumped when the server says its tool list changed (any connection).
    tools_changed: watch::Sender<u64>,
    /// Connections made so far (the first is 1).
    generation: AtomicU64,
    /// Where its tools go, once the registry exists.
    sink: std::sync::OnceLock<ToolsSink>,
    /// The tools listed at start-up, until they are published.
    first_tools: Mutex<Option<Vec<RemoteTool>>>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .finish()
    }
}

impl McpServer {
    /// A server not yet connected.
    pub(crate) fn new(
        launch: Launch,
        cwd: PathBuf,
        env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
        timeouts: Timeouts,
        events: EventSink,
    ) -> Arc<Self> {
        let name = launch.config.name.clone();
        Arc::new(Self {
            status: Mutex::new(ServerStatus {
                server: name.clone(),
                status: Status::Failed,
                tools: None,
                reason: Some("not started yet".into()),
                stderr: None,
            }),
            name,
            launch,
            cwd,
            env,
            timeouts,
            events,
            current: Mutex::new(None),
            restarts: tokio::sync::Mutex::new(Restarts::default()),
            closing: AtomicBool::new(false),
            tools_changed: watch::channel(0).0,
            generation: AtomicU64::new(0),
            sink: std::sync::OnceLock::new(),
            first_tools: Mutex::new(None),
        })
    }

    /// The configured name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Whether it ever connected (a server that failed at start-up has no tools, and nothing
    /// restarts it).
    pub(crate) fn ever_connected(&self) -> bool {
        self.generation.load(Ordering::Relaxed) > 0
    }

    /// The per-call timeout.
    pub(crate) fn call_timeout(&self) -> Duration {
        self.timeouts.call
    }

    /// The last status reported.
    pub(crate) fn status(&self) -> ServerStatus {
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn report(&self, status: ServerStatus) {
        (self.events)(status.event());
        *self.status.lock().unwrap_or_else(|e| e.into_inner()) = status;
    }

    fn current(&self) -> Option<Arc<Connection>> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Reports the server connected with `tools` tools registered.
    pub(crate) fn report_connected(&self, tools: usize) {
        self.report(ServerStatus {
            server: self.name.clone(),
            status: Status::Connected,
            tools: Some(tools),
            reason: None,
            stderr: None,
        });
    }

    /// The first connection, at start-up: its tools (the caller reports it connected once it
    /// knows how many it registers), or why it failed (reported here).
    pub(crate) async fn start(self: &Arc<Self>) -> Result<Vec<RemoteTool>, Failure> {
        let outcome = self.connect().await;
        match &outcome {
            Ok((conn, tools)) => {
                *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(conn.clone());
                *self.first_tools.lock().unwrap_or_else(|e| e.into_inner()) = Some(tools.clone());
            }
            Err(failure) => self.report(ServerStatus {
                server: self.name.clone(),
                status: Status::Failed,
                tools: None,
                reason: Some(failure.reason.clone()),
                stderr: failure.stderr.clone(),
            }),
        }
        outcome.map(|(_, tools)| tools)
    }

    /// The registry group of this server's tools.
    pub(crate) fn group(&self) -> String {
        format!("mcp:{}", self.name)
    }

    /// Publishes `tools` as this server's registry group (nothing before [`McpServer::attach`]).
    fn publish(self: &Arc<Self>, tools: Vec<RemoteTool>) -> Option<GroupChange> {
        let sink = self.sink.get()?;
        let tools: Vec<Arc<dyn crate::tool::Tool>> = tools
            .into_iter()
            .map(|t| {
                Arc::new(super::tool::McpTool::new(self.clone(), t)) as Arc<dyn crate::tool::Tool>
            })
            .collect();
        let change = sink(&self.group(), tools);
        for skipped in &change.skipped {
            tracing::warn!(server = %self.name, "MCP tool left out: {skipped}");
        }
        Some(change)
    }

    /// Connects the server to the registry: its start-up tools join it (reported in an
    /// `mcp_server` event), and from now on a `notifications/tools/list_changed` or a restart
    /// replaces them.
    pub(crate) fn attach(self: &Arc<Self>, sink: ToolsSink) {
        if self.sink.set(sink).is_err() {
            return;
        }
        let Some(tools) = self
            .first_tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        let available = self.publish(tools).map_or(0, |c| c.available);
        self.report_connected(available);
        let mut changed = self.tools_changed.subscribe();
        let server = Arc::downgrade(self);
        tokio::spawn(async move {
            while changed.changed().await.is_ok() {
                let Some(server) = server.upgrade() else {
                    return;
                };
                server.refresh().await;
            }
        });
    }

    /// Lists the tools again after `notifications/tools/list_changed` and replaces them.
    async fn refresh(self: &Arc<Self>) {
        match self.list_tools().await {
            Ok(tools) => {
                let Some(change) = self.publish(tools) else {
                    return;
                };
                if change.added.is_empty() && change.removed.is_empty() {
                    return;
                }
                let mut reason = String::from("its tool list changed");
                if !change.added.is_empty() {
                    reason.push_str(&format!("; added {}", change.added.join(", ")));
                }
                if !change.removed.is_empty() {
                    reason.push_str(&format!("; removed {}", change.removed.join(", ")));
                }
                self.report(ServerStatus {
                    server: self.name.clone(),
                    status: Status::Connected,
                    tools: Some(change.available),
                    reason: Some(reason),
                    stderr: None,
                });
            }
            Err(e) => {
                tracing::warn!(server = %self.name, "tools/list after list_changed failed: {e}")
            }
        }
    }

    /// Lists the server's tools again on its live connection (after list_changed).
    pub(crate) async fn list_tools(&self) -> Result<Vec<RemoteTool>, String> {
        let conn = self
            .current()
            .filter(|c| c.alive())
            .ok_or_else(|| format!("MCP server {:?} is not connected", self.name))?;
        list_tools(&conn.peer).await.map_err(|e| e.to_string())
    }

    /// The live connection, restarting the server if it died (with backoff between failed
    /// attempts, and none after [`MAX_RESTART_FAILURES`] in a row).
    async fn connection(
        self: &Arc<Self>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Arc<Connection>, String> {
        if let Some(conn) = self.current().filter(|c| c.alive()) {
            return Ok(conn);
        }
        let mut restarts = self.restarts.lock().await;
        if let Some(conn) = self.current().filter(|c| c.alive()) {
            return Ok(conn);
        }
        if self.closing.load(Ordering::Relaxed) {
            return Err(format!("MCP server {:?} is shutting down", self.name));
        }
        if restarts.failures >= MAX_RESTART_FAILURES {
            return Err(format!(
                "MCP server {:?} failed to restart {} times in a row; toolrt does not restart it again in this session",
                self.name, restarts.failures
            ));
        }
        if let Some(at) = restarts.not_before {
            tokio::select! {
                _ = tokio::time::sleep_until(at.into()) => {}
                _ = cancel.cancelled() => return Err("cancelled while waiting to restart the MCP server".into()),
            }
        }
        // The old connection's process (if any) is gone or going: make sure of it.
        if let Some(old) = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            && let Some(p) = &old.process
        {
            p.kill();
        }
        match self.connect().await {
            Ok((conn, tools)) => {
                restarts.failures = 0;
                restarts.not_before = None;
                restarts.restarts += 1;
                *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(conn.clone());
                // The restarted server may offer other tools than before.
                let available = self.publish(tools).map_or(0, |c| c.available);
                self.report(ServerStatus {
                    server: self.name.clone(),
                    status: Status::Connected,
                    tools: Some(available),
                    reason: Some(format!("restarted (restart {})", restarts.restarts)),
                    stderr: None,
                });
                Ok(conn)
            }
            Err(failure) => {
                restarts.failures += 1;
                let backoff = Duration::from_millis(500)
                    .saturating_mul(1 << (restarts.failures - 1).min(6))
                    .min(Duration::from_secs(30));
                restarts.not_before = Some(Instant::now() + backoff);
                let mut reason = format!(
                    "restart attempt {} of {} failed: {}",
                    restarts.failures, MAX_RESTART_FAILURES, failure.reason
                );
                if restarts.failures < MAX_RESTART_FAILURES {
                    reason.push_str(&format!(
                        "; next attempt on a call after {} ms",
                        backoff.as_millis()
                    ));
                }
                self.report(ServerStatus {
                    server: self.name.clone(),
                    status: Status::Failed,
                    tools: None,
                    reason: Some(reason.clone()),
                    stderr: failure.stderr,
                });
                Err(format!("MCP server {:?}: {reason}", self.name))
            }
        }
    }

    /// A live peer for other requests (resources), restarting the server if needed.
    pub(crate) async fn peer(
        self: &Arc<Self>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Peer<RoleClient>, String> {
        self.connection(cancel).await.map(|c| c.peer.clone())
    }

    /// Ends the server: close the session (a stdio server's stdin reaches end of file), wait
    /// a grace period, then SIGTERM and SIGKILL to its process group.
    pub(crate) async fn shutdown(&self) {
        self.closing.store(true, Ordering::Relaxed);
        let _guard = self.restarts.lock().await;
        let Some(conn) = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        if let Some(mut client) = conn.client.lock().await.take() {
            let _ = client.close_with_timeout(SHUTDOWN_GRACE).await;
        }
        if let Some(p) = &conn.process {
            if p.wait_exit(SHUTDOWN_GRACE).await.is_none() {
                tracing::debug!(server = %self.name, "MCP server ignored end of file; SIGTERM");
                p.signal(nix::sys::signal::Signal::SIGTERM);
                p.wait_exit(TERM_GRACE).await;
            }
            p.kill();
        }
    }
}
