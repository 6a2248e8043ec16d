//! OpenAI Chat Completions: tool definitions (`ChatCompletionFunctionToolParam`), an assistant
//! message's (or a choice's) `tool_calls` in, `role: "tool"` messages out.

use serde_json::{Map, Value, json};

use super::{ShapeError, ToolDef, Turn, assistant_role, id_field, own_id, type_name};
use crate::call::{ToolCall, ToolResult};

/// Longest function name the API takes.
pub(crate) const MAX_NAME_CHARS: usize = 64;

/// A tool as the API's `tools` entry: `{type: "function", function: {name, description,
/// parameters, strict}}`; `strict` is the schema made strict, or None to send the tool's own
/// schema with `strict: false`.
pub(crate) fn definition(def: &ToolDef, strict: Option<Value>) -> Value {
    let mut obj = Map::new();
    obj.insert("type".into(), Value::from("function"));
    obj.insert("function".into(), Value::Object(function(def, strict)));
    Value::Object(obj)
}

/// The function's fields, shared with the Responses API (which has them at the top level).
pub(super) fn function(def: &ToolDef, strict: Option<Value>) -> Map<String, Value> {
    let mut obj = Map::new();
    obj.insert("name".into(), Value::from(def.name.as_str()));
    if !def.description.is_empty() {
        obj.insert("description".into(), Value::from(def.description.as_str()));
    }
    let is_strict = strict.is_some();
    obj.insert(
        "parameters".into(),
        strict.unwrap_or_else(|| def.input_schema.clone()),
    );
    obj.insert("strict".into(), Value::Bool(is_strict));
    obj
}

/// The `tool_calls` of an assistant message, of a completion's `choice` (`{message, …}`), or
/// of a whole completion with one choice, as calls in order. `arguments`, the JSON text the
/// model wrote, is the call's input as that string: invalid JSON is the call's `schema_error`,
/// never a refusal of the whole message.
pub(crate) fn calls(body: &Value) -> Result<Turn, ShapeError> {
    let Some(obj) = body.as_object() else {
        return Err(ShapeError::new(
            "message",
            format!(
                "expected an assistant message, a choice or a completion, got {}",
                type_name(body)
            ),
        ));
    };
    let (message, id, at) = match (obj.get("choices"), obj.get("message")) {
        (Some(Value::Array(choices)), _) => match choices.as_slice() {
            [choice] => match choice.get("message").and_then(Value::as_object) {
                Some(m) => (m, own_id(obj), "choices[0].message."),
                None => {
                    return Err(ShapeError::new(
                        "choices[0].message",
                        "missing (expected the assistant message)",
                    ));
                }
            },
            _ => {
                return Err(ShapeError::new(
                    "choices",
                    format!(
                        "a completion with {} choices: send the one choice whose calls should run",
                        choices.len()
                    ),
                ));
            }
        },
        (_, Some(Value::Object(m))) => (m, None, "message."),
        _ => (obj, None, ""),
    };
    assistant_role(message, at)?;
    if message.get("function_call").is_some_and(|f| !f.is_null()) {
        return Err(ShapeError::new(
            format!("{at}function_call"),
            "the deprecated single function call carries no id to answer; toolrt answers `tool_calls`",
        ));
    }
    let list = match message.get("tool_calls") {
        None | Some(Value::Null) => {
            return Ok(Turn {
                calls: Vec::new(),
                id,
            });
        }
        Some(Value::Array(list)) => list,
        Some(other) => {
            return Err(ShapeError::new(
                format!("{at}tool_calls"),
                format!("expected an array, got {}", type_name(other)),
            ));
        }
    };
    let mut calls = Vec::with_capacity(list.len());
    for (i, call) in list.iter().enumerate() {
        let at = format!("{at}tool_calls[{i}]");
        let Some(call) = call.as_object() else {
            return Err(ShapeError::new(at, "expected a tool call object"));
        };
        match call.get("type").and_then(Value::as_str) {
            None | Some("function") => {}
            Some(other) => {
                return Err(ShapeError::new(
                    format!("{at}.type"),
                    format!(
                        "{}: toolrt's tools are function tools, and only function calls run",
                        crate::quote::quoted(other)
                    ),
                ));
            }
        }
        let id = id_field(call, "id", &at)?;
        let Some(function) = call.get("function").and_then(Value::as_object) else {
            return Err(ShapeError::new(
                format!("{at}.function"),
                "missing (expected {name, arguments})",
            ));
        };
        let name = id_field(function, "name", &format!("{at}.function"))?;
        let input = arguments(function.get("arguments"));
        calls.push(ToolCall::new(id, name, input));
    }
    Ok(Turn { calls, id })
}

/// A call's input from its `arguments`, the JSON text the model wrote: that text, which the
/// server decodes as strictly as any input line (a string that is not a JSON object is answered
/// `schema_error` saying why); `{}` for none (an empty string is what some models send for a
/// function without parameters).
pub(super) fn arguments(value: Option<&Value>) -> Value {
    match value {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(text)) if text.trim().is_empty() => Value::Object(Map::new()),
        // Already decoded (an SDK object dumped with its arguments parsed), or the text.
        Some(other) => other.clone(),
    }
}

/// The `role: "tool"` messages answering every call, in order, keyed by `tool_call_id`. The
/// API takes only text in a tool message: an image is named in the text, not sent.
pub(crate) fn results(results: &[&ToolResult]) -> Value {
    Value::Array(
        results
            .iter()
            .map(|r| json!({"role": "tool", "tool_call_id": r.tool_use_id, "content": r.content}))
            .collect(),
    )
}
