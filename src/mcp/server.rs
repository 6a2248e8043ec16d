//! One MCP server, supervised: connecting (stdio or streamable HTTP, through rmcp), listing its
//! tools, calling them with a timeout, progress and cancellation, noticing its death, restarting
//! it with backoff on the next call, and shutting it down.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, Implementation, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, ServerResult,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RoleClient, RunningService, ServiceError,
};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::config::{Launch, Transport};
use super::process::{self, ServerProcess};
use crate::call::Input;
use crate::deadlines::Deadlines;
use crate::registry::GroupChange;
use crate::tool::{ProgressSink, ToolContext, ToolOutput};

/// Where `mcp_server` events go (the client's `event` lines, or a library user's function).
pub type EventSink = Arc<dyn Fn(Value) + Send + Sync>;

/// Where a server's tools go: replaces the registry group named by the first argument with
/// the tools, and says what changed.
pub type ToolsSink =
    Arc<dyn Fn(&str, Vec<Arc<dyn crate::tool::Tool>>) -> GroupChange + Send + Sync>;

/// The longest message a stdio server may write on one line (its stdout fails past it).
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// Consecutive failed restarts after which toolrt stops restarting a server for the session.
pub const MAX_RESTART_FAILURES: u32 = 5;

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
pub struct RemoteTool {
    /// Its name on the server.
    pub name: String,
    /// Its description (may be empty).
    pub description: String,
    /// Its input schema.
    pub input_schema: Value,
    /// `annotations.readOnlyHint == true`.
    pub read_only: bool,
}

/// Timeouts of one server.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// Connecting: initialize and the first tools/list (`MCP_TIMEOUT`).
    pub startup: Duration,
    /// One tool call (`timeout` of the server, else `MCP_TOOL_TIMEOUT`).
    pub call: Duration,
}

/// The rmcp client handler: routes progress to the call it belongs to, and counts
/// `notifications/tools/list_changed`.
struct Handler {
    shared: Arc<Shared>,
}

/// What a connection's handler shares with its calls.
pub(crate) struct Shared {
    progress: Mutex<HashMap<ProgressToken, ProgressSink>>,
    /// Bumped by every `notifications/tools/list_changed`.
    tools_changed: watch::Sender<u64>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // The handshake era of the protocol: its successor has no `initialize` and sends
        // list_changed only on a subscription stream.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolrt", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        let sink = self
            .shared
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&params.progress_token)
            .cloned();
        // Progress for a call that already has its result is dropped: rmcp may deliver the
        // last notification after the response.
        if let Some(sink) = sink {
            let mut data = json!({"progress": params.progress});
            if let Some(total) = params.total {
                data["total"] = total.into();
            }
            if let Some(message) = params.message {
                data["message"] = message.into();
            }
            sink.send(data);
        }
    }

    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.shared.tools_changed.send_modify(|n| *n += 1);
    }
}

/// Removes a call's progress route when the call ends, however it ends.
struct Route<'a> {
    shared: &'a Shared,
    token: ProgressToken,
}

impl Drop for Route<'_> {
    fn drop(&mut self) {
        self.shared
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.token);
    }
}

/// One live session with the server.
struct Connection {
    client: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    peer: Peer<RoleClient>,
    shared: Arc<Shared>,
    /// The process, for a stdio server.
    process: Option<ServerProcess>,
    /// Set when a call saw the transport fail.
    broken: AtomicBool,
    /// Its calls' timeouts (kept by one task of their own, stopped with the connection).
    deadlines: Deadlines,
}

impl Connection {
    fn alive(&self) -> bool {
        !self.broken.load(Ordering::Relaxed)
            && !self.peer.is_transport_closed()
            && self.process.as_ref().is_none_or(|p| p.exited().is_none())
    }
}

