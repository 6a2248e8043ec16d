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
}

fn client_line(id: u64) -> String {
    format!(r#"{{"type":"tool_use","id":"r{id}","name":"{TOOL}","input":{{"value":{id}}}}}"#)
}

/// The work of the two extra lines, without the pipeline: serialise an `execute`, read it as
/// JSON (the client), write the `execute_result` and parse it (toolrt's reader).
fn lines_once(id: u64) -> Result<u64, String> {
    let start = Instant::now();
    let mut input = serde_json::Map::new();
    input.insert("value".into(), json!(id));
    let execute = ServerMessage::Execute {
        request_id: format!("exec-{id}"),
        tool_use_id: format!("r{id}"),
        name: TOOL.into(),
        input: Value::Object(input),
        agent_id: None,
    };
    let out = execute.to_line();
    let read: Value =
        serde_json::from_slice(&out).map_err(|e| format!("the execute line is not JSON: {e}"))?;
    let answer =
        json!({"type": "execute_result", "request_id": read["request_id"], "content": "ok"})
            .to_string();
    black_box(protocol::parse_line(&answer).map_err(|e| format!("bench answer: {e}"))?);
    Ok(elapsed_ns(start))
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
                    let out = msg.to_line();
                    let execute: Value = serde_json::from_slice(&out)
                        .map_err(|e| format!("the execute line is not JSON: {e}"))?;
                    let answer = json!({
                        "type": "execute_result",
                        "request_id": execute["request_id"],
                        "content": "ok",
                    })
                    .to_string();
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
    let (mut client, mut noop, mut lines) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        for i in 0..block as u64 {
            lines.push(lines_once(i)?);
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
    })
}

impl ClientFigures {
    /// Client-tool p50 over no-op p50.
    pub(super) fn ratio(&self) -> f64 {
        super::stats::ratio(self.client_c1.p50_us(), self.noop_c1.p50_us())
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
    }
}
