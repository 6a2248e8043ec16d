//! How one input line becomes one message or a precise error: the `tool_use` and
//! `execute_result` fast paths, then one small parser per message kind, chosen by the line's
//! `type`.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{
    CancelTarget, ClientMessage, LineError, MAX_ID_BYTES, MAX_MESSAGE_BYTES, PermissionResponse,
    agent_id_problem, agents, check_len, client_tools, field_err, json, json_type, string_field,
};
use crate::call::ToolCall;
use crate::formats::Format;

/// Parses one input line into a message.
pub fn parse_line(line: &str) -> Result<ClientMessage, LineError> {
    if let Some(call) = plain_tool_use(line) {
        return Ok(ClientMessage::ToolUse(call));
    }
    match client_tools::plain_result(line) {
        Some(result) => Ok(ClientMessage::ExecuteResult(result)),
        None => parse_any(line),
    }
}

/// A message kind's parser: it takes its fields out of the line's object.
type Parser = fn(&mut Map<String, Value>) -> Result<ClientMessage, LineError>;

/// Every message kind, by its `type`, in the order errors list them. A new kind is one row here
/// and one parser below.
const KINDS: &[(&str, Parser)] = &[
    ("tool_use", tool_use),
    ("batch", batch),
    ("cancel", cancel),
    ("permission_response", permission_response),
    ("rewind", rewind),
    ("session", session),
    ("shutdown", |_| Ok(ClientMessage::Shutdown)),
    ("hello", hello),
    ("register_tools", |obj| {
        client_tools::parse_register(obj).map(|tools| ClientMessage::RegisterTools { tools })
    }),
    ("unregister_tools", |obj| {
        client_tools::parse_unregister(obj).map(|names| ClientMessage::UnregisterTools { names })
    }),
    ("execute_result", |obj| {
        client_tools::parse_result(obj).map(ClientMessage::ExecuteResult)
    }),
    ("agent_start", |obj| {
        agents::parse_start(obj).map(ClientMessage::AgentStart)
    }),
    ("list_tools", super::api::parse_list_tools),
    ("anthropic_message", |obj| {
        super::api::parse_turn(Format::Anthropic, "anthropic_message", "message", obj)
    }),
    ("openai_chat_message", |obj| {
        super::api::parse_turn(Format::OpenAiChat, "openai_chat_message", "message", obj)
    }),
    ("openai_responses_items", |obj| {
        super::api::parse_turn(
            Format::OpenAiResponses,
            "openai_responses_items",
            "items",
            obj,
        )
    }),
    ("agent_end", |obj| {
        agents::parse_end(obj).map(
            |(agent_id, last_assistant_message)| ClientMessage::AgentEnd {
                agent_id,
                last_assistant_message,
            },
        )
    }),
];

/// The kinds, for an error about `type`: "tool_use, batch, …".
fn kind_names() -> String {
    let names: Vec<&str> = KINDS.iter().map(|(kind, _)| *kind).collect();
    names.join(", ")
}

/// Reads any message through its JSON object, naming the field that is wrong.
pub(super) fn parse_any(line: &str) -> Result<ClientMessage, LineError> {
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
        return Err(LineError::Type(format!(
            "missing field `type` (expected one of {})",
            kind_names()
        )));
    };
    let Some(kind) = kind.as_str() else {
        return Err(LineError::Type(format!(
            "field `type`: expected a string, got {}",
            json_type(kind)
        )));
    };
    match KINDS.iter().find(|(name, _)| *name == kind) {
        Some((_, parse)) => parse(&mut obj),
        None => Err(LineError::Type(format!(
            "unknown message type {} (expected one of {})",
            crate::quote::quoted(kind),
            kind_names()
        ))),
    }
}

fn tool_use(obj: &mut Map<String, Value>) -> Result<ClientMessage, LineError> {
    parse_call(obj, "tool_use", None).map(ClientMessage::ToolUse)
}

fn batch(obj: &mut Map<String, Value>) -> Result<ClientMessage, LineError> {
    let id = string_field(obj, "batch", "id", "")?;
    let agent = agent_field(obj, "batch", "agent_id")?;
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

fn cancel(obj: &mut Map<String, Value>) -> Result<ClientMessage, LineError> {
    match (obj.get("id"), obj.get("batch")) {
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
    }
}

fn permission_response(obj: &mut Map<String, Value>) -> Result<ClientMessage, LineError> {
    const KIND: &str = "permission_response";
    let request_id = string_field(obj, KIND, "request_id", "")?;
    let allow = match obj.get("behavior").and_then(Value::as_str) {
        Some("allow") => true,
        Some("deny") => false,
        _ => {
            return Err(field_err(
                KIND,
                "behavior",
                "expected \"allow\" or \"deny\"".into(),
            ));
        }
    };
    let updated_input = match obj.remove("updated_input") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(other) => {
            return Err(field_err(
                KIND,
                "updated_input",
                format!("expected an object, got {}", json_type(&other)),
            ));
        }
    };
    let message = match obj.remove("message") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            check_len(KIND, "message", &s, MAX_MESSAGE_BYTES)?;
            Some(s)
        }
        Some(other) => {
            return Err(field_err(
                KIND,
                "message",
                format!("expected a string, got {}", json_type(&other)),
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

fn rewind(obj: &mut Map<String, Value>) -> Result<ClientMessage, LineError> {
    Ok(ClientMessage::Rewind {
        to: string_field(obj, "rewind", "to", "")?,
    })
}

fn session(obj: &mut Map<String, Value>) -> Result<ClientMessage, LineError> {
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

fn hello(obj: &mut Map<String, Value>) -> Result<ClientMessage, LineError> {
    match obj.get("client") {
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
    }
}

/// The common line, a well-formed `tool_use`, read straight into a [`ToolCall`] without building
/// the line's object first (that object cost about as much as the rest of a no-op call's
/// dispatch). Anything else — another type, a missing or empty field, a duplicate key, bad
/// JSON — is None, and the general parser then reads the line and words the error.
pub(super) fn plain_tool_use(line: &str) -> Option<ToolCall> {
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
pub(super) fn agent_field(
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
