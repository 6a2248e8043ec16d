//! `toolrt worker`: a node that runs calls' execute steps for a coordinator.
//!
//! Its one remote actor ([`WorkerActor`], in the `toolrt.worker` process group) answers
//! hellos and heartbeats, and runs each call's tool on a task of its own (a panic caught, as
//! the coordinator's execute stage does): the same tools, the same output capture and process
//! groups.
//! Each call is known by its coordinator's name and its id, so a cancel reaches it; when a
//! coordinator's link closes, its calls are cancelled after a grace period (their results
//! could no longer be delivered), which kills their process groups.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use ractor_cluster::node::NodeServerSessionInformation;
use ractor_cluster::{NodeEventSubscription, NodeServer, NodeServerMessage};
use tokio_util::sync::CancellationToken;

use super::sandboxes::Sandboxed;
use super::tasks::{WorkerTasks, is_task_call, starts_a_task};
use super::wire::{
    CHUNK_BYTES, Chunk, FetchReq, HelloReply, HelloReq, KeptOutput, ProgressNote, RelayMsg,
    ResolveReply, RunReply, RunReq, WORKER_GROUP, Wire, WorkerMsg, progress_group,
};
use crate::session::Session;
use crate::tool::{
    ProgressSink, ProgressTarget, StateKey, Tool, ToolContext, ToolOutput, ToolStatus,
};

/// The tools a worker offers unless told otherwise: every built-in tool. Their work is all on
/// the worker's own files, processes and network (Glob and Grep leave out what the
/// coordinator's Read deny rules cover, sent with each call; WebFetch follows no redirect
/// there, since the rules that judge a hop are the coordinator's; TaskOutput and TaskStop act
/// on each coordinator's own background tasks).
pub const WORKER_TOOLS: &[&str] = crate::tools::DEFAULT_TOOLS;

/// How `toolrt worker` runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Where it listens for coordinators.
    pub listen: SocketAddr,
    /// The file holding the shared cookie.
    pub cookie_file: PathBuf,
    /// Its working directory (the workspace its calls act on).
    pub cwd: PathBuf,
    /// Its name in results and events (default: the listen address).
    pub name: Option<String>,
    /// The tools it offers (default [`WORKER_TOOLS`]); `Noop` may be added for benchmarks.
    pub tools: Option<Vec<String>>,
    /// Allow listening on an address other than loopback without TLS.
    pub insecure_network: bool,
    /// Its certificate and key: coordinators then reach it over TLS only.
    pub tls: Option<super::TlsIdentity>,
    /// With `tls`: coordinators must present a certificate this CA file (PEM) signed.
    pub tls_client_ca: Option<PathBuf>,
    /// How long calls of a coordinator whose link closed keep running before they are killed.
    pub orphan_grace: Duration,
}

/// The calls running on this worker, by coordinator and id.
type Running = Arc<Mutex<HashMap<(String, String), CancellationToken>>>;

/// How long a kept output waits for its coordinator at most: one whose reply reached no one
/// (the coordinator gave up on the call first) is deleted then, even while the link stays up.
const KEPT_FOR: Duration = Duration::from_secs(3600);

/// Complete outputs kept in files until their coordinator has fetched them, by coordinator
/// and handle. A file goes when its last chunk is sent, when the coordinator lets it go, when
/// the coordinator's link has been closed for the grace period, or after [`KEPT_FOR`].
#[derive(Default)]
struct KeptFiles {
    next: AtomicU64,
    files: Mutex<HashMap<(String, u64), PathBuf>>,
}

impl KeptFiles {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<(String, u64), PathBuf>> {
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `path` for `coordinator` (for [`KEPT_FOR`] at most); its handle.
    fn keep(self: &Arc<Self>, coordinator: &str, path: PathBuf) -> u64 {
        let handle = self.next.fetch_add(1, Ordering::Relaxed);
        self.table().insert((coordinator.to_string(), handle), path);
        let (kept, coordinator) = (Arc::downgrade(self), coordinator.to_string());
        tokio::spawn(async move {
            tokio::time::sleep(KEPT_FOR).await;
            if let Some(kept) = kept.upgrade() {
                kept.release(&coordinator, handle);
            }
        });
        handle
    }

