//! The per-call supervisor: the only place that knows the stage order.
//!
//! # Order
//! resolve → alias → registry → coerce → schema → validate (validate stage) → PreToolUse hooks
//! → permission (→ permission_request → back to the decision) → execute → PostToolUse /
//! PostToolUseFailure hooks → output budget → one `tool_result`.
//!
//! One [`CallSupervisor`] actor is spawned per call. It messages the long-lived stage actors
//! through their typed handles, never lets a stage call the next, and owns the call's
//! [`ResultSlot`], so even its own failure still answers the call.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use dashmap::DashMap;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::budget::Budget;
use crate::call::{Outcome, ToolCall, ToolResult};
use crate::dispatch::slot::ResultSlot;
use crate::emit::Emitter;
use crate::execute::Executor;
use crate::hooks::Hooks;
use crate::permission::{Behavior, Mode, Permission, Query};
use crate::protocol::{PermissionResponse, ServerMessage};
use crate::session::Session;
use crate::tool::{ProgressSink, ToolContext, ToolStatus};
use crate::validate::{Prepared, Validator};

/// How long a cancelled tool gets to stop by itself before its call is answered `cancelled`
/// without waiting further.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// How many times one call may be asked about (an approved input rewritten into something an
/// ask rule matches asks again).
const MAX_ASK_ROUNDS: usize = 3;

/// What to do when the decision is *ask*.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskPolicy {
    /// Send a `permission_request` and wait for the client.
    Client,
    /// Nobody to ask (`toolrt run`, `--permission-prompt none`): deny.
    Deny,
}

/// Everything a supervisor needs: the stage handles and the session-wide state. Shared by all
/// calls of a runtime.
pub struct Pipeline {
    /// Validate stage.
    pub validator: Validator,
    /// Hook stage.
    pub hooks: Hooks,
    /// Permission stage.
    pub permission: Permission,
    /// Execute stage.
    pub executor: Executor,
    /// Output-budget stage.
    pub budget: Budget,
    /// Session state.
    pub session: Arc<Session>,
    /// The way out.
    pub emitter: Emitter,
    /// Execution slots (`--max-in-flight`).
    pub exec_slots: Arc<Semaphore>,
    /// The permission mode in force.
    pub mode: Mode,
    /// What an ask becomes.
    pub ask_policy: AskPolicy,
    asks: DashMap<String, oneshot::Sender<PermissionResponse>>,
    asks_closed: AtomicBool,
    ask_seq: AtomicU64,
}

impl Pipeline {
    /// Assembles a pipeline from its stages.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        validator: Validator,
        hooks: Hooks,
        permission: Permission,
        executor: Executor,
        budget: Budget,
        session: Arc<Session>,
        emitter: Emitter,
        max_in_flight: usize,
        mode: Mode,
        ask_policy: AskPolicy,
    ) -> Self {
        Self {
            validator,
            hooks,
            permission,
            executor,
            budget,
            session,
            emitter,
            exec_slots: Arc::new(Semaphore::new(max_in_flight.max(1))),
            mode,
            ask_policy,
            asks: DashMap::new(),
            asks_closed: AtomicBool::new(false),
            ask_seq: AtomicU64::new(1),
        }
    }

    /// Routes a client's permission answer to the call waiting for it. False if no call waits
    /// under that request id.
    pub fn answer_permission(&self, response: PermissionResponse) -> bool {
        match self.asks.remove(&response.request_id) {
            Some((_, tx)) => tx.send(response).is_ok(),
            None => false,
        }
    }

    /// No more answers can come (the client closed its input): every waiting and future ask is
    /// denied.
    pub fn close_asks(&self) {
        self.asks_closed.store(true, Ordering::SeqCst);
        let ids: Vec<String> = self.asks.iter().map(|e| e.key().clone()).collect();
        for id in ids {
            // Dropping the sender wakes the waiting call with "no answer".
            self.asks.remove(&id);
        }
    }

    /// Stops every stage actor.
    pub fn stop(&self) {
        self.validator.stop();
        self.hooks.stop();
        self.permission.stop();
        self.executor.stop();
        self.budget.stop();
    }
}

/// Where a call of a batch waits for its turn.
pub struct Gate {
    /// Tells the batch runner whether the call is concurrency-safe (dropped: finished early).
    pub ready: oneshot::Sender<bool>,
    /// Fires when the call may run.
    pub go: oneshot::Receiver<()>,
}

