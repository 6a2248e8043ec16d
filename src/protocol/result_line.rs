//! A plain result's line, written directly: a result with nothing beyond its text (no output
//! file, content blocks, structured content or node) is every no-op's and most calls' result,
//! and serde writes each of its keys through its string escaper, which was about a tenth of a
//! no-op call's whole work. The bytes are exactly those serde writes (the tests compare them).

use crate::call::ToolResult;

/// The line of `result` (with its newline), or None when it carries more than text: serde
/// writes that one.
pub(super) fn plain(result: &ToolResult) -> Option<Vec<u8>> {
    let ToolResult {
        tool_use_id,
        content,
        is_error,
        outcome,
        output_file: None,
        duration_ms,
        content_blocks: None,
        structured_content: None,
        agent_id,
        node: None,
    } = result
    else {
        return None;
    };
    let mut line = Vec::with_capacity(112 + tool_use_id.len() + content.len());
    line.extend_from_slice(br#"{"type":"tool_result","tool_use_id":"#);
    string(&mut line, tool_use_id);
    line.extend_from_slice(br#","content":"#);
    string(&mut line, content);
    line.extend_from_slice(if *is_error {
        br#","is_error":true,"outcome":""#
    } else {
        br#","is_error":false,"outcome":""#
    });
    line.extend_from_slice(outcome.as_str().as_bytes());
    line.push(b'"');
    if let Some(ms) = duration_ms {
        line.extend_from_slice(br#","duration_ms":"#);
        // Writing a number into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut line, ms);
    }
    if let Some(agent) = agent_id {
        line.extend_from_slice(br#","agent_id":"#);
        string(&mut line, agent);
    }
    line.extend_from_slice(b"}\n");
    Some(line)
}

/// `s` as a JSON string, escaped as serde escapes it.
fn string(line: &mut Vec<u8>, s: &str) {
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *line, s);
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::call::Outcome;
    use crate::protocol::ServerMessage;

    fn serde_line(result: &ToolResult) -> Vec<u8> {
        let mut line = serde_json::to_vec(&ServerMessage::ToolResult(result.clone())).unwrap();
        line.push(b'\n');
        line
    }

    #[test]
    fn writes_exactly_what_serde_writes() {
        let outcomes = [
            Outcome::Success,
            Outcome::Failed,
            Outcome::Unavailable,
            Outcome::SchemaError,
            Outcome::ValidationError,
            Outcome::Denied,
            Outcome::Stopped,
            Outcome::Deferred,
            Outcome::Cancelled,
            Outcome::TimedOut,
        ];
        let texts = [
            "",
            "ok",
            "quote \" backslash \\ slash / tab \t newline \n nul \u{0} bell \u{7} del \u{7f}",
            "unicode é 漢字 🦀 \u{2028}\u{2029}",
        ];
        let mut checked = 0;
        for outcome in outcomes {
            for (i, text) in texts.iter().enumerate() {
                for duration_ms in [None, Some(0), Some(u64::MAX)] {
                    for agent_id in [None, Some(Arc::<str>::from("agent \"1\""))] {
                        let mut result = ToolResult::new(format!("id-{i}-{text}"), outcome, *text);
                        result.duration_ms = duration_ms;
                        result.agent_id = agent_id;
                        let line = plain(&result).expect("a plain result");
                        assert_eq!(
                            String::from_utf8(line).unwrap(),
                            String::from_utf8(serde_line(&result)).unwrap()
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 10 * 4 * 3 * 2);
    }

    #[test]
    fn a_result_with_more_than_text_is_left_to_serde() {
        let base = ToolResult::new("r1", Outcome::Success, "ok");
        let mut with_file = base.clone();
        with_file.output_file = Some(PathBuf::from("/tmp/out"));
        let mut with_blocks = base.clone();
        with_blocks.content_blocks = Some(vec![json!({"type": "image"})]);
        let mut with_structured = base.clone();
        with_structured.structured_content = Some(json!({"a": 1}));
        let mut with_node = base.clone();
        with_node.node = Some(Arc::from("w1"));
        for result in [with_file, with_blocks, with_structured, with_node] {
            assert!(plain(&result).is_none(), "{result:?}");
        }
        assert!(plain(&base).is_some());
    }
}
