//! Giving memory back after a burst.
//!
//! The binary's allocator, mimalloc, returns freed pages to the operating system a while after
//! they are freed (its purge delay, 1 s by default), but only when it is next called on one of its
//! slow paths; a toolrt that goes idle after a burst of calls would otherwise keep what the burst
//! freed for good. [`give_back_when_idle`] watches for the end of a burst and then makes such
//! calls, and shrinks the maps a burst grew. (The binary is also built with mimalloc's `no_thp`:
//! transparent huge pages would make its memory come and go in 2 MiB pieces.)

use std::time::Duration;

use crate::dispatch::Dispatcher;

/// How long without a new result counts as the end of a burst, and the time between nudges.
const IDLE: Duration = Duration::from_secs(2);

/// How many quiet [`IDLE`] periods after a burst the allocator is nudged. The blocking pool's
/// threads exit 10 s after their last job (tokio's keep-alive) and only then hand their pages
/// back, a purge delay before they can go: so the nudging lasts past that.
const QUIET_NUDGES: u32 = 8;

/// Runs until aborted: once no result was sent for [`IDLE`] after a burst, shrinks the
/// dispatcher's maps, then nudges the allocator once per quiet [`IDLE`] period,
/// [`QUIET_NUDGES`] times. Calls still running (a long command) do not hold this back.
pub(crate) async fn give_back_when_idle(dispatcher: Dispatcher) {
    let emitter = dispatcher.pipeline().emitter.clone();
    let mut seen = emitter.results_sent();
    let mut quiet = QUIET_NUDGES;
    let mut tick = tokio::time::interval(IDLE);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let now = emitter.results_sent();
        if now != seen {
            seen = now;
            quiet = 0;
            continue;
        }
        if quiet < QUIET_NUDGES {
            if quiet == 0 {
                dispatcher.shrink();
            }
            nudge_allocator();
            quiet += 1;
        }
    }
}

/// Makes mimalloc take its slow path once: allocating and freeing one huge block (address space
/// only, never touched) frees a page, and freeing a page is when mimalloc gives back what it has
/// held past its purge delay.
pub(crate) fn nudge_allocator() {
    let mut block: Vec<u8> = Vec::new();
    // Under an address-space limit the allocation may fail: then there is nothing to nudge
    // with, and nothing lost.
    if block.try_reserve_exact(64 << 20).is_ok() {
        drop(std::hint::black_box(block));
    }
}
