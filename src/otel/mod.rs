//! OpenTelemetry traces of calls: one span per call, named and attributed after the GenAI
//! semantic conventions (`execute_tool <tool>`), with one child span per stage the call went
//! through, exported over OTLP/HTTP (JSON) when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
//!
//! The supervisor records a call's stages as it already times them (its `Lap`): a
//! [`CallTrace`] is a few instants pushed to a vector, and at the end the whole record goes to
//! the exporter's bounded queue with one `try_send`. Ids, timestamps and JSON are made on the
//! exporter's task, never on the call's path. A call without tracing carries no record: the
//! supervisor's cost is one branch on an `Option`.
//!
//! The exporter (the `otel` feature, on in the binary) is a task of its own that sends batches
//! and never makes a call wait: a full queue drops the record and counts it, a collector that
//! is slow or down only delays the task. At shutdown what is queued is sent, within a grace
//! period.
//!
//! Why not the `opentelemetry` SDK crates: their batch processor runs on a thread of its own
//! with a blocking HTTP client (a second runtime on a third thread, which panics when built or
//! dropped inside ours), their HTTP exporter pulls in the metrics SDK and protobuf code
//! generation, and toolrt needs no tracer API, context propagation or sampling: its spans are
//! built once per call from timings it already takes. A hundred lines of OTLP/JSON over the
//! reqwest client the crate already has do the same with none of that.

// Without the exporter nothing constructs a tracer; the recording half is kept so the
// supervisor reads the same either way.
#![cfg_attr(not(feature = "otel"), allow(dead_code))]

#[cfg(feature = "otel")]
mod config;
#[cfg(feature = "otel")]
mod encode;
#[cfg(feature = "otel")]
mod export;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

use tokio::sync::mpsc;

#[cfg(feature = "otel")]
pub use config::{OtlpConfig, OtlpConfigError};

/// Where finished calls' records go: the exporter's queue.
pub(crate) struct Tracer {
    queue: mpsc::Sender<Box<CallTrace>>,
    /// Records dropped because the queue was full.
    dropped: AtomicU64,
    #[cfg(feature = "otel")]
    exporter: export::Handle,
}

impl Tracer {
    /// Starts recording one call, admitted at `admitted`.
    pub(crate) fn begin(
        self: &Arc<Self>,
        tool: &str,
        id: &Arc<str>,
        agent: Option<&Arc<str>>,
        admitted: Instant,
    ) -> Box<CallTrace> {
        Box::new(CallTrace {
            tracer: self.clone(),
            tool: tool.into(),
            id: id.clone(),
            agent: agent.cloned(),
            wall: SystemTime::now() - admitted.elapsed(),
            start: admitted,
            end: admitted,
            stages: Vec::with_capacity(8),
            next: "queue",
            ended_in: None,
            decision: None,
            outcome: "",
        })
    }

