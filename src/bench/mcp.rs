//! The MCP figure: the same `echo` call of a real MCP server (server-everything by default)
//! through toolrt — line in, permission, rmcp client, result line out — and through a bare
//! `rmcp` client calling its own instance of the same server, interleaved in one run, at one
//! and at sixteen calls in flight.

use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use serde_json::json;

use super::floors::elapsed_ns;
use super::pipeline::Driver;
use super::stats::Dist;
use super::workload;

/// The server-everything the repository's tests install, used when `--mcp-server` is not
/// given.
pub(super) const DEFAULT_SERVER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/mcp/node_modules/.bin/mcp-server-everything"
);

/// The server to measure against: a program and its arguments; it must offer `echo` taking
/// `{"message": string}`.
#[derive(Debug, Clone)]
pub(super) struct ServerCommand {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
}

impl ServerCommand {
    /// `--mcp-server "PROGRAM ARGS…"` (split on whitespace), or the default server when it is
    /// installed; None when there is none.
    pub(super) fn pick(flag: Option<&str>) -> Option<Self> {
        match flag {
            Some(text) => {
                let mut words = text.split_whitespace().map(String::from);
                Some(Self {
                    program: words.next()?,
                    args: words.collect(),
                })
            }
            None => std::path::Path::new(DEFAULT_SERVER).exists().then(|| Self {
                program: DEFAULT_SERVER.into(),
                args: vec!["stdio".into()],
            }),
        }
    }
}

/// One side's figures (toolrt, or the bare client).
#[derive(Debug, Clone, Default)]
pub(super) struct Side {
    /// Latency of each call, one in flight (ns).
    pub c1: Dist,
    /// CPU time of the whole process per call, one in flight (µs): user + system, from
    /// `getrusage` around each block.
    pub cpu_c1_us: f64,
    /// Calls per second, 16 in flight.
    pub c16: f64,
    /// CPU time of the process per call, 16 in flight (µs).
    pub cpu_c16_us: f64,
}

/// The MCP figures.
pub(super) struct McpFigures {
    /// The server measured against.
    pub server: String,
    /// Through toolrt.
    pub toolrt: Side,
    /// The bare rmcp client.
    pub bare: Side,
    /// Blocks per side and figure, and calls per block (one in flight, sixteen in flight).
    pub blocks: (usize, usize, usize, usize),
    /// Each round's ratio, the two sides' blocks of that round side by side: toolrt's p50 over
    /// the bare client's at one in flight, toolrt's calls per second over the bare client's at
    /// sixteen. Two blocks of one round ran back to back, so load that comes and goes on the
    /// machine falls on both alike.
    pub rounds: (Vec<f64>, Vec<f64>),
}

impl McpFigures {
    /// toolrt's p50 over the bare client's, one in flight.
    pub(super) fn ratio_c1(&self) -> f64 {
        self.toolrt.c1.p50_us() / self.bare.c1.p50_us()
    }

    /// toolrt's calls per second over the bare client's, sixteen in flight.
    pub(super) fn throughput_ratio_c16(&self) -> f64 {
        self.toolrt.c16 / self.bare.c16
    }

    /// The median of the rounds' ratios at one in flight and at sixteen.
    pub(super) fn round_medians(&self) -> (f64, f64) {
        (median(&self.rounds.0), median(&self.rounds.1))
    }
}

/// The median of `values` (NaN when there are none).
pub(super) fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// CPU time (user + system) of the whole process so far, in microseconds.
fn cpu_us() -> u64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_SELF).map_or(0, |u| {
        let us = |t: nix::sys::time::TimeVal| {
            (t.tv_sec() as u64).saturating_mul(1_000_000) + t.tv_usec() as u64
        };
        us(u.user_time()) + us(u.system_time())
    })
}

fn echo_line(id: u64) -> String {
    format!(
        r#"{{"type":"tool_use","id":"m{id}","name":"mcp__bench__echo","input":{{"message":"hi"}}}}"#
    )
}

type BareClient = rmcp::service::RunningService<rmcp::RoleClient, ClientConfig>;

