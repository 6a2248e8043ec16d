//! The runtime's outbox, read by one task: each message goes where it belongs (a call's result
//! does not come here: its slot hands it to the `tools/call` waiting for it). An ask to `asks`; a progress update to its call's client as
//! `notifications/progress`; a change of an MCP server's tools to every client as
//! `notifications/tools/list_changed`.

use std::sync::{Arc, Weak};

use dashmap::DashMap;
use serde_json::Value;

use super::{Pending, Shared};
use crate::emit::Outbox;
use crate::protocol::{ExecuteContent, ExecuteResult, ServerMessage};

/// Longest progress message sent to a client, in bytes; the rest of an update is cut.
const MAX_PROGRESS_MESSAGE: usize = 4096;

/// Reads the outbox until the runtime has shut down and every message is out.
pub(super) async fn route(
    mut outbox: Outbox,
    calls: Arc<DashMap<String, Pending>>,
    shared: Weak<Shared>,
) {
    let mut tools: Option<Vec<String>> = shared.upgrade().map(|s| s.runtime.tools());
    while let Some(msg) = outbox.recv().await {
        match msg {
            ServerMessage::PermissionRequest {
                request_id,
                tool_use_id,
                tool_name,
                input,
                reason,
                ..
            } => {
                let peer = calls.get(&tool_use_id).map(|p| p.peer.clone());
                if let Some(shared) = shared.upgrade() {
                    let ask = super::asks::Ask {
                        request_id,
                        tool_use_id,
                        tool_name,
                        input,
                        reason,
                    };
                    tokio::spawn(super::asks::settle(shared, peer, ask));
                }
            }
            ServerMessage::Execute { request_id, .. } => {
                // A subagent (the `Agent` tool) needs a client that runs it: an MCP client
                // does not.
                if let Some(shared) = shared.upgrade() {
                    shared.runtime.answer_execute(ExecuteResult {
                        request_id,
                        content: ExecuteContent::Text(
                            "toolrt mcp-serve has no client to run subagents: the Agent tool cannot run here.".into(),
                        ),
                        is_error: true,
                    });
                }
            }
            ServerMessage::Event(body) => match body.0.get("event").and_then(Value::as_str) {
                Some("progress") => progress(&calls, &body.0),
                Some("mcp_server") => {
                    if let Some(shared) = shared.upgrade() {
                        tools_changed(&shared, &mut tools);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
}

/// A running call's progress update, to the client that asked for progress.
fn progress(calls: &DashMap<String, Pending>, body: &serde_json::Map<String, Value>) {
    let Some(id) = body.get("tool_use_id").and_then(Value::as_str) else {
        return;
    };
    let Some(mut pending) = calls.get_mut(id) else {
        return;
    };
    let peer = pending.peer.clone();
    let Some((token, count)) = pending.progress.as_mut() else {
        return;
    };
    *count += 1;
    let mut message = match body.get("data") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(m)) if m.len() == 1 => match m.values().next() {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        },
        Some(v) => v.to_string(),
        None => String::new(),
    };
    if message.len() > MAX_PROGRESS_MESSAGE {
        let mut cut = MAX_PROGRESS_MESSAGE;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
    }
    let params = serde_json::json!({
        "progressToken": token,
        "progress": *count,
        "message": message,
    });
    drop(pending);
    let Ok(params) = serde_json::from_value(params) else {
        return;
    };
    // Best effort, as progress events are: a client that reads slowly loses updates, never
    // results.
    tokio::spawn(async move {
        let _ = peer.notify_progress(params).await;
    });
}

/// Tells every client the tools changed, when an MCP server's status changed them.
fn tools_changed(shared: &Shared, last: &mut Option<Vec<String>>) {
    let now = shared.runtime.tools();
    let changed = last.as_ref().is_some_and(|l| *l != now);
    *last = Some(now);
    if !changed {
        return;
    }
    let peers = shared
        .peers
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    for peer in peers {
        tokio::spawn(async move {
            let _ = peer.notify_tool_list_changed().await;
        });
    }
}
