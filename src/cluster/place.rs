//! Placement: which worker node runs a call's execute step, and the remote run itself.
//!
//! The link task (`link`) keeps the table of nodes; the supervisor asks it through
//! [`Placement::place`] with one short lock, before the call's permission decision. A call of
//! an agent placed on a node (its scope's `node`) goes to that node or fails; any other call
//! goes to the least-loaded live node that offers its tool; ties go round in turn, so even
//! calls made one at a time spread over idle nodes. The [`NodeLease`] it gets answers what a
//! path resolves to on that node, then runs the call there.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::ActorRef;
use ractor::rpc::CallResult;
use tokio_util::sync::CancellationToken;

use super::fetch::{CopyTo, attach_full_output};
use super::relay::{Route, Routes};
use super::resolved::Resolved;
use super::tasks::{TaskHomes, reads_a_task};
use super::wire::{CancelReq, ResolveReq, RunReq, Wire, WorkerMsg};
use crate::call::Input;
use crate::execute::{Lease, Placement, RemoteEnd, RemoteRun, Resolving, RunTerms};
use crate::tool::{ToolContext, ToolOutput};

/// How long a worker gets to say what a path resolves to (one `lstat` per component there).
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);

/// A live link to one worker: its actor, and the token cancelled when the link is lost.
#[derive(Clone)]
pub(crate) struct Live {
    pub actor: ActorRef<WorkerMsg>,
    pub lost: CancellationToken,
    /// The worker's workspace folder and home, from its hello.
    pub root: Arc<Path>,
    pub home: Arc<Path>,
    /// What paths resolve to there, from its earlier answers on this link; None when the
    /// worker does not check kept answers before running a call (then none is kept).
    pub resolved: Option<Arc<Resolved>>,
    /// The coordinator's Bash sandbox as it holds for commands run there (None: the
    /// coordinator has none).
    pub sandbox: Option<Arc<dyn crate::session::ShellSandbox>>,
}

/// One configured worker, as placement sees it.
pub(crate) struct Node {
    /// Its name (from its hello; its address until then).
    pub name: Arc<str>,
    /// The address it was configured by (`--worker`).
    pub addr: Arc<str>,
    /// The tools it offers (empty until its first hello).
    pub tools: Vec<String>,
    /// Its link, while it is up.
    pub live: Option<Live>,
    /// Calls running on it now.
    pub load: Arc<AtomicUsize>,
}

/// The worker nodes and the coordinator's own name (calls are known by it on the workers).
pub(crate) struct Nodes {
    pub(super) table: Mutex<Vec<Node>>,
    pub(super) coordinator: String,
    /// Where progress of calls on workers goes.
    pub(super) routes: Arc<Routes>,
    /// Which node runs each background task started in this session.
    homes: Arc<TaskHomes>,
    turn: AtomicUsize,
}

