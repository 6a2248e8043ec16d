//! Cancelling accepted calls: one call, a batch, or everything. A call that has not started is
//! answered `cancelled` here at once; a running one ends through its token.

use std::sync::Arc;

use super::Dispatcher;
use crate::call::Outcome;
use crate::inflight::CallEntry;
use crate::protocol::CancelTarget;
use tokio_util::sync::CancellationToken;

impl Dispatcher {
    /// Cancels one call or every unfinished call of a batch. A call that has not started (parked,
    /// or waiting for its turn in a batch) is answered `cancelled` at once.
    pub fn cancel(&self, target: &CancelTarget) {
        match target {
            CancelTarget::Call(id) => {
                let entry = self
                    .active
                    .calls
                    .get(id.as_str())
                    .map(|e| e.value().clone());
                match entry {
                    Some(entry) => cancel_entry(&entry),
                    None => self.error(format!("cancel: no call with id {id:?} is in flight")),
                }
            }
            CancelTarget::Batch(batch) => {
                let calls = self
                    .active
                    .batches
                    .get(batch)
                    .map(|b| (b.cancel.clone(), b.calls.clone()));
                let Some((token, calls)) = calls else {
                    return self.error(format!("cancel: no batch with id {batch:?} is in flight"));
                };
                token.cancel();
                for entry in &calls {
                    cancel_entry(entry);
                }
            }
        }
        // The call or batch may hold an `Agent` call: its subagents' parked calls end too.
        self.end_cancelled_parked();
    }

    /// Cancelled once everything is (second SIGTERM, SIGINT): what runs at shutdown (SessionEnd
    /// hooks, async hooks' grace) stops early with it.
    pub(crate) fn cancelled_all(&self) -> CancellationToken {
        self.root.clone()
    }

    /// Cancels everything accepted: running, admitted, parked (second SIGTERM, SIGINT).
    pub fn cancel_all(&self) {
        self.root.cancel();
        let entries: Vec<Arc<CallEntry>> = self
            .active
            .calls
            .iter()
            .map(|e| e.value().clone())
            .collect();
        for entry in entries {
            cancel_entry(&entry);
        }
    }
}

/// Cancels one accepted call: its token, and its result at once if it has not started.
fn cancel_entry(entry: &CallEntry) {
    entry.cancel.cancel();
    if let Some(slot) = entry.take_queued() {
        slot.answer(Outcome::Cancelled, "The call was cancelled before it ran.");
    }
}
