//! A batch's runner: its calls in order, each at its turn (`--max-parallel` concurrency-safe
//! calls at once, an exclusive call alone), then its `batch_end`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, oneshot};

use super::Dispatcher;
use super::parked::RunBatch;
use crate::call::{Outcome, ToolCall};
use crate::inflight::Pending;
use crate::protocol::ServerMessage;
use crate::supervisor::{self, BatchLink, Gate, Job};

impl Dispatcher {
    pub(super) async fn run_batch(
        &self,
        run: RunBatch,
        calls: Vec<(Pending, ToolCall)>,
        pool: Option<OwnedSemaphorePermit>,
    ) {
        let RunBatch {
            id: batch_id,
            seq,
            cancel: batch_cancel,
            scope,
        } = run;
        let mut pool = pool;
        let ids: Vec<String> = calls.iter().map(|(_, c)| c.id.clone()).collect();
        let mut running: Vec<oneshot::Receiver<()>> = Vec::new();
        let stop = Arc::new(AtomicBool::new(false));
        let records = supervisor::batch_records(&self.pipeline);
        for (index, (pending, call)) in calls.into_iter().enumerate() {
            // Take the queued slot back; if a cancel already answered the call, skip it.
            let Some(mut slot) = pending.0.take_queued() else {
                continue;
            };
            let cancel = pending.0.cancel.clone();
            if batch_cancel.is_cancelled() || cancel.is_cancelled() {
                slot.answer(Outcome::Cancelled, "The call was cancelled before it ran.");
                continue;
            }
            if stop.load(Ordering::SeqCst) {
                slot.answer(Outcome::Cancelled, "The call was cancelled before it ran: a hook stopped processing of this batch.");
                continue;
            }
            let place = match pool.as_mut() {
                Some(p) if p.num_permits() > 1 => p.split(1),
                Some(_) => pool.take(),
                // Waiting for a place, the call is still answered at once when cancelled.
                None => tokio::select! {
                    biased;
                    _ = cancel.cancelled() => {
                        slot.answer(Outcome::Cancelled, "The call was cancelled before it ran.");
                        continue;
                    }
                    place = self.admission.clone().acquire_owned() => place.ok(),
                },
            };
            slot.set_admission(place);
            let done = slot.on_done();
            let (ready_tx, ready_rx) = oneshot::channel();
            let (go_tx, go_rx) = oneshot::channel();
            let link = BatchLink {
                stop: stop.clone(),
                index,
                records: records.clone(),
            };
            supervisor::spawn(Job {
                call,
                slot,
                cancel: cancel.clone(),
                scope: scope.clone(),
                gate: Some(Gate {
                    ready: ready_tx,
                    go: go_rx,
                }),
                batch: Some(link),
                pipeline: self.pipeline.clone(),
            });
            let Ok(safe) = ready_rx.await else {
                // Cancelled before its turn.
                continue;
            };
            if safe {
                while running.len() >= self.max_parallel {
                    wait_any(&mut running).await;
                }
            } else {
                // An exclusive call: everything before it finishes first.
                for rx in running.drain(..) {
                    let _ = rx.await;
                }
            }
            if stop.load(Ordering::SeqCst) {
                // A hook stopped the batch while this call waited: dropping `go` cancels it.
                drop(go_tx);
                let _ = done.await;
                continue;
            }
            let _ = go_tx.send(());
            if safe {
                running.push(done);
            } else {
                let _ = done.await;
            }
        }
        for rx in running {
            let _ = rx.await;
        }
        // What the batch sends after its results (PostToolBatch hook events, `batch_end`) holds
        // a place of its own until written, so a client that does not read cannot make these
        // pile up either.
        let place = match pool.take() {
            Some(mut p) if p.num_permits() > 1 => p.split(1),
            Some(p) => Some(p),
            None => self.admission.clone().acquire_owned().await.ok(),
        };
        let mut end = json!({"batch": batch_id, "ids": ids});
        if let Some(fields) = end.as_object_mut() {
            // Cancelling everything (SIGINT) stops the batch's PostToolBatch hooks too.
            let end = supervisor::end_batch(&self.pipeline, &batch_id, records, &self.root);
            fields.extend(end.await);
        }
        self.active
            .batches
            .remove_if(&batch_id, |_, b| b.seq == seq);
        self.pipeline
            .emitter
            .send_with_place(ServerMessage::event("batch_end", end), place);
    }
}

async fn wait_any(running: &mut Vec<oneshot::Receiver<()>>) {
    if running.is_empty() {
        return;
    }
    let (_, index, _) = futures::future::select_all(running.iter_mut()).await;
    running.swap_remove(index);
}
