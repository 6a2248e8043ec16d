//! The coordinator's links to its worker nodes: dialing with ractor_cluster, the hello, the
//! heartbeat, and re-dialing a lost worker with backoff.
//!
//! One task (`run`) owns every link's state; ractor_cluster's node server tells it of sessions
//! opening, authenticating, becoming ready and closing (through [`Subscriber`]), and helper
//! tasks tell it of hellos and failed heartbeats. It alone writes the placement table.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ractor::ActorRef;
use ractor::rpc::CallResult;
use ractor_cluster::node::NodeServerSessionInformation;
use ractor_cluster::{NodeEventSubscription, NodeServerMessage, NodeSessionMessage};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::place::{Live, Nodes};
use super::wire::{HelloReply, HelloReq, WORKER_GROUP, Wire, WorkerMsg};
use super::{NodeEvents, NodeStatus};

/// How often a live link is probed, and how long an answer may take: a link that closes is
/// noticed at once (ractor_cluster sees the connection end); one that goes silent is declared
/// lost within `HEARTBEAT_EVERY + HEARTBEAT_WAIT`.
pub(crate) const HEARTBEAT_EVERY: Duration = Duration::from_millis(1000);
pub(crate) const HEARTBEAT_WAIT: Duration = Duration::from_millis(2000);
/// How long the hello after a session is ready may take: with a sandbox, the worker sets one
/// up and probes it first (each step bounded at 10 s there).
const HELLO_WAIT: Duration = Duration::from_secs(30);
/// How long one dial may take (the TCP connection, and the TLS handshake with TLS): a peer that
/// accepts and then says nothing must not hold up that worker's re-dials.
const DIAL_WAIT: Duration = Duration::from_secs(5);
/// Re-dial backoff: doubling from the first, capped.
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// What the link task hears.
pub(super) enum Event {
    /// Dial worker `i` (at start, and after a backoff).
    Dial(usize),
    /// Dialing worker `i` failed (its dial runs on a task of its own).
    DialFailed(usize, First),
    /// A session opened (ours when `is_server` is false).
    Opened(NodeServerSessionInformation),
    /// A session passed the cookie handshake.
    Authenticated(NodeServerSessionInformation),
    /// A session finished its initial exchange: the peer's actors are known here.
    Ready(NodeServerSessionInformation),
    /// A session closed.
    Closed(NodeServerSessionInformation),
    /// Worker `i`'s hello over session `node_id` came back.
    Hello(
        usize,
        u64,
        Result<(ActorRef<WorkerMsg>, HelloReply), String>,
    ),
    /// Worker `i`'s heartbeat over session `node_id` failed.
    Silent(usize, u64),
}

/// Passes ractor_cluster's node events to the link task (its callbacks must not block).
pub(super) struct Subscriber(pub mpsc::UnboundedSender<Event>);

impl NodeEventSubscription for Subscriber {
    fn node_session_opened(&self, ses: NodeServerSessionInformation) {
        let _ = self.0.send(Event::Opened(ses));
    }
    fn node_session_disconnected(&self, ses: NodeServerSessionInformation) {
        let _ = self.0.send(Event::Closed(ses));
    }
    fn node_session_authenticated(&self, ses: NodeServerSessionInformation) {
        let _ = self.0.send(Event::Authenticated(ses));
    }
    fn node_session_ready(&self, ses: NodeServerSessionInformation) {
        let _ = self.0.send(Event::Ready(ses));
    }
}

/// How a worker's first dial ended, for start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum First {
    /// Not yet.
    Pending,
    /// It joined.
    Joined,
    /// It could not be reached (it may come later; it is re-dialed).
    Unreachable(String),
    /// It closed the connection during the handshake: the cookie does not match, or it is
    /// not a toolrt worker.
    Refused(String),
}

/// How the coordinator dials over TLS: one connector, and the name every worker's
/// certificate must hold (None: the address it is dialed at).
pub(super) struct Tls {
    pub(super) connector: tokio_rustls::TlsConnector,
    pub(super) name: Option<rustls::pki_types::ServerName<'static>>,
}

/// One worker's link state.
struct Link {
    addr: SocketAddr,
    /// The session of the current attempt, once opened.
    session: Option<(u64, ActorRef<NodeSessionMessage>)>,
    authenticated: bool,
    /// Whether it has ever joined (its next join is a rejoin).
    joined_before: bool,
    /// Failed attempts since it was last up.
    attempts: u32,
}

