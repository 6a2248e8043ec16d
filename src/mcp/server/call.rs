//! One tool call on an MCP server: progress routed to the call, cancellation and the time
//! limit sent as `notifications/cancelled`, errors in words.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};

use super::McpServer;
use super::connection::{Connection, Route};
use crate::call::Input;
use crate::tool::{ToolContext, ToolOutput};

impl McpServer {
    /// Calls `tool` with `args`: progress goes to the call's sink, the call's cancellation
    /// sends `notifications/cancelled`, and the result is mapped to an output.
    pub(crate) async fn call_tool(
        self: &Arc<Self>,
        tool: &str,
        args: Input,
        ctx: &ToolContext,
        timeout: Duration,
    ) -> ToolOutput {
        // (Re)connecting is a large future, and so is a failed call's report (it may wait for
        // the server to exit): both are boxed, so that a call's own future stays small — it is
        // moved into a box on every call, and with them inline that copy cost more than the
        // rest of the MCP client's work.
        let conn = match self.current().filter(|c| c.alive()) {
            Some(conn) => Ok(conn),
            None => Box::pin(self.connection(&ctx.cancel)).await,
        };
        let conn = match conn {
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
            Err(e) => return Box::pin(self.call_error(&conn, tool, e)).await,
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
                Ok(ServerResult::CallToolResult(result)) => crate::mcp::content::map_typed(result, ctx.hook_response),
                // A result rmcp could not type (a content type it does not know) arrives raw:
                // mapped all the same, nothing dropped.
                Ok(ServerResult::CustomResult(raw)) => crate::mcp::content::map_result(&raw.0, ctx.hook_response),
                Ok(other) => ToolOutput::failed(format!(
                    "MCP server {:?} answered tools/call {tool:?} with something else than a tool result: {}",
                    self.name,
                    serde_json::to_string(&other).unwrap_or_default()
                )),
                Err(e) => Box::pin(self.call_error(&conn, tool, e)).await,
            },
            _ = ctx.cancel.cancelled() => {
                let note = CancelledNotificationParam::new(Some(id), Some("cancelled by the client".into()));
                let _ = Box::pin(conn.peer.notify_cancelled(note)).await;
                ToolOutput::cancelled(format!(
                    "The call was cancelled; MCP server {:?} was sent notifications/cancelled.",
                    self.name
                ))
            }
            _ = deadline.expired() => {
                let note = CancelledNotificationParam::new(Some(id), Some("request timeout".into()));
                let _ = Box::pin(conn.peer.notify_cancelled(note)).await;
                Box::pin(self.call_error(&conn, tool, ServiceError::Timeout { timeout })).await
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
}
