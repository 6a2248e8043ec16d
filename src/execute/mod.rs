//! Execute stage: runs a tool's `call`; one that does not finish on its first poll moves to its
//! own task, so a slow tool never blocks the stage. A panic becomes a `failed` output, so the
//! call still gets its one result.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

mod placement;

pub(crate) use placement::{Lease, Placement, RemoteEnd, RemoteRun, Resolving, RunTerms};

use crate::call::Input;
use crate::stage::{StageFault, request};
use crate::tool::{Tool, ToolContext, ToolOutput};

/// Messages of the execute stage.
pub(crate) enum ExecuteMsg {
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

// A local-only message: ractor's `cluster` feature (ractor_cluster) asks each message type
// to say whether it crosses nodes; this one never does.
impl ractor::Message for ExecuteMsg {}

/// The execute stage actor.
pub(crate) struct ExecuteActor;

/// Whether tools get their first poll on the stage's own task: true on a current-thread runtime,
/// where a task of its own would buy a tool no parallelism, only a spawn and a wake-up.
pub(crate) struct ExecuteState {
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
        // The future owns its tool, so it can move to a task of its own if it has to.
        let running = Box::pin(run_here(tool, input, ctx));
        crate::stage::finish_here_or_on_task(running, state.first_poll_here, move |output| {
            let _ = reply.send(output);
        })
        .await;
        Ok(())
    }
}

/// Runs a call on the caller's own task, without the stage's hop: for tools that only await
/// I/O (an MCP tool awaits its server), where the hop buys nothing. A panic still becomes a
/// `failed` output, whether it comes from `call` itself (before any future exists) or from the
/// future; `call` runs inside the first poll.
///
/// A plain function returning a block, not an `async fn`: an `async fn` keeps each argument
/// twice in its future (as passed, and bound inside), and every call's future is moved whole.
#[expect(
    clippy::manual_async_fn,
    reason = "an `async fn` would keep its arguments twice in the future (see above)"
)]
pub(crate) fn run_here(
    tool: Arc<dyn Tool>,
    input: Input,
    ctx: ToolContext,
) -> impl Future<Output = ToolOutput> + Send {
    async move {
        let result = match std::panic::catch_unwind(AssertUnwindSafe(|| tool.call(input, ctx))) {
            Ok(running) => AssertUnwindSafe(running).catch_unwind().await,
            Err(panic) => Err(panic),
        };
        output_of(&*tool, result)
    }
}

/// A tool's output, or a `failed` one naming the panic that ended it.
fn output_of(tool: &dyn Tool, result: std::thread::Result<ToolOutput>) -> ToolOutput {
    result.unwrap_or_else(|panic| {
        ToolOutput::failed(format!(
            "The {} tool failed with an internal error: {}",
            tool.name(),
            panic_message(&*panic)
        ))
    })
}

/// The text of a panic payload.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
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
pub(crate) struct Executor {
    actor: ActorRef<ExecuteMsg>,
}

impl Executor {
    /// Spawns the stage actor.
    pub(crate) async fn spawn() -> Result<(Self, tokio::task::JoinHandle<()>), ractor::SpawnErr> {
        let (actor, handle) = Actor::spawn(None, ExecuteActor, ()).await?;
        Ok((Self { actor }, handle))
    }

    /// Runs a call and returns its output. (Not an `async fn`, for the reason [`run_here`]
    /// gives.)
    pub(crate) fn run(
        &self,
        tool: Arc<dyn Tool>,
        input: Input,
        ctx: ToolContext,
    ) -> impl Future<Output = Result<ToolOutput, StageFault>> + Send + '_ {
        request("execute", &self.actor, |reply| ExecuteMsg::Run {
            tool,
            input,
            ctx,
            reply,
        })
    }

    /// Stops the actor.
    pub(crate) fn stop(&self) {
        self.actor.stop(None);
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;

    use serde_json::{Value, json};
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::session::Session;
    use crate::tool::{ProgressSink, ToolStatus};

    /// Panics as its input says: inside its first poll, or in `call` itself before any future
    /// exists (possible for a hand-written `call`); otherwise yields once, then succeeds.
    struct Unruly;

    impl Tool for Unruly {
        fn name(&self) -> &str {
            "Unruly"
        }

        fn description(&self) -> &str {
            "test tool"
        }

        fn input_schema(&self) -> Value {
            json!({"type": "object"})
        }

        // Written out as `#[async_trait]` expands it, so that it can panic before any future.
        fn call<'life0, 'async_trait>(
            &'life0 self,
            input: Input,
            _ctx: ToolContext,
        ) -> Pin<Box<dyn Future<Output = ToolOutput> + Send + 'async_trait>>
        where
            'life0: 'async_trait,
            Self: 'async_trait,
        {
            if input.contains_key("panic_in_call") {
                panic!("before any future");
            }
            Box::pin(async move {
                if input.contains_key("panic_in_poll") {
                    panic!("in the first poll");
                }
                tokio::task::yield_now().await;
                ToolOutput::success("done")
            })
        }
    }

    fn ctx() -> ToolContext {
        ToolContext {
            tool_use_id: Arc::from("t"),
            cancel: CancellationToken::new(),
            progress: ProgressSink::discard(),
            session: Arc::new(Session::new(std::env::temp_dir(), std::env::temp_dir())),
            agent: None,
            state: crate::tool::StateKey::SESSION,
            hook_response: false,
            decided_paths: None,
            output_chars: 50_000,
        }
    }

    async fn run(executor: &Executor, input: Value) -> ToolOutput {
        let Value::Object(input) = input else {
            panic!("an object")
        };
        executor
            .run(Arc::new(Unruly), input, ctx())
            .await
            .expect("the stage answers")
    }

    async fn panics_fail_the_call_and_spare_the_stage() {
        let (executor, _) = Executor::spawn().await.expect("stage starts");
        for (input, why) in [
            (json!({"panic_in_call": true}), "before any future"),
            (json!({"panic_in_poll": true}), "in the first poll"),
        ] {
            let out = run(&executor, input).await;
            assert_eq!(out.status, ToolStatus::Failed);
            assert_eq!(
                out.content,
                format!("The Unruly tool failed with an internal error: panicked: {why}")
            );
        }
        // Still serving, and a tool that is not done on its first poll completes.
        let out = run(&executor, json!({})).await;
        assert_eq!(
            (out.status, out.content.as_str()),
            (ToolStatus::Success, "done")
        );
        executor.stop();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn on_one_thread() {
        panics_fail_the_call_and_spare_the_stage().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn on_two_threads() {
        panics_fail_the_call_and_spare_the_stage().await;
    }
}
