//! An ask (the permission decision was *ask*) settled for an MCP client: as an
//! `elicitation/create` request when the client declared that capability, approved only by an
//! explicit yes; otherwise by `--ask`, which says in the result what it decided.

use std::sync::Arc;

use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::service::{ElicitationMode, Peer, RoleServer};
use serde_json::{Value, json};

use super::{AskFallback, Shared};
use crate::protocol::{ClientMessage, PermissionResponse};

/// Longest rendering of a call's input shown in an elicitation message, in bytes.
const MAX_INPUT_SHOWN: usize = 2000;

/// A `permission_request` of the runtime.
pub(super) struct Ask {
    pub request_id: String,
    pub tool_use_id: String,
    pub tool_name: String,
    pub input: Value,
    pub reason: Option<String>,
}

/// What settled an ask.
#[derive(Debug, PartialEq, Eq)]
struct Settled {
    allow: bool,
    /// Words for the result: the denial's reason, or how `--ask` allowed it.
    message: String,
}

/// Settles `ask` and answers the runtime. `peer` is the client whose call asks (None: the
/// call is gone, its ask is denied).
pub(super) async fn settle(shared: Arc<Shared>, peer: Option<Peer<RoleServer>>, ask: Ask) {
    let settled = match peer {
        Some(peer)
            if peer
                .supported_elicitation_modes()
                .contains(&ElicitationMode::Form) =>
        {
            elicit(&peer, &ask).await
        }
        Some(_) => fallback(&shared, &ask),
        None => Settled {
            allow: false,
            message: "The call ended before its ask was answered.".into(),
        },
    };
    if settled.allow
        && let Some(mut pending) = shared.calls.get_mut(&ask.tool_use_id)
    {
        pending.ask_note = Some(settled.message.clone());
    }
    shared
        .runtime
        .dispatcher()
        .control(ClientMessage::PermissionResponse(PermissionResponse {
            request_id: ask.request_id,
            allow: settled.allow,
            updated_input: None,
            message: (!settled.allow).then_some(settled.message),
        }));
}

/// `--ask`: the client cannot be asked.
fn fallback(shared: &Shared, ask: &Ask) -> Settled {
    let read_only = shared
        .runtime
        .resolve_tool(&ask.tool_name)
        .is_some_and(|entry| entry.tool.hints().read_only == Some(true));
    decide_without_client(shared.options.ask, read_only, &ask.tool_name)
}

/// What `--ask` decides for a tool that is (or is not) known to be read-only.
fn decide_without_client(policy: AskFallback, read_only: bool, tool: &str) -> Settled {
    const CANNOT_ASK: &str = "this call needs approval and the MCP client cannot be asked (it declared no elicitation capability)";
    match (policy, read_only) {
        (AskFallback::AllowReadOnly, true) => Settled {
            allow: true,
            message: format!(
                "{tool} needed approval; allowed by toolrt mcp-serve --ask allow-read-only (the tool only reads)"
            ),
        },
        (AskFallback::AllowReadOnly, false) => Settled {
            allow: false,
            message: format!(
                "toolrt mcp-serve: {CANNOT_ASK}; --ask allow-read-only allows only tools that only read, and {tool} may change things."
            ),
        },
        (AskFallback::Deny, _) => Settled {
            allow: false,
            message: format!("toolrt mcp-serve: {CANNOT_ASK}, and --ask deny denies it."),
        },
    }
}

/// Asks the client's user: approved only by an accepted form whose `approve` is true.
async fn elicit(peer: &Peer<RoleServer>, ask: &Ask) -> Settled {
    let mut input = ask.input.to_string();
    if input.len() > MAX_INPUT_SHOWN {
        let mut cut = MAX_INPUT_SHOWN;
        while !input.is_char_boundary(cut) {
            cut -= 1;
        }
        input.truncate(cut);
        input.push('…');
    }
    let reason = ask.reason.as_deref().unwrap_or("no rule allows it");
    let params = json!({
        "mode": "form",
        "message": format!("Allow {} to run with input {input}? ({reason})", ask.tool_name),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Allow this call",
                    "description": "true runs the call; anything else denies it",
                },
            },
            "required": ["approve"],
        },
    });
    let params: ElicitRequestParams = match serde_json::from_value(params) {
        Ok(p) => p,
        Err(e) => {
            return Settled {
                allow: false,
                message: format!("toolrt mcp-serve could not build the approval request: {e}"),
            };
        }
    };
    match peer.create_elicitation(params).await {
        Ok(answer) => read_answer(answer.action, answer.content.as_ref()),
        Err(e) => Settled {
            allow: false,
            message: format!("The MCP client did not answer the approval request: {e}"),
        },
    }
}

/// The client's answer to the approval form.
fn read_answer(action: ElicitationAction, content: Option<&Value>) -> Settled {
    let approved = content.and_then(|c| c.get("approve")) == Some(&Value::Bool(true));
    match action {
        ElicitationAction::Accept if approved => Settled {
            allow: true,
            message: "approved by the MCP client's user".into(),
        },
        ElicitationAction::Accept => Settled {
            allow: false,
            message: "The MCP client's user did not approve this call.".into(),
        },
        ElicitationAction::Decline => Settled {
            allow: false,
            message: "The MCP client's user declined this call.".into(),
        },
        _ => Settled {
            allow: false,
            message: "The MCP client's user dismissed the approval request; the call was denied."
                .into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_explicit_yes_approves() {
        for (action, content, allow) in [
            (
                ElicitationAction::Accept,
                Some(json!({"approve": true})),
                true,
            ),
            (
                ElicitationAction::Accept,
                Some(json!({"approve": false})),
                false,
            ),
            (
                ElicitationAction::Accept,
                Some(json!({"approve": "true"})),
                false,
            ),
            (ElicitationAction::Accept, None, false),
            (
                ElicitationAction::Decline,
                Some(json!({"approve": true})),
                false,
            ),
            (ElicitationAction::Cancel, None, false),
        ] {
            assert_eq!(
                read_answer(action.clone(), content.as_ref()).allow,
                allow,
                "{action:?} {content:?}"
            );
        }
    }

    #[test]
    fn without_a_client_ask_follows_the_flag_and_says_so() {
        for (policy, read_only, allow, says) in [
            (AskFallback::Deny, true, false, "--ask deny"),
            (AskFallback::Deny, false, false, "--ask deny"),
            (
                AskFallback::AllowReadOnly,
                true,
                true,
                "--ask allow-read-only",
            ),
            (
                AskFallback::AllowReadOnly,
                false,
                false,
                "may change things",
            ),
        ] {
            let s = decide_without_client(policy, read_only, "Read");
            assert_eq!(s.allow, allow, "{policy:?} {read_only}");
            assert!(s.message.contains(says), "{}", s.message);
        }
    }
}