    fn path(&self, coordinator: &str, handle: u64) -> Option<PathBuf> {
        self.table()
            .get(&(coordinator.to_string(), handle))
            .cloned()
    }

    /// Forgets the kept files `which` picks and deletes them (on the blocking pool).
    fn release_where(&self, which: impl Fn(&(String, u64)) -> bool) {
        let mut gone = Vec::new();
        self.table().retain(|key, path| {
            let release = which(key);
            if release {
                gone.push(std::mem::take(path));
            }
            !release
        });
        if !gone.is_empty() {
            tokio::task::spawn_blocking(move || {
                for path in gone {
                    let _ = std::fs::remove_file(path);
                }
            });
        }
    }

    fn release(&self, coordinator: &str, handle: u64) {
        self.release_where(|key| key.0 == coordinator && key.1 == handle);
    }
}

/// Up to [`CHUNK_BYTES`] of the file at `path` from `offset` (none at its end).
fn read_chunk(path: &std::path::Path, offset: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    // One byte more than a chunk: room for the kind byte `Chunk` adds, without moving them.
    let mut bytes = Vec::with_capacity(CHUNK_BYTES + 1);
    file.take(CHUNK_BYTES as u64).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Runs a worker until `stop` is cancelled. It prints `toolrt worker <name> listening on
/// <addr>` on stdout once coordinators can connect.
pub async fn run_worker(options: WorkerOptions, stop: CancellationToken) -> Result<(), String> {
    let encrypted = options.tls.is_some();
    super::check_network(
        options.listen,
        options.insecure_network || encrypted,
        "listen address",
    )?;
    let tls = match &options.tls {
        Some(identity) => Some(ractor_cluster::IncomingEncryptionMode::Tls(
            identity.acceptor(options.tls_client_ca.as_deref())?,
        )),
        None => None,
    };
    let cookie = super::read_cookie(&options.cookie_file)?;
    let name = (options.name.clone()).unwrap_or_else(|| options.listen.to_string());
    let tools = offered_tools(options.tools.as_deref())?;
    let cwd = std::fs::canonicalize(&options.cwd)
        .map_err(|e| format!("--cwd {}: {e}", options.cwd.display()))?;
    let outputs = std::env::temp_dir().join(format!("toolrt-worker-{}", std::process::id()));
    // Folders of workers killed outright (a worker started later deletes them).
    crate::paths::sweep_dead_owners(&std::env::temp_dir(), "toolrt-worker-");
    // No rules live here: nothing is Read-denied until a coordinator sends its patterns, and
    // no fetch is allowed beyond what a call's decision covered (a redirect is not followed).
    let session = Arc::new(Session {
        guard: Arc::new(super::guard::ReadDenies::new(&[])?),
        shell: crate::process::find_program("bash", &[], &[]),
        ..Session::new(cwd, outputs.clone())
    });
    let running: Running = Arc::default();
    let kept: Arc<KeptFiles> = Arc::default();
    let tasks = Arc::new(WorkerTasks::new(&name));
    let sandboxed: Arc<Sandboxed> = Arc::default();
    let worker = WorkerActor {
        sandboxed: sandboxed.clone(),
        name: name.clone(),
        tools,
        session,
        running: running.clone(),
        kept: kept.clone(),
        tasks: tasks.clone(),
    };
    let (actor, _) = Actor::spawn(None, worker, ())
        .await
        .map_err(|e| format!("cannot start the worker actor: {e}"))?;
    let server = NodeServer::new(
        options.listen.port(),
        cookie,
        name.clone(),
        "localhost".into(),
        tls,
        None,
    )
    .with_listen_addr(options.listen.ip());
    let (server, _) = Actor::spawn(None, server, ())
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", options.listen))?;
    let events = Box::new(Coordinators {
        running: running.clone(),
        kept,
        tasks,
        sandboxed,
        grace: options.orphan_grace,
        authenticated: Arc::default(),
    });
    let _ = server.cast(NodeServerMessage::SubscribeToEvents {
        id: "toolrt".into(),
        subscription: events,
    });
    let over = if encrypted { " (TLS)" } else { "" };
    println!("toolrt worker {name} listening on {}{over}", options.listen);
    stop.cancelled().await;
    cancel_where(&running, |_| true);
    server.stop(None);
    actor.stop(None);
    // Outputs no coordinator fetched: nobody can any more.
    let _ = std::fs::remove_dir_all(&outputs);
    Ok(())
}

/// The tools of `wanted` (default [`WORKER_TOOLS`]), each one a worker can offer.
fn offered_tools(wanted: Option<&[String]>) -> Result<HashMap<String, Arc<dyn Tool>>, String> {
    let state =
        crate::tools::ToolState::new(true, std::env::temp_dir().join("toolrt-worker-checkpoints"));
    let mut all: HashMap<String, Arc<dyn Tool>> = (state.tools().into_iter())
        .map(|t| (t.name().to_string(), t))
        .collect();
    all.insert("Noop".into(), Arc::new(crate::tools::noop::Noop::new()));
    let default: Vec<String> = WORKER_TOOLS.iter().map(|t| t.to_string()).collect();
    let mut offered = HashMap::new();
    for name in wanted.unwrap_or(&default) {
        let offerable = WORKER_TOOLS.contains(&name.as_str()) || name == "Noop";
        match all.remove(name) {
            Some(tool) if offerable => {
                offered.insert(name.clone(), tool);
            }
            _ => {
                return Err(format!(
                    "a worker cannot offer {name:?}: it offers {} (and Noop, for benchmarks)",
                    WORKER_TOOLS.join(", ")
                ));
            }
        }
    }
    Ok(offered)
}

/// The reply for a call's output: its background task when it started one, the hooks'
/// `response` only when asked for, and its complete output kept for `coordinator` to fetch
/// when the tool kept one in a file.
async fn reply_of(
    mut out: ToolOutput,
    starts_task: bool,
    hook_response: bool,
    kept: &Arc<KeptFiles>,
    coordinator: &str,
) -> RunReply {
    let full = out.full_output.take();
    let task = (starts_task && out.status == ToolStatus::Success)
        .then(|| out.response.as_ref()?.get("backgroundTaskId")?.as_str())
        .flatten()
        .map(str::to_string);
    if !hook_response {
        out.response = None;
    }
    let mut answer = RunReply::from_output(out);
    answer.task = task;
    if let Some(full) = full {
        match tokio::fs::metadata(&full.path).await {
            Ok(meta) => {
                answer.full = Some(KeptOutput {
                    handle: kept.keep(coordinator, full.path.clone()),
                    path: full.path,
                    bytes: meta.len(),
                    chars: full.chars,
                    lines: full.lines,
                });
            }
            Err(e) => answer.content.push_str(&format!(
                "\n\n(the complete output's file {} on the worker node could not be read: {e})",
                full.path.display()
            )),
        }
    }
    answer
}

/// Cancels the running calls whose key `which` picks.
fn cancel_where(running: &Running, which: impl Fn(&(String, String)) -> bool) {
    let table = running.lock().unwrap_or_else(|e| e.into_inner());
    for (key, token) in table.iter() {
        if which(key) {
            token.cancel();
        }
    }
}

/// The first expected path that no longer resolves as the decision saw it (symlinks are
/// resolved again here, just before the call runs); a relative one never does.
fn changed_resolution(expect: &[(PathBuf, Vec<PathBuf>)]) -> Option<PathBuf> {
    expect
        .iter()
        .find(|(path, paths)| !path.is_absolute() || crate::paths::candidates(path) != *paths)
        .map(|(path, _)| path.clone())
}

/// The worker's remote actor.
struct WorkerActor {
    name: String,
    tools: HashMap<String, Arc<dyn Tool>>,
    session: Arc<Session>,
    running: Running,
    kept: Arc<KeptFiles>,
    /// Each coordinator's background tasks.
    tasks: Arc<WorkerTasks>,
    /// The sandboxes set up for coordinators that have one.
    sandboxed: Arc<Sandboxed>,
}

/// The sessions a worker made for coordinators' Read deny patterns, by coordinator: a
/// coordinator sends the same patterns with each search, and building their matcher costs more
/// than the search of a small folder.
#[derive(Default)]
struct DenySessions(HashMap<String, (Vec<String>, Arc<Session>)>);

/// More coordinators than this with deny rules at once and the sessions are made afresh.
const DENY_SESSIONS_KEPT: usize = 64;

impl Actor for WorkerActor {
    type Msg = WorkerMsg;
    type State = DenySessions;
    type Arguments = ();

    async fn pre_start(
        &self,
        myself: ActorRef<WorkerMsg>,
        _: (),
    ) -> Result<DenySessions, ActorProcessingErr> {
        ractor::pg::join(WORKER_GROUP.to_string(), vec![myself.get_cell()]);
        Ok(DenySessions::default())
    }

    async fn handle(
        &self,
        _myself: ActorRef<WorkerMsg>,
        message: WorkerMsg,
        denies: &mut DenySessions,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            WorkerMsg::Hello(Wire(req), reply) => self.hello(req, reply),
            WorkerMsg::Resolve(Wire(req), reply) => {
                let paths = req.and_then(|req| {
                    if req.path.is_absolute() {
                        Ok(crate::paths::candidates(&req.path))
                    } else {
                        Err(format!("{} is not an absolute path", req.path.display()))
                    }
                });
                let _ = reply.send(Wire(paths.map(|paths| ResolveReply { paths })));
            }
            WorkerMsg::Run(Wire(req), reply) => self.run(req, reply, denies),
            WorkerMsg::Cancel(Wire(Ok(req))) => {
                cancel_where(&self.running, |key| {
                    key.0 == req.coordinator && key.1 == req.id
                });
            }
            WorkerMsg::Cancel(Wire(Err(e))) => tracing::warn!(%e, "unreadable cancel"),
            WorkerMsg::Fetch(Wire(req), reply) => self.fetch(req, reply),
            WorkerMsg::Release(Wire(Ok(req))) => self.kept.release(&req.coordinator, req.handle),
            WorkerMsg::Release(Wire(Err(e))) => tracing::warn!(%e, "unreadable release"),
            WorkerMsg::Ping(n, reply) => {
                let _ = reply.send(n);
            }
        }
        Ok(())
    }
}

impl WorkerActor {
    /// Answers a coordinator's hello, on a task of its own: setting a sandbox up may take a
    /// while.
    fn hello(&self, req: Result<HelloReq, String>, reply: RpcReplyPort<Wire<HelloReply>>) {
        let mut tools: Vec<String> = self.tools.keys().cloned().collect();
        tools.sort();
        let mut answer = HelloReply {
            name: self.name.clone(),
            tools,
            root: self.session.cwd.clone(),
            home: crate::paths::home_dir(),
            checks_expect: true,
            sandbox: None,
        };
        let Ok(req) = req else {
            let _ = reply.send(Wire::of(answer));
            return;
        };
        tracing::info!(coordinator = %req.coordinator, "coordinator said hello");
        let (sandboxed, base) = (self.sandboxed.clone(), self.session.clone());
        tokio::spawn(async move {
            match req.sandbox {
                Some(settings) => {
                    let report = sandboxed.set_up(&req.coordinator, settings, &base).await;
                    answer.sandbox = Some(report);
                }
                None => sandboxed.detach(&req.coordinator),
            }
            let _ = reply.send(Wire::of(answer));
        });
    }

