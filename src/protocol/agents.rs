//! The messages of agent scopes (docs/PROTOCOL.md, "Agents"): `agent_start` and `agent_end`.
//! This module reads their shape only; whether a scope may start is the scope table's business.

use serde_json::{Map, Value};

use super::{LineError, MAX_ID_BYTES, check_len, field_err, json_type};

/// `agent_start`: a scope for an agent, and what it is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentStart {
    /// The new agent's id, which its calls carry as `agent_id`.
    pub agent_id: String,
    /// Its type: a key of the settings' `agents`, and what `Agent(<type>)` rules name.
    pub agent_type: String,
    /// The agent that starts it; its rights narrow the parent's.
    pub parent: Option<String>,
    /// The call that opens it (an `Agent` call of the parent, say).
    pub parent_tool_use_id: Option<String>,
    /// The worker node its calls run on (a worker's name or address); None: its type's node,
    /// else its parent's, else any worker.
    pub node: Option<String>,
}

const START: &str = "agent_start";
const END: &str = "agent_end";

/// Reads an `agent_start` message.
pub(super) fn parse_start(obj: &Map<String, Value>) -> Result<AgentStart, LineError> {
    Ok(AgentStart {
        agent_id: required(obj, START, "agent_id")?,
        agent_type: required(obj, START, "agent_type")?,
        parent: optional(obj, START, "parent")?,
        parent_tool_use_id: optional(obj, START, "parent_tool_use_id")?,
        node: optional(obj, START, "node")?,
    })
}

/// Reads an `agent_end` message: its `agent_id` and optional `last_assistant_message` (any
/// text: it is the agent's answer, not an id).
pub(super) fn parse_end(
    obj: &mut Map<String, Value>,
) -> Result<(String, Option<String>), LineError> {
    let agent_id = required(obj, END, "agent_id")?;
    let last = match obj.remove("last_assistant_message") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            return Err(field_err(
                END,
                "last_assistant_message",
                format!("expected a string, got {}", json_type(&other)),
            ));
        }
    };
    Ok((agent_id, last))
}

fn required(
    obj: &Map<String, Value>,
    message: &'static str,
    field: &str,
) -> Result<String, LineError> {
    optional(obj, message, field)?.ok_or_else(|| {
        field_err(
            message,
            field,
            "missing (expected a non-empty string)".into(),
        )
    })
}

fn optional(
    obj: &Map<String, Value>,
    message: &'static str,
    field: &str,
) -> Result<Option<String>, LineError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => {
            Err(field_err(message, field, "must not be empty".into()))
        }
        // Ids are echoed in events and logs.
        Some(Value::String(s)) if s.chars().any(char::is_control) => Err(field_err(
            message,
            field,
            "must not contain control characters".into(),
        )),
        Some(Value::String(s)) => {
            check_len(message, field, s, MAX_ID_BYTES)?;
            Ok(Some(s.clone()))
        }
        Some(other) => Err(field_err(
            message,
            field,
            format!("expected a string, got {}", json_type(other)),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ClientMessage, parse_line};
    use super::*;

    #[test]
    fn reads_both_messages() {
        assert_eq!(
            parse_line(
                r#"{"type":"agent_start","agent_id":"a1","agent_type":"tester","parent":"lead","parent_tool_use_id":"t9","node":"n1"}"#
            ),
            Ok(ClientMessage::AgentStart(AgentStart {
                agent_id: "a1".into(),
                agent_type: "tester".into(),
                parent: Some("lead".into()),
                parent_tool_use_id: Some("t9".into()),
                node: Some("n1".into()),
            }))
        );
        assert_eq!(
            parse_line(r#"{"type":"agent_start","agent_id":"a1","agent_type":"t","parent":null}"#),
            Ok(ClientMessage::AgentStart(AgentStart {
                agent_id: "a1".into(),
                agent_type: "t".into(),
                parent: None,
                parent_tool_use_id: None,
                node: None,
            }))
        );
        assert_eq!(
            parse_line(r#"{"type":"agent_end","agent_id":"a1"}"#),
            Ok(ClientMessage::AgentEnd {
                agent_id: "a1".into(),
                last_assistant_message: None,
            })
        );
        assert_eq!(
            parse_line(
                r#"{"type":"agent_end","agent_id":"a1","last_assistant_message":"Done:\n3 files"}"#
            ),
            Ok(ClientMessage::AgentEnd {
                agent_id: "a1".into(),
                last_assistant_message: Some("Done:\n3 files".into()),
            })
        );
    }

    #[test]
    fn errors_name_the_field() {
        let long = "x".repeat(MAX_ID_BYTES + 1);
        for (line, needle) in [
            (
                r#"{"type":"agent_start","agent_type":"t"}"#.to_string(),
                "agent_start: field `agent_id`: missing",
            ),
            (
                r#"{"type":"agent_start","agent_id":"a"}"#.to_string(),
                "field `agent_type`: missing",
            ),
            (
                r#"{"type":"agent_start","agent_id":"","agent_type":"t"}"#.to_string(),
                "field `agent_id`: must not be empty",
            ),
            (
                r#"{"type":"agent_start","agent_id":"a","agent_type":"t","parent":3}"#.to_string(),
                "field `parent`: expected a string, got integer",
            ),
            (
                format!(r#"{{"type":"agent_start","agent_id":"{long}","agent_type":"t"}}"#),
                "longer than 256 bytes",
            ),
            (
                r#"{"type":"agent_end"}"#.to_string(),
                "agent_end: field `agent_id`: missing",
            ),
            (
                r#"{"type":"agent_end","agent_id":[]}"#.to_string(),
                "expected a string, got array",
            ),
            (
                r#"{"type":"agent_end","agent_id":"a","last_assistant_message":{}}"#.to_string(),
                "agent_end: field `last_assistant_message`: expected a string, got object",
            ),
            (
                r#"{"type":"agent_end","agent_id":"a\u001b[31m"}"#.to_string(),
                "agent_end: field `agent_id`: must not contain control characters",
            ),
        ] {
            let err = parse_line(&line).unwrap_err().to_string();
            assert!(err.contains(needle), "{line}: {err}");
        }
    }
}
