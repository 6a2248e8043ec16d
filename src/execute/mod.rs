//! Execute stage: runs a tool's `call`; one that does not finish on its first poll moves to its
//! own task, so a slow tool never blocks the stage. A panic becomes a `failed` output, so the
//! call still gets its one result.

use std::future::poll_fn;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

use futures::FutureExt;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::call::Input;
use crate::stage::{StageFault, request};
use crate::tool::{Tool, ToolContext, ToolOutput};

/// Messages of the execute stage.
pub enum ExecuteMsg {
    /// Run one call.
    Run {
        /// The tool.
        tool: Arc<dyn Tool>,
        /// Its input.
        input: Input,
        /// Its context (cancellation, progress, session).
        ctx: ToolContext,
        /// Where the output goes.
        reply: RpcReplyPort<ToolOutput>,
    },
}

/// The execute stage actor.
pub struct ExecuteActor;

/// Whether tools get their first poll on the stage's own task: true on a current-thread runtime,
/// where a task of its own would buy a tool no parallelism, only a spawn and a wake-up.
pub struct ExecuteState {
    first_poll_here: bool,
}

impl Actor for ExecuteActor {
    type Msg = ExecuteMsg;
    type State = ExecuteState;
    type Arguments = ();

    async fn pre_start(
        &self,
        _me: ActorRef<ExecuteMsg>,
        _: (),
    ) -> Result<ExecuteState, ActorProcessingErr> {
        let flavor = tokio::runtime::Handle::current().runtime_flavor();
        Ok(ExecuteState {
            first_poll_here: flavor == tokio::runtime::RuntimeFlavor::CurrentThread,
        })
    }

    async fn handle(
        &self,
        _me: ActorRef<ExecuteMsg>,
        msg: ExecuteMsg,
        state: &mut ExecuteState,
    ) -> Result<(), ActorProcessingErr> {
        let ExecuteMsg::Run {
            tool,
            input,
            ctx,
            reply,
        } = msg;
        // The future owns its tool, so it can move to a task of its own if it has to; `call`
        // itself runs inside the first poll, so even a panic before its future exists is caught.
        let owner = tool.clone();
        let mut running =
            Box::pin(AssertUnwindSafe(async move { owner.call(input, ctx).await }).catch_unwind());
        if state.first_poll_here {
            // Quick tools finish on their first poll and are answered without a task. A tool
            // that is not done has registered this actor's waker; that wake-up is spurious and
            // harmless once its own task has polled it again.
            if let Poll::Ready(result) = poll_fn(|cx| Poll::Ready(running.poll_unpin(cx))).await {
                let _ = reply.send(output_of(&*tool, result));
                return Ok(());
            }
        }
        tokio::spawn(async move {
            let result = running.await;
            let _ = reply.send(output_of(&*tool, result));
        });
        Ok(())
    }
}

/// A tool's output, or a `failed` one naming the panic that ended it.
fn output_of(tool: &dyn Tool, result: std::thread::Result<ToolOutput>) -> ToolOutput {
    result.unwrap_or_else(|panic| {
        ToolOutput::failed(format!(
            "The {} tool failed with an internal error: {}",
            tool.name(),
            panic_message(&panic)
        ))
    })
}

/// The text of a panic payload.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = panic.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".into()
    }
}

/// Typed handle to the execute stage.
#[derive(Clone)]
pub struct Executor {
    actor: ActorRef<ExecuteMsg>,
}

impl Executor {
    /// Spawns the stage actor.
    pub async fn spawn() -> Result<(Self, tokio::task::JoinHandle<()>), ractor::SpawnErr> {
        let (actor, handle) = Actor::spawn(None, ExecuteActor, ()).await?;
        Ok((Self { actor }, handle))
    }

    /// Runs a call and returns its output.
    pub async fn run(
        &self,
        tool: Arc<dyn Tool>,
        input: Input,
        ctx: ToolContext,
    ) -> Result<ToolOutput, StageFault> {
        request("execute", &self.actor, |reply| ExecuteMsg::Run {
            tool,
            input,
            ctx,
            reply,
        })
        .await
    }

    /// Stops the actor.
    pub fn stop(&self) {
        self.actor.stop(None);
    }
}