/// The link task's state.
pub(super) struct Links {
    pub(super) server: ActorRef<NodeServerMessage>,
    pub(super) nodes: Arc<Nodes>,
    pub(super) events: NodeEvents,
    pub(super) tx: mpsc::UnboundedSender<Event>,
    pub(super) first: watch::Sender<Vec<First>>,
    links: Vec<Link>,
    tls: Option<Tls>,
    /// The session's Bash sandbox: each worker sets one up from its settings.
    sandbox: Option<Arc<crate::sandbox::Sandbox>>,
}

impl Links {
    pub(super) fn new(
        server: ActorRef<NodeServerMessage>,
        nodes: Arc<Nodes>,
        events: NodeEvents,
        tx: mpsc::UnboundedSender<Event>,
        addrs: &[SocketAddr],
        tls: Option<Tls>,
        sandbox: Option<Arc<crate::sandbox::Sandbox>>,
    ) -> (Self, watch::Receiver<Vec<First>>) {
        let (first, first_rx) = watch::channel(vec![First::Pending; addrs.len()]);
        let links = addrs
            .iter()
            .map(|&addr| Link {
                addr,
                session: None,
                authenticated: false,
                joined_before: false,
                attempts: 0,
            })
            .collect();
        let links = Self {
            server,
            nodes,
            events,
            tx,
            first,
            links,
            tls,
            sandbox,
        };
        (links, first_rx)
    }