/// Why a connection attempt failed.
#[derive(Debug, Clone)]
pub struct Failure {
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
pub struct McpServer {
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
    pub fn new(
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
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it ever connected (a server that failed at start-up has no tools, and nothing
    /// restarts it).
    pub fn ever_connected(&self) -> bool {
        self.generation.load(Ordering::Relaxed) > 0
    }

    /// The per-call timeout.
    pub fn call_timeout(&self) -> Duration {
        self.timeouts.call
    }

    /// The last status reported.
    pub fn status(&self) -> ServerStatus {
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Notified each time the server says its tool list changed.
    pub fn watch_tools_changed(&self) -> watch::Receiver<u64> {
        self.tools_changed.subscribe()
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
    pub fn report_connected(&self, tools: usize) {
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
    pub async fn start(self: &Arc<Self>) -> Result<Vec<RemoteTool>, Failure> {
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
    pub fn group(&self) -> String {
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
    pub fn attach(self: &Arc<Self>, sink: ToolsSink) {
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
    pub async fn list_tools(&self) -> Result<Vec<RemoteTool>, String> {
        let conn = self
            .current()
            .filter(|c| c.alive())
            .ok_or_else(|| format!("MCP server {:?} is not connected", self.name))?;
        list_tools(&conn.peer).await.map_err(|e| e.to_string())
    }

    /// Connects: spawn (stdio) or reach (HTTP), initialize, list tools, all within the
    /// start-up timeout.
    async fn connect(self: &Arc<Self>) -> Result<(Arc<Connection>, Vec<RemoteTool>), Failure> {
        let shared = Arc::new(Shared {
            progress: Mutex::new(HashMap::new()),
            tools_changed: watch::channel(0).0,
        });
        // Forward this connection's list_changed to the server's watchers.
        let mut changed = shared.tools_changed.subscribe();
        let forward = self.tools_changed.clone();
        tokio::spawn(async move {
            while changed.changed().await.is_ok() {
                forward.send_modify(|n| *n += 1);
            }
        });
        let handler = Handler {
            shared: shared.clone(),
        };
        let startup = self.timeouts.startup;
        let fail = |reason: String, process: Option<&ServerProcess>| Failure {
            reason,
            stderr: process.and_then(|p| p.stderr_lines(10)),
        };
        let (client, process) = match &self.launch.transport {
            Transport::Stdio { command, args, .. } => {
                let (process, pipes) =
                    process::spawn(command, args, &self.env, &self.cwd, MAX_MESSAGE_BYTES)
                        .await
                        .map_err(|e| fail(format!("cannot start {command:?}: {e}"), None))?;
                // Lines past MAX_MESSAGE_BYTES fail the pipe (`process::LineCap`).
                let transport = super::transport::Stdio::new(pipes.stdout, pipes.stdin);
                match tokio::time::timeout(startup, handler.serve(transport)).await {
                    Ok(Ok(client)) => (client, Some(process)),
                    Ok(Err(e)) => {
                        let exit = process.wait_exit(Duration::from_secs(1)).await;
                        process.kill();
                        let reason = match exit {
                            Some(exit) => format!("exited ({exit}) before it initialized"),
                            None => format!("initialize failed: {e}"),
                        };
                        return Err(fail(reason, Some(&process)));
                    }
                    Err(_) => {
                        process.kill();
                        return Err(fail(
                            format!(
                                "did not answer initialize within {} ms",
                                startup.as_millis()
                            ),
                            Some(&process),
                        ));
                    }
                }
            }
            Transport::Http { url, headers } => {
                let transport = http_transport(url, headers).map_err(|e| fail(e, None))?;
                match tokio::time::timeout(startup, handler.serve(transport)).await {
                    Ok(Ok(client)) => (client, None),
                    Ok(Err(e)) => {
                        let reason = match e.auth_challenge() {
                            Some(challenge) => format!(
                                "the server asks for authorization ({challenge}); check the headers"
                            ),
                            None => format!("initialize failed: {e}"),
                        };
                        return Err(fail(reason, None));
                    }
                    Err(_) => {
                        return Err(fail(
                            format!(
                                "did not answer initialize within {} ms",
                                startup.as_millis()
                            ),
                            None,
                        ));
                    }
                }
            }
            Transport::Unsupported { kind } => {
                return Err(fail(
                    format!("transport {kind:?} is not supported (use \"stdio\" or \"http\")"),
                    None,
                ));
            }
        };
        // toolrt keeps its own registry; rmcp's cache could serve a stale list after an error.
        client
            .peer()
            .set_response_cache_config(rmcp::service::ClientCacheConfig::disabled())
            .await;
        let peer = client.peer().clone();
        let listed = tokio::time::timeout(startup, list_tools(&peer)).await;
        let tools = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => {
                let failure = fail(format!("tools/list failed: {e}"), process.as_ref());
                if let Some(p) = &process {
                    p.kill();
                }
                return Err(failure);
            }
            Err(_) => {
                let failure = fail(
                    format!(
                        "did not answer tools/list within {} ms",
                        startup.as_millis()
                    ),
                    process.as_ref(),
                );
                if let Some(p) = &process {
                    p.kill();
                }
                return Err(failure);
            }
        };
        let conn = Arc::new(Connection {
            client: tokio::sync::Mutex::new(Some(client)),
            peer,
            shared,
            process,
            broken: AtomicBool::new(false),
            deadlines: Deadlines::default(),
        });
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        self.watch_exit(&conn, generation);
        Ok((conn, tools))
    }

    /// Reports the server's death when its process exits outside a shutdown.
    fn watch_exit(self: &Arc<Self>, conn: &Arc<Connection>, generation: u64) {
        let Some(process) = &conn.process else {
            return;
        };
        let mut exit = process.exit.clone();
        let server = Arc::downgrade(self);
        let conn = Arc::downgrade(conn);
        tokio::spawn(async move {
            if exit.wait_for(Option::is_some).await.is_err() {
                return;
            }
            let (Some(server), Some(conn)) = (server.upgrade(), conn.upgrade()) else {
                return;
            };
            if server.closing.load(Ordering::Relaxed)
                || server.generation.load(Ordering::Relaxed) != generation
            {
                return;
            }
            let process = conn.process.as_ref();
            let exit = process.and_then(ServerProcess::exited).unwrap_or_default();
            let mut reason = format!("exited ({exit}); it is restarted on the next call");
            if let Some(why) = process.and_then(|p| p.overflow.lock().ok()?.clone()) {
                reason = format!("{why}; {reason}");
            }
            server.report(ServerStatus {
                server: server.name.clone(),
                status: Status::Failed,
                tools: None,
                reason: Some(reason),
                stderr: process.and_then(|p| p.stderr_lines(10)),
            });
        });
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

    /// Calls `tool` with `args`: progress goes to the call's sink, the call's cancellation
    /// sends `notifications/cancelled`, and the result is mapped to an output.
    pub async fn call_tool(
        self: &Arc<Self>,
        tool: &str,
        args: Input,
        ctx: &ToolContext,
        timeout: Duration,
    ) -> ToolOutput {
        let conn = match self.connection(&ctx.cancel).await {
            Ok(conn) => conn,
            Err(e) if ctx.cancel.is_cancelled() => return ToolOutput::cancelled(e),
            Err(e) => return ToolOutput::failed(e),
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // The timeout is kept by the connection's sweeper, not by a timer of rmcp's per call.
        let deadline = conn.deadlines.start(timeout);
        let handle = match conn
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            Err(e) => return self.call_error(&conn, tool, e).await,
        };
        let id = handle.id.clone();
        conn.shared
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(handle.progress_token.clone(), ctx.progress.clone());
        let _route = Route {
            shared: &conn.shared,
            token: handle.progress_token.clone(),
        };
        let response = handle.await_response();
        tokio::pin!(response);
        tokio::select! {
            answer = &mut response => match answer {
                Ok(ServerResult::CallToolResult(result)) => super::content::map_typed(result, ctx.hook_response),
                // A result rmcp could not type (a content type it does not know) arrives raw:
                // mapped all the same, nothing dropped.
                Ok(ServerResult::CustomResult(raw)) => super::content::map_result(&raw.0, ctx.hook_response),
                Ok(other) => ToolOutput::failed(format!(
                    "MCP server {:?} answered tools/call {tool:?} with something else than a tool result: {}",
                    self.name,
                    serde_json::to_string(&other).unwrap_or_default()
                )),
                Err(e) => self.call_error(&conn, tool, e).await,
            },
            _ = ctx.cancel.cancelled() => {
                let note = CancelledNotificationParam::new(Some(id), Some("cancelled by the client".into()));
                let _ = conn.peer.notify_cancelled(note).await;
                ToolOutput::cancelled(format!(
                    "The call was cancelled; MCP server {:?} was sent notifications/cancelled.",
                    self.name
                ))
            }
            _ = deadline.expired() => {
                let note = CancelledNotificationParam::new(Some(id), Some("request timeout".into()));
                let _ = conn.peer.notify_cancelled(note).await;
                self.call_error(&conn, tool, ServiceError::Timeout { timeout }).await
            }
        }
    }

    /// A call's error as an output; a broken transport marks the connection dead (the next
    /// call restarts the server) and names how the server ended.
    async fn call_error(&self, conn: &Connection, tool: &str, e: ServiceError) -> ToolOutput {
        match e {
            ServiceError::McpError(err) => {
                let mut text = format!(
                    "MCP server {:?} answered tools/call {tool:?} with error {}: {}",
                    self.name, err.code.0, err.message
                );
                if let Some(data) = &err.data {
                    text.push_str(&format!(" (data: {data})"));
                }
                ToolOutput::failed(text)
            }
            ServiceError::Timeout { timeout } => ToolOutput::timed_out(format!(
                "MCP tool {tool:?} of server {:?} did not answer within {} ms; the server was sent notifications/cancelled. (Set the server's \"timeout\" or MCP_TOOL_TIMEOUT for a longer limit.)",
                self.name,
                timeout.as_millis()
            )),
            ServiceError::Cancelled { reason } => ToolOutput::cancelled(format!(
                "The call was cancelled ({}).",
                reason.as_deref().unwrap_or("no reason given")
            )),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                conn.broken.store(true, Ordering::Relaxed);
                let mut text = format!("MCP server {:?} ", self.name);
                match &conn.process {
                    Some(p) => {
                        let exit = p.wait_exit(Duration::from_secs(2)).await;
                        if let Some(why) = p.overflow.lock().ok().and_then(|o| o.clone()) {
                            text.push_str(&format!("was disconnected because {why}"));
                            p.kill();
                        } else {
                            match exit {
                                Some(exit) => text.push_str(&format!("exited ({exit})")),
                                None => text.push_str("closed its connection"),
                            }
                        }
                        text.push_str(&format!(
                            " during tools/call {tool:?}; it is restarted on the next call."
                        ));
                        if let Some(lines) = p.stderr_lines(10) {
                            text.push_str("\nLast lines of its stderr:\n");
                            text.push_str(&lines);
                        }
                    }
                    None => text.push_str(&format!(
                        "could not be reached during tools/call {tool:?} ({e}); toolrt reconnects on the next call."
                    )),
                }
                ToolOutput::failed(text)
            }
            other => ToolOutput::failed(format!(
                "MCP server {:?}: tools/call {tool:?} failed: {other}",
                self.name
            )),
        }
    }

    /// A live peer for other requests (resources), restarting the server if needed.
    pub async fn peer(
        self: &Arc<Self>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Peer<RoleClient>, String> {
        self.connection(cancel).await.map(|c| c.peer.clone())
    }

    /// Ends the server: close the session (a stdio server's stdin reaches end of file), wait
    /// a grace period, then SIGTERM and SIGKILL to its process group.
    pub async fn shutdown(&self) {
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

/// Every tool of the server, following `nextCursor`.
async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<RemoteTool>, ServiceError> {
    Ok(peer
        .list_all_tools()
        .await?
        .into_iter()
        .map(|t| RemoteTool {
            name: t.name.to_string(),
            description: t.description.as_deref().unwrap_or("").to_string(),
            input_schema: Value::Object((*t.input_schema).clone()),
            read_only: t.annotations.and_then(|a| a.read_only_hint) == Some(true),
        })
        .collect())
}

/// A streamable-HTTP transport with its own client: no proxy from the environment, no
/// redirects (a redirect could carry the headers elsewhere).
fn http_transport(
    url: &str,
    headers: &[(String, String)],
) -> Result<rmcp::transport::StreamableHttpClientTransport<reqwest::Client>, String> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    // reqwest is built without a default crypto provider; WebFetch installs the same one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
    let mut map = HashMap::new();
    for (name, value) in headers {
        let n = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("header {name:?}: {e}"))?;
        let v = http::HeaderValue::from_str(value)
            .map_err(|e| format!("header {name:?}: invalid value: {e}"))?;
        map.insert(n, v);
    }
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(map);
    Ok(rmcp::transport::StreamableHttpClientTransport::with_client(
        client, config,
    ))
}
