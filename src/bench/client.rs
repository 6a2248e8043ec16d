//! The client-tool figure: one call of a client tool — its line in, the whole pipeline, an
//! `execute` line out, an in-process responder that reads that line and answers with an
//! `execute_result` line, the result line out — against the same call of the built-in no-op
//! tool, in one runtime, interleaved, one call in flight. The difference is what a client tool
//! costs beyond a built-in: the extra line out and in.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use super::floors::elapsed_ns;
use super::stats::Dist;
use super::workload;
use crate::call::Outcome;
use crate::protocol::{self, ClientToolSpec, ServerMessage};
use crate::runtime::Runtime;
use crate::tools::noop::Noop;

/// The client tool's name.
const TOOL: &str = "BenchClient";

/// The client-tool figures (ns per call, one in flight).
pub(super) struct ClientFigures {
    /// A client tool's call, answered by the in-process responder.
    pub client_c1: Dist,
    /// The same call of the built-in no-op tool.
    pub noop_c1: Dist,
    /// The two extra lines alone: an `execute` serialised and read back as JSON, an
    /// `execute_result` written and parsed (what the round trip cannot avoid).
    pub lines: Dist,
    /// The same two lines carried as a runtime must carry them, between the call's task and the
    /// client's: the `execute` through a channel, the answer through a oneshot to the waiting
    /// call (see [`Carrier`]).
    pub carried: Dist,
    /// The carrier's two hops with no lines on them (start the call, its end), which the
    /// no-op call has too: `carried` minus this is what the lines cost carried.
    pub carried_empty: Dist,
}

