//! A connection to an MCP server: the rmcp client handler (progress routing, `list_changed`),
//! connecting over stdio or streamable HTTP, and noticing the server's death.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProgressToken,
    ProtocolVersion,
};
use rmcp::service::{
    NotificationContext, Peer, RoleClient, RunningService, RunningServiceCancellationToken,
    ServiceError,
};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::{Failure, MAX_MESSAGE_BYTES, McpServer, RemoteTool, ServerStatus, Status};
use crate::deadlines::Deadlines;
use crate::mcp::config::Transport;
use crate::mcp::process::{self, ServerProcess};
use crate::tool::ProgressSink;

/// The rmcp client handler: routes progress to the call it belongs to, and counts
/// `notifications/tools/list_changed`.
pub(super) struct Handler {
    shared: Arc<Shared>,
}

/// What a connection's handler shares with its calls.
pub(super) struct Shared {
    pub(super) progress: Mutex<HashMap<ProgressToken, ProgressSink>>,
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
pub(super) struct Route<'a> {
    pub(super) shared: &'a Shared,
    pub(super) token: ProgressToken,
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

/// An initialized rmcp client session.
type Client = RunningService<RoleClient, Handler>;

/// One live session with the server.
pub(super) struct Connection {
    pub(super) client: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    pub(super) peer: Peer<RoleClient>,
    pub(super) shared: Arc<Shared>,
    /// The process, for a stdio server.
    pub(super) process: Option<ServerProcess>,
    /// Set when a call saw the transport fail.
    pub(super) broken: AtomicBool,
    /// Its calls' timeouts (kept by one task of their own, stopped with the connection).
    pub(super) deadlines: Deadlines,
}

impl Connection {
    pub(super) fn alive(&self) -> bool {
        !self.broken.load(Ordering::Relaxed)
            && !self.peer.is_transport_closed()
            && self.process.as_ref().is_none_or(|p| p.exited().is_none())
    }
}

impl McpServer {
    /// Connects: spawn (stdio) or reach (HTTP), initialize, list tools, all within the
    /// start-up timeout.
    pub(super) async fn connect(
        self: &Arc<Self>,
    ) -> Result<(Arc<Connection>, Vec<RemoteTool>), Failure> {
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
        let (client, process) = match &self.launch.transport {
            Transport::Stdio { command, args, .. } => {
                let (client, process) = self.serve_stdio(handler, command, args).await?;
                (client, Some(process))
            }
            Transport::Http { url, headers } => {
                (self.serve_http(handler, url, headers).await?, None)
            }
            Transport::Unsupported { kind } => {
                return Err(failure(
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
        let stop = client.cancellation_token();
        let tools = match self.first_list(&peer, process.as_ref()).await {
            Ok(tools) => tools,
            Err(failure) => {
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
        self.watch_exit(&conn, generation, stop);
        Ok((conn, tools))
    }

    /// A stdio server: its process started and initialized (killed if that fails).
    async fn serve_stdio(
        &self,
        handler: Handler,
        command: &str,
        args: &[String],
    ) -> Result<(Client, ServerProcess), Failure> {
        let startup = self.timeouts.startup;
        let (process, pipes) =
            process::spawn(command, args, &self.env, &self.cwd, MAX_MESSAGE_BYTES)
                .await
                .map_err(|e| failure(format!("cannot start {command:?}: {e}"), None))?;
        // Lines past MAX_MESSAGE_BYTES fail the pipe (`process::LineCap`).
        let transport = crate::mcp::transport::Stdio::new(pipes.stdout, pipes.stdin);
        match tokio::time::timeout(startup, handler.serve(transport)).await {
            Ok(Ok(client)) => Ok((client, process)),
            Ok(Err(e)) => {
                let exit = process.wait_exit(Duration::from_secs(1)).await;
                process.kill();
                let reason = match exit {
                    Some(exit) => format!("exited ({exit}) before it initialized"),
                    None => format!("initialize failed: {e}"),
                };
                Err(failure(reason, Some(&process)))
            }
            Err(_) => {
                process.kill();
                Err(failure(
                    format!(
                        "did not answer initialize within {} ms",
                        startup.as_millis()
                    ),
                    Some(&process),
                ))
            }
        }
    }

    /// A streamable-HTTP server, reached and initialized.
    async fn serve_http(
        &self,
        handler: Handler,
        url: &str,
        headers: &[(String, String)],
    ) -> Result<Client, Failure> {
        let startup = self.timeouts.startup;
        let transport = http_transport(url, headers).map_err(|e| failure(e, None))?;
        match tokio::time::timeout(startup, handler.serve(transport)).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => {
                let reason = match e.auth_challenge() {
                    Some(challenge) => format!(
                        "the server asks for authorization ({challenge}); check the headers"
                    ),
                    None => format!("initialize failed: {e}"),
                };
                Err(failure(reason, None))
            }
            Err(_) => Err(failure(
                format!(
                    "did not answer initialize within {} ms",
                    startup.as_millis()
                ),
                None,
            )),
        }
    }

    /// The first tools/list of a connection, within the start-up timeout.
    async fn first_list(
        &self,
        peer: &Peer<RoleClient>,
        process: Option<&ServerProcess>,
    ) -> Result<Vec<RemoteTool>, Failure> {
        let startup = self.timeouts.startup;
        match tokio::time::timeout(startup, list_tools(peer)).await {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(e)) => Err(failure(format!("tools/list failed: {e}"), process)),
            Err(_) => Err(failure(
                format!(
                    "did not answer tools/list within {} ms",
                    startup.as_millis()
                ),
                process,
            )),
        }
    }

    /// Reports the server's death when its process exits outside a shutdown, and ends the
    /// session (`stop`) soon after, whatever the reason.
    fn watch_exit(
        self: &Arc<Self>,
        conn: &Arc<Connection>,
        generation: u64,
        stop: RunningServiceCancellationToken,
    ) {
        let Some(process) = &conn.process else {
            return;
        };
        // The calls in flight end with the process, not with the end of its stdout, which a
        // process it started outside its group (its group is killed at its exit) may hold open
        // for ever. What it wrote before it exited is read first, within the grace.
        let mut exited = process.exit.clone();
        tokio::spawn(async move {
            if exited.wait_for(Option::is_some).await.is_ok() {
                tokio::time::sleep(STDOUT_GRACE).await;
                stop.cancel();
            }
        });
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
}

/// How long a stdio server's stdout is still read after it exited, before its session ends.
const STDOUT_GRACE: Duration = Duration::from_millis(500);

/// A connection attempt's failure, with the last lines of the server's stderr when there is
/// a process.
fn failure(reason: String, process: Option<&ServerProcess>) -> Failure {
    Failure {
        reason,
        stderr: process.and_then(|p| p.stderr_lines(10)),
    }
}

/// Every tool of the server, following `nextCursor`.
pub(super) async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<RemoteTool>, ServiceError> {
    Ok(peer
        .list_all_tools()
        .await?
        .into_iter()
        .map(|t| RemoteTool {
            name: t.name.to_string(),
            description: t.description.as_deref().unwrap_or("").to_string(),
            input_schema: Value::Object((*t.input_schema).clone()),
            hints: t
                .annotations
                .map(|a| crate::tool::Hints {
                    read_only: a.read_only_hint,
                    destructive: a.destructive_hint,
                    idempotent: a.idempotent_hint,
                    open_world: a.open_world_hint,
                })
                .unwrap_or_default(),
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
    let client = crate::http_client::builder()
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