    /// Starts one call on a task of its own; its reply is sent from there.
    fn run(
        &self,
        req: Result<RunReq, String>,
        reply: RpcReplyPort<Wire<RunReply>>,
        denies: &mut DenySessions,
    ) {
        let answer = |reply: RpcReplyPort<Wire<RunReply>>, out: ToolOutput| {
            let _ = reply.send(Wire::of(RunReply::from_output(out)));
        };
        let req = match req {
            Ok(req) => req,
            Err(e) => {
                return answer(
                    reply,
                    ToolOutput::failed(format!("The worker could not read the call: {e}")),
                );
            }
        };
        let Some(mut tool) = self.tools.get(&req.tool).cloned() else {
            return answer(
                reply,
                ToolOutput::failed(format!(
                    "Worker node {} does not offer {}.",
                    self.name, req.tool
                )),
            );
        };
        // A background start and the tools reading tasks act on the coordinator's own tasks.
        let starts_task = starts_a_task(&req.tool, &req.input);
        if is_task_call(&req.tool, &req.input) {
            match self.tasks.tool(&req.coordinator, &req.tool) {
                Ok(own) => tool = own,
                Err(why) => return answer(reply, ToolOutput::failed(why)),
            }
        }
        let runs_commands = matches!(tool.access().subject, crate::tool::Subject::Command { .. });
        let session = match self.session_of(&req, runs_commands, denies) {
            Ok(session) => session,
            Err(why) => return answer(reply, ToolOutput::failed(why)),
        };
        let key = (req.coordinator.clone(), req.id.clone());
        let cancel = CancellationToken::new();
        {
            let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            if running.contains_key(&key) {
                return answer(
                    reply,
                    ToolOutput::failed(format!(
                        "A call with id {} from this coordinator is already running on worker node {}.",
                        req.id, self.name
                    )),
                );
            }
            running.insert(key.clone(), cancel.clone());
        }
        let ctx = ToolContext {
            tool_use_id: Arc::from(req.id.as_str()),
            cancel,
            progress: progress_to(&req.coordinator, &req.id),
            session: session.clone(),
            agent: None,
            state: StateKey::SESSION,
            // A background start's response names its task, which the coordinator must learn.
            hook_response: req.hook_response || starts_task,
            // A path tool's one path, as the coordinator's decision saw it resolve here (checked
            // again below before the call runs).
            decided_paths: match (tool.access().subject, req.expect.as_slice()) {
                (crate::tool::Subject::Path { .. }, [(_, paths)]) => {
                    Some(Arc::from(paths.as_slice()))
                }
                _ => None,
            },
            output_chars: usize::try_from(req.output_chars).unwrap_or(usize::MAX),
        };
        let (running, kept) = (self.running.clone(), self.kept.clone());
        tokio::spawn(async move {
            // The decision was about these resolutions; another one means other files.
            if let Some(stale) = changed_resolution(&req.expect) {
                running
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&key);
                let mut answer = RunReply::from_output(ToolOutput::failed(format!(
                    "{} resolves differently on the worker node now; nothing ran.",
                    stale.display()
                )));
                answer.stale = Some(stale);
                let _ = reply.send(Wire::of(answer));
                return;
            }
            // The tool's own validation looks at the files, so it is made here, where they are.
            let checked = tool
                .validate(&req.input, &session, StateKey::SESSION)
                .decided()
                .await;
            let out = match checked {
                Err(why) => ToolOutput::failed(why),
                // Already on a task of its own: the execute stage's hop would buy nothing.
                Ok(()) => crate::execute::run_here(tool, req.input, ctx).await,
            };
            running
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&key);
            let answer = reply_of(out, starts_task, req.hook_response, &kept, &key.0).await;
            let handle = answer.full.as_ref().map(|f| f.handle);
            if reply.send(Wire::of(answer)).is_err()
                && let Some(handle) = handle
            {
                // The coordinator is gone: nobody will fetch it.
                kept.release(&key.0, handle);
            }
        });
    }

    /// The session `req` runs in, or why the call cannot run. A command runs in the session with
    /// the coordinator's sandbox, and never without it when the coordinator's decision counted
    /// on it; no other tool looks at the sandbox. A search with the coordinator's Read deny
    /// patterns runs in a session whose guard they make.
    fn session_of(
        &self,
        req: &RunReq,
        runs_commands: bool,
        denies: &mut DenySessions,
    ) -> Result<Arc<Session>, String> {
        if runs_commands {
            return match self.sandboxed.session(&req.coordinator) {
                Some(sandboxed) => Ok(sandboxed),
                None if req.sandbox => Err(format!(
                    "Worker node {} has no sandbox set up for this coordinator, whose settings \
                     have one; the call did not run.",
                    self.name
                )),
                None => Ok(self.session.clone()),
            };
        }
        if req.read_deny.is_empty() {
            return Ok(self.session.clone());
        }
        self.searching(&req.coordinator, &req.read_deny, denies)
    }

    /// The worker's session with the coordinator's Read deny patterns as its guard (Glob and
    /// Grep leave out what they cover).
    fn searching(
        &self,
        coordinator: &str,
        read_deny: &[String],
        denies: &mut DenySessions,
    ) -> Result<Arc<Session>, String> {
        if let Some((patterns, session)) = denies.0.get(coordinator)
            && patterns == read_deny
        {
            return Ok(session.clone());
        }
        let guard = super::guard::ReadDenies::new(read_deny).map_err(|why| {
            format!(
                "Worker node {} could not take the coordinator's Read deny rules ({why}); the \
                 call did not run.",
                self.name
            )
        })?;
        let session = Arc::new(Session {
            guard: Arc::new(guard),
            ..(*self.session).clone()
        });
        if denies.0.len() >= DENY_SESSIONS_KEPT && !denies.0.contains_key(coordinator) {
            denies.0.clear();
        }
        (denies.0).insert(
            coordinator.to_string(),
            (read_deny.to_vec(), session.clone()),
        );
        Ok(session)
    }

    /// Sends the chunk of a kept output that `req` asks for, read on the blocking pool; the
    /// last (empty) one lets the file go.
    fn fetch(&self, req: Result<FetchReq, String>, reply: RpcReplyPort<Chunk>) {
        let req = match req {
            Ok(req) => req,
            Err(e) => {
                let _ = reply.send(Chunk(Err(e)));
                return;
            }
        };
        let Some(path) = self.kept.path(&req.coordinator, req.handle) else {
            let _ = reply.send(Chunk(Err(format!(
                "worker node {} keeps no output {} for this coordinator (it was fetched or let go)",
                self.name, req.handle
            ))));
            return;
        };
        let kept = self.kept.clone();
        tokio::spawn(async move {
            let shown = path.display().to_string();
            let read = tokio::task::spawn_blocking(move || read_chunk(&path, req.offset)).await;
            let chunk = match read {
                Ok(Ok(bytes)) => {
                    if bytes.is_empty() {
                        kept.release(&req.coordinator, req.handle);
                    }
                    Ok(bytes)
                }
                Ok(Err(e)) => Err(format!("cannot read {shown} on the worker node: {e}")),
                Err(e) => Err(format!("reading {shown} on the worker node failed: {e}")),
            };
            let _ = reply.send(Chunk(chunk));
        });
    }
}

