//! The result slot: the structural guarantee of exactly one result per accepted call.
//!
//! A slot is created when a call is admitted and moves with the call (dispatcher → batch runner
//! → supervisor). [`ResultSlot::emit`] consumes it; if it is dropped unused — a panic, a dropped
//! message, a stage that died — its `Drop` emits a `failed` result with the reason.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{OwnedSemaphorePermit, oneshot};

use crate::call::{Outcome, ToolResult};
use crate::emit::Emitter;
use crate::protocol::ServerMessage;

use super::Registry as ActiveCalls;

/// The one-shot right to answer a call.
pub struct ResultSlot {
    id: Arc<str>,
    /// Which call of those that used this id (the registry frees the id only for this one).
    seq: u64,
    started: Instant,
    emitter: Emitter,
    active: Arc<ActiveCalls>,
    done: Option<oneshot::Sender<()>>,
    admission: Option<OwnedSemaphorePermit>,
    emitted: bool,
}

impl ResultSlot {
    pub(super) fn new(
        id: Arc<str>,
        seq: u64,
        emitter: Emitter,
        active: Arc<ActiveCalls>,
        admission: Option<OwnedSemaphorePermit>,
    ) -> Self {
        Self {
            id,
            seq,
            started: Instant::now(),
            emitter,
            active,
            done: None,
            admission,
            emitted: false,
        }
    }

    /// The call id.
    pub fn id(&self) -> &Arc<str> {
        &self.id
    }

    /// When the call was admitted.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Milliseconds since admission.
    pub fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Gives the slot its admission place (parked calls get theirs when admitted, batch calls
    /// when they start).
    pub(super) fn set_admission(&mut self, permit: Option<OwnedSemaphorePermit>) {
        self.admission = permit;
    }

    /// A receiver that completes when this slot has emitted (or was dropped).
    pub(super) fn on_done(&mut self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.done = Some(tx);
        rx
    }

    /// Emits the result; `tool_use_id` (when empty), `is_error` and `duration_ms` are filled in
    /// here, so a result always answers the slot's call.
    pub fn emit(mut self, mut result: ToolResult) {
        if result.tool_use_id.as_str() != &*self.id {
            result.tool_use_id = self.id.to_string();
        }
        result.is_error = result.outcome.is_error();
        result.duration_ms = Some(self.elapsed_ms());
        self.finish(result);
    }

    /// Emits a result with this outcome and content.
    pub fn answer(self, outcome: Outcome, content: impl Into<String>) {
        let result = ToolResult::new(String::new(), outcome, content);
        self.emit(result)
    }

    fn finish(&mut self, result: ToolResult) {
        self.emitted = true;
        // The id is free for reuse from the moment the result is on its way; the admission place
        // travels with the result and is given back once the writer has written it.
        self.active.release(&self.id, self.seq);
        self.emitter
            .send_result(ServerMessage::ToolResult(result), self.admission.take());
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
