//! The per-call supervisor: the only place that knows the stage order.
//!
//! # Order
//! A call's path is a short list of named steps over one call state ([`Call`]), each of the
//! same shape (the pipeline, the call, what the step before produced) and each ending the call
//! with the crate's one [`Rejection`] type when it must:
//!
//! 1. `validate`: resolve → alias → registry → coerce → schema (and, for a lone call, the
//!    tool's own validation);
//! 2. `wait_turn`: a batch call's turn, then the tool's own validation, then an execution slot;
//! 3. `pre_hooks`: PreToolUse hooks;
//! 4. `place`: with worker nodes, the node the call will run on, and its path as that node
//!    resolves it (`place`);
//! 5. `decide`: the permission decision, with the ask loop (PermissionRequest hooks, the
//!    client, back to the decision) in `ask`;
//! 6. `execute`: the tool runs (on the node chosen by `place`, if any);
//! 7. `post_hooks`: PostToolUse / PostToolUseFailure hooks;
//! 8. `shape_output`: the output budget → one `tool_result`.
//!
//! Only what cannot depend on earlier calls of a batch comes before the turn. A stage with
//! nothing to do answers that itself (no hooks configured, an output clearly within budget), so
//! the steps message every stage unconditionally.
//!
//! One supervisor is [`spawn`]ed per call, as a task of its own. It messages the long-lived stage
//! actors through their typed handles, never lets a stage call the next, and owns the call's
//! [`ResultSlot`], so even its own failure still answers the call.

mod ask;
mod batch;
mod clock;
mod network;
mod pipeline;
mod place;
mod validating;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::future::Either;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub(crate) use batch::{BatchLink, Gate, batch_records, end_batch};
pub use clock::{Stage, StageClock};
pub(crate) use network::ask_network;
pub use pipeline::AskPolicy;
pub(crate) use pipeline::{Pipeline, PipelineOptions, Stages};
use validating::{own_validation, recheck_input, validate};

use crate::call::{Input, Outcome, Rejection, ToolCall, ToolResult};
use crate::execute::{RemoteEnd, RunTerms};
use crate::hooks::stage::About;
use crate::hooks::{BatchCallRecord, HookEvent, HookPermission};
use crate::inflight::ResultSlot;
use crate::permission::{HookVerdict, Mode};
use crate::protocol::ServerMessage;
use crate::scope::Scope;
use crate::slots::ExecSlot;
use crate::tool::{BudgetClass, ProgressSink, StateKey, Tool, ToolContext, ToolOutput, ToolStatus};
use crate::validate::Prepared;
use clock::Lap;

/// How long a cancelled tool gets to stop by itself before its call is answered `cancelled`
/// without waiting further.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// One call's job.
pub(crate) struct Job {
    /// The call.
    pub call: ToolCall,
    /// Its one result.
    pub slot: ResultSlot,
    /// Cancelled with the call, its batch, its scope (a child of the scope's token), or the
    /// server.
    pub cancel: CancellationToken,
    /// The live scope the call's `agent_id` named when it was accepted (None: no `agent_id`,
    /// or an agent that was unknown or had ended then, which is answered `denied`).
    pub scope: Option<Arc<Scope>>,
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
pub(crate) fn spawn(job: Job) {
    // Boxed, whole: the call's state machine is large, and a task moves its future when it is
    // spawned and again when it finishes; boxed, the task holds a pointer and the state is
    // copied once, into the box.
    tokio::spawn(Box::pin(run(job)));
}

/// One call as it is driven: who it is, and what it gathers on the way.
pub(super) struct Call<'a> {
    id: &'a Arc<str>,
    cancel: &'a CancellationToken,
    batch: Option<&'a BatchLink>,
    gate: Option<Gate>,
    /// Hooks' additional context and feedback, added beside whatever the result is.
    notes: Vec<String>,
    lap: Lap<'a>,
    /// The call's scope (its `agent_id`), which execution slots are shared across.
    agent: Option<Arc<str>>,
    /// The execution slot, once taken (given back while the client is asked).
    slot: Option<ExecSlot>,
    /// What PreToolUse hooks said of the permission, and an ask's reason.
    hook: Option<HookVerdict>,
    hook_reason: Option<String>,
    /// The agent scope the call belongs to (its `agent_id`), resolved once.
    scope: Option<Arc<Scope>>,
    /// The worker node the call will run on, once placed.
    node: Option<Box<place::OnNode>>,
}