/// A bare rmcp client over the server's stdio, spawned the way toolrt spawns it.
async fn bare_client(
    server: &ServerCommand,
    cwd: &std::path::Path,
) -> Result<(BareClient, tokio::process::Child), String> {
    let env = crate::mcp::process::server_env(&[], &[], &[]);
    let mut child = tokio::process::Command::new(&server.program)
        .args(&server.args)
        .env_clear()
        .envs(env)
        .current_dir(cwd)
        .process_group(0)
        .kill_on_drop(true)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the MCP server {}: {e}", server.program))?;
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        return Err("the MCP server has no pipes".into());
    };
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new_client(stdout, stdin);
    let config = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("bench", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
    let client = tokio::time::timeout(Duration::from_secs(30), config.serve(transport))
        .await
        .map_err(|_| "the MCP server did not initialize within 30 s".to_string())?
        .map_err(|e| format!("the MCP server did not initialize: {e}"))?;
    Ok((client, child))
}

fn echo_params() -> CallToolRequestParams {
    let args = json!({"message": "hi"});
    CallToolRequestParams::new("echo").with_arguments(args.as_object().cloned().unwrap_or_default())
}

async fn bare_latency(client: &BareClient, calls: usize) -> Result<Vec<u64>, String> {
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        client
            .peer()
            .call_tool(echo_params())
            .await
            .map_err(|e| format!("bare echo failed: {e}"))?;
        samples.push(elapsed_ns(start));
    }
    Ok(samples)
}

async fn bare_throughput(
    client: &BareClient,
    calls: usize,
    in_flight: usize,
) -> Result<Duration, String> {
    let begin = Instant::now();
    let mut running = futures::stream::FuturesUnordered::new();
    let mut sent = 0;
    let mut done = 0;
    use futures::StreamExt;
    while done < calls {
        while sent < calls && running.len() < in_flight {
            let peer = client.peer().clone();
            running.push(async move { peer.call_tool(echo_params()).await });
            sent += 1;
        }
        match running.next().await {
            Some(Ok(_)) => done += 1,
            Some(Err(e)) => return Err(format!("bare echo failed: {e}")),
            None => break,
        }
    }
    Ok(begin.elapsed())
}

/// Sums one side's blocks.
#[derive(Default)]
struct Tally {
    c1: Vec<u64>,
    cpu_c1: u64,
    wall_c16: Duration,
    cpu_c16: u64,
}

