//! Many calls' time limits, kept by one task instead of a timer per call.
//!
//! On a current-thread runtime, a timer that becomes the earliest one wakes the I/O driver (an
//! `eventfd` write and one more `epoll_wait` turn); a timer per call did that on nearly every
//! call. Here a call only records its deadline, and the sweeper task is woken only when a
//! deadline is earlier than the one it already sleeps until, which calls that share a time limit
//! make rare.
//!
//! [`Timed`] is the table itself: entries by key, each with a deadline and a value that is
//! [`Expire::expire`]d (under the table's lock) when the deadline passes. Client tools keep their
//! wait table in one, so a waiting call is one entry and one lock; [`Deadlines`] is the form MCP
//! connections and library client tools use, a cancellation token per call.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// What happens to an entry of a [`Timed`] table whose deadline passed; called once, under the
/// table's lock, after the entry left the table.
pub(crate) trait Expire: Send + 'static {
    /// The deadline passed.
    fn expire(self);
}

impl Expire for CancellationToken {
    fn expire(self) {
        self.cancel();
    }
}

/// Entries with deadlines, by key, and the task that expires them. The task starts with the
/// first entry (on the caller's runtime) and is aborted when this is dropped. Keys are the
/// owner's own sequence numbers (never chosen by a client), each used once.
pub(crate) struct Timed<T: Expire> {
    shared: Arc<Shared<T>>,
    sweeper: OnceLock<tokio::task::AbortHandle>,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    wake: tokio::sync::Notify,
}

struct State<T> {
    entries: HashMap<u64, (Instant, T), BuildHasherDefault<SeqHasher>>,
    /// What the sweeper sleeps until (None: it waits for an entry).
    target: Option<Instant>,
}

/// The tables' hash. Their keys are their owners' own sequence numbers, so they need no defence
/// against chosen keys: one multiplication spreads them (SipHash cost more than the rest of an
/// insert).
#[derive(Default)]
struct SeqHasher(u64);

impl Hasher for SeqHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(*b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        // Fibonacci hashing: the top bits, which the table's tags use, differ too.
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl<T: Expire> Default for Timed<T> {
    fn default() -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    entries: HashMap::default(),
                    target: None,
                }),
                wake: tokio::sync::Notify::new(),
            }),
            sweeper: OnceLock::new(),
        }
    }
}

impl<T: Expire> Timed<T> {
    /// Adds `value` under `key`, expiring `timeout` from now. Must be called on a tokio runtime
    /// (the first entry starts the sweeper there).
    pub(crate) fn insert(&self, key: u64, timeout: Duration, value: T) {
        self.sweeper
            .get_or_init(|| tokio::spawn(self.shared.clone().run()).abort_handle());
        let at = Instant::now() + timeout;
        let mut state = self.shared.lock();
        state.entries.insert(key, (at, value));
        let sooner = state.target.is_none_or(|target| at < target);
        if sooner {
            // Set here so that a burst of entries wakes the sweeper once.
            state.target = Some(at);
        }
        drop(state);
        if sooner {
            self.shared.wake.notify_one();
        }
    }

    /// Takes the entry of `key` out, if it is still there, and runs `then` on its value under
    /// the table's lock (so that nobody sees the entry gone before `then` ran).
    pub(crate) fn remove_then<R>(&self, key: u64, then: impl FnOnce(T) -> R) -> Option<R> {
        let mut state = self.shared.lock();
        state.entries.remove(&key).map(|(_, value)| then(value))
    }

    /// Takes every entry out (their values are dropped after the lock is released).
    pub(crate) fn drain(&self) {
        let mut state = self.shared.lock();
        let drained: Vec<_> = state.entries.drain().collect();
        state.entries.shrink_to_fit();
        drop(state);
        drop(drained);
    }

    /// How many entries there are.
    pub(crate) fn len(&self) -> usize {
        self.shared.lock().entries.len()
    }
}