/// One call's job.
pub struct Job {
    /// The call.
    pub call: ToolCall,
    /// Its one result.
    pub slot: ResultSlot,
    /// Cancelled with the call, its batch, or the server.
    pub cancel: CancellationToken,
    /// Batch ordering, if the call is part of a multi-call batch.
    pub gate: Option<Gate>,
    /// The stages.
    pub pipeline: Arc<Pipeline>,
}

/// The per-call supervisor actor.
pub struct CallSupervisor;

impl Actor for CallSupervisor {
    type Msg = ();
    type State = Option<Job>;
    type Arguments = Job;

    async fn pre_start(
        &self,
        _me: ActorRef<()>,
        job: Job,
    ) -> Result<Option<Job>, ActorProcessingErr> {
        Ok(Some(job))
    }

    async fn post_start(
        &self,
        me: ActorRef<()>,
        state: &mut Option<Job>,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(job) = state.take() {
            run(job).await;
        }
        me.stop(None);
        Ok(())
    }
}

/// Spawns a supervisor for a job. If the actor cannot be spawned the job (and its slot) is
/// dropped, which answers the call `failed`.
pub async fn spawn(job: Job) {
    if let Err(e) = Actor::spawn(None, CallSupervisor, job).await {
        tracing::error!("could not spawn a call supervisor: {e}");
    }
}

/// Why a call ended early, as (outcome, content).
type Early = (Outcome, String);

/// Drives one call through every stage.
pub async fn run(job: Job) {
    let Job {
        call,
        slot,
        cancel,
        gate,
        pipeline,
    } = job;
    let id = slot.id().clone();
    let span = tracing::debug_span!("call", id = %id, tool = %call.name);
    match drive(&pipeline, call, &id, &cancel, gate)
        .instrument(span)
        .await
    {
        Ok(result) => slot.emit(result),
        Err((outcome, content)) => slot.answer(outcome, content),
    }
}

async fn drive(
    p: &Pipeline,
    call: ToolCall,
    id: &Arc<str>,
    cancel: &CancellationToken,
    gate: Option<Gate>,
) -> Result<ToolResult, Early> {
    let cancelled = || {
        (
            Outcome::Cancelled,
            "The call was cancelled before it ran.".to_string(),
        )
    };
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    // Validate stage.
    let prepared = tokio::select! {
        biased;
        r = p.validator.prepare(call) => r.map_err(fault)?,
        _ = cancel.cancelled() => return Err(cancelled()),
    };
    let mut prepared = prepared.map_err(|rej| (rej.outcome, rej.content))?;

    // Batch order: wait for our turn.
    if let Some(Gate { ready, go }) = gate {
        let _ = ready.send(prepared.concurrency_safe);
        tokio::select! {
            biased;
            r = go => if r.is_err() { return Err(cancelled()) },
            _ = cancel.cancelled() => return Err(cancelled()),
        }
    }

    let mut slot_permit = acquire_slot(p, cancel).await.ok_or_else(cancelled)?;

    // PreToolUse hooks (none configured yet: nothing to do).

    // Permission stage; an ask goes to the client and comes back here.
    let mut rounds = 0;
    let mut recheck = false;
    loop {
        let tool: Arc<str> = Arc::from(prepared.tool_name());
        let (input, decision) = p
            .permission
            .decide(Query {
                tool: tool.clone(),
                input: std::mem::take(&mut prepared.input),
                mode: p.mode,
                hook: None,
                recheck,
            })
            .await
            .map_err(fault)?;
        prepared.input = input;
        match decision.behavior {
            Behavior::Allow => break,
            Behavior::Deny => return Err((Outcome::Denied, decision.message(&tool))),
            Behavior::Ask => {
                rounds += 1;
                if p.ask_policy == AskPolicy::Deny || rounds > MAX_ASK_ROUNDS {
                    return Err((
                        Outcome::Denied,
                        format!(
                            "{} (no one can approve it in this session)",
                            decision.message(&tool)
                        ),
                    ));
                }
                // Waiting holds no execution slot.
                drop(slot_permit);
                let answer = ask_client(p, id, &tool, &prepared, cancel).await?;
                if !answer.allow {
                    let why = answer
                        .message
                        .unwrap_or_else(|| "the user denied this call".into());
                    return Err((
                        Outcome::Denied,
                        format!("Permission to use {tool} was denied: {why}"),
                    ));
                }
                slot_permit = acquire_slot(p, cancel).await.ok_or_else(cancelled)?;
                match answer.updated_input {
                    None => break,
                    Some(updated) => {
                        prepared = recheck_input(
                            p,
                            &prepared,
                            Value::Object(updated),
                            "the approved input",
                        )
                        .await?;
                        recheck = true;
                    }
                }
            }
        }
    }

    // Execute stage.
    let started = std::time::Instant::now();
    let ctx = ToolContext {
        tool_use_id: id.clone(),
        cancel: cancel.clone(),
        progress: progress_sink(&p.emitter, id),
        session: p.session.clone(),
    };
    let class = prepared.entry.tool.budget_class();
    let run = p
        .executor
        .run(prepared.entry.tool.clone(), prepared.input, ctx);
    tokio::pin!(run);
    let output = tokio::select! {
        biased;
        out = &mut run => out.map_err(fault)?,
        _ = cancel.cancelled() => {
            // The tool has seen its token; give it a moment to stop and report.
            match tokio::time::timeout(CANCEL_GRACE, &mut run).await {
                Ok(out) => out.map_err(fault)?,
                Err(_) => return Err((Outcome::Cancelled, "The call was cancelled while it ran; the tool did not stop in time and its output was discarded.".into())),
            }
        }
    };
    drop(slot_permit);
    let _elapsed = started.elapsed();

    // PostToolUse / PostToolUseFailure hooks (none configured yet).

    // Output budget.
    let mut output = output;
    if cancel.is_cancelled() && output.status != ToolStatus::Success {
        output.status = ToolStatus::Cancelled;
    }
    let shaped = p
        .budget
        .shape(id.clone(), output, class)
        .await
        .map_err(fault)?;
    let mut result = ToolResult::new(id.to_string(), shaped.outcome, shaped.content);
    result.output_file = shaped.output_file;
    Ok(result)
}