/// Measures `calls` echo calls per side and figure. The two sides take turns in short blocks,
/// the side that goes first alternating from round to round, after the same warm-up, so that
/// what drifts on the machine (other load, a server's garbage collection, the core each
/// process is on) falls on both sides alike. Each side has its own server process (a stdio
/// server serves one client), spawned the same way and sent the same calls in the same
/// pattern.
pub(super) async fn measure(
    server: &ServerCommand,
    cwd: &std::path::Path,
    calls: usize,
    next_ids: &mut impl FnMut(usize) -> u64,
) -> Result<McpFigures, String> {
    let mut config = workload::config(cwd, Vec::new(), &["mcp__bench__echo"], false, 64);
    let servers =
        json!({"mcpServers": {"bench": {"command": server.program, "args": server.args}}});
    config
        .settings
        .merge_text(std::path::Path::new("bench-mcp.json"), &servers.to_string())
        .map_err(|e| e.to_string())?;
    let mut driver = Driver::start(config).await?;
    if !driver.has_tool("mcp__bench__echo") {
        driver.shutdown().await;
        return Err(format!(
            "the MCP server {} did not start or has no echo tool",
            server.program
        ));
    }
    let (bare, mut child) = match bare_client(server, cwd).await {
        Ok(pair) => pair,
        Err(e) => {
            driver.shutdown().await;
            return Err(e);
        }
    };
    let result = alternate(&mut driver, &bare, calls, next_ids).await;
    driver.shutdown().await;
    drop(bare);
    let _ = child.kill().await;
    let (toolrt, bare, blocks, rounds) = result?;
    Ok(McpFigures {
        server: std::iter::once(server.program.as_str())
            .chain(server.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        toolrt,
        bare,
        blocks,
        rounds,
    })
}

/// Calls per block at one in flight, and blocks per sixteen-in-flight figure: short enough that
/// the sides take many turns, long enough that a block is not mostly its first call.
const BLOCK_C1: usize = 50;
const ROUNDS_C16: usize = 10;

async fn alternate(
    driver: &mut Driver,
    bare: &BareClient,
    calls: usize,
    next_ids: &mut impl FnMut(usize) -> u64,
) -> Result<
    (
        Side,
        Side,
        (usize, usize, usize, usize),
        (Vec<f64>, Vec<f64>),
    ),
    String,
> {
    let block1 = BLOCK_C1.min(calls).max(1);
    let rounds1 = calls.div_ceil(block1);
    let rounds16 = ROUNDS_C16.min(calls.div_ceil(16)).max(1);
    let block16 = calls.div_ceil(rounds16).max(16);
    // The same warm-up for both: a tenth of the calls at one in flight, then one block at 16.
    let warm = (calls / 10).max(5);
    for half in [warm / 2, warm - warm / 2] {
        driver.latency(echo_line, next_ids(half), half).await?;
        bare_latency(bare, half).await?;
    }
    driver
        .closed_loop(echo_line, next_ids(block16), block16, 16, false)
        .await?;
    bare_throughput(bare, block16, 16).await?;

    let (mut t, mut b) = (Tally::default(), Tally::default());
    let (mut ratios1, mut ratios16) = (Vec::new(), Vec::new());
    for round in 0..rounds1 {
        let mut p50 = [0.0; 2];
        for toolrt_turn in turns(round) {
            let cpu = cpu_us();
            let samples = if toolrt_turn {
                driver.latency(echo_line, next_ids(block1), block1).await?
            } else {
                bare_latency(bare, block1).await?
            };
            p50[usize::from(!toolrt_turn)] = Dist::new(samples.clone()).p50_us();
            let tally = if toolrt_turn { &mut t } else { &mut b };
            tally.c1.extend(samples);
            tally.cpu_c1 += cpu_us() - cpu;
        }
        ratios1.push(p50[0] / p50[1]);
    }
    for round in 0..rounds16 {
        let mut wall = [Duration::ZERO; 2];
        for toolrt_turn in turns(round) {
            let cpu = cpu_us();
            let took = if toolrt_turn {
                driver
                    .closed_loop(echo_line, next_ids(block16), block16, 16, false)
                    .await?
                    .0
            } else {
                bare_throughput(bare, block16, 16).await?
            };
            wall[usize::from(!toolrt_turn)] = took;
            let tally = if toolrt_turn { &mut t } else { &mut b };
            tally.wall_c16 += took;
            tally.cpu_c16 += cpu_us() - cpu;
        }
        // Calls per second, toolrt over bare: the same calls, so the bare block's time over
        // toolrt's.
        ratios16.push(wall[1].as_secs_f64() / wall[0].as_secs_f64());
    }
    let n1 = (rounds1 * block1) as f64;
    let n16 = (rounds16 * block16) as f64;
    let side = |t: Tally| Side {
        c1: Dist::new(t.c1),
        cpu_c1_us: t.cpu_c1 as f64 / n1,
        c16: n16 / t.wall_c16.as_secs_f64(),
        cpu_c16_us: t.cpu_c16 as f64 / n16,
    };
    Ok((
        side(t),
        side(b),
        (rounds1, block1, rounds16, block16),
        (ratios1, ratios16),
    ))
}

/// Who goes first in a round: toolrt in even rounds, the bare client in odd ones.
pub(super) fn turns(round: usize) -> [bool; 2] {
    if round.is_multiple_of(2) {
        [true, false]
    } else {
        [false, true]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_round_ratios() {
        for (values, want) in [
            (vec![1.2], 1.2),
            (vec![3.0, 1.0, 2.0], 2.0),
            (vec![0.5, 4.0, 1.0, 2.0], 1.5),
        ] {
            assert_eq!(median(&values), want, "{values:?}");
        }
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn the_sides_take_turns_going_first() {
        assert_eq!(turns(0), [true, false]);
        assert_eq!(turns(1), [false, true]);
        assert_eq!(turns(2), [true, false]);
    }
}
