//! The NDJSON wire protocol (docs/PROTOCOL.md): messages in, messages out, and how one input
//! line becomes one message or a precise error.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::call::{ToolCall, ToolResult};

pub(crate) mod agents;
pub(crate) mod api;
pub(crate) mod client_tools;
pub(crate) mod json;
mod parse;
mod result_line;

pub use agents::AgentStart;
pub(crate) use api::{ApiTurn, parse_line_in};
pub(crate) use client_tools::over_long_result_id;
pub use client_tools::{ClientToolSpec, ExecuteContent, ExecuteResult};
pub use parse::parse_line;

/// Longest id (a call's, a batch's, a request's) and tool name a message may carry, in bytes.
/// Ids come back in every result and event; a longer one is refused with an `error` line.
pub(crate) const MAX_ID_BYTES: usize = 256;

/// Longest `message` a `permission_response` may carry, in bytes.
pub(crate) const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// The protocol version `hello` reports (docs/PROTOCOL.md): additions keep it, changes bump it.
pub(crate) const PROTOCOL_VERSION: u32 = 1;

/// A message from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientMessage {
    /// One call, run as a batch of one.
    ToolUse(ToolCall),
    /// The calls of one model turn.
    Batch {
        /// The batch id, named by `batch_start` / `batch_end` and `cancel {batch}`.
        id: String,
        /// The calls, in request order.
        calls: Vec<ToolCall>,
    },
    /// Cancel one call or every unfinished call of a batch.
    Cancel(CancelTarget),
    /// The answer to a `permission_request`.
    PermissionResponse(PermissionResponse),
    /// Restore the files changed by a call and every later call (toolrt extension).
    Rewind {
        /// The `tool_use_id` of the first call to undo.
        to: String,
    },
    /// Name the session hooks are told about (toolrt extension): `session_id` and
    /// `transcript_path` in every later hook's input.
    Session {
        /// The session id; `None` keeps the current one.
        session_id: Option<String>,
        /// The transcript path; `None` keeps the current one.
        transcript_path: Option<String>,
    },
    /// Accept nothing more, finish what is in flight, exit.
    Shutdown,
    /// Ask what toolrt this is: answered by [`ServerMessage::Hello`].
    Hello {
        /// The client's name and version, for logs.
        client: Option<String>,
    },
    /// Add tools the client executes itself (each call reaches it as an `execute`): all of
    /// them, or none.
    RegisterTools {
        /// The tools, as described.
        tools: Vec<ClientToolSpec>,
    },
    /// Remove client tools registered earlier: all of them, or none.
    UnregisterTools {
        /// Their names.
        names: Vec<String>,
    },
    /// The answer to an `execute`.
    ExecuteResult(ExecuteResult),
    /// Start an agent's scope.
    AgentStart(AgentStart),
    /// Ask for the tool definitions in a format (None: the session's `--format`).
    ListTools {
        /// Whose shape.
        format: Option<crate::formats::Format>,
    },
    /// One model turn's tool calls in a model API's shape: run as one batch, answered by one
    /// message in that shape.
    ApiTurn(ApiTurn),
    /// End an agent's scope, and every scope below it.
    AgentEnd {
        /// The agent.
        agent_id: String,
        /// The agent's final answer, as its model wrote it: SubagentStop hooks receive it as
        /// `last_assistant_message` (toolrt sees no model messages of its own).
        last_assistant_message: Option<String>,
    },
}

/// What a `cancel` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelTarget {
    /// One call, by its id.
    Call(String),
    /// Every unfinished call of a batch.
    Batch(String),
}

/// The client's answer to a permission request.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionResponse {
    /// The `request_id` of the `permission_request` answered.
    pub request_id: String,
    /// Allow or deny.
    pub allow: bool,
    /// A replacement input (allow only).
    pub updated_input: Option<Map<String, Value>>,
    /// Words for the model (deny).
    pub message: Option<String>,
}