impl Nodes {
    /// A table of `names` (the workers' addresses), none of them up yet.
    pub(crate) fn new(coordinator: String, names: &[String]) -> Self {
        let table = names
            .iter()
            .map(|name| Node {
                name: Arc::from(name.as_str()),
                addr: Arc::from(name.as_str()),
                tools: Vec::new(),
                live: None,
                load: Arc::new(AtomicUsize::new(0)),
            })
            .collect();
        Self {
            table: Mutex::new(table),
            coordinator,
            routes: Arc::default(),
            homes: Arc::default(),
            turn: AtomicUsize::new(0),
        }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Node>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The node for a call of `tool`: the node named `on` when the call's agent is placed on
    /// one, else the least loaded live node offering it, ties in turn.
    fn choose(
        &self,
        tool: &str,
        on: Option<&str>,
    ) -> Result<(Arc<str>, Live, Arc<AtomicUsize>), String> {
        let table = self.lock();
        let loads: Vec<Option<usize>> = table
            .iter()
            .map(|n| {
                let offers = n.live.is_some()
                    && on.is_none_or(|want| n.is_named(want))
                    && n.tools.iter().any(|t| t == tool);
                offers.then(|| n.load.load(Ordering::Relaxed))
            })
            .collect();
        let start = self.turn.fetch_add(1, Ordering::Relaxed);
        let Some(i) = least_loaded(&loads, start) else {
            return Err(match on {
                Some(want) => not_there(tool, want, &table),
                None => nowhere(tool, &table),
            });
        };
        let node = &table[i];
        let live = node.live.clone().expect("chosen among live nodes");
        Ok((node.name.clone(), live, node.load.clone()))
    }
}

/// The index of the smallest load (None: not a candidate), looking from `start` round, so
/// that among equal loads each index takes its turn.
pub(crate) fn least_loaded(loads: &[Option<usize>], start: usize) -> Option<usize> {
    let n = loads.len();
    let mut best: Option<(usize, usize)> = None;
    for k in 0..n {
        let i = (start + k) % n;
        if let Some(load) = loads[i]
            && best.is_none_or(|(_, b)| load < b)
        {
            best = Some((i, load));
        }
    }
    best.map(|(i, _)| i)
}

impl Node {
    /// Whether `want` names this node: its name or the address it was configured by.
    fn is_named(&self, want: &str) -> bool {
        *self.name == *want || *self.addr == *want
    }

    /// Its state, as a refusal names it.
    fn state(&self, tool: &str) -> String {
        match (&self.live, self.tools.is_empty()) {
            (Some(_), _) => format!("{} (up, does not offer {tool})", self.name),
            (None, true) => format!("{} (not connected yet)", self.name),
            (None, false) => format!("{} (lost)", self.name),
        }
    }
}

/// Why no node can take a call of `tool`, naming each node's state.
fn nowhere(tool: &str, table: &[Node]) -> String {
    let states: Vec<String> = table.iter().map(|n| n.state(tool)).collect();
    format!(
        "No worker node can run {tool} now: {}. Calls run only on worker nodes in this session; \
         retry once a node is up.",
        states.join(", ")
    )
}

/// Why the node `want`, which the call's agent runs on, cannot take a call of `tool`.
fn not_there(tool: &str, want: &str, table: &[Node]) -> String {
    match table.iter().find(|n| n.is_named(want)) {
        Some(node) => format!(
            "Worker node {} cannot run {tool} now: {}. This agent's calls run only on that node \
             (its agent_start or agent type names it); the call did not run. Retry once the node \
             is up.",
            node.name,
            node.state(tool)
        ),
        None => {
            let names: Vec<&str> = table.iter().map(|n| &*n.name).collect();
            format!(
                "No worker node is named {want:?}, which this agent's calls run on (its \
                 agent_start or agent type names it); the session's workers are: {}. The call \
                 did not run.",
                names.join(", ")
            )
        }
    }
}

impl Placement for Nodes {
    fn place(&self, tool: &str, input: &Input, on: Option<&str>) -> Result<Box<dyn Lease>, String> {
        let task_home = task_home(&self.homes, tool, input)?;
        if let (Some(home), Some(want)) = (&task_home, on)
            && (self.lock().iter())
                .find(|n| n.is_named(want))
                .map(|n| &*n.name)
                != Some(&**home)
        {
            return Err(format!(
                "The background task runs on worker node {home}, but this agent's calls run \
                 only on {want} (its agent_start or agent type names it); the call did not run."
            ));
        }
        let (name, live, load) = match &task_home {
            None => self.choose(tool, on)?,
            Some(home) => self.choose(tool, Some(home)).map_err(|_| {
                let state = (self.lock().iter())
                    .find(|n| n.is_named(home))
                    .map_or_else(|| format!("{home} (unknown)"), |n| n.state(tool));
                format!(
                    "The background task runs on worker node {home}, which cannot take the call \
                     now: {state}. A worker sets a coordinator's tasks aside when their link \
                     closes and kills them after its grace period, so they are not reachable \
                     again."
                )
            })?,
        };
        load.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(NodeLease {
            coordinator: self.coordinator.clone(),
            routes: self.routes.clone(),
            homes: self.homes.clone(),
            name,
            live,
            load: LoadGuard(load),
        }))
    }
}

