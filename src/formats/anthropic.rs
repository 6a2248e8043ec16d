//! The Anthropic Messages API: tool definitions (`ToolParam`), an assistant message's
//! `tool_use` blocks in, one `user` message of `tool_result` blocks out.

use serde_json::{Map, Value, json};

use super::{
    Block, ShapeError, ToolDef, Turn, assistant_role, blocks, id_field, own_id, type_name,
};
use crate::call::{ToolCall, ToolResult};

/// Longest tool name the API takes.
pub(crate) const MAX_NAME_CHARS: usize = 128;

/// A tool as the API's `tools` entry: `{name, description, input_schema}`.
pub(crate) fn definition(def: &ToolDef) -> Value {
    let mut obj = Map::new();
    obj.insert("name".into(), Value::from(def.name.as_str()));
    if !def.description.is_empty() {
        obj.insert("description".into(), Value::from(def.description.as_str()));
    }
    obj.insert("input_schema".into(), def.input_schema.clone());
    Value::Object(obj)
}

/// The `tool_use` blocks of an assistant message (`{role, content}`, or the whole `Message`
/// the API answered), or of its `content` list alone, as calls in order. Other blocks (text,
/// thinking, the server's own tool uses) are not calls for toolrt.
pub(crate) fn calls(body: &Value) -> Result<Turn, ShapeError> {
    let (content, id, at) = match body {
        Value::Array(blocks) => (blocks, None, ""),
        Value::Object(obj) => {
            assistant_role(obj, "")?;
            match obj.get("content") {
                Some(Value::Array(blocks)) => (blocks, own_id(obj), "content"),
                // Text only: no calls.
                Some(Value::String(_)) => {
                    return Ok(Turn {
                        calls: Vec::new(),
                        id: own_id(obj),
                    });
                }
                Some(other) => {
                    return Err(ShapeError::new(
                        "content",
                        format!(
                            "expected an array of content blocks, got {}",
                            type_name(other)
                        ),
                    ));
                }
                None => {
                    return Err(ShapeError::new(
                        "content",
                        "missing (expected the assistant message's content blocks)",
                    ));
                }
            }
        }
        other => {
            return Err(ShapeError::new(
                "message",
                format!(
                    "expected an assistant message or its content list, got {}",
                    type_name(other)
                ),
            ));
        }
    };
    let mut calls = Vec::new();
    for (i, block) in content.iter().enumerate() {
        let at = format!("{at}[{i}]");
        let Some(block) = block.as_object() else {
            return Err(ShapeError::new(at, "expected a content block object"));
        };
        if block.get("type").and_then(Value::as_str) != Some("tool_use") {
            continue;
        }
        let id = id_field(block, "id", &at)?;
        let name = id_field(block, "name", &at)?;
        let input = block
            .get("input")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        calls.push(ToolCall::new(id, name, input));
    }
    Ok(Turn { calls, id })
}

/// One `user` message answering every call: a `tool_result` block per result, in order, with
/// `is_error`, its text as `content` (text and image blocks when the tool gave images).
pub(crate) fn results(results: &[&ToolResult]) -> Value {
    let content: Vec<Value> = results.iter().map(|r| result_block(r)).collect();
    json!({"role": "user", "content": content})
}

fn result_block(result: &ToolResult) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), Value::from("tool_result"));
    block.insert(
        "tool_use_id".into(),
        Value::from(result.tool_use_id.as_str()),
    );
    match blocks(result) {
        Some(parts) => {
            let content: Vec<Value> = parts
                .into_iter()
                .filter_map(|part| match part {
                    // The API refuses an empty text block.
                    Block::Text(t) if t.is_empty() => None,
                    Block::Text(t) => Some(json!({"type": "text", "text": t})),
                    Block::Image { mime, data } => Some(json!({
                        "type": "image",
                        "source": {"type": "base64", "media_type": mime, "data": data},
                    })),
                })
                .collect();
            block.insert("content".into(), Value::Array(content));
        }
        // Without content the API reads an empty result; an empty string it may refuse.
        None if result.content.is_empty() => {}
        None => {
            block.insert("content".into(), Value::from(result.content.as_str()));
        }
    }
    block.insert("is_error".into(), Value::Bool(result.is_error));
    Value::Object(block)
}