/// A sink sending call `id`'s progress to the relay of `coordinator` (none when it has no
/// relay: the updates are dropped).
fn progress_to(coordinator: &str, id: &str) -> ProgressSink {
    let relay = ractor::pg::get_members(&progress_group(coordinator))
        .into_iter()
        .next();
    match relay {
        Some(cell) => ProgressSink::to(Arc::new(ToRelay(cell.into())), Arc::from(id)),
        None => ProgressSink::discard(),
    }
}

/// A coordinator's relay as a progress target. Updates are not held back for a slow client
/// here (the relay's sink drops them on the coordinator); a tool sends few (Bash: one per
/// 200 ms at most, each at most 16,000 characters).
struct ToRelay(ActorRef<RelayMsg>);

impl ProgressTarget for ToRelay {
    fn send(&self, id: &Arc<str>, data: serde_json::Value) -> bool {
        let note = ProgressNote {
            id: id.to_string(),
            data,
        };
        self.0.cast(RelayMsg::Progress(Wire::of(note))).is_ok()
    }

    fn has_room(&self, _bytes: usize) -> bool {
        true
    }
}

/// Hears coordinators' sessions: a refused handshake is logged; the calls of a coordinator
/// whose link closed are cancelled after the grace period.
struct Coordinators {
    running: Running,
    kept: Arc<KeptFiles>,
    tasks: Arc<WorkerTasks>,
    sandboxed: Arc<Sandboxed>,
    grace: Duration,
    /// The sessions that passed the cookie handshake, by ractor_cluster's node id: only their
    /// closing ends calls (a peer that never authenticated cannot stop anyone's); with the
    /// coordinator's name where it was known then.
    authenticated: Arc<Mutex<HashMap<u64, Option<String>>>>,
}

