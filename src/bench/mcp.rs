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
pub const DEFAULT_SERVER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/mcp/node_modules/.bin/mcp-server-everything"
);

/// The server to measure against: a program and its arguments; it must offer `echo` taking
/// `{"message": string}`.
#[derive(Debug, Clone)]
pub struct ServerCommand {
    /// The program.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
}

impl ServerCommand {
    /// `--mcp-server "PROGRAM ARGS…"` (split on whitespace), or the default server when it is
    /// installed; None when there is none.
    pub fn pick(flag: Option<&str>) -> Option<Self> {
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

/// The MCP figures.
pub struct McpFigures {
    /// The server measured against.
    pub server: String,
    /// Through toolrt, one call in flight (ns).
    pub toolrt_c1: Dist,
    /// Bare rmcp client, one call in flight.
    pub bare_c1: Dist,
    /// Calls per second through toolrt, 16 in flight.
    pub toolrt_c16: f64,
    /// Calls per second with the bare client, 16 in flight.
    pub bare_c16: f64,
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

/// Measures `calls` echo calls per side and figure, in interleaved blocks.
pub async fn measure(
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
    let (bare, mut child) = bare_client(server, cwd).await?;
    let warm = (calls / 10).max(5);
    driver.latency(echo_line, next_ids(warm), warm).await?;
    bare_latency(&bare, warm).await?;
    let rounds = (calls / 200).clamp(1, 10);
    let block = calls.div_ceil(rounds);
    let (mut t1, mut b1) = (Vec::new(), Vec::new());
    let (mut t16, mut b16) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..rounds {
        t1.extend(driver.latency(echo_line, next_ids(block), block).await?);
        b1.extend(bare_latency(&bare, block).await?);
        t16 += driver
            .closed_loop(echo_line, next_ids(block), block, 16, false)
            .await?
            .0;
        b16 += bare_throughput(&bare, block, 16).await?;
    }
    driver.shutdown().await;
    drop(bare);
    let _ = child.kill().await;
    let total = (block * rounds) as f64;
    Ok(McpFigures {
        server: std::iter::once(server.program.as_str())
            .chain(server.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        toolrt_c1: Dist::new(t1),
        bare_c1: Dist::new(b1),
        toolrt_c16: total / t16.as_secs_f64(),
        bare_c16: total / b16.as_secs_f64(),
    })
}
