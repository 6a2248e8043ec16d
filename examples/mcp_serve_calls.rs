//! Makes N no-op `tools/call`s of one rmcp client, through `toolrt mcp-serve` or against a
//! minimal rmcp server, set up as the `mcp_serve` figure of `toolrt bench` sets them up (in
//! this process, over in-memory pipes, one call in flight, the `Noop` tool allowed, built-ins
//! off). Nothing is timed: it is for counting instructions, which a loaded machine does not
//! disturb (docs/BENCH.md, "`toolrt mcp-serve`"):
//!
//! ```sh
//! cargo build --release --example mcp_serve_calls
//! for side in toolrt bare; do for n in 1000 3000; do
//!   valgrind --tool=callgrind --callgrind-out-file=cg.$side.$n \
//!     target/release/examples/mcp_serve_calls $side $n
//! done; done
//! # a side's instructions per call: (I(3000) - I(1000)) / 2000, I from each file's "summary:"
//! ```
//! `bare-same-answer` is the minimal server answering what toolrt answers a no-op (its text): the
//! client's share of the difference.

mod support;

use std::process::ExitCode;
use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};

#[path = "../src/bench/minimal_server.rs"]
mod minimal_server;

type Client = RunningService<RoleClient, ClientConfig>;

async fn client(side: tokio::io::DuplexStream) -> Result<Client, String> {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("calls", env!("CARGO_PKG_VERSION")),
    )
    .serve(side)
    .await
    .map_err(|e| format!("the server did not initialize: {e}"))
}

async fn run(cwd: std::path::PathBuf, side: &str, calls: usize) -> Result<(), String> {
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    let (server, tool) = if side == "toolrt" {
        let mut config = toolrt::Config::new(cwd).tool(Arc::new(toolrt::Noop::new()));
        config.builtins = false;
        config.output_dir = toolrt::OutputDir::Temporary;
        config.allowed_tools = vec!["Noop".into()];
        config.ask_policy = toolrt::AskPolicy::Deny;
        let (read, write) = tokio::io::split(server_side);
        let options = toolrt::McpServeOptions::default();
        let task = tokio::spawn(async move {
            let _ = toolrt::mcp_serve(config, options, read, write).await;
        });
        (task, "Noop")
    } else {
        let bare = minimal_server::MinimalServer {
            same_answer: side == "bare-same-answer",
        };
        let task = tokio::spawn(async move {
            if let Ok(running) = bare.serve(server_side).await {
                let _ = running.waiting().await;
            }
        });
        (task, "noop")
    };
    let client = client(client_side).await?;
    for _ in 0..calls {
        let answer = client
            .peer()
            .call_tool(CallToolRequestParams::new(tool))
            .await
            .map_err(|e| format!("{tool} failed: {e}"))?;
        if answer.is_error == Some(true) {
            return Err(format!("{tool} answered an error: {answer:?}"));
        }
    }
    let _ = client.cancel().await;
    let _ = server.await;
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (side, calls) = match args.as_slice() {
        [side, n] if ["toolrt", "bare", "bare-same-answer"].contains(&side.as_str()) => {
            match n.parse::<usize>() {
                Ok(n) => (side.as_str(), n),
                Err(e) => return usage(&format!("calls {n:?}: {e}")),
            }
        }
        _ => return usage("expected two arguments"),
    };
    support::run_counted("mcp_serve_calls", usage, |cwd| run(cwd, side, calls))
}

fn usage(why: &str) -> ExitCode {
    eprintln!("mcp_serve_calls: {why}\nusage: mcp_serve_calls toolrt|bare|bare-same-answer CALLS");
    ExitCode::from(2)
}