impl NodeEventSubscription for Coordinators {
    fn node_session_opened(&self, ses: NodeServerSessionInformation) {
        tracing::debug!(peer = %ses.peer_addr, "connection opened");
    }

    fn node_session_authenticated(&self, ses: NodeServerSessionInformation) {
        tracing::info!(peer = %ses.peer_addr, "coordinator authenticated");
        let mut authenticated = self.authenticated.lock().unwrap_or_else(|e| e.into_inner());
        authenticated.insert(ses.node_id, ses.peer_name.map(|p| p.name));
    }

    fn node_session_disconnected(&self, ses: NodeServerSessionInformation) {
        let was = (self.authenticated.lock().unwrap_or_else(|e| e.into_inner()))
            .remove(&ses.node_id)
            .is_some();
        let Some(peer) = ses.peer_name.filter(|_| was) else {
            tracing::warn!(
                peer = %ses.peer_addr,
                "refused a connection that did not authenticate (wrong cookie?)"
            );
            return;
        };
        let coordinator = peer.name;
        tracing::warn!(%coordinator, grace_ms = self.grace.as_millis() as u64, "coordinator link closed; its calls are killed after the grace period");
        let (running, kept, grace) = (self.running.clone(), self.kept.clone(), self.grace);
        // Set aside now, so that a coordinator dialing again within the grace period starts
        // tasks of its own that this kill does not reach.
        let tasks = self.tasks.detach(&coordinator);
        let (sandboxed, authenticated) = (self.sandboxed.clone(), self.authenticated.clone());
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            cancel_where(&running, |key| key.0 == coordinator);
            kept.release_where(|key| key.0 == coordinator);
            drop(tasks);
            // Kept for a coordinator that has dialed again (its new hello may have come
            // before this link's end was heard), ended for one that has not.
            let back = (authenticated
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .values())
            .any(|name| name.as_deref() == Some(coordinator.as_str()));
            if !back {
                sandboxed.detach(&coordinator);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_offers_only_tools_it_can_run_alone() {
        let names = |t: &HashMap<String, Arc<dyn Tool>>| {
            let mut n: Vec<String> = t.keys().cloned().collect();
            n.sort();
            n
        };
        assert_eq!(
            names(&offered_tools(None).unwrap()),
            [
                "Bash",
                "Edit",
                "Glob",
                "Grep",
                "Read",
                "TaskOutput",
                "TaskStop",
                "WebFetch",
                "Write"
            ]
        );
        let some = vec!["Bash".to_string(), "Noop".to_string()];
        assert_eq!(
            names(&offered_tools(Some(&some)).unwrap()),
            ["Bash", "Noop"]
        );
        for bad in ["Agent", "Nope"] {
            let err = offered_tools(Some(&[bad.to_string()])).err().unwrap();
            assert!(err.contains(bad), "{err}");
        }
    }
}
