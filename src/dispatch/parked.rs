//! The parked queue: accepted calls waiting for an admission place, a queue per scope, taken
//! in turn.
//!
//! Each scope (a call's `agent_id`; none: the root scope) keeps its own items in arrival order,
//! and the scopes with items take turns: the admitter admits the head of the scope whose turn
//! it is, and that scope goes to the back. So a scope with ten thousand parked calls delays
//! another scope's one call by at most one turn. A batch is one item, one turn.
//!
//! Bounds: the whole queue holds at most `max_parked` calls and [`MAX_PARKED_BYTES`] of input
//! lines; an agent's scope at most its share of both (a quarter), so one agent cannot fill the
//! queue and stop the reader in front of other agents' lines (`Full::Scope`).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::call::ToolCall;
use crate::inflight::{Pending, ResultSlot};
use crate::scope::Scope;

/// How many bytes of input lines the parked calls may hold. A line longer than this is parked
/// only into an empty queue.
pub(crate) const MAX_PARKED_BYTES: usize = 64 << 20;

/// The part of the parked queue (calls and bytes) one agent's scope may hold: one over this.
pub(crate) const AGENT_SHARE: usize = 4;

/// What waits in the parked queue.
pub(super) enum Parked {
    Call {
        pending: Pending,
        call: ToolCall,
        /// The call's scope, resolved at acceptance.
        scope: Option<Arc<Scope>>,
    },
    Batch {
        run: RunBatch,
        calls: Vec<(Pending, ToolCall)>,
    },
}

/// What a batch runner needs besides its calls.
pub(super) struct RunBatch {
    pub(super) id: String,
    pub(super) seq: u64,
    pub(super) cancel: CancellationToken,
    /// The batch's scope, resolved at acceptance.
    pub(super) scope: Option<Arc<Scope>>,
}

pub(super) struct ParkedItem {
    pub(super) job: Parked,
    /// Admission places it takes when admitted.
    pub(super) want: u32,
    pub(super) calls: usize,
    pub(super) bytes: usize,
}

impl ParkedItem {
    /// A lone call cancelled while parked needs no place any more. (A batch always runs: its
    /// `batch_end` is owed.)
    fn is_dead(&self) -> bool {
        match &self.job {
            Parked::Call { pending, .. } => !pending.0.is_queued(),
            Parked::Batch { .. } => false,
        }
    }
}

/// Why an item was not parked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Full {
    /// The whole queue is full.
    Queue,
    /// The item's agent holds its share of the queue.
    Scope,
}

#[derive(Default)]
struct ScopeQueue {
    items: VecDeque<ParkedItem>,
    calls: usize,
    bytes: usize,
}

/// The parked items of every scope, and whose turn it is.
#[derive(Default)]
pub(super) struct ParkedQueue {
    root: ScopeQueue,
    agents: HashMap<Arc<str>, ScopeQueue>,
    /// Scopes with items, in turn order, each once.
    turns: VecDeque<Option<Arc<str>>>,
    /// Items, calls and bytes across scopes.
    pub(super) items: usize,
    pub(super) calls: usize,
    pub(super) bytes: usize,
    /// Whether the admitter task runs.
    pub(super) admitter: bool,
}

impl ParkedQueue {
    fn scope(&self, scope: Option<&str>) -> Option<&ScopeQueue> {
        match scope {
            None => Some(&self.root),
            Some(key) => self.agents.get(key),
        }
    }

    fn scope_mut(&mut self, scope: Option<&str>) -> Option<&mut ScopeQueue> {
        match scope {
            None => Some(&mut self.root),
            Some(key) => self.agents.get_mut(key),
        }
    }

    /// Whether an item of `calls` calls and `bytes` bytes of `scope` fits. An empty queue takes
    /// anything (a batch larger than the bound, a line longer than the byte bound, is parked
    /// alone), and so does an agent's empty share.
    pub(super) fn room(
        &self,
        scope: Option<&str>,
        calls: usize,
        bytes: usize,
        max_parked: usize,
    ) -> Result<(), Full> {
        if scope.is_some() {
            let (held_calls, held_bytes) = self.scope(scope).map_or((0, 0), |s| (s.calls, s.bytes));
            let share_calls = (max_parked / AGENT_SHARE).max(1);
            let share_bytes = MAX_PARKED_BYTES / AGENT_SHARE;
            if held_calls > 0
                && (held_calls + calls > share_calls || held_bytes + bytes > share_bytes)
            {
                return Err(Full::Scope);
            }
        }
        if self.items == 0
            || (self.calls + calls <= max_parked && self.bytes + bytes <= MAX_PARKED_BYTES)
        {
            Ok(())
        } else {
            Err(Full::Queue)
        }
    }

