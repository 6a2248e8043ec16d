//! An MCP `tools/call` result as a tool output (docs/PROTOCOL.md, "MCP results"): text parts
//! become the content the model reads; every other part (image, audio, embedded resource,
//! resource link, a type toolrt does not know) is described there in one line and passed whole
//! in the result's `content_blocks`; `structuredContent` goes to `structured_content`, and is
//! the text itself when the server sent no content. Nothing is dropped.

use serde_json::Value;

use crate::tool::{Attachments, ToolOutput};

/// Maps a result object (`content`, `structuredContent`, `isError`) as the server sent it;
/// with `for_hooks`, PostToolUse hooks are given the content blocks themselves as
/// `tool_response` (the reference CLI's MCP output shape).
pub(crate) fn map_result(result: &Value, for_hooks: bool) -> ToolOutput {
    let blocks: &[Value] = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let mut lines: Vec<String> = Vec::with_capacity(blocks.len());
    let mut only_text = true;
    for block in blocks {
        match describe(block) {
            Part::Text(text) => lines.push(text),
            Part::Other(line) => {
                only_text = false;
                lines.push(line);
            }
        }
    }
    let mut content = lines.join("\n");
    if blocks.is_empty() {
        content = match structured {
            Some(v) => v.to_string(),
            None => "(no content)".into(),
        };
    }
    let attachments = (!only_text || structured.is_some()).then(|| {
        Box::new(Attachments {
            blocks: if only_text {
                Vec::new()
            } else {
                blocks.to_vec()
            },
            structured: structured.cloned(),
        })
    });
    let response = (for_hooks && !is_error).then(|| Value::Array(blocks.to_vec()));
    output(is_error, content, response, attachments)
}

/// A result's output: `failed` when the server flagged it as an error, else `success`.
fn output(
    is_error: bool,
    content: String,
    response: Option<Value>,
    attachments: Option<Box<Attachments>>,
) -> ToolOutput {
    let out = if is_error {
        ToolOutput::failed(content)
    } else {
        ToolOutput::success(content)
    };
    ToolOutput {
        attachments,
        ..out.with_response(response)
    }
}

/// Maps a typed result as rmcp decoded it. Text-only results (the common case) are mapped
/// without building a JSON tree of the result: the text is moved, not copied. Anything else
/// goes through [`map_result`] as JSON, so both paths give the same output.
pub(crate) fn map_typed(result: rmcp::model::CallToolResult, for_hooks: bool) -> ToolOutput {
    use rmcp::model::ContentBlock;
    let only_text = result
        .content
        .iter()
        .all(|block| matches!(block, ContentBlock::Text(_)));
    if !only_text || result.content.is_empty() {
        return match serde_json::to_value(&result) {
            Ok(v) => map_result(&v, for_hooks),
            Err(e) => ToolOutput::failed(format!("cannot read the MCP result: {e}")),
        };
    }
    let is_error = result.is_error == Some(true);
    let response = (for_hooks && !is_error)
        .then(|| serde_json::to_value(&result.content).unwrap_or(Value::Array(Vec::new())));
    let mut texts = result.content.into_iter().map(|block| match block {
        ContentBlock::Text(t) => t.text,
        _ => String::new(),
    });
    let first = texts.next().unwrap_or_default();
    let content = texts.fold(first, |mut all, text| {
        all.push('\n');
        all.push_str(&text);
        all
    });
    let structured = result.structured_content.filter(|v| !v.is_null());
    let attachments = structured.map(|structured| {
        Box::new(Attachments {
            blocks: Vec::new(),
            structured: Some(structured),
        })
    });
    output(is_error, content, response, attachments)
}

