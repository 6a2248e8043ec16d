//! The two floors toolrt's per-call cost is compared with, measured in the same process on the
//! same runtime: the stage work as plain function calls, and the actor structure doing no work.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::budget::{self, Plan};
use crate::call::{Outcome, ToolResult};
use crate::permission::{Behavior, DecisionRequest, Policy};
use crate::protocol::{self, ClientMessage, ServerMessage};
use crate::registry::{Naming, Registry, Selection};
use crate::session::Session;
use crate::settings::Limits;
use crate::tool::{ProgressSink, Tool, ToolContext};
use crate::tools::noop::Noop;
use crate::validate;

/// The inline floor: everything one no-op call needs, as plain calls in one task.
pub(super) struct Inline {
    registry: Registry,
    policy: Policy,
    session: Arc<Session>,
    noop: Arc<dyn Tool>,
    limits: Limits,
}

impl Inline {
    /// The same registry (the no-op tool, its schema compiled once) and the same rules as the
    /// pipeline's no-op run.
    pub(super) fn new(cwd: &std::path::Path) -> Result<Self, String> {
        let policy = super::workload::pipeline_policy(cwd, &["Noop"])?;
        let noop: Arc<dyn Tool> = Arc::new(Noop::new());
        // Only the no-op tool is known, so whether the rules remove it is all there is to ask.
        let noop_removed = policy.removes_tool(noop.name());
        let registry = Registry::build(
            vec![noop.clone()],
            Naming {
                selection: &Selection::All,
                aliases: &BTreeMap::new(),
                alias_files: &BTreeMap::new(),
                late_prefixes: &[],
            },
            move |_| noop_removed,
        )
        .map_err(|e| e.to_string())?;
        let session = Arc::new(Session::new(cwd.to_path_buf(), std::env::temp_dir()));
        Ok(Self {
            registry,
            policy,
            session,
            noop,
            limits: Limits::default(),
        })
    }

    /// One call, line in, line out: parse, validate (resolve, coerce, schema), decide, run the
    /// no-op tool, plan the budget, serialise the result.
    pub(super) async fn call(&self, line: &str) -> Result<Vec<u8>, String> {
        let Ok(ClientMessage::ToolUse(call)) = protocol::parse_line(line) else {
            return Err("the inline floor could not parse its call".into());
        };
        let id = call.id.clone();
        let prepared = validate::prepare(&self.registry, &self.session, call)
            .await
            .map_err(|r| format!("the inline floor's call was rejected: {}", r.content))?;
        let decision = self.policy.decide(&DecisionRequest {
            tool: prepared.tool_name(),
            access: prepared.entry.tool.access(),
            input: &prepared.input,
            mode: self.policy.starting_mode(),
            hook: None,
        });
        if decision.behavior != Behavior::Allow {
            return Err("the inline floor's call was not allowed".into());
        }
        let ctx = ToolContext {
            tool_use_id: Arc::from(id.as_str()),
            cancel: CancellationToken::new(),
            progress: ProgressSink::discard(),
            session: self.session.clone(),
            agent: None,
            state: crate::tool::StateKey::SESSION,
            hook_response: false,
            decided_paths: None,
            output_chars: self.limits.tool_chars,
        };
        let class = prepared.entry.tool.budget_class();
        let output = self.noop.call(prepared.input, ctx).await;
        let content = match budget::plan(&output, class, &self.limits) {
            Plan::Inline => output.content,
            Plan::External { .. } => return Err("the no-op output went over budget".into()),
        };
        let result = ToolResult::new(id, Outcome::Success, content);
        Ok(ServerMessage::ToolResult(result).to_line())
    }

    /// `calls` calls one after another; the latency of each in nanoseconds.
    pub(super) async fn run(&self, first_id: u64, calls: usize) -> Result<Vec<u64>, String> {
        let mut samples = Vec::with_capacity(calls);
        for i in 0..calls as u64 {
            let line = super::workload::noop_line(first_id + i);
            let start = Instant::now();
            let out = self.call(&line).await?;
            black_box(out);
            samples.push(elapsed_ns(start));
        }
        Ok(samples)
    }
}

/// How many stage actors the actor floor messages per call (validate, hooks, permission,
/// execute, budget).
pub(super) const FLOOR_STAGES: usize = 5;

/// How many stages toolrt itself messages for a no-op call with no hooks and an output within
/// budget (validate, permission, execute): the hook and budget stages have nothing to do and
/// are not messaged. The floor is also measured with this many hops, so the ratio can be read
/// both ways.
pub(super) const NOOP_HOPS: usize = 3;

/// A request to a floor stage: answer at once.
pub(super) struct Ping(RpcReplyPort<()>);

// A local-only message: ractor's `cluster` feature (ractor_cluster) asks each message type
// to say whether it crosses nodes; this one never does.
impl ractor::Message for Ping {}

/// A long-lived stage actor that does no work.
struct IdleStage;

impl Actor for IdleStage {
    type Msg = Ping;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _me: ActorRef<Ping>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(
        &self,
        _me: ActorRef<Ping>,
        Ping(reply): Ping,
        _state: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        // A dropped caller is not this stage's fault.
        let _ = reply.send(());
        Ok(())
    }
}

/// One floor call, shaped like toolrt's supervisor (`supervisor::spawn`): a task of its own
/// that requests each stage in turn and reports.
async fn floor_call(stages: Arc<[ActorRef<Ping>]>, hops: usize, done: mpsc::UnboundedSender<bool>) {
    let mut ok = true;
    for stage in stages.iter().take(hops) {
        ok &= crate::stage::request("floor", stage, Ping).await.is_ok();
    }
    let _ = done.send(ok);
}

/// The actor floor: [`FLOOR_STAGES`] idle stage actors, a supervisor task spawned per call.
pub(super) struct ActorFloor {
    stages: Arc<[ActorRef<Ping>]>,
    done_tx: mpsc::UnboundedSender<bool>,
    done_rx: mpsc::UnboundedReceiver<bool>,
}

impl ActorFloor {
    /// Spawns the stage actors.
    pub(super) async fn start() -> Result<Self, String> {
        let mut stages = Vec::with_capacity(FLOOR_STAGES);
        for _ in 0..FLOOR_STAGES {
            let (actor, _) = Actor::spawn(None, IdleStage, ())
                .await
                .map_err(|e| format!("could not spawn a floor stage: {e}"))?;
            stages.push(actor);
        }
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        Ok(Self {
            stages: stages.into(),
            done_tx,
            done_rx,
        })
    }

    /// `calls` calls one after another, each messaging the first `hops` stages; the latency of
    /// each in nanoseconds.
    pub(super) async fn run(&mut self, calls: usize, hops: usize) -> Result<Vec<u64>, String> {
        let mut samples = Vec::with_capacity(calls);
        for _ in 0..calls {
            let start = Instant::now();
            tokio::spawn(floor_call(self.stages.clone(), hops, self.done_tx.clone()));
            match self.done_rx.recv().await {
                Some(true) => {}
                _ => return Err("a floor stage did not answer".into()),
            }
            samples.push(elapsed_ns(start));
        }
        Ok(samples)
    }

    /// Stops the stage actors.
    pub(super) fn stop(&self) {
        for stage in self.stages.iter() {
            stage.stop(None);
        }
    }
}

/// Nanoseconds since `start`, saturating.
pub(super) fn elapsed_ns(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}
