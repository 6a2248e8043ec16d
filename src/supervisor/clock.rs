//! Per-stage timings of a call: [`StageClock`] for benchmarks, and the call's own debug line.

use std::sync::Arc;
use std::time::Instant;

/// The parts of a call's life that [`StageClock`] measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// From admission until the supervisor starts (spawn and scheduling).
    Queue,
    /// The validate stage.
    Validate,
    /// Waiting for an execution slot.
    Slot,
    /// PreToolUse hooks.
    PreHooks,
    /// The permission decision (without time waiting for a client's answer).
    Permission,
    /// The execute stage.
    Execute,
    /// PostToolUse / PostToolUseFailure hooks.
    PostHooks,
    /// The output budget.
    Budget,
}

impl Stage {
    /// Every stage, in pipeline order.
    pub const ALL: [Stage; 8] = [
        Stage::Queue,
        Stage::Validate,
        Stage::Slot,
        Stage::PreHooks,
        Stage::Permission,
        Stage::Execute,
        Stage::PostHooks,
        Stage::Budget,
    ];

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Queue => "queue",
            Stage::Validate => "validate",
            Stage::Slot => "slot",
            Stage::PreHooks => "pre_hooks",
            Stage::Permission => "permission",
            Stage::Execute => "execute",
            Stage::PostHooks => "post_hooks",
            Stage::Budget => "budget",
        }
    }
}

/// Receives how long each stage of each call took (benchmarks).
pub trait StageClock: Send + Sync {
    /// One measurement.
    fn record(&self, stage: Stage, nanos: u64);
}

/// Times stages when a clock is set (benchmarks) or debug logging is on.
pub(super) struct Lap<'a> {
    clock: Option<&'a dyn StageClock>,
    /// Nanoseconds per stage the call went through, for its debug line (`TOOLRT_LOG=debug`);
    /// boxed so a call without it carries one word.
    debug: Option<Box<[Option<u64>; Stage::ALL.len()]>>,
    last: Option<Instant>,
}

impl<'a> Lap<'a> {
    pub(super) fn new(clock: Option<&'a Arc<dyn StageClock>>, debug: bool, since: Instant) -> Self {
        let clock = clock.map(|c| &**c);
        Self {
            clock,
            last: (clock.is_some() || debug).then_some(since),
            debug: debug.then(|| Box::new([None; Stage::ALL.len()])),
        }
    }

    /// Ends `stage` now and starts the next one.
    pub(super) fn mark(&mut self, stage: Stage) {
        if let Some(last) = self.last {
            let now = Instant::now();
            let nanos = (now - last).as_nanos() as u64;
            if let Some(clock) = self.clock {
                clock.record(stage, nanos);
            }
            if let Some(times) = self.debug.as_mut() {
                *times[stage as usize].get_or_insert(0) += nanos;
            }
            self.last = Some(now);
        }
    }

    /// Restarts timing now (after a wait that belongs to no stage).
    pub(super) fn restart(&mut self) {
        if self.last.is_some() {
            self.last = Some(Instant::now());
        }
    }

    /// The stage timings for the call's debug line: `validate=12.3µs slot=0.1µs …` (stages
    /// the call did not reach are left out).
    pub(super) fn summary(&self) -> String {
        let Some(times) = &self.debug else {
            return String::new();
        };
        let mut out = String::new();
        for (stage, nanos) in Stage::ALL.iter().zip(times.iter()) {
            if let Some(nanos) = nanos {
                out.push_str(&format!(
                    "{}={:.1}µs ",
                    stage.name(),
                    *nanos as f64 / 1000.0
                ));
            }
        }
        out.pop();
        out
    }
}
