//! Pure translation between toolrt's values and MCP's: a tool definition and its hints to an
//! MCP tool, a call's one result to a `tools/call` answer.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, MetaObject, Tool as McpTool, ToolAnnotations};
use serde_json::{Map, Value, json};

use crate::call::{Outcome, ToolResult};
use crate::formats::ToolDef;
use crate::tool::Hints;

/// The `_meta` key naming a result's toolrt outcome (`success`, `denied`, …).
pub(crate) const OUTCOME_KEY: &str = "toolrt/outcome";
/// The `_meta` key saying how an ask was settled without a person (`--ask`).
pub(crate) const ASK_KEY: &str = "toolrt/ask";

/// The MCP tools of one definition: the tool itself, then one per alias (same schema and
/// hints; the description says whose alias it is).
pub(crate) fn tools(def: &ToolDef, hints: Hints) -> Vec<McpTool> {
    let schema = match &def.input_schema {
        Value::Object(m) => m.clone(),
        // Every registered schema is an object; MCP requires one.
        _ => Map::from_iter([("type".to_string(), json!("object"))]),
    };
    let schema = Arc::new(schema);
    let annotations = annotations(hints);
    let one = |name: &str, description: String| {
        let mut tool =
            McpTool::new_with_raw(name.to_string(), Some(description.into()), schema.clone());
        if let Some(a) = annotations.clone() {
            tool = tool.with_annotations(a);
        }
        tool
    };
    let mut out = vec![one(&def.name, def.description.clone())];
    for alias in &def.aliases {
        out.push(one(
            alias,
            format!("Another name of {}. {}", def.name, def.description),
        ));
    }
    out
}

/// MCP's annotations for what toolrt knows; None when it knows nothing.
fn annotations(h: Hints) -> Option<ToolAnnotations> {
    if h == Hints::default() {
        return None;
    }
    Some(ToolAnnotations::from_raw(
        None,
        h.read_only,
        h.destructive,
        h.idempotent,
        h.open_world,
    ))
}

/// A call's one result as the `tools/call` answer: content (with the output file as a
/// `resource_link` when the content shows part of it), `isError` as the outcome says, the
/// outcome under `_meta` unless it is a plain success. An `unavailable` call is the JSON-RPC
/// error MCP prescribes for an unknown tool (-32602, invalid params).
pub(crate) fn answer(
    result: ToolResult,
    ask_note: Option<String>,
) -> Result<CallToolResult, ErrorData> {
    if result.outcome == Outcome::Unavailable {
        return Err(ErrorData::invalid_params(result.content, None));
    }
    let mut content = match result.content_blocks {
        // An MCP server's own blocks (images, resources), passed on as they came; one that does
        // not read as a block is described by the text instead.
        Some(blocks) => {
            let parsed: Result<Vec<ContentBlock>, _> = blocks
                .into_iter()
                .map(serde_json::from_value::<ContentBlock>)
                .collect();
            parsed.unwrap_or_else(|_| vec![ContentBlock::text(result.content.clone())])
        }
        None => vec![ContentBlock::text(result.content)],
    };
    if let Some(file) = &result.output_file {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".into());
        let link = json!({
            "type": "resource_link",
            "uri": file_uri(file),
            "name": name,
            "description": "The complete output of the call; the content above shows part of it.",
            "mimeType": "text/plain",
        });
        if let Ok(block) = serde_json::from_value::<ContentBlock>(link) {
            content.push(block);
        }
    }
    let mut answer = if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    answer.structured_content = result.structured_content;
    // A plain success says nothing more than `isError: false`; a client decodes every `_meta`
    // (rmcp's client once for each kind of result it tries), so it comes only when it says
    // something: another outcome, or how an ask was settled.
    if result.outcome != Outcome::Success || ask_note.is_some() {
        let mut meta = Map::new();
        meta.insert(OUTCOME_KEY.into(), json!(result.outcome.as_str()));
        if let Some(note) = ask_note {
            meta.insert(ASK_KEY.into(), json!(note));
        }
        answer.meta = Some(MetaObject::from(meta));
    }
    Ok(answer)
}

