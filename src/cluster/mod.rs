//! Worker nodes: one coordinator decides, many workers execute (ractor_cluster).
//!
//! The coordinator runs the whole pipeline; only a call's execute step may be placed on a
//! worker (`place`, through `execute::Placement`), so validation, hooks and the permission
//! decision stay in one place. `link` dials the workers and keeps their links; `worker` is
//! `toolrt worker`, a node running the execute step of calls of the tools it offers; `wire` is what
//! crosses between them, as ractor_cluster actor messages.
//!
//! The link is authenticated by a shared cookie (ractor_cluster's challenge). With `tls`, the
//! workers prove who they are with certificates and everything on the link is encrypted;
//! without it nothing is, and addresses other than loopback are refused unless the user says
//! the network is trusted (`insecure_network`).

mod fetch;
mod guard;
mod link;
mod place;
mod relay;
mod resolved;
mod sandboxes;
mod tasks;
mod tls;
mod wire;
mod worker;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorRef};

use ractor_cluster::{NodeServer, NodeServerMessage};
use tokio_util::sync::CancellationToken;
use wire::RelayMsg;

pub(crate) use place::Nodes;
pub use tls::{TlsIdentity, TlsTrust};
pub use worker::{WORKER_TOOLS, WorkerOptions, run_worker};

/// How long `serve` waits at start-up for each worker's first answer before it reads input
/// (a worker that is not up by then is dialed again in the background).
const FIRST_DIAL_WAIT: Duration = Duration::from_secs(5);

/// The worker nodes a coordinator (`serve --worker`) uses.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// The file holding the shared cookie.
    pub cookie_file: PathBuf,
    /// The workers' addresses (`host:port`).
    pub workers: Vec<String>,
    /// Allow addresses other than loopback without TLS (the link is then not encrypted).
    pub insecure_network: bool,
    /// Dial the workers over TLS, trusting these CAs.
    pub tls: Option<TlsTrust>,
}

/// A node's change of state, as the `node` event says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeStatus {
    /// First joined.
    Joined,
    /// Its link was lost (closed, or heartbeats unanswered).
    Lost,
    /// Joined again after being lost.
    Rejoined,
}

impl NodeStatus {
    /// The wire word.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Joined => "joined",
            Self::Lost => "lost",
            Self::Rejoined => "rejoined",
        }
    }
}

/// Where node events go: the node's name, its new state and, when it joins a session with a
/// Bash sandbox, the sandbox it set up (the `sandbox` event's fields).
pub(crate) type NodeEvents = Arc<dyn Fn(&str, NodeStatus, Option<serde_json::Value>) + Send + Sync>;

/// A running coordinator side: the placement table and what stops it.
pub(crate) struct Coordinator {
    /// The placement the pipeline asks.
    pub nodes: Arc<Nodes>,
    server: ActorRef<NodeServerMessage>,
    relay: ActorRef<RelayMsg>,
    stop: CancellationToken,
}

impl Coordinator {
    /// Reads the cookie, checks the addresses, starts a node server and dials every worker;
    /// returns once each has joined or failed its first attempt (at most a few seconds). A
    /// worker that refused the cookie is an error; one that cannot be reached yet is dialed
    /// again in the background.
    /// With a Bash `sandbox`, each worker runs this session's commands in one it sets up from
    /// the same settings.
    pub(crate) async fn start(
        config: &ClusterConfig,
        events: NodeEvents,
        sandbox: Option<Arc<crate::sandbox::Sandbox>>,
    ) -> Result<Self, String> {
        let cookie = read_cookie(&config.cookie_file)?;
        let encrypted = config.tls.is_some();
        let addrs = (config.workers.iter())
            .map(|w| resolve(w, config.insecure_network || encrypted))
            .collect::<Result<Vec<_>, _>>()?;
        let tls = match &config.tls {
            Some(trust) => Some(link::Tls {
                connector: trust.connector()?,
                name: trust.server_name()?,
            }),
            None => None,
        };
        let name = format!("toolrt-coordinator-{}-{}", std::process::id(), unique());
        // The node server always listens; the coordinator takes no sessions, so loopback only.
        let server = NodeServer::new(0, cookie, name.clone(), "localhost".into(), None, None)
            .with_listen_addr(std::net::Ipv4Addr::LOCALHOST.into());
        let (server, _) = Actor::spawn(None, server, ())
            .await
            .map_err(|e| format!("cannot start the cluster node server: {e}"))?;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let subscription = Box::new(link::Subscriber(tx.clone()));
        let _ = server.cast(NodeServerMessage::SubscribeToEvents {
            id: "toolrt".into(),
            subscription,
        });
        let names: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
        // The name workers know this node by: ractor_cluster's `name@hostname`.
        let nodes = Arc::new(Nodes::new(format!("{name}@localhost"), &names));
        // Before any link opens: a session shares the process groups that exist when it opens.
        let relay =
            match relay::Relay::start(&nodes.coordinator, nodes.routes.clone(), sandbox.clone())
                .await
            {
                Ok(relay) => relay,
                Err(e) => {
                    server.stop(None);
                    return Err(e);
                }
            };
        let (links, mut first) = link::Links::new(
            server.clone(),
            nodes.clone(),
            events,
            tx,
            &addrs,
            tls,
            sandbox,
        );
        let stop = CancellationToken::new();
        tokio::spawn(links.run(rx, stop.clone()));
        let settled = first.wait_for(|all| all.iter().all(|f| *f != link::First::Pending));
        let _ = tokio::time::timeout(FIRST_DIAL_WAIT, settled).await;
        let outcomes = first.borrow().clone();
        let coordinator = Self {
            nodes,
            server,
            relay,
            stop,
        };
        for outcome in outcomes {
            match outcome {
                link::First::Refused(why) => {
                    coordinator.stop();
                    return Err(format!("worker node refused: {why}"));
                }
                link::First::Unreachable(why) => {
                    tracing::warn!(%why, "worker node not reachable yet; dialing it again in the background");
                }
                link::First::Pending | link::First::Joined => {}
            }
        }
        Ok(coordinator)
    }

