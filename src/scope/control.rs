//! `agent_start` and `agent_end` as the client sees them: the table changes, and the client
//! gets an `agent_started` / `agent_ended` event or an `error` line saying why not.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Scope, ScopeTable, StartRequest};
use crate::emit::Emitter;
use crate::hooks::{HookEvent, Hooks, SubagentFacts};
use crate::protocol::{AgentStart, ServerMessage};

/// Starts a scope and answers the client. `opener` finds the token of an in-flight call by id
/// (`parent_tool_use_id`): cancelling that call then ends the scope (see [`end_with_opener`]).
pub(crate) fn start(
    table: &Arc<ScopeTable>,
    emitter: &Emitter,
    hooks: &Hooks,
    msg: AgentStart,
    opener: impl FnOnce(&str) -> Option<CancellationToken>,
) {
    let token = msg.parent_tool_use_id.as_deref().and_then(opener);
    let req = StartRequest {
        agent_id: msg.agent_id,
        agent_type: msg.agent_type,
        parent: msg.parent,
        parent_tool_use_id: msg.parent_tool_use_id,
        node: msg.node,
        decided: false,
    };
    match table.start(req, token.as_ref()) {
        Ok(scope) => {
            emitter.send_reply(started_event(&scope));
            fire(hooks, HookEvent::SubagentStart, &scope, None);
            if token.is_some() {
                end_with_opener(table, emitter, hooks, &scope);
            }
        }
        Err(e) => emitter.send_reply(ServerMessage::error(e.to_string(), None)),
    }
}

/// A scope opened by an in-flight call ends when that call is cancelled, as an `Agent` call's
/// scope does: its token (a child of the call's) is cancelled at once, which cancels its calls;
/// this ends it too — `agent_ended`, SubagentStop, its file state dropped, its parked calls
/// answered — so it does not stay open, unusable, until `agent_end`. One task per such scope,
/// finishing when the scope's token is cancelled, which its end always does.
fn end_with_opener(table: &Arc<ScopeTable>, emitter: &Emitter, hooks: &Hooks, scope: &Arc<Scope>) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        // Outside a tokio runtime nothing can wait; the scope still cancels its calls with
        // the call and ends at `agent_end` or the end of input.
        return;
    };
    let token = scope.cancel.clone();
    let (table, scope) = (Arc::downgrade(table), Arc::downgrade(scope));
    let (emitter, hooks) = (emitter.clone(), hooks.clone());
    rt.spawn(async move {
        token.cancelled().await;
        if let (Some(table), Some(scope)) = (table.upgrade(), scope.upgrade()) {
            close(&table, &emitter, &hooks, &scope, None);
        }
    });
}

/// The `agent_started` event: the scope as it was narrowed.
pub(crate) fn started_event(scope: &Scope) -> ServerMessage {
    let tools = scope
        .tools
        .as_ref()
        .map_or(Value::Null, |t| json!(t.sorted()));
    ServerMessage::event(
        "agent_started",
        json!({
            "agent_id": &*scope.id,
            "agent_type": &*scope.agent_type,
            "parent": scope.parent.as_ref().map(|p| &*p.id),
            "depth": scope.depth,
            "permission_mode": scope.mode().as_str(),
            "tools": tools,
            "node": scope.node.as_deref(),
        }),
    )
}

/// Ends a scope (and its subtree) and answers the client. `last` is the agent's final answer
/// (`agent_end`'s `last_assistant_message`), for its own SubagentStop only: the agents ended
/// below it answered nobody.
pub(crate) fn end(
    table: &ScopeTable,
    emitter: &Emitter,
    hooks: &Hooks,
    agent_id: &str,
    last: Option<&str>,
) {
    match table.end_scopes(agent_id) {
        Ok(scopes) => {
            emitter.send_reply(ended_event(agent_id, &scopes));
            stopped(hooks, &scopes, last);
        }
        Err(e) => emitter.send_reply(ServerMessage::error(e.to_string(), None)),
    }
}

/// Ends every live scope (end of input), with an `agent_ended` event per top-level agent.
pub(crate) fn end_all(table: &ScopeTable, emitter: &Emitter, hooks: &Hooks) {
    for (id, scopes) in table.end_all() {
        emitter.send(ended_event(&id, &scopes));
        stopped(hooks, &scopes, None);
    }
}

/// Ends the scope a call opened, as that call ends (`last`: the subagent's final answer, when
/// it gave one). The client may have ended it already (`agent_end`): then there is nothing
/// left to say.
pub(crate) fn close(
    table: &ScopeTable,
    emitter: &Emitter,
    hooks: &Hooks,
    scope: &Scope,
    last: Option<&str>,
) {
    // Only this scope, not a newer one that reuses its id.
    if table.resolve(&scope.id).is_none_or(|s| s.key != scope.key) {
        return;
    }
    if let Ok(scopes) = table.end_scopes(&scope.id) {
        emitter.send(ended_event(&scope.id, &scopes));
        stopped(hooks, &scopes, last);
    }
}

/// The `agent_ended` event.
fn ended_event(agent_id: &str, scopes: &[Arc<Scope>]) -> ServerMessage {
    let ended: Vec<&str> = scopes.iter().map(|s| &*s.id).collect();
    ServerMessage::event("agent_ended", json!({"agent_id": agent_id, "ended": ended}))
}

/// SubagentStop hooks of the scopes an end ended (deepest first, the one named last): `last`
/// is the named one's final answer.
fn stopped(hooks: &Hooks, scopes: &[Arc<Scope>], last: Option<&str>) {
    for (i, scope) in scopes.iter().enumerate() {
        let last = if i + 1 == scopes.len() { last } else { None };
        fire(hooks, HookEvent::SubagentStop, scope, last);
    }
}

/// SubagentStart / SubagentStop hooks of a scope, in the background (`last`: the agent's
/// final answer, for SubagentStop).
pub(crate) fn fire(hooks: &Hooks, event: HookEvent, scope: &Scope, last: Option<&str>) {
    let facts = SubagentFacts {
        agent_id: &scope.id,
        agent_type: &scope.agent_type,
        tool_use_id: scope.parent_tool_use_id.as_deref(),
        last_assistant_message: last,
    };
    hooks.subagent(event, &facts, scope.mode().as_str());
}

/// The scope `toolrt explain --agent-type` decides in: one agent per type, each started under
/// the one before (the first at the top level). Refused as `agent_start` would be: the words
/// say which agent and why.
pub(crate) fn explain_chain(
    table: &ScopeTable,
    agent_types: &[String],
) -> Result<Arc<Scope>, String> {
    let mut parent: Option<String> = None;
    let mut last = None;
    for (i, ty) in agent_types.iter().enumerate() {
        let id = format!("explain-{}", i + 1);
        let req = StartRequest {
            agent_id: id.clone(),
            agent_type: ty.clone(),
            parent: parent.replace(id),
            parent_tool_use_id: None,
            node: None,
            decided: false,
        };
        last = Some(table.start(req, None).map_err(|e| e.to_string())?);
    }
    last.ok_or_else(|| "no agent type given".to_string())
}
