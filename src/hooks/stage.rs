//! The hook stage actor and its typed handle.
//!
//! Hooks run for seconds, so the actor never runs one in its handler: each request becomes a
//! task that runs the [`HookRunner`] and replies. When an event has no hooks configured the
//! handle answers that at once, synchronously: no message hop, no future, nothing moved — "no
//! hooks" costs a branch per call.

use std::future::Future;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{
    BatchCallRecord, HookEvent, HookRunner, PermissionRequestResult, PostBatchResult,
    PostToolResult, PreToolUseResult, ToolHookCall,
};
use crate::call::Input;
use crate::stage::{StageFault, request};

/// The call a tool event is about, owned so it can travel in a message.
pub(crate) struct CallFacts {
    /// The tool (its canonical name, and what `if` filters need to know about it).
    pub tool: Arc<dyn crate::tool::Tool>,
    /// The input (returned with the answer).
    pub input: Input,
    /// The call id.
    pub id: Arc<str>,
    /// The permission mode's wire name.
    pub mode: &'static str,
    /// The call's cancellation.
    pub cancel: CancellationToken,
    /// The agent the call belongs to: its id and type.
    pub agent: Option<(Arc<str>, Arc<str>)>,
}

/// The call a tool event is about, as its supervisor holds it: borrowed, and made into
/// [`CallFacts`] only when a hook will run.
#[derive(Clone, Copy)]
pub(crate) struct About<'a> {
    /// The tool.
    pub tool: &'a Arc<dyn crate::tool::Tool>,
    /// The call id.
    pub id: &'a Arc<str>,
    /// The permission mode's wire name.
    pub mode: &'static str,
    /// The call's cancellation.
    pub cancel: &'a CancellationToken,
    /// The agent the call belongs to (its scope's id and type).
    pub agent: Option<(&'a Arc<str>, &'a Arc<str>)>,
}

impl About<'_> {
    fn facts(self, input: Input) -> CallFacts {
        CallFacts {
            tool: self.tool.clone(),
            input,
            id: self.id.clone(),
            mode: self.mode,
            cancel: self.cancel.clone(),
            agent: self.agent.map(|(id, ty)| (id.clone(), ty.clone())),
        }
    }
}

/// Messages of the hook stage.
pub(crate) enum HookMsg {
    /// PreToolUse.
    Pre(CallFacts, RpcReplyPort<(Input, PreToolUseResult)>),
    /// PermissionRequest.
    Permission(CallFacts, RpcReplyPort<(Input, PermissionRequestResult)>),
    /// PostToolUse (success) with the tool response and duration.
    Post(CallFacts, Value, u64, RpcReplyPort<(Input, PostToolResult)>),
    /// PostToolUseFailure with the error text, whether it was an interrupt, and the duration.
    PostFailure(
        CallFacts,
        String,
        bool,
        u64,
        RpcReplyPort<(Input, PostToolResult)>,
    ),
    /// PermissionDenied with the denial's reason; answers whether a hook allows a retry.
    Denied(CallFacts, String, RpcReplyPort<(Input, bool)>),
    /// PostToolBatch.
    /// PostToolBatch, stopped early by its token (cancelling everything).
    Batch(
        String,
        Vec<BatchCallRecord>,
        &'static str,
        CancellationToken,
        RpcReplyPort<PostBatchResult>,
    ),
}

// A local-only message: ractor's `cluster` feature (ractor_cluster) asks each message type
// to say whether it crosses nodes; this one never does.
impl ractor::Message for HookMsg {}

/// The hook stage actor.
pub(crate) struct HookStageActor;

impl Actor for HookStageActor {
    type Msg = HookMsg;
    type State = Arc<HookRunner>;
    type Arguments = Arc<HookRunner>;

    async fn pre_start(
        &self,
        _me: ActorRef<HookMsg>,
        runner: Arc<HookRunner>,
    ) -> Result<Arc<HookRunner>, ActorProcessingErr> {
        Ok(runner)
    }

