//! OpenAI Responses: tool definitions (`FunctionToolParam`), `function_call` output items in,
//! `function_call_output` items out.

use serde_json::{Map, Value, json};

use super::{Block, ShapeError, ToolDef, Turn, blocks, id_field, own_id, type_name};
use crate::call::{ToolCall, ToolResult};

/// A tool as the API's `tools` entry: `{type: "function", name, description, parameters,
/// strict}`; `strict` as for Chat Completions.
pub(crate) fn definition(def: &ToolDef, strict: Option<Value>) -> Value {
    let mut obj = Map::new();
    obj.insert("type".into(), Value::from("function"));
    obj.extend(super::openai_chat::function(def, strict));
    Value::Object(obj)
}

/// The `function_call` items of a response's output (the list of items, a whole `Response`
/// with its `output`, or one item), as calls in order, keyed by `call_id`. Other items
/// (messages, reasoning, the API's own tools' calls) are not calls for toolrt.
pub(crate) fn calls(body: &Value) -> Result<Turn, ShapeError> {
    let single;
    let (items, id, at): (&[Value], _, &str) = match body {
        Value::Array(items) => (items, None, ""),
        Value::Object(obj) => match obj.get("output") {
            Some(Value::Array(items)) => (items, own_id(obj), "output"),
            Some(other) => {
                return Err(ShapeError::new(
                    "output",
                    format!(
                        "expected an array of output items, got {}",
                        type_name(other)
                    ),
                ));
            }
            None if obj.contains_key("type") => {
                single = [body.clone()];
                (&single, None, "")
            }
            None => {
                return Err(ShapeError::new(
                    "items",
                    "expected the response's output items (a list), a response with `output`, or one item",
                ));
            }
        },
        other => {
            return Err(ShapeError::new(
                "items",
                format!("expected a list of output items, got {}", type_name(other)),
            ));
        }
    };
    let mut calls = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("{at}[{i}]");
        let Some(item) = item.as_object() else {
            return Err(ShapeError::new(at, "expected an output item object"));
        };
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {}
            Some("custom_tool_call") => {
                return Err(ShapeError::new(
                    format!("{at}.type"),
                    "\"custom_tool_call\": toolrt's tools are function tools, and only function calls run",
                ));
            }
            _ => continue,
        }
        let id = id_field(item, "call_id", &at)?;
        let name = id_field(item, "name", &at)?;
        let input = super::openai_chat::arguments(item.get("arguments"));
        calls.push(ToolCall::new(id, name, input));
    }
    Ok(Turn { calls, id })
}

/// The `function_call_output` items answering every call, in order, keyed by `call_id`: the
/// text as `output`, or `input_text` and `input_image` parts when the tool gave images.
pub(crate) fn results(results: &[&ToolResult]) -> Value {
    Value::Array(results.iter().map(|r| item(r)).collect())
}

fn item(result: &ToolResult) -> Value {
    let output = match blocks(result) {
        Some(parts) => Value::Array(
            parts
                .into_iter()
                .map(|part| match part {
                    Block::Text(t) => json!({"type": "input_text", "text": t}),
                    Block::Image { mime, data } => json!({
                        "type": "input_image",
                        "image_url": format!("data:{mime};base64,{data}"),
                    }),
                })
                .collect(),
        ),
        None => Value::from(result.content.as_str()),
    };
    json!({"type": "function_call_output", "call_id": result.tool_use_id, "output": output})
}
