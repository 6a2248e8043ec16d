//! The sandbox's network proxy: the only way out of a sandboxed command's network namespace.
//!
//! toolrt listens on a Unix socket in the session's sandbox folder; the namespace holder
//! (`holder`) relays every connection made to `127.0.0.1:PROXY_PORT` inside the namespace to
//! it. A connection starts with an HTTP request: `CONNECT host:port` (a tunnel, for HTTPS and
//! anything else) or a plain HTTP request in absolute form (`GET http://host/path`). The host
//! is decided on before any byte reaches it: `deniedDomains` (and `WebFetch(domain:…)` deny
//! rules) refuse, `allowedDomains` (and `WebFetch(domain:…)` allow rules) allow, and any other
//! host is asked about for the Bash call that made the connection (`Network(host)`), which
//! the call names in its proxy credentials (each call's `HTTP_PROXY` carries its own user
//! name). Every refusal is kept for the call's result.

use std::future::Future;
use std::net::IpAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use dashmap::DashMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::permission::DomainPattern;

/// Connections served at once; more are closed at once.
const MAX_CONNECTIONS: usize = 256;
/// The longest request head (request line and headers) read before deciding.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connecting to the host may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection may wait for an answer about its host before it is refused.
const ASK_TIMEOUT: Duration = Duration::from_secs(600);
/// Refusals kept per call (the rest are counted in the last one).
const MAX_REFUSALS: usize = 8;
/// Test-only: `host=ip,host=ip` maps hosts to addresses before DNS (tests must not leave the
/// machine; documented in docs/SEMANTICS.md §11).
pub(crate) const RESOLVE_ENV: &str = "TOOLRT_SANDBOX_PROXY_RESOLVE";

/// A question for the client: may the sandboxed command of call `tool_use_id` connect to
/// `host:port`? Answered `false` when `cancel` fires first.
#[derive(Debug, Clone)]
pub(crate) struct NetworkAsk {
    /// The Bash call whose command connects.
    pub(crate) tool_use_id: String,
    /// The host, as the command named it.
    pub(crate) host: String,
    /// The port.
    pub(crate) port: u16,
    /// Fires when the call has ended: nobody waits for the answer any more.
    pub(crate) cancel: CancellationToken,
}

/// Who answers [`NetworkAsk`]s: the supervisor's ask path, attached once the pipeline exists.
pub(crate) type NetworkAsker =
    Arc<dyn Fn(NetworkAsk) -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync>;

/// One running Bash call, as the proxy knows it.
#[derive(Debug)]
pub(crate) struct CallState {
    tool_use_id: String,
    /// The password of the call's proxy credentials: unguessable, so that another command
    /// (a background task of an earlier call) cannot pose as this call, whose name is not.
    secret: String,
    /// Hosts answered for this call: approved (`true`) or refused.
    answered: Mutex<Vec<(String, bool)>>,
    refusals: Mutex<Vec<String>>,
    ended: CancellationToken,
}

impl CallState {
    /// What the proxy refused this call, one line each.
    pub(crate) fn refusals(&self) -> Vec<String> {
        self.refusals.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn refuse(&self, line: String) {
        if let Ok(mut r) = self.refusals.lock()
            && r.len() < MAX_REFUSALS
            && !r.contains(&line)
        {
            r.push(line);
        }
    }
}

/// The proxy's rules and running calls.
pub(crate) struct Proxy {
    allow: Vec<DomainPattern>,
    deny: Vec<DomainPattern>,
    resolve: Vec<(String, IpAddr)>,
    calls: DashMap<String, Arc<CallState>>,
    seq: AtomicU64,
    asker: OnceLock<NetworkAsker>,
    connections: Arc<Semaphore>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("allow", &self.allow)
            .field("deny", &self.deny)
            .finish_non_exhaustive()
    }
}

/// Why a connection is refused.
#[derive(Debug, PartialEq)]
enum Verdict {
    Allow,
    Refuse(String),
}

