//! The NDJSON wire protocol (docs/PROTOCOL.md): messages in, messages out, and how one input
//! line becomes one message or a precise error.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::call::{ToolCall, ToolResult};

pub mod agents;
pub mod client_tools;
pub mod json;

pub use agents::AgentStart;
pub use client_tools::{ClientToolSpec, ExecuteContent, ExecuteResult};

/// Longest id (a call's, a batch's, a request's) and tool name a message may carry, in bytes.
/// Ids come back in every result and event; a longer one is refused with an `error` line.
pub const MAX_ID_BYTES: usize = 256;

/// Longest `message` a `permission_response` may carry, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// The protocol version `hello` reports (docs/PROTOCOL.md): additions keep it, changes bump it.
pub const PROTOCOL_VERSION: u32 = 1;

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
    /// End an agent's scope, and every scope below it.
    AgentEnd {
        /// The agent.
        agent_id: String,
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

    /// The event name, for events.
    pub fn event_name(&self) -> Option<&str> {
        match self {
            ServerMessage::Event(EventBody(b)) => b.get("event").and_then(Value::as_str),
            _ => None,
        }
    }

    /// Serialise as one NDJSON line (with the trailing newline).
    pub fn to_line(&self) -> Vec<u8> {
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

/// Parses one input line into a message.
pub fn parse_line(line: &str) -> Result<ClientMessage, LineError> {
    match plain_tool_use(line) {
        Some(call) => Ok(ClientMessage::ToolUse(call)),
        None => parse_any(line),
    }
}

/// Reads any message through its JSON object, naming the field that is wrong.
fn parse_any(line: &str) -> Result<ClientMessage, LineError> {
    let value = json::from_str(line).map_err(|e| {
        if json::is_refusal(&e) {
            LineError::Refused(e.to_string())
        } else {
            LineError::Json(e.to_string())
        }
    })?;
    let Value::Object(mut obj) = value else {
        return Err(LineError::NotObject(json_type(&value)));
    };
    let Some(kind) = obj.get("type") else {
        return Err(LineError::Type(
            "missing field `type` (expected one of tool_use, batch, cancel, permission_response, rewind, session, shutdown, hello, register_tools, unregister_tools, execute_result, agent_start, agent_end)".into(),
        ));
    };
    let Some(kind) = kind.as_str() else {
        return Err(LineError::Type(format!(
            "field `type`: expected a string, got {}",
            json_type(kind)
        )));
    };
    match kind {
        "tool_use" => parse_call(&mut obj, "tool_use", None).map(ClientMessage::ToolUse),
        "batch" => {
            let id = string_field(&obj, "batch", "id", "")?;
            let agent = agent_field(&mut obj, "batch", "agent_id")?;
            let calls = match obj.remove("calls") {
                Some(Value::Array(items)) => items,
                Some(other) => {
                    return Err(field_err(
                        "batch",
                        "calls",
                        format!(
                            "expected an array of tool_use objects, got {}",
                            json_type(&other)
                        ),
                    ));
                }
                None => {
                    return Err(field_err(
                        "batch",
                        "calls",
                        "missing (expected an array of tool_use objects)".into(),
                    ));
                }
            };
            let mut parsed = Vec::with_capacity(calls.len());
            for (i, call) in calls.into_iter().enumerate() {
                let Value::Object(mut call) = call else {
                    return Err(field_err(
                        "batch",
                        &format!("calls[{i}]"),
                        format!("expected a tool_use object, got {}", json_type(&call)),
                    ));
                };
                parsed.push(parse_call(&mut call, "batch", Some((i, &agent)))?);
            }
            Ok(ClientMessage::Batch { id, calls: parsed })
        }
        "cancel" => match (obj.get("id"), obj.get("batch")) {
            (Some(Value::String(id)), None) => {
                check_len("cancel", "id", id, MAX_ID_BYTES)?;
                Ok(ClientMessage::Cancel(CancelTarget::Call(id.clone())))
            }
            (None, Some(Value::String(b))) => {
                check_len("cancel", "batch", b, MAX_ID_BYTES)?;
                Ok(ClientMessage::Cancel(CancelTarget::Batch(b.clone())))
            }
            (Some(_), Some(_)) => Err(field_err(
                "cancel",
                "id",
                "give either `id` (a tool_use id) or `batch` (a batch id), not both".into(),
            )),
            (Some(v), None) => Err(field_err(
                "cancel",
                "id",
                format!("expected a string, got {}", json_type(v)),
            )),
            (None, Some(v)) => Err(field_err(
                "cancel",
                "batch",
                format!("expected a string, got {}", json_type(v)),
            )),
            (None, None) => Err(field_err(
                "cancel",
                "id",
                "missing (give `id` for a call or `batch` for a batch)".into(),
            )),
        },
        "permission_response" => {
            let request_id = string_field(&obj, "permission_response", "request_id", "")?;
            let allow = match obj.get("behavior").and_then(Value::as_str) {
                Some("allow") => true,
                Some("deny") => false,
                _ => {
                    return Err(field_err(
                        "permission_response",
                        "behavior",
                        "expected \"allow\" or \"deny\"".into(),
                    ));
                }
            };
            let updated_input = match obj.get("updated_input") {
                None | Some(Value::Null) => None,
                Some(Value::Object(m)) => Some(m.clone()),
                Some(other) => {
                    return Err(field_err(
                        "permission_response",
                        "updated_input",
                        format!("expected an object, got {}", json_type(other)),
                    ));
                }
            };
            let message = match obj.get("message") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => {
                    check_len("permission_response", "message", s, MAX_MESSAGE_BYTES)?;
                    Some(s.clone())
                }
                Some(other) => {
                    return Err(field_err(
                        "permission_response",
                        "message",
                        format!("expected a string, got {}", json_type(other)),
                    ));
                }
            };
            Ok(ClientMessage::PermissionResponse(PermissionResponse {
                request_id,
                allow,
                updated_input,
                message,
            }))
        }
        "rewind" => Ok(ClientMessage::Rewind {
            to: string_field(&obj, "rewind", "to", "")?,
        }),
        "session" => {
            let opt = |field: &str| match obj.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if !s.is_empty() && !s.contains('\0') => Ok(Some(s.clone())),
                Some(Value::String(_)) => Err(field_err(
                    "session",
                    field,
                    "expected a non-empty string without NUL characters".into(),
                )),
                Some(other) => Err(field_err(
                    "session",
                    field,
                    format!("expected a string, got {}", json_type(other)),
                )),
            };
            let session_id = opt("session_id")?;
            let transcript_path = opt("transcript_path")?;
            if session_id.is_none() && transcript_path.is_none() {
                return Err(field_err(
                    "session",
                    "session_id",
                    "missing (give `session_id`, `transcript_path` or both)".into(),
                ));
            }
            Ok(ClientMessage::Session {
                session_id,
                transcript_path,
            })
        }
        "shutdown" => Ok(ClientMessage::Shutdown),
        "register_tools" => Ok(ClientMessage::RegisterTools {
            tools: client_tools::parse_register(&mut obj)?,
        }),
        "unregister_tools" => Ok(ClientMessage::UnregisterTools {
            names: client_tools::parse_unregister(&obj)?,
        }),
        "execute_result" => client_tools::parse_result(&mut obj).map(ClientMessage::ExecuteResult),
        "agent_start" => agents::parse_start(&obj).map(ClientMessage::AgentStart),
        "agent_end" => agents::parse_end(&obj).map(|agent_id| ClientMessage::AgentEnd { agent_id }),
        "hello" => match obj.get("client") {
            None | Some(Value::Null) => Ok(ClientMessage::Hello { client: None }),
            Some(Value::String(c)) => {
                check_len("hello", "client", c, MAX_ID_BYTES)?;
                Ok(ClientMessage::Hello {
                    client: Some(c.clone()),
                })
            }
            Some(other) => Err(field_err(
                "hello",
                "client",
                format!("expected a string, got {}", json_type(other)),
            )),
        },
        other => Err(LineError::Type(format!(
            "unknown message type {other:?} (expected one of tool_use, batch, cancel, permission_response, rewind, session, shutdown, hello, register_tools, unregister_tools, execute_result, agent_start, agent_end)"
        ))),
    }
}