impl Call<'_> {
    /// Who the call is, for a hook event about it.
    fn about<'t>(&'t self, p: &Pipeline, tool: &'t Arc<dyn Tool>) -> About<'t> {
        About {
            tool,
            id: self.id,
            mode: mode_name(self.mode(p)),
            cancel: self.cancel,
            agent: self.scope.as_ref().map(|s| (&s.id, &s.agent_type)),
        }
    }

    /// Whose tool state the call uses: its scope's, else the session's.
    fn state(&self) -> StateKey {
        self.scope
            .as_ref()
            .map_or(StateKey::SESSION, |s| s.state_key())
    }

    /// The mode the call is decided in: its scope's, else the session's.
    fn mode(&self, p: &Pipeline) -> Mode {
        self.scope.as_ref().map_or(p.mode, |s| s.mode())
    }

    /// Fails with `cancelled` once the call was cancelled.
    fn check_cancelled(&self) -> Result<(), Rejection> {
        if self.cancel.is_cancelled() {
            return Err(Rejection::cancelled());
        }
        Ok(())
    }

    /// Takes an execution slot (`--max-in-flight`, and the scope's own limit; in turn with
    /// other scopes' calls), unless the call is cancelled first.
    async fn take_slot(&mut self, p: &Pipeline) -> Result<(), Rejection> {
        // A scoped call's limit comes from its scope, resolved at acceptance: no lookup.
        let acquire = match &self.scope {
            Some(s) => Either::Left(p.exec_slots.acquire_limited(&s.id, s.max_in_flight)),
            None => Either::Right(p.exec_slots.acquire(self.agent.as_ref())),
        };
        let slot = tokio::select! {
            biased;
            slot = acquire => Some(slot),
            _ = self.cancel.cancelled() => None,
        };
        self.slot = Some(slot.ok_or_else(Rejection::cancelled)?);
        Ok(())
    }
}

/// Drives one call through every stage.
///
/// A plain function returning a block, not an `async fn`: an `async fn` keeps each argument
/// twice in its future (as passed, and bound inside), and the call's future is moved whole.
/// (The steps below stay `async fn`s: written this way they measured slower.)
pub(crate) fn run(job: Job) -> impl Future<Output = ()> + Send {
    let Job {
        call,
        slot,
        cancel,
        scope,
        gate,
        batch,
        pipeline,
    } = job;
    let id = slot.id().clone();
    // A `tool_use` is a batch of one: with PostToolBatch hooks, a batch link of its own.
    let lone = batch
        .is_none()
        .then(|| batch::lone_batch(&pipeline))
        .flatten();
    let is_lone = lone.is_some();
    let batch = batch.or(lone);
    async move {
        // In a block of its own, so that nothing of the call is kept across the lone call's
        // PostToolBatch hooks (a variable alive there would grow every call's future).
        let lone_end = {
            let span = tracing::debug_span!("call", id = %id, tool = %call.name);
            let trace = (pipeline.tracer.as_ref())
                .map(|t| t.begin(&call.name, &id, call.agent_id.as_ref(), slot.started()));
            let mut c = Call {
                id: &id,
                cancel: &cancel,
                batch: batch.as_ref(),
                gate,
                notes: Vec::new(),
                lap: Lap::new(
                    pipeline.clock.as_ref(),
                    pipeline.debug_log,
                    trace,
                    slot.started(),
                ),
                agent: call.agent_id.clone(),
                slot: None,
                hook: None,
                hook_reason: None,
                scope,
                node: None,
            };
            // Without a subscriber for the span (debug logging off), the call's future is not
            // wrapped: the wrapper is one more move of the whole future, and one more step in
            // every poll.
            let result = if span.is_disabled() {
                drive(&pipeline, &mut c, call).await
            } else {
                Box::pin(drive(&pipeline, &mut c, call).instrument(span.clone())).await
            };
            c.lap.end_trace(&result);
            let mut result = result.unwrap_or_else(|rejection| {
                ToolResult::new("", rejection.outcome, rejection.content)
            });
            tracing::debug!(parent: &span, outcome = result.outcome.as_str(), stages = %c.lap.summary(), "call finished");
            // Hooks' additional context and feedback go beside whatever the result is.
            for note in c.notes {
                result.content.push_str("\n\n");
                result.content.push_str(&note);
            }
            if is_lone {
                // Boxed, with the result and its slot: the common path's future does not grow.
                // The call's own token: cancelling everything (SIGINT) stops these hooks too.
                Some(Box::pin(batch::end_lone_call(
                    pipeline, id, batch, result, slot, cancel,
                )))
            } else {
                slot.emit(result);
                None
            }
        };
        if let Some(end) = lone_end {
            end.await;
        }
    }
}

