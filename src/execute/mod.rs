//! Execute stage: runs a tool's `call` on its own task, so a slow tool never blocks the stage,
//! and turns a panic into a `failed` output so the call still gets its one result.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

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

impl Actor for ExecuteActor {
    type Msg = ExecuteMsg;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _me: ActorRef<ExecuteMsg>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(
        &self,
        _me: ActorRef<ExecuteMsg>,
        msg: ExecuteMsg,
        _: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        let ExecuteMsg::Run {
            tool,
            input,
            ctx,
            reply,
        } = msg;
        tokio::spawn(async move {
            let name = tool.name().to_string();
            let output = match AssertUnwindSafe(tool.call(input, ctx)).catch_unwind().await {
                Ok(output) => output,
                Err(panic) => ToolOutput::failed(format!(
                    "The {name} tool failed with an internal error: {}",
                    panic_message(&panic)
                )),
            };
            let _ = reply.send(output);
        });
        Ok(())
    }
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