impl Proxy {
    /// A proxy allowing `allowed`, refusing `denied` (host patterns as `WebFetch(domain:…)`).
    pub(crate) fn new(allowed: &[String], denied: &[String]) -> Self {
        let compile = |v: &[String]| v.iter().map(|d| DomainPattern::compile(d)).collect();
        Self {
            allow: compile(allowed),
            deny: compile(denied),
            resolve: resolve_overrides(std::env::var(RESOLVE_ENV).unwrap_or_default().as_str()),
            calls: DashMap::new(),
            seq: AtomicU64::new(0),
            asker: OnceLock::new(),
            connections: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
        }
    }

    /// Attaches who answers asks (once; later calls are ignored).
    pub(crate) fn set_asker(&self, asker: NetworkAsker) {
        let _ = self.asker.set(asker);
    }

    /// Registers a running call: its name, its proxy credentials (`name:secret`), and its
    /// state. Without a secret (no random bytes) the call is not registered: its connections
    /// get no asks, as a client without credentials.
    pub(crate) fn register(&self, tool_use_id: &str) -> (String, String, Arc<CallState>) {
        let name = format!("call{}", self.seq.fetch_add(1, Ordering::Relaxed));
        let secret = new_secret();
        let state = Arc::new(CallState {
            tool_use_id: tool_use_id.to_string(),
            secret: secret.clone().unwrap_or_default(),
            answered: Mutex::new(Vec::new()),
            refusals: Mutex::new(Vec::new()),
            ended: CancellationToken::new(),
        });
        let Some(secret) = secret else {
            return (name.clone(), name, state);
        };
        self.calls.insert(name.clone(), state.clone());
        (name.clone(), format!("{name}:{secret}"), state)
    }

    /// The running call whose name and secret `credentials` carry; none for any other.
    fn caller(&self, credentials: Option<&(String, String)>) -> Option<Arc<CallState>> {
        let (user, password) = credentials?;
        let call = self.calls.get(user)?.clone();
        let same = call.secret.len() == password.len()
            && (call.secret.bytes().zip(password.bytes())).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0;
        (same && !call.secret.is_empty()).then_some(call)
    }

    /// Forgets a call: its connections' pending asks are refused.
    pub(crate) fn unregister(&self, name: &str) {
        if let Some((_, state)) = self.calls.remove(name) {
            state.ended.cancel();
        }
    }