    /// Handles events until the coordinator stops (`stop` cancelled).
    pub(super) async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<Event>,
        stop: CancellationToken,
    ) {
        for i in 0..self.links.len() {
            let _ = self.tx.send(Event::Dial(i));
        }
        loop {
            let event = tokio::select! {
                _ = stop.cancelled() => break,
                event = rx.recv() => match event { Some(e) => e, None => break },
            };
            self.handle(event).await;
        }
        // Whatever still runs remotely ends `failed` now rather than waiting for a link.
        for node in self.nodes.lock().iter_mut() {
            if let Some(live) = node.live.take() {
                live.lost.cancel();
            }
        }
    }

    async fn handle(&mut self, event: Event) {
        match event {
            Event::Dial(i) => self.dial(i),
            Event::DialFailed(i, outcome) => {
                if let First::Refused(why) = &outcome {
                    tracing::warn!("{why}");
                }
                self.set_first(i, outcome);
                self.retry(i);
            }
            Event::Opened(ses) if !ses.is_server => {
                if let Some(i) = self.by_addr(&ses.peer_addr) {
                    self.links[i].session = Some((ses.node_id, ses.actor.clone()));
                    self.links[i].authenticated = false;
                }
            }
            Event::Opened(ses) => {
                // Workers never dial a coordinator: nothing else may use this link.
                tracing::warn!(peer = %ses.peer_addr, "closing a connection a peer opened to the coordinator");
                ses.actor
                    .stop(Some("the coordinator takes no incoming sessions".into()));
            }
            Event::Authenticated(ses) => {
                if let Some(i) = self.by_session(ses.node_id) {
                    self.links[i].authenticated = true;
                }
            }
            Event::Ready(ses) => {
                if let Some(i) = self.by_session(ses.node_id) {
                    self.hello(i, ses.node_id);
                }
            }
            Event::Hello(i, node_id, result) => self.hello_done(i, node_id, result),
            Event::Silent(i, node_id) => {
                if let Some((id, session)) = &self.links[i].session
                    && *id == node_id
                {
                    tracing::warn!(node = %self.links[i].addr, "worker node stopped answering heartbeats");
                    session.stop(Some("heartbeat timed out".into()));
                }
            }
            Event::Closed(ses) => {
                if let Some(i) = self.by_session(ses.node_id) {
                    self.closed(i);
                }
            }
        }
    }

    fn by_addr(&self, peer: &str) -> Option<usize> {
        self.links.iter().position(|l| l.addr.to_string() == peer)
    }

    fn by_session(&self, node_id: u64) -> Option<usize> {
        (self.links.iter()).position(|l| l.session.as_ref().is_some_and(|(id, _)| *id == node_id))
    }

    /// Dials worker `i` on a task of its own, so that a worker that is slow to answer holds
    /// up nothing else the links do; a failure comes back as [`Event::DialFailed`]. A success
    /// is heard from the node server (`Opened`, then the handshake's events). One dial of a
    /// worker at a time: the next is sent only after this one failed or its session closed.
    fn dial(&self, i: usize) {
        let addr = self.links[i].addr;
        let server = self.server.clone();
        let tls = (self.tls.as_ref()).map(|t| {
            (
                t.connector.clone(),
                super::tls::name_for(t.name.as_ref(), addr),
            )
        });
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let dialed = tokio::time::timeout(DIAL_WAIT, async {
                match tls {
                    None => ractor_cluster::client_connect(&server, addr).await,
                    Some((connector, name)) => {
                        ractor_cluster::client_connect_enc(&server, addr, connector, name).await
                    }
                }
            })
            .await;
            let failed = match dialed {
                Ok(Ok(())) => None,
                // The worker's certificate was refused (or it does not speak TLS): a setting to
                // mend, as a wrong cookie is.
                Ok(Err(ractor_cluster::ClientConnectErr::Encryption(e))) => {
                    Some(First::Refused(format!(
                        "{addr}: the TLS handshake failed: {e} (is the worker started with \
                         --tls-cert, by a certificate the --tls-ca file signed, for this \
                         address or --tls-server-name?)"
                    )))
                }
                Ok(Err(ractor_cluster::ClientConnectErr::Socket(e))) => {
                    Some(First::Unreachable(format!("{addr}: {e}")))
                }
                Ok(Err(other)) => Some(First::Unreachable(format!("{addr}: {other}"))),
                Err(_) => Some(First::Unreachable(format!(
                    "{addr}: no answer within {} s",
                    DIAL_WAIT.as_secs()
                ))),
            };
            if let Some(outcome) = failed {
                let _ = tx.send(Event::DialFailed(i, outcome));
            }
        });
    }

    /// Asks the worker behind session `node_id` who it is, on a task of its own.
    fn hello(&mut self, i: usize, node_id: u64) {
        let worker = ractor::pg::get_members(&WORKER_GROUP.to_string())
            .into_iter()
            .find(|cell| match cell.get_id() {
                ractor::ActorId::Remote { node_id: n, .. } => n == node_id,
                ractor::ActorId::Local(_) => false,
            })
            .map(ActorRef::<WorkerMsg>::from);
        let tx = self.tx.clone();
        let coordinator = self.nodes.coordinator.clone();
        let sandbox = self.sandbox.as_ref().map(|s| s.for_workers());
        tokio::spawn(async move {
            let result = match worker {
                None => {
                    Err("the peer has no toolrt worker actor: it is not a toolrt worker".into())
                }
                Some(worker) => {
                    let req = HelloReq {
                        coordinator,
                        sandbox,
                    };
                    let reply = worker
                        .call(
                            |port| WorkerMsg::Hello(Wire::of(req), port),
                            Some(HELLO_WAIT),
                        )
                        .await;
                    match reply {
                        Ok(CallResult::Success(Wire(Ok(hello)))) => Ok((worker, hello)),
                        Ok(CallResult::Success(Wire(Err(e)))) => Err(e),
                        Ok(CallResult::Timeout) => Err("its hello timed out".into()),
                        Ok(CallResult::SenderError) | Err(_) => {
                            Err("it closed the link during the hello".into())
                        }
                    }
                }
            };
            let _ = tx.send(Event::Hello(i, node_id, result));
        });
    }

    fn hello_done(
        &mut self,
        i: usize,
        node_id: u64,
        result: Result<(ActorRef<WorkerMsg>, HelloReply), String>,
    ) {
        let current = self.links[i]
            .session
            .as_ref()
            .is_some_and(|(id, _)| *id == node_id);
        if !current {
            return;
        }
        let (actor, hello) = match result {
            Ok(ok) => ok,
            Err(why) => {
                tracing::warn!(node = %self.links[i].addr, %why, "worker node did not join");
                self.set_first(i, First::Refused(format!("{}: {why}", self.links[i].addr)));
                if let Some((_, session)) = &self.links[i].session {
                    session.stop(Some(why));
                }
                return;
            }
        };
        let lost = CancellationToken::new();
        let name: Arc<str> = Arc::from(hello.name.as_str());
        {
            let mut table = self.nodes.lock();
            let node = &mut table[i];
            node.name = name.clone();
            node.tools = hello.tools;
            node.live = Some(Live {
                actor: actor.clone(),
                lost: lost.clone(),
                root: Arc::from(hello.root.as_path()),
                home: Arc::from(hello.home.as_path()),
                resolved: hello.checks_expect.then(Arc::default),
                sandbox: (self.sandbox.as_ref()).map(|s| s.on_node(&name, hello.sandbox.clone())),
            });
        }
        let link = &mut self.links[i];
        let status = if link.joined_before {
            NodeStatus::Rejoined
        } else {
            NodeStatus::Joined
        };
        link.joined_before = true;
        link.attempts = 0;
        tracing::info!(node = %name, addr = %link.addr, "worker node joined");
        self.set_first(i, First::Joined);
        let sandbox = (self.sandbox.as_ref()).map(|s| s.node_event(hello.sandbox.as_ref()));
        (self.events)(&name, status, sandbox);
        heartbeat(actor, lost, self.tx.clone(), i, node_id);
    }

    /// The current session of worker `i` closed: lost if it was up, refused if it closed
    /// during the handshake; either way dialed again after a backoff.
    fn closed(&mut self, i: usize) {
        let link = &mut self.links[i];
        let authenticated = link.authenticated;
        link.session = None;
        link.authenticated = false;
        let was_live = {
            let mut table = self.nodes.lock();
            let live = table[i].live.take();
            live.map(|live| {
                live.lost.cancel();
                table[i].name.clone()
            })
        };
        if let Some(name) = was_live {
            tracing::warn!(node = %name, "worker node lost");
            (self.events)(&name, NodeStatus::Lost, None);
        } else if !authenticated {
            // Over TLS a worker that asks for a client certificate closes the link the same
            // way when it gets none or one it does not accept; its alert is not passed on.
            let why = if self.tls.is_some() {
                format!(
                    "{} closed the connection during the handshake: the cookie does not match, \
                     or the worker asks for a client certificate (toolrt worker \
                     --tls-client-ca) and this coordinator showed none or one that CA did not \
                     sign (serve --tls-cert, --tls-key), or it is not a toolrt worker",
                    self.links[i].addr
                )
            } else {
                format!(
                    "{} closed the connection during the handshake: the cookie does not match \
                     (or it is not a toolrt worker, or it expects TLS: serve --tls-ca)",
                    self.links[i].addr
                )
            };
            tracing::warn!("{why}");
            self.set_first(i, First::Refused(why));
        }
        self.retry(i);
    }

    /// Dials worker `i` again after its backoff.
    fn retry(&mut self, i: usize) {
        let link = &mut self.links[i];
        let wait = backoff(link.attempts);
        link.attempts = link.attempts.saturating_add(1);
        let tx = self.tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let _ = tx.send(Event::Dial(i));
        });
    }

    fn set_first(&self, i: usize, outcome: First) {
        self.first.send_modify(|all| {
            if all[i] == First::Pending {
                all[i] = outcome;
            }
        });
    }
}

