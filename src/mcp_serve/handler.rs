//! The MCP requests toolrt answers: `initialize` (rmcp's, with toolrt's identity and the tools
//! capability), `tools/list` (the effective registry now) and `tools/call` (one call of the
//! runtime, cancelled when the client cancels the request). Every other method is rmcp's
//! default: -32601, method not found, at once.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use serde_json::Value;

use super::{Pending, Shared, mapping};
use crate::call::ToolCall;
use crate::protocol::{CancelTarget, ClientMessage};

/// toolrt's MCP server: a handle to what every request shares.
#[derive(Clone)]
pub(super) struct Handler {
    shared: Arc<Shared>,
}

impl Handler {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }
}

/// Counts a running `tools/call` from its start to its end (however it ends). Only shutdown
/// watches the count, and only for zero, so only reaching zero wakes it: a change wakes through
/// eight `Notify`s, each locked, whether or not anyone waits.
struct Running<'a>(&'a tokio::sync::watch::Sender<usize>);

impl<'a> Running<'a> {
    fn start(counter: &'a tokio::sync::watch::Sender<usize>) -> Self {
        counter.send_if_modified(|n| {
            *n += 1;
            false
        });
        Self(counter)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.send_if_modified(|n| {
            *n -= 1;
            *n == 0
        });
    }
}

/// Cancels the call in toolrt when the request's future is dropped before its result came
/// (rmcp dropped the request: its client is gone).
struct CancelOnDrop<'a> {
    shared: &'a Shared,
    id: String,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed && self.shared.calls.remove(&self.id).is_some() {
            self.shared
                .runtime
                .dispatcher()
                .control(ClientMessage::Cancel(CancelTarget::Call(self.id.clone())));
        }
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let mut caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        caps.experimental = None;
        ServerConfig::new(caps)
            .with_server_info(Implementation::new("toolrt", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "toolrt runs each tool call through its permission rules, hooks and output budget; a call they refuse answers isError with the reason.",
            )
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut peers = self.shared.peers.lock().unwrap_or_else(|e| e.into_inner());
        // Over HTTP clients come and go: keep only those still connected.
        peers.retain(|p| !p.is_transport_closed());
        peers.push(context.peer);
    }

    /// rmcp hands a known method whose params it could not parse here as a custom request; a
    /// `tools/call` so is the client's mistake in its params (-32602), not an unknown method.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if request.method == "tools/call" {
            return Err(ErrorData::invalid_params(
                bad_call_params(request.params.as_ref()),
                None,
            ));
        }
        // rmcp's default answer.
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            request.method,
            None,
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let runtime = &self.shared.runtime;
        let mut tools = Vec::new();
        for def in runtime.tool_definitions() {
            let hints = runtime
                .resolve_tool(&def.name)
                .map(|entry| entry.tool.hints())
                .unwrap_or_default();
            tools.extend(mapping::tools(&def, hints));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let shared = &*self.shared;
        let _running = Running::start(&shared.running);
        if shared.closing.load(Ordering::SeqCst) {
            return Err(ErrorData::internal_error(
                "toolrt mcp-serve is shutting down: it takes no new call",
                None,
            ));
        }
        let id = format!("mcp-{}", shared.next_id.fetch_add(1, Ordering::Relaxed));
        let input = Value::Object(request.arguments.unwrap_or_default());
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        shared.calls.insert(
            id.clone(),
            Pending {
                peer: context.peer.clone(),
                progress: context.meta.get_progress_token().map(|t| (t, 0)),
                ask_note: None,
            },
        );
        let mut guard = CancelOnDrop {
            shared,
            id: id.clone(),
            armed: true,
        };
        let call = ToolCall::new(id.clone(), request.name.to_string(), input);
        // The result comes straight from the call's slot, not through the outbox and the
        // router: one task wake-up fewer per call.
        shared.runtime.dispatcher().submit_replying(call, tx).await;
        let mut cancel_sent = false;
        let result = loop {
            tokio::select! {
                result = &mut rx => break result,
                // The client cancelled the request: toolrt cancels the call (its process group
                // dies) and the call still ends with its one result, which rmcp does not send.
                _ = context.ct.cancelled(), if !cancel_sent => {
                    cancel_sent = true;
                    shared.runtime.dispatcher().control(ClientMessage::Cancel(CancelTarget::Call(id.clone())));
                }
            }
        };
        // The result came (or the runtime dropped the slot's reply): nothing to cancel.
        guard.armed = false;
        let note = shared.calls.remove(&id).and_then(|(_, p)| p.ask_note);
        let Ok(result) = result else {
            return Err(ErrorData::internal_error(
                "toolrt stopped before the call's result",
                None,
            ));
        };
        mapping::answer(result, note).map(CallToolResponse::from)
    }
}

/// What is wrong with a `tools/call`'s params that rmcp could not parse.
fn bad_call_params(params: Option<&Value>) -> String {
    let what = match params {
        None | Some(Value::Null) => "params are missing".to_string(),
        Some(Value::Object(p)) => match (p.get("name"), p.get("arguments")) {
            (None, _) => "params.name is missing".to_string(),
            (Some(n), _) if !n.is_string() => format!("params.name must be a string, not {n}"),
            (_, Some(a)) if !a.is_object() && !a.is_null() => {
                format!(
                    "params.arguments must be an object, not {}",
                    crate::quote::kind_of(a)
                )
            }
            _ => match serde_json::from_value::<CallToolRequestParams>(Value::Object(p.clone())) {
                Err(e) => e.to_string(),
                Ok(_) => "params do not match tools/call's".to_string(),
            },
        },
        Some(other) => format!(
            "params must be an object, not {}",
            crate::quote::kind_of(other)
        ),
    };
    format!("invalid tools/call: {what}; expected {{\"name\": string, \"arguments\": object}}")
}
