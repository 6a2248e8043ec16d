//! `toolrt bench`: dispatch latency measured against its floors in one run.
//!
//! Every figure comes from the same process on the same single-threaded tokio runtime:
//! - the **inline floor** (the stage work as plain function calls, `floors::Inline`);
//! - the **actor floor** (a supervisor per call and idle stage actors, `floors::ActorFloor`);
//! - **toolrt no-op** (the real [`crate::Runtime`] with the no-op tool and 100 rules);
//! - **Bash** `true` through toolrt against the same spawn done directly, and sandboxed
//!   against unsandboxed;
//! - one **decision** against 1,000 rules; **memory** with 10,000 calls held in flight;
//! - the **per-stage breakdown** of a no-op run through [`crate::supervisor::StageClock`];
//! - an **MCP** `echo` call through toolrt against a bare `rmcp` client (`mcp`);
//! - a **client tool**'s round trip (`execute` out, `execute_result` in) against the no-op
//!   call (`client`);
//! - the no-op call **traced** (OpenTelemetry spans to a loopback sink) against it untraced
//!   (`otel`);
//! - with `--cluster N`, a call placed on a **worker node** against the same call run locally,
//!   and `sleep` calls' throughput with one worker against N (`cluster`, real processes).
//!
//! Absolute times on a shared machine mean little; the ratios to the floors are the point.
//! docs/BENCH.md explains how to read each figure.

mod client;
mod cluster;
mod floors;
mod mcp;
mod mcp_serve;
mod minimal_server;
mod nodes;
mod otel;
mod pipeline;
mod plot;
mod report;
mod scopes;
mod stats;
pub(crate) mod workload;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::permission::{DecisionRequest, Mode};
use pipeline::Driver;
use report::Report;
use stats::Dist;
use workload::Sizes;

/// What `toolrt bench` was asked for.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Smaller sizes (seconds rather than most of a minute on two cores).
    pub quick: bool,
    /// Tiny sizes, for tests of the command itself: the figures mean nothing.
    pub smoke: bool,
    /// Where to write the figures as JSON.
    pub json: Option<PathBuf>,
    /// Where to draw the latency distributions (SVG).
    pub plot: Option<PathBuf>,
    /// The MCP server to measure (`PROGRAM ARGS…`); by default the one the tests install.
    pub mcp_server: Option<String>,
    /// Also measure worker nodes with this many `toolrt worker` processes on loopback
    /// (`--cluster N`, docs/BENCH.md); None leaves the figure out.
    pub cluster: Option<usize>,
}

impl Options {
    fn sizes(&self) -> (Sizes, &'static str) {
        if self.smoke {
            (Sizes::SMOKE, "smoke")
        } else if self.quick {
            (Sizes::QUICK, "quick")
        } else {
            (Sizes::FULL, "full")
        }
    }
}

