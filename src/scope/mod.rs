//! Agent scopes: which agent a call comes from, and what that agent may do.
//!
//! An orchestrator running several agents starts a scope per agent (`agent_start`), sends that
//! agent's calls with its `agent_id`, and ends it (`agent_end`). A scope's rights only narrow
//! its parent's (docs/SEMANTICS.md §10): its tool selection is the intersection with its
//! parent's, and its calls are decided at every level of its permission [`Chain`]. Everything a
//! call needs from its scope is computed once, when the scope starts, and held in the [`Scope`];
//! a call looks its scope up once, by id, in the [`ScopeTable`] (a sharded map).
//!
//! Each scope holds a cancellation token, a child of its parent's (or of the call that opened
//! it, when that call is in flight): ending or cancelling a scope reaches every scope below it.
//!
//! # Layout
//! - `types`: the settings' `agents` (agent types) and `toolrt.maxAgentDepth`, compiled once.
//! - `agent_tool`: the built-in `Agent` tool (alias `Task`), which opens a child scope and has
//!   the orchestrator run the subagent through the client tools' `execute`.
//! - `control`: `agent_start` / `agent_end` as the client sees them (events, error lines).
//! - this module: [`Scope`], [`ScopeTable`] (start, end, resolve) and [`ScopeError`].

pub(crate) mod agent_tool;
pub(crate) mod control;
pub(crate) mod types;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::permission::{Behavior, Chain, Level, Mode, narrow_mode};
use crate::session::Session;
use crate::tool::{Access, StateKey, Subject};
pub use types::AgentsError;
pub(crate) use types::{AgentTypes, ToolSet, narrow_tools};

/// The most scopes alive at once: memory stays bounded whatever the client starts.
pub(crate) const MAX_SCOPES: usize = 10_000;

/// What the ids of the scopes the `Agent` tool opens start with (`agent-1`, `agent-2`, …).
pub(crate) const AGENT_TOOL_ID_PREFIX: &str = "agent-";

/// Whether `id` has the form of an id the `Agent` tool gives (`agent-` and digits): reserved
/// for it, so a client's `agent_start` can never take one and a client's call can never land in
/// (or outlive into) a scope the tool opened.
pub(crate) fn is_agent_tool_id(id: &str) -> bool {
    id.strip_prefix(AGENT_TOOL_ID_PREFIX)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// One agent's scope: computed once at `agent_start`, shared by every call of the agent.
#[derive(Debug)]
pub(crate) struct Scope {
    /// The agent's id.
    pub id: Arc<str>,
    /// Its type (`Agent(<type>)` rules name it; hooks see it as `agent_type`).
    pub agent_type: Arc<str>,
    /// The scope that started it, if any.
    pub parent: Option<Arc<Scope>>,
    /// 1 for an agent without a parent, its parent's depth + 1 otherwise.
    pub depth: u32,
    /// The call that opened it (`parent_tool_use_id`, or the `Agent` tool's call).
    pub parent_tool_use_id: Option<Arc<str>>,
    /// The tools it may use, already intersected with every level above; `None`: every tool
    /// that exists.
    pub tools: Option<Arc<ToolSet>>,
    /// The levels its calls are decided by.
    pub chain: Arc<Chain>,
    /// At most this many of its calls execute at once (the smallest along the chain).
    pub max_in_flight: Option<usize>,
    /// The worker node its calls run on: `agent_start`'s `node`, else its type's, else its
    /// parent's; None: any worker (or this machine, without workers).
    pub node: Option<Arc<str>>,
    /// Cancelled when the scope ends or anything above it is cancelled.
    pub cancel: CancellationToken,
    /// Unique per scope started, so an id used again is another scope.
    pub key: u64,
    /// Set once the scope has ended (under `children`'s lock, so no child starts after it).
    ended: AtomicBool,
    /// The session its tools run in: the session's, with the chain as the guard (made at its
    /// first call).
    tool_session: OnceLock<Arc<Session>>,
    /// Its live children, by id and key.
    children: Mutex<Vec<(Arc<str>, u64)>>,
}

impl Scope {
    /// The mode its calls are decided in (its own, narrowed against its parent's).
    pub(crate) fn mode(&self) -> Mode {
        self.chain.innermost().mode
    }

    /// The session its calls' tools run in: `base` with the scope's whole chain as the guard,
    /// so a Read deny rule of any level hides files from its Glob and Grep (and a WebFetch
    /// redirect must be allowed at every level), as the same rules deny its Read.
    pub(crate) fn tool_session(&self, base: &Arc<Session>) -> Arc<Session> {
        let made = self.tool_session.get_or_init(|| {
            Arc::new(Session {
                guard: self.chain.clone(),
                ..(**base).clone()
            })
        });
        made.clone()
    }

    /// Its calls' tool state (what they read, their checkpoints), its own.
    pub(crate) fn state_key(&self) -> StateKey {
        StateKey::scope(self.key)
    }

    /// Whether the scope has ended (`agent_end`, or its parent's end) or is ending: its token
    /// is cancelled (the call that opened it was cancelled), so no new call may start in it.
    pub(crate) fn has_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire) || self.cancel.is_cancelled()
    }

    /// Whether a tool of this canonical name exists for this scope's calls.
    pub(crate) fn may_use(&self, tool: &str) -> bool {
        self.tools.as_ref().is_none_or(|t| t.allows(tool))
    }

    /// The words for a call of a tool the scope may not use.
    pub(crate) fn unavailable(&self, tool: &str) -> String {
        format!(
            "No such tool available to agent {:?} (type {:?}): {tool}. Its tools are: {}.",
            &*self.id,
            &*self.agent_type,
            self.tools
                .as_ref()
                .map(|t| t.sorted().join(", "))
                .unwrap_or_default()
        )
    }

    fn lock_children(&self) -> std::sync::MutexGuard<'_, Vec<(Arc<str>, u64)>> {
        self.children.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `agent_start`, as the table needs it.