    /// Serves connections until the listener fails or the task is aborted.
    pub(crate) async fn serve(self: Arc<Self>, listener: UnixListener) {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let Ok(permit) = self.connections.clone().try_acquire_owned() else {
                continue;
            };
            let proxy = self.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let _ = proxy.handle(stream).await;
            });
        }
    }

    async fn handle(&self, mut client: UnixStream) -> std::io::Result<()> {
        let Ok(head) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await else {
            return reply(&mut client, 408, "the request head did not arrive in time").await;
        };
        let (head, rest) = head?;
        let mut req = match Request::parse(&head) {
            Ok(req) => req,
            Err(why) => return reply(&mut client, 400, &why).await,
        };
        // One spelling per address (`0`, `0x7f.1`, `::ffff:127.0.0.1`), the one rules name.
        if let Some(ip) = literal_ip(&req.host) {
            req.host = ip.to_string();
        }
        let call = self.caller(req.credentials.as_ref());
        if let Verdict::Refuse(why) = self.decide(&req.host, req.port, call.as_deref()).await {
            let line = format!("the network proxy refused {}:{}: {why}", req.host, req.port);
            if let Some(call) = &call {
                call.refuse(line.clone());
            }
            return reply(&mut client, 403, &line).await;
        }
        let mut upstream = match self.connect(&req.host, req.port).await {
            Ok(s) if self.denied_address(&s) => {
                let line = format!(
                    "the network proxy refused {}:{}: its address is in \
                     sandbox.network.deniedDomains",
                    req.host, req.port
                );
                if let Some(call) = &call {
                    call.refuse(line.clone());
                }
                return reply(&mut client, 403, &line).await;
            }
            Ok(s) => s,
            Err(e) => {
                let why = format!("cannot connect to {}:{}: {e}", req.host, req.port);
                return reply(&mut client, 502, &why).await;
            }
        };
        if req.tunnel {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
        } else {
            upstream.write_all(&req.forward).await?;
        }
        upstream.write_all(&rest).await?;
        tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
        Ok(())
    }

    /// Whether `host` may be reached: denied first, then allowed, then asked for the call.
    async fn decide(&self, host: &str, port: u16, call: Option<&CallState>) -> Verdict {
        if self.deny.iter().any(|p| p.matches(host)) {
            return Verdict::Refuse("it is in sandbox.network.deniedDomains".into());
        }
        if self.allow.iter().any(|p| p.matches(host)) {
            return Verdict::Allow;
        }
        let Some(call) = call else {
            return Verdict::Refuse(
                "it is not in sandbox.network.allowedDomains, and the connection names no \
                 running Bash call to ask about"
                    .into(),
            );
        };
        let known = call
            .answered
            .lock()
            .ok()
            .and_then(|a| a.iter().find(|(h, _)| h == host).map(|(_, ok)| *ok));
        let approved = match (known, self.asker.get()) {
            (Some(ok), _) => ok,
            (None, None) => false,
            (None, Some(asker)) => {
                let ask = asker(NetworkAsk {
                    tool_use_id: call.tool_use_id.clone(),
                    host: host.to_string(),
                    port,
                    cancel: call.ended.clone(),
                });
                let ok = tokio::time::timeout(ASK_TIMEOUT, ask)
                    .await
                    .unwrap_or(false);
                if let Ok(mut a) = call.answered.lock()
                    && a.len() < 64
                {
                    a.push((host.to_string(), ok));
                }
                ok
            }
        };
        if approved {
            Verdict::Allow
        } else {
            Verdict::Refuse(
                "it is not in sandbox.network.allowedDomains and Network access to it was not \
                 approved"
                    .into(),
            )
        }
    }

    /// Whether the address a connection reached is denied: by its own spelling, or as
    /// `localhost` when it is a loopback address.
    fn denied_address(&self, stream: &TcpStream) -> bool {
        let Ok(peer) = stream.peer_addr() else {
            return true;
        };
        let ip = unmapped(peer.ip());
        let text = ip.to_string();
        self.deny
            .iter()
            .any(|p| p.matches(&text) || (ip.is_loopback() && p.matches("localhost")))
    }

    async fn connect(&self, host: &str, port: u16) -> std::io::Result<TcpStream> {
        let mapped = self
            .resolve
            .iter()
            .find(|(h, _)| h == host)
            .map(|(_, ip)| *ip);
        let connecting = async {
            match mapped {
                Some(ip) => TcpStream::connect((ip, port)).await,
                None => TcpStream::connect((host, port)).await,
            }
        };
        tokio::time::timeout(CONNECT_TIMEOUT, connecting)
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out"))?
    }
}

/// The address `host` spells, in any form a resolver takes literally: inet_aton's (`127.1`,
/// `0x7f000001`, `017700000001`, `0`), IPv6 (a v4-mapped one unmapped); the unspecified
/// address is the local host it reaches.
fn literal_ip(host: &str) -> Option<IpAddr> {
    let ip = match host.parse::<std::net::Ipv6Addr>() {
        Ok(v6) => unmapped(IpAddr::V6(v6)),
        Err(_) => IpAddr::V4(inet_aton(host)?),
    };
    Some(match ip {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        ip => ip,
    })
}

/// A v4-mapped IPv6 address as its IPv4 address.
fn unmapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        ip => ip,
    }
}