    /// Ends every link: calls still running on a worker end `failed`.
    pub(crate) fn stop(&self) {
        self.stop.cancel();
        self.server.stop(None);
        self.relay.stop(None);
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The cookie in `path`, without its trailing newline; an empty one is refused.
fn read_cookie(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the cookie file {}: {e}", path.display()))?;
    let cookie = text.trim_end_matches(['\n', '\r']).to_string();
    if cookie.trim().is_empty() {
        return Err(format!("the cookie file {} is empty", path.display()));
    }
    Ok(cookie)
}

/// `addr` as a socket address; one that is not loopback only with `insecure`.
fn resolve(addr: &str, insecure: bool) -> Result<SocketAddr, String> {
    let resolved = addr
        .to_socket_addrs()
        .map_err(|e| format!("worker address {addr:?}: {e}"))?
        .next()
        .ok_or_else(|| format!("worker address {addr:?} resolves to nothing"))?;
    check_network(resolved, insecure, "worker address")?;
    Ok(resolved)
}

/// Refuses an address other than loopback unless `insecure`: the link is not encrypted.
fn check_network(addr: SocketAddr, insecure: bool, what: &str) -> Result<(), String> {
    if addr.ip().is_loopback() || insecure {
        Ok(())
    } else {
        Err(format!(
            "{what} {addr} is not a loopback address: the link between toolrt nodes is \
             authenticated by the cookie but not encrypted; pass --insecure-network to use it on \
             a network you trust"
        ))
    }
}

/// A number that differs between runs and between calls.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as u64);
    nanos ^ (NEXT.fetch_add(1, Ordering::Relaxed) << 32)
}

/// Reads a `--workers` file: one address per line, `#` comments, blank lines skipped.
pub fn read_workers_file(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the workers file {}: {e}", path.display()))?;
    Ok(workers_of(&text))
}

fn workers_of(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_files_skip_comments_and_blank_lines() {
        let text = "# nodes\n127.0.0.1:7001\n\n  127.0.0.1:7002  # second\n#127.0.0.1:7003\n";
        assert_eq!(workers_of(text), ["127.0.0.1:7001", "127.0.0.1:7002"]);
    }

    #[test]
    fn only_loopback_unless_insecure() {
        let cases = [
            ("127.0.0.1:1", false, true),
            ("[::1]:1", false, true),
            ("10.0.0.5:1", false, false),
            ("10.0.0.5:1", true, true),
        ];
        for (addr, insecure, ok) in cases {
            let addr: SocketAddr = addr.parse().unwrap();
            let got = check_network(addr, insecure, "worker address");
            assert_eq!(got.is_ok(), ok, "{addr} {insecure}: {got:?}");
            if let Err(e) = got {
                assert!(e.contains("--insecure-network"), "{e}");
            }
        }
    }

    #[test]
    fn an_empty_or_missing_cookie_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "\n").unwrap();
        assert!(read_cookie(&empty).unwrap_err().contains("is empty"));
        assert!(
            read_cookie(&dir.path().join("none"))
                .unwrap_err()
                .contains("cannot read")
        );
        let good = dir.path().join("good");
        std::fs::write(&good, "s3cret\n").unwrap();
        assert_eq!(read_cookie(&good).unwrap(), "s3cret");
    }
}