    /// Parks an item at the back of its scope's queue.
    pub(super) fn push(&mut self, scope: Option<&Arc<str>>, item: ParkedItem) {
        self.items += 1;
        self.calls += item.calls;
        self.bytes += item.bytes;
        let q = match scope {
            None => &mut self.root,
            Some(key) => self.agents.entry(key.clone()).or_default(),
        };
        let first = q.items.is_empty();
        q.calls += item.calls;
        q.bytes += item.bytes;
        q.items.push_back(item);
        if first {
            self.turns.push_back(scope.cloned());
        }
    }

    /// The places the next item in turn wants, after taking out the cancelled calls at the head
    /// of the queues (into `dead`, to be dropped outside the lock). None: nothing is parked.
    pub(super) fn next_want(&mut self, dead: &mut Vec<ParkedItem>) -> Option<u32> {
        loop {
            let key = self.turns.front()?.clone();
            let head = self
                .scope(key.as_deref())
                .and_then(|q| q.items.front())
                .map(|i| (i.is_dead(), i.want));
            match head {
                Some((false, want)) => return Some(want),
                Some((true, _)) => {
                    if let Some(item) = self.pop_head(false) {
                        dead.push(item);
                    }
                }
                None => {
                    // An empty scope never stays in turn; this is only defensive.
                    self.turns.pop_front();
                }
            }
        }
    }

    /// Takes the head of the scope whose turn it is; that scope's turn passes.
    pub(super) fn pop(&mut self) -> Option<ParkedItem> {
        self.pop_head(true)
    }

    /// Takes the head of the scope in front of the turns. With `pass`, that scope goes to the
    /// back of the turns; a scope left empty leaves them (and an agent's entry goes).
    fn pop_head(&mut self, pass: bool) -> Option<ParkedItem> {
        let key = self.turns.front()?.clone();
        let q = self.scope_mut(key.as_deref())?;
        let item = q.items.pop_front()?;
        q.calls -= item.calls;
        q.bytes -= item.bytes;
        let empty = q.items.is_empty();
        if empty {
            // A burst may have grown it far; do not keep that much for good.
            q.items.shrink_to(64);
        }
        self.items -= 1;
        self.calls -= item.calls;
        self.bytes -= item.bytes;
        if empty || pass {
            self.turns.pop_front();
        }
        if empty {
            if let Some(k) = &key {
                self.agents.remove(k);
            }
            if self.items == 0 {
                self.turns.shrink_to(64);
                self.agents.shrink_to(64);
            }
        } else if pass {
            self.turns.push_back(key);
        }
        Some(item)
    }

    /// Takes out what the agents' scopes have cancelled: the slots of their parked calls whose
    /// token is cancelled (an ended agent, a cancelled `Agent` call above them), to be answered,
    /// and the lone calls' items, into `dead`, to be dropped outside the lock. A batch stays
    /// (its `batch_end` is owed; its answered calls do not run).
    pub(super) fn sweep_cancelled(&mut self, dead: &mut Vec<ParkedItem>) -> Vec<ResultSlot> {
        let mut slots = Vec::new();
        let mut emptied = Vec::new();
        for (key, q) in &mut self.agents {
            let mut kept = VecDeque::with_capacity(q.items.len());
            for item in q.items.drain(..) {
                match &item.job {
                    Parked::Call { pending, .. } => {
                        if pending.0.cancel.is_cancelled() {
                            slots.extend(pending.0.take_queued());
                        }
                    }
                    Parked::Batch { calls, .. } => {
                        for (pending, _) in calls {
                            if pending.0.cancel.is_cancelled() {
                                slots.extend(pending.0.take_queued());
                            }
                        }
                    }
                }
                if item.is_dead() {
                    q.calls -= item.calls;
                    q.bytes -= item.bytes;
                    self.items -= 1;
                    self.calls -= item.calls;
                    self.bytes -= item.bytes;
                    dead.push(item);
                } else {
                    kept.push_back(item);
                }
            }
            q.items = kept;
            if q.items.is_empty() {
                emptied.push(key.clone());
            }
        }
        for key in &emptied {
            self.agents.remove(key);
        }
        if !emptied.is_empty() {
            self.turns
                .retain(|t| t.as_ref().is_none_or(|k| self.agents.contains_key(k)));
        }
        slots
    }

    /// Whether any agent's scope has parked items.
    pub(super) fn has_agents(&self) -> bool {
        !self.agents.is_empty()
    }

    /// Calls of one scope parked.
    pub(super) fn calls_of(&self, scope: Option<&str>) -> usize {
        self.scope(scope).map_or(0, |q| q.calls)
    }

    /// Gives back what a burst grew, when nothing is parked.
    pub(super) fn shrink(&mut self) {
        if self.items == 0 {
            self.root.items.shrink_to_fit();
            self.turns.shrink_to_fit();
            self.agents.shrink_to_fit();
        }
    }
}
