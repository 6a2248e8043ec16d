//! The per-call supervisor: the only place that knows the stage order.
//!
//! # Order
//! resolve → alias → registry → coerce → schema → (a batch call's turn) → the tool's own
//! validation (validate stage) → PreToolUse hooks → permission (→ permission_request → back to
//! the decision) → execute → PostToolUse / PostToolUseFailure hooks → output budget → one
//! `tool_result`. Only what cannot depend on earlier calls of the batch comes before the turn.
//!
//! One supervisor is [`spawn`]ed per call, as a task of its own. It messages the long-lived stage
//! actors through their typed handles, never lets a stage call the next, and owns the call's
//! [`ResultSlot`], so even its own failure still answers the call.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot, watch};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::budget::Budget;
use crate::call::{Input, Outcome, ToolCall, ToolResult};
use crate::dispatch::slot::ResultSlot;
use crate::emit::Emitter;
use crate::execute::Executor;
use crate::hooks::stage::CallFacts;
use crate::hooks::{BatchCallRecord, HookEvent, HookPermission, Hooks, PermissionRequestDecision};
use crate::permission::{Behavior, DecidedBy, HookVerdict, Mode, Permission, Query};
use crate::protocol::{PermissionResponse, ServerMessage};
use crate::session::Session;
use crate::tool::{ProgressSink, Tool, ToolContext, ToolStatus};
use crate::validate::{Checks, Prepared, Validator};

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
    /// Where tools' progress updates go (the way out, as `progress` events).
    pub progress: Arc<dyn crate::tool::ProgressTarget>,
    /// Execution slots (`--max-in-flight`).
    pub exec_slots: Arc<Semaphore>,
    /// The permission mode in force.
    pub mode: Mode,
    /// What an ask becomes.
    pub ask_policy: AskPolicy,
    /// Where stage timings go, when someone measures (`toolrt bench`); None costs one branch.
    pub clock: Option<Arc<dyn StageClock>>,
    /// Whether debug logging was on when the pipeline was built: each call then logs its stage
    /// timings. Decided once, so a call without it pays one branch.
    pub debug_log: bool,
    asks: DashMap<String, oneshot::Sender<PermissionResponse>>,
    asks_closed: AtomicBool,
    ask_seq: AtomicU64,
    /// How many calls wait for an answer only the client can give (a permission response). The
    /// server's reader never stops reading input while this is above zero.
    client_waits: watch::Sender<usize>,
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
            progress: Arc::new(emitter.clone()),
            emitter,
            exec_slots: Arc::new(Semaphore::new(max_in_flight.max(1))),
            mode,
            ask_policy,
            asks: DashMap::new(),
            asks_closed: AtomicBool::new(false),
            ask_seq: AtomicU64::new(1),
            client_waits: watch::Sender::new(0),
            clock: None,
            debug_log: tracing::enabled!(tracing::Level::DEBUG),
        }
    }

    /// How many calls wait for the client's answer right now.
    pub fn client_waits(&self) -> usize {
        *self.client_waits.borrow()
    }

    /// Watches [`Pipeline::client_waits`].
    pub fn watch_client_waits(&self) -> watch::Receiver<usize> {
        self.client_waits.subscribe()
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

    /// Gives back what a burst of asks grew (for when nothing is in flight).
    pub fn shrink(&self) {
        self.asks.shrink_to_fit();
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

/// The parts of a call's life that [`StageClock`] measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// From admission until the supervisor starts (spawn and scheduling).
    Queue,
    /// The validate stage.
    Validate,
    /// Waiting for an execution slot.
    Slot,
    /// PreToolUse hooks.
    PreHooks,
    /// The permission decision (without time waiting for a client's answer).
    Permission,
    /// The execute stage.
    Execute,
    /// PostToolUse / PostToolUseFailure hooks.
    PostHooks,
    /// The output budget.
    Budget,
}

impl Stage {
    /// Every stage, in pipeline order.
    pub const ALL: [Stage; 8] = [
        Stage::Queue,
        Stage::Validate,
        Stage::Slot,
        Stage::PreHooks,
        Stage::Permission,
        Stage::Execute,
        Stage::PostHooks,
        Stage::Budget,
    ];

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Queue => "queue",
            Stage::Validate => "validate",
            Stage::Slot => "slot",
            Stage::PreHooks => "pre_hooks",
            Stage::Permission => "permission",
            Stage::Execute => "execute",
            Stage::PostHooks => "post_hooks",
            Stage::Budget => "budget",
        }
    }
}