/// The common line, a well-formed `tool_use`, read straight into a [`ToolCall`] without building
/// the line's object first (that object cost about as much as the rest of a no-op call's
/// dispatch). Anything else — another type, a missing or empty field, a duplicate key, bad
/// JSON — is None, and the general parser then reads the line and words the error.
fn plain_tool_use(line: &str) -> Option<ToolCall> {
    #[derive(serde::Deserialize)]
    enum Kind {
        #[serde(rename = "tool_use")]
        ToolUse,
    }
    // Any other field, or a field twice, is for the general parser (which refuses a repeated
    // key anywhere); inside `input` a repeated key fails this parse too.
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Line {
        #[serde(rename = "type")]
        _kind: Kind,
        id: String,
        name: String,
        // Missing is an empty object; anything present, `null` included, goes on as is.
        #[serde(default = "empty_object", deserialize_with = "strict_input")]
        input: Value,
        // Present means a string: `null` goes to the general parser, which refuses it.
        #[serde(default, deserialize_with = "present_string")]
        agent_id: Option<String>,
    }
    fn empty_object() -> Value {
        Value::Object(Map::new())
    }
    fn strict_input<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        use serde::de::DeserializeSeed;
        // The line's object, `type`, `id`, `name` and perhaps `agent_id` are values of the
        // message too. Counting five whether or not `agent_id` is there, this path refuses at
        // most one value sooner than the general parser, which then reads the line: the limit
        // is the same either way.
        let count = std::cell::Cell::new(5);
        json::Seed::new(&count, json::Where::Field("input")).deserialize(d)
    }
    fn present_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        <String as serde::Deserialize>::deserialize(d).map(Some)
    }
    // A derived struct would also accept a JSON array of its fields.
    if !line.trim_start().starts_with('{') {
        return None;
    }
    let parsed: Line = serde_json::from_str(line).ok()?;
    if parsed.id.is_empty() || parsed.id.len() > MAX_ID_BYTES || parsed.name.len() > MAX_ID_BYTES {
        return None;
    }
    let agent_id = match parsed.agent_id {
        None => None,
        Some(a) if agent_id_problem(&a).is_none() => Some(Arc::from(a)),
        Some(_) => return None,
    };
    Some(ToolCall {
        id: parsed.id,
        name: parsed.name,
        input: parsed.input,
        agent_id,
    })
}

