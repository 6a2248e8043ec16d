//! Execution slots (`--max-in-flight`), shared fairly across scopes.
//!
//! Every call takes a slot to execute and gives it back when it is done (or while it waits for
//! the client). Calls belong to a scope, keyed by their `agent_id` (none: the root scope). A
//! scope may hold at most its own limit of slots (its agent type's `maxInFlight`, supplied by a
//! [`ScopeLimits`] lookup; unlimited when the lookup says nothing). When calls wait, a freed
//! slot goes to the scopes in turn, round-robin, each scope's callers in arrival order: an agent
//! with ten thousand waiting calls delays another agent's one call by at most one turn.
//!
//! One mutex guards the counts and the queues. The uncontended path — a free slot, nobody
//! waiting — takes it once to take a slot and once to give it back, as the semaphore it
//! replaces did on release. A scope's entry exists only while it has calls running or waiting,
//! so the table is bounded by the calls admitted.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

/// How many slots a scope may hold at once: its agent's `maxInFlight`, None for no limit of
/// its own. Asked when a scope's first call comes (and again after it has had none).
pub(crate) type ScopeLimits = Arc<dyn Fn(&str) -> Option<usize> + Send + Sync>;

/// The slots of one runtime.
pub(crate) struct ExecSlots {
    state: Mutex<State>,
    limits: ScopeLimits,
}

struct State {
    free: usize,
    root: Scope,
    agents: HashMap<Arc<str>, Scope>,
    /// Scopes with waiting callers, in turn order; each at most once (`Scope::in_turn`). A
    /// scope at its own limit leaves the ring until one of its calls ends.
    turns: VecDeque<Option<Arc<str>>>,
}

struct Scope {
    running: usize,
    limit: usize,
    /// Callers in arrival order. One that stopped waiting stays until it is reached or swept.
    waiters: VecDeque<Waiter>,
    /// Roughly how many of `waiters` stopped waiting: when to sweep, never who may run.
    gone: usize,
    in_turn: bool,
}

struct Waiter {
    tx: oneshot::Sender<ExecSlot>,
}

impl Scope {
    fn new(limit: Option<usize>) -> Self {
        Self {
            running: 0,
            // A limit of 0 would park the scope's calls for good.
            limit: limit.map_or(usize::MAX, |l| l.max(1)),
            waiters: VecDeque::new(),
            gone: 0,
            in_turn: false,
        }
    }

    fn is_idle(&self) -> bool {
        self.running == 0 && self.waiters.is_empty()
    }
}

/// One execution slot, held until dropped.
pub(crate) struct ExecSlot {
    slots: Option<Arc<ExecSlots>>,
    scope: Option<Arc<str>>,
}

impl ExecSlot {
    #[cfg(test)]
    /// The scope this slot counts against.
    pub(crate) fn scope(&self) -> Option<&Arc<str>> {
        self.scope.as_ref()
    }
}

impl Drop for ExecSlot {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.take() {
            slots.give_back(self.scope.take());
        }
    }
}

impl std::fmt::Debug for ExecSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecSlot")
            .field("scope", &self.scope)
            .finish()
    }
}