    async fn handle(
        &self,
        _me: ActorRef<HookMsg>,
        msg: HookMsg,
        runner: &mut Arc<HookRunner>,
    ) -> Result<(), ActorProcessingErr> {
        let runner = runner.clone();
        tokio::spawn(async move {
            match msg {
                HookMsg::Pre(f, reply) => {
                    let r = runner.pre_tool_use(&call(&f), &f.cancel).await;
                    let _ = reply.send((f.input, r));
                }
                HookMsg::Permission(f, reply) => {
                    let r = runner.permission_request(&call(&f), &f.cancel).await;
                    let _ = reply.send((f.input, r));
                }
                HookMsg::Post(f, response, ms, reply) => {
                    let r = runner
                        .post_tool_use(&call(&f), &response, ms, &f.cancel)
                        .await;
                    let _ = reply.send((f.input, r));
                }
                HookMsg::PostFailure(f, error, interrupt, ms, reply) => {
                    let r = runner
                        .post_tool_use_failure(&call(&f), &error, interrupt, ms, &f.cancel)
                        .await;
                    let _ = reply.send((f.input, r));
                }
                HookMsg::Denied(f, reason, reply) => {
                    let r = runner
                        .permission_denied(&call(&f), &reason, &f.cancel)
                        .await;
                    let _ = reply.send((f.input, r));
                }
                HookMsg::Batch(batch, records, mode, cancel, reply) => {
                    let r = runner
                        .post_tool_batch(&batch, &records, mode, &cancel)
                        .await;
                    let _ = reply.send(r);
                }
            }
        });
        Ok(())
    }
}

fn call(f: &CallFacts) -> ToolHookCall<'_> {
    ToolHookCall {
        tool_name: f.tool.name(),
        access: f.tool.access(),
        tool_input: &f.input,
        tool_use_id: &f.id,
        permission_mode: f.mode,
        agent: f.agent.as_ref().map(|(id, ty)| (&**id, &**ty)),
    }
}

/// Typed handle to the hook stage.
#[derive(Clone)]
pub(crate) struct Hooks {
    actor: Option<ActorRef<HookMsg>>,
    runner: Option<Arc<HookRunner>>,
}

impl Hooks {
    /// A stage with no hooks at all (no actor).
    pub(crate) fn none() -> Self {
        Self {
            actor: None,
            runner: None,
        }
    }

    /// Spawns the stage actor around a runner.
    pub(crate) async fn spawn(runner: Arc<HookRunner>) -> Result<Self, ractor::SpawnErr> {
        let (actor, _) = Actor::spawn(None, HookStageActor, runner.clone()).await?;
        Ok(Self {
            actor: Some(actor),
            runner: Some(runner),
        })
    }

    /// Whether any hook is configured for `event`.
    pub(crate) fn has(&self, event: HookEvent) -> bool {
        self.runner.as_ref().is_some_and(|r| r.config().has(event))
    }

    fn actor(&self) -> Result<&ActorRef<HookMsg>, StageFault> {
        self.actor.as_ref().ok_or(StageFault {
            stage: "hooks",
            why: "no hook stage is running",
        })
    }

