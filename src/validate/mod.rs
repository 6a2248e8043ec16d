//! Validate stage: resolve → alias → registry → coerce → schema → the tool's own validation.
//!
//! The stage has two halves because a call of a batch must not be judged on a state from before
//! the earlier calls of its batch ran. [`check`] (resolve, alias, registry, coercion, schema,
//! concurrency-safety) depends on nothing but the call, so it may run before the call's turn;
//! [`validate_tool`] (the tool's own validation: read-before-edit, freshness, Edit's match count,
//! task ids) looks at the session and the files, so it runs at the call's turn. [`prepare`] is
//! both at once, for a call with nothing to wait for.
//!
//! These are pure functions; [`ValidatorActor`] owns the registry and runs them for the
//! supervisors; [`Validator`] is the typed handle they call.

pub(crate) mod coerce;
pub(crate) mod schema;

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::Value;

use crate::call::{Input, Outcome, ToolCall};
use crate::protocol::json_type;
use crate::registry::{Registry, Resolution, ToolEntry};
use crate::session::Session;
use crate::stage::{StageFault, request};
use crate::tool::{StateKey, Verdict};

/// A call that passed every check up to hooks: its tool, and its coerced, normalised input.
#[derive(Debug, Clone)]
pub(crate) struct Prepared {
    /// The tool (canonical).
    pub entry: Arc<ToolEntry>,
    /// The input after coercion and normalisation.
    pub input: Input,
    /// Whether this call may run beside other concurrency-safe calls.
    pub concurrency_safe: bool,
    /// Whose tool state the tool's own validation looks at (the call's scope's, else the
    /// session's).
    pub state: StateKey,
    /// The paths the permission decision judged, once it is made ([`ToolContext::decided_paths`]).
    ///
    /// [`ToolContext::decided_paths`]: crate::tool::ToolContext::decided_paths
    pub decided_paths: Option<Arc<[std::path::PathBuf]>>,
}

impl Prepared {
    /// The canonical tool name.
    pub(crate) fn tool_name(&self) -> &str {
        self.entry.tool.name()
    }
}

/// Why a call stops at this stage (`unavailable`, `schema_error` or `validation_error`, with
/// words the model can act on): the crate's one rejection type.
pub(crate) use crate::call::Rejection;

/// How much of the validate stage one request runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Checks {
    /// Only what cannot depend on other calls: [`check`].
    Input,
    /// Everything: [`prepare`].
    All,
}

/// Runs the whole validate stage on a call: [`check`], then [`validate_tool`]. The stage actor
/// runs the two apart; this one-call form is for the bench's inline floor.
#[cfg(feature = "cli")]
pub(crate) async fn prepare(
    registry: &Registry,
    session: &Session,
    call: ToolCall,
) -> Result<Prepared, Rejection> {
    let prepared = check(registry, session, call)?;
    validate_tool(&prepared, session).await?;
    Ok(prepared)
}

/// The half of the validate stage that depends on nothing but the call: resolve, alias,
/// registry, coercion, schema, and whether the call is concurrency-safe.
pub(crate) fn check(
    registry: &Registry,
    session: &Session,
    call: ToolCall,
) -> Result<Prepared, Rejection> {
    let entry = match registry.resolve(&call.name) {
        Resolution::Found(entry) => entry,
        Resolution::Unavailable { canonical } => {
            let available = registry.available();
            let list = if available.is_empty() {
                "none".to_string()
            } else {
                available.join(", ")
            };
            let what = match canonical {
                Some(c) if c != call.name => format!("{} (alias of {c})", call.name),
                _ => call.name.clone(),
            };
            return Err(Rejection {
                outcome: Outcome::Unavailable,
                content: format!("No such tool available: {what}. Available tools: {list}"),
            });
        }
    };
    let input = check_input(&entry, session, call.input).map_err(|problems| Rejection {
        outcome: Outcome::SchemaError,
        content: format!(
            "Invalid input for {}:\n- {}",
            entry.tool.name(),
            problems.join("\n- ")
        ),
    })?;
    let concurrency_safe = entry.tool.is_concurrency_safe(&input);
    Ok(Prepared {
        entry,
        input,
        concurrency_safe,
        state: StateKey::SESSION,
        decided_paths: None,
    })
}

/// The half of the validate stage that looks at the session and the files: the tool's own
/// validation. Run at the call's turn, after every earlier call it could depend on.
pub(crate) async fn validate_tool(prepared: &Prepared, session: &Session) -> Result<(), Rejection> {
    verdict_of(prepared, session)
        .decided()
        .await
        .map_err(rejection)
}

/// What the tool's own validation says of a prepared call.
fn verdict_of(prepared: &Prepared, session: &Session) -> Verdict {
    prepared
        .entry
        .tool
        .validate(&prepared.input, session, prepared.state)
}