enum Part {
    Text(String),
    Other(String),
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Bytes a base64 text decodes to (padding aside).
fn decoded_len(data: &str) -> usize {
    let trimmed = data.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

fn describe(block: &Value) -> Part {
    let kind = str_of(block, "type").unwrap_or("");
    let mime = |v: &Value| str_of(v, "mimeType").unwrap_or("unknown type").to_string();
    match kind {
        "text" => Part::Text(str_of(block, "text").unwrap_or("").to_string()),
        "image" | "audio" => Part::Other(format!(
            "[{kind}: {}, {} bytes; in content_blocks]",
            mime(block),
            decoded_len(str_of(block, "data").unwrap_or(""))
        )),
        "resource" => {
            let res = block.get("resource").unwrap_or(&Value::Null);
            let uri = str_of(res, "uri").unwrap_or("?");
            match (str_of(res, "text"), str_of(res, "blob")) {
                // An embedded text resource is text: the model reads it.
                (Some(text), _) => Part::Other(format!("[resource {uri} ({})]\n{text}", mime(res))),
                (None, Some(blob)) => Part::Other(format!(
                    "[resource {uri}: {}, {} bytes; in content_blocks]",
                    mime(res),
                    decoded_len(blob)
                )),
                (None, None) => Part::Other(format!("[resource {uri} ({})]", mime(res))),
            }
        }
        "resource_link" => {
            let mut line = format!(
                "[resource link: {} {:?} ({})",
                str_of(block, "uri").unwrap_or("?"),
                str_of(block, "name").unwrap_or(""),
                mime(block)
            );
            if let Some(d) = str_of(block, "description") {
                line.push_str(": ");
                line.push_str(d);
            }
            line.push(']');
            Part::Other(line)
        }
        // A part toolrt does not know is kept as the server wrote it.
        _ => Part::Other(block.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::ToolStatus;
    use serde_json::json;

    #[test]
    fn mapping_table() {
        let png = "iVBORw0KGgo=";
        for (result, status, content, blocks, structured) in [
            (
                json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
                ToolStatus::Success,
                "a\nb",
                false,
                None,
            ),
            (
                json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
                ToolStatus::Failed,
                "boom",
                false,
                None,
            ),
            (json!({}), ToolStatus::Success, "(no content)", false, None),
            (
                json!({"content": [], "structuredContent": {"answer": 42}}),
                ToolStatus::Success,
                "{\"answer\":42}",
                false,
                Some(json!({"answer": 42})),
            ),
            (
                json!({"content": [{"type": "text", "text": "42"}], "structuredContent": {"result": 42}}),
                ToolStatus::Success,
                "42",
                false,
                Some(json!({"result": 42})),
            ),
            (
                json!({"content": [{"type": "image", "data": png, "mimeType": "image/png"}]}),
                ToolStatus::Success,
                "[image: image/png, 8 bytes; in content_blocks]",
                true,
                None,
            ),
            (
                json!({"content": [{"type": "resource", "resource": {"uri": "note://x", "mimeType": "text/plain", "text": "inline"}}]}),
                ToolStatus::Success,
                "[resource note://x (text/plain)]\ninline",
                true,
                None,
            ),
            (
                json!({"content": [{"type": "resource", "resource": {"uri": "b://1", "blob": "AAAA"}}]}),
                ToolStatus::Success,
                "[resource b://1: unknown type, 3 bytes; in content_blocks]",
                true,
                None,
            ),
            (
                json!({"content": [{"type": "resource_link", "uri": "note://h", "name": "h", "mimeType": "text/plain", "description": "d"}]}),
                ToolStatus::Success,
                "[resource link: note://h \"h\" (text/plain): d]",
                true,
                None,
            ),
            (
                json!({"content": [{"type": "text", "text": "ok"}, {"type": "widget", "spin": 3}]}),
                ToolStatus::Success,
                "ok\n{\"type\":\"widget\",\"spin\":3}",
                true,
                None,
            ),
        ] {
            let out = map_result(&result, true);
            if status == ToolStatus::Success {
                assert_eq!(
                    out.response.clone().unwrap(),
                    result.get("content").cloned().unwrap_or(json!([]))
                );
            }
            assert_eq!(out.status, status, "{result}");
            assert_eq!(out.content, content, "{result}");
            let att = out.attachments.as_deref();
            assert_eq!(
                att.is_some_and(|a| !a.blocks.is_empty()),
                blocks,
                "{result}"
            );
            if blocks {
                assert_eq!(
                    Value::Array(att.unwrap().blocks.clone()),
                    result["content"],
                    "every block is kept whole"
                );
            }
            assert_eq!(
                att.and_then(|a| a.structured.clone()),
                structured,
                "{result}"
            );
        }
    }

    #[test]
    fn typed_results_map_as_their_json_does() {
        for result in [
            json!({"content": [{"type": "text", "text": "hi"}]}),
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
            json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
            json!({"content": [{"type": "text", "text": "42"}], "structuredContent": {"result": 42}}),
            json!({"content": [], "structuredContent": {"answer": 42}}),
            json!({"content": []}),
            json!({"content": [{"type": "text", "text": "ok"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
        ] {
            let typed: rmcp::model::CallToolResult =
                serde_json::from_value(result.clone()).expect("a tool result");
            for for_hooks in [false, true] {
                let want = map_result(&result, for_hooks);
                let got = map_typed(typed.clone(), for_hooks);
                assert_eq!(got.status, want.status, "{result}");
                assert_eq!(got.content, want.content, "{result}");
                assert_eq!(
                    got.response, want.response,
                    "{result} for_hooks {for_hooks}"
                );
                let parts = |o: &ToolOutput| {
                    o.attachments
                        .as_deref()
                        .map(|a| (a.blocks.clone(), a.structured.clone()))
                };
                assert_eq!(parts(&got), parts(&want), "{result}");
            }
        }
    }
}
