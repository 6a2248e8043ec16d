//! The calls in flight and the one-shot right to answer each: the structural guarantee of
//! exactly one result per accepted call. The dispatcher registers and admits calls here; the
//! supervisor answers them through their [`ResultSlot`]; both import this module, and it
//! imports neither.
//!
//! A slot is created when a call is accepted and moves with the call (dispatcher → parked queue
//! or batch runner → supervisor). [`ResultSlot::emit`] consumes it; if it is dropped unused — a
//! panic, a dropped message, a stage that died — its `Drop` emits a `failed` result with the
//! reason.
//!
//! Every accepted call has its own entry, with a sequence number: whatever refers to a call
//! later holds that entry, never the id, and the slot frees the id only if it still names its
//! own call.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use dashmap::DashMap;
use tokio::sync::{OwnedSemaphorePermit, oneshot};
use tokio_util::sync::CancellationToken;

use crate::call::{Outcome, ToolResult};
use crate::emit::Emitter;
use crate::protocol::ServerMessage;

/// One accepted call, from acceptance until its result is out.
pub(crate) struct CallEntry {
    /// Tells this call from any other that used or will use the same id.
    pub(crate) seq: u64,
    pub(crate) cancel: CancellationToken,
    /// The slot of a call that has not started yet, so a cancel can answer it at once.
    pub(crate) queued: Mutex<Option<ResultSlot>>,
}

impl CallEntry {
    pub(crate) fn take_queued(&self) -> Option<ResultSlot> {
        self.queued.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    pub(crate) fn is_queued(&self) -> bool {
        self.queued
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }
}

/// A call that has not started, held by whatever will start it (the parked queue, a batch
/// runner). If that is dropped before the call starts (a panic), the queued slot is dropped with
/// it and answers `failed`, so the call still gets its one result.
pub(crate) struct Pending(pub(crate) Arc<CallEntry>);

impl Drop for Pending {
    fn drop(&mut self) {
        drop(self.0.take_queued());
    }
}

/// A batch in flight.
pub(crate) struct BatchEntry {
    pub(crate) seq: u64,
    pub(crate) cancel: CancellationToken,
    pub(crate) calls: Vec<Arc<CallEntry>>,
}

/// The calls and batches in flight, by id.
#[derive(Default)]
pub(crate) struct InFlight {
    pub(crate) calls: DashMap<Arc<str>, Arc<CallEntry>>,
    pub(crate) batches: DashMap<String, BatchEntry>,
    seq: AtomicU64,
}

impl InFlight {
    /// Frees `id` for reuse, if it still names the call `seq`.
    pub(crate) fn release(&self, id: &str, seq: u64) {
        self.calls.remove_if(id, |_, e| e.seq == seq);
    }

    pub(crate) fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }
}

/// The one-shot right to answer a call.
pub(crate) struct ResultSlot {
    id: Arc<str>,
    /// Which call of those that used this id (the registry frees the id only for this one).
    seq: u64,
    started: Instant,
    emitter: Emitter,
    active: Arc<InFlight>,
    done: Option<oneshot::Sender<()>>,
    admission: Option<OwnedSemaphorePermit>,
    /// The call's `agent_id`, which its result echoes.
    agent: Option<Arc<str>>,
    /// Where the result goes when a caller in this process waits for it (`toolrt mcp-serve`)
    /// instead of reading the outbox.
    reply: Option<oneshot::Sender<ToolResult>>,
    emitted: bool,
}

impl ResultSlot {
    pub(crate) fn new(
        id: Arc<str>,
        seq: u64,
        emitter: Emitter,
        active: Arc<InFlight>,
        admission: Option<OwnedSemaphorePermit>,
        agent: Option<Arc<str>>,
    ) -> Self {
        Self {
            id,
            seq,
            started: Instant::now(),
            emitter,
            active,
            done: None,
            admission,
            agent,
            reply: None,
            emitted: false,
        }
    }

    /// Sends the result to `reply` instead of the outbox.
    pub(crate) fn reply_to(&mut self, reply: oneshot::Sender<ToolResult>) {
        self.reply = Some(reply);
    }

    /// The call id.
    pub(crate) fn id(&self) -> &Arc<str> {
        &self.id
    }

    /// When the call was admitted.
    pub(crate) fn started(&self) -> Instant {
        self.started
    }

    /// Milliseconds since admission.
    pub(crate) fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Gives the slot its admission place (parked calls get theirs when admitted, batch calls
    /// when they start).
    pub(crate) fn set_admission(&mut self, permit: Option<OwnedSemaphorePermit>) {
        self.admission = permit;
    }

    /// A receiver that completes when this slot has emitted (or was dropped).
    pub(crate) fn on_done(&mut self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.done = Some(tx);
        rx
    }

    /// Emits the result; `tool_use_id` (when empty), `is_error`, `duration_ms` and `agent_id`
    /// are filled in here, so a result always answers the slot's call.
    pub(crate) fn emit(mut self, mut result: ToolResult) {
        if result.tool_use_id.as_str() != &*self.id {
            result.tool_use_id = self.id.to_string();
        }
        result.is_error = result.outcome.is_error();
        result.duration_ms = Some(self.elapsed_ms());
        self.finish(result);
    }

    /// Emits a result with this outcome and content.
    pub(crate) fn answer(self, outcome: Outcome, content: impl Into<String>) {
        let result = ToolResult::new(String::new(), outcome, content);
        self.emit(result)
    }

    fn finish(&mut self, mut result: ToolResult) {
        self.emitted = true;
        result.agent_id = self.agent.take();
        // The id is free for reuse from the moment the result is on its way; the admission place
        // travels with the result and is given back once the writer has written it.
        self.active.release(&self.id, self.seq);
        match self.reply.take() {
            // Handed over, the place is given back, as `Outbox::recv` gives it back. A caller
            // that is gone has nobody to tell.
            Some(reply) => {
                self.emitter.count_result();
                drop(self.admission.take());
                let _ = reply.send(result);
            }
            None => self
                .emitter
                .send_result(ServerMessage::ToolResult(result), self.admission.take()),
        }
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
    }
}

impl Drop for ResultSlot {
    fn drop(&mut self) {
        if !self.emitted {
            let mut result = ToolResult::new(
                self.id.to_string(),
                Outcome::Failed,
                "The call failed with an internal error in toolrt (its supervisor ended without a result); it may or may not have run.",
            );
            result.duration_ms = Some(self.elapsed_ms());
            self.finish(result);
        }
    }
}