/// Receives how long each stage of each call took (benchmarks).
pub trait StageClock: Send + Sync {
    /// One measurement.
    fn record(&self, stage: Stage, nanos: u64);
}

/// Times stages when a clock is set (benchmarks) or debug logging is on.
struct Lap<'a> {
    clock: Option<&'a dyn StageClock>,
    /// Nanoseconds per stage the call went through, for its debug line (`TOOLRT_LOG=debug`);
    /// boxed so a call without it carries one word.
    debug: Option<Box<[Option<u64>; Stage::ALL.len()]>>,
    last: Option<std::time::Instant>,
}

impl<'a> Lap<'a> {
    fn new(clock: Option<&'a Arc<dyn StageClock>>, debug: bool, since: std::time::Instant) -> Self {
        let clock = clock.map(|c| &**c);
        Self {
            clock,
            last: (clock.is_some() || debug).then_some(since),
            debug: debug.then(|| Box::new([None; Stage::ALL.len()])),
        }
    }

    /// Ends `stage` now and starts the next one.
    fn mark(&mut self, stage: Stage) {
        if let Some(last) = self.last {
            let now = std::time::Instant::now();
            let nanos = (now - last).as_nanos() as u64;
            if let Some(clock) = self.clock {
                clock.record(stage, nanos);
            }
            if let Some(times) = self.debug.as_mut() {
                *times[stage as usize].get_or_insert(0) += nanos;
            }
            self.last = Some(now);
        }
    }

    /// Restarts timing now (after a wait that belongs to no stage).
    fn restart(&mut self) {
        if self.last.is_some() {
            self.last = Some(std::time::Instant::now());
        }
    }

    /// The stage timings for the call's debug line: `validate=12.3µs slot=0.1µs …` (stages
    /// the call did not reach are left out).
    fn summary(&self) -> String {
        let Some(times) = &self.debug else {
            return String::new();
        };
        let mut out = String::new();
        for (stage, nanos) in Stage::ALL.iter().zip(times.iter()) {
            if let Some(nanos) = nanos {
                out.push_str(&format!(
                    "{}={:.1}µs ",
                    stage.name(),
                    *nanos as f64 / 1000.0
                ));
            }
        }
        out.pop();
        out
    }
}

/// Where a call of a batch waits for its turn.
pub struct Gate {
    /// Tells the batch runner whether the call is concurrency-safe; a call refused before its
    /// turn counts as safe (it runs nothing). Dropped: cancelled before its turn.
    pub ready: oneshot::Sender<bool>,
    /// Fires when the call may run.
    pub go: oneshot::Receiver<()>,
}

/// Finished calls of a batch with their position, for PostToolBatch hooks.
pub type BatchRecords = Arc<Mutex<Vec<(usize, BatchCallRecord)>>>;

/// What a call shares with the rest of its batch.
pub struct BatchLink {
    /// Set when a hook stops processing: the batch starts nothing more.
    pub stop: Arc<AtomicBool>,
    /// The call's position in the batch.
    pub index: usize,
    /// Where finished calls leave their record for PostToolBatch hooks (when configured).
    pub records: Option<BatchRecords>,
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
    /// Batch-wide state, if the call is part of a multi-call batch.
    pub batch: Option<BatchLink>,
    /// The stages.
    pub pipeline: Arc<Pipeline>,
}