fn client_line(id: u64) -> String {
    format!(r#"{{"type":"tool_use","id":"r{id}","name":"{TOOL}","input":{{"value":{id}}}}}"#)
}

/// The work of the two extra lines, without the pipeline: serialise an `execute`, read it as
/// JSON (the client), write the `execute_result` and parse it (toolrt's reader).
fn lines_once(id: u64) -> Result<u64, String> {
    let start = Instant::now();
    let out = execute_message(id).to_line();
    let answer = answer_line(&out)?;
    black_box(protocol::parse_line(&answer).map_err(|e| format!("bench answer: {e}"))?);
    Ok(elapsed_ns(start))
}

/// What the carrier's call task is told: carry the two lines, or only end.
enum Start {
    /// Write an `execute` for this id, wait for its answer, then end.
    Lines(u64),
    /// End at once (the hops every call has, without the lines).
    Empty,
}

/// What the carrier's call task sends to the client's.
enum Carried {
    /// An `execute` line, and where its answer goes.
    Execute(
        Vec<u8>,
        tokio::sync::oneshot::Sender<protocol::ClientMessage>,
    ),
    /// The call ended.
    Done,
}

/// The floor of the round trip: two tasks on the bench's runtime, a call's and a client's, and
/// the two extra lines carried between them as toolrt carries them — the `execute` serialised
/// and sent to the client's task (a channel), read as JSON there, the `execute_result` written
/// and parsed, and the parsed answer handed back to the waiting call (a oneshot), which wakes.
/// Measured from the client's side, less the same exchange without the lines (the hops that
/// start and end any call, the no-op's too), it is what "the extra line out and in" costs a
/// runtime with nothing else to do.
struct Carrier {
    start: tokio::sync::mpsc::Sender<Start>,
    back: tokio::sync::mpsc::Receiver<Carried>,
}

impl Carrier {
    fn spawn() -> Self {
        let (start, mut starts) = tokio::sync::mpsc::channel::<Start>(1);
        let (to_client, back) = tokio::sync::mpsc::channel::<Carried>(1);
        tokio::spawn(async move {
            while let Some(what) = starts.recv().await {
                if let Start::Lines(id) = what {
                    let line = execute_message(id).to_line();
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    if to_client.send(Carried::Execute(line, tx)).await.is_err() {
                        return;
                    }
                    let Ok(answer) = rx.await else { return };
                    black_box(answer);
                }
                if to_client.send(Carried::Done).await.is_err() {
                    return;
                }
            }
        });
        Self { start, back }
    }

    /// One exchange, timed from the client's side.
    async fn once(&mut self, what: Start) -> Result<u64, String> {
        let gone = || "the carrier's task ended".to_string();
        let start = Instant::now();
        self.start.send(what).await.map_err(|_| gone())?;
        loop {
            match self.back.recv().await.ok_or_else(gone)? {
                Carried::Execute(line, answer_to) => {
                    let answer = answer_line(&line)?;
                    let answer =
                        protocol::parse_line(&answer).map_err(|e| format!("bench answer: {e}"))?;
                    answer_to.send(answer).map_err(|_| gone())?;
                }
                Carried::Done => return Ok(elapsed_ns(start)),
            }
        }
    }
}

/// The `execute` toolrt writes for the bench's call `id`.
fn execute_message(id: u64) -> ServerMessage {
    let mut input = serde_json::Map::new();
    input.insert("value".into(), json!(id));
    ServerMessage::Execute {
        request_id: format!("exec-{id}"),
        tool_use_id: format!("r{id}"),
        name: TOOL.into(),
        input: Value::Object(input),
        agent_id: None,
    }
}

/// The client's side of an `execute` line: read as JSON, answered "ok".
fn answer_line(execute: &[u8]) -> Result<String, String> {
    let read: Value = serde_json::from_slice(execute)
        .map_err(|e| format!("the execute line is not JSON: {e}"))?;
    Ok(
        json!({"type": "execute_result", "request_id": read["request_id"], "content": "ok"})
            .to_string(),
    )
}

/// A runtime with the no-op tool and a client tool of the same schema, both allowed; calls
/// one at a time, from line to result line.
pub(super) struct Bench {
    pub(super) runtime: Runtime,
    rx: crate::emit::Outbox,
}

impl Bench {
    async fn start(cwd: &std::path::Path) -> Result<Self, String> {
        let config = workload::config(cwd, vec![Arc::new(Noop::new())], &["Noop", TOOL], false, 64);
        let bench = Self::with(config).await?;
        let schema = json!({"type": "object", "properties": {"value": {"type": "integer"}}, "additionalProperties": false});
        bench
            .runtime
            .register_tools(vec![ClientToolSpec {
                concurrency_safe: Some(true),
                ..ClientToolSpec::new(TOOL, schema)
            }])
            .map_err(|e| e.to_string())?;
        Ok(bench)
    }

    /// A runtime of this configuration.
    pub(super) async fn with(config: crate::runtime::Config) -> Result<Self, String> {
        let (runtime, rx) = Runtime::start(config)
            .await
            .map_err(|e| format!("the runtime did not start: {e}"))?;
        Ok(Self { runtime, rx })
    }

    /// Submits a control line and waits for the event `name` it is answered with.
    pub(super) async fn control(&mut self, line: &str, name: &str) -> Result<(), String> {
        let msg = protocol::parse_line(line).map_err(|e| format!("bench line: {e}"))?;
        self.runtime.submit(msg).await;
        while let Some(msg) = self.rx.recv().await {
            match &msg {
                ServerMessage::Error { message, .. } => return Err(format!("{line}: {message}")),
                m if m.event_name() == Some(name) => return Ok(()),
                _ => {}
            }
        }
        Err("the runtime closed its output".into())
    }

    /// One call from its line to its result line; an `execute` on the way is read and answered
    /// as a client would: its line parsed, an `execute_result` line written and parsed back.
    async fn call(&mut self, line: &str) -> Result<u64, String> {
        let start = Instant::now();
        let msg = protocol::parse_line(line).map_err(|e| format!("bench line: {e}"))?;
        self.runtime.submit(msg).await;
        while let Some(msg) = self.rx.recv().await {
            match &msg {
                ServerMessage::Execute { .. } => {
                    let answer = answer_line(&msg.to_line())?;
                    let answer =
                        protocol::parse_line(&answer).map_err(|e| format!("bench answer: {e}"))?;
                    self.runtime.submit(answer).await;
                }
                ServerMessage::ToolResult(result) => {
                    if result.outcome != Outcome::Success || result.content != "ok" {
                        return Err(format!(
                            "a bench call ended {}: {}",
                            result.outcome.as_str(),
                            result.content
                        ));
                    }
                    black_box(msg.to_line());
                    return Ok(elapsed_ns(start));
                }
                _ => {}
            }
        }
        Err("the runtime closed its output".into())
    }

    pub(super) async fn latency(
        &mut self,
        line: fn(u64) -> String,
        first_id: u64,
        calls: usize,
    ) -> Result<Vec<u64>, String> {
        let mut samples = Vec::with_capacity(calls);
        for i in 0..calls as u64 {
            samples.push(self.call(&line(first_id + i)).await?);
        }
        Ok(samples)
    }
}

/// Measures `calls` calls of each kind, interleaved in `rounds` blocks.
pub(super) async fn measure(
    cwd: &std::path::Path,
    calls: usize,
    rounds: usize,
    next_ids: &mut impl FnMut(usize) -> u64,
) -> Result<ClientFigures, String> {
    let mut bench = Bench::start(cwd).await?;
    let warm = (calls / 20).max(10);
    bench
        .latency(workload::noop_line, next_ids(warm), warm)
        .await?;
    bench.latency(client_line, next_ids(warm), warm).await?;
    let rounds = rounds.max(1);
    let block = calls.div_ceil(rounds);
    let mut carrier = Carrier::spawn();
    for i in 0..warm as u64 {
        carrier.once(Start::Lines(i)).await?;
        carrier.once(Start::Empty).await?;
    }
    let (mut client, mut noop, mut lines) = (Vec::new(), Vec::new(), Vec::new());
    let (mut carried, mut carried_empty) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for i in 0..block as u64 {
            lines.push(lines_once(i)?);
            carried.push(carrier.once(Start::Lines(i)).await?);
            carried_empty.push(carrier.once(Start::Empty).await?);
        }
        noop.extend(
            bench
                .latency(workload::noop_line, next_ids(block), block)
                .await?,
        );
        client.extend(bench.latency(client_line, next_ids(block), block).await?);
    }
    bench.runtime.shutdown().await;
    Ok(ClientFigures {
        client_c1: Dist::new(client),
        noop_c1: Dist::new(noop),
        lines: Dist::new(lines),
        carried: Dist::new(carried),
        carried_empty: Dist::new(carried_empty),
    })
}