    /// PreToolUse hooks for a call: the request to await, or `None` when no PreToolUse hook is
    /// configured. "Nothing to do" is answered here, synchronously: no message, no future, and
    /// the input is not touched. The request lends the input to the stage and puts it back.
    pub(crate) fn pre_tool_use<'a>(
        &'a self,
        about: About<'a>,
        input: &'a mut Input,
    ) -> Option<impl Future<Output = Result<PreToolUseResult, StageFault>> + 'a> {
        if !self.has(HookEvent::PreToolUse) {
            return None;
        }
        Some(self.lend(about, input, HookMsg::Pre))
    }

    /// PermissionRequest hooks for a call, as [`Hooks::pre_tool_use`].
    pub(crate) fn permission_request<'a>(
        &'a self,
        about: About<'a>,
        input: &'a mut Input,
    ) -> Option<impl Future<Output = Result<PermissionRequestResult, StageFault>> + 'a> {
        if !self.has(HookEvent::PermissionRequest) {
            return None;
        }
        Some(self.lend(about, input, HookMsg::Permission))
    }

    /// PermissionDenied hooks for a call, as [`Hooks::pre_tool_use`]; the request answers true
    /// when one allows a retry.
    pub(crate) fn permission_denied<'a>(
        &'a self,
        about: About<'a>,
        input: &'a mut Input,
        reason: String,
    ) -> Option<impl Future<Output = Result<bool, StageFault>> + 'a> {
        if !self.has(HookEvent::PermissionDenied) {
            return None;
        }
        Some(self.lend(about, input, |facts, port| {
            HookMsg::Denied(facts, reason, port)
        }))
    }

    /// Sends the call's input to the stage in the message built by `build` (no copy) and puts
    /// it back with the answer.
    async fn lend<T: Send + 'static>(
        &self,
        about: About<'_>,
        input: &mut Input,
        build: impl FnOnce(CallFacts, RpcReplyPort<(Input, T)>) -> HookMsg,
    ) -> Result<T, StageFault> {
        let facts = about.facts(std::mem::take(input));
        let (back, answer) = request("hooks", self.actor()?, |port| build(facts, port)).await?;
        *input = back;
        Ok(answer)
    }

    /// Runs PostToolUse hooks.
    pub(crate) async fn post_tool_use(
        &self,
        about: About<'_>,
        input: Input,
        response: Value,
        duration_ms: u64,
    ) -> Result<(Input, PostToolResult), StageFault> {
        if !self.has(HookEvent::PostToolUse) {
            return Ok((input, PostToolResult::default()));
        }
        let facts = about.facts(input);
        request("hooks", self.actor()?, |port| {
            HookMsg::Post(facts, response, duration_ms, port)
        })
        .await
    }

    /// Runs PostToolUseFailure hooks.
    pub(crate) async fn post_tool_use_failure(
        &self,
        about: About<'_>,
        input: Input,
        error: String,
        is_interrupt: bool,
        duration_ms: u64,
    ) -> Result<(Input, PostToolResult), StageFault> {
        if !self.has(HookEvent::PostToolUseFailure) {
            return Ok((input, PostToolResult::default()));
        }
        let facts = about.facts(input);
        request("hooks", self.actor()?, |port| {
            HookMsg::PostFailure(facts, error, is_interrupt, duration_ms, port)
        })
        .await
    }

    /// Runs SessionStart hooks (straight on the runner: once per session, no call waits).
    pub(crate) async fn session_start(&self, mode: &'static str) {
        if let Some(r) = &self.runner {
            r.session_start(mode).await;
        }
    }

    /// Runs SessionEnd hooks, then waits at most `grace` for async hooks still running;
    /// `cancel` (cancelling everything: SIGINT) cuts both short.
    pub(crate) async fn session_end(
        &self,
        mode: &'static str,
        grace: std::time::Duration,
        cancel: &CancellationToken,
    ) {
        if let Some(r) = &self.runner {
            r.session_end(mode, cancel).await;
            r.drain_background(grace, cancel).await;
        }
    }

    /// Starts SubagentStart or SubagentStop hooks in the background (never waits).
    pub(crate) fn subagent(
        &self,
        event: HookEvent,
        agent: &crate::hooks::SubagentFacts<'_>,
        mode: &'static str,
    ) {
        if let Some(r) = &self.runner
            && r.config().has(event)
        {
            r.subagent_event(event, agent, mode);
        }
    }

    /// A client named the session (`session` message): later hooks see its ids.
    pub(crate) fn set_session(&self, session_id: Option<String>, transcript_path: Option<String>) {
        if let Some(r) = &self.runner {
            r.set_session(session_id, transcript_path);
        }
    }

    /// Runs PostToolBatch hooks.
    pub(crate) async fn post_tool_batch(
        &self,
        batch: String,
        records: Vec<BatchCallRecord>,
        mode: &'static str,
        cancel: CancellationToken,
    ) -> Result<PostBatchResult, StageFault> {
        if !self.has(HookEvent::PostToolBatch) {
            return Ok(PostBatchResult::default());
        }
        request("hooks", self.actor()?, |port| {
            HookMsg::Batch(batch, records, mode, cancel, port)
        })
        .await
    }

    /// Stops the actor.
    pub(crate) fn stop(&self) {
        if let Some(a) = &self.actor {
            a.stop(None);
        }
    }
}