#[derive(Debug, Clone, Default)]
pub(crate) struct StartRequest {
    /// The new agent's id.
    pub agent_id: String,
    /// Its type.
    pub agent_type: String,
    /// The agent that starts it.
    pub parent: Option<String>,
    /// The call that opens it.
    pub parent_tool_use_id: Option<String>,
    /// The worker node its calls run on, when the start names one.
    pub node: Option<String>,
    /// The start was already decided by the permission stage (an `Agent` call, which may have
    /// been asked about and approved): `Agent(<type>)` rules are not consulted again.
    pub decided: bool,
}

/// Why `agent_start` or `agent_end` was refused. Display is the `error` line's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    /// The id names a live agent.
    #[error("agent_start: agent {0:?} already exists; end it first or choose another id")]
    Duplicate(String),
    /// The id has the form the `Agent` tool gives its subagents.
    #[error(
        "agent_start: agent id {0:?} is reserved: ids of the form agent-<number> name the subagents the Agent tool starts; choose another id"
    )]
    Reserved(String),
    /// `parent` is the agent's own id.
    #[error("agent_start: agent {0:?} names itself as its parent")]
    OwnParent(String),
    /// `parent` names no live agent.
    #[error(
        "agent_start: agent {agent:?}: unknown parent agent {parent:?} (start it first; an ended agent cannot have children)"
    )]
    UnknownParent {
        /// The agent being started.
        agent: String,
        /// The parent it named.
        parent: String,
    },
    /// Past the maximum depth.
    #[error(
        "agent_start: agent {agent:?} would be {depth} levels deep; at most {max} are allowed (settings toolrt.maxAgentDepth)"
    )]
    TooDeep {
        /// The agent being started.
        agent: String,
        /// Its depth.
        depth: u32,
        /// The limit.
        max: u32,
    },
    /// Too many agents alive.
    #[error(
        "agent_start: agent {agent:?}: {max} agents are alive already, the most toolrt keeps at once; end some first"
    )]
    TooMany {
        /// The agent being started.
        agent: String,
        /// The limit.
        max: usize,
    },
    /// An `Agent(<type>)` rule of the parent's chain refuses the type.
    #[error("agent_start: agent {agent:?} of type {agent_type:?} refused: {why}")]
    Refused {
        /// The agent being started.
        agent: String,
        /// Its type.
        agent_type: String,
        /// What refused it.
        why: String,
    },
    /// The agent would run on a worker node, but the session has none.
    #[error(
        "agent_start: agent {agent:?} would run its calls on worker node {node:?}, but this session has no worker nodes (serve --worker ADDR); it was not started"
    )]
    NoNodes {
        /// The agent being started.
        agent: String,
        /// The node its start, type or parent named.
        node: String,
    },
    /// `agent_end` of an id no live agent has.
    #[error("agent_end: unknown agent {0:?}")]
    Unknown(String),
}

