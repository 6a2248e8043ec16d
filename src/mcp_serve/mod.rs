//! `toolrt mcp-serve`: toolrt as an MCP server (the official SDK `rmcp`'s server), over the
//! library like `serve`. `tools/list` is the effective registry; every `tools/call` is one call
//! of the runtime, so it walks the whole pipeline (coerce, schema, hooks, permission, budget)
//! and gets its one result, mapped to MCP (`mapping`). The `handler` answers the client's
//! requests; the `router` reads the runtime's outbox and takes each message where it goes: a
//! result to the request waiting for it, an ask to the client (elicitation) or to `--ask`, a
//! progress update to the request's progress token, a change of the tools to every client.

mod asks;
mod handler;
mod mapping;
mod router;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use dashmap::DashMap;
use rmcp::ServiceExt;
use rmcp::model::ProgressToken;
use rmcp::service::{Peer, RoleServer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{oneshot, watch};

use crate::call::ToolResult;
use crate::runtime::{Config, Runtime, StartError};

/// What an ask becomes when the MCP client cannot be asked (it declared no elicitation
/// capability): `--ask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AskFallback {
    /// Deny it, saying why in the result (the default).
    #[default]
    Deny,
    /// Allow it when the tool is known to change nothing (its `readOnlyHint`); deny any other.
    AllowReadOnly,
}

impl std::str::FromStr for AskFallback {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "deny" => Ok(Self::Deny),
            "allow-read-only" => Ok(Self::AllowReadOnly),
            other => Err(format!(
                "unknown --ask value {other:?}: expected deny or allow-read-only"
            )),
        }
    }
}

/// How `toolrt mcp-serve` serves, besides the runtime's [`Config`].
#[derive(Debug, Clone, Default)]
pub struct McpServeOptions {
    /// What an ask becomes when the client cannot be asked.
    pub ask: AskFallback,
}

/// A `tools/call` waiting for its result.
struct Pending {
    /// Where the result goes, with how `--ask` settled an ask of the call.
    tx: oneshot::Sender<(ToolResult, Option<String>)>,
    /// The client that made the call (elicitation, progress).
    peer: Peer<RoleServer>,
    /// The request's `progressToken`, if it gave one, and the last progress sent.
    progress: Option<(ProgressToken, u64)>,
    /// How `--ask` settled an ask of this call, said in the result.
    ask_note: Option<String>,
}

/// What the handler and the router share.
struct Shared {
    runtime: Runtime,
    /// The calls waiting for a result, by the `tool_use_id` toolrt gave them.
    calls: Arc<DashMap<String, Pending>>,
    /// Every client that completed `initialize` (one over stdio).
    peers: std::sync::Mutex<Vec<Peer<RoleServer>>>,
    /// The next call's number (ids are toolrt's own: JSON-RPC ids may repeat across clients).
    next_id: AtomicU64,
    /// `tools/call` handlers still running; shutdown waits for none.
    running: watch::Sender<usize>,
    options: McpServeOptions,
}

/// Serves MCP over `input` and `output` (newline-delimited JSON-RPC, as over stdio) until the
/// client closes its side; then cancels what is still running (nobody is left to read it),
/// waits for every call's result and shuts the runtime down. Returns the exit code.
pub async fn mcp_serve<R, W>(
    config: Config,
    options: McpServeOptions,
    input: R,
    output: W,
) -> Result<i32, StartError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (runtime, outbox) = Runtime::start(config).await?;
    let calls: Arc<DashMap<String, Pending>> = Arc::default();
    let shared = Arc::new(Shared {
        runtime,
        calls: calls.clone(),
        peers: Default::default(),
        next_id: AtomicU64::new(1),
        running: watch::channel(0).0,
        options,
    });
    let router = tokio::spawn(router::route(outbox, calls, Arc::downgrade(&shared)));
    let give_back = tokio::spawn(crate::memory::give_back_when_idle(
        shared.runtime.dispatcher().clone(),
    ));
    let handler = handler::Handler::new(shared.clone());
    let code = match handler.serve((input, output)).await {
        Ok(service) => match service.waiting().await {
            Ok(_) => 0,
            Err(e) => {
                tracing::warn!("the MCP service ended abnormally: {e}");
                1
            }
        },
        Err(e) => {
            tracing::warn!("MCP initialization failed: {e}");
            1
        }
    };
    // The client is gone: nothing it started can be answered any more.
    shared.runtime.end_agents();
    shared.runtime.close_asks();
    shared.runtime.dispatcher().cancel_all();
    let mut running = shared.running.subscribe();
    let _ = running.wait_for(|n| *n == 0).await;
    give_back.abort();
    // The handlers are done; the router and the asks only borrow the runtime for a moment
    // at a time (an ask to a client that is gone fails at once).
    let unwrap = async {
        let mut shared = shared;
        loop {
            match Arc::try_unwrap(shared) {
                Ok(s) => return s,
                Err(again) => {
                    shared = again;
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
            }
        }
    };
    match tokio::time::timeout(std::time::Duration::from_secs(10), unwrap).await {
        Ok(shared) => shared.runtime.shutdown().await,
        Err(_) => {
            tracing::warn!("the runtime is still in use at exit; not shut down cleanly");
            router.abort();
        }
    }
    let _ = router.await;
    Ok(code)
}