/// The call's path, step by step (the module docs say what each does).
async fn drive(p: &Pipeline, c: &mut Call<'_>, call: ToolCall) -> Result<ToolResult, Rejection> {
    tracing::debug!(batch_index = c.batch.map(|b| b.index), "call started");
    let checked = validate(p, c, call).await?;
    let mut prepared = wait_turn(p, c, checked).await?;
    pre_hooks(p, c, &mut prepared).await?;
    if p.placement.is_some() {
        Box::pin(place::place(p, c, &mut prepared)).await?;
    }
    ask::decide(p, c, &mut prepared).await?;
    let mut ran = match execute(p, c, prepared).await? {
        Executed::Ran(ran) => ran,
        // It did not run on its worker node: once more, placed and decided afresh.
        Executed::Again(prepared, redo) => Box::pin(again(p, c, *prepared, redo)).await?,
    };
    post_hooks(p, c, &mut ran).await?;
    shape_output(p, c, ran).await
}

/// The validate stage's verdict on a call, kept for its turn when it is part of a batch.
type Checked = Result<Prepared, Rejection>;

/// A batch call waits for its turn: what it does may depend on every earlier call that is not
/// concurrency-safe. A call refused before its turn runs nothing, so it takes its turn as a
/// concurrency-safe call would: it is answered then, never before such an earlier call has
/// finished. At its turn the tool's own validation looks at the files as they are now. Then
/// the call takes an execution slot.
async fn wait_turn(
    p: &Pipeline,
    c: &mut Call<'_>,
    checked: Checked,
) -> Result<Prepared, Rejection> {
    let prepared = match c.gate.take() {
        None => checked.inspect_err(|_| c.lap.ended_in(Stage::Validate))?,
        // Boxed, as every rarer way of a step: its state is then not part of every call's
        // future, which is built and moved for each call.
        Some(gate) => Box::pin(take_turn(p, c, gate, checked)).await?,
    };
    c.lap.restart();
    c.take_slot(p).await?;
    c.lap.mark(Stage::Slot);
    Ok(prepared)
}

/// A batch call's turn, then the tool's own validation.
async fn take_turn(
    p: &Pipeline,
    c: &mut Call<'_>,
    Gate { ready, go }: Gate,
    checked: Checked,
) -> Result<Prepared, Rejection> {
    let _ = ready.send(checked.as_ref().map_or(true, |c| c.concurrency_safe));
    tokio::select! {
        biased;
        r = go => r.map_err(|_| Rejection::cancelled())?,
        _ = c.cancel.cancelled() => return Err(Rejection::cancelled()),
    }
    let checked = checked.inspect_err(|_| c.lap.ended_in(Stage::Validate))?;
    c.lap.restart();
    let prepared = own_validation(p, c, checked).await?;
    let prepared = prepared.inspect_err(|_| c.lap.ended_in(Stage::Validate))?;
    c.lap.mark(Stage::Validate);
    Ok(prepared)
}

/// PreToolUse hooks: they may add context, stop, deny, defer, ask, allow, or rewrite the input
/// (which is then checked again).
async fn pre_hooks(
    p: &Pipeline,
    c: &mut Call<'_>,
    prepared: &mut Prepared,
) -> Result<(), Rejection> {
    let Prepared { entry, input, .. } = &mut *prepared;
    let Some(request) = p.hooks.pre_tool_use(c.about(p, &entry.tool), input) else {
        c.lap.mark(Stage::PreHooks);
        return Ok(());
    };
    let pre = Box::pin(request).await?;
    c.check_cancelled()?;
    c.notes.extend(pre.additional_context);
    if let Some(reason) = pre.stop {
        return Err(stopped(p, c, "PreToolUse", reason));
    }
    let tool = &prepared.entry.name;
    match pre.permission {
        Some(HookPermission::Deny) => {
            let reason = pre.reason.unwrap_or_else(|| {
                format!("Permission to use {tool} was denied by a PreToolUse hook")
            });
            return Err(Rejection::new(Outcome::Denied, reason));
        }
        Some(HookPermission::Defer) => {
            let why = pre.reason.map(|r| format!(" ({r})")).unwrap_or_default();
            return Err(Rejection::new(
                Outcome::Deferred,
                format!("A PreToolUse hook deferred this call; it did not run{why}."),
            ));
        }
        Some(HookPermission::Ask) => {
            c.hook = Some(HookVerdict::Ask);
            c.hook_reason = pre.reason;
        }
        Some(HookPermission::Allow) => c.hook = Some(HookVerdict::Allow),
        None => {}
    }
    if let Some(updated) = pre.updated_input {
        let whose = format!(
            "the input rewritten by the PreToolUse hook `{}`",
            updated.hook
        );
        let recheck = recheck_input(p, c, prepared, Value::Object(updated.input), &whose);
        *prepared = Box::pin(recheck).await?;
    }
    c.lap.mark(Stage::PreHooks);
    Ok(())
}