    /// How many finished calls were not exported because the queue was full.
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Queues a finished call's record; a full queue drops it (and counts it) rather than wait.
    fn send(&self, trace: Box<CallTrace>) {
        if self.queue.try_send(trace).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// One stage the call went through.
#[derive(Debug, Clone)]
pub(crate) struct StageSpan {
    /// The stage's name (the child span's name).
    pub name: &'static str,
    /// When it began and ended.
    pub start: Instant,
    pub end: Instant,
    /// Whether the call ended in it without success.
    pub error: bool,
}

/// One call's record, filled by the supervisor as the call goes and sent when it ends.
pub(crate) struct CallTrace {
    tracer: Arc<Tracer>,
    /// The tool name as the call gave it.
    pub tool: Box<str>,
    /// The call's `tool_use_id`.
    pub id: Arc<str>,
    /// The call's `agent_id`.
    pub agent: Option<Arc<str>>,
    /// The wall-clock time of `start`.
    pub wall: SystemTime,
    /// Admission, and the result.
    pub start: Instant,
    pub end: Instant,
    /// The stages, in the order the call went through them.
    pub stages: Vec<StageSpan>,
    /// The stage that begins after the last one recorded.
    next: &'static str,
    /// The stage whose verdict ended the call, when the supervisor knows it better than "the
    /// one in progress" (a verdict carried from validation to the call's turn).
    ended_in: Option<&'static str>,
    /// The permission decision (`allow`, `deny`, `ask`) and what decided it.
    pub decision: Option<(&'static str, String)>,
    /// The call's outcome (`success`, `denied`, …).
    pub outcome: &'static str,
}

impl CallTrace {
    /// Records a stage that ended at `end`; `next` is the stage that follows it.
    pub(crate) fn stage(
        &mut self,
        name: &'static str,
        start: Instant,
        end: Instant,
        next: &'static str,
    ) {
        self.stages.push(StageSpan {
            name,
            start,
            end,
            error: false,
        });
        self.next = next;
    }

    /// The call is ending on `stage`'s verdict, reached earlier.
    pub(crate) fn ended_in(&mut self, stage: &'static str) {
        self.ended_in = Some(stage);
    }

    /// The permission decision: its behaviour and what decided it (the last decision wins).
    pub(crate) fn decided(&mut self, behavior: &'static str, by: String) {
        self.decision = Some((behavior, by));
    }

    /// Ends the record and queues it. `rejected`: the call ended before it ran to the end
    /// (a denial, a schema error, a cancellation …), in the stage in progress since `since`;
    /// otherwise a call that ran and did not succeed failed in its execute stage.
    pub(crate) fn finish(
        mut self: Box<Self>,
        outcome: &'static str,
        rejected: bool,
        since: Instant,
    ) {
        let now = Instant::now();
        self.end = now;
        self.outcome = outcome;
        let success = outcome == "success";
        if rejected {
            let earlier = self
                .ended_in
                .and_then(|name| self.stages.iter().rposition(|s| s.name == name));
            match earlier {
                Some(i) => self.stages[i].error = true,
                None => {
                    let name = self.ended_in.unwrap_or(self.next);
                    self.stages.push(StageSpan {
                        name,
                        start: since.max(self.start),
                        end: now,
                        error: true,
                    });
                }
            }
        } else if !success
            && let Some(execute) = self.stages.iter_mut().rfind(|s| s.name == "execute")
        {
            execute.error = true;
        }
        let tracer = self.tracer.clone();
        tracer.send(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tracer whose queue holds `capacity` records and that nobody reads.
    fn tracer(capacity: usize) -> (Arc<Tracer>, mpsc::Receiver<Box<CallTrace>>) {
        let (queue, rx) = mpsc::channel(capacity);
        let tracer = Tracer {
            queue,
            dropped: AtomicU64::new(0),
            #[cfg(feature = "otel")]
            exporter: export::Handle::none(),
        };
        (Arc::new(tracer), rx)
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        let (tracer, mut rx) = tracer(2);
        let id: Arc<str> = "c".into();
        for _ in 0..5 {
            let t = tracer.begin("Read", &id, None, Instant::now());
            t.finish("success", false, Instant::now());
        }
        assert_eq!(tracer.dropped(), 3);
        assert!(rx.try_recv().is_ok());
        assert!(rx.try_recv().is_ok());
        assert!(rx.try_recv().is_err());
    }

    /// Which stage span ends in error, for each way a call can end.
    #[test]
    fn the_stage_a_call_ended_in() {
        // (stages recorded, ended_in hint, outcome, rejected) → (names, the one in error)
        type Case<'a> = (
            &'a [&'a str],
            Option<&'a str>,
            &'a str,
            bool,
            &'a [&'a str],
            Option<usize>,
        );
        let cases: &[Case] = &[
            // Ran to the end and succeeded: no error anywhere.
            (
                &["queue", "validate", "execute", "budget"],
                None,
                "success",
                false,
                &["queue", "validate", "execute", "budget"],
                None,
            ),
            // Ran and failed: the execute span.
            (
                &["queue", "validate", "execute", "budget"],
                None,
                "failed",
                false,
                &["queue", "validate", "execute", "budget"],
                Some(2),
            ),
            // Denied in the permission stage, which had not ended: a span for it.
            (
                &["queue", "validate", "slot", "pre_hooks"],
                None,
                "denied",
                true,
                &["queue", "validate", "slot", "pre_hooks", "permission"],
                Some(4),
            ),
            // A schema error found in validation, answered at the call's turn.
            (
                &["queue", "validate"],
                Some("validate"),
                "schema_error",
                true,
                &["queue", "validate"],
                Some(1),
            ),
            // An unknown agent, found before validation ended.
            (
                &["queue"],
                Some("validate"),
                "denied",
                true,
                &["queue", "validate"],
                Some(1),
            ),
        ];
        let next = |name: &str| match name {
            "queue" => "validate",
            "validate" => "slot",
            "slot" => "pre_hooks",
            "pre_hooks" => "permission",
            "permission" => "execute",
            "execute" => "post_hooks",
            _ => "budget",
        };
        for (stages, hint, outcome, rejected, names, error) in cases {
            let (tracer, mut rx) = tracer(1);
            let id: Arc<str> = "c".into();
            let t0 = Instant::now();
            let mut t = tracer.begin("Bash", &id, None, t0);
            for name in *stages {
                let name: &'static str = Box::leak(name.to_string().into_boxed_str());
                t.stage(name, t0, t0, next(name));
            }
            if let Some(hint) = hint {
                t.ended_in(Box::leak(hint.to_string().into_boxed_str()));
            }
            t.finish(
                Box::leak(outcome.to_string().into_boxed_str()),
                *rejected,
                t0,
            );
            let got = rx.try_recv().expect("queued");
            let got_names: Vec<&str> = got.stages.iter().map(|s| s.name).collect();
            assert_eq!(&got_names, names, "{stages:?} {outcome}");
            let got_error = got.stages.iter().position(|s| s.error);
            assert_eq!(got_error, *error, "{stages:?} {outcome}");
            assert_eq!(
                got.stages.iter().filter(|s| s.error).count(),
                usize::from(error.is_some())
            );
        }
    }
}