/// Starts the supervisor of one call: a task of its own that drives the call through every
/// stage and answers it.
///
/// The supervisor is a lightweight actor rather than a ractor actor. It owns the call's state,
/// talks to the stages only by message, and its one inbox is the call's cancellation token, so
/// a ractor mailbox (four channels, a few kilobytes per call) would be built for nothing. With
/// a thousand calls in flight that memory is what the cache misses on: a task instead of a
/// ractor actor doubled throughput at 1,000 in flight (ARCHITECTURE.md, "Choices").
///
/// A panic inside the supervisor ends its task; dropping the job then drops its
/// [`ResultSlot`], which answers the call `failed`.
pub fn spawn(job: Job) {
    tokio::spawn(run(job));
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
        batch,
        pipeline,
    } = job;
    let id = slot.id().clone();
    let span = tracing::debug_span!("call", id = %id, tool = %call.name);
    let mut notes = Vec::new();
    let since = slot.started();
    let scope = Scope {
        id: &id,
        cancel: &cancel,
        batch: batch.as_ref(),
    };
    // Boxed: the pipeline's state machine is large; unboxed, it would be copied into the task
    // at spawn and every call would cost about 1.5 µs more.
    let mut lap = Lap::new(pipeline.clock.as_ref(), pipeline.debug_log, since);
    let result = Box::pin(drive(&pipeline, call, scope, gate, &mut notes, &mut lap))
        .instrument(span.clone())
        .await;
    let mut result = match result {
        Ok(result) => result,
        Err((outcome, content)) => ToolResult::new(String::new(), outcome, content),
    };
    tracing::debug!(parent: &span, outcome = result.outcome.as_str(), stages = %lap.summary(), "call finished");
    // Hooks' additional context and feedback go beside whatever the result is.
    for note in notes {
        result.content.push_str("\n\n");
        result.content.push_str(&note);
    }
    slot.emit(result);
}

/// The wire name of a mode, for hook input.
pub fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Default => "default",
        Mode::AcceptEdits => "acceptEdits",
        Mode::Plan => "plan",
        Mode::DontAsk => "dontAsk",
        Mode::BypassPermissions => "bypassPermissions",
    }
}

fn facts(
    p: &Pipeline,
    tool: &Arc<dyn Tool>,
    input: Input,
    id: &Arc<str>,
    cancel: &CancellationToken,
) -> CallFacts {
    CallFacts {
        tool: tool.clone(),
        input,
        id: id.clone(),
        mode: mode_name(p.mode),
        cancel: cancel.clone(),
    }
}

/// A hook stopped processing: tell the client, and start nothing more of this batch.
fn stopped(
    p: &Pipeline,
    id: &Arc<str>,
    batch: Option<&BatchLink>,
    event: &str,
    reason: String,
) -> Early {
    p.emitter.send(ServerMessage::event(
        "stop",
        json!({"tool_use_id": &**id, "reason": reason}),
    ));
    if let Some(link) = batch {
        link.stop.store(true, Ordering::SeqCst);
    }
    // The stop reason is for the client, not the model.
    (
        Outcome::Stopped,
        format!("Processing was stopped by a {event} hook."),
    )
}

/// Who a call is, while it is driven.
#[derive(Clone, Copy)]
struct Scope<'a> {
    id: &'a Arc<str>,
    cancel: &'a CancellationToken,
    batch: Option<&'a BatchLink>,
}

