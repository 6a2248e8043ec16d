//! What every supervisor shares: the stage handles, the session, the way out, and the table of
//! calls waiting for the client's permission answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use dashmap::DashMap;
use tokio::sync::oneshot;

use super::StageClock;
use crate::budget::Budget;
use crate::client_waits::ClientWaits;
use crate::emit::Emitter;
use crate::execute::{Executor, Placement};
use crate::hooks::Hooks;
use crate::otel::Tracer;
use crate::permission::{Mode, Permission};
use crate::protocol::PermissionResponse;
use crate::scope::ScopeTable;
use crate::session::Session;
use crate::slots::{ExecSlots, ScopeLimits};
use crate::validate::Validator;

/// What to do when the decision is *ask*.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskPolicy {
    /// Send a `permission_request` and wait for the client.
    Client,
    /// Nobody to ask (`toolrt run`, `--permission-prompt none`): deny.
    Deny,
}

/// The handles of the stage actors a pipeline drives.
pub(crate) struct Stages {
    /// Validate stage.
    pub validator: Validator,
    /// Hook stage.
    pub hooks: Hooks,
    /// Permission stage.
    pub permission: Permission,
    /// Execute stage.
    pub executor: Executor,
    /// Output-budget stage.
    pub budget: Budget,
}

/// How a pipeline treats every call.
#[derive(Clone)]
pub(crate) struct PipelineOptions {
    /// Calls executing at once (`--max-in-flight`).
    pub max_in_flight: usize,
    /// The permission mode in force.
    pub mode: Mode,
    /// What an ask becomes.
    pub ask_policy: AskPolicy,
    /// Where stage timings go, when someone measures (`toolrt bench`).
    pub clock: Option<Arc<dyn StageClock>>,
    /// Each scope's own limit of execution slots (its agent type's `maxInFlight`).
    pub scope_limits: ScopeLimits,
    /// The live agent scopes.
    pub scopes: Arc<ScopeTable>,
    /// Where calls' spans go, when they are traced (OpenTelemetry); None costs one branch.
    pub tracer: Option<Arc<Tracer>>,
    /// Where execute steps may run instead of here (worker nodes); None: always here.
    pub placement: Option<Arc<dyn Placement>>,
}

/// Everything a supervisor needs: the stage handles and the session-wide state. Shared by all
/// calls of a runtime.
pub(crate) struct Pipeline {
    /// Validate stage.
    pub validator: Validator,
    /// Hook stage.
    pub hooks: Hooks,
    /// Permission stage.
    pub permission: Permission,
    /// Execute stage.
    pub executor: Executor,
    /// Output-budget stage.
    pub budget: Budget,
    /// Session state.
    pub session: Arc<Session>,
    /// The way out.
    pub emitter: Emitter,
    /// Where tools' progress updates go (the way out, as `progress` events).
    pub progress: Arc<dyn crate::tool::ProgressTarget>,
    /// Execution slots (`--max-in-flight`), shared round-robin across scopes.
    pub exec_slots: Arc<ExecSlots>,
    /// The permission mode in force.
    pub mode: Mode,
    /// What an ask becomes.
    pub ask_policy: AskPolicy,
    /// Where stage timings go, when someone measures (`toolrt bench`); None costs one branch.
    pub clock: Option<Arc<dyn StageClock>>,
    /// Whether debug logging was on when the pipeline was built: each call then logs its stage
    /// timings. Decided once, so a call without it pays one branch.
    pub debug_log: bool,
    /// The live agent scopes: a call with an `agent_id` is decided in its scope.
    pub scopes: Arc<ScopeTable>,
    /// Where calls' spans go, when they are traced (OpenTelemetry); None costs one branch.
    pub tracer: Option<Arc<Tracer>>,
    /// Where execute steps may run instead of here (worker nodes); None: always here.
    pub placement: Option<Arc<dyn Placement>>,
    pub(super) asks: Asks,
}

/// The calls waiting for the client's permission answer, by request id.
pub(super) struct Asks {
    pub(super) waiting: DashMap<String, oneshot::Sender<PermissionResponse>>,
    pub(super) closed: AtomicBool,
    pub(super) seq: AtomicU64,
    /// How many calls wait for an answer only the client can give (a permission response). The
    /// server's reader never stops reading input while this is above zero.
    pub(super) client_waits: Arc<ClientWaits>,
}

impl Pipeline {
    /// Assembles a pipeline from its stages.
    pub(crate) fn new(
        stages: Stages,
        session: Arc<Session>,
        emitter: Emitter,
        options: PipelineOptions,
    ) -> Self {
        let Stages {
            validator,
            hooks,
            permission,
            executor,
            budget,
        } = stages;
        Self {
            validator,
            hooks,
            permission,
            executor,
            budget,
            session,
            progress: Arc::new(emitter.clone()),
            emitter,
            exec_slots: ExecSlots::new(options.max_in_flight, options.scope_limits),
            mode: options.mode,
            ask_policy: options.ask_policy,
            clock: options.clock,
            debug_log: tracing::enabled!(tracing::Level::DEBUG),
            scopes: options.scopes,
            tracer: options.tracer,
            placement: options.placement,
            asks: Asks {
                waiting: DashMap::new(),
                closed: AtomicBool::new(false),
                seq: AtomicU64::new(1),
                client_waits: Arc::default(),
            },
        }
    }

    /// The count of calls waiting for the client, shared with other waits for it (a client
    /// tool's `execute`) and watched by the server's reader.
    pub(crate) fn client_waits(&self) -> &Arc<ClientWaits> {
        &self.asks.client_waits
    }

    /// Routes a client's permission answer to the call waiting for it. False if no call waits
    /// under that request id.
    pub(crate) fn answer_permission(&self, response: PermissionResponse) -> bool {
        match self.asks.waiting.remove(&response.request_id) {
            Some((_, tx)) => tx.send(response).is_ok(),
            None => false,
        }
    }

    /// No more answers can come (the client closed its input): every waiting and future ask is
    /// denied.
    pub(crate) fn close_asks(&self) {
        self.asks.closed.store(true, Ordering::SeqCst);
        let ids: Vec<String> = self.asks.waiting.iter().map(|e| e.key().clone()).collect();
        for id in ids {
            // Dropping the sender wakes the waiting call with "no answer".
            self.asks.waiting.remove(&id);
        }
    }

    /// Gives back what a burst of asks grew (for when nothing is in flight).
    pub(crate) fn shrink(&self) {
        self.asks.waiting.shrink_to_fit();
    }

    /// Stops every stage actor.
    pub(crate) fn stop(&self) {
        self.validator.stop();
        self.hooks.stop();
        self.permission.stop();
        self.executor.stop();
        self.budget.stop();
    }
}
