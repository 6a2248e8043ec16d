//! Per-stage timings of a call: [`StageClock`] for benchmarks, and the call's own debug line.

use std::sync::Arc;
use std::time::Instant;

use crate::call::{Rejection, ToolResult};
use crate::otel::CallTrace;

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

    /// The name of the stage after this one (the last: its own).
    fn next_name(self) -> &'static str {
        Stage::ALL[(self as usize + 1).min(Stage::ALL.len() - 1)].name()
    }

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

/// Times stages when a clock is set (benchmarks), debug logging is on or the call is traced.
pub(super) struct Lap<'a> {
    clock: Option<&'a dyn StageClock>,
    /// Boxed so a call with neither debug timings nor a trace carries one word.
    detail: Option<Box<Detail>>,
    last: Option<Instant>,
}

/// What a call keeps of its stages beyond a clock's samples.
struct Detail {
    /// Nanoseconds per stage the call went through, for its debug line (`TOOLRT_LOG=debug`).
    times: Option<[Option<u64>; Stage::ALL.len()]>,
    /// The call's span record, when calls are traced (OpenTelemetry).
    trace: Option<Box<CallTrace>>,
}

impl<'a> Lap<'a> {
    pub(super) fn new(
        clock: Option<&'a Arc<dyn StageClock>>,
        debug: bool,
        trace: Option<Box<CallTrace>>,
        since: Instant,
    ) -> Self {
        let clock = clock.map(|c| &**c);
        Self {
            clock,
            last: (clock.is_some() || debug || trace.is_some()).then_some(since),
            detail: (debug || trace.is_some()).then(|| {
                Box::new(Detail {
                    times: debug.then_some([None; Stage::ALL.len()]),
                    trace,
                })
            }),
        }
    }

    /// Ends `stage` now and starts the next one. Untimed, one branch, inlined.
    #[inline]
    pub(super) fn mark(&mut self, stage: Stage) {
        if let Some(last) = self.last {
            self.mark_timed(stage, last);
        }
    }

    /// [`Lap::mark`] when someone wants the times.
    #[inline(never)]
    fn mark_timed(&mut self, stage: Stage, last: Instant) {
        let now = Instant::now();
        let nanos = (now - last).as_nanos() as u64;
        if let Some(clock) = self.clock {
            clock.record(stage, nanos);
        }
        if let Some(detail) = self.detail.as_deref_mut() {
            if let Some(times) = detail.times.as_mut() {
                *times[stage as usize].get_or_insert(0) += nanos;
            }
            if let Some(trace) = detail.trace.as_mut() {
                trace.stage(stage.name(), last, now, stage.next_name());
            }
        }
        self.last = Some(now);
    }

    /// The call's span record, when it is traced.
    pub(super) fn trace(&mut self) -> Option<&mut CallTrace> {
        self.detail.as_deref_mut()?.trace.as_deref_mut()
    }

    /// The call ends on `stage`'s verdict, reached earlier (for its trace).
    pub(super) fn ended_in(&mut self, stage: Stage) {
        if let Some(trace) = self.trace() {
            trace.ended_in(stage.name());
        }
    }

    /// Ends the call's trace with its result and sends it to the exporter.
    pub(super) fn end_trace(&mut self, result: &Result<ToolResult, Rejection>) {
        if let Some(trace) = self.detail.as_mut().and_then(|d| d.trace.take()) {
            let (outcome, rejected) = match result {
                Ok(r) => (r.outcome, false),
                Err(r) => (r.outcome, true),
            };
            let since = self.last.unwrap_or_else(Instant::now);
            trace.finish(outcome.as_str(), rejected, since);
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
        let Some(times) = self.detail.as_ref().and_then(|d| d.times.as_ref()) else {
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