impl ExecSlots {
    /// `total` slots (at least one), scope limits from `limits`.
    pub(crate) fn new(total: usize, limits: ScopeLimits) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                free: total.max(1),
                root: Scope::new(None),
                agents: HashMap::new(),
                turns: VecDeque::new(),
            }),
            limits,
        })
    }

    #[cfg(test)]
    /// No scope has a limit of its own.
    pub(crate) fn unlimited(total: usize) -> Arc<Self> {
        Self::new(total, Arc::new(|_| None))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A slot for a call of `scope`: at once when one is free for it, else when its turn
    /// comes. Dropping the future before then gives up its place in the queue.
    pub(crate) fn acquire(
        self: &Arc<Self>,
        scope: Option<&Arc<str>>,
    ) -> impl Future<Output = ExecSlot> + Send + use<> {
        Self::wait(self.take_or_queue(scope, |key| (self.limits)(key)))
    }

    /// [`ExecSlots::acquire`] for a call whose scope's limit is already known (the supervisor
    /// holds the call's resolved scope): nothing is looked up.
    pub(crate) fn acquire_limited(
        self: &Arc<Self>,
        scope: &Arc<str>,
        limit: Option<usize>,
    ) -> impl Future<Output = ExecSlot> + Send + use<> {
        Self::wait(self.take_or_queue(Some(scope), |_| limit))
    }

    /// The slot taken, or the wait for the queued one.
    async fn wait(wait: Result<ExecSlot, Queued>) -> ExecSlot {
        match wait {
            Ok(slot) => slot,
            Err(mut queued) => match (&mut queued.rx).await {
                Ok(slot) => {
                    queued.granted = true;
                    slot
                }
                // The sender lives in the queue until it is granted; `give_back` never drops
                // it unsent, so this cannot happen while the slots exist.
                Err(_) => std::future::pending().await,
            },
        }
    }

    fn take_or_queue(
        self: &Arc<Self>,
        scope: Option<&Arc<str>>,
        limit: impl FnOnce(&str) -> Option<usize>,
    ) -> Result<ExecSlot, Queued> {
        let mut st = self.lock();
        let st = &mut *st;
        let free = st.free;
        let s = match scope {
            None => &mut st.root,
            Some(key) => st
                .agents
                .entry(key.clone())
                .or_insert_with(|| Scope::new(limit(key))),
        };
        // Nobody waits while a slot is free (every grant ends with no free slot or no scope
        // in turn), so a free slot below the scope's limit is this caller's.
        if free > 0 && s.running < s.limit {
            s.running += 1;
            st.free -= 1;
            return Ok(ExecSlot {
                slots: Some(self.clone()),
                scope: scope.cloned(),
            });
        }
        let (tx, rx) = oneshot::channel();
        s.waiters.push_back(Waiter { tx });
        let ready = s.running < s.limit && !s.in_turn;
        if ready {
            s.in_turn = true;
        }
        if ready {
            st.turns.push_back(scope.cloned());
        }
        Err(Queued {
            rx,
            granted: false,
            slots: self.clone(),
            scope: scope.cloned(),
        })
    }

    /// A slot of `scope` is free again: the next scope in turn may take it.
    fn give_back(self: &Arc<Self>, scope: Option<Arc<str>>) {
        let mut st = self.lock();
        st.free += 1;
        let back_in_turn = {
            let s = scope_mut(&mut st, scope.as_deref());
            match s {
                Some(s) => {
                    s.running -= 1;
                    // A scope that was at its limit may run again: back in the ring, last.
                    let rejoin = !s.in_turn && !s.waiters.is_empty();
                    if rejoin {
                        s.in_turn = true;
                    }
                    rejoin
                }
                None => false,
            }
        };
        if back_in_turn {
            st.turns.push_back(scope.clone());
        }
        self.grant(&mut st);
        forget_if_idle(&mut st, scope.as_deref());
    }

    /// Hands free slots to waiting callers, one per scope in turn.
    fn grant(self: &Arc<Self>, st: &mut State) {
        while st.free > 0 {
            let Some(key) = st.turns.pop_front() else {
                return;
            };
            let Some(s) = scope_mut(st, key.as_deref()) else {
                continue;
            };
            s.in_turn = false;
            if s.running >= s.limit {
                // Out of the ring until one of its calls ends (`give_back`).
                continue;
            }
            let mut granted = false;
            while let Some(w) = s.waiters.pop_front() {
                let slot = ExecSlot {
                    slots: Some(self.clone()),
                    scope: key.clone(),
                };
                match w.tx.send(slot) {
                    Ok(()) => {
                        granted = true;
                        break;
                    }
                    Err(mut slot) => {
                        // That caller stopped waiting: the slot was never taken.
                        slot.slots = None;
                    }
                }
            }
            if granted {
                s.running += 1;
                let more = !s.waiters.is_empty() && s.running < s.limit;
                if more {
                    s.in_turn = true;
                }
                st.free -= 1;
                if more {
                    st.turns.push_back(key.clone());
                }
            }
            forget_if_idle(st, key.as_deref());
        }
    }

    /// A caller stopped waiting before its turn (its call was cancelled): count it out, and
    /// sweep the queue once half of it is such callers, so a cancel storm cannot grow it.
    fn gone(&self, scope: Option<&str>) {
        let mut st = self.lock();
        if let Some(s) = scope_mut(&mut st, scope) {
            s.gone += 1;
            if s.gone * 2 > s.waiters.len() {
                s.waiters.retain(|w| !w.tx.is_closed());
                s.gone = 0;
            }
        }
        forget_if_idle(&mut st, scope);
    }

    #[cfg(test)]
    /// Calls running and waiting in `scope`, for tests and diagnostics.
    pub(crate) fn counts(&self, scope: Option<&str>) -> (usize, usize) {
        let mut st = self.lock();
        scope_mut(&mut st, scope).map_or((0, 0), |s| {
            let waiting = s.waiters.iter().filter(|w| !w.tx.is_closed()).count();
            (s.running, waiting)
        })
    }

    #[cfg(test)]
    /// Slots free now.
    pub(crate) fn available(&self) -> usize {
        self.lock().free
    }
}

