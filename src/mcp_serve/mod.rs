//! `toolrt mcp-serve`: toolrt as an MCP server (the official SDK `rmcp`'s server), over the
//! library like `serve`. `tools/list` is the effective registry; every `tools/call` is one call
//! of the runtime, so it walks the whole pipeline (coerce, schema, hooks, permission, budget)
//! and gets its one result, mapped to MCP (`mapping`). The `handler` answers the client's
//! requests, each `tools/call` with the result its call's slot hands it directly; the `router`
//! reads the runtime's outbox and takes every other message where it goes: an ask to the
//! client (elicitation) or to `--ask`, a progress update to the request's progress token, a
//! change of the tools to every client.

mod asks;
mod handler;
mod http;

pub use http::{HttpError, HttpOptions, HttpServer};
mod mapping;
mod router;
mod stdio;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use dashmap::DashMap;
use rmcp::ServiceExt;
use rmcp::model::ProgressToken;
use rmcp::service::{Peer, RoleServer};
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

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

/// How far a request to stop serving has gone; the CLI maps signals onto it as `serve` does
/// (SIGTERM: `Finish`; SIGINT or a second SIGTERM: `CancelAll`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Stop {
    /// Serving.
    #[default]
    None,
    /// Take no new call; answer the running ones when they finish, then exit.
    Finish,
    /// Cancel the running calls (their process groups die), answer them so, then exit.
    CancelAll,
}

/// How `toolrt mcp-serve` serves, besides the runtime's [`Config`].
#[derive(Debug, Clone, Default)]
pub struct McpServeOptions {
    /// What an ask becomes when the client cannot be asked.
    pub ask: AskFallback,
}

/// A `tools/call` waiting for its result (which comes to it directly, not through here).
struct Pending {
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
    /// Set when serving ends (a signal, the client gone): a new `tools/call` is refused.
    closing: AtomicBool,
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
    let (_keep, stop) = watch::channel(Stop::None);
    mcp_serve_until(config, options, input, output, stop).await
}

/// [`mcp_serve`], also ending on `stop`: at [`Stop::Finish`] no new call is taken and the
/// running ones finish and are answered; at [`Stop::CancelAll`] they are cancelled (their
/// process groups killed) and answered so; then the session is closed and the runtime shut
/// down.
pub async fn mcp_serve_until<R, W>(
    config: Config,
    options: McpServeOptions,
    input: R,
    output: W,
    mut stop: watch::Receiver<Stop>,
) -> Result<i32, StartError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let bound = config.max_in_flight.max(stdio::MIN_BOUND);
    let serving = Serving::start(config, options).await?;
    let handler = handler::Handler::new(serving.shared.clone());
    // The client closed its input: nobody will ask for what is running, so cancel it now and
    // let rmcp write the (cancelled) answers while it drains, rather than after its 5 s.
    let at_eof = Arc::downgrade(&serving.shared);
    let cancel = move || {
        if let Some(shared) = at_eof.upgrade() {
            shared.closing.store(true, Ordering::SeqCst);
            shared.runtime.dispatcher().cancel_all();
        }
    };
    let rw = AsyncRwTransport::new_server(input, output);
    let transport = stdio::Bounded::new(rw, bound, cancel);
    let code = match handler.serve(transport).await {
        Ok(service) => {
            let close = service.cancellation_token();
            let waiting = service.waiting();
            tokio::pin!(waiting);
            let mut signalled = stop.clone();
            tokio::select! {
                ended = &mut waiting => match ended {
                    Ok(_) => 0,
                    Err(e) => {
                        tracing::warn!("the MCP service ended abnormally: {e}");
                        1
                    }
                },
                _ = async { let _ = signalled.wait_for(|s| *s != Stop::None).await; } => {
                    serving.drain(&mut stop).await;
                    close.cancel();
                    let _ = waiting.await;
                    0
                }
            }
        }
        Err(e) => {
            tracing::warn!("MCP initialization failed: {e}");
            1
        }
    };
    serving.finish().await;
    Ok(code)
}

/// A started runtime and the tasks that serve its MCP clients, whatever the transport.
pub(crate) struct Serving {
    shared: Arc<Shared>,
    router: tokio::task::JoinHandle<()>,
    give_back: tokio::task::JoinHandle<()>,
}

impl Serving {
    /// Starts the runtime and the router that reads its outbox.
    async fn start(config: Config, options: McpServeOptions) -> Result<Self, StartError> {
        let (runtime, outbox) = Runtime::start(config).await?;
        let calls: Arc<DashMap<String, Pending>> = Arc::default();
        let shared = Arc::new(Shared {
            runtime,
            calls: calls.clone(),
            peers: Default::default(),
            next_id: AtomicU64::new(1),
            running: watch::channel(0).0,
            closing: AtomicBool::new(false),
            options,
        });
        let router = tokio::spawn(router::route(outbox, calls, Arc::downgrade(&shared)));
        let give_back = tokio::spawn(crate::memory::give_back_when_idle(
            shared.runtime.dispatcher().clone(),
        ));
        Ok(Self {
            shared,
            router,
            give_back,
        })
    }

    /// Takes no new call and waits until every running one is answered, cancelling them all
    /// once `stop` reaches `CancelAll`.
    async fn drain(&self, stop: &mut watch::Receiver<Stop>) {
        self.shared.closing.store(true, Ordering::SeqCst);
        let mut running = self.shared.running.subscribe();
        let mut cancelled = false;
        loop {
            if !cancelled && *stop.borrow_and_update() >= Stop::CancelAll {
                cancelled = true;
                self.shared.runtime.dispatcher().cancel_all();
            }
            tokio::select! {
                _ = running.wait_for(|n| *n == 0) => return,
                changed = stop.changed(), if !cancelled => {
                    if changed.is_err() {
                        cancelled = true;
                    }
                }
            }
        }
    }

    /// The clients are gone: cancels what they started (nobody can be answered any more),
    /// waits for every call's result and shuts the runtime down.
    async fn finish(self) {
        let Self {
            shared,
            router,
            give_back,
        } = self;
        shared.closing.store(true, Ordering::SeqCst);
        shared.runtime.end_agents();
        shared.runtime.close_asks();
        shared.runtime.dispatcher().cancel_all();
        let mut running = shared.running.subscribe();
        let _ = running.wait_for(|n| *n == 0).await;
        drop(running);
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
    }
}