/// A message to the client. Serialises to exactly one JSON object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    /// The one result of a call.
    ToolResult(ToolResult),
    /// The decision was ask: the call waits for a `permission_response`.
    PermissionRequest {
        /// Id to answer with.
        request_id: String,
        /// The call waiting.
        tool_use_id: String,
        /// Canonical tool name.
        tool_name: String,
        /// The input the call would run with.
        input: Value,
        /// Why it asks.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The agent whose call it is, for a call made in an agent scope.
        #[serde(skip_serializing_if = "Option::is_none")]
        agent_id: Option<Arc<str>>,
    },
    /// A lifecycle event; `body` holds `event` and its fields.
    Event(EventBody),
    /// A call of a client tool is due: the client runs it and answers `execute_result`.
    Execute {
        /// Id to answer with.
        request_id: String,
        /// The call.
        tool_use_id: String,
        /// The tool's canonical name.
        name: String,
        /// The input, as checked, hooked and approved.
        input: Value,
        /// The agent whose call it is (for the `Agent` tool: the new subagent's id).
        #[serde(skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
    },
    /// toolrt no longer waits for this `execute` (the call was cancelled or timed out): stop
    /// working on it; an answer now gets an `error` line.
    ExecuteCancel {
        /// The `request_id` of the `execute`.
        request_id: String,
    },
    /// The answer to `hello`: what the client talks to.
    Hello {
        /// [`PROTOCOL_VERSION`].
        protocol: u32,
        /// toolrt's version.
        version: String,
        /// The tools of the effective registry, by canonical name.
        tools: Vec<String>,
        /// The limits in force (admission, line length, output budget, Read).
        limits: Value,
    },
    /// The answer to `list_tools`: `format`, `tools`, and `non_strict` / `skipped` when
    /// some tools are listed non-strict or left out.
    Tools(EventBody),
    /// A turn's results as one Anthropic `user` message: `id`, `message`, `outcomes`.
    AnthropicResults(EventBody),
    /// A turn's results as Chat Completions `tool` messages: `id`, `items`, `outcomes`.
    OpenaiChatResults(EventBody),
    /// A turn's results as Responses `function_call_output` items: `id`, `items`, `outcomes`.
    OpenaiResponsesResults(EventBody),
    /// An input line that is not valid JSON or not a valid message, or a message refused.
    Error {
        /// What was wrong.
        message: String,
        /// 1-based input line number.
        #[serde(skip_serializing_if = "Option::is_none")]
        line: Option<u64>,
        /// A short machine-readable reason, when there is one: `busy` (a call line refused
        /// because toolrt is full), `duplicate_id`, `shutting_down`.
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<&'static str>,
        /// The call ids that were not accepted because of this error.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        ids: Vec<String>,
    },
}

/// The fields of an `event` message, flattened beside `"type": "event"`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct EventBody(pub Map<String, Value>);

impl ServerMessage {
    /// An `error` line with this message, about input line `line` when there is one.
    pub fn error(message: impl Into<String>, line: Option<u64>) -> Self {
        ServerMessage::Error {
            message: message.into(),
            line,
            code: None,
            ids: Vec::new(),
        }
    }

    /// An event named `name` with the given extra fields (an object).
    pub fn event(name: &str, fields: Value) -> Self {
        let mut body = Map::new();
        body.insert("event".into(), Value::from(name));
        if let Value::Object(extra) = fields {
            body.extend(extra);
        }
        ServerMessage::Event(EventBody(body))
    }

    /// The answer to a turn in `format`'s shape: `{id, message | items, outcomes}`, the
    /// results in the turn's order.
    pub fn api_results(
        format: crate::formats::Format,
        id: &str,
        results: &[&crate::call::ToolResult],
    ) -> Self {
        use crate::formats::Format;
        let mut body = Map::new();
        body.insert("id".into(), Value::from(id));
        let key = if format == Format::Anthropic {
            "message"
        } else {
            "items"
        };
        body.insert(key.into(), crate::formats::results_body(format, results));
        body.insert("outcomes".into(), crate::formats::outcomes(results));
        let body = EventBody(body);
        match format {
            Format::Anthropic => ServerMessage::AnthropicResults(body),
            Format::OpenAiChat => ServerMessage::OpenaiChatResults(body),
            Format::OpenAiResponses | Format::Native => ServerMessage::OpenaiResponsesResults(body),
        }
    }