/// inet_aton: one to four parts, each decimal, `0x` hex or `0` octal; the last fills the
/// remaining bytes.
fn inet_aton(text: &str) -> Option<std::net::Ipv4Addr> {
    let parts: Vec<u64> = text
        .split('.')
        .map(|p| {
            let (digits, radix) = match p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
                Some(hex) => (hex, 16),
                None if p.len() > 1 && p.starts_with('0') => (&p[1..], 8),
                None => (p, 10),
            };
            let ok = !digits.is_empty() || radix == 16;
            ok.then(|| u64::from_str_radix(digits, radix).ok())?
        })
        .collect::<Option<_>>()?;
    let (last, head) = parts.split_last()?;
    if head.len() > 3 || head.iter().any(|&p| p > 255) || *last >= 1 << (8 * (4 - head.len())) {
        return None;
    }
    let value = head
        .iter()
        .enumerate()
        .fold(*last, |v, (i, &p)| v | p << (8 * (3 - i)));
    Some(std::net::Ipv4Addr::from(u32::try_from(value).ok()?))
}

/// Starts serving on a Unix socket at `path`.
pub(crate) fn listen(path: &Path) -> std::io::Result<UnixListener> {
    UnixListener::bind(path)
}

/// `host=ip,host=ip`, entries that do not parse skipped.
fn resolve_overrides(text: &str) -> Vec<(String, IpAddr)> {
    text.split(',')
        .filter_map(|pair| {
            let (host, ip) = pair.split_once('=')?;
            Some((clean_host(host)?, ip.trim().parse().ok()?))
        })
        .collect()
}

/// Reads up to the end of the request head; returns the head and what came after it.
async fn read_head(client: &mut UnixStream) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "request head too long",
            ));
        }
    }
}

/// Answers with a status and a one-line reason, and closes.
async fn reply(client: &mut UnixStream, status: u16, why: &str) -> std::io::Result<()> {
    let text = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        408 => "Request Timeout",
        _ => "Bad Gateway",
    };
    let body = format!("{why}\n");
    let msg = format!(
        "HTTP/1.1 {status} {text}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
         Connection: close\r\nX-Toolrt-Sandbox: {status}\r\n\r\n{body}",
        body.len()
    );
    client.write_all(msg.as_bytes()).await?;
    client.shutdown().await
}

/// A request to the proxy.
#[derive(Debug, PartialEq)]
struct Request {
    /// `CONNECT`: a tunnel.
    tunnel: bool,
    host: String,
    port: u16,
    /// The user name and password of `Proxy-Authorization: Basic …`: which call connects.
    credentials: Option<(String, String)>,
    /// For plain HTTP, the head to send on: origin-form request line, no proxy headers, one
    /// request per connection.
    forward: Vec<u8>,
}

impl Request {
    fn parse(head: &[u8]) -> Result<Request, String> {
        let text = std::str::from_utf8(head).map_err(|_| "the request head is not UTF-8")?;
        let mut lines = text.split("\r\n");
        let first = lines.next().unwrap_or_default();
        let mut parts = first.split(' ');
        let (Some(method), Some(target), Some(version), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(format!("not an HTTP request line: {first:?}"));
        };
        let headers: Vec<(&str, &str)> = lines
            .filter(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim(), v.trim()))
            .collect();
        let credentials = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("proxy-authorization"))
            .and_then(|(_, v)| basic_credentials(v));
        if method == "CONNECT" {
            let (host, port) = host_port(target, None)?;
            return Ok(Request {
                tunnel: true,
                host,
                port,
                credentials,
                forward: Vec::new(),
            });
        }
        let Some(rest) = target.strip_prefix("http://") else {
            return Err(format!(
                "only CONNECT and plain http:// requests go through this proxy, got {target:?}"
            ));
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        let (host, port) = host_port(authority, Some(80))?;
        let mut forward = format!("{method} {path} {version}\r\n");
        for (k, v) in &headers {
            let drop = ["proxy-authorization", "proxy-connection", "connection"];
            if !drop.iter().any(|d| k.eq_ignore_ascii_case(d)) {
                forward.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        forward.push_str("Connection: close\r\n\r\n");
        Ok(Request {
            tunnel: false,
            host,
            port,
            credentials,
            forward: forward.into_bytes(),
        })
    }
}

/// `host:port` (`[v6]:port`); `default` when the port may be left out.
fn host_port(text: &str, default: Option<u16>) -> Result<(String, u16), String> {
    let bad = || format!("not a host and port: {text:?}");
    let (host, port) = if let Some(v6) = text.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or_else(bad)?;
        (h, after.strip_prefix(':'))
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (text, None),
        }
    };
    let port = match (port, default) {
        (Some(p), _) => p.parse().map_err(|_| bad())?,
        (None, Some(d)) => d,
        (None, None) => return Err(bad()),
    };
    let host = clean_host(host).ok_or_else(bad)?;
    Ok((host, port))
}

