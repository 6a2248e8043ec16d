//! The messages that carry a model API's own shapes (docs/FORMATS.md): `list_tools`, and one
//! turn of tool calls as the API gave it — `anthropic_message`, `openai_chat_message`,
//! `openai_responses_items` — or, in a `--format` session, as a line of its own.

use serde_json::{Map, Value};

use super::{ClientMessage, LineError, MAX_ID_BYTES, check_len, field_err, json, json_type};
use crate::formats::Format;

/// One model turn's tool calls, in a model API's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiTurn {
    /// Whose shape.
    pub format: Format,
    /// The id the client gave (the batch id of the turn's calls, and the answer's id); None for
    /// a line of a `--format` session, which the server names.
    pub id: Option<String>,
    /// The message (or the items) as the API gave it; the server reads the calls out of it.
    pub body: Value,
    /// The agent whose turn it is (`agent_id`): every call of the turn is made in that agent's
    /// scope, as a `batch`'s `agent_id` puts its calls. None for a line of a `--format`
    /// session, whose calls are the session's own.
    pub agent_id: Option<std::sync::Arc<str>>,
}

/// `list_tools {format?}`.
pub(super) fn parse_list_tools(obj: &mut Map<String, Value>) -> Result<ClientMessage, LineError> {
    let format = match obj.get("format") {
        None | Some(Value::Null) => None,
        Some(Value::String(f)) => Some(
            f.parse::<Format>()
                .map_err(|e| field_err("list_tools", "format", e.to_string()))?,
        ),
        Some(other) => {
            return Err(field_err(
                "list_tools",
                "format",
                format!("expected a string, got {}", json_type(other)),
            ));
        }
    };
    Ok(ClientMessage::ListTools { format })
}

/// A turn message: its `id`, its optional `agent_id`, and the API's `field` (`message` or
/// `items`), kept as it is.
pub(super) fn parse_turn(
    format: Format,
    kind: &'static str,
    field: &'static str,
    obj: &mut Map<String, Value>,
) -> Result<ClientMessage, LineError> {
    let id = match obj.remove("id") {
        Some(Value::String(id)) if id.is_empty() => {
            return Err(field_err(kind, "id", "must not be empty".into()));
        }
        Some(Value::String(id)) => {
            check_len(kind, "id", &id, MAX_ID_BYTES)?;
            id
        }
        Some(other) => {
            return Err(field_err(
                kind,
                "id",
                format!("expected a string, got {}", json_type(&other)),
            ));
        }
        None => return Err(field_err(kind, "id", "missing (expected a string)".into())),
    };
    let agent_id = super::parse::agent_field(obj, kind, "agent_id")?;
    let Some(body) = obj.remove(field) else {
        return Err(field_err(
            kind,
            field,
            "missing (expected the API's own shape: see docs/FORMATS.md)".into(),
        ));
    };
    Ok(ClientMessage::ApiTurn(ApiTurn {
        format,
        id: Some(id),
        body,
        agent_id,
    }))
}

/// A line of a `--format` session that is no native message (no `type`, a `type` toolrt does
/// not know, or a list): read as one turn in the session's format. Native lines keep their
/// meaning; in a native session this changes nothing.
pub(crate) fn parse_line_in(line: &str, session: Format) -> Result<ClientMessage, LineError> {
    match super::parse_line(line) {
        Err(LineError::Type(_) | LineError::NotObject("array")) if session != Format::Native => {
            let body = json::from_str(line).map_err(|e| LineError::Json(e.to_string()))?;
            Ok(ClientMessage::ApiTurn(ApiTurn {
                format: session,
                id: None,
                body,
                agent_id: None,
            }))
        }
        other => other,
    }
}