impl ClientFigures {
    /// Client-tool p50 over no-op p50.
    pub(super) fn ratio(&self) -> f64 {
        super::stats::ratio(self.client_c1.p50_us(), self.noop_c1.p50_us())
    }

    /// What the two lines cost carried between tasks (p50 with them less p50 without).
    pub(super) fn carried_us(&self) -> f64 {
        self.carried.p50_us() - self.carried_empty.p50_us()
    }

    /// The figures as JSON.
    pub(super) fn json(&self) -> Value {
        json!({
            "client_p50_us": self.client_c1.p50_us(),
            "client_p99_us": self.client_c1.p99_us(),
            "noop_p50_us": self.noop_c1.p50_us(),
            "noop_p99_us": self.noop_c1.p99_us(),
            "extra_p50_us": self.client_c1.p50_us() - self.noop_c1.p50_us(),
            "lines_p50_us": self.lines.p50_us(),
            "carried_p50_us": self.carried_us(),
            "ratio_c1": self.ratio(),
            "calls": self.client_c1.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_round_trip_answers_every_call() {
        let ws = workload::Workspace::new().expect("workspace");
        let figures = measure(&ws.cwd, 20, 2, &mut workload::id_blocks())
            .await
            .expect("measured");
        assert_eq!(figures.client_c1.len(), 20);
        assert_eq!(figures.noop_c1.len(), 20);
        assert!(figures.ratio() > 0.0);
        assert_eq!(figures.carried.len(), 20);
        assert_eq!(figures.carried_empty.len(), 20);
    }
}
