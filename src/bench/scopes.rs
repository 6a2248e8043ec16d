//! The scope figure: the no-op call made by an agent three levels deep (each level's type with
//! tools and rules of its own, so its calls are decided at four levels) against the same call
//! made by the session itself, in one runtime, interleaved, one call in flight. The difference
//! is what a scope costs a call: its lookup, the selection check and the extra levels of the
//! decision.

use std::sync::Arc;

use serde_json::{Value, json};

use super::client::Bench;
use super::stats::Dist;
use super::workload;
use crate::tools::noop::Noop;

/// The agent whose calls are measured.
const AGENT: &str = "bench-3";

/// The scope figures (ns per call, one in flight).
pub(crate) struct ScopeFigures {
    /// The no-op call in a scope three levels deep.
    pub(crate) scoped_c1: Dist,
    /// The same call with no scope.
    pub(crate) noop_c1: Dist,
}

fn scoped_line(id: u64) -> String {
    format!(
        r#"{{"type":"tool_use","id":"s{id}","name":"Noop","input":{{"value":{id}}},"agent_id":"{AGENT}"}}"#
    )
}

/// Three agent types, each narrowing the one above with rules of its own.
fn agent_types() -> Value {
    json!({"agents": {
        "lead": {"tools": ["Noop", "Read", "Bash"], "permissions": {"allow": ["Noop", "Read"], "deny": ["Bash(rm *)"]}},
        "worker": {"tools": ["Noop", "Read"], "permissions": {"allow": ["Noop"], "ask": ["Bash(git push *)"]}},
        "leaf": {"tools": ["Noop"], "permissions": {"allow": ["Noop"], "deny": ["Read(./secret/**)"]}}
    }})
}

/// Measures `calls` calls of each kind, interleaved in `rounds` blocks.
pub(crate) async fn measure(
    cwd: &std::path::Path,
    calls: usize,
    rounds: usize,
    next_ids: &mut impl FnMut(usize) -> u64,
) -> Result<ScopeFigures, String> {
    let mut config = workload::config(cwd, vec![Arc::new(Noop::new())], &["Noop"], false, 64);
    config
        .settings
        .merge_text(&cwd.join("bench-agents.json"), &agent_types().to_string())
        .map_err(|e| e.to_string())?;
    let mut bench = Bench::with(config).await?;
    for (id, ty, parent) in [
        ("bench-1", "lead", Value::Null),
        ("bench-2", "worker", json!("bench-1")),
        (AGENT, "leaf", json!("bench-2")),
    ] {
        let line =
            json!({"type": "agent_start", "agent_id": id, "agent_type": ty, "parent": parent});
        bench.control(&line.to_string(), "agent_started").await?;
    }
    let warm = (calls / 20).max(10);
    bench
        .latency(workload::noop_line, next_ids(warm), warm)
        .await?;
    bench.latency(scoped_line, next_ids(warm), warm).await?;
    let block = calls.div_ceil(rounds.max(1));
    let (mut scoped, mut noop) = (Vec::new(), Vec::new());
    for _ in 0..rounds.max(1) {
        noop.extend(
            bench
                .latency(workload::noop_line, next_ids(block), block)
                .await?,
        );
        scoped.extend(bench.latency(scoped_line, next_ids(block), block).await?);
    }
    bench.runtime.shutdown().await;
    Ok(ScopeFigures {
        scoped_c1: Dist::new(scoped),
        noop_c1: Dist::new(noop),
    })
}

impl ScopeFigures {
    /// Scoped p50 over no-op p50.
    pub(crate) fn ratio(&self) -> f64 {
        super::stats::ratio(self.scoped_c1.p50_us(), self.noop_c1.p50_us())
    }

    /// What the scope adds at the median, in µs.
    pub(crate) fn extra_us(&self) -> f64 {
        self.scoped_c1.p50_us() - self.noop_c1.p50_us()
    }

    /// The figures as JSON.
    pub(crate) fn json(&self) -> Value {
        json!({
            "scoped_p50_us": self.scoped_c1.p50_us(),
            "scoped_p99_us": self.scoped_c1.p99_us(),
            "noop_p50_us": self.noop_c1.p50_us(),
            "noop_p99_us": self.noop_c1.p99_us(),
            "extra_p50_us": self.extra_us(),
            "ratio_c1": self.ratio(),
            "calls": self.scoped_c1.len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_scoped_no_op_call_succeeds_three_levels_deep() {
        let ws = workload::Workspace::new().expect("workspace");
        let mut next = workload::id_blocks();
        let f = measure(&ws.cwd, 20, 2, &mut next).await.expect("measured");
        assert_eq!((f.scoped_c1.len(), f.noop_c1.len()), (20, 20));
    }
}