async fn drive(
    p: &Pipeline,
    call: ToolCall,
    scope: Scope<'_>,
    gate: Option<Gate>,
    notes: &mut Vec<String>,
    lap: &mut Lap<'_>,
) -> Result<ToolResult, Early> {
    let Scope { id, cancel, batch } = scope;
    tracing::debug!(batch_index = batch.map(|b| b.index), "call started");
    let cancelled = || {
        (
            Outcome::Cancelled,
            "The call was cancelled before it ran.".to_string(),
        )
    };
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    lap.mark(Stage::Queue);
    // Validate stage, in two halves for a call of a batch: what cannot depend on the calls before
    // it (the tool exists, coercion, schema, concurrency-safety) before its turn, and the tool's
    // own validation (read-before-edit, freshness, Edit's match count, task ids) at its turn,
    // after every earlier call it could depend on. A lone call has nothing to wait for and takes
    // both halves in one request. Validation is short and never waits on anything outside
    // toolrt, so a cancel is looked at when it is done rather than raced against it.
    let checks = if gate.is_some() {
        Checks::Input
    } else {
        Checks::All
    };
    let checked = p.validator.prepare(call, checks).await.map_err(fault)?;
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    lap.mark(Stage::Validate);

    // Batch order: wait for our turn. A call refused above runs nothing, so it takes its turn
    // as a concurrency-safe call would: it is answered then, never before an earlier call that
    // is not concurrency-safe has finished.
    let mut prepared = match gate {
        None => checked.map_err(|rej| (rej.outcome, rej.content))?,
        Some(Gate { ready, go }) => {
            let _ = ready.send(checked.as_ref().map_or(true, |c| c.concurrency_safe));
            tokio::select! {
                biased;
                r = go => if r.is_err() { return Err(cancelled()) },
                _ = cancel.cancelled() => return Err(cancelled()),
            }
            let checked = checked.map_err(|rej| (rej.outcome, rej.content))?;
            lap.restart();
            let (prepared, verdict) = p.validator.validate(checked).await.map_err(fault)?;
            verdict.map_err(|rej| (rej.outcome, rej.content))?;
            lap.mark(Stage::Validate);
            prepared
        }
    };

    lap.restart();
    let mut slot_permit = acquire_slot(p, cancel).await.ok_or_else(cancelled)?;
    lap.mark(Stage::Slot);
    let tool = prepared.entry.name.clone();
    // The tool itself travels to the hook and permission stages: rules ask it what its calls
    // act on.
    let runs = prepared.entry.tool.clone();

    // PreToolUse hooks.
    let mut hook_verdict = None;
    let mut hook_ask_reason = None;
    if p.hooks.has(HookEvent::PreToolUse) {
        let pre = lend(&mut prepared.input, |input| {
            p.hooks.pre_tool_use(facts(p, &runs, input, id, cancel))
        })
        .await?;
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        notes.extend(pre.additional_context);
        if let Some(reason) = pre.stop {
            return Err(stopped(p, id, batch, "PreToolUse", reason));
        }
        match pre.permission {
            Some(HookPermission::Deny) => {
                return Err((
                    Outcome::Denied,
                    pre.reason.unwrap_or_else(|| {
                        format!("Permission to use {tool} was denied by a PreToolUse hook")
                    }),
                ));
            }
            Some(HookPermission::Defer) => {
                let why = pre.reason.map(|r| format!(" ({r})")).unwrap_or_default();
                return Err((
                    Outcome::Deferred,
                    format!("A PreToolUse hook deferred this call; it did not run{why}."),
                ));
            }
            Some(HookPermission::Ask) => {
                hook_verdict = Some(HookVerdict::Ask);
                hook_ask_reason = pre.reason;
            }
            Some(HookPermission::Allow) => hook_verdict = Some(HookVerdict::Allow),
            None => {}
        }
        if let Some(updated) = pre.updated_input {
            prepared = recheck_input(
                p,
                &prepared,
                Value::Object(updated.input),
                &format!(
                    "the input rewritten by the PreToolUse hook `{}`",
                    updated.hook
                ),
            )
            .await?;
        }
    }

    lap.mark(Stage::PreHooks);

    // Permission stage; an ask goes to PermissionRequest hooks, then the client, and back.
    let mut rounds = 0;
    let mut recheck = false;
    loop {
        let decision = lend(&mut prepared.input, |input| {
            p.permission.decide(Query {
                tool: runs.clone(),
                input,
                mode: p.mode,
                hook: hook_verdict.clone(),
                recheck,
            })
        })
        .await?;
        tracing::debug!(
            decision = decision.behavior.as_str(),
            by = %decision.reason(),
            "permission decided"
        );
        match decision.behavior {
            Behavior::Allow => break,
            Behavior::Deny => {
                let message = decision.message(&tool);
                return Err(
                    permission_denied(p, &runs, &mut prepared.input, id, cancel, message).await,
                );
            }
            Behavior::Ask => {
                rounds += 1;
                if rounds > MAX_ASK_ROUNDS {
                    return Err((
                        Outcome::Denied,
                        format!(
                            "{} (asked {MAX_ASK_ROUNDS} times already)",
                            decision.message(&tool)
                        ),
                    ));
                }
                if p.hooks.has(HookEvent::PermissionRequest) {
                    let answer = lend(&mut prepared.input, |input| {
                        p.hooks
                            .permission_request(facts(p, &runs, input, id, cancel))
                    })
                    .await?;
                    if let Some(reason) = answer.stop {
                        return Err(stopped(p, id, batch, "PermissionRequest", reason));
                    }
                    match answer.decision {
                        Some(PermissionRequestDecision::Allow {
                            updated_input: None,
                        }) => break,
                        Some(PermissionRequestDecision::Allow {
                            updated_input: Some(updated),
                        }) => {
                            prepared = recheck_input(
                                p,
                                &prepared,
                                Value::Object(updated),
                                "the input rewritten by a PermissionRequest hook",
                            )
                            .await?;
                            recheck = true;
                            continue;
                        }
                        Some(PermissionRequestDecision::Deny { message }) => {
                            return Err((Outcome::Denied, message.unwrap_or_else(|| format!("Permission to use {tool} was denied by a PermissionRequest hook"))));
                        }
                        None => {}
                    }
                }
                if p.ask_policy == AskPolicy::Deny {
                    let message = format!(
                        "{} (no one can approve it in this session)",
                        decision.message(&tool)
                    );
                    return Err(permission_denied(
                        p,
                        &runs,
                        &mut prepared.input,
                        id,
                        cancel,
                        message,
                    )
                    .await);
                }
                // Waiting holds no execution slot.
                drop(slot_permit);
                // A hook's ask carries its own reason to the client.
                let reason = match (&decision.decided_by, &hook_ask_reason) {
                    (DecidedBy::Hook { .. }, Some(r)) => r.clone(),
                    _ => decision.message(&tool),
                };
                let answer = ask_client(p, id, &tool, &prepared, cancel, reason).await?;
                lap.restart();
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

    lap.mark(Stage::Permission);

    // Execute stage.
    let post_hooks =
        p.hooks.has(HookEvent::PostToolUse) || p.hooks.has(HookEvent::PostToolUseFailure);
    let records = batch.and_then(|b| b.records.as_ref().map(|r| (b.index, r)));
    let kept_input = if post_hooks || records.is_some() {
        Some(prepared.input.clone())
    } else {
        None
    };
    // Only PostToolUse hooks are told how long the tool took.
    let started = post_hooks.then(std::time::Instant::now);
    let class = prepared.entry.tool.budget_class();
    let ctx = ToolContext {
        tool_use_id: id.clone(),
        cancel: cancel.clone(),
        progress: ProgressSink::to(p.progress.clone(), id.clone()),
        session: p.session.clone(),
        hook_response: post_hooks,
        output_chars: p.budget.success_limit(&tool, class),
    };
    let run = p
        .executor
        .run(prepared.entry.tool.clone(), prepared.input, ctx);
    tokio::pin!(run);
    let mut output = tokio::select! {
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
    lap.mark(Stage::Execute);
    drop(slot_permit);
    let duration_ms = started.map_or(0, |t| t.elapsed().as_millis() as u64);
    if cancel.is_cancelled() && output.status != ToolStatus::Success {
        output.status = ToolStatus::Cancelled;
    }

    // PostToolUse / PostToolUseFailure hooks (not on cancellation).
    if let Some(input) = kept_input {
        // The tool's own description of the run, else its text.
        let described = output.response.take();
        let post = match output.status {
            ToolStatus::Success if p.hooks.has(HookEvent::PostToolUse) => Some(
                p.hooks
                    .post_tool_use(
                        facts(p, &runs, input.clone(), id, cancel),
                        described.unwrap_or_else(|| Value::String(output.content.clone())),
                        duration_ms,
                    )
                    .await
                    .map_err(fault)?
                    .1,
            ),
            ToolStatus::Failed | ToolStatus::TimedOut
                if p.hooks.has(HookEvent::PostToolUseFailure) =>
            {
                let error = match described {
                    Some(Value::String(error)) => error,
                    _ => output.content.clone(),
                };
                Some(
                    p.hooks
                        .post_tool_use_failure(
                            facts(p, &runs, input.clone(), id, cancel),
                            error,
                            false,
                            duration_ms,
                        )
                        .await
                        .map_err(fault)?
                        .1,
                )
            }
            _ => None,
        };
        let mut stop = None;
        if let Some(post) = post {
            if let Some(updated) = post.updated_output {
                output.content = updated;
            }
            notes.extend(post.feedback);
            stop = post.stop;
        }
        if let Some((index, records)) = records {
            // As the reference CLI does, a PostToolBatch hook is given each call's result as
            // the model sees it (after a PostToolUse hook's `updatedToolOutput`).
            let record = BatchCallRecord {
                tool_name: tool.to_string(),
                tool_input: Value::Object(input),
                tool_use_id: id.to_string(),
                tool_response: Value::String(output.content.clone()),
            };
            records
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((index, record));
        }
        if let Some(reason) = stop {
            return Err(stopped(p, id, batch, "PostToolUse", reason));
        }
    }

    lap.mark(Stage::PostHooks);

    // Output budget.
    let shaped = p
        .budget
        .shape(id.clone(), output, class, tool.clone())
        .await
        .map_err(fault)?;
    lap.mark(Stage::Budget);
    // The slot fills in the id.
    let mut result = ToolResult::new(String::new(), shaped.outcome, shaped.content);
    result.output_file = shaped.output_file;
    if let Some(att) = shaped.attachments {
        let att = *att;
        result.content_blocks = (!att.blocks.is_empty()).then_some(att.blocks);
        result.structured_content = att.structured;
    }
    Ok(result)
}

/// The permission decision denied the call: PermissionDenied hooks hear of it (one of them may
/// say the call can be retried), and the call ends `denied` with `message`.
async fn permission_denied(
    p: &Pipeline,
    tool: &Arc<dyn Tool>,
    input: &mut Input,
    id: &Arc<str>,
    cancel: &CancellationToken,
    mut message: String,
) -> Early {
    if p.hooks.has(HookEvent::PermissionDenied) {
        let reason = message.clone();
        let retry = lend(input, |input| {
            p.hooks
                .permission_denied(facts(p, tool, input, id, cancel), reason)
        })
        .await;
        match retry {
            Ok(true) => message.push_str(
                "\n\nA PermissionDenied hook says this call may be retried if the user asked for it.",
            ),
            Ok(false) => {}
            Err(fault) => return fault,
        }
    }
    (Outcome::Denied, message)
}

/// Lends the call's input to a stage request: it travels in the message (no copy) and comes
/// back with the answer.
async fn lend<T, F>(input: &mut Input, request: impl FnOnce(Input) -> F) -> Result<T, Early>
where
    F: Future<Output = Result<(Input, T), crate::stage::StageFault>>,
{
    let (back, answer) = request(std::mem::take(input)).await.map_err(fault)?;
    *input = back;
    Ok(answer)
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
    reason: String,
) -> Result<PermissionResponse, Early> {
    // Even when no answer can come any more the request is sent: the client learns what would
    // have needed approval.
    let request_id = format!("perm-{}", p.ask_seq.fetch_add(1, Ordering::Relaxed));
    let _waiting = ClientWait::new(&p.client_waits);
    let (tx, rx) = oneshot::channel();
    p.asks.insert(request_id.clone(), tx);
    p.emitter.send(ServerMessage::PermissionRequest {
        request_id: request_id.clone(),
        tool_use_id: id.to_string(),
        tool_name: tool.to_string(),
        input: Value::Object(prepared.input.clone()),
        reason: Some(reason),
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

/// Counts a call as waiting for the client while it lives.
struct ClientWait<'a>(&'a watch::Sender<usize>);

impl<'a> ClientWait<'a> {
    fn new(waits: &'a watch::Sender<usize>) -> Self {
        waits.send_modify(|n| *n += 1);
        Self(waits)
    }
}

impl Drop for ClientWait<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
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

fn fault(e: crate::stage::StageFault) -> Early {
    (Outcome::Failed, e.to_string())
}