/// A call that has run: its output, and what the post hooks and the budget need.
struct Ran {
    tool: Arc<dyn Tool>,
    name: Arc<str>,
    class: BudgetClass,
    output: ToolOutput,
    /// The input it ran with, kept only when post hooks or PostToolBatch hooks will see it.
    input: Option<Input>,
    /// How long the tool took, for PostToolUse hooks.
    duration_ms: u64,
    /// The worker node it ran on, when not here.
    node: Option<Arc<str>>,
}

/// Runs the tool. A cancel gives the tool a moment to stop and report; after that the call is
/// answered `cancelled` without it.
async fn execute(
    p: &Pipeline,
    c: &mut Call<'_>,
    prepared: Prepared,
) -> Result<Executed, Rejection> {
    let post_hooks =
        p.hooks.has(HookEvent::PostToolUse) || p.hooks.has(HookEvent::PostToolUseFailure);
    let batch_hooks = c.batch.is_some_and(|b| b.records.is_some());
    let input = (post_hooks || batch_hooks).then(|| prepared.input.clone());
    let tool = prepared.entry.tool.clone();
    let name = prepared.entry.name.clone();
    let class = tool.budget_class();
    let ctx = ToolContext {
        tool_use_id: c.id.clone(),
        cancel: c.cancel.clone(),
        progress: ProgressSink::to(p.progress.clone(), c.id.clone()),
        session: (c.scope.as_ref())
            .map_or_else(|| p.session.clone(), |s| s.tool_session(&p.session)),
        agent: c.scope.as_ref().map(|s| s.id.clone()),
        state: c.state(),
        hook_response: post_hooks,
        decided_paths: prepared.decided_paths.clone(),
        output_chars: p.budget.success_limit(&name, class),
    };
    // Only PostToolUse hooks are told how long the tool took.
    let started = post_hooks.then(Instant::now);
    // With worker nodes, the execute step (and it alone) runs on the node `place` chose.
    let mut node = None;
    let mut back = None;
    let run = match c.node.take() {
        Some(on) => {
            node = Some(on.lease.node().clone());
            // Only a search consults Read deny rules where it runs (it leaves out what they hide).
            let searches = matches!(
                tool.access().subject,
                crate::tool::Subject::Path {
                    default_cwd: true,
                    ..
                }
            );
            let expect = on.at.as_ref().map_or_else(Vec::new, |at| at.named.clone());
            // Kept to place and decide again, should the node find its answers out of date or
            // be lost before the call reaches it.
            back = Some(Box::new(prepared.clone()));
            let terms = RunTerms { searches, expect };
            let remote = on.lease.run(&name, prepared.input, ctx, terms);
            Either::Right(futures::FutureExt::map(remote, Ok))
        }
        None if tool.awaits_io_only() => {
            let here = crate::execute::run_here(tool.clone(), prepared.input, ctx);
            Either::Left(Either::Left(futures::FutureExt::map(here, |out| {
                Ok::<_, crate::stage::StageFault>(RemoteEnd::Ran(out))
            })))
        }
        None => {
            let here = p.executor.run(tool.clone(), prepared.input, ctx);
            Either::Left(Either::Right(futures::FutureExt::map(here, |out| {
                out.map(RemoteEnd::Ran)
            })))
        }
    };
    tokio::pin!(run);
    let ended = tokio::select! {
        biased;
        out = &mut run => out?,
        _ = c.cancel.cancelled() => match Box::pin(tokio::time::timeout(CANCEL_GRACE, &mut run)).await {
            Ok(out) => out?,
            Err(_) => return Err(Rejection::new(Outcome::Cancelled, "The call was cancelled while it ran; the tool did not stop in time and its output was discarded.")),
        },
    };
    let mut output = match (ended, back) {
        (RemoteEnd::Ran(output), _) => output,
        (RemoteEnd::Stale(path), Some(prepared)) => {
            return Ok(Executed::Again(prepared, Redo::Stale(path)));
        }
        (RemoteEnd::NotSent(why), Some(prepared)) => {
            return Ok(Executed::Again(prepared, Redo::NodeLost(why)));
        }
        // Only a remote run ends without running, and its call is always kept.
        (RemoteEnd::Stale(_) | RemoteEnd::NotSent(_), None) => {
            ToolOutput::failed("The call's node did not run it.")
        }
    };
    c.lap.mark(Stage::Execute);
    c.slot = None;
    if c.cancel.is_cancelled() && output.status != ToolStatus::Success {
        output.status = ToolStatus::Cancelled;
    }
    Ok(Executed::Ran(Ran {
        tool,
        name,
        class,
        output,
        input,
        duration_ms: started.map_or(0, |t| t.elapsed().as_millis() as u64),
        node,
    }))
}

