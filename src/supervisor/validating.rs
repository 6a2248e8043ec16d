//! The validate steps of a call: its input checked, the tool's selection for its agent scope,
//! the tool's own validation (seeing the scope's rules), and an input rewritten later checked
//! again.

use std::sync::Arc;

use serde_json::Value;

use super::{Call, Checked, Pipeline, Stage};
use crate::call::{Outcome, Rejection, ToolCall};
use crate::session::Session;
use crate::validate::{Checks, Prepared, Whose};

impl Call<'_> {
    /// Whose call it is, for the validate stage: its tool state, and the session of its scope
    /// (the scope's rules, every level's) for the tool's own validation.
    pub(super) fn whose(&self, p: &Pipeline) -> Whose {
        Whose {
            state: self.state(),
            session: self.validation_session(p),
            scope: self.scope.clone(),
        }
    }

    /// The session the tool's own validation sees: its scope's, else the stage's own.
    pub(super) fn validation_session(&self, p: &Pipeline) -> Option<Arc<Session>> {
        (self.scope.as_ref()).map(|s| s.tool_session(&p.session))
    }
}

/// Resolve, coerce, schema; for a lone call also the tool's own validation (nothing to wait
/// for, so both halves in one request). Validation is short and never waits on anything
/// outside toolrt, so a cancel is looked at when it is done rather than raced against it.
pub(super) async fn validate(
    p: &Pipeline,
    c: &mut Call<'_>,
    call: ToolCall,
) -> Result<Checked, Rejection> {
    c.check_cancelled()?;
    c.lap.mark(Stage::Queue);
    if let Some(agent) = &call.agent_id {
        // Resolved once, at acceptance; a refusal here is the call's answer at its turn, like
        // a schema error. A scope that ended since cancelled the call (answered above).
        if c.scope.as_ref().is_none_or(|s| s.has_ended()) {
            return Ok(Err(unknown_agent(agent)));
        }
    }
    // With worker nodes the tool's own validation waits until the tool is known: a call
    // placed on a worker is validated there, where its files are (`own_validation`). In an
    // agent scope the validate stage checks the scope's selection of tools before the tool's
    // own validation, in the same request (the scope goes with `whose`).
    let checks = if c.gate.is_some() || p.placement.is_some() {
        Checks::Input
    } else {
        Checks::All
    };
    let mut checked = p.validator.prepare(call, checks, c.whose(p)).await?;
    if c.gate.is_none() && checks == Checks::Input {
        checked = match checked {
            Ok(prepared) => Box::pin(own_validation(p, c, prepared)).await?,
            rejected => rejected,
        };
    }
    c.check_cancelled()?;
    c.lap.mark(Stage::Validate);
    Ok(checked)
}

/// A call naming an agent that has no live scope does not run.
fn unknown_agent(agent: &str) -> Rejection {
    Rejection::new(
        Outcome::Denied,
        format!(
            "The call was not run: it names agent {agent:?}, which is unknown (never started with agent_start, or already ended)."
        ),
    )
}

/// The tool's own validation, here; skipped for a call that will run on a worker node, which
/// makes it there, against its own files and its own record of what was read.
pub(super) async fn own_validation(
    p: &Pipeline,
    c: &Call<'_>,
    prepared: Prepared,
) -> Result<Checked, Rejection> {
    if p.placement.is_some() && !prepared.entry.tool.awaits_io_only() {
        return Ok(Ok(prepared));
    }
    let session = c.validation_session(p);
    let (prepared, verdict) = p.validator.validate(prepared, session).await?;
    Ok(verdict.map(|()| prepared))
}

/// Checks an input rewritten by a hook or approved by the client again (coercion, schema, the
/// tool's validation); an invalid one blocks the call.
pub(super) async fn recheck_input(
    p: &Pipeline,
    c: &Call<'_>,
    prepared: &Prepared,
    input: Value,
    whose: &str,
) -> Result<Prepared, Rejection> {
    let checked = p
        .validator
        .recheck(prepared.entry.clone(), input, c.whose(p))
        .await?;
    checked.map_err(|problems| {
        Rejection::new(
            Outcome::Denied,
            format!(
                "The call was blocked: {whose} for {} is invalid:\n- {}",
                prepared.tool_name(),
                problems.join("\n- ")
            ),
        )
    })
}
