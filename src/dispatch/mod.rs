//! Dispatcher: accepts calls, admits them, runs batches in order, routes cancellation.
//!
//! # Accepted, parked, admitted
//! A call is *accepted* when its id is registered (a duplicate is refused here, before anything
//! exists) and it gets its [`ResultSlot`]: from then on exactly one result is coming. It is
//! *admitted* when it holds an admission place, one of `--max-in-flight` + `--max-queued`; its
//! result carries the place to the writer, which gives it back once the line is written, so
//! admission also bounds what waits for a slow reader. An accepted call that finds no free place
//! is *parked*, in a queue bounded in calls and in bytes: a queue per scope (the call's
//! `agent_id`), in arrival order, the scopes taking turns (`parked`); one task admits the head
//! of the scope in turn as places free. Nothing client-driven reaches an actor mailbox before
//! admission.
//!
//! [`Dispatcher::offer`] never waits: when the parked queue is full too (or the call's agent
//! holds its share of it), it hands the message back and the caller decides. The server's reader then waits only if no admitted call waits
//! for the client, and otherwise refuses the line as busy (server.rs), so control messages are
//! always read while anything depends on them.
//!
//! # Ids
//! Every accepted call has a registry entry of its own, with a sequence number. Whatever refers
//! to a call later (its slot, its batch's runner, `cancel {batch}`, the parked queue) holds that
//! entry, never the id: an id may be reused once its result is out, and a new call under the same
//! id shares nothing with the old one.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::call::{Outcome, ToolCall};
use crate::inflight::{BatchEntry, CallEntry, InFlight, Pending, ResultSlot};
use parked::{Parked, ParkedItem, ParkedQueue, RunBatch};

mod batch;
mod cancel;
mod parked;
use crate::protocol::{ClientMessage, ServerMessage};
use crate::scope::Scope;
use crate::supervisor::{self, Job, Pipeline};

/// How many calls may be parked (accepted, waiting for an admission place) by default.
pub const DEFAULT_MAX_PARKED: usize = 1024;

/// Most ids one error line lists; the rest are counted.
const IDS_IN_ONE_ERROR: usize = 100;

/// A call line the dispatcher could not take now: handed back untouched (nothing was
/// registered), with the reason.
#[derive(Debug)]
pub struct Unplaced {
    /// The message, as offered.
    pub msg: Box<ClientMessage>,
    /// What is full.
    pub full: Full,
}

/// What kept a call line out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Full {
    /// Every admission place is taken and the parked queue is full.
    Queue,
    /// Every admission place is taken and this agent already holds its share of the parked
    /// queue (a quarter of it).
    Agent(Arc<str>),
}

/// Admission, batches and cancellation for one runtime.
#[derive(Clone)]
pub struct Dispatcher {
    pipeline: Arc<Pipeline>,
    active: Arc<InFlight>,
    admission: Arc<Semaphore>,
    capacity: usize,
    max_parallel: usize,
    max_parked: usize,
    parked: Arc<Mutex<ParkedQueue>>,
    /// Items in `parked`, readable without the lock (the hot path only needs "is it empty").
    parked_len: Arc<AtomicUsize>,
    /// Wakes whoever waits for room in the parked queue.
    parked_room: Arc<Notify>,
    root: CancellationToken,
    runners: TaskTracker,
}

/// Admission limits of a [`Dispatcher`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Admitted calls at once (`--max-in-flight` + `--max-queued`).
    pub capacity: usize,
    /// Calls of one batch running at once (`--max-parallel`).
    pub max_parallel: usize,
    /// Accepted calls waiting for admission (`--max-parked`).
    pub max_parked: usize,
}

impl Dispatcher {
    /// A dispatcher with these limits.
    pub(crate) fn new(pipeline: Arc<Pipeline>, limits: Limits) -> Self {
        let capacity = limits.capacity.max(1);
        Self {
            pipeline,
            active: Arc::new(InFlight::default()),
            admission: Arc::new(Semaphore::new(capacity)),
            capacity,
            max_parallel: limits.max_parallel.max(1),
            max_parked: limits.max_parked,
            parked: Arc::new(Mutex::new(ParkedQueue::default())),
            parked_len: Arc::new(AtomicUsize::new(0)),
            parked_room: Arc::new(Notify::new()),
            root: CancellationToken::new(),
            runners: TaskTracker::new(),
        }
    }