/// A refusal by the tool's own validation.
fn rejection(message: String) -> Rejection {
    Rejection::new(Outcome::ValidationError, message)
}

/// Coerces, normalises and schema-checks an input for a known tool; on failure, one line per
/// problem. Used for the model's input and again for inputs rewritten by hooks or the client.
pub(crate) fn check_input(
    entry: &ToolEntry,
    session: &Session,
    input: Value,
) -> Result<Input, Vec<String>> {
    let mut input = match input {
        Value::Object(map) => Value::Object(map),
        // A whole input sent as a JSON-encoded string (read as strictly as a message).
        Value::String(s) => match crate::protocol::json::from_str(&s) {
            Ok(Value::Object(map)) => Value::Object(map),
            Err(e) if crate::protocol::json::is_refusal(&e) => {
                return Err(vec![format!("input (a JSON-encoded string): {e}")]);
            }
            // OpenAI's `arguments` reach here as sent: say why the string is not an input.
            Err(e) => {
                return Err(vec![format!(
                    "input: expected an object, got string (not valid JSON: {e})"
                )]);
            }
            Ok(other) => {
                return Err(vec![format!(
                    "input: expected an object, got string (JSON holding {})",
                    json_type(&other)
                )]);
            }
        },
        other => {
            return Err(vec![format!(
                "input: expected an object, got {}",
                json_type(&other)
            )]);
        }
    };
    // A value over its field's length limit is refused before coercion and normalisation
    // could copy it: a huge field costs no more than the line it came in.
    if let Value::Object(map) = &input {
        let problems = schema::oversized(&entry.shape, map);
        if !problems.is_empty() {
            return Err(problems);
        }
    }
    coerce::coerce(&mut input, &entry.shape);
    if let Value::Object(map) = &mut input {
        entry.tool.normalize(map, session);
    }
    let problems = schema::problems(&entry.validator, &input);
    if !problems.is_empty() {
        return Err(problems);
    }
    match input {
        Value::Object(map) => Ok(map),
        _ => Err(vec!["input: expected an object".into()]),
    }
}

/// Messages of the validate stage.
pub(crate) enum ValidateMsg {
    /// Run [`check`] (`Checks::Input`) or [`prepare`] (`Checks::All`) on a call whose tool
    /// state is the given one.
    Prepare(
        ToolCall,
        Checks,
        Whose,
        RpcReplyPort<Result<Prepared, Rejection>>,
    ),
    /// Run [`validate_tool`] on a checked call; the call comes back with the verdict.
    Validate(
        Prepared,
        Option<Arc<Session>>,
        RpcReplyPort<(Prepared, Result<(), Rejection>)>,
    ),
    /// Check a rewritten input for a tool: coercion, schema, the tool's validation (with the
    /// given tool state).
    Recheck(
        Arc<ToolEntry>,
        Value,
        Whose,
        RpcReplyPort<Result<Prepared, Vec<String>>>,
    ),
}

/// Whose call is validated: its tool state, and the session its tool's own validation sees
/// (an agent scope's, whose guard holds every level's rules; `None`: the stage's own). A
/// validation that looked past the scope's deny rules would tell the model what a denied file
/// holds ("not found" or not).
#[derive(Clone)]
pub(crate) struct Whose {
    /// The call's tool state.
    pub(crate) state: StateKey,
    /// The session the tool's own validation sees, if not the stage's.
    pub(crate) session: Option<Arc<Session>>,
    /// The agent scope whose selection of tools the call must be in, checked before the tool's
    /// own validation (which looks at files: a tool the agent lacks must tell it nothing), in
    /// the same request.
    pub(crate) scope: Option<Arc<crate::scope::Scope>>,
}

// A local-only message: ractor's `cluster` feature (ractor_cluster) asks each message type
// to say whether it crosses nodes; this one never does.
impl ractor::Message for ValidateMsg {}

/// The validate stage actor. Its state is read-only, so its handler never awaits.
pub(crate) struct ValidatorActor;

/// What the validate actor owns.
pub(crate) struct ValidatorState {
    registry: Arc<Registry>,
    session: Arc<Session>,
}

impl Actor for ValidatorActor {
    type Msg = ValidateMsg;
    type State = ValidatorState;
    type Arguments = (Arc<Registry>, Arc<Session>);

    async fn pre_start(
        &self,
        _me: ActorRef<ValidateMsg>,
        (registry, session): Self::Arguments,
    ) -> Result<ValidatorState, ActorProcessingErr> {
        Ok(ValidatorState { registry, session })
    }

