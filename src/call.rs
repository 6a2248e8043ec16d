//! The unit of work: one tool call in, exactly one result out.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One tool-use block emitted by a model.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct ToolCall {
    /// The caller's id for this call; every result names it as `tool_use_id`.
    pub id: String,
    /// The tool name as the model wrote it (may be an alias).
    pub name: String,
    /// The input object.
    #[serde(default)]
    pub input: Value,
    /// The agent whose call this is (the protocol's `agent_id`): the call belongs to that
    /// agent's scope. None is the session's own, root scope.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "shared_str")]
    pub agent_id: Option<Arc<str>>,
}

impl ToolCall {
    /// A call with the given id, name and input, of the root scope.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
            agent_id: None,
        }
    }

    /// The same call, made by agent `agent_id`.
    pub fn with_agent(mut self, agent_id: impl Into<Arc<str>>) -> Self {
        self.agent_id = Some(agent_id.into());
        self
    }
}

/// An optional shared string as an optional JSON string (serde's own impl for `Arc` needs the
/// `rc` feature, which would make every serde type in the build pay for this one field).
mod shared_str {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &Option<Arc<str>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_str(v),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Arc<str>>, D::Error> {
        Ok(Option::<String>::deserialize(d)?.map(Arc::from))
    }
}

/// The input object of a call, once it is known to be an object.
pub type Input = Map<String, Value>;

/// What happened to a call, exactly the `outcome` values of the wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The tool ran and succeeded.
    Success,
    /// The tool ran and reported an error (or the runtime failed it).
    Failed,
    /// No such tool in the effective registry.
    Unavailable,
    /// The input does not match the tool's schema after coercion.
    SchemaError,
    /// The tool's own validation refused the input.
    ValidationError,
    /// A permission decision, rule, mode, hook or the client said no.
    Denied,
    /// A hook stopped processing.
    Stopped,
    /// A hook deferred the call; nothing ran.
    Deferred,
    /// The call was cancelled.
    Cancelled,
    /// The tool ran past its time limit.
    TimedOut,
}

impl Outcome {
    /// `is_error` as the protocol defines it: false only for `success` and `deferred`.
    pub fn is_error(self) -> bool {
        !matches!(self, Outcome::Success | Outcome::Deferred)
    }

    /// The wire name of this outcome.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failed => "failed",
            Outcome::Unavailable => "unavailable",
            Outcome::SchemaError => "schema_error",
            Outcome::ValidationError => "validation_error",
            Outcome::Denied => "denied",
            Outcome::Stopped => "stopped",
            Outcome::Deferred => "deferred",
            Outcome::Cancelled => "cancelled",
            Outcome::TimedOut => "timed_out",
        }
    }
}

/// The one result every accepted call gets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub tool_use_id: String,
    /// What the model sees: the output, or words it can act on.
    pub content: String,
    /// False for `success` and `deferred`, true otherwise.
    pub is_error: bool,
    /// What happened.
    pub outcome: Outcome,
    /// A file holding the complete output when `content` shows only part of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_file: Option<PathBuf>,
    /// Wall time from acceptance to result, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// An MCP result's content blocks, when one of them is not text (docs/PROTOCOL.md, "MCP
    /// results"); `content` describes each in a line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_blocks: Option<Vec<Value>>,
    /// An MCP result's `structuredContent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The call's `agent_id`, echoed when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "shared_str")]
    pub agent_id: Option<Arc<str>>,
    /// The worker node that executed the call, when it ran on one (a toolrt extension).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "shared_str")]
    pub node: Option<Arc<str>>,
}

impl ToolResult {
    /// A result with the given outcome and content; `is_error` follows the outcome.
    pub fn new(
        tool_use_id: impl Into<String>,
        outcome: Outcome,
        content: impl Into<String>,
    ) -> Self {
        Self {
            tool_use_id: tool_use_id.into(),
            content: content.into(),
            is_error: outcome.is_error(),
            outcome,
            output_file: None,
            duration_ms: None,
            content_blocks: None,
            structured_content: None,
            agent_id: None,
            node: None,
        }
    }
}

/// Why a call ends before it produces a result of its own: the outcome, and words the model can
/// act on. Every step of a call's path answers with this one type (an unknown tool, a schema or
/// validation error, a denial, a hook's stop, a cancellation, a stage that could not answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// What happened.
    pub outcome: Outcome,
    /// The explanation.
    pub content: String,
}

impl Rejection {
    /// A rejection with this outcome and content.
    pub fn new(outcome: Outcome, content: impl Into<String>) -> Self {
        Self {
            outcome,
            content: content.into(),
        }
    }

    /// The call was cancelled before its tool ran.
    pub fn cancelled() -> Self {
        Self::new(Outcome::Cancelled, "The call was cancelled before it ran.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_error_follows_outcome() {
        for (o, e) in [
            (Outcome::Success, false),
            (Outcome::Deferred, false),
            (Outcome::Failed, true),
            (Outcome::Unavailable, true),
            (Outcome::SchemaError, true),
            (Outcome::ValidationError, true),
            (Outcome::Denied, true),
            (Outcome::Stopped, true),
            (Outcome::Cancelled, true),
            (Outcome::TimedOut, true),
        ] {
            assert_eq!(o.is_error(), e, "{o:?}");
            assert_eq!(serde_json::to_value(o).unwrap(), Value::from(o.as_str()));
        }
    }
}
