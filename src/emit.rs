//! The one way out: every message to the client goes through an [`Emitter`], and one writer
//! task owns stdout.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::protocol::ServerMessage;

/// A cheap, cloneable sender of server messages.
///
/// The channel is unbounded on purpose: what flows through it is bounded by admission (a result
/// and a few events per admitted call, rate-limited progress), and a result must never wait on —
/// or be lost to — a slow reader.
#[derive(Clone, Debug)]
pub struct Emitter {
    tx: mpsc::UnboundedSender<ServerMessage>,
    results: Arc<AtomicU64>,
}

impl Emitter {
    /// A new emitter and the receiving end its messages arrive on.
    pub fn channel() -> (Self, mpsc::UnboundedReceiver<ServerMessage>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Self {
                tx,
                results: Arc::new(AtomicU64::new(0)),
            },
            rx,
        )
    }

    /// Send one message. If the receiver is gone (the client went away) the message is dropped:
    /// there is nobody left to tell.
    pub fn send(&self, msg: ServerMessage) {
        if matches!(msg, ServerMessage::ToolResult(_)) {
            self.results.fetch_add(1, Ordering::Relaxed);
        }
        let _ = self.tx.send(msg);
    }

    /// How many results have been sent so far.
    pub fn results_sent(&self) -> u64 {
        self.results.load(Ordering::Relaxed)
    }
}

/// Writes every message from `rx` to `out` as NDJSON until every [`Emitter`] is dropped or
/// `close` fires (then what is already queued is written, and no more). Flushes whenever the
/// queue runs dry, so a lone result is not held back in a buffer.
pub async fn write_all<W: AsyncWrite + Unpin>(
    mut rx: mpsc::UnboundedReceiver<ServerMessage>,
    out: W,
    mut close: tokio::sync::oneshot::Receiver<()>,
) -> std::io::Result<()> {
    let mut out = tokio::io::BufWriter::with_capacity(64 * 1024, out);
    loop {
        let msg = tokio::select! {
            biased;
            msg = rx.recv() => msg,
            _ = &mut close => {
                while let Ok(more) = rx.try_recv() {
                    out.write_all(&more.to_line()).await?;
                }
                break;
            }
        };
        let Some(msg) = msg else { break };
        out.write_all(&msg.to_line()).await?;
        while let Ok(more) = rx.try_recv() {
            out.write_all(&more.to_line()).await?;
        }
        out.flush().await?;
    }
    out.flush().await
}