    /// Whether a batch with this id is in flight (a new one with the id would be refused).
    pub fn batch_in_flight(&self, id: &str) -> bool {
        self.active.batches.contains_key(id)
    }

    /// Admission places in all (`--max-in-flight` + `--max-queued`).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The pipeline this dispatcher feeds.
    pub(crate) fn pipeline(&self) -> &Arc<Pipeline> {
        &self.pipeline
    }

    /// The cancellation token of the call in flight with this id (an agent scope opened by the
    /// call becomes its child).
    pub fn call_cancel(&self, id: &str) -> Option<CancellationToken> {
        self.active.calls.get(id).map(|e| e.cancel.clone())
    }

    /// The live scope a call names, resolved once, at acceptance (the supervisor uses it).
    /// None without `agent_id`, and for an agent that is unknown or has ended (the call is
    /// then answered `denied` at its turn).
    fn scope_of(&self, call: &ToolCall) -> Option<Arc<Scope>> {
        let agent = call.agent_id.as_deref()?;
        self.pipeline
            .scopes
            .resolve(agent)
            .filter(|s| !s.has_ended())
    }

    /// Answers `cancelled` at once every parked call that its scope's end or cancellation
    /// reached, rather than when an admission place frees for it. Called whenever scopes end
    /// and after every `cancel` (a cancelled `Agent` call cancels its subagent's scope).
    pub fn end_cancelled_parked(&self) {
        sweep_parked(&self.parked, &self.parked_len, &self.parked_room);
    }

    /// [`Dispatcher::end_cancelled_parked`] as a listener for the scope table, holding the
    /// parked queue weakly (the table lives in the pipeline, which the dispatcher holds).
    pub fn parked_sweeper(&self) -> Arc<dyn Fn() + Send + Sync> {
        let parked = Arc::downgrade(&self.parked);
        let (len, room) = (self.parked_len.clone(), self.parked_room.clone());
        Arc::new(move || {
            if let Some(parked) = parked.upgrade() {
                sweep_parked(&parked, &len, &room);
            }
        })
    }

    /// Handles one client message, waiting while the parked queue is full (library users; the
    /// server's reader uses [`Dispatcher::offer`] and decides itself). `rewind` and `hello` are
    /// the runtime's (`Runtime::submit`).
    pub async fn submit(&self, msg: ClientMessage) {
        match msg {
            ClientMessage::ToolUse(_) | ClientMessage::Batch { .. } => {
                let mut msg = msg;
                loop {
                    let room = self.parked_room();
                    match self.offer(msg, 0) {
                        Ok(()) => return,
                        Err(back) => {
                            msg = *back;
                            room.await;
                        }
                    }
                }
            }
            other => self.control(other),
        }
    }

    /// Handles a message that never waits for admission: `cancel`, `permission_response`,
    /// `session` (`shutdown` is the caller's business; calls, `rewind`, `hello` and the client
    /// tools' messages are ignored here: the runtime handles them).
    pub fn control(&self, msg: ClientMessage) {
        match msg {
            ClientMessage::Cancel(target) => self.cancel(&target),
            ClientMessage::PermissionResponse(resp) => {
                let rid = resp.request_id.clone();
                if !self.pipeline.answer_permission(resp) {
                    self.error(format!(
                        "permission_response: no call is waiting for request_id {rid:?}"
                    ));
                }
            }
            ClientMessage::Session {
                session_id,
                transcript_path,
            } => self.pipeline.hooks.set_session(session_id, transcript_path),
            ClientMessage::ToolUse(_)
            | ClientMessage::Batch { .. }
            | ClientMessage::Rewind { .. }
            // Shutdown is the reader's business; hello and client tools are the runtime's.
            | ClientMessage::Shutdown
            | ClientMessage::Hello { .. }
            | ClientMessage::ListTools { .. }
            | ClientMessage::ApiTurn(_)
            | ClientMessage::RegisterTools { .. }
            | ClientMessage::UnregisterTools { .. }
            | ClientMessage::ExecuteResult(_)
            // Agent scopes are the runtime's.
            | ClientMessage::AgentStart(_)
            | ClientMessage::AgentEnd { .. } => {}
        }
    }

    /// Accepts a `tool_use` or `batch` without waiting: started at once when admission has room,
    /// parked when it does not. When the parked queue is full too (or the message is not a
    /// call), the message is handed back untouched: nothing was registered. `bytes` is the size
    /// of its input line (what the parked queue counts).
    pub fn offer(&self, msg: ClientMessage, bytes: usize) -> Result<(), Box<ClientMessage>> {
        self.place(msg, bytes).map_err(|u| u.msg)
    }

