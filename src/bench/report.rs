//! The figures of one run: the table on stdout and the `--json` object.

use serde_json::{Map, Value, json};

use super::BashFigures;
use super::pipeline::Memory;
use super::stats::{Dist, ratio};

const MB: f64 = 1024.0 * 1024.0;

/// The printed table: a row is a name, a value and a note.
#[derive(Default)]
struct Table(String);

impl Table {
    fn row(&mut self, name: &str, value: String, note: &str) {
        self.0
            .push_str(&format!("{name:<34} {value:>14}  {note}\n"));
    }
}

/// Microseconds, as the table shows them.
fn us(v: f64) -> String {
    format!("{v:.2} µs")
}

/// A ratio, as the table shows it.
fn x(v: f64) -> String {
    format!("{v:.2}x")
}

/// Everything one `toolrt bench` run measured.
pub(super) struct Report {
    /// `full`, `quick` or `smoke`.
    pub mode: &'static str,
    /// Cores the process may use.
    pub cores: usize,
    /// Inline floor, one call at a time (ns per call).
    pub inline: Dist,
    /// Actor floor, one call at a time.
    pub actor: Dist,
    /// Actor floor with as many hops as toolrt makes for a no-op call.
    pub actor_same_hops: Dist,
    /// toolrt no-op, one call at a time.
    pub noop: Dist,
    /// toolrt no-op calls per second at 16 in flight.
    pub throughput_c16: f64,
    /// toolrt no-op calls per second at 1,000 in flight.
    pub throughput_c1000: f64,
    /// Per stage of the clocked no-op run, in pipeline order.
    pub stages: Vec<(&'static str, Dist)>,
    /// End-to-end latency of the clocked run (the clock costs a little).
    pub clocked_total: Dist,
    /// Bash `true`, through toolrt and direct.
    pub bash: BashFigures,
    /// An MCP echo through toolrt and a bare rmcp client (None: no server to measure).
    pub mcp: Option<super::mcp::McpFigures>,
    /// A no-op through `toolrt mcp-serve` against a minimal rmcp server, same rmcp client.
    pub mcp_serve: super::mcp_serve::McpServeFigures,
    /// Worker nodes against local calls (None: `--cluster` not given).
    pub cluster: Option<super::cluster::ClusterFigures>,
    /// A client tool's round trip against the no-op call.
    pub client_tool: super::client::ClientFigures,
    /// A no-op call three agent scopes deep against the session's own (docs/BENCH.md).
    pub scopes: super::scopes::ScopeFigures,
    /// The no-op call traced (spans to a loopback sink) against it untraced.
    pub otel: super::otel::OtelFigures,
    /// One decision against 1,000 rules, cases mixed.
    pub decide: Dist,
    /// Median µs of each decision case alone.
    pub decide_cases: Vec<(&'static str, f64)>,
    /// The memory test.
    pub memory: Memory,
    /// Calls held in flight by the memory test.
    pub memory_calls: usize,
}

impl Report {
    /// The MCP figures as JSON (null when skipped).
    fn mcp_json(&self) -> Value {
        let Some(m) = &self.mcp else {
            return Value::Null;
        };
        json!({
            "server": m.server,
            "toolrt_p50_us": m.toolrt.c1.p50_us(),
            "toolrt_p99_us": m.toolrt.c1.p99_us(),
            "bare_p50_us": m.bare.c1.p50_us(),
            "bare_p99_us": m.bare.c1.p99_us(),
            "ratio_c1": m.ratio_c1(),
            "toolrt_cpu_us_per_call_c1": m.toolrt.cpu_c1_us,
            "bare_cpu_us_per_call_c1": m.bare.cpu_c1_us,
            "toolrt_throughput_c16": m.toolrt.c16,
            "bare_throughput_c16": m.bare.c16,
            "throughput_ratio_c16": m.throughput_ratio_c16(),
            "toolrt_cpu_us_per_call_c16": m.toolrt.cpu_c16_us,
            "bare_cpu_us_per_call_c16": m.bare.cpu_c16_us,
            "round_ratio_median_c1": m.round_medians().0,
            "round_ratio_median_c16": m.round_medians().1,
            "calls": m.toolrt.c1.len(),
            "blocks_c1": m.blocks.0,
            "block_calls_c1": m.blocks.1,
            "blocks_c16": m.blocks.2,
            "block_calls_c16": m.blocks.3,
        })
    }

    /// toolrt no-op p50 over the actor floor's p50.
    pub(super) fn ratio_noop_vs_actor_floor(&self) -> f64 {
        ratio(self.noop.p50_us(), self.actor.p50_us())
    }

    /// toolrt no-op p50 over the p50 of the actor floor with toolrt's own number of hops.
    pub(super) fn ratio_noop_vs_actor_floor_same_hops(&self) -> f64 {
        ratio(self.noop.p50_us(), self.actor_same_hops.p50_us())
    }

    /// toolrt no-op p50 over the inline floor's p50.
    pub(super) fn ratio_noop_vs_inline(&self) -> f64 {
        ratio(self.noop.p50_us(), self.inline.p50_us())
    }

    /// Bash through toolrt over direct, p50 at one in flight.
    pub(super) fn bash_ratio(&self) -> f64 {
        ratio(self.bash.toolrt_c1.p50_us(), self.bash.direct_c1.p50_us())
    }

    /// The same at four in flight.
    pub(super) fn bash_ratio_c4(&self) -> f64 {
        ratio(self.bash.toolrt_c4.p50_us(), self.bash.direct_c4.p50_us())
    }

    /// Peak RSS growth of the memory test, MB.
    pub(super) fn rss_growth_mb(&self) -> f64 {
        self.memory.peak.saturating_sub(self.memory.baseline) as f64 / MB
    }

    /// The clocked run's median minus the sum of the stage medians: roughly the time outside
    /// every stage (parsing, admission, the result slot, the way out, the client's side).
    pub(super) fn outside_stages_us(&self) -> f64 {
        let inside: f64 = self.stages.iter().map(|(_, d)| d.p50_us()).sum();
        (self.clocked_total.p50_us() - inside).max(0.0)
    }

    /// The table printed on stdout.
    pub(super) fn table(&self) -> String {
        let mut t = Table::default();
        t.row(
            "toolrt bench",
            self.mode.to_string(),
            &format!(
                "current-thread tokio runtime, {} core(s) available",
                self.cores
            ),
        );
        self.latency_rows(&mut t);
        self.bash_rows(&mut t);
        self.mcp_rows(&mut t);
        self.mcp_serve_rows(&mut t);
        self.cluster_rows(&mut t);
        self.client_tool_rows(&mut t);
        self.otel_rows(&mut t);
        self.decide_and_memory_rows(&mut t);
        self.stage_rows(&mut t);
        t.0
    }

    /// One call in flight against the floors, and throughput.
    fn latency_rows(&self, t: &mut Table) {
        t.row(
            "inline floor p50",
            us(self.inline.p50_us()),
            &format!(
                "p99 {:.2} µs, {} calls",
                self.inline.p99_us(),
                self.inline.len()
            ),
        );
        t.row(
            "actor floor p50",
            us(self.actor.p50_us()),
            &format!(
                "p99 {:.2} µs, supervisor + {} idle stages",
                self.actor.p99_us(),
                super::floors::FLOOR_STAGES
            ),
        );
        t.row(
            &format!("actor floor p50, {} hops", super::floors::NOOP_HOPS),
            us(self.actor_same_hops.p50_us()),
            &format!(
                "p99 {:.2} µs, the stages toolrt messages for a no-op call",
                self.actor_same_hops.p99_us()
            ),
        );
        t.row(
            "toolrt no-op p50",
            us(self.noop.p50_us()),
            &format!("{} calls, one in flight, 100 rules", self.noop.len()),
        );
        t.row("toolrt no-op p99", us(self.noop.p99_us()), "");
        t.row(
            "ratio no-op / actor floor",
            x(self.ratio_noop_vs_actor_floor()),
            "goal ≤ 1.3",
        );
        t.row(
            &format!("ratio no-op / {}-hop floor", super::floors::NOOP_HOPS),
            x(self.ratio_noop_vs_actor_floor_same_hops()),
            "",
        );
        t.row(
            "ratio no-op / inline",
            x(self.ratio_noop_vs_inline()),
            "goal ≤ 5",
        );
        t.row(
            "no-op throughput, 16 in flight",
            format!("{:.0}/s", self.throughput_c16),
            "",
        );
        t.row(
            "no-op throughput, 1,000 in flight",
            format!("{:.0}/s", self.throughput_c1000),
            "goal ≥ 200,000/s",
        );
    }

    /// Bash `true` through toolrt against a direct spawn.
    fn bash_rows(&self, t: &mut Table) {
        t.row(
            "bash true p50, toolrt, 1",
            us(self.bash.toolrt_c1.p50_us()),
            &format!("direct {:.2} µs", self.bash.direct_c1.p50_us()),
        );
        t.row(
            "bash ratio, 1 in flight",
            x(self.bash_ratio()),
            "goal ≤ 1.05",
        );
        t.row(
            "bash true p50, toolrt, 4",
            us(self.bash.toolrt_c4.p50_us()),
            &format!("direct {:.2} µs", self.bash.direct_c4.p50_us()),
        );
        t.row("bash ratio, 4 in flight", x(self.bash_ratio_c4()), "");
        match &self.bash.sandboxed_c1 {
            Ok(d) => t.row(
                "bash true p50, sandboxed, 1",
                us(d.p50_us()),
                &format!(
                    "+{:.0} µs over unsandboxed; goal ≤ +2000 µs",
                    d.p50_us() - self.bash.toolrt_c1.p50_us()
                ),
            ),
            Err(why) => t.row("bash sandboxed", "skipped".into(), why),
        }
    }

    /// An MCP echo through toolrt against a bare rmcp client.
    fn mcp_rows(&self, t: &mut Table) {
        let Some(m) = &self.mcp else {
            t.row("mcp", "skipped".into(), "no MCP server to measure");
            return;
        };
        t.row(
            "mcp echo p50, toolrt, 1",
            us(m.toolrt.c1.p50_us()),
            &format!(
                "bare rmcp {:.2} µs; p99 {:.2} vs {:.2} µs",
                m.bare.c1.p50_us(),
                m.toolrt.c1.p99_us(),
                m.bare.c1.p99_us()
            ),
        );
        let (median1, median16) = m.round_medians();
        t.row(
            "mcp ratio, 1 in flight",
            x(m.ratio_c1()),
            &format!(
                "goal ≤ 1.10; median of {} rounds' ratios {}",
                m.rounds.0.len(),
                x(median1)
            ),
        );
        t.row(
            "mcp cpu per call, toolrt, 1",
            us(m.toolrt.cpu_c1_us),
            &format!("bare rmcp {:.2} µs", m.bare.cpu_c1_us),
        );
        t.row(
            "mcp throughput, 16 in flight",
            format!("{:.0}/s", m.toolrt.c16),
            &format!(
                "bare rmcp {:.0}/s ({}); goal ≥ bare; median of {} rounds' ratios {}",
                m.bare.c16,
                x(m.throughput_ratio_c16()),
                m.rounds.1.len(),
                x(median16)
            ),
        );
        t.row(
            "mcp cpu per call, toolrt, 16",
            us(m.toolrt.cpu_c16_us),
            &format!("bare rmcp {:.2} µs", m.bare.cpu_c16_us),
        );
    }

    /// A no-op through `toolrt mcp-serve` against a minimal rmcp server.
    fn mcp_serve_rows(&self, t: &mut Table) {
        let m = &self.mcp_serve;
        t.row(
            "mcp-serve no-op p50, 1",
            us(m.toolrt.p50_us()),
            &format!(
                "minimal rmcp server {:.2} µs; p99 {:.2} vs {:.2} µs",
                m.bare.p50_us(),
                m.toolrt.p99_us(),
                m.bare.p99_us()
            ),
        );
        t.row(
            "mcp-serve ratio, 1 in flight",
            x(m.ratio()),
            &format!(
                "goal ≤ 1.10; median of {} rounds' ratios {}",
                m.rounds.len(),
                x(m.round_median())
            ),
        );
    }

    /// Worker nodes: a remote call against a local one, throughput with one worker against N.
    fn cluster_rows(&self, t: &mut Table) {
        let Some(c) = &self.cluster else {
            return;
        };
        let pinned = match &c.pinned {
            Ok(cpus) => format!("workers pinned to CPUs {cpus:?}"),
            Err(why) => format!("workers not pinned: {why}"),
        };
        t.row(
            "cluster read p50, remote, 1",
            us(c.remote.p50_us()),
            &format!(
                "local {:.2} µs; p99 {:.2} vs {:.2} µs; {} workers, {pinned}",
                c.local.p50_us(),
                c.remote.p99_us(),
                c.local.p99_us(),
                c.workers
            ),
        );
        t.row(
            "cluster remote extra, p50",
            us(c.remote_extra_us()),
            &format!(
                "goal ≤ 100 µs; a path read before: median of {} rounds {:.2} µs; 1 round trip, bare loopback TCP {:.2} µs",
                c.rounds.len(),
                super::mcp::median(&c.rounds),
                c.loopback.p50_us()
            ),
        );
        t.row(
            "cluster remote extra, first path, p50",
            us(c.first_remote.p50_us() - c.first_local.p50_us()),
            &format!(
                "a path not read before on the link: 2 round trips (the worker resolves it for the decision); local {} / remote {}",
                us(c.first_local.p50_us()),
                us(c.first_remote.p50_us())
            ),
        );
        let busy = |b: Option<f64>| b.map_or("?".into(), |b| format!("{:.0} %", b * 100.0));
        t.row(
            &format!(
                "cluster sleep 0.05, {} in flight",
                super::cluster::SLEEP_IN_FLIGHT
            ),
            format!("{:.0}/s", c.all.calls_per_s),
            &format!(
                "{} workers; 1 worker {:.0}/s; none (local) {:.0}/s; CPUs busy {} / {} / {}",
                c.workers,
                c.one.calls_per_s,
                c.sleep_local.calls_per_s,
                busy(c.all.cpu_busy),
                busy(c.one.cpu_busy),
                busy(c.sleep_local.cpu_busy)
            ),
        );
        t.row(
            &format!("cluster throughput, {} / 1 workers", c.workers),
            x(c.throughput_ratio()),
            &match c.cpu_bound_ratio() {
                Some(most) => format!(
                    "goal ≥ 2.5 with 3 workers; at most {most:.1}x here while the commands' own \
                     CPU limits them: 1 worker's commands have 1 CPU, {}'s {most:.0}",
                    c.workers
                ),
                None => "goal ≥ 2.5 with 3 workers".into(),
            },
        );
    }

    /// A client tool's round trip against the no-op call.
    fn client_tool_rows(&self, t: &mut Table) {
        let c = &self.client_tool;
        t.row(
            "client tool p50, round trip",
            us(c.client_c1.p50_us()),
            &format!(
                "no-op {:.2} µs; p99 {:.2} vs {:.2} µs",
                c.noop_c1.p50_us(),
                c.client_c1.p99_us(),
                c.noop_c1.p99_us()
            ),
        );
        t.row(
            "client tool / no-op",
            x(c.ratio()),
            &format!(
                "+{:.2} µs; the two extra lines alone {:.2} µs, carried between tasks {:.2} µs",
                c.client_c1.p50_us() - c.noop_c1.p50_us(),
                c.lines.p50_us(),
                c.carried_us()
            ),
        );
        let sc = &self.scopes;
        t.row(
            "scope 3 deep / no-op",
            x(sc.ratio()),
            &format!(
                "+{:.2} µs at p50 ({:.2} vs {:.2} µs)",
                sc.extra_us(),
                sc.scoped_c1.p50_us(),
                sc.noop_c1.p50_us()
            ),
        );
    }

    /// The no-op call traced against untraced.
    fn otel_rows(&self, t: &mut Table) {
        let o = &self.otel;
        t.row(
            "traced / untraced no-op",
            x(o.ratio()),
            &format!(
                "p50 {:.2} vs {:.2} µs, p99 {:.2} vs {:.2} µs; {} export requests",
                o.traced_c1.p50_us(),
                o.noop_c1.p50_us(),
                o.traced_c1.p99_us(),
                o.noop_c1.p99_us(),
                o.requests
            ),
        );
    }

    /// One decision against 1,000 rules, and memory with many calls in flight.
    fn decide_and_memory_rows(&self, t: &mut Table) {
        let cases: Vec<String> = self
            .decide_cases
            .iter()
            .map(|(n, v)| format!("{n} {v:.2}"))
            .collect();
        t.row(
            "decide, 1,000 rules, p50",
            us(self.decide.p50_us()),
            &format!("goal ≤ 2 µs; µs by case: {}", cases.join(", ")),
        );
        t.row(
            &format!("rss growth, {} in flight", self.memory_calls),
            format!("{:.1} MB", self.rss_growth_mb()),
            &format!(
                "goal ≤ 200 MB; peak {:.1} MB, baseline {:.1} MB{}",
                self.memory.peak as f64 / MB,
                self.memory.baseline as f64 / MB,
                if self.memory.peak_reset {
                    ""
                } else {
                    " (peak not reset: lifetime peak)"
                }
            ),
        );
    }

    /// The clocked no-op run, stage by stage.
    fn stage_rows(&self, t: &mut Table) {
        t.row(
            "stages (p50, clocked run)",
            us(self.clocked_total.p50_us()),
            "end to end with the clock on",
        );
        for (name, dist) in &self.stages {
            t.row(
                &format!("  {name}"),
                us(dist.p50_us()),
                &format!("p99 {:.2} µs", dist.p99_us()),
            );
        }
        t.row(
            "  outside the stages (approx.)",
            us(self.outside_stages_us()),
            "parse, admission, result slot, output channel, serialise",
        );
    }

    /// The `--json` object.
    pub(super) fn json(&self) -> Value {
        let stages: Map<String, Value> = self
            .stages
            .iter()
            .map(|(name, d)| (name.to_string(), json!(d.p50_us())))
            .collect();
        let stages_p99: Map<String, Value> = self
            .stages
            .iter()
            .map(|(name, d)| (name.to_string(), json!(d.p99_us())))
            .collect();
        let cases: Map<String, Value> = self
            .decide_cases
            .iter()
            .map(|(name, v)| (name.to_string(), json!(v)))
            .collect();
        let mut all = json!({
            "mode": self.mode,
            "runtime": "current_thread",
            "cores": self.cores,
            "inline_p50_us": self.inline.p50_us(),
            "inline_p99_us": self.inline.p99_us(),
            "actor_floor_p50_us": self.actor.p50_us(),
            "actor_floor_p99_us": self.actor.p99_us(),
            "actor_floor_stages": super::floors::FLOOR_STAGES,
            "actor_floor_same_hops_p50_us": self.actor_same_hops.p50_us(),
            "actor_floor_same_hops": super::floors::NOOP_HOPS,
            "ratio_noop_vs_actor_floor_same_hops": self.ratio_noop_vs_actor_floor_same_hops(),
            "noop_p50_us": self.noop.p50_us(),
            "noop_p99_us": self.noop.p99_us(),
            "noop_mean_us": self.noop.mean_us(),
            "noop_calls": self.noop.len(),
            "noop_rules": super::workload::PIPELINE_RULES,
            "noop_throughput_c16": self.throughput_c16,
            "noop_throughput_c1000": self.throughput_c1000,
            "ratio_noop_vs_actor_floor": self.ratio_noop_vs_actor_floor(),
            "ratio_noop_vs_inline": self.ratio_noop_vs_inline(),
            "bash_ratio": self.bash_ratio(),
            "bash_ratio_c4": self.bash_ratio_c4(),
            "bash_toolrt_p50_us": self.bash.toolrt_c1.p50_us(),
            "bash_direct_p50_us": self.bash.direct_c1.p50_us(),
            "bash_toolrt_c4_p50_us": self.bash.toolrt_c4.p50_us(),
            "bash_direct_c4_p50_us": self.bash.direct_c4.p50_us(),
            "bash_calls": self.bash.toolrt_c1.len(),
            "decide_1k_rules_p50_us": self.decide.p50_us(),
            "decide_1k_rules_p99_us": self.decide.p99_us(),
            "decide_1k_rules_by_case_p50_us": cases,
            "rss_10k_in_flight_mb": self.rss_growth_mb(),
            "rss_peak_mb": self.memory.peak as f64 / MB,
            "rss_baseline_mb": self.memory.baseline as f64 / MB,
            "rss_peak_reset": self.memory.peak_reset,
            "memory_calls": self.memory_calls,
            "stages": stages,
            "stages_p99_us": stages_p99,
            "stages_clocked_p50_us": self.clocked_total.p50_us(),
            "stages_outside_p50_us": self.outside_stages_us(),
            "mcp": self.mcp_json(),
            "client_tool": self.client_tool.json(),
        });
        // Apart: one more key in the macro passes its recursion limit.
        all["scopes"] = self.scopes.json();
        all["otel"] = self.otel.json();
        all["mcp_serve"] = json!({
            "toolrt_p50_us": self.mcp_serve.toolrt.p50_us(),
            "bare_p50_us": self.mcp_serve.bare.p50_us(),
            "ratio_c1": self.mcp_serve.ratio(),
            "rounds_median_c1": self.mcp_serve.round_median(),
        });
        all["cluster"] = self.cluster.as_ref().map_or(Value::Null, |c| c.json());
        all["cluster_remote_extra_us"] = json!(self.cluster.as_ref().map(|c| c.remote_extra_us()));
        all["cluster_throughput_ratio"] =
            json!(self.cluster.as_ref().map(|c| c.throughput_ratio()));
        all["bash_sandboxed_p50_us"] =
            json!(self.bash.sandboxed_c1.as_ref().ok().map(|d| d.p50_us()));
        all
    }
}
