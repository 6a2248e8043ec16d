//! Dispatcher: admits calls, runs batches in order, routes cancellation.
//!
//! Admission happens here, before anything client-driven reaches an actor mailbox: each call
//! takes a permit of a bounded semaphore (`--max-in-flight` + `--max-queued`) that its
//! [`ResultSlot`] holds until the result is out. When none is left, [`Dispatcher::submit`] waits,
//! so the reader stops reading stdin and memory stays bounded.

pub mod slot;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use dashmap::DashMap;
use serde_json::json;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::call::{Outcome, ToolCall};
use crate::hooks::HookEvent;
use crate::protocol::{CancelTarget, ClientMessage, ServerMessage};
use crate::supervisor::{self, BatchLink, Gate, Job, Pipeline, mode_name};
use slot::ResultSlot;

/// A call between admission and its result.
struct CallEntry {
    cancel: CancellationToken,
    /// The slot of a call that has not started yet, so a cancel can answer it at once.
    queued: Mutex<Option<ResultSlot>>,
}

/// The calls and batches in flight, by id.
#[derive(Default)]
pub struct Registry {
    calls: DashMap<Arc<str>, Arc<CallEntry>>,
    batches: DashMap<String, (CancellationToken, Vec<Arc<str>>)>,
}

impl Registry {
    pub(crate) fn release(&self, id: &str) {
        self.calls.remove(id);
    }

    fn entry(&self, id: &str) -> Option<Arc<CallEntry>> {
        self.calls.get(id).map(|e| e.value().clone())
    }
}

/// Admission, batches and cancellation for one runtime.
#[derive(Clone)]
pub struct Dispatcher {
    pipeline: Arc<Pipeline>,
    active: Arc<Registry>,
    admission: Arc<Semaphore>,
    capacity: usize,
    max_parallel: usize,
    root: CancellationToken,
    runners: TaskTracker,
}