/// The wait before re-dial number `attempts` (0-based): doubling from 100 ms, at most 5 s.
pub(crate) fn backoff(attempts: u32) -> Duration {
    BACKOFF_FIRST
        .saturating_mul(1u32 << attempts.min(16))
        .min(BACKOFF_MAX)
}

/// Probes a live link until it is lost; a probe unanswered in time reports the link silent.
fn heartbeat(
    actor: ActorRef<WorkerMsg>,
    lost: CancellationToken,
    tx: mpsc::UnboundedSender<Event>,
    i: usize,
    node_id: u64,
) {
    tokio::spawn(async move {
        let mut n: u64 = 0;
        loop {
            tokio::select! {
                _ = lost.cancelled() => return,
                _ = tokio::time::sleep(HEARTBEAT_EVERY) => {}
            }
            n += 1;
            let probe = actor.call(|port| WorkerMsg::Ping(n, port), Some(HEARTBEAT_WAIT));
            let answered = tokio::select! {
                _ = lost.cancelled() => return,
                reply = probe => matches!(reply, Ok(CallResult::Success(m)) if m == n),
            };
            if !answered {
                let _ = tx.send(Event::Silent(i, node_id));
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_100ms_up_to_5s() {
        let cases = [
            (0, 100),
            (1, 200),
            (2, 400),
            (5, 3200),
            (6, 5000),
            (40, 5000),
        ];
        for (attempts, ms) in cases {
            assert_eq!(backoff(attempts), Duration::from_millis(ms), "{attempts}");
        }
    }
}
