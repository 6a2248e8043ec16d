//! The stdio transport of `toolrt mcp-serve`: rmcp's newline-delimited JSON-RPC over the two
//! pipes, with backpressure. rmcp reads every line as it comes and spawns a task per request
//! and per response write, so a client that writes without reading made toolrt's memory grow
//! with every unread answer. Here reading pends while `bound` requests are unanswered (read,
//! their response not yet written out): a client that stops reading stops being read, as in
//! `serve`. The one exception is the one `serve` makes: while toolrt waits for the client (an
//! `elicitation/create` it has not answered), its answer may be behind the requests, so reading
//! goes on and a request past the bound is refused at once (-32000, "busy") instead.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientNotification, ErrorCode, ErrorData, JsonRpcMessage, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::Notify;

/// The fewest unanswered requests reading pends at; a session allowing more calls in flight
/// gets its `max_in_flight` instead, so admission, not this, limits its concurrency.
pub(super) const MIN_BOUND: usize = 256;

/// JSON-RPC's implementation-defined server error: a request refused while toolrt is full.
const BUSY: ErrorCode = ErrorCode(-32000);

type Sending = Pin<Box<dyn Future<Output = Result<(), std::io::Error>> + Send>>;

/// What the reader and the writes share.
#[derive(Default)]
struct Counts {
    /// The client's requests read and not yet answered (their response not fully written).
    unanswered: HashSet<RequestId>,
    /// toolrt's requests to the client (elicitations) it has not answered.
    asked: HashSet<RequestId>,
}

struct State {
    counts: Mutex<Counts>,
    /// Woken when a request is answered or toolrt starts waiting for the client.
    changed: Notify,
    bound: usize,
}

impl State {
    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether reading must wait: the bound is reached and the client owes toolrt nothing.
    fn full(&self) -> bool {
        let c = self.counts();
        c.unanswered.len() >= self.bound && c.asked.is_empty()
    }
}

/// An rmcp transport bounding the requests it has read and not answered (see the module).
pub(super) struct Bounded<T> {
    inner: T,
    state: Arc<State>,
    /// A busy error being written; kept here because `receive` may be dropped mid-write (rmcp
    /// polls it in a `select!`).
    refusing: Option<Sending>,
    /// Called once when the client closes its input.
    on_eof: Option<Box<dyn FnOnce() + Send>>,
}

impl<T> Bounded<T> {
    pub(super) fn new(inner: T, bound: usize, on_eof: impl FnOnce() + Send + 'static) -> Self {
        Self {
            inner,
            state: Arc::new(State {
                counts: Mutex::default(),
                changed: Notify::new(),
                bound: bound.max(1),
            }),
            refusing: None,
            on_eof: Some(Box::new(on_eof)),
        }
    }
}

impl<T> Transport<RoleServer> for Bounded<T>
where
    T: Transport<RoleServer, Error = std::io::Error>,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            JsonRpcMessage::Request(r) => {
                // Counted from now: the client may answer before the write's future ends.
                self.state.counts().asked.insert(r.id.clone());
                self.state.changed.notify_waiters();
                None
            }
            JsonRpcMessage::Notification(_) => {
                if let Some(id) = cancelled_request(&item) {
                    self.state.counts().asked.remove(&id);
                }
                None
            }
        };
        let send = self.inner.send(item);
        let state = self.state.clone();
        async move {
            let sent = send.await;
            // Written or failed (the client is gone): either way it no longer waits here.
            if let Some(id) = answered
                && state.counts().unanswered.remove(&id)
            {
                state.changed.notify_waiters();
            }
            sent
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if let Some(refusing) = self.refusing.as_mut() {
                let _ = refusing.await;
                self.refusing = None;
            }
            loop {
                let changed = self.state.changed.notified();
                tokio::pin!(changed);
                changed.as_mut().enable();
                if !self.state.full() {
                    break;
                }
                changed.await;
            }
            let Some(message) = self.inner.receive().await else {
                if let Some(on_eof) = self.on_eof.take() {
                    on_eof();
                }
                return None;
            };
            let mut counts = self.state.counts();
            match &message {
                JsonRpcMessage::Request(r) => {
                    if counts.unanswered.len() >= self.state.bound {
                        drop(counts);
                        self.refusing = Some(Box::pin(self.inner.send(busy(r.id.clone()))));
                        continue;
                    }
                    counts.unanswered.insert(r.id.clone());
                }
                JsonRpcMessage::Response(r) => {
                    counts.asked.remove(&r.id);
                }
                JsonRpcMessage::Error(e) => {
                    if let Some(id) = &e.id {
                        counts.asked.remove(id);
                    }
                }
                JsonRpcMessage::Notification(n) => {
                    // rmcp sends no response for a cancelled request.
                    if let ClientNotification::CancelledNotification(c) = &n.notification
                        && let Some(id) = &c.params.request_id
                    {
                        counts.unanswered.remove(id);
                    }
                }
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// The request a `notifications/cancelled` toolrt sends names (an elicitation given up on).
fn cancelled_request(item: &TxJsonRpcMessage<RoleServer>) -> Option<RequestId> {
    let JsonRpcMessage::Notification(n) = item else {
        return None;
    };
    match &n.notification {
        rmcp::model::ServerNotification::CancelledNotification(c) => c.params.request_id.clone(),
        _ => None,
    }
}

fn busy(id: RequestId) -> TxJsonRpcMessage<RoleServer> {
    JsonRpcMessage::error(
        ErrorData::new(
            BUSY,
            "toolrt mcp-serve is busy: too many requests are unanswered while it waits for the client's answer to an elicitation; send the request again once answers come back",
            None,
        ),
        Some(id),
    )
}
