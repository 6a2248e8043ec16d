//! The `toolrt mcp-serve` figure: one rmcp client calling a no-op tool through toolrt's MCP
//! server (the whole pipeline behind `tools/call`) against the same client calling a minimal
//! rmcp server whose tool does nothing, both in this process over in-memory pipes, blocks
//! interleaved in one run, one call in flight.

use std::sync::Arc;
use std::time::Instant;

use rmcp::RoleClient;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};

use super::floors::elapsed_ns;
use super::minimal_server::MinimalServer;
use super::stats::Dist;

/// Bytes of each in-memory pipe.
const PIPE: usize = 1 << 16;

/// The figures: toolrt's no-op and the bare server's, one in flight, and each round's ratio.
#[derive(Debug, Clone, Default)]
pub(super) struct McpServeFigures {
    /// Through `toolrt mcp-serve`.
    pub toolrt: Dist,
    /// Against the minimal rmcp server.
    pub bare: Dist,
    /// Each round's p50 ratio (toolrt over bare).
    pub rounds: Vec<f64>,
}

impl McpServeFigures {
    /// toolrt's p50 over the bare server's.
    pub(super) fn ratio(&self) -> f64 {
        self.toolrt.p50_us() / self.bare.p50_us()
    }

    /// The median of the rounds' ratios.
    pub(super) fn round_median(&self) -> f64 {
        super::mcp::median(&self.rounds)
    }
}

type Client = rmcp::service::RunningService<RoleClient, ClientConfig>;

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("bench", env!("CARGO_PKG_VERSION")),
    )
}

/// A client connected to the bare server over an in-memory pipe.
async fn bare() -> Result<Client, String> {
    let (client_side, server_side) = tokio::io::duplex(PIPE);
    tokio::spawn(async move {
        if let Ok(running) = MinimalServer::default().serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    client_config()
        .serve(client_side)
        .await
        .map_err(|e| format!("the bare rmcp server did not initialize: {e}"))
}

/// A client connected to `toolrt mcp-serve` (built-ins off, the no-op tool allowed) over an
/// in-memory pipe, and the server's task.
async fn toolrt(cwd: &std::path::Path) -> Result<(Client, tokio::task::JoinHandle<()>), String> {
    let mut config = crate::runtime::Config::new(cwd.to_path_buf())
        .tool(Arc::new(crate::tools::noop::Noop::new()));
    config.builtins = false;
    config.output_dir = crate::runtime::OutputDir::Temporary;
    config.allowed_tools = vec!["Noop".into()];
    config.ask_policy = crate::supervisor::AskPolicy::Deny;
    let (client_side, server_side) = tokio::io::duplex(PIPE);
    let (read, write) = tokio::io::split(server_side);
    let server = tokio::spawn(async move {
        let options = crate::mcp_serve::McpServeOptions::default();
        if let Err(e) = crate::mcp_serve::mcp_serve(config, options, read, write).await {
            tracing::warn!("bench: toolrt mcp-serve did not start: {e}");
        }
    });
    let client = client_config()
        .serve(client_side)
        .await
        .map_err(|e| format!("toolrt mcp-serve did not initialize: {e}"))?;
    Ok((client, server))
}

/// `calls` sequential calls of `tool`, each timed.
async fn block(client: &Client, tool: &'static str, calls: usize) -> Result<Vec<u64>, String> {
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        let answer = client
            .peer()
            .call_tool(CallToolRequestParams::new(tool))
            .await
            .map_err(|e| format!("{tool} failed: {e}"))?;
        samples.push(elapsed_ns(start));
        if answer.is_error == Some(true) {
            return Err(format!("{tool} answered an error: {answer:?}"));
        }
    }
    Ok(samples)
}

/// Measures both sides, `rounds` rounds of `calls` calls each, the sides back to back.
pub(super) async fn measure(
    cwd: &std::path::Path,
    calls: usize,
    rounds: usize,
) -> Result<McpServeFigures, String> {
    let bare_client = bare().await?;
    let (toolrt_client, server) = toolrt(cwd).await?;
    // Warm both: first calls pay for allocation and caches.
    block(&bare_client, "noop", calls.min(50)).await?;
    block(&toolrt_client, "Noop", calls.min(50)).await?;
    let (mut all_toolrt, mut all_bare, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds.max(1) {
        let t = block(&toolrt_client, "Noop", calls).await?;
        let b = block(&bare_client, "noop", calls).await?;
        ratios.push(Dist::new(t.clone()).p50_us() / Dist::new(b.clone()).p50_us());
        all_toolrt.extend(t);
        all_bare.extend(b);
    }
    let _ = bare_client.cancel().await;
    let _ = toolrt_client.cancel().await;
    let _ = server.await;
    Ok(McpServeFigures {
        toolrt: Dist::new(all_toolrt),
        bare: Dist::new(all_bare),
        rounds: ratios,
    })
}