/// For TaskOutput and TaskStop, the node that runs the task the input names (the call goes
/// there or nowhere); None for any other call.
fn task_home(homes: &TaskHomes, tool: &str, input: &Input) -> Result<Option<Arc<str>>, String> {
    if !reads_a_task(tool) {
        return Ok(None);
    }
    let id = input.get("task_id").and_then(|v| v.as_str()).unwrap_or("");
    match homes.home(id) {
        Some(home) => Ok(Some(home)),
        None => Err(format!(
            "No background task with id {id:?} was started on a worker node in this session \
             (Bash with run_in_background starts one; its result names the task)."
        )),
    }
}

/// One call's node, from its placement until its run ends.
struct NodeLease {
    coordinator: String,
    routes: Arc<Routes>,
    homes: Arc<TaskHomes>,
    name: Arc<str>,
    live: Live,
    load: LoadGuard,
}

impl Lease for NodeLease {
    fn node(&self) -> &Arc<str> {
        &self.name
    }

    fn root(&self) -> &Path {
        &self.live.root
    }

    fn home(&self) -> &Path {
        &self.live.home
    }

    fn kept(&self, path: &Path) -> Option<Vec<PathBuf>> {
        self.live.resolved.as_ref()?.get(path)
    }

    fn sandbox(&self) -> Option<Arc<dyn crate::session::ShellSandbox>> {
        self.live.sandbox.clone()
    }

    fn resolve(&self, path: PathBuf) -> Resolving {
        let (name, live) = (self.name.clone(), self.live.clone());
        Box::pin(async move {
            let unknown = |why: &str| {
                format!(
                    "Worker node {name} could not say what {} resolves to there ({why}), so \
                     the permission decision could not be made; the call did not run.",
                    path.display()
                )
            };
            let req = ResolveReq { path: path.clone() };
            let ask = live.actor.call(
                |port| WorkerMsg::Resolve(Wire::of(req), port),
                Some(RESOLVE_TIMEOUT),
            );
            tokio::select! {
                biased;
                reply = ask => match reply {
                    Ok(CallResult::Success(Wire(Ok(reply)))) if reply.paths.first() == Some(&path) => {
                        if let Some(kept) = &live.resolved {
                            kept.keep(path, reply.paths.clone());
                        }
                        Ok(reply.paths)
                    }
                    Ok(CallResult::Success(Wire(Ok(_)))) => Err(unknown("its answer was not about that path")),
                    Ok(CallResult::Success(Wire(Err(e)))) => Err(unknown(&e)),
                    Ok(CallResult::Timeout) => Err(unknown("no answer in time")),
                    Ok(CallResult::SenderError) | Err(_) => Err(unknown("its link was lost")),
                },
                _ = live.lost.cancelled() => Err(unknown("its link was lost")),
            }
        })
    }

    fn run(
        self: Box<Self>,
        tool: &str,
        input: Input,
        ctx: ToolContext,
        terms: RunTerms,
    ) -> RemoteRun {
        let NodeLease {
            coordinator,
            routes,
            homes,
            name,
            live,
            load,
        } = *self;
        let route = routes.open(&ctx.tool_use_id, ctx.progress.clone());
        let copy_to = CopyTo {
            dir: ctx.session.output_dir.clone(),
            name: crate::paths::file_safe(&format!("{tool}-{}", ctx.tool_use_id)),
        };
        let req = RunReq {
            coordinator,
            id: ctx.tool_use_id.to_string(),
            tool: tool.to_string(),
            input,
            output_chars: ctx.output_chars as u64,
            hook_response: ctx.hook_response,
            read_deny: if terms.searches {
                ctx.session.guard.read_deny_patterns()
            } else {
                Vec::new()
            },
            expect: terms.expect,
            sandbox: live.sandbox.is_some(),
        };
        Box::pin(run_remote(
            name,
            live,
            req,
            ctx.cancel,
            (copy_to, homes),
            (load, route),
        ))
    }
}