async fn acquire_slot(p: &Pipeline, cancel: &CancellationToken) -> Option<OwnedSemaphorePermit> {
    tokio::select! {
        biased;
        permit = p.exec_slots.clone().acquire_owned() => permit.ok(),
        _ = cancel.cancelled() => None,
    }
}

async fn ask_client(
    p: &Pipeline,
    id: &Arc<str>,
    tool: &str,
    prepared: &Prepared,
    cancel: &CancellationToken,
) -> Result<PermissionResponse, Early> {
    if p.asks_closed.load(Ordering::SeqCst) {
        return Err((
            Outcome::Denied,
            format!(
                "Permission to use {tool} was denied: it needs approval and the client closed its input before it could be asked"
            ),
        ));
    }
    let request_id = format!("perm-{}", p.ask_seq.fetch_add(1, Ordering::Relaxed));
    let (tx, rx) = oneshot::channel();
    p.asks.insert(request_id.clone(), tx);
    p.emitter.send(ServerMessage::PermissionRequest {
        request_id: request_id.clone(),
        tool_use_id: id.to_string(),
        tool_name: tool.to_string(),
        input: Value::Object(prepared.input.clone()),
        reason: Some("no rule allows this call".into()),
    });
    // Closing can race the insert above; check again so the wait cannot outlive the client.
    if p.asks_closed.load(Ordering::SeqCst) {
        p.asks.remove(&request_id);
    }
    tokio::select! {
        biased;
        answer = rx => answer.map_err(|_| (Outcome::Denied, format!("Permission to use {tool} was denied: the client closed its input without answering"))),
        _ = cancel.cancelled() => {
            p.asks.remove(&request_id);
            Err((Outcome::Cancelled, "The call was cancelled while it waited for permission.".into()))
        }
    }
}

async fn recheck_input(
    p: &Pipeline,
    prepared: &Prepared,
    input: Value,
    whose: &str,
) -> Result<Prepared, Early> {
    let checked = p
        .validator
        .recheck(prepared.entry.clone(), input)
        .await
        .map_err(fault)?;
    checked.map_err(|problems| {
        (
            Outcome::Denied,
            format!(
                "The call was blocked: {whose} for {} is invalid:\n- {}",
                prepared.tool_name(),
                problems.join("\n- ")
            ),
        )
    })
}

fn progress_sink(emitter: &Emitter, id: &Arc<str>) -> ProgressSink {
    let emitter = emitter.clone();
    let id = id.clone();
    ProgressSink::new(move |data| {
        emitter.send(ServerMessage::event(
            "progress",
            json!({"tool_use_id": &*id, "data": data}),
        ));
    })
}

fn fault(e: crate::stage::StageFault) -> Early {
    (Outcome::Failed, e.to_string())
}