/// Told when a scope starts and when scopes end: what keeps state per scope outside this
/// module (the built-in tools' file state, the dispatcher's parked calls) follows the table
/// without the table knowing it. The one way the table tells of an end.
pub(crate) trait ScopeListener: Send + Sync {
    /// A scope started (called before any of its calls can resolve it).
    fn started(&self, scope: &Scope);
    /// One end of scopes (an `agent_end`, the end of an opener, the end of input for one
    /// top-level scope) with every scope it ended, deepest first, each once; called after
    /// their tokens were cancelled. The calls of an ended scope see their tokens; this is for
    /// what a token does not reach by itself (per-scope state, calls parked for admission).
    fn ended(&self, scopes: &[Arc<Scope>]);
}

/// The live scopes, by agent id.
pub(crate) struct ScopeTable {
    scopes: DashMap<Arc<str>, Arc<Scope>>,
    live: AtomicUsize,
    types: Arc<AgentTypes>,
    /// The session's level: what a scope without a parent narrows.
    root: Level,
    /// Parent of every top-level scope's token.
    cancel: CancellationToken,
    next_key: AtomicU64,
    max_scopes: usize,
    /// Told of every start and end (set once, before any scope starts).
    listener: OnceLock<Arc<dyn ScopeListener>>,
    /// Whether the session has worker nodes: a scope placed on one cannot start without.
    has_nodes: bool,
}

