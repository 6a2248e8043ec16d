//! `toolrt mcp-serve --http ADDR`: the same MCP server over streamable HTTP (rmcp's tower
//! service, one session per client, on hyper's HTTP/1.1 connections) at `/mcp`. A loopback
//! address unless remote listening is allowed explicitly, and a bearer token on every request
//! unless authentication is disabled explicitly: anything else answers 401 before rmcp sees it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{AUTHORIZATION, HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{McpServeOptions, Serving, Stop, handler::Handler};
use crate::runtime::{Config, StartError};

/// The path of the MCP endpoint; every other path is 404.
const MCP_PATH: &str = "/mcp";

/// Most HTTP connections served at once; further ones wait to be accepted, so memory stays
/// bounded whatever clients do.
const MAX_CONNECTIONS: usize = 64;

/// Most MCP sessions alive at once (each holds about 80 KB, and one ends only when its client
/// closes it or after 5 minutes idle); a new `initialize` past it answers 503.
const MAX_SESSIONS: usize = 256;

/// How long a connection may take to send a request's headers, idle between requests
/// included; then hyper closes it, so stalled connections cannot hold every connection slot.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Overrides [`HEADER_READ_TIMEOUT`] in milliseconds: for tests, which cannot wait 10 s.
const HEADER_READ_TIMEOUT_ENV: &str = "TOOLRT_MCP_HTTP_HEADER_TIMEOUT_MS";

/// How long connections get to send their last responses once serving ends.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// How `toolrt mcp-serve --http` listens.
#[derive(Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// The bearer token every request must carry (`Authorization: Bearer …`); `None` turns
    /// authentication off (`--http-no-auth`).
    pub token: Option<String>,
    /// Allow an address that is not loopback (`--http-allow-remote`).
    pub allow_remote: bool,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("allow_remote", &self.allow_remote)
            .finish()
    }
}

/// Why `--http` cannot serve.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// A non-loopback address without `--http-allow-remote`.
    #[error(
        "--http {0}: not a loopback address; toolrt listens only on loopback unless --http-allow-remote is given"
    )]
    NotLoopback(SocketAddr),
    /// An empty token would let anyone in.
    #[error("the HTTP token is empty")]
    EmptyToken,
    /// The address cannot be listened on.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The runtime did not start.
    #[error(transparent)]
    Start(#[from] StartError),
}

/// A bound `--http` listener, not serving yet (its address is known, for the caller to say).
pub struct HttpServer {
    listener: TcpListener,
    options: HttpOptions,
}

impl HttpServer {
    /// Checks the options (loopback, a non-empty token) and binds the address.
    pub async fn bind(options: HttpOptions) -> Result<Self, HttpError> {
        if !options.addr.ip().is_loopback() && !options.allow_remote {
            return Err(HttpError::NotLoopback(options.addr));
        }
        if options
            .token
            .as_deref()
            .is_some_and(|t| t.trim().is_empty())
        {
            return Err(HttpError::EmptyToken);
        }
        let listener = TcpListener::bind(options.addr)
            .await
            .map_err(|source| HttpError::Bind {
                addr: options.addr,
                source,
            })?;
        Ok(Self { listener, options })
    }

    /// The address listened on (the port chosen when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().unwrap_or(self.options.addr)
    }

    /// Serves MCP until `stop` says so (as [`super::mcp_serve_until`] does over stdio): then
    /// no new call is taken, the running ones are answered (cancelled at `CancelAll`), the
    /// sessions are closed and the runtime shut down. Returns the exit code.
    pub async fn serve(
        self,
        config: Config,
        options: McpServeOptions,
        mut stop: watch::Receiver<Stop>,
    ) -> Result<i32, HttpError> {
        let serving = Serving::start(config, options).await?;
        let sessions = CancellationToken::new();
        let mut http =
            StreamableHttpServerConfig::default().with_cancellation_token(sessions.child_token());
        http = if self.options.allow_remote {
            // The token guards; which Host a remote client names is its own business.
            http.disable_allowed_hosts()
        } else {
            let bound = self.local_addr().ip().to_string();
            http.with_allowed_hosts([
                "localhost".to_string(),
                "127.0.0.1".into(),
                "::1".into(),
                bound,
            ])
        };
        let shared = serving.shared.clone();
        let sessions_alive = Arc::new(LocalSessionManager::default());
        let service = StreamableHttpService::new(
            move || Ok(Handler::new(shared.clone())),
            sessions_alive.clone(),
            http,
        );
        let header_timeout = header_read_timeout();
        let token: Arc<Option<String>> = Arc::new(self.options.token.clone());
        let (closing, closed) = watch::channel(false);
        let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        let mut connections = JoinSet::new();
        loop {
            let accepted = tokio::select! {
                _ = async { let _ = stop.wait_for(|s| *s != Stop::None).await; } => break,
                accepted = accept(&self.listener, &permits) => accepted,
            };
            let Some((stream, permit)) = accepted else {
                continue;
            };
            let service = service.clone();
            let token = token.clone();
            let sessions_alive = sessions_alive.clone();
            let endpoint = hyper::service::service_fn(move |req: Request<Incoming>| {
                let service = service.clone();
                let token = token.clone();
                let sessions_alive = sessions_alive.clone();
                async move {
                    if req.uri().path() != MCP_PATH {
                        return Ok::<_, Infallible>(plain(
                            StatusCode::NOT_FOUND,
                            "toolrt mcp-serve answers at /mcp\n",
                        ));
                    }
                    if let Some(token) = token.as_deref()
                        && !authorized(req.headers(), token)
                    {
                        return Ok(unauthorized());
                    }
                    if opens_session(&req)
                        && sessions_alive.sessions.read().await.len() >= MAX_SESSIONS
                    {
                        return Ok(too_many_sessions());
                    }
                    Ok(service.handle(req).await)
                }
            });
            connections.spawn(connection(
                stream,
                endpoint,
                closed.clone(),
                permit,
                header_timeout,
            ));
            while connections.try_join_next().is_some() {}
        }
        serving.drain(&mut stop).await;
        sessions.cancel();
        let _ = closing.send(true);
        let all_closed = async { while connections.join_next().await.is_some() {} };
        if tokio::time::timeout(CLOSE_GRACE, all_closed).await.is_err() {
            connections.abort_all();
        }
        serving.finish().await;
        Ok(0)
    }
}