    async fn handle(
        &self,
        _me: ActorRef<ValidateMsg>,
        msg: ValidateMsg,
        state: &mut ValidatorState,
    ) -> Result<(), ActorProcessingErr> {
        // Resolution, coercion and the schema are quick and pure, and so is most tools' own
        // validation: answered here. A validation that has file work to do answers later, from
        // a task of its own, while this actor takes the next call.
        match msg {
            ValidateMsg::Prepare(call, checks, whose, reply) => {
                let checked = check(&state.registry, &state.session, call).map(|mut p| {
                    p.state = whose.state;
                    p
                });
                let checked = match (checked, &whose.scope) {
                    (Ok(p), Some(scope)) if !scope.may_use(&p.entry.name) => Err(Rejection::new(
                        Outcome::Unavailable,
                        scope.unavailable(&p.entry.name),
                    )),
                    (checked, _) => checked,
                };
                let prepared = match checked {
                    Ok(prepared) if checks == Checks::All => prepared,
                    checked => {
                        let _ = reply.send(checked);
                        return Ok(());
                    }
                };
                let session = whose.session.as_ref().unwrap_or(&state.session);
                match verdict_of(&prepared, session) {
                    Verdict::Now(verdict) => {
                        let _ = reply.send(verdict.map(|()| prepared).map_err(rejection));
                    }
                    Verdict::Later(verdict) => {
                        tokio::spawn(async move {
                            let verdict = verdict.await.map(|()| prepared).map_err(rejection);
                            let _ = reply.send(verdict);
                        });
                    }
                }
            }
            ValidateMsg::Validate(prepared, session, reply) => {
                match verdict_of(&prepared, session.as_ref().unwrap_or(&state.session)) {
                    Verdict::Now(verdict) => {
                        let _ = reply.send((prepared, verdict.map_err(rejection)));
                    }
                    Verdict::Later(verdict) => {
                        tokio::spawn(async move {
                            let verdict = verdict.await.map_err(rejection);
                            let _ = reply.send((prepared, verdict));
                        });
                    }
                }
            }
            ValidateMsg::Recheck(entry, input, whose, reply) => {
                let input = match check_input(&entry, &state.session, input) {
                    Ok(input) => input,
                    Err(problems) => {
                        let _ = reply.send(Err(problems));
                        return Ok(());
                    }
                };
                let session = whose.session.as_ref().unwrap_or(&state.session);
                let verdict = entry.tool.validate(&input, session, whose.state);
                let concurrency_safe = entry.tool.is_concurrency_safe(&input);
                let prepared = Prepared {
                    entry,
                    input,
                    concurrency_safe,
                    state: whose.state,
                    decided_paths: None,
                };
                let answer =
                    |verdict: Result<(), String>| verdict.map(|()| prepared).map_err(|m| vec![m]);
                match verdict {
                    Verdict::Now(verdict) => {
                        let _ = reply.send(answer(verdict));
                    }
                    Verdict::Later(verdict) => {
                        tokio::spawn(async move {
                            let _ = reply.send(answer(verdict.await));
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

/// Typed handle to the validate stage.
#[derive(Clone)]
pub(crate) struct Validator {
    actor: ActorRef<ValidateMsg>,
}

impl Validator {
    /// Spawns the stage actor.
    pub(crate) async fn spawn(
        registry: Arc<Registry>,
        session: Arc<Session>,
    ) -> Result<(Self, tokio::task::JoinHandle<()>), ractor::SpawnErr> {
        let (actor, handle) = Actor::spawn(None, ValidatorActor, (registry, session)).await?;
        Ok((Self { actor }, handle))
    }

    /// Resolve, coerce and schema-check a call, and with `Checks::All` also run the tool's own
    /// validation, for the call's scope, else the session (`whose`).
    pub(crate) async fn prepare(
        &self,
        call: ToolCall,
        checks: Checks,
        whose: Whose,
    ) -> Result<Result<Prepared, Rejection>, StageFault> {
        request("validate", &self.actor, |port| {
            ValidateMsg::Prepare(call, checks, whose, port)
        })
        .await
    }

    /// The tool's own validation of a call checked with `Checks::Input`, at its turn, seeing
    /// `session` (its scope's) if given.
    pub(crate) async fn validate(
        &self,
        prepared: Prepared,
        session: Option<Arc<Session>>,
    ) -> Result<(Prepared, Result<(), Rejection>), StageFault> {
        request("validate", &self.actor, |port| {
            ValidateMsg::Validate(prepared, session, port)
        })
        .await
    }

    /// Check an input rewritten by a hook or the client, for the call's scope, else the
    /// session (`whose`).
    pub(crate) async fn recheck(
        &self,
        entry: Arc<ToolEntry>,
        input: Value,
        whose: Whose,
    ) -> Result<Result<Prepared, Vec<String>>, StageFault> {
        request("validate", &self.actor, |port| {
            ValidateMsg::Recheck(entry, input, whose, port)
        })
        .await
    }

    /// Stops the actor.
    pub(crate) fn stop(&self) {
        self.actor.stop(None);
    }
}