/// Runs the benchmark on a current-thread runtime (the kind `toolrt` drives its pipeline on),
/// prints the table on stdout and writes the requested files. Exit 1 on any failure.
pub fn run(options: &Options) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolrt bench: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let report = match rt.block_on(measure(options)) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("toolrt bench: {e}");
            return ExitCode::from(1);
        }
    };
    let mut out = std::io::stdout().lock();
    if let Err(e) = out
        .write_all(report.table().as_bytes())
        .and_then(|()| out.flush())
    {
        eprintln!("toolrt bench: cannot write the table: {e}");
        return ExitCode::from(1);
    }
    if let Some(path) = &options.json {
        let text = match serde_json::to_string_pretty(&report.json()) {
            Ok(text) => text + "\n",
            Err(e) => {
                eprintln!("toolrt bench: cannot encode the figures: {e}");
                return ExitCode::from(1);
            }
        };
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("toolrt bench: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    if let Some(path) = &options.plot {
        let title = format!(
            "toolrt no-op vs its floors, one call in flight ({} calls each)",
            report.noop.len()
        );
        let series = [
            ("inline floor", &report.inline),
            ("actor floor", &report.actor),
            ("actor floor, toolrt's hops", &report.actor_same_hops),
            ("toolrt no-op", &report.noop),
        ];
        if let Err(e) = plot::cdf_svg(path, &title, &series) {
            eprintln!("toolrt bench: {e}");
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}

/// Progress lines, only when a person is watching stderr.
struct Progress {
    on: bool,
    start: Instant,
}

impl Progress {
    fn step(&self, what: &str) {
        if self.on {
            eprintln!("[{:>5.1}s] {what}", self.start.elapsed().as_secs_f64());
        }
    }
}

/// Wall time of `n` no-op calls at 16 and then at 1,000 in flight, on the latency run's driver.
async fn throughput(
    mut noop: pipeline::Driver,
    n: usize,
    next_ids: &mut impl FnMut(usize) -> u64,
) -> Result<(std::time::Duration, std::time::Duration), String> {
    let (c16, _) = noop
        .closed_loop(workload::noop_line, next_ids(n), n, 16, false)
        .await?;
    let (c1000, _) = noop
        .closed_loop(workload::noop_line, next_ids(n), n, 1_000, false)
        .await?;
    noop.shutdown().await;
    Ok((c16, c1000))
}

/// Every measurement, in an order that keeps them from disturbing each other: memory first
/// (a fresh runtime, before other runs leave freed heap behind that would hide its growth),
/// then the pure decision, then the latency runs interleaved, throughput, the clocked stage
/// run, and Bash last (child processes).
async fn measure(options: &Options) -> Result<Report, String> {
    let (sizes, mode) = options.sizes();
    let progress = Progress {
        on: std::io::stderr().is_terminal(),
        start: Instant::now(),
    };
    let ws = workload::Workspace::new().map_err(|e| format!("cannot create a workspace: {e}"))?;
    let mut next_ids = workload::id_blocks();

    progress.step(&format!(
        "memory: {} calls held in flight",
        sizes.memory_calls
    ));
    let memory = pipeline::memory(&ws.cwd, sizes.memory_calls).await?;

    progress.step("decide: 1,000 rules");
    let (decide, decide_cases) = decide(&ws.cwd, sizes.decide_samples)?;

    let (latency, noop) = latency(&ws.cwd, &sizes, &progress, &mut next_ids).await?;

    progress.step(&format!(
        "throughput: {} calls at 16 and at 1,000 in flight",
        sizes.throughput_calls
    ));
    let n = sizes.throughput_calls;
    let (c16, c1000) = throughput(noop, n, &mut next_ids).await?;

    progress.step(&format!(
        "stages: {} calls timed stage by stage",
        sizes.stage_calls
    ));
    let (stages, clocked_total) = stage_breakdown(&ws.cwd, &sizes, &mut next_ids).await?;

    progress.step(&format!(
        "bash: {} runs of `true` each, toolrt and direct, at 1 and 4 in flight",
        sizes.bash_calls
    ));
    let bash = bash(&ws.cwd, sizes.bash_calls, &mut next_ids).await?;

    // The figures that pair a feature's no-op with the plain no-op in one run share one size.
    let (paired_calls, paired_rounds) = ((sizes.latency_calls / 10).max(20), sizes.rounds.max(1));
    progress.step(&format!(
        "client tool: {} calls each, round trip and no-op",
        paired_calls
    ));
    let client_tool = client::measure(&ws.cwd, paired_calls, paired_rounds, &mut next_ids).await?;

    progress.step(&format!(
        "scopes: {} no-op calls each, three agents deep and the session's own",
        paired_calls
    ));
    let scopes = scopes::measure(&ws.cwd, paired_calls, paired_rounds, &mut next_ids).await?;

    progress.step(&format!(
        "tracing: {} no-op calls each, spans exported to a loopback sink and untraced",
        paired_calls
    ));
    let otel = otel::measure(&ws.cwd, paired_calls, paired_rounds, &mut next_ids).await?;

    let mcp = match mcp::ServerCommand::pick(options.mcp_server.as_deref()) {
        Some(server) => {
            let calls = sizes.bash_calls * 5;
            progress.step(&format!(
                "mcp: {calls} echo calls each, toolrt and a bare rmcp client, at 1 and 16 in flight"
            ));
            Some(mcp::measure(&server, &ws.cwd, calls, &mut next_ids).await?)
        }
        None => {
            progress.step("mcp: no MCP server installed (tests/fixtures/mcp/install) or given (--mcp-server): skipped");
            None
        }
    };

    let mcp_calls = (sizes.latency_calls / 10).max(20);
    progress.step(&format!(
        "mcp-serve: {mcp_calls} no-op calls each, an rmcp client through toolrt mcp-serve and against a minimal rmcp server"
    ));
    let mcp_serve = mcp_serve::measure(&ws.cwd, mcp_calls, sizes.rounds.max(1)).await?;

    // Last, and only when asked: it starts processes of this binary and keeps both cores busy.
    let cluster = match options.cluster {
        Some(workers) => {
            let sizes = cluster::ClusterSizes::of(mode);
            progress.step(&format!(
                "cluster: {workers} workers; {} reads each, local and remote, one in flight; {} `sleep 0.05` each with 1 and {workers} workers, {} in flight",
                sizes.latency_calls, sizes.sleep_calls, cluster::SLEEP_IN_FLIGHT
            ));
            Some(cluster::measure(workers, sizes).await?)
        }
        None => None,
    };

    Ok(Report {
        mode,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        inline: latency.inline,
        actor: latency.actor,
        actor_same_hops: latency.actor_same_hops,
        noop: latency.noop,
        throughput_c16: n as f64 / c16.as_secs_f64(),
        throughput_c1000: n as f64 / c1000.as_secs_f64(),
        stages,
        clocked_total,
        bash,
        mcp,
        mcp_serve,
        cluster,
        client_tool,
        scopes,
        otel,
        decide,
        decide_cases,
        memory,
        memory_calls: sizes.memory_calls,
    })
}

/// One call in flight: the inline floor, the actor floor (with its own stages and with
/// toolrt's hops) and toolrt's no-op, interleaved round by round.
struct Latency {
    inline: Dist,
    actor: Dist,
    actor_same_hops: Dist,
    noop: Dist,
}

/// The latency runs, each warmed up first; the no-op driver is handed back for the throughput
/// runs.
async fn latency(
    cwd: &std::path::Path,
    sizes: &Sizes,
    progress: &Progress,
    next_ids: &mut impl FnMut(usize) -> u64,
) -> Result<(Latency, Driver), String> {
    progress.step(&format!(
        "latency: {} calls each, inline floor / actor floor / toolrt no-op, {} rounds",
        sizes.latency_calls, sizes.rounds
    ));
    let inline = floors::Inline::new(cwd)?;
    let mut actor = floors::ActorFloor::start().await?;
    let mut noop = Driver::noop(cwd, None).await?;
    // Warm up caches, the allocator and the schedulers before anything counts.
    let warm = warm_up_calls(sizes);
    inline.run(next_ids(warm), warm).await?;
    actor.run(warm, floors::FLOOR_STAGES).await?;
    actor.run(warm, floors::NOOP_HOPS).await?;
    noop.latency(workload::noop_line, next_ids(warm), warm)
        .await?;
    let rounds = sizes.rounds.max(1);
    let per_round = sizes.latency_calls.div_ceil(rounds);
    let (mut inline_s, mut actor_s, mut noop_s) = (Vec::new(), Vec::new(), Vec::new());
    let mut actor_hops_s = Vec::new();
    for round in 0..rounds {
        progress.step(&format!("  round {} of {rounds}", round + 1));
        inline_s.extend(inline.run(next_ids(per_round), per_round).await?);
        actor_s.extend(actor.run(per_round, floors::FLOOR_STAGES).await?);
        actor_hops_s.extend(actor.run(per_round, floors::NOOP_HOPS).await?);
        noop_s.extend(
            noop.latency(workload::noop_line, next_ids(per_round), per_round)
                .await?,
        );
    }
    actor.stop();
    let latency = Latency {
        inline: Dist::new(inline_s),
        actor: Dist::new(actor_s),
        actor_same_hops: Dist::new(actor_hops_s),
        noop: Dist::new(noop_s),
    };
    Ok((latency, noop))
}

/// Calls run before a latency run counts.
fn warm_up_calls(sizes: &Sizes) -> usize {
    (sizes.latency_calls / 20).max(10)
}

/// A no-op run timed stage by stage (`StageClock`): each stage's distribution, and the whole
/// call's in the same run.
async fn stage_breakdown(
    cwd: &std::path::Path,
    sizes: &Sizes,
    next_ids: &mut impl FnMut(usize) -> u64,
) -> Result<(Vec<(&'static str, Dist)>, Dist), String> {
    let clock = std::sync::Arc::new(pipeline::Clock::default());
    let mut clocked = Driver::noop(cwd, Some(clock.clone())).await?;
    let warm = warm_up_calls(sizes);
    clocked
        .latency(workload::noop_line, next_ids(warm), warm)
        .await?;
    clock.take();
    let clocked_total = clocked
        .latency(
            workload::noop_line,
            next_ids(sizes.stage_calls),
            sizes.stage_calls,
        )
        .await?;
    let stages = crate::supervisor::Stage::ALL
        .iter()
        .zip(clock.take())
        .map(|(stage, samples)| (stage.name(), Dist::new(samples)))
        .collect();
    clocked.shutdown().await;
    Ok((stages, Dist::new(clocked_total)))
}

/// (case name, median µs) of each decision case.
type CaseMedians = Vec<(&'static str, f64)>;

/// One decision against 1,000 mixed rules, per decision; also the median of each case.
fn decide(cwd: &std::path::Path, samples: usize) -> Result<(Dist, CaseMedians), String> {
    // Batches amortise the clock read (tens of ns) over several decisions.
    const BATCH: usize = 8;
    let (allow, deny) = workload::mixed_rules(workload::DECIDE_RULES);
    let policy = workload::policy(cwd, &allow, &deny)?;
    let object = |v: Value| match v {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    use crate::tool::Tool;
    let tools = crate::tools::ToolState::default().tools();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t.name() == name)
            .cloned()
            .ok_or_else(|| format!("no built-in tool {name}"))
    };
    let (bash, read, edit) = (tool("Bash")?, tool("Read")?, tool("Edit")?);
    let cases: Vec<(&'static str, &dyn Tool, Map<String, Value>)> = vec![
        (
            "bash_simple",
            &*bash,
            object(json!({"command": "cargo build --release"})),
        ),
        (
            "bash_compound",
            &*bash,
            object(json!({"command": "git status && npm run script2 | grep ok"})),
        ),
        (
            "read",
            &*read,
            object(json!({"file_path": cwd.join("src/mod4/a.rs").display().to_string()})),
        ),
        (
            "edit",
            &*edit,
            object(json!({"file_path": cwd.join("docs/x/page7.md").display().to_string()})),
        ),
    ];
    let time_batch = |pick: &dyn Fn(usize) -> usize| {
        let start = Instant::now();
        for k in 0..BATCH {
            let (_, tool, input) = &cases[pick(k)];
            std::hint::black_box(policy.decide(&DecisionRequest {
                tool: tool.name(),
                access: tool.access(),
                input,
                mode: Mode::Default,
                hook: None,
            }));
        }
        floors::elapsed_ns(start) / BATCH as u64
    };
    for _ in 0..(samples / 20).max(5) {
        time_batch(&|k| k % cases.len());
    }
    let mixed: Vec<u64> = (0..samples)
        .map(|_| time_batch(&|k| k % cases.len()))
        .collect();
    let per_case = (0..cases.len())
        .map(|c| {
            let d = Dist::new(
                (0..(samples / cases.len()).max(1))
                    .map(|_| time_batch(&|_| c))
                    .collect(),
            );
            (cases[c].0, d.p50_us())
        })
        .collect();
    Ok((Dist::new(mixed), per_case))
}

/// Bash `true` through toolrt and spawned directly, interleaved in small blocks.
pub(crate) struct BashFigures {
    /// Through toolrt, one in flight.
    pub toolrt_c1: Dist,
    /// Directly, one in flight.
    pub direct_c1: Dist,
    /// Through toolrt, four in flight.
    pub toolrt_c4: Dist,
    /// Directly, four in flight.
    pub direct_c4: Dist,
    /// Through toolrt with `sandbox.enabled`, one in flight (in the same rounds as
    /// `toolrt_c1`), or why it could not be measured (no sandbox on this machine).
    pub sandboxed_c1: Result<Dist, String>,
}

/// `true` through the Bash tool with the sandbox on, one in flight: `calls` after `warm`, in
/// blocks of `block`. `Err` (the figure skipped) when the sandbox cannot start here.
async fn sandboxed_bash(
    cwd: &std::path::Path,
    warm: usize,
    calls: usize,
    block: usize,
    next_ids: &mut impl FnMut(usize) -> u64,
) -> Result<Result<Dist, String>, String> {
    let mut driver = match sandboxed_driver(cwd).await {
        Ok(driver) => driver,
        Err(why) => return Ok(Err(why)),
    };
    if let Err(why) = driver
        .latency(workload::bash_line, next_ids(warm), warm)
        .await
    {
        driver.shutdown().await;
        return Ok(Err(why));
    }
    let mut samples = Vec::with_capacity(calls);
    while samples.len() < calls {
        samples.extend(
            driver
                .latency(workload::bash_line, next_ids(block), block)
                .await?,
        );
    }
    driver.shutdown().await;
    Ok(Ok(Dist::new(samples)))
}

/// A runtime like the Bash one, with the sandbox on and required.
async fn sandboxed_driver(cwd: &std::path::Path) -> Result<Driver, String> {
    let mut config = workload::config(cwd, Vec::new(), &["Bash(true)"], true, 64);
    config
        .settings
        .merge_text(
            std::path::Path::new("bench-sandbox.json"),
            r#"{"sandbox": {"enabled": true, "failIfUnavailable": true}}"#,
        )
        .map_err(|e| e.to_string())?;
    Driver::start(config).await
}

async fn bash(
    cwd: &std::path::Path,
    calls: usize,
    next_ids: &mut impl FnMut(usize) -> u64,
) -> Result<BashFigures, String> {
    let config = workload::config(cwd, Vec::new(), &["Bash(true)"], true, 64);
    let mut driver = Driver::start(config).await?;
    let warm = (calls / 10).max(2);
    driver
        .latency(workload::bash_line, next_ids(warm), warm)
        .await?;
    pipeline::direct_bash(cwd, warm, 1).await?;
    // Process spawns vary a lot on a busy machine: alternate toolrt and direct in many small
    // blocks so that load changes hit both sides of each ratio alike.
    let rounds = (calls / 20).clamp(1, 20);
    let block = calls.div_ceil(rounds);
    let (mut t1, mut d1, mut t4, mut d4) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        t1.extend(
            driver
                .latency(workload::bash_line, next_ids(block), block)
                .await?,
        );
        d1.extend(pipeline::direct_bash(cwd, block, 1).await?);
        let (_, samples) = driver
            .closed_loop(workload::bash_line, next_ids(block), block, 4, true)
            .await?;
        t4.extend(samples);
        d4.extend(pipeline::direct_bash(cwd, block, 4).await?);
    }
    driver.shutdown().await;
    // After every block of the ratios: the kernel tears a sandboxed command's namespaces down
    // after it exits, in a worker of its own (about 0.75 ms of CPU per network namespace here),
    // which would land in whichever blocks came next.
    let sandboxed_c1 = sandboxed_bash(cwd, warm, rounds * block, block, next_ids).await?;
    Ok(BashFigures {
        toolrt_c1: Dist::new(t1),
        direct_c1: Dist::new(d1),
        toolrt_c4: Dist::new(t4),
        direct_c4: Dist::new(d4),
        sandboxed_c1,
    })
}