fn scope_mut<'a>(st: &'a mut State, scope: Option<&str>) -> Option<&'a mut Scope> {
    match scope {
        None => Some(&mut st.root),
        Some(key) => st.agents.get_mut(key),
    }
}

/// Drops an agent scope's entry once it has nothing running or waiting.
fn forget_if_idle(st: &mut State, scope: Option<&str>) {
    if let Some(key) = scope
        && st
            .agents
            .get(key)
            .is_some_and(|s| s.is_idle() && !s.in_turn)
    {
        st.agents.remove(key);
        if st.agents.capacity() > 64 && st.agents.len() < st.agents.capacity() / 4 {
            st.agents.shrink_to(64);
        }
    }
}

/// A caller waiting for its turn.
struct Queued {
    rx: oneshot::Receiver<ExecSlot>,
    granted: bool,
    slots: Arc<ExecSlots>,
    scope: Option<Arc<str>>,
}

impl Drop for Queued {
    fn drop(&mut self) {
        if self.granted {
            return;
        }
        // Granted in the meantime but never received: the slot comes back through its own drop.
        self.rx.close();
        if let Ok(slot) = self.rx.try_recv() {
            drop(slot);
            return;
        }
        self.slots.gone(self.scope.as_deref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use futures::FutureExt;

    fn key(s: &str) -> Option<Arc<str>> {
        Some(Arc::from(s))
    }

    fn limits(table: &'static [(&'static str, usize)]) -> ScopeLimits {
        Arc::new(move |k: &str| table.iter().find(|(n, _)| *n == k).map(|(_, l)| *l))
    }

    /// Polls a future once: its output if it was ready.
    fn now<F: Future + Unpin>(f: &mut F) -> Option<F::Output> {
        f.now_or_never()
    }

    #[tokio::test]
    async fn a_flooding_scope_delays_another_scopes_call_by_one_turn() {
        let slots = ExecSlots::unlimited(1);
        let held = slots.acquire(key("a").as_ref()).await;
        let mut a: Vec<_> = (0..1000)
            .map(|_| Box::pin(slots.acquire(key("a").as_ref())))
            .collect();
        let mut b = Box::pin(slots.acquire(key("b").as_ref()));
        let mut root = Box::pin(slots.acquire(None));
        assert!(now(&mut b).is_none() && now(&mut root).is_none());
        // Turn order: a (queued first), b, root, then a again.
        drop(held);
        let first = now(&mut a[0]).expect("a's first waiter has the slot");
        assert!(now(&mut b).is_none());
        drop(first);
        let got_b = now(&mut b).expect("b's call is next, after one turn of a");
        assert!(now(&mut a[1]).is_none() && now(&mut root).is_none());
        drop(got_b);
        let got_root = now(&mut root).expect("then the root scope's call");
        drop(got_root);
        assert!(now(&mut a[1]).is_some(), "then a again, in arrival order");
        assert_eq!(slots.counts(Some("b")), (0, 0));
        assert_eq!(slots.counts(None), (0, 0));
    }

    #[tokio::test]
    async fn a_limit_given_with_the_call_holds_without_a_lookup() {
        // The lookup knows no limit; the caller's limit (its resolved scope's) is what counts.
        let slots = ExecSlots::unlimited(4);
        let a: Arc<str> = Arc::from("a");
        let a1 = slots.acquire_limited(&a, Some(1)).await;
        let mut a2 = Box::pin(slots.acquire_limited(&a, Some(1)));
        assert!(now(&mut a2).is_none(), "a is at the limit it came with");
        assert!(slots.acquire(key("b").as_ref()).now_or_never().is_some());
        drop(a1);
        assert!(now(&mut a2).is_some());
    }

    #[tokio::test]
    async fn a_scope_never_runs_more_than_its_limit_and_others_use_the_rest() {
        let slots = ExecSlots::new(4, limits(&[("a", 2)]));
        let a1 = slots.acquire(key("a").as_ref()).await;
        let _a2 = slots.acquire(key("a").as_ref()).await;
        let mut a3 = Box::pin(slots.acquire(key("a").as_ref()));
        assert!(
            now(&mut a3).is_none(),
            "a is at its limit though slots are free"
        );
        assert_eq!(slots.available(), 2);
        let _b1 = slots.acquire(key("b").as_ref()).await;
        let _r1 = slots.acquire(None).await;
        let mut b2 = Box::pin(slots.acquire(key("b").as_ref()));
        assert!(now(&mut b2).is_none(), "every slot is taken");
        // a's slot comes free: a may run again, but b waited in turn and a was not in it.
        drop(a1);
        let got_b2 = now(&mut b2);
        assert!(got_b2.is_some());
        assert!(now(&mut a3).is_none());
    }