/// Takes a call's fields out of its object (no copies: a line is parsed once and its values
/// move into the call). `batch` is the call's place in a batch, for error paths, and the batch's
/// `agent_id`, which is the call's.
fn parse_call(
    obj: &mut Map<String, Value>,
    message: &'static str,
    batch: Option<(usize, &Option<Arc<str>>)>,
) -> Result<ToolCall, LineError> {
    let path = |field: &str| match batch {
        Some((i, _)) => format!("calls[{i}].{field}"),
        None => field.to_string(),
    };
    let agent_id = match batch {
        None => agent_field(obj, message, "agent_id")?,
        Some((_, agent)) => {
            // A batch is one agent's turn: its calls are in the batch's scope. A call may
            // repeat the batch's agent_id, never name another.
            let own = agent_field(obj, message, &path("agent_id"))?;
            if own.is_some() && own != *agent {
                return Err(field_err(
                    message,
                    &path("agent_id"),
                    "differs from the batch's: a batch's calls are all in the scope of the batch's `agent_id`".into(),
                ));
            }
            agent.clone()
        }
    };
    let mut take = |field: &str| match obj.remove(field) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(field_err(
            message,
            &path(field),
            format!("expected a string, got {}", json_type(&other)),
        )),
        None => Err(field_err(
            message,
            &path(field),
            "missing (expected a string)".into(),
        )),
    };
    let id = take("id")?;
    if id.is_empty() {
        return Err(field_err(message, &path("id"), "must not be empty".into()));
    }
    check_len(message, &path("id"), &id, MAX_ID_BYTES)?;
    let name = take("name")?;
    check_len(message, &path("name"), &name, MAX_ID_BYTES)?;
    // A missing input is an empty object; anything else reaches the pipeline as is, so the
    // schema stage can say precisely what was wrong with it.
    let input = obj
        .remove("input")
        .unwrap_or_else(|| Value::Object(Map::new()));
    Ok(ToolCall {
        id,
        name,
        input,
        agent_id,
    })
}

/// Takes an optional `agent_id` out of a message or call object (`field` is its path, for the
/// error).
fn agent_field(
    obj: &mut Map<String, Value>,
    message: &'static str,
    field: &str,
) -> Result<Option<Arc<str>>, LineError> {
    match obj.remove("agent_id") {
        None => Ok(None),
        Some(Value::String(s)) => match agent_id_problem(&s) {
            None => Ok(Some(Arc::from(s))),
            Some(problem) => Err(field_err(message, field, problem)),
        },
        Some(other) => Err(field_err(
            message,
            field,
            format!("expected a string, got {}", json_type(&other)),
        )),
    }
}

/// What is wrong with an agent id, if anything: like a call id it is non-empty and at most
/// [`MAX_ID_BYTES`] long; it also holds no control characters, since it is echoed in results
/// and written into logs.
pub fn agent_id_problem(id: &str) -> Option<String> {
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
pub fn json_type(v: &Value) -> &'static str {
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
pub fn path_value(p: &std::path::Path) -> Value {
    Value::from(p.to_string_lossy().into_owned())
}

/// Convenience for events that carry a path list.
pub fn paths_value(paths: &[PathBuf]) -> Value {
    Value::Array(paths.iter().map(|p| path_value(p)).collect())
}

#[cfg(test)]
mod tests;
