//! The permission stage actor and its typed handle; the decision itself is [`Policy::decide`].

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use super::{Decision, DecisionRequest, HookVerdict, Mode, Policy};
use crate::call::Input;
use crate::stage::{StageFault, request};
use crate::tool::Tool;

/// The permission engine's matchers, for hooks' `if` filters.
pub(crate) struct RuleFilter(pub Arc<Policy>);

impl crate::hooks::IfFilter for RuleFilter {
    fn matches(&self, rule: &str, call: &crate::hooks::ToolHookCall<'_>) -> bool {
        match Policy::parse_rule(rule) {
            Ok(rule) => self
                .0
                .rule_matches(&rule, call.tool_name, call.access, call.tool_input),
            Err(_) => false,
        }
    }
}

/// Checks an `if` rule when hooks are loaded.
pub(crate) fn check_rule(text: &str) -> Result<(), String> {
    Policy::parse_rule(text)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// A question for the permission stage. The input travels with it and comes back in the answer,
/// so no stage copies it.
pub(crate) struct Query {
    /// The tool (its canonical name and what rules need to know about it).
    pub tool: Arc<dyn Tool>,
    /// The input.
    pub input: Input,
    /// Mode in force.
    pub mode: Mode,
    /// PreToolUse hooks' verdict.
    pub hook: Option<HookVerdict>,
    /// Only re-check deny and ask rules (an input updated after an ask).
    pub recheck: bool,
    /// The call's agent scope's chain of levels, for a call made in a scope: every level
    /// decides ([`super::Chain`]); `None` decides by the session's policy alone.
    pub chain: Option<Arc<super::Chain>>,
    /// For a call placed on a worker node, its path as that node resolves it.
    pub at: Option<Arc<super::Located>>,
}

/// Messages of the permission stage.
pub(crate) enum PermissionMsg {
    /// Decide one call.
    Decide(Query, RpcReplyPort<(Input, Decision)>),
}

// A local-only message: ractor's `cluster` feature (ractor_cluster) asks each message type
// to say whether it crosses nodes; this one never does.
impl ractor::Message for PermissionMsg {}

/// The permission stage actor.
pub(crate) struct PermissionActor;

impl Actor for PermissionActor {
    type Msg = PermissionMsg;
    type State = Arc<Policy>;
    type Arguments = Arc<Policy>;

    async fn pre_start(
        &self,
        _me: ActorRef<PermissionMsg>,
        policy: Arc<Policy>,
    ) -> Result<Arc<Policy>, ActorProcessingErr> {
        Ok(policy)
    }

    async fn handle(
        &self,
        _me: ActorRef<PermissionMsg>,
        msg: PermissionMsg,
        policy: &mut Arc<Policy>,
    ) -> Result<(), ActorProcessingErr> {
        let PermissionMsg::Decide(q, reply) = msg;
        let (tool, access, at) = (q.tool.name(), q.tool.access(), q.at.as_deref());
        let decision = if let Some(chain) = &q.chain {
            if q.recheck {
                chain.recheck_at(tool, access, &q.input, at)
            } else {
                chain.decide_at(tool, access, &q.input, q.hook, at)
            }
        } else if q.recheck {
            policy.recheck_updated_at(tool, access, &q.input, q.mode, at)
        } else {
            let req = DecisionRequest {
                tool,
                access,
                input: &q.input,
                mode: q.mode,
                hook: q.hook,
            };
            policy.decide_at(&req, at)
        };
        let _ = reply.send((q.input, decision));
        Ok(())
    }
}

/// Typed handle to the permission stage.
#[derive(Clone)]
pub(crate) struct Permission {
    actor: ActorRef<PermissionMsg>,
}

impl Permission {
    /// Spawns the stage actor.
    pub(crate) async fn spawn(
        policy: Arc<Policy>,
    ) -> Result<(Self, tokio::task::JoinHandle<()>), ractor::SpawnErr> {
        let (actor, handle) = Actor::spawn(None, PermissionActor, policy).await?;
        Ok((Self { actor }, handle))
    }

    /// Ask the stage for a decision.
    pub(crate) async fn decide(&self, query: Query) -> Result<(Input, Decision), StageFault> {
        request("permission", &self.actor, |port| {
            PermissionMsg::Decide(query, port)
        })
        .await
    }

    /// Stops the actor.
    pub(crate) fn stop(&self) {
        self.actor.stop(None);
    }
}