    /// The event name, for events.
    pub fn event_name(&self) -> Option<&str> {
        match self {
            ServerMessage::Event(EventBody(b)) => b.get("event").and_then(Value::as_str),
            _ => None,
        }
    }

    /// Serialise as one NDJSON line (with the trailing newline).
    pub fn to_line(&self) -> Vec<u8> {
        if let ServerMessage::ToolResult(result) = self
            && let Some(line) = result_line::plain(result)
        {
            return line;
        }
        let mut buf = Vec::with_capacity(128);
        // Serialising these types cannot fail: every map key is a string.
        if serde_json::to_writer(&mut buf, self).is_err() {
            buf.clear();
            buf.extend_from_slice(
                br#"{"type":"error","message":"internal: unserialisable message"}"#,
            );
        }
        buf.push(b'\n');
        buf
    }
}

/// Why an input line is not a message. `Display` is the `error` line's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// Not JSON at all.
    #[error("invalid JSON: {0}")]
    Json(String),
    /// JSON, but not an object.
    #[error("expected a JSON object, got {0}")]
    NotObject(&'static str),
    /// No `type`, or a `type` we do not know.
    #[error("{0}")]
    Type(String),
    /// An object repeats a key, or the message holds too many values: refused whole.
    #[error("{0}; the message was refused")]
    Refused(String),
    /// A field is missing or has the wrong type.
    #[error("{message}: field `{field}`: {expected}")]
    Field {
        /// Which message type.
        message: &'static str,
        /// The field path, e.g. `calls[2].id`.
        field: String,
        /// What was expected.
        expected: String,
    },
}

/// What is wrong with an agent id, if anything: like a call id it is non-empty and at most
/// [`MAX_ID_BYTES`] long; it also holds no control characters, since it is echoed in results
/// and written into logs.
pub(crate) fn agent_id_problem(id: &str) -> Option<String> {
    if id.is_empty() {
        Some("must not be empty".into())
    } else if id.len() > MAX_ID_BYTES {
        Some(format!(
            "longer than {MAX_ID_BYTES} bytes (got {})",
            id.len()
        ))
    } else if id.chars().any(char::is_control) {
        Some("must not contain control characters".into())
    } else {
        None
    }
}

fn string_field(
    obj: &Map<String, Value>,
    message: &'static str,
    field: &str,
    prefix: &str,
) -> Result<String, LineError> {
    match obj.get(field) {
        Some(Value::String(s)) => {
            check_len(message, &format!("{prefix}{field}"), s, MAX_ID_BYTES)?;
            Ok(s.clone())
        }
        Some(other) => Err(field_err(
            message,
            &format!("{prefix}{field}"),
            format!("expected a string, got {}", json_type(other)),
        )),
        None => Err(field_err(
            message,
            &format!("{prefix}{field}"),
            "missing (expected a string)".into(),
        )),
    }
}

/// Refuses a string field longer than `max` bytes, without quoting it.
fn check_len(message: &'static str, field: &str, value: &str, max: usize) -> Result<(), LineError> {
    if value.len() <= max {
        return Ok(());
    }
    Err(field_err(
        message,
        field,
        format!("longer than {max} bytes (got {})", value.len()),
    ))
}

fn field_err(message: &'static str, field: &str, expected: String) -> LineError {
    LineError::Field {
        message,
        field: field.to_string(),
        expected,
    }
}

/// The JSON type name of a value, for error messages.
pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A file path field for messages, as a string.
pub(crate) fn path_value(p: &std::path::Path) -> Value {
    Value::from(p.to_string_lossy().into_owned())
}

/// Convenience for events that carry a path list.
pub(crate) fn paths_value(paths: &[PathBuf]) -> Value {
    Value::Array(paths.iter().map(|p| path_value(p)).collect())
}

#[cfg(test)]
mod tests;
