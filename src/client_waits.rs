//! How many calls wait for an answer only the client can give (a `permission_response`, a
//! client tool's `execute_result`), and a wait for that count to leave zero.
//!
//! The server's reader is the only one who waits, and only while admission is full: it must not
//! stop reading input while the client owes an answer. So a call's wait costs two atomic adds
//! and one load; the reader's `Notify` is woken only when the count leaves zero while a reader
//! is armed. (A watch channel cost a round trip two locks, and eight `Notify`s when the count
//! left zero, whether or not anyone watched.)

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Notify;

/// The count of calls waiting for the client.
#[derive(Debug, Default)]
pub(crate) struct ClientWaits {
    count: AtomicUsize,
    /// Readers in [`ClientWaits::some`]: only then does leaving zero wake anyone.
    armed: AtomicUsize,
    left_zero: Notify,
}

impl ClientWaits {
    /// How many calls wait for the client now.
    pub(crate) fn now(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Counts one call as waiting for the client until the guard is dropped.
    pub(crate) fn start(&self) -> ClientWait<'_> {
        // SeqCst on both sides: either `some` sees this add, or this sees its arming (and its
        // `Notified`, made before it looked, is woken).
        if self.count.fetch_add(1, Ordering::SeqCst) == 0 && self.armed.load(Ordering::SeqCst) > 0 {
            self.left_zero.notify_waiters();
        }
        ClientWait(self)
    }

    /// Resolves once some call waits for the client (at once if one does). Cancel-safe.
    pub(crate) async fn some(&self) {
        let _armed = Armed::new(&self.armed);
        loop {
            // Made before the count is read: a `notify_waiters` after that read wakes it.
            let left_zero = self.left_zero.notified();
            if self.now() > 0 {
                return;
            }
            left_zero.await;
        }
    }
}

/// One call counted in [`ClientWaits`] while it lives.
#[must_use = "the call counts as waiting only while the guard lives"]
pub(crate) struct ClientWait<'a>(&'a ClientWaits);

impl Drop for ClientWait<'_> {
    fn drop(&mut self) {
        // Nobody waits for the count to fall.
        self.0.count.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A reader armed in [`ClientWaits::some`] while it lives.
struct Armed<'a>(&'a AtomicUsize);

impl<'a> Armed<'a> {
    fn new(armed: &'a AtomicUsize) -> Self {
        armed.fetch_add(1, Ordering::SeqCst);
        Self(armed)
    }
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures::FutureExt;

    use super::*;

    #[test]
    fn the_count_follows_the_guards() {
        let waits = ClientWaits::default();
        assert_eq!(waits.now(), 0);
        let a = waits.start();
        let b = waits.start();
        assert_eq!(waits.now(), 2);
        drop(a);
        assert_eq!(waits.now(), 1);
        drop(b);
        assert_eq!(waits.now(), 0);
    }

    #[tokio::test]
    async fn some_resolves_at_once_when_a_call_waits_and_is_woken_when_one_starts() {
        let waits = Arc::new(ClientWaits::default());
        let guard = waits.start();
        waits.some().await;
        drop(guard);
        assert_eq!(waits.armed.load(Ordering::SeqCst), 0, "disarmed when done");
        let watcher = tokio::spawn({
            let waits = waits.clone();
            async move { waits.some().await }
        });
        // Armed before the call starts, or the call is seen at once: it ends either way.
        while waits.armed.load(Ordering::SeqCst) == 0 && !watcher.is_finished() {
            tokio::task::yield_now().await;
        }
        let _guard = waits.start();
        watcher.await.unwrap();
        assert_eq!(waits.armed.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_dropped_wait_disarms() {
        let waits = ClientWaits::default();
        let mut wait = Box::pin(waits.some());
        assert!((&mut wait).now_or_never().is_none());
        assert_eq!(waits.armed.load(Ordering::SeqCst), 1);
        drop(wait);
        assert_eq!(waits.armed.load(Ordering::SeqCst), 0);
        // Leaving zero with nobody armed wakes nobody and costs no notification.
        drop(waits.start());
        assert_eq!(waits.now(), 0);
    }
}