/// The next connection, once a connection slot is free; `None` when accepting failed.
async fn accept(
    listener: &TcpListener,
    permits: &Arc<Semaphore>,
) -> Option<(TcpStream, OwnedSemaphorePermit)> {
    let permit = permits.clone().acquire_owned().await.ok()?;
    match listener.accept().await {
        Ok((stream, _)) => {
            let _ = stream.set_nodelay(true);
            Some((stream, permit))
        }
        Err(e) => {
            // Out of file descriptors and the like: back off rather than spin.
            tracing::warn!("mcp-serve --http: accept failed: {e}");
            tokio::time::sleep(Duration::from_millis(50)).await;
            None
        }
    }
}

/// Serves one connection until it ends, or until serving ends (then its last responses go
/// out first).
async fn connection<S>(
    stream: TcpStream,
    endpoint: S,
    mut closing: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
    header_timeout: Duration,
) where
    S: hyper::service::Service<Request<Incoming>, Response = Response<BoxBody>, Error = Infallible>,
    S::Future: Send + 'static,
{
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(TokioIo::new(stream), endpoint);
    tokio::pin!(conn);
    tokio::select! {
        ended = conn.as_mut() => {
            if let Err(e) = ended {
                tracing::debug!("mcp-serve --http: connection ended: {e}");
            }
        }
        _ = async { let _ = closing.wait_for(|c| *c).await; } => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

type BoxBody = http_body_util::combinators::BoxBody<Bytes, Infallible>;

fn plain(status: StatusCode, text: &'static str) -> Response<BoxBody> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Whether the request would start a session: a POST naming none (an `initialize`).
fn opens_session<B>(req: &Request<B>) -> bool {
    req.method() == hyper::Method::POST && !req.headers().contains_key("mcp-session-id")
}

fn too_many_sessions() -> Response<BoxBody> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {
        "code": -32000,
        "message": format!("toolrt mcp-serve has {MAX_SESSIONS} sessions open, its limit: close one (DELETE /mcp with its Mcp-Session-Id) or wait for an idle one to expire"),
    }});
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// [`HEADER_READ_TIMEOUT`], or [`HEADER_READ_TIMEOUT_ENV`]'s milliseconds when set.
fn header_read_timeout() -> Duration {
    std::env::var(HEADER_READ_TIMEOUT_ENV)
        .ok()
        .and_then(|ms| ms.trim().parse().ok())
        .map_or(HEADER_READ_TIMEOUT, Duration::from_millis)
}

fn unauthorized() -> Response<BoxBody> {
    let mut response = plain(
        StatusCode::UNAUTHORIZED,
        "toolrt mcp-serve: a valid `Authorization: Bearer <token>` header is required\n",
    );
    response
        .headers_mut()
        .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// Whether the request carries `Authorization: Bearer <token>` (scheme in any case), compared
/// in time independent of where the first difference is.
fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let Some(value) = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some((scheme, given)) = value.trim().split_once(' ') else {
        return false;
    };
    scheme.eq_ignore_ascii_case("bearer") && same(given.trim().as_bytes(), token.as_bytes())
}

fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_right_bearer_token_is_authorized() {
        let table: &[(Option<&str>, bool)] = &[
            (Some("Bearer s3cret"), true),
            (Some("bearer s3cret"), true),
            (Some("BEARER  s3cret "), true),
            (Some("Bearer s3cre"), false),
            (Some("Bearer s3cret2"), false),
            (Some("Bearer S3CRET"), false),
            (Some("Basic s3cret"), false),
            (Some("Bearer"), false),
            (Some("s3cret"), false),
            (Some(""), false),
            (None, false),
        ];
        for (header, want) in table {
            let mut headers = HeaderMap::new();
            if let Some(h) = header {
                headers.insert(AUTHORIZATION, HeaderValue::from_str(h).unwrap());
            }
            assert_eq!(authorized(&headers, "s3cret"), *want, "{header:?}");
        }
    }

    #[tokio::test]
    async fn a_non_loopback_address_or_an_empty_token_is_refused() {
        let remote = HttpOptions {
            addr: "192.0.2.1:0".parse().unwrap(),
            token: Some("t".into()),
            allow_remote: false,
        };
        assert!(matches!(
            HttpServer::bind(remote).await,
            Err(HttpError::NotLoopback(_))
        ));
        let empty = HttpOptions {
            addr: "127.0.0.1:0".parse().unwrap(),
            token: Some(" ".into()),
            allow_remote: false,
        };
        assert!(matches!(
            HttpServer::bind(empty).await,
            Err(HttpError::EmptyToken)
        ));
    }
}