    /// [`Dispatcher::offer`], saying what was full when the message comes back: the whole
    /// parked queue, or only the share of the call's agent. (Not a call: [`Full::Queue`].)
    pub fn place(&self, msg: ClientMessage, bytes: usize) -> Result<(), Unplaced> {
        match msg {
            ClientMessage::ToolUse(call) => self.offer_call(call, bytes, &mut None),
            ClientMessage::Batch { id, calls } => self.offer_batch(id, calls, bytes),
            other => Err(Unplaced {
                msg: Box::new(other),
                full: Full::Queue,
            }),
        }
    }

    /// Accepts one call whose result goes to `reply` instead of the outbox (a refused duplicate
    /// id too, as a `failed` result), waiting while the parked queue is full.
    pub(crate) async fn submit_replying(
        &self,
        mut call: ToolCall,
        reply: tokio::sync::oneshot::Sender<crate::call::ToolResult>,
    ) {
        let mut reply = Some(reply);
        loop {
            let room = self.parked_room();
            match self.offer_call(call, 0, &mut reply) {
                Ok(()) => return,
                Err(unplaced) => match *unplaced.msg {
                    ClientMessage::ToolUse(back) => call = back,
                    // offer_call hands back only the call it was given.
                    _ => return,
                },
            }
            room.await;
        }
    }