/// Lowercase, no trailing dot; only the characters of a host name or an IP address.
fn clean_host(host: &str) -> Option<String> {
    let host = host.trim().trim_end_matches('.').to_ascii_lowercase();
    let ok = !host.is_empty()
        && host.len() <= 253
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
    ok.then_some(host)
}

/// 128 random bits in hex, from the ring provider rustls already carries; none if the system
/// gives no random bytes.
fn new_secret() -> Option<String> {
    let mut bytes = [0u8; 16];
    let random = rustls::crypto::ring::default_provider().secure_random;
    random.fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The user name and password in `Basic base64(user:password)`.
fn basic_credentials(value: &str) -> Option<(String, String)> {
    use base64::Engine;
    let (scheme, token) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(token.trim())
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (user, password) = text.split_once(':').unwrap_or((&text, ""));
    (!user.is_empty()).then(|| (user.to_string(), password.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_table() {
        let auth = "Proxy-Authorization: Basic Y2FsbDc6\r\n"; // "call7:"
        let connect = format!("CONNECT Example.COM.:443 HTTP/1.1\r\nHost: x\r\n{auth}\r\n");
        let r = Request::parse(connect.as_bytes()).unwrap();
        assert!(r.tunnel);
        assert_eq!((r.host.as_str(), r.port), ("example.com", 443));
        assert_eq!(r.credentials, Some(("call7".into(), "".into())));

        let get = format!(
            "GET http://a.test:8080/x?y HTTP/1.1\r\nHost: a.test:8080\r\n{auth}Proxy-Connection: keep-alive\r\n\r\n"
        );
        let r = Request::parse(get.as_bytes()).unwrap();
        assert!(!r.tunnel);
        assert_eq!((r.host.as_str(), r.port), ("a.test", 8080));
        assert_eq!(
            String::from_utf8(r.forward).unwrap(),
            "GET /x?y HTTP/1.1\r\nHost: a.test:8080\r\nConnection: close\r\n\r\n"
        );
        let r = Request::parse(b"GET http://b.test HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(
            (r.host.as_str(), r.port, r.credentials),
            ("b.test", 80, None)
        );

        for bad in [
            "GET /relative HTTP/1.1\r\n\r\n",
            "GET https://x.test/ HTTP/1.1\r\n\r\n",
            "CONNECT x.test HTTP/1.1\r\n\r\n",
            "CONNECT x.test:99999 HTTP/1.1\r\n\r\n",
            "CONNECT a/b:80 HTTP/1.1\r\n\r\n",
            "nonsense\r\n\r\n",
        ] {
            assert!(Request::parse(bad.as_bytes()).is_err(), "{bad}");
        }
        let v6 = Request::parse(b"CONNECT [::1]:443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 443));
    }

    #[tokio::test]
    async fn decide_table() {
        let proxy = Proxy::new(
            &["*.allowed.test".into(), "exact.test".into()],
            &["bad.allowed.test".into()],
        );
        let allow = |h: &str| {
            let h = h.to_string();
            let p = &proxy;
            async move { p.decide(&h, 443, None).await == Verdict::Allow }
        };
        assert!(allow("a.allowed.test").await);
        assert!(allow("exact.test").await);
        assert!(
            !allow("allowed.test").await,
            "the wildcard does not hold the apex"
        );
        assert!(!allow("bad.allowed.test").await, "denied wins");
        assert!(!allow("other.test").await, "no call to ask for: refused");

        // With a call, an unknown host is asked about once; the answer is kept for the call.
        let asked = Arc::new(AtomicU64::new(0));
        let count = asked.clone();
        proxy.set_asker(Arc::new(move |ask: NetworkAsk| {
            count.fetch_add(1, Ordering::Relaxed);
            Box::pin(async move { ask.host == "yes.test" })
        }));
        let (_, _, call) = proxy.register("toolu_1");
        assert_eq!(
            proxy.decide("yes.test", 80, Some(&call)).await,
            Verdict::Allow
        );
        assert_eq!(
            proxy.decide("yes.test", 80, Some(&call)).await,
            Verdict::Allow
        );
        assert_ne!(
            proxy.decide("no.test", 80, Some(&call)).await,
            Verdict::Allow
        );
        assert_eq!(asked.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn a_call_is_known_by_its_name_and_secret_only() {
        let proxy = Proxy::new(&[], &[]);
        let (name, credentials, _) = proxy.register("toolu_1");
        let (user, secret) = credentials.split_once(':').unwrap();
        assert_eq!(user, name);
        assert!(secret.len() >= 32, "{secret}");
        let (_, other, _) = proxy.register("toolu_2");
        assert_ne!(other.split_once(':').unwrap().1, secret);
        let ask = |u: &str, p: &str| proxy.caller(Some(&(u.to_string(), p.to_string())));
        let known = ask(user, secret).expect("its own credentials name the call");
        assert_eq!(known.tool_use_id, "toolu_1");
        // The sequential name alone, or with a wrong secret, names no call.
        assert!(ask(user, "").is_none());
        assert!(ask(user, &"0".repeat(secret.len())).is_none());
        assert!(ask("call1", "").is_none());
        assert!(proxy.caller(None).is_none());
    }

    #[test]
    fn literal_addresses_have_one_spelling() {
        for (text, want) in [
            ("0", Some("127.0.0.1")),
            ("0.0.0.0", Some("127.0.0.1")),
            ("127.1", Some("127.0.0.1")),
            ("0x7f000001", Some("127.0.0.1")),
            ("017700000001", Some("127.0.0.1")),
            ("0x7f.0.0.1", Some("127.0.0.1")),
            ("::ffff:127.0.0.1", Some("127.0.0.1")),
            ("::", Some("::1")),
            ("::1", Some("::1")),
            ("10.1.2.3", Some("10.1.2.3")),
            ("example.com", None),
            ("256.1.1.1", None),
            ("1.2.3.4.5", None),
            ("08", None),
        ] {
            assert_eq!(
                literal_ip(text).map(|i| i.to_string()).as_deref(),
                want,
                "{text}"
            );
        }
    }

    #[tokio::test]
    async fn a_denied_address_is_refused_however_it_is_reached() {
        let server = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = server.local_addr().unwrap().port();
        let proxy = Proxy::new(&[], &["127.0.0.1".into()]);
        let stream = proxy.connect("localhost", port).await.unwrap();
        assert!(proxy.denied_address(&stream), "a name resolving to it");
        let proxy = Proxy::new(&[], &["localhost".into()]);
        let stream = proxy.connect("127.0.0.1", port).await.unwrap();
        assert!(proxy.denied_address(&stream), "loopback, as localhost");
        let proxy = Proxy::new(&[], &["10.0.0.1".into()]);
        let stream = proxy.connect("127.0.0.1", port).await.unwrap();
        assert!(!proxy.denied_address(&stream));
    }

    #[test]
    fn resolve_overrides_table() {
        let r = resolve_overrides("a.test=127.0.0.1, B.test.=::1,bad,c.test=nope");
        assert_eq!(
            r,
            vec![
                ("a.test".to_string(), "127.0.0.1".parse().unwrap()),
                ("b.test".to_string(), "::1".parse().unwrap()),
            ]
        );
    }
}