/// A `file://` URI for an absolute path, bytes outside the unreserved set and `/` escaped.
pub(crate) fn file_uri(path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn result(outcome: Outcome, content: &str) -> ToolResult {
        ToolResult::new("c", outcome, content)
    }

    #[test]
    fn outcomes_map_to_is_error_or_the_unknown_tool_error() {
        for (outcome, is_error) in [
            (Outcome::Success, Some(false)),
            (Outcome::Deferred, Some(false)),
            (Outcome::Failed, Some(true)),
            (Outcome::Denied, Some(true)),
            (Outcome::SchemaError, Some(true)),
            (Outcome::ValidationError, Some(true)),
            (Outcome::Stopped, Some(true)),
            (Outcome::Cancelled, Some(true)),
            (Outcome::TimedOut, Some(true)),
            (Outcome::Unavailable, None),
        ] {
            let got = answer(result(outcome, "words"), None);
            match (got, is_error) {
                (Ok(r), Some(e)) => {
                    assert_eq!(r.is_error, Some(e), "{outcome:?}");
                    assert_eq!(r.content[0].as_text().unwrap().text, "words");
                    match (outcome, r.meta) {
                        (Outcome::Success, meta) => assert_eq!(meta, None),
                        (_, Some(meta)) => {
                            assert_eq!(meta.0[OUTCOME_KEY], json!(outcome.as_str()))
                        }
                        (_, None) => panic!("{outcome:?} has no _meta"),
                    }
                }
                (Err(e), None) => {
                    assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
                    assert_eq!(e.message, "words");
                }
                (got, _) => panic!("{outcome:?}: {got:?}"),
            }
        }
    }

    #[test]
    fn an_output_file_is_a_resource_link_after_the_notice() {
        let mut r = result(Outcome::Success, "notice and preview");
        r.output_file = Some(PathBuf::from("/tmp/out dir/call 1.txt"));
        let answer = answer(r, Some("allowed".into())).unwrap();
        let blocks = serde_json::to_value(&answer.content).unwrap();
        assert_eq!(blocks[0]["text"], "notice and preview");
        assert_eq!(blocks[1]["type"], "resource_link");
        assert_eq!(blocks[1]["uri"], "file:///tmp/out%20dir/call%201.txt");
        assert_eq!(blocks[1]["name"], "call 1.txt");
        let meta = answer.meta.unwrap();
        assert_eq!(meta.0[ASK_KEY], "allowed");
        assert_eq!(meta.0[OUTCOME_KEY], "success");
    }

    #[test]
    fn mcp_blocks_and_structured_content_pass_through() {
        let mut r = result(Outcome::Success, "[image]");
        r.content_blocks = Some(vec![
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
        ]);
        r.structured_content = Some(json!({"n": 1}));
        let answer = answer(r, None).unwrap();
        let blocks = serde_json::to_value(&answer.content).unwrap();
        assert_eq!(blocks[0]["type"], "image");
        assert_eq!(answer.structured_content, Some(json!({"n": 1})));
    }

    #[test]
    fn tools_carry_hints_and_aliases() {
        let def = ToolDef {
            name: "Read".into(),
            description: "Reads.".into(),
            input_schema: json!({"type": "object"}),
            aliases: vec!["cat".into()],
        };
        let hints = Hints {
            read_only: Some(true),
            ..Default::default()
        };
        let listed = tools(&def, hints);
        let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["Read", "cat"]);
        for t in &listed {
            let a = t.annotations.as_ref().unwrap();
            assert_eq!(a.read_only_hint, Some(true));
            assert_eq!(a.destructive_hint, None);
        }
        assert!(
            listed[1]
                .description
                .as_deref()
                .unwrap()
                .starts_with("Another name of Read.")
        );
        assert!(tools(&def, Hints::default())[0].annotations.is_none());
    }
}