    /// Completes when the parked queue may have room again: at once if it is empty, else when
    /// its head is admitted. Create it before an [`Dispatcher::offer`] that may fail, so a place
    /// freed in between is not missed.
    pub fn parked_room(&self) -> impl Future<Output = ()> + Send + 'static {
        let notify = self.parked_room.clone();
        let len = self.parked_len.clone();
        async move {
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if len.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// How many calls are parked.
    pub fn parked_calls(&self) -> usize {
        self.lock_parked().calls
    }

    /// How many calls of agent `agent` (None: the root scope) are parked.
    pub fn parked_calls_of(&self, agent: Option<&str>) -> usize {
        self.lock_parked().calls_of(agent)
    }

    fn lock_parked(&self) -> std::sync::MutexGuard<'_, ParkedQueue> {
        self.parked.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A free admission place, if nothing is parked before it (arrival order).
    fn try_admit(&self, want: u32) -> Option<OwnedSemaphorePermit> {
        if self.parked_len.load(Ordering::Acquire) != 0 {
            return None;
        }
        self.admission.clone().try_acquire_many_owned(want).ok()
    }

    /// `reply`, when given, is taken once the call is accepted (see [`ResultSlot::reply_to`]).
    fn offer_call(
        &self,
        call: ToolCall,
        bytes: usize,
        reply: &mut Option<tokio::sync::oneshot::Sender<crate::call::ToolResult>>,
    ) -> Result<(), Unplaced> {
        let place = self.try_admit(1);
        let mut queue = None;
        if place.is_none() {
            let q = self.lock_parked();
            if let Err(full) = q.room(call.agent_id.as_deref(), 1, bytes, self.max_parked) {
                let full = full_reason(full, call.agent_id.as_ref());
                return Err(Unplaced {
                    msg: Box::new(ClientMessage::ToolUse(call)),
                    full,
                });
            }
            queue = Some(q);
        }
        let id: Arc<str> = Arc::from(call.id.as_str());
        // Outside any scope, a token of its own rather than a child of the root: a child costs
        // a lock on the root's list of children when it is made and again when it is dropped.
        // `cancel_all` reaches every registered call through the map; a call registered after
        // it has gone through the map sees the root cancelled here. In a scope, a child of the
        // scope's token: ending or cancelling the scope (or anything above it) reaches the call.
        let scope = self.scope_of(&call);
        let cancel = scope
            .as_ref()
            .map_or_else(CancellationToken::new, |s| s.cancel.child_token());
        let Some(entry) = self.register(&id, cancel.clone()) else {
            drop(queue);
            match reply.take() {
                Some(reply) => {
                    let message = format!(
                        "duplicate tool_use id {id:?}: a call with this id is still in flight; this one was refused"
                    );
                    let _ = reply.send(crate::call::ToolResult::new(
                        id.to_string(),
                        Outcome::Failed,
                        message,
                    ));
                }
                None => self.refuse_duplicates(&[id], None),
            }
            return Ok(());
        };
        if self.root.is_cancelled() {
            cancel.cancel();
        }
        let admitted = place.is_some();
        let mut slot = ResultSlot::new(
            id,
            entry.seq,
            self.pipeline.emitter.clone(),
            self.active.clone(),
            place,
            call.agent_id.clone(),
        );
        if let Some(reply) = reply.take() {
            slot.reply_to(reply);
        }
        if admitted {
            drop(queue);
            tracing::debug!(id = %slot.id(), tool = %call.name, "call admitted");
            supervisor::spawn(Job {
                call,
                slot,
                cancel,
                scope,
                gate: None,
                batch: None,
                pipeline: self.pipeline.clone(),
            });
            return Ok(());
        }
        tracing::debug!(id = %slot.id(), tool = %call.name, "call parked: no admission place free");
        *entry.queued.lock().unwrap_or_else(|p| p.into_inner()) = Some(slot);
        let agent = call.agent_id.clone();
        let item = ParkedItem {
            job: Parked::Call {
                pending: Pending(entry),
                call,
                scope,
            },
            want: 1,
            calls: 1,
            bytes,
        };
        if let Some(q) = queue {
            self.park(q, agent.as_ref(), item);
        }
        Ok(())
    }

    /// Refuses a whole batch whose id is still in flight.
    fn refuse_batch(&self, batch_id: &str, calls: &[ToolCall]) {
        let ids = calls.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
        self.pipeline.emitter.send_reply(ServerMessage::Error {
            message: format!(
                "duplicate batch id {batch_id:?}: a batch with this id is still in flight; this one was refused{}",
                describe_ids(&ids)
            ),
            line: None,
            code: Some("duplicate_id"),
            ids: ids.into_iter().take(IDS_IN_ONE_ERROR).collect(),
        });
    }

    /// Registers each call of a batch under the batch's token with its result slot; a call
    /// whose id repeats one in the batch or in flight is refused (one error line for all).
    fn accept_batch_calls(
        &self,
        batch_id: &str,
        calls: Vec<ToolCall>,
        batch_cancel: &CancellationToken,
    ) -> Vec<(Pending, ToolCall)> {
        let mut seen = HashSet::new();
        let mut refused = Vec::new();
        let mut accepted = Vec::with_capacity(calls.len());
        for call in calls {
            let id: Arc<str> = Arc::from(call.id.as_str());
            if !seen.insert(id.clone()) {
                refused.push(id);
                continue;
            }
            let Some(entry) = self.register(&id, batch_cancel.child_token()) else {
                refused.push(id);
                continue;
            };
            let slot = ResultSlot::new(
                id,
                entry.seq,
                self.pipeline.emitter.clone(),
                self.active.clone(),
                None,
                call.agent_id.clone(),
            );
            *entry.queued.lock().unwrap_or_else(|p| p.into_inner()) = Some(slot);
            accepted.push((Pending(entry), call));
        }
        if !refused.is_empty() {
            self.refuse_duplicates(&refused, Some(batch_id));
        }
        accepted
    }

    fn offer_batch(
        &self,
        batch_id: String,
        calls: Vec<ToolCall>,
        bytes: usize,
    ) -> Result<(), Unplaced> {
        if self.active.batches.contains_key(&batch_id) {
            self.refuse_batch(&batch_id, &calls);
            return Ok(());
        }
        // Places for the whole batch up front, as far as capacity goes; a batch larger than
        // capacity takes the rest as its calls start.
        let most = calls.len().clamp(1, self.capacity) as u32;
        let mut pool = self.try_admit(most);
        let mut queue = None;
        // A batch is one agent's turn (the protocol gives it one agent_id).
        let scope = calls.first().and_then(|c| c.agent_id.clone());
        if pool.is_none() {
            let q = self.lock_parked();
            if let Err(full) = q.room(scope.as_deref(), calls.len().max(1), bytes, self.max_parked)
            {
                return Err(Unplaced {
                    msg: Box::new(ClientMessage::Batch {
                        id: batch_id,
                        calls,
                    }),
                    full: full_reason(full, scope.as_ref()),
                });
            }
            queue = Some(q);
        }
        let seq = self.active.next_seq();
        // A batch is one agent's turn: in a scope, its token is a child of the scope's.
        let agent_scope = calls.first().and_then(|c| self.scope_of(c));
        let batch_cancel = match &agent_scope {
            Some(s) => s.cancel.child_token(),
            None => self.root.child_token(),
        };
        if self.root.is_cancelled() {
            batch_cancel.cancel();
        }
        let accepted = self.accept_batch_calls(&batch_id, calls, &batch_cancel);
        let ids: Vec<&str> = accepted.iter().map(|(_, c)| c.id.as_str()).collect();
        if pool.is_some() {
            tracing::debug!(batch = %batch_id, calls = ids.len(), "batch admitted");
        } else {
            tracing::debug!(batch = %batch_id, calls = ids.len(), "batch parked: no admission place free");
        }
        self.pipeline.emitter.send(ServerMessage::event(
            "batch_start",
            json!({"batch": batch_id, "ids": ids}),
        ));
        self.active.batches.insert(
            batch_id.clone(),
            BatchEntry {
                seq,
                cancel: batch_cancel.clone(),
                calls: accepted.iter().map(|(p, _)| p.0.clone()).collect(),
            },
        );
        let want = accepted.len().clamp(1, self.capacity) as u32;
        if let Some(p) = pool.as_mut()
            && p.num_permits() > want as usize
        {
            // Duplicates were refused: give their places back.
            drop(p.split(p.num_permits() - want as usize));
        }
        match (pool, queue) {
            (Some(pool), _) => {
                let this = self.clone();
                let run = RunBatch {
                    id: batch_id,
                    seq,
                    cancel: batch_cancel,
                    scope: agent_scope,
                };
                self.runners
                    .spawn(async move { this.run_batch(run, accepted, Some(pool)).await });
            }
            (None, Some(q)) => {
                let item = ParkedItem {
                    calls: accepted.len().max(1),
                    job: Parked::Batch {
                        run: RunBatch {
                            id: batch_id,
                            seq,
                            cancel: batch_cancel,
                            scope: agent_scope,
                        },
                        calls: accepted,
                    },
                    want,
                    bytes,
                };
                self.park(q, scope.as_ref(), item);
            }
            (None, None) => {}
        }
        Ok(())
    }

    fn park(
        &self,
        mut q: std::sync::MutexGuard<'_, ParkedQueue>,
        scope: Option<&Arc<str>>,
        item: ParkedItem,
    ) {
        q.push(scope, item);
        self.parked_len.store(q.items, Ordering::Release);
        if !q.admitter {
            q.admitter = true;
            let this = self.clone();
            self.runners.spawn(async move { this.admit_parked().await });
        }
    }

    /// Admits the parked items, a scope's head at a time in turn, whenever places free, until
    /// nothing is parked.
    async fn admit_parked(self) {
        loop {
            let mut dead = Vec::new();
            let want = {
                let mut q = self.lock_parked();
                let want = q.next_want(&mut dead);
                self.parked_len.store(q.items, Ordering::Release);
                if want.is_none() {
                    q.admitter = false;
                }
                want
            };
            if !dead.is_empty() {
                drop(dead);
                self.parked_room.notify_waiters();
            }
            let Some(want) = want else { return };
            let Ok(places) = self.admission.clone().acquire_many_owned(want).await else {
                return;
            };
            let item = {
                let mut q = self.lock_parked();
                let item = q.pop();
                self.parked_len.store(q.items, Ordering::Release);
                item
            };
            self.parked_room.notify_waiters();
            // Only this task takes items out in turn; a sweep of cancelled calls may have taken
            // out the one the places were taken for, so the places are fitted to the item.
            if let Some(item) = item {
                let Some(places) = self.fit(places, item.want).await else {
                    return;
                };
                self.start(item.job, places);
            }
        }
    }

    /// `places` made `want` places: the extra ones given back, the missing ones waited for.
    async fn fit(
        &self,
        mut places: OwnedSemaphorePermit,
        want: u32,
    ) -> Option<OwnedSemaphorePermit> {
        let have = places.num_permits();
        let want = want as usize;
        if have > want {
            drop(places.split(have - want));
        } else if have < want {
            let more = self
                .admission
                .clone()
                .acquire_many_owned((want - have) as u32)
                .await
                .ok()?;
            places.merge(more);
        }
        Some(places)
    }

    /// Starts a parked call or batch that now holds its places.
    fn start(&self, job: Parked, places: OwnedSemaphorePermit) {
        match job {
            Parked::Call {
                pending,
                call,
                scope,
            } => {
                let Some(mut slot) = pending.0.take_queued() else {
                    // Cancelled while parked: already answered.
                    return;
                };
                slot.set_admission(Some(places));
                tracing::debug!(id = %slot.id(), tool = %call.name, "parked call admitted");
                supervisor::spawn(Job {
                    call,
                    slot,
                    cancel: pending.0.cancel.clone(),
                    scope,
                    gate: None,
                    batch: None,
                    pipeline: self.pipeline.clone(),
                });
            }
            Parked::Batch { run, calls } => {
                let this = self.clone();
                self.runners
                    .spawn(async move { this.run_batch(run, calls, Some(places)).await });
            }
        }
    }

    fn error(&self, message: String) {
        self.pipeline
            .emitter
            .send_reply(ServerMessage::error(message, None));
    }

    /// Registers a call id: None if a call with this id is still in flight.
    fn register(&self, id: &Arc<str>, cancel: CancellationToken) -> Option<Arc<CallEntry>> {
        use dashmap::mapref::entry::Entry;
        match self.active.calls.entry(id.clone()) {
            Entry::Occupied(_) => None,
            Entry::Vacant(v) => {
                let entry = Arc::new(CallEntry {
                    seq: self.active.next_seq(),
                    cancel,
                    queued: Mutex::new(None),
                });
                v.insert(entry.clone());
                Some(entry)
            }
        }
    }

    fn refuse_duplicates(&self, ids: &[Arc<str>], batch: Option<&str>) {
        let names: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
        let place = match batch {
            Some(b) => format!(" (in batch {b:?})"),
            None => String::new(),
        };
        let message = match names.as_slice() {
            [one] => format!(
                "duplicate tool_use id {one:?}{place}: a call with this id is still in flight; this one was refused"
            ),
            _ => format!(
                "duplicate tool_use ids{place}: a call with each of these ids is still in flight, or the id repeats within the batch; these were refused{}",
                describe_ids(&names)
            ),
        };
        self.pipeline.emitter.send_reply(ServerMessage::Error {
            message,
            line: None,
            code: Some("duplicate_id"),
            ids: names.into_iter().take(IDS_IN_ONE_ERROR).collect(),
        });
    }

    /// Whether nothing is in flight.
    pub fn is_idle(&self) -> bool {
        self.active.calls.is_empty() && self.runners.is_empty()
    }

    /// Gives back what a burst grew in the dispatcher's maps and queues (safe while calls run:
    /// each map keeps room for what it holds).
    pub fn shrink(&self) {
        self.active.calls.shrink_to_fit();
        self.active.batches.shrink_to_fit();
        self.pipeline.shrink();
        self.lock_parked().shrink();
    }

    /// Waits until every accepted call has its result written (or handed to the library user)
    /// and every batch has ended. Then gives back what a burst grew and no longer needs.
    pub async fn drain(&self) {
        self.runners.close();
        self.runners.wait().await;
        // Every result holds its admission place until it is written.
        let _all = self.admission.acquire_many(self.capacity as u32).await;
        self.runners.reopen();
        self.shrink();
    }
}

/// Answers the parked calls their scope cancelled and takes them out of the queue.
fn sweep_parked(parked: &Mutex<ParkedQueue>, len: &AtomicUsize, room: &Notify) {
    if len.load(Ordering::Acquire) == 0 {
        return;
    }
    let mut dead = Vec::new();
    let slots = {
        let mut q = parked.lock().unwrap_or_else(|p| p.into_inner());
        if !q.has_agents() {
            return;
        }
        let slots = q.sweep_cancelled(&mut dead);
        len.store(q.items, Ordering::Release);
        slots
    };
    for slot in slots {
        slot.answer(Outcome::Cancelled, "The call was cancelled before it ran.");
    }
    if !dead.is_empty() {
        drop(dead);
        room.notify_waiters();
    }
}

fn full_reason(full: parked::Full, agent: Option<&Arc<str>>) -> Full {
    match (full, agent) {
        (parked::Full::Scope, Some(agent)) => Full::Agent(agent.clone()),
        _ => Full::Queue,
    }
}

/// `: "a", "b", … and N more` for an error line.
fn describe_ids(ids: &[String]) -> String {
    if ids.is_empty() {
        return String::new();
    }
    let shown: Vec<String> = ids
        .iter()
        .take(IDS_IN_ONE_ERROR)
        .map(|i| format!("{i:?}"))
        .collect();
    let more = ids.len().saturating_sub(IDS_IN_ONE_ERROR);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!(": {}{tail}", shown.join(", "))
}
