//! Client tools from the test's side: registering them and answering their `execute` lines.

use std::time::Duration;

use serde_json::{Value, json};

use super::Server;

/// A client tool `name` whose input is `{"q": string}` (required), with `extra` fields merged
/// into its description (`read_only`, `timeout_ms`, …).
pub(crate) fn tool(name: &str, extra: Value) -> Value {
    let mut tool = json!({
        "name": name,
        "description": format!("the test's {name}"),
        "input_schema": {
            "type": "object",
            "properties": {"q": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["q"],
            "additionalProperties": false
        }
    });
    if let (Some(tool), Value::Object(extra)) = (tool.as_object_mut(), extra) {
        tool.extend(extra);
    }
    tool
}

/// Sends `register_tools` with `tools` and waits for its `tools_changed` answer.
pub(crate) fn register(server: &mut Server, tools: Value) -> Value {
    server.send(json!({"type": "register_tools", "tools": tools}));
    server.take_for("tools_changed", Duration::from_secs(20), |v| {
        v["type"] == "event" && v["event"] == "tools_changed"
    })
}

/// Waits for the `execute` of call `id` (and takes it from `seen`).
pub(crate) fn execute_of(server: &mut Server, id: &str) -> Value {
    server.take_for(&format!("execute of {id}"), Duration::from_secs(20), |v| {
        v["type"] == "execute" && v["tool_use_id"] == id
    })
}

/// Answers an `execute` with `content`.
pub(crate) fn answer(server: &mut Server, execute: &Value, content: Value) {
    server.send(
        json!({"type": "execute_result", "request_id": execute["request_id"], "content": content}),
    );
}

/// Waits for the `execute_cancel` of `execute`.
pub(crate) fn cancel_of(server: &mut Server, execute: &Value) -> Value {
    let rid = execute["request_id"].clone();
    server.wait_for("execute_cancel", Duration::from_secs(20), move |v| {
        v["type"] == "execute_cancel" && v["request_id"] == rid
    })
}

/// Waits for an `error` line whose message contains `needle`.
pub(crate) fn error_with(server: &mut Server, needle: &str) -> Value {
    server.take_for(&format!("error {needle:?}"), Duration::from_secs(20), |v| {
        v["type"] == "error" && v["message"].as_str().is_some_and(|m| m.contains(needle))
    })
}