/// Counts a call on its node until dropped.
struct LoadGuard(Arc<AtomicUsize>);

impl Drop for LoadGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One call on a worker: the request, a cancel passed on once, and the reply (with its
/// complete output, when the worker kept one, copied to `copy_to`), or `failed` naming the
/// node when its link is lost first. A node lost before the request left (while
/// the call waited for an answer to an ask, say) ran nothing, and the result says so: the
/// decision was about that node's files, so the call is not moved to another node.
async fn run_remote(
    node: Arc<str>,
    live: Live,
    req: RunReq,
    cancel: CancellationToken,
    (copy_to, homes): (CopyTo, Arc<TaskHomes>),
    _held: (LoadGuard, Route),
) -> RemoteEnd {
    let coordinator = req.coordinator.clone();
    let stop = CancelReq {
        coordinator: req.coordinator.clone(),
        id: req.id.clone(),
    };
    if live.lost.is_cancelled() {
        return RemoteEnd::NotSent(not_sent(&node));
    }
    let actor = live.actor.clone();
    let call = actor.call(|port| WorkerMsg::Run(Wire::of(req), port), None);
    tokio::pin!(call);
    let mut stop = Some(stop);
    let mut reply = loop {
        tokio::select! {
            biased;
            reply = &mut call => match reply {
                Ok(CallResult::Success(Wire(Ok(reply)))) => break reply,
                Ok(CallResult::Success(Wire(Err(e)))) => return RemoteEnd::Ran(ToolOutput::failed(format!(
                    "Worker node {node} sent a reply toolrt could not read: {e}"
                ))),
                Ok(_) => return RemoteEnd::Ran(lost(&node)),
                // The request could not be handed to the link at all.
                Err(_) => return RemoteEnd::NotSent(not_sent(&node)),
            },
            _ = live.lost.cancelled() => return RemoteEnd::Ran(lost(&node)),
            _ = cancel.cancelled(), if stop.is_some() => {
                if let Some(stop) = stop.take() {
                    // The worker kills the call's process group; its reply follows.
                    let _ = live.actor.cast(WorkerMsg::Cancel(Wire::of(stop)));
                }
            }
        }
    };
    if let Some(path) = reply.stale.take() {
        if let Some(kept) = &live.resolved {
            kept.forget(&path);
        }
        return RemoteEnd::Stale(path);
    }
    if let Some(task) = reply.task.take() {
        homes.record(task, node.clone());
    }
    let full = reply.full.take();
    let mut out = reply.into_output();
    if let Some(kept) = full {
        attach_full_output(&mut out, kept, &node, &live, &coordinator, copy_to, &cancel).await;
    }
    RemoteEnd::Ran(out)
}

/// Why a call did not run when its node was lost before the call was sent to it.
fn not_sent(node: &str) -> String {
    format!(
        "Worker node {node} was lost before the call was sent to it (its connection closed or \
         it stopped answering heartbeats); nothing ran there."
    )
}

/// The output of a call whose node was lost while it ran.
fn lost(node: &str) -> ToolOutput {
    ToolOutput::failed(format!(
        "Worker node {node} was lost while the call ran (its connection closed or it stopped \
         answering heartbeats); whether the command ran to its end there is unknown."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loads, where to start looking, and the index chosen.
    type Case = (&'static [Option<usize>], usize, Option<usize>);

    #[test]
    fn least_loaded_prefers_the_smallest_load_and_takes_turns_on_ties() {
        let cases: &[Case] = &[
            (&[], 0, None),
            (&[None, None], 3, None),
            (&[Some(0), Some(0), Some(0)], 0, Some(0)),
            (&[Some(0), Some(0), Some(0)], 1, Some(1)),
            (&[Some(0), Some(0), Some(0)], 5, Some(2)),
            (&[Some(2), Some(1), Some(3)], 0, Some(1)),
            (&[Some(2), None, Some(2)], 1, Some(2)),
            (&[None, Some(7)], 0, Some(1)),
        ];
        for (loads, start, want) in cases {
            assert_eq!(least_loaded(loads, *start), *want, "{loads:?} from {start}");
        }
    }

    /// An actor that takes worker messages and answers none: enough to stand for a live link.
    struct Silent;

    impl ractor::Actor for Silent {
        type Msg = WorkerMsg;
        type State = ();
        type Arguments = ();

        async fn pre_start(
            &self,
            _: ActorRef<WorkerMsg>,
            _: (),
        ) -> Result<(), ractor::ActorProcessingErr> {
            Ok(())
        }
    }

    /// Nodes `a:1`, `b:2`, `c:3`, all up and offering Bash, with `b` the busiest.
    async fn three_up() -> Nodes {
        let (actor, _) = ractor::Actor::spawn(None, Silent, ()).await.unwrap();
        let nodes = Nodes::new("c".into(), &["a:1".into(), "b:2".into(), "c:3".into()]);
        for (i, node) in nodes.lock().iter_mut().enumerate() {
            node.tools = vec!["Bash".into()];
            node.live = Some(Live {
                actor: actor.clone(),
                lost: CancellationToken::new(),
                root: Arc::from(Path::new("/")),
                home: Arc::from(Path::new("/")),
                resolved: None,
                sandbox: None,
            });
            node.load
                .store(if i == 1 { 5 } else { 0 }, Ordering::Relaxed);
        }
        nodes
    }

    #[tokio::test]
    async fn an_agent_placed_on_a_node_goes_there_whatever_the_loads() {
        let nodes = three_up().await;
        for _ in 0..4 {
            let (name, ..) = nodes.choose("Bash", Some("b:2")).unwrap();
            assert_eq!(&*name, "b:2");
        }
        // Once the worker has said its name, the name and the configured address both find it.
        nodes.lock()[2].name = Arc::from("w3");
        for want in ["w3", "c:3"] {
            let (name, ..) = nodes.choose("Bash", Some(want)).unwrap();
            assert_eq!(&*name, "w3", "{want}");
        }
        // Without a node of its own, a call goes to a least-loaded node, never the busy one.
        for _ in 0..4 {
            let (name, ..) = nodes.choose("Bash", None).unwrap();
            assert_ne!(&*name, "b:2");
        }
    }

    #[tokio::test]
    async fn an_agents_node_that_cannot_take_the_call_refuses_it_naming_the_node() {
        let nodes = three_up().await;
        nodes.lock()[1].live = None;
        let why = nodes.choose("Bash", Some("b:2")).err().unwrap();
        assert!(
            why.contains("Worker node b:2 cannot run Bash now: b:2 (lost)"),
            "{why}"
        );
        assert!(why.contains("did not run"), "{why}");
        // Another node being free does not matter: the agent's files are on its own node.
        let why = nodes.choose("Read", Some("a:1")).err().unwrap();
        assert!(why.contains("a:1 (up, does not offer Read)"), "{why}");
        let why = nodes.choose("Bash", Some("w9")).err().unwrap();
        assert!(
            why.contains(r#"No worker node is named "w9""#) && why.contains("a:1, b:2, c:3"),
            "{why}"
        );
    }

    #[test]
    fn no_live_node_is_a_clear_refusal_naming_each_node() {
        let nodes = Nodes::new("c".into(), &["a:1".into(), "b:2".into()]);
        nodes.lock()[1].tools = vec!["Bash".into()];
        let why = nodes.choose("Bash", None).err().unwrap();
        assert!(why.contains("a:1 (not connected yet)"), "{why}");
        assert!(why.contains("b:2 (lost)"), "{why}");
    }
}
