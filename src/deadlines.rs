//! Many calls' time limits, kept by one task instead of a timer per call.
//!
//! On a current-thread runtime, a timer that becomes the earliest one wakes the I/O driver (an
//! `eventfd` write and one more `epoll_wait` turn); a timer per call did that on nearly every
//! call. Here a call only records its deadline, and the sweeper task is woken only when a
//! deadline is earlier than the one it already sleeps until, which calls that share a time limit
//! make rare. MCP connections and client tools use it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// Deadlines of calls in flight and the task that expires them. The task starts with the first
/// deadline (on the caller's runtime) and is aborted when this is dropped.
#[derive(Default)]
pub(crate) struct Deadlines {
    shared: Arc<Shared>,
    sweeper: OnceLock<tokio::task::AbortHandle>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    wake: tokio::sync::Notify,
}

#[derive(Default)]
struct State {
    next_id: u64,
    calls: HashMap<u64, (Instant, CancellationToken)>,
    /// What the sweeper sleeps until (None: it waits for a call).
    target: Option<Instant>,
}

/// A call's entry in [`Deadlines`]: [`Deadline::expired`] completes when the deadline passes;
/// dropping it forgets the call.
pub(crate) struct Deadline<'a> {
    shared: &'a Shared,
    id: u64,
    expired: CancellationToken,
}

impl std::fmt::Debug for Deadlines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deadlines")
            .field("calls", &self.shared.lock().calls.len())
            .finish()
    }
}

impl Deadlines {
    /// Records a call that must end within `timeout`. Must be called on a tokio runtime (the
    /// first call starts the sweeper there).
    pub(crate) fn start(&self, timeout: Duration) -> Deadline<'_> {
        self.sweeper
            .get_or_init(|| tokio::spawn(self.shared.clone().run()).abort_handle());
        let at = Instant::now() + timeout;
        let expired = CancellationToken::new();
        let mut state = self.shared.lock();
        let id = state.next_id;
        state.next_id += 1;
        state.calls.insert(id, (at, expired.clone()));
        let sooner = state.target.is_none_or(|target| at < target);
        if sooner {
            // Set here so that a burst of calls wakes the sweeper once.
            state.target = Some(at);
        }
        drop(state);
        if sooner {
            self.shared.wake.notify_one();
        }
        Deadline {
            shared: &self.shared,
            id,
            expired,
        }
    }
}

impl Drop for Deadlines {
    fn drop(&mut self) {
        if let Some(sweeper) = self.sweeper.get() {
            sweeper.abort();
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
        self.shared.lock().calls.remove(&self.id);
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Cancels the tokens of calls past their deadline; the earliest deadline left.
    fn sweep(&self) -> Option<Instant> {
        let now = Instant::now();
        let mut state = self.lock();
        state.calls.retain(|_, (at, expired)| {
            if *at <= now {
                expired.cancel();
                false
            } else {
                true
            }
        });
        let next = state.calls.values().map(|(at, _)| *at).min();
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
        let state = || deadlines.shared.lock().calls.len();
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
        let sweeper = deadlines.sweeper.get().unwrap().clone();
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