/// How the execute step ends.
#[expect(
    clippy::large_enum_variant,
    reason = "every call ends `Ran`; boxing it would cost each an allocation for a rare other way"
)]
enum Executed {
    /// The tool ran (or could not, as its output says).
    Ran(Ran),
    /// Nothing ran, and the call (kept here) is to be placed and decided again.
    Again(Box<Prepared>, Redo),
}

/// Why a call that did not run on its worker node is placed and decided again.
enum Redo {
    /// The node found that this path, which the permission decision looked at, resolves
    /// differently now (a symlink changed since the node said what it resolves to).
    Stale(PathBuf),
    /// The node was lost before the call was sent to it (why, in words): another node that
    /// offers the tool may take it, decided about that node's files.
    NodeLost(String),
}

/// The call placed, decided and run again after it did not run on its node (`redo` says why);
/// a second time fails it.
async fn again(
    p: &Pipeline,
    c: &mut Call<'_>,
    mut prepared: Prepared,
    redo: Redo,
) -> Result<Ran, Rejection> {
    place::place(p, c, &mut prepared)
        .await
        .map_err(|mut none| {
            if let Redo::NodeLost(lost) = &redo {
                none.content =
                    format!("{lost} No other node could take the call: {}", none.content);
            }
            none
        })?;
    ask::decide(p, c, &mut prepared).await?;
    match execute(p, c, prepared).await? {
        Executed::Ran(ran) => Ok(ran),
        Executed::Again(_, Redo::Stale(path)) => Err(Rejection::new(
            Outcome::Failed,
            format!(
                "What {} resolves to on the worker node changed twice while the call was being \
                 decided (a symlink on the way is being changed); nothing ran.",
                path.display()
            ),
        )),
        Executed::Again(_, Redo::NodeLost(why)) => Err(Rejection::new(Outcome::Failed, why)),
    }
}

/// PostToolUse hooks after a success, PostToolUseFailure hooks after a failure (none after a
/// cancellation); then the call's record for its batch's PostToolBatch hooks.
async fn post_hooks(p: &Pipeline, c: &mut Call<'_>, ran: &mut Ran) -> Result<(), Rejection> {
    if let Some(input) = ran.input.take() {
        Box::pin(post_hooks_run(p, c, ran, input)).await?;
    }
    c.lap.mark(Stage::PostHooks);
    Ok(())
}

/// [`post_hooks`] for a call whose input was kept for them.
async fn post_hooks_run(
    p: &Pipeline,
    c: &mut Call<'_>,
    ran: &mut Ran,
    input: Input,
) -> Result<(), Rejection> {
    let output = &mut ran.output;
    // The tool's own description of the run, else its text.
    let described = output.response.take();
    let about = c.about(p, &ran.tool);
    let post = match output.status {
        ToolStatus::Success => {
            let response = described.unwrap_or_else(|| Value::String(output.content.clone()));
            let hooks = p
                .hooks
                .post_tool_use(about, input, response, ran.duration_ms);
            hooks.await?
        }
        ToolStatus::Failed | ToolStatus::TimedOut => {
            let error = match described {
                Some(Value::String(error)) => error,
                _ => output.content.clone(),
            };
            let hooks = p
                .hooks
                .post_tool_use_failure(about, input, error, false, ran.duration_ms);
            hooks.await?
        }
        ToolStatus::Cancelled => (input, Default::default()),
    };
    let (input, post) = post;
    if let Some(updated) = post.updated_output {
        output.content = updated;
    }
    c.notes.extend(post.feedback);
    if let Some(link) = c.batch.filter(|b| b.records.is_some()) {
        // As the reference CLI does, a PostToolBatch hook is given each call's result as the
        // model sees it (after a PostToolUse hook's `updatedToolOutput`).
        link.record(BatchCallRecord {
            tool_name: ran.name.to_string(),
            tool_input: Value::Object(input),
            tool_use_id: c.id.to_string(),
            tool_response: Value::String(output.content.clone()),
        });
    }
    if let Some(reason) = post.stop {
        return Err(stopped(p, c, "PostToolUse", reason));
    }
    Ok(())
}