impl Dispatcher {
    /// A dispatcher admitting at most `capacity` unfinished calls, running at most
    /// `max_parallel` calls of one batch at once.
    pub fn new(pipeline: Arc<Pipeline>, capacity: usize, max_parallel: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            pipeline,
            active: Arc::new(Registry::default()),
            admission: Arc::new(Semaphore::new(capacity)),
            capacity,
            max_parallel: max_parallel.max(1),
            root: CancellationToken::new(),
            runners: TaskTracker::new(),
        }
    }

    /// The pipeline this dispatcher feeds.
    pub fn pipeline(&self) -> &Arc<Pipeline> {
        &self.pipeline
    }

    /// Handles one client message. Waits (backpressure) while admission is full.
    pub async fn submit(&self, msg: ClientMessage) {
        match msg {
            ClientMessage::ToolUse(call) => self.tool_use(call).await,
            ClientMessage::Batch { id, calls } => self.batch(id, calls).await,
            ClientMessage::Cancel(target) => self.cancel(&target),
            ClientMessage::PermissionResponse(resp) => {
                let rid = resp.request_id.clone();
                if !self.pipeline.answer_permission(resp) {
                    self.error(format!(
                        "permission_response: no call is waiting for request_id {rid:?}"
                    ));
                }
            }
            ClientMessage::Rewind { to } => self.rewind(to).await,
            // Shutdown is the reader's business; hello is answered by the runtime.
            ClientMessage::Shutdown | ClientMessage::Hello { .. } => {}
        }
    }

    /// Restores the files changed by call `to` and every later call (file I/O on the blocking
    /// pool), then emits `rewound`, or an error line naming what went wrong.
    async fn rewind(&self, to: String) {
        let session = self.pipeline.session.clone();
        let target = to.clone();
        let outcome = tokio::task::spawn_blocking(move || session.tools.rewind(&target)).await;
        match outcome {
            Ok(Ok(files)) => self.pipeline.emitter.send(ServerMessage::event(
                "rewound",
                json!({"to": to, "files": crate::protocol::paths_value(&files)}),
            )),
            Ok(Err(e)) => self.error(format!("rewind to {to:?}: {e}")),
            Err(_) => self.error(format!(
                "rewind to {to:?}: internal error while restoring files"
            )),
        }
    }

    fn error(&self, message: String) {
        self.pipeline.emitter.send(ServerMessage::Error {
            message,
            line: None,
        });
    }

    /// Admits a call id: false (and an error line) if it is still in flight.
    fn register(
        &self,
        id: &Arc<str>,
        cancel: CancellationToken,
        queued: Option<ResultSlot>,
    ) -> bool {
        use dashmap::mapref::entry::Entry;
        match self.active.calls.entry(id.clone()) {
            Entry::Occupied(_) => false,
            Entry::Vacant(v) => {
                v.insert(Arc::new(CallEntry {
                    cancel,
                    queued: Mutex::new(queued),
                }));
                true
            }
        }
    }

    fn refuse_duplicate(&self, id: &str) {
        self.error(format!("duplicate tool_use id {id:?}: a call with this id is still in flight; this one was refused"));
    }

    /// Admits and starts one call (a batch of one).
    pub async fn tool_use(&self, call: ToolCall) {
        let Ok(permit) = self.admission.clone().acquire_owned().await else {
            return;
        };
        let id: Arc<str> = Arc::from(call.id.as_str());
        // A token of its own rather than a child of the root: a child costs a lock on the
        // root's list of children when it is made and again when it is dropped. `cancel_all`
        // reaches every registered call through the map; a call registered after it has gone
        // through the map sees the root cancelled here.
        let cancel = CancellationToken::new();
        if !self.register(&id, cancel.clone(), None) {
            return self.refuse_duplicate(&id);
        }
        tracing::debug!(id = %id, tool = %call.name, "call admitted");
        if self.root.is_cancelled() {
            cancel.cancel();
        }
        let slot = ResultSlot::new(
            id,
            self.pipeline.emitter.clone(),
            self.active.clone(),
            Some(permit),
        );
        supervisor::spawn(Job {
            call,
            slot,
            cancel,
            gate: None,
            batch: None,
            pipeline: self.pipeline.clone(),
        });
    }

    /// Admits a batch and starts its runner.
    pub async fn batch(&self, batch_id: String, calls: Vec<ToolCall>) {
        if self.active.batches.contains_key(&batch_id) {
            return self.error(format!("duplicate batch id {batch_id:?}: a batch with this id is still in flight; this one was refused"));
        }
        // Permits for the whole batch up front, as far as capacity goes; a batch larger than
        // capacity takes the rest as its calls start.
        let want = calls.len().min(self.capacity) as u32;
        let Ok(pool) = self.admission.clone().acquire_many_owned(want.max(1)).await else {
            return;
        };
        let batch_cancel = self.root.child_token();
        let mut seen = HashSet::new();
        let mut admitted = Vec::with_capacity(calls.len());
        for call in calls {
            let id: Arc<str> = Arc::from(call.id.as_str());
            if !seen.insert(id.clone()) {
                self.refuse_duplicate(&id);
                continue;
            }
            let cancel = batch_cancel.child_token();
            if !self.register(&id, cancel.clone(), None) {
                self.refuse_duplicate(&id);
                continue;
            }
            let slot = ResultSlot::new(
                id.clone(),
                self.pipeline.emitter.clone(),
                self.active.clone(),
                None,
            );
            if let Some(entry) = self.active.entry(&id) {
                *entry.queued.lock().unwrap_or_else(|p| p.into_inner()) = Some(slot);
            }
            admitted.push((id, call, cancel));
        }
        let ids: Vec<Arc<str>> = admitted.iter().map(|(id, _, _)| id.clone()).collect();
        tracing::debug!(batch = %batch_id, calls = ids.len(), "batch admitted");
        self.active
            .batches
            .insert(batch_id.clone(), (batch_cancel.clone(), ids.clone()));
        self.pipeline.emitter.send(ServerMessage::event(
            "batch_start",
            json!({"batch": batch_id, "ids": ids.iter().map(|i| &**i).collect::<Vec<_>>()}),
        ));
        let this = self.clone();
        self.runners.spawn(async move {
            this.run_batch(batch_id, admitted, batch_cancel, pool).await;
        });
    }

    async fn run_batch(
        &self,
        batch_id: String,
        calls: Vec<(Arc<str>, ToolCall, CancellationToken)>,
        batch_cancel: CancellationToken,
        pool: OwnedSemaphorePermit,
    ) {
        let mut pool = Some(pool);
        let ids: Vec<Arc<str>> = calls.iter().map(|(id, _, _)| id.clone()).collect();
        let mut running: Vec<oneshot::Receiver<()>> = Vec::new();
        let stop = Arc::new(AtomicBool::new(false));
        let records = self
            .pipeline
            .hooks
            .has(HookEvent::PostToolBatch)
            .then(|| Arc::new(Mutex::new(Vec::new())));
        for (index, (id, call, cancel)) in calls.into_iter().enumerate() {
            // Take the queued slot back; if a cancel already answered the call, skip it.
            let Some(entry) = self.active.entry(&id) else {
                continue;
            };
            let Some(mut slot) = entry
                .queued
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
            else {
                continue;
            };
            if batch_cancel.is_cancelled() || cancel.is_cancelled() {
                slot.answer(Outcome::Cancelled, "The call was cancelled before it ran.");
                continue;
            }
            if stop.load(Ordering::SeqCst) {
                slot.answer(Outcome::Cancelled, "The call was cancelled before it ran: a hook stopped processing of this batch.");
                continue;
            }
            let permit = match pool.as_mut() {
                Some(p) if p.num_permits() > 1 => p.split(1),
                Some(_) => pool.take(),
                None => self.admission.clone().acquire_owned().await.ok(),
            };
            slot.set_admission(permit);
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
        drop(pool);
        let mut end =
            json!({"batch": batch_id, "ids": ids.iter().map(|i| &**i).collect::<Vec<_>>()});
        if let Some(records) = records {
            let mut records =
                std::mem::take(&mut *records.lock().unwrap_or_else(|e| e.into_inner()));
            records.sort_by_key(|(i, _)| *i);
            let records = records.into_iter().map(|(_, r)| r).collect();
            match self
                .pipeline
                .hooks
                .post_tool_batch(batch_id.clone(), records, mode_name(self.pipeline.mode))
                .await
            {
                Ok(result) => {
                    if !result.feedback.is_empty() {
                        end["hook_feedback"] = json!(result.feedback);
                    }
                    if let Some(reason) = result.stop {
                        end["stop_reason"] = json!(reason);
                    }
                }
                Err(fault) => end["hook_feedback"] = json!([fault.to_string()]),
            }
        }
        self.active.batches.remove(&batch_id);
        self.pipeline
            .emitter
            .send(ServerMessage::event("batch_end", end));
    }

    /// Cancels one call or every unfinished call of a batch. A call that has not started is
    /// answered `cancelled` at once.
    pub fn cancel(&self, target: &CancelTarget) {
        match target {
            CancelTarget::Call(id) => match self.active.entry(id) {
                Some(entry) => self.cancel_entry(&entry),
                None => self.error(format!("cancel: no call with id {id:?} is in flight")),
            },
            CancelTarget::Batch(batch) => {
                let Some((token, ids)) = self.active.batches.get(batch).map(|b| b.value().clone())
                else {
                    return self.error(format!("cancel: no batch with id {batch:?} is in flight"));
                };
                token.cancel();
                for id in ids {
                    if let Some(entry) = self.active.entry(&id) {
                        self.cancel_entry(&entry);
                    }
                }
            }
        }
    }

    fn cancel_entry(&self, entry: &CallEntry) {
        entry.cancel.cancel();
        let queued = entry
            .queued
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(slot) = queued {
            slot.answer(Outcome::Cancelled, "The call was cancelled before it ran.");
        }
    }

    /// Cancels everything in flight (second SIGTERM, SIGINT).
    pub fn cancel_all(&self) {
        self.root.cancel();
        let entries: Vec<Arc<CallEntry>> = self
            .active
            .calls
            .iter()
            .map(|e| e.value().clone())
            .collect();
        for entry in entries {
            self.cancel_entry(&entry);
        }
    }

    /// Whether nothing is in flight.
    pub fn is_idle(&self) -> bool {
        self.active.calls.is_empty() && self.runners.is_empty()
    }

    /// Waits until every admitted call has its result and every batch has ended.
    pub async fn drain(&self) {
        self.runners.close();
        self.runners.wait().await;
        // Every slot holds an admission permit until its result is out.
        let _all = self.admission.acquire_many(self.capacity as u32).await;
        self.runners.reopen();
    }
}

async fn wait_any(running: &mut Vec<oneshot::Receiver<()>>) {
    if running.is_empty() {
        return;
    }
    let (_, index, _) = futures::future::select_all(running.iter_mut()).await;
    running.swap_remove(index);
}