impl<T: Expire> Drop for Timed<T> {
    fn drop(&mut self) {
        if let Some(sweeper) = self.sweeper.get() {
            sweeper.abort();
        }
    }
}

impl<T: Expire> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Expires the entries past their deadline; the earliest deadline left.
    fn sweep(&self) -> Option<Instant> {
        let now = Instant::now();
        let mut state = self.lock();
        let expired: Vec<u64> = state
            .entries
            .iter()
            .filter(|(_, (at, _))| *at <= now)
            .map(|(key, _)| *key)
            .collect();
        for key in expired {
            if let Some((_, value)) = state.entries.remove(&key) {
                value.expire();
            }
        }
        let next = state.entries.values().map(|(at, _)| *at).min();
        state.target = next;
        next
    }

    /// The sweeper: runs until aborted.
    async fn run(self: Arc<Self>) {
        loop {
            match self.sweep() {
                Some(at) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at.into()) => {}
                        _ = self.wake.notified() => {}
                    }
                }
                None => self.wake.notified().await,
            }
        }
    }
}

/// Deadlines of calls in flight, each a cancellation token that the sweeper cancels.
#[derive(Default)]
pub(crate) struct Deadlines {
    calls: Timed<CancellationToken>,
    next_id: AtomicU64,
}

/// A call's entry in [`Deadlines`]: [`Deadline::expired`] completes when the deadline passes;
/// dropping it forgets the call.
pub(crate) struct Deadline<'a> {
    calls: &'a Timed<CancellationToken>,
    id: u64,
    expired: CancellationToken,
}

impl std::fmt::Debug for Deadlines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deadlines")
            .field("calls", &self.calls.len())
            .finish()
    }
}

impl Deadlines {
    /// Records a call that must end within `timeout`. Must be called on a tokio runtime (the
    /// first call starts the sweeper there).
    pub(crate) fn start(&self, timeout: Duration) -> Deadline<'_> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let expired = CancellationToken::new();
        self.calls.insert(id, timeout, expired.clone());
        Deadline {
            calls: &self.calls,
            id,
            expired,
        }
    }
}

impl Deadline<'_> {
    /// Completes when the deadline has passed.
    pub(crate) async fn expired(&self) {
        self.expired.cancelled().await
    }
}

impl Drop for Deadline<'_> {
    fn drop(&mut self) {
        self.calls.remove_then(self.id, drop);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits (bounded) for a deadline to pass.
    async fn expires(deadline: &Deadline<'_>) -> bool {
        tokio::time::timeout(Duration::from_secs(10), deadline.expired())
            .await
            .is_ok()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn deadlines_expire_sooner_ones_first_and_dropped_ones_are_forgotten() {
        let deadlines = Deadlines::default();
        // The sweeper sleeps until the hour-long deadline; a sooner one must still wake it.
        let long = deadlines.start(Duration::from_secs(3600));
        let short = deadlines.start(Duration::from_millis(20));
        assert!(expires(&short).await, "the sooner deadline expired");
        assert!(!long.expired.is_cancelled(), "the later one did not");
        // A call that ended is no longer tracked; one past its deadline is removed by the sweep.
        let ended = deadlines.start(Duration::from_millis(10));
        drop(ended);
        let state = || deadlines.calls.len();
        assert_eq!(state(), 1, "only the hour-long call is left");
        drop(short);
        drop(long);
        assert_eq!(state(), 0);
        // Idle, then a new call: the sweeper wakes for it.
        let again = deadlines.start(Duration::from_millis(10));
        assert!(expires(&again).await);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn dropping_the_deadlines_stops_the_sweeper() {
        let deadlines = Deadlines::default();
        let _ = deadlines.start(Duration::from_secs(3600));
        let sweeper = deadlines.calls.sweeper.get().unwrap().clone();
        drop(deadlines);
        // Aborting is asynchronous: the task ends at its next poll.
        tokio::time::timeout(Duration::from_secs(10), async {
            while !sweeper.is_finished() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the sweeper ended");
    }
}