impl std::fmt::Debug for ScopeTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopeTable")
            .field("live", &self.live.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl ScopeTable {
    /// A table for a session whose own rules and mode are `root`.
    pub(crate) fn new(types: Arc<AgentTypes>, root: Level) -> Self {
        Self {
            scopes: DashMap::new(),
            live: AtomicUsize::new(0),
            types,
            root,
            cancel: CancellationToken::new(),
            next_key: AtomicU64::new(1),
            max_scopes: MAX_SCOPES,
            listener: OnceLock::new(),
            has_nodes: false,
        }
    }

    /// The same table for a session with worker nodes (`serve --worker`): scopes may then be
    /// placed on one.
    pub(crate) fn with_nodes(mut self, has_nodes: bool) -> Self {
        self.has_nodes = has_nodes;
        self
    }

    /// Tells `listener` of every scope's start and every end of scopes from now on (the first
    /// listener set stays). Set before any scope starts: what follows the scopes is built
    /// after the table (the dispatcher holds the pipeline that holds the table).
    pub(crate) fn listen(&self, listener: Arc<dyn ScopeListener>) {
        let _ = self.listener.set(listener);
    }

    #[cfg(test)]
    /// The same table with another cap on live scopes (tests).
    pub(crate) fn with_max_scopes(mut self, max: usize) -> Self {
        self.max_scopes = max;
        self
    }

    #[cfg(test)]
    /// How many scopes are alive.
    pub(crate) fn len(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    /// The live scope of this agent id.
    pub(crate) fn resolve(&self, agent_id: &str) -> Option<Arc<Scope>> {
        self.scopes.get(agent_id).map(|s| s.value().clone())
    }

    #[cfg(test)]
    /// Cancels every scope (shutdown, SIGINT).
    pub(crate) fn cancel_all(&self) {
        self.cancel.cancel();
    }

    /// Ends every live scope, each top-level one with its subtree (end of input: no call can
    /// come for them any more). Returns each top-level id with the scopes it ended, deepest
    /// first.
    pub(crate) fn end_all(&self) -> Vec<(Arc<str>, Vec<Arc<Scope>>)> {
        let tops: Vec<Arc<str>> = self
            .scopes
            .iter()
            .filter(|s| s.parent.is_none())
            .map(|s| s.id.clone())
            .collect();
        tops.into_iter()
            .filter_map(|id| Some((id.clone(), self.end_scopes(&id).ok()?)))
            .collect()
    }

    /// The chain a scope of type `agent_type` under `parent` (None: the session) is decided by,
    /// and its tools: what `agent_start` computes, for `toolrt explain --agent-type` too.
    pub(crate) fn narrowed(
        &self,
        parent: Option<&Scope>,
        agent_type: &str,
    ) -> (Arc<Chain>, Option<Arc<ToolSet>>, Option<usize>) {
        let (parent_chain, parent_tools, parent_max) = match parent {
            Some(p) => (p.chain.clone(), p.tools.clone(), p.max_in_flight),
            None => (Arc::new(Chain::new(self.root.clone(), [])), None, None),
        };
        let Some(t) = self.types.get(agent_type) else {
            return (parent_chain, parent_tools, parent_max);
        };
        let above = parent_chain.innermost();
        let level = Level {
            policy: t.policy.clone().unwrap_or_else(|| above.policy.clone()),
            mode: narrow_mode(above.mode, t.mode),
            label: Arc::from(format!("agent type {:?}", &*t.name)),
        };
        let chain = Arc::new(parent_chain.below(level));
        let tools = narrow_tools(parent_tools.as_ref(), t.tools.as_ref());
        let max = match (parent_max, t.max_in_flight) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        (chain, tools, max)
    }

    /// Starts a scope. `opener` is the cancellation token of the call named by
    /// `parent_tool_use_id`, when that call is in flight: the scope's token is then its child
    /// (else its parent's child). Refused — nothing changes — when the id is live, the parent
    /// unknown or the agent itself, the depth or the number of scopes past its limit, or an
    /// `Agent(<type>)` deny or ask rule of the parent's chain covers the type.
    pub(crate) fn start(
        &self,
        req: StartRequest,
        opener: Option<&CancellationToken>,
    ) -> Result<Arc<Scope>, ScopeError> {
        let agent = req.agent_id;
        if !req.decided && is_agent_tool_id(&agent) {
            return Err(ScopeError::Reserved(agent));
        }
        if req.parent.as_deref() == Some(agent.as_str()) {
            return Err(ScopeError::OwnParent(agent));
        }
        let parent = match &req.parent {
            None => None,
            Some(p) => match self.resolve(p) {
                Some(s) if !s.has_ended() => Some(s),
                _ => {
                    return Err(ScopeError::UnknownParent {
                        agent,
                        parent: p.clone(),
                    });
                }
            },
        };
        let depth = parent.as_ref().map_or(1, |p| p.depth + 1);
        if depth > self.types.max_depth {
            return Err(ScopeError::TooDeep {
                agent,
                depth,
                max: self.types.max_depth,
            });
        }
        if !req.decided {
            self.gate(parent.as_deref(), &agent, &req.agent_type)?;
        }
        let (chain, tools, max_in_flight) = self.narrowed(parent.as_deref(), &req.agent_type);
        let node = (req.node.as_deref().map(Arc::from))
            .or_else(|| self.types.get(&req.agent_type)?.node.clone())
            .or_else(|| parent.as_ref()?.node.clone());
        if let Some(node) = &node
            && !self.has_nodes
        {
            return Err(ScopeError::NoNodes {
                agent,
                node: node.to_string(),
            });
        }
        let cancel = match (opener, &parent) {
            (Some(call), _) => call.child_token(),
            (None, Some(p)) => p.cancel.child_token(),
            (None, None) => self.cancel.child_token(),
        };
        // Counted before it is inserted, so racing starts never exceed the cap.
        if self.live.fetch_add(1, Ordering::AcqRel) >= self.max_scopes {
            self.live.fetch_sub(1, Ordering::AcqRel);
            return Err(ScopeError::TooMany {
                agent,
                max: self.max_scopes,
            });
        }
        let id: Arc<str> = Arc::from(agent.as_str());
        let scope = Arc::new(Scope {
            id: id.clone(),
            agent_type: Arc::from(req.agent_type.as_str()),
            parent: parent.clone(),
            depth,
            parent_tool_use_id: req.parent_tool_use_id.as_deref().map(Arc::from),
            tools,
            chain,
            max_in_flight,
            node,
            cancel,
            key: self.next_key.fetch_add(1, Ordering::Relaxed),
            ended: AtomicBool::new(false),
            tool_session: OnceLock::new(),
            children: Mutex::new(Vec::new()),
        });
        // The parent's lock is held across the insert, so its end cannot miss this child.
        let siblings = parent.as_ref().map(|p| p.lock_children());
        if parent.as_ref().is_some_and(|p| p.has_ended()) {
            self.live.fetch_sub(1, Ordering::AcqRel);
            return Err(ScopeError::UnknownParent {
                agent,
                parent: req.parent.unwrap_or_default(),
            });
        }
        match self.scopes.entry(id.clone()) {
            Entry::Occupied(_) => {
                self.live.fetch_sub(1, Ordering::AcqRel);
                return Err(ScopeError::Duplicate(agent));
            }
            Entry::Vacant(v) => {
                // Under the entry's lock: no call resolves the scope before its state exists.
                if let Some(listener) = self.listener.get() {
                    listener.started(&scope);
                }
                v.insert(scope.clone());
            }
        }
        if let Some(mut siblings) = siblings {
            siblings.push((id, scope.key));
        }
        Ok(scope)
    }

    /// `Agent(<type>)` rules of the parent's chain (the session's for a top-level agent): a
    /// deny refuses the type, and so does an ask, since nobody can be asked about an
    /// `agent_start` (the `Agent` tool's call is what asks).
    fn gate(
        &self,
        parent: Option<&Scope>,
        agent: &str,
        agent_type: &str,
    ) -> Result<(), ScopeError> {
        let input = json!({ "subagent_type": agent_type });
        let Value::Object(input) = input else {
            return Ok(());
        };
        let access = Access {
            subject: Subject::Subagent {
                field: "subagent_type",
            },
            allowed_by_default: false,
        };
        let decision = match parent {
            Some(p) => p.chain.recheck("Agent", access, &input),
            None => Chain::new(self.root.clone(), []).recheck("Agent", access, &input),
        };
        if decision.behavior == Behavior::Allow {
            return Ok(());
        }
        Err(ScopeError::Refused {
            agent: agent.to_string(),
            agent_type: agent_type.to_string(),
            why: decision.message(&format!("Agent({agent_type})")),
        })
    }

    #[cfg(test)]
    /// Ends a scope and every scope below it, deepest first: each is removed and its token
    /// cancelled (its unfinished calls see their cancellation). Returns the ids ended.
    pub(crate) fn end(&self, agent_id: &str) -> Result<Vec<Arc<str>>, ScopeError> {
        Ok(self
            .end_scopes(agent_id)?
            .into_iter()
            .map(|s| s.id.clone())
            .collect())
    }

    /// [`ScopeTable::end`], returning the scopes ended.
    pub(crate) fn end_scopes(&self, agent_id: &str) -> Result<Vec<Arc<Scope>>, ScopeError> {
        let Some(scope) = self.resolve(agent_id) else {
            return Err(ScopeError::Unknown(agent_id.to_string()));
        };
        let mut ended = Vec::new();
        self.end_tree(&scope, &mut ended);
        if ended.is_empty() {
            // Another end (the client's `agent_end`, the end of its opener) got there first.
            return Err(ScopeError::Unknown(agent_id.to_string()));
        }
        if let Some(parent) = &scope.parent {
            parent.lock_children().retain(|(_, k)| *k != scope.key);
        }
        if let Some(listener) = self.listener.get() {
            listener.ended(&ended);
        }
        Ok(ended)
    }

    fn end_tree(&self, scope: &Arc<Scope>, ended: &mut Vec<Arc<Scope>>) {
        let children = {
            let mut children = scope.lock_children();
            if scope.ended.swap(true, Ordering::AcqRel) {
                // Another end got here first.
                return;
            }
            std::mem::take(&mut *children)
        };
        for (id, key) in children {
            if let Some(child) = self.resolve(&id).filter(|c| c.key == key) {
                self.end_tree(&child, ended);
            }
        }
        if self
            .scopes
            .remove_if(&scope.id, |_, s| s.key == scope.key)
            .is_some()
        {
            self.live.fetch_sub(1, Ordering::AcqRel);
        }
        scope.cancel.cancel();
        ended.push(scope.clone());
    }
}

#[cfg(test)]
mod tests;