    #[tokio::test]
    async fn a_slot_freed_below_the_limit_goes_to_the_scope_at_its_limit() {
        let slots = ExecSlots::new(8, limits(&[("a", 1)]));
        let a1 = slots.acquire(key("a").as_ref()).await;
        let mut a2 = Box::pin(slots.acquire(key("a").as_ref()));
        assert!(now(&mut a2).is_none());
        drop(a1);
        assert!(now(&mut a2).is_some());
    }

    #[tokio::test]
    async fn callers_that_stop_waiting_are_swept_and_never_take_a_slot() {
        let slots = ExecSlots::unlimited(1);
        let held = slots.acquire(None).await;
        for _ in 0..10_000 {
            let mut f = Box::pin(slots.acquire(key("a").as_ref()));
            assert!(now(&mut f).is_none());
        }
        {
            let st = slots.lock();
            let a = st.agents.get("a").map_or(0, |s| s.waiters.len());
            assert!(a <= 2, "{a} dead waiters kept");
        }
        let mut live = Box::pin(slots.acquire(key("a").as_ref()));
        assert!(now(&mut live).is_none());
        drop(held);
        let got = now(&mut live);
        assert!(got.is_some());
        assert_eq!(slots.available(), 0);
    }

    #[tokio::test]
    async fn a_slot_granted_to_a_caller_that_then_leaves_comes_back() {
        let slots = ExecSlots::unlimited(1);
        let held = slots.acquire(None).await;
        let waiting = slots.acquire(key("a").as_ref());
        drop(held);
        // Granted (sent) but never received.
        drop(waiting);
        assert_eq!(slots.available(), 1);
        assert!(slots.lock().agents.is_empty(), "an idle scope is forgotten");
    }

    #[tokio::test]
    async fn idle_scopes_are_forgotten() {
        let slots = ExecSlots::unlimited(2);
        for i in 0..1000 {
            let name = format!("agent-{i}");
            let s = slots.acquire(Some(&Arc::from(name.as_str()))).await;
            drop(s);
        }
        assert!(slots.lock().agents.is_empty());
        assert_eq!(slots.available(), 2);
    }

    proptest::proptest! {
        /// Whatever the order of arrivals, departures and releases: no scope runs past its
        /// limit, no more than the total run, and a free slot never sits beside a waiting
        /// caller that may take it.
        #[test]
        fn slots_stay_bounded_and_never_idle_beside_a_waiter(
            ops in proptest::collection::vec((0u8..4, 0u8..3), 1..300)
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            rt.block_on(async move {
                let slots = ExecSlots::new(3, limits(&[("a", 1), ("b", 2)]));
                let names = [key("a"), key("b"), None];
                let limit = [1, 2, usize::MAX];
                type Wait = std::pin::Pin<Box<dyn Future<Output = ExecSlot> + Send>>;
                let mut held: Vec<ExecSlot> = Vec::new();
                let mut waiting: Vec<(usize, Wait)> = Vec::new();
                for (op, who) in ops {
                    let who = who as usize;
                    match op {
                        0 | 1 => waiting.push((who, Box::pin(slots.acquire(names[who].as_ref())))),
                        2 if !held.is_empty() => drop(held.remove(0)),
                        3 if !waiting.is_empty() => drop(waiting.remove(0)),
                        _ => {}
                    }
                    let mut still = Vec::new();
                    for (w, mut f) in waiting.drain(..) {
                        match now(&mut f) {
                            Some(s) => held.push(s),
                            None => still.push((w, f)),
                        }
                    }
                    waiting = still;
                    let running = |n: &Option<Arc<str>>| {
                        held.iter().filter(|s| s.scope() == n.as_ref()).count()
                    };
                    proptest::prop_assert!(held.len() <= 3);
                    for (n, l) in names.iter().zip(limit) {
                        proptest::prop_assert!(running(n) <= l);
                    }
                    proptest::prop_assert_eq!(slots.available(), 3 - held.len());
                    for (w, _) in &waiting {
                        let may_run = held.len() < 3 && running(&names[*w]) < limit[*w];
                        proptest::prop_assert!(!may_run, "a slot is free for a waiting caller");
                    }
                }
                drop(held);
                drop(waiting);
                proptest::prop_assert_eq!(slots.available(), 3);
                proptest::prop_assert!(slots.lock().agents.is_empty());
                Ok(())
            })?;
        }
    }
}