/// The output budget: the output inline, or cut with the whole of it in a file.
async fn shape_output(p: &Pipeline, c: &mut Call<'_>, ran: Ran) -> Result<ToolResult, Rejection> {
    let Ran {
        output,
        class,
        name,
        node,
        ..
    } = ran;
    let shaped = match p.budget.shape_inline(output, class, &name) {
        Ok(shaped) => shaped,
        Err(output) => Box::pin(p.budget.shape(c.id.clone(), *output, class, name)).await?,
    };
    c.lap.mark(Stage::Budget);
    // The slot fills in the id.
    let mut result = ToolResult::new("", shaped.outcome, shaped.content);
    result.output_file = shaped.output_file;
    result.node = node;
    if let Some(att) = shaped.attachments {
        let att = *att;
        result.content_blocks = (!att.blocks.is_empty()).then_some(att.blocks);
        result.structured_content = att.structured;
    }
    Ok(result)
}

/// The wire name of a mode, for hook input.
pub(crate) fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Default => "default",
        Mode::AcceptEdits => "acceptEdits",
        Mode::Plan => "plan",
        Mode::DontAsk => "dontAsk",
        Mode::BypassPermissions => "bypassPermissions",
    }
}

/// A hook stopped processing: tell the client, and start nothing more of this batch.
fn stopped(p: &Pipeline, c: &Call<'_>, event: &str, reason: String) -> Rejection {
    p.emitter.send(ServerMessage::event(
        "stop",
        json!({"tool_use_id": &**c.id, "reason": reason}),
    ));
    if let Some(link) = c.batch {
        link.stop.store(true, Ordering::SeqCst);
    }
    // The stop reason is for the client, not the model.
    Rejection::new(
        Outcome::Stopped,
        format!("Processing was stopped by a {event} hook."),
    )
}

/// Lends the call's input to a stage request: it travels in the message (no copy) and comes
/// back with the answer.
async fn lend<T, F>(input: &mut Input, request: impl FnOnce(Input) -> F) -> Result<T, Rejection>
where
    F: Future<Output = Result<(Input, T), crate::stage::StageFault>>,
{
    let (back, answer) = request(std::mem::take(input)).await?;
    *input = back;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future `f` returns, without calling it.
    fn future_size<A, F: Future>(_: impl FnOnce(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// Every call's future is built, moved and copied as a whole (docs/BENCH.md, "The named
    /// steps"): what a change adds to it, every call pays. A step's rare ways are boxed for
    /// that reason; this pins the sizes so that a change that grows them does so on purpose.
    #[test]
    fn the_call_future_does_not_grow_unnoticed() {
        let sizes = [
            // 3,048 since the execute step may place the call on a worker node (the node's
            // name kept for the result, one more way to run a tool); 3,088 since the `place`
            // step runs before the decision and the decision's query carries the call's path
            // as its worker resolved it (measured with that step, the client-wait counter and
            // mcp-serve's direct reply together; the 40 bytes are not yet split among them);
            // 3,096 since a remote run may end without running (its node found a path the
            // decision looked at resolving differently): the call kept to decide again, boxed;
            // 3,208 since the paths a decision judged travel with the call to its tool (16
            // bytes in the prepared call and in the tool's context, each held in several steps);
            // 2,176 since `run` and the execute stage's `run` are plain functions returning a
            // block (an `async fn` keeps its arguments twice) and a tool runs on the call's own
            // task without a second block around it; 2,184 since a lone call (a `tool_use`)
            // runs PostToolBatch hooks after it (the boxed step's pointer, kept across them).
            ("run's future", future_size(run), 2_184),
            // 224: the worker node the call is placed on (one boxed pointer).
            ("Call", std::mem::size_of::<Call<'static>>(), 224),
        ];
        for (what, size, limit) in sizes {
            assert!(
                size <= limit,
                "{what} is {size} bytes, over {limit}: {sizes:?}"
            );
        }
    }
}
