//! What every stage actor shares: how the supervisor calls it and what a fault looks like.
//!
//! A stage is a long-lived ractor actor with a message enum whose requests carry an
//! [`RpcReplyPort`]. Expected rejections travel back inside the reply as values; a
//! [`StageFault`] means the stage itself is gone (stopped, panicked, dropped the reply), and the
//! supervisor turns it into a `failed` result so the call still gets its one answer.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;

use futures::FutureExt;
use ractor::{ActorRef, Message, RpcReplyPort};

/// A stage could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("internal error: the {stage} stage did not answer ({why})")]
pub(crate) struct StageFault {
    /// Which stage.
    pub stage: &'static str,
    /// What went wrong.
    pub why: &'static str,
}

/// A stage that cannot answer fails the call (`failed`), which still gets its one result.
impl From<StageFault> for crate::call::Rejection {
    fn from(fault: StageFault) -> Self {
        crate::call::Rejection::new(crate::call::Outcome::Failed, fault.to_string())
    }
}

/// Sends a request built by `build` to `actor` and awaits the reply. No timer: stages answer or
/// drop the port, and a dropped port is a fault.
pub(crate) async fn request<M, R>(
    stage: &'static str,
    actor: &ActorRef<M>,
    build: impl FnOnce(RpcReplyPort<R>) -> M,
) -> Result<R, StageFault>
where
    M: Message,
    R: Send + 'static,
{
    let (tx, rx) = tokio::sync::oneshot::channel();
    actor
        .send_message(build(RpcReplyPort::from(tx)))
        .map_err(|_| StageFault {
            stage,
            why: "its mailbox is closed",
        })?;
    rx.await.map_err(|_| StageFault {
        stage,
        why: "it dropped the request",
    })
}

/// Work a stage runs for a call, owning everything it needs so it can move to a task.
pub(crate) type Work<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Runs `work` for a stage actor and hands its output to `reply`: with `first_poll_here`, the
/// first poll happens here, in the actor's handler, and work done by then (the common case: a
/// no-op, a validation that needs no file) is answered without a task; anything not done then
/// finishes on a task of its own, so the actor is free for the next message at once. A future
/// that was not done has registered this handler's waker; that wake-up is spurious and harmless
/// once its own task has polled it again.
pub(crate) async fn finish_here_or_on_task<T: Send + 'static>(
    mut work: Work<T>,
    first_poll_here: bool,
    reply: impl FnOnce(T) + Send + 'static,
) {
    if first_poll_here
        && let Poll::Ready(output) = poll_fn(|cx| Poll::Ready(work.poll_unpin(cx))).await
    {
        reply(output);
        return;
    }
    tokio::spawn(async move { reply(work.await) });
}
