//! The `decide` step: the permission decision, and when it is *ask*, PermissionRequest hooks,
//! then the client, and back to the decision with whatever input was approved.

use std::sync::atomic::Ordering;

use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::place::Answers;
use super::{Call, Pipeline, Stage, recheck_input, stopped};
use crate::call::{Outcome, Rejection};
use crate::hooks::PermissionRequestDecision;
use crate::permission::{Behavior, DecidedBy, Decision, Query};
use crate::protocol::{PermissionResponse, ServerMessage};
use crate::validate::Prepared;

/// How many times one call may be asked about (an approved input rewritten into something an
/// ask rule matches asks again).
const MAX_ASK_ROUNDS: usize = 3;

/// What one ask round came to.
enum Round {
    /// Allowed as the input stands.
    Allowed,
    /// Allowed with a new input, to be decided on again (deny and ask rules only).
    Again,
}

/// Decides whether the call may run. Returns when it may; a denial (by rule, mode, hook or the
/// client), a hook's stop or a cancellation ends the call.
///
/// Most calls are allowed at once: that path is one request to the permission stage. What
/// follows any other answer (hooks, the client, more rounds) is boxed, so its state is not
/// part of every call's future, which the supervisor builds and moves for each call.
pub(super) async fn decide(
    p: &Pipeline,
    c: &mut Call<'_>,
    prepared: &mut Prepared,
) -> Result<(), Rejection> {
    let mut decision = decision(p, c, prepared, false).await?;
    if decision.behavior != Behavior::Allow && c.node.as_ref().is_some_and(|n| n.kept) {
        // Only an allow is checked by the node before the call runs: anything else rests on
        // what the node says now.
        Box::pin(super::place::locate(c, prepared, Answers::Fresh)).await?;
        decision = Box::pin(self::decision(p, c, prepared, false)).await?;
    }
    if decision.behavior != Behavior::Allow {
        Box::pin(not_allowed(p, c, prepared, decision)).await?;
    }
    c.lap.mark(Stage::Permission);
    Ok(())
}

/// One request to the permission stage (`recheck`: deny and ask rules only, for an input
/// approved or rewritten after an ask).
async fn decision(
    p: &Pipeline,
    c: &mut Call<'_>,
    prepared: &mut Prepared,
    recheck: bool,
) -> Result<Decision, Rejection> {
    let tool = prepared.entry.tool.clone();
    let at = c.node.as_ref().and_then(|n| n.at.clone());
    let query = |input| Query {
        tool,
        input,
        mode: c.mode(p),
        hook: c.hook.clone(),
        recheck,
        chain: c.scope.as_ref().map(|s| s.chain.clone()),
        at,
    };
    let decision = super::lend(&mut prepared.input, |input| {
        p.permission.decide(query(input))
    })
    .await?;
    // The call runs on the latest decision; its tool checks the file it opens against these.
    prepared.decided_paths = decision.paths.clone();
    tracing::debug!(
        decision = decision.behavior.as_str(),
        by = %decision.reason(),
        "permission decided"
    );
    if let Some(trace) = c.lap.trace() {
        trace.decided(decision.behavior.as_str(), decision.reason());
    }
    Ok(decision)
}

/// A decision other than *allow*: a denial ends the call; an ask goes to PermissionRequest
/// hooks, then the client, and back to the decision with whatever input was approved.
async fn not_allowed(
    p: &Pipeline,
    c: &mut Call<'_>,
    prepared: &mut Prepared,
    mut decision: Decision,
) -> Result<(), Rejection> {
    let mut rounds = 0;
    loop {
        let name = &prepared.entry.name;
        match decision.behavior {
            Behavior::Allow => return Ok(()),
            Behavior::Deny => {
                let message = decision.message(name);
                return Err(permission_denied(p, c, prepared, message).await);
            }
            Behavior::Ask => {
                rounds += 1;
                if rounds > MAX_ASK_ROUNDS {
                    return Err(Rejection::new(
                        Outcome::Denied,
                        format!(
                            "{} (asked {MAX_ASK_ROUNDS} times already)",
                            decision.message(name)
                        ),
                    ));
                }
                match ask(p, c, prepared, &decision).await? {
                    Round::Allowed => return Ok(()),
                    Round::Again => {}
                }
            }
        }
        // An approved input may name another path: located on the call's node again.
        super::place::locate(c, prepared, Answers::Fresh).await?;
        decision = self::decision(p, c, prepared, true).await?;
    }
}

