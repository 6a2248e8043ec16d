//! What every stage actor shares: how the supervisor calls it and what a fault looks like.
//!
//! A stage is a long-lived ractor actor with a message enum whose requests carry an
//! [`RpcReplyPort`]. Expected rejections travel back inside the reply as values; a
//! [`StageFault`] means the stage itself is gone (stopped, panicked, dropped the reply), and the
//! supervisor turns it into a `failed` result so the call still gets its one answer.

use ractor::{ActorRef, Message, RpcReplyPort};

/// A stage could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("internal error: the {stage} stage did not answer ({why})")]
pub struct StageFault {
    /// Which stage.
    pub stage: &'static str,
    /// What went wrong.
    pub why: &'static str,
}

/// Sends a request built by `build` to `actor` and awaits the reply. No timer: stages answer or
/// drop the port, and a dropped port is a fault.
pub async fn request<M, R>(
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
