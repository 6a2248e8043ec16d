//! `Network(host)` asks from the Bash sandbox's proxy: a sandboxed command connects to a host
//! no rule allows or denies, and the client is asked, as for any call, on behalf of the Bash
//! call whose command connects.

use std::sync::atomic::Ordering;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::Pipeline;
use super::ask::{ClientAnswer, request_permission};
use crate::permission::Mode;
use crate::protocol::ServerMessage;

/// Whether call `tool_use_id`'s sandboxed command may connect to `host:port`: `dontAsk` and a
/// session nobody can answer deny, `bypassPermissions` allows, otherwise a `permission_request`
/// for tool `Network` (input `{"host", "port"}`) goes to the client. No answer (the client
/// closed, or `cancel` fired because the call ended) is a denial.
pub(crate) async fn ask_network(
    p: &Pipeline,
    tool_use_id: &str,
    host: &str,
    port: u16,
    cancel: &CancellationToken,
) -> bool {
    match p.mode {
        Mode::DontAsk => return false,
        Mode::BypassPermissions => return true,
        _ => {}
    }
    let asks = &p.asks;
    if p.ask_policy == super::AskPolicy::Deny || asks.closed.load(Ordering::SeqCst) {
        return false;
    }
    let answer = request_permission(p, cancel, |request_id| ServerMessage::PermissionRequest {
        request_id,
        tool_use_id: tool_use_id.to_string(),
        tool_name: "Network".into(),
        input: json!({"host": host, "port": port}),
        reason: Some(format!(
            "The sandboxed command connects to {host}:{port}, which \
             sandbox.network.allowedDomains does not list"
        )),
        agent_id: None,
    })
    .await;
    matches!(answer, ClientAnswer::Given(response) if response.allow)
}