/// One ask: PermissionRequest hooks first, then, if they did not answer, the client.
async fn ask(
    p: &Pipeline,
    c: &mut Call<'_>,
    prepared: &mut Prepared,
    decision: &Decision,
) -> Result<Round, Rejection> {
    let name = prepared.entry.name.clone();
    let Prepared { entry, input, .. } = &mut *prepared;
    let answer = match p.hooks.permission_request(c.about(p, &entry.tool), input) {
        Some(request) => request.await?,
        None => Default::default(),
    };
    if let Some(reason) = answer.stop {
        return Err(stopped(p, c, "PermissionRequest", reason));
    }
    match answer.decision {
        Some(PermissionRequestDecision::Allow {
            updated_input: None,
        }) => return Ok(Round::Allowed),
        Some(PermissionRequestDecision::Allow {
            updated_input: Some(updated),
        }) => {
            *prepared = recheck_input(
                p,
                c,
                prepared,
                Value::Object(updated),
                "the input rewritten by a PermissionRequest hook",
            )
            .await?;
            return Ok(Round::Again);
        }
        Some(PermissionRequestDecision::Deny { message }) => {
            let message = message.unwrap_or_else(|| {
                format!("Permission to use {name} was denied by a PermissionRequest hook")
            });
            return Err(Rejection::new(Outcome::Denied, message));
        }
        None => {}
    }
    if p.ask_policy == super::AskPolicy::Deny {
        let message = format!(
            "{} (no one can approve it in this session)",
            decision.message(&name)
        );
        return Err(permission_denied(p, c, prepared, message).await);
    }
    // Waiting holds no execution slot.
    c.slot = None;
    // A hook's ask carries its own reason to the client.
    let reason = match (&decision.decided_by, &c.hook_reason) {
        (DecidedBy::Hook { .. }, Some(r)) => r.clone(),
        _ => decision.message(&name),
    };
    let answer = ask_client(p, c, prepared, reason).await?;
    c.lap.restart();
    if !answer.allow {
        let why = answer
            .message
            .unwrap_or_else(|| "the user denied this call".into());
        return Err(Rejection::new(
            Outcome::Denied,
            format!("Permission to use {name} was denied: {why}"),
        ));
    }
    c.take_slot(p).await?;
    match answer.updated_input {
        None => Ok(Round::Allowed),
        Some(updated) => {
            *prepared =
                recheck_input(p, c, prepared, Value::Object(updated), "the approved input").await?;
            Ok(Round::Again)
        }
    }
}

/// The permission decision denied the call: PermissionDenied hooks hear of it (one of them may
/// say the call can be retried), and the call ends `denied` with `message`.
async fn permission_denied(
    p: &Pipeline,
    c: &Call<'_>,
    prepared: &mut Prepared,
    mut message: String,
) -> Rejection {
    let Prepared { entry, input, .. } = prepared;
    let Some(request) = p
        .hooks
        .permission_denied(c.about(p, &entry.tool), input, message.clone())
    else {
        return Rejection::new(Outcome::Denied, message);
    };
    match request.await {
        Ok(true) => message.push_str(
            "\n\nA PermissionDenied hook says this call may be retried if the user asked for it.",
        ),
        Ok(false) => {}
        Err(fault) => return fault.into(),
    }
    Rejection::new(Outcome::Denied, message)
}

/// Sends a `permission_request` and waits for the client's answer (without an execution slot).
async fn ask_client(
    p: &Pipeline,
    c: &Call<'_>,
    prepared: &Prepared,
    reason: String,
) -> Result<PermissionResponse, Rejection> {
    let tool = prepared.tool_name();
    // Even when no answer can come any more the request is sent: the client learns what would
    // have needed approval.
    let answer = request_permission(p, c.cancel, |request_id| ServerMessage::PermissionRequest {
        request_id,
        tool_use_id: c.id.to_string(),
        tool_name: tool.to_string(),
        input: Value::Object(prepared.input.clone()),
        reason: Some(reason),
        agent_id: c.scope.as_ref().map(|s| s.id.clone()),
    })
    .await;
    match answer {
        ClientAnswer::Given(response) => Ok(response),
        ClientAnswer::ClientClosed => Err(Rejection::new(
            Outcome::Denied,
            format!(
                "Permission to use {tool} was denied: the client closed its input without answering"
            ),
        )),
        ClientAnswer::Cancelled => Err(Rejection::new(
            Outcome::Cancelled,
            "The call was cancelled while it waited for permission.",
        )),
    }
}

/// What became of a `permission_request`.
pub(super) enum ClientAnswer {
    /// The client answered.
    Given(PermissionResponse),
    /// The client closed its input first.
    ClientClosed,
    /// `cancel` fired first.
    Cancelled,
}

/// Sends the `permission_request` that `request` builds around a fresh request id and waits
/// for the client's answer or `cancel`, counted as a client wait meanwhile.
pub(super) async fn request_permission(
    p: &Pipeline,
    cancel: &CancellationToken,
    request: impl FnOnce(String) -> ServerMessage,
) -> ClientAnswer {
    let asks = &p.asks;
    let request_id = format!("perm-{}", asks.seq.fetch_add(1, Ordering::Relaxed));
    let _waiting = asks.client_waits.start();
    let (tx, rx) = oneshot::channel();
    asks.waiting.insert(request_id.clone(), tx);
    p.emitter.send(request(request_id.clone()));
    // Closing can race the insert above; check again so the wait cannot outlive the client.
    if asks.closed.load(Ordering::SeqCst) {
        asks.waiting.remove(&request_id);
    }
    tokio::select! {
        biased;
        answer = rx => answer.map_or(ClientAnswer::ClientClosed, ClientAnswer::Given),
        _ = cancel.cancelled() => {
            asks.waiting.remove(&request_id);
            ClientAnswer::Cancelled
        }
    }
}
