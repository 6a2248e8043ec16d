//! The messages of orchestrator-defined tools (docs/PROTOCOL.md, "Client tools"):
//! `register_tools`, `unregister_tools` and `execute_result` in; `execute` and `execute_cancel`
//! out (in [`super::ServerMessage`]). This module reads their shape only; whether a name may be
//! taken or a schema compiles is for whoever registers the tools.

use serde_json::{Map, Value};

use super::{LineError, MAX_ID_BYTES, check_len, field_err, json_type};

/// One tool of a `register_tools` message, as the client described it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientToolSpec {
    /// The tool's name, as the model calls it and as rules and hooks name it.
    pub name: String,
    /// One paragraph for the model (empty when not given).
    pub description: String,
    /// The JSON schema of the input object.
    pub input_schema: Value,
    /// Whether calls may run beside other concurrency-safe calls of a batch; defaults to
    /// `read_only`.
    pub concurrency_safe: Option<bool>,
    /// The client says its calls only read. It makes calls concurrency-safe by default; it
    /// grants no permission (toolrt cannot check it).
    pub read_only: bool,
    /// How long toolrt waits for the `execute_result` of one call, in milliseconds; `None`
    /// for the default.
    pub timeout_ms: Option<u64>,
}

impl ClientToolSpec {
    /// A tool named `name` with this input schema and every option at its default.
    pub fn new(name: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            description: String::new(),
            input_schema,
            concurrency_safe: None,
            read_only: false,
            timeout_ms: None,
        }
    }
}

/// The client's answer to an `execute`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecuteResult {
    /// The `request_id` of the `execute` answered.
    pub request_id: String,
    /// What the tool returned.
    pub content: ExecuteContent,
    /// The tool ran and reports an error (the call's outcome is `failed`).
    pub is_error: bool,
}

/// What an `execute_result` carries.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecuteContent {
    /// Plain text.
    Text(String),
    /// Content blocks (MCP's shape: `{"type": "text", "text": …}`, `{"type": "image", …}`),
    /// each an object with a string `type`.
    Blocks(Vec<Value>),
}

const REGISTER: &str = "register_tools";
const UNREGISTER: &str = "unregister_tools";
const RESULT: &str = "execute_result";

/// Longest `description` of a client tool, in bytes.
pub(crate) const MAX_DESCRIPTION_BYTES: usize = 64 * 1024;

/// Reads a `register_tools` message's `tools`.
pub(super) fn parse_register(
    obj: &mut Map<String, Value>,
) -> Result<Vec<ClientToolSpec>, LineError> {
    let items = match obj.remove("tools") {
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(field_err(
                REGISTER,
                "tools",
                format!(
                    "expected an array of tool objects, got {}",
                    json_type(&other)
                ),
            ));
        }
        None => {
            return Err(field_err(
                REGISTER,
                "tools",
                "missing (expected an array of tool objects)".into(),
            ));
        }
    };
    if items.is_empty() {
        return Err(field_err(
            REGISTER,
            "tools",
            "empty (expected at least one tool)".into(),
        ));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| parse_spec(i, item))
        .collect()
}

fn parse_spec(i: usize, item: Value) -> Result<ClientToolSpec, LineError> {
    let at = |field: &str| format!("tools[{i}].{field}");
    let Value::Object(mut tool) = item else {
        return Err(field_err(
            REGISTER,
            &format!("tools[{i}]"),
            format!("expected a tool object, got {}", json_type(&item)),
        ));
    };
    let name = match tool.remove("name") {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(field_err(
                REGISTER,
                &at("name"),
                format!("expected a string, got {}", json_type(&other)),
            ));
        }
        None => {
            return Err(field_err(
                REGISTER,
                &at("name"),
                "missing (expected a string)".into(),
            ));
        }
    };
    check_len(REGISTER, &at("name"), &name, MAX_ID_BYTES)?;
    let description = match tool.remove("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => {
            check_len(REGISTER, &at("description"), &s, MAX_DESCRIPTION_BYTES)?;
            s
        }
        Some(other) => {
            return Err(field_err(
                REGISTER,
                &at("description"),
                format!("expected a string, got {}", json_type(&other)),
            ));
        }
    };
    let input_schema = match tool.remove("input_schema") {
        Some(schema @ Value::Object(_)) => schema,
        Some(other) => {
            return Err(field_err(
                REGISTER,
                &at("input_schema"),
                format!("expected a JSON schema object, got {}", json_type(&other)),
            ));
        }
        None => {
            return Err(field_err(
                REGISTER,
                &at("input_schema"),
                "missing (expected a JSON schema object)".into(),
            ));
        }
    };
    let flag = |tool: &Map<String, Value>, field: &str| match tool.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(field_err(
            REGISTER,
            &at(field),
            format!("expected a boolean, got {}", json_type(other)),
        )),
    };
    let concurrency_safe = flag(&tool, "concurrency_safe")?;
    let read_only = flag(&tool, "read_only")?.unwrap_or(false);
    let timeout_ms = match tool.get("timeout_ms") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_u64().is_some_and(|ms| ms > 0) => n.as_u64(),
        Some(other) => {
            return Err(field_err(
                REGISTER,
                &at("timeout_ms"),
                format!(
                    "expected a positive whole number of milliseconds, got {}",
                    match other {
                        Value::Number(n) => n.to_string(),
                        other => json_type(other).to_string(),
                    }
                ),
            ));
        }
    };
    Ok(ClientToolSpec {
        name,
        description,
        input_schema,
        concurrency_safe,
        read_only,
        timeout_ms,
    })
}

/// Reads an `unregister_tools` message's `names`.
pub(super) fn parse_unregister(obj: &Map<String, Value>) -> Result<Vec<String>, LineError> {
    let Some(Value::Array(items)) = obj.get("names") else {
        return Err(field_err(
            UNREGISTER,
            "names",
            match obj.get("names") {
                None => "missing (expected an array of tool names)".into(),
                Some(other) => format!("expected an array of tool names, got {}", json_type(other)),
            },
        ));
    };
    if items.is_empty() {
        return Err(field_err(
            UNREGISTER,
            "names",
            "empty (expected at least one tool name)".into(),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => {
                check_len(UNREGISTER, &format!("names[{i}]"), s, MAX_ID_BYTES)?;
                Ok(s.clone())
            }
            other => Err(field_err(
                UNREGISTER,
                &format!("names[{i}]"),
                format!("expected a string, got {}", json_type(other)),
            )),
        })
        .collect()
}

/// The common `execute_result` — `type`, `request_id`, text `content`, perhaps `is_error`, each
/// once and well formed — read straight into its fields, without building the line's JSON
/// object first (every client tool's call has one). Anything else (content blocks, another
/// field, a field twice, a wrong type, an over-long id) is `None`: the general parser reads the
/// line and words any error, so answers and error lines are the same either way.
pub(super) fn plain_result(line: &str) -> Option<ExecuteResult> {
    #[derive(serde::Deserialize)]
    enum Kind {
        #[serde(rename = "execute_result")]
        ExecuteResult,
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Line {
        #[serde(rename = "type")]
        _kind: Kind,
        request_id: String,
        content: String,
        // Missing or `null` is false, as in the general parser.
        #[serde(default)]
        is_error: Option<bool>,
    }
    // A derived struct would also accept a JSON array of its fields.
    if !line.trim_start().starts_with('{') {
        return None;
    }
    let parsed: Line = serde_json::from_str(line).ok()?;
    if parsed.request_id.len() > MAX_ID_BYTES {
        return None;
    }
    Some(ExecuteResult {
        request_id: parsed.request_id,
        content: ExecuteContent::Text(parsed.content),
        is_error: parsed.is_error.unwrap_or(false),
    })
}

/// How much of a line too long to read [`over_long_result_id`] looks at.
pub(crate) const HEAD_BYTES: usize = 64 * 1024;

/// The `request_id` of a line too long to read (`head` is its start), if the first
/// [`HEAD_BYTES`] show an `execute_result`: an object whose top level gives `type`
/// `"execute_result"` and a string `request_id` (within [`MAX_ID_BYTES`]), each once, before
/// the cut. The answer was lost to the line limit; its call can be told so at once rather than
/// at its time limit. Anything else is `None`, and the line is only reported, as any other.
pub(crate) fn over_long_result_id(head: &[u8]) -> Option<String> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};

    #[derive(Default)]
    struct Found {
        kind: Option<String>,
        id: Option<String>,
        twice: bool,
    }
    struct Head<'a>(&'a mut Found);
    impl<'de> Visitor<'de> for Head<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        // Reads fields until the cut (an error there is expected): what was found before it is
        // kept in `Found`.
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                let slot = match key.as_str() {
                    "type" => &mut self.0.kind,
                    "request_id" => &mut self.0.id,
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                };
                self.0.twice |= slot.is_some();
                *slot = Some(map.next_value::<String>()?);
            }
            Ok(())
        }
    }
    let head = &head[..head.len().min(HEAD_BYTES)];
    let mut found = Found::default();
    let mut de = serde_json::Deserializer::from_slice(head);
    let _ = (&mut de).deserialize_map(Head(&mut found));
    let Found { kind, id, twice } = found;
    (!twice && kind.as_deref() == Some("execute_result"))
        .then_some(id?)
        .filter(|id| id.len() <= MAX_ID_BYTES)
}

/// Reads an `execute_result` message.
pub(super) fn parse_result(obj: &mut Map<String, Value>) -> Result<ExecuteResult, LineError> {
    let request_id = super::string_field(obj, RESULT, "request_id", "")?;
    let content = match obj.remove("content") {
        Some(Value::String(s)) => ExecuteContent::Text(s),
        Some(Value::Array(blocks)) => {
            for (i, block) in blocks.iter().enumerate() {
                if block.get("type").and_then(Value::as_str).is_none() {
                    return Err(field_err(
                        RESULT,
                        &format!("content[{i}]"),
                        "expected a content block: an object with a string `type`".into(),
                    ));
                }
            }
            ExecuteContent::Blocks(blocks)
        }
        Some(other) => {
            return Err(field_err(
                RESULT,
                "content",
                format!(
                    "expected a string or an array of content blocks, got {}",
                    json_type(&other)
                ),
            ));
        }
        None => {
            return Err(field_err(
                RESULT,
                "content",
                "missing (expected a string or an array of content blocks)".into(),
            ));
        }
    };
    let is_error = match obj.get("is_error") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(field_err(
                RESULT,
                "is_error",
                format!("expected a boolean, got {}", json_type(other)),
            ));
        }
    };
    Ok(ExecuteResult {
        request_id,
        content,
        is_error,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{ClientMessage, parse_line};
    use super::*;
    use serde_json::json;

    #[test]
    fn register_tools_reads_every_field_and_defaults_the_rest() {
        let line = r#"{"type":"register_tools","tools":[{"name":"Lookup","description":"d","input_schema":{"type":"object"},"concurrency_safe":false,"read_only":true,"timeout_ms":500},{"name":"Bare","input_schema":{"type":"object"}}]}"#;
        let Ok(ClientMessage::RegisterTools { tools }) = parse_line(line) else {
            panic!("parses")
        };
        assert_eq!(
            tools[0],
            ClientToolSpec {
                name: "Lookup".into(),
                description: "d".into(),
                input_schema: json!({"type": "object"}),
                concurrency_safe: Some(false),
                read_only: true,
                timeout_ms: Some(500),
            }
        );
        assert_eq!(
            tools[1],
            ClientToolSpec::new("Bare", json!({"type": "object"}))
        );
    }

    #[test]
    fn execute_result_takes_text_or_blocks() {
        let Ok(ClientMessage::ExecuteResult(r)) =
            parse_line(r#"{"type":"execute_result","request_id":"exec-1","content":"ok"}"#)
        else {
            panic!("parses")
        };
        assert_eq!(r.content, ExecuteContent::Text("ok".into()));
        assert!(!r.is_error);
        let Ok(ClientMessage::ExecuteResult(r)) = parse_line(
            r#"{"type":"execute_result","request_id":"exec-1","content":[{"type":"text","text":"a"}],"is_error":true}"#,
        ) else {
            panic!("parses")
        };
        assert_eq!(
            r.content,
            ExecuteContent::Blocks(vec![json!({"type": "text", "text": "a"})])
        );
        assert!(r.is_error);
        let Ok(ClientMessage::UnregisterTools { names }) =
            parse_line(r#"{"type":"unregister_tools","names":["A","B"]}"#)
        else {
            panic!("parses")
        };
        assert_eq!(names, ["A", "B"]);
    }

    /// An over-long line's start names the answer's request only when it plainly is one.
    #[test]
    fn an_over_long_lines_start_names_an_execute_result_only_when_it_is_one() {
        let long_id = "x".repeat(MAX_ID_BYTES + 1);
        let late_id = format!(
            r#"{{"type":"execute_result","content":"{}","request_id":"exec-2"}}"#,
            "y".repeat(HEAD_BYTES)
        );
        let too_long_id = format!(r#"{{"type":"execute_result","request_id":"{long_id}""#);
        for (head, want) in [
            (
                r#"{"type":"execute_result","request_id":"exec-1","content":"aaaa"#,
                Some("exec-1"),
            ),
            (
                r#" {"request_id" : "exec-\u0031", "type":"execute_result","content":["#,
                Some("exec-1"),
            ),
            (
                r#"{"is_error":true,"content":[{"type":"text","request_id":"no"}],"type":"execute_result","request_id":"exec-3","x"#,
                Some("exec-3"),
            ),
            // Not an answer, not at the top level, not a string, given twice, cut too early.
            (
                r#"{"type":"tool_use","request_id":"exec-1","input":{"#,
                None,
            ),
            (
                r#"{"content":{"type":"execute_result","request_id":"exec-1"},"x":"#,
                None,
            ),
            (
                r#"{"type":"execute_result","request_id":7,"content":""#,
                None,
            ),
            (
                r#"{"type":"execute_result","request_id":"exec-1","request_id":"exec-2","c"#,
                None,
            ),
            (r#"{"type":"execute_result","content":"aaaaaaaa"#, None),
            (r#"{"type":"execute_result","request_id":"exec-"#, None),
            (r#"["execute_result","exec-1"#, None),
            (late_id.as_str(), None),
            (too_long_id.as_str(), None),
        ] {
            assert_eq!(
                over_long_result_id(head.as_bytes()).as_deref(),
                want,
                "{}",
                &head[..head.len().min(120)]
            );
        }
    }

    /// The fast path reads what the general parser reads, and leaves every other line to it.
    #[test]
    fn the_execute_result_fast_path_agrees_with_the_general_parser() {
        let long = "x".repeat(MAX_ID_BYTES + 1);
        let too_long =
            format!(r#"{{"type":"execute_result","request_id":"{long}","content":"a"}}"#);
        for (line, fast) in [
            (
                r#"{"type":"execute_result","request_id":"exec-1","content":"ok"}"#,
                true,
            ),
            (
                r#"{"content":"ok","request_id":"exec-2","type":"execute_result"}"#,
                true,
            ),
            (
                r#" {"type":"execute_result","request_id":"","content":"","is_error":true}"#,
                true,
            ),
            (
                r#"{"type":"execute_result","request_id":"e","content":"a","is_error":null}"#,
                true,
            ),
            (
                r#"{"type":"execute_result","request_id":"e","content":[{"type":"text","text":"a"}]}"#,
                false,
            ),
            (
                r#"{"type":"execute_result","request_id":"e","content":"a","extra":1}"#,
                false,
            ),
            (
                r#"{"type":"execute_result","request_id":"e","request_id":"f","content":"a"}"#,
                false,
            ),
            (
                r#"{"type":"execute_result","request_id":"e","content":"a","is_error":"yes"}"#,
                false,
            ),
            (
                r#"{"type":"execute_result","request_id":7,"content":"a"}"#,
                false,
            ),
            (r#"{"type":"execute_result","request_id":"e"}"#, false),
            (
                r#"{"type":"execute_result","request_id":"e","content":null}"#,
                false,
            ),
            (r#"{"type":"execute_result","content":"a"}"#, false),
            (r#"["execute_result","e","a"]"#, false),
            (
                r#"{"type":"tool_use","request_id":"e","content":"a"}"#,
                false,
            ),
            (too_long.as_str(), false),
        ] {
            assert_eq!(plain_result(line).is_some(), fast, "{line}");
            assert_eq!(
                format!("{:?}", parse_line(line)),
                format!("{:?}", super::super::parse::parse_any(line)),
                "{line}"
            );
        }
    }

    #[test]
    fn errors_name_the_field() {
        for (line, needle) in [
            (
                r#"{"type":"register_tools"}"#,
                "register_tools: field `tools`: missing",
            ),
            (
                r#"{"type":"register_tools","tools":[]}"#,
                "field `tools`: empty",
            ),
            (
                r#"{"type":"register_tools","tools":[3]}"#,
                "field `tools[0]`: expected a tool object",
            ),
            (
                r#"{"type":"register_tools","tools":[{"input_schema":{}}]}"#,
                "field `tools[0].name`: missing",
            ),
            (
                r#"{"type":"register_tools","tools":[{"name":"A"}]}"#,
                "field `tools[0].input_schema`: missing",
            ),
            (
                r#"{"type":"register_tools","tools":[{"name":"A","input_schema":true}]}"#,
                "field `tools[0].input_schema`: expected a JSON schema object, got boolean",
            ),
            (
                r#"{"type":"register_tools","tools":[{"name":"A","input_schema":{},"read_only":"yes"}]}"#,
                "field `tools[0].read_only`: expected a boolean",
            ),
            (
                r#"{"type":"register_tools","tools":[{"name":"A","input_schema":{},"timeout_ms":0}]}"#,
                "field `tools[0].timeout_ms`: expected a positive whole number of milliseconds, got 0",
            ),
            (
                r#"{"type":"register_tools","tools":[{"name":"A","input_schema":{},"timeout_ms":1.5}]}"#,
                "got 1.5",
            ),
            (
                r#"{"type":"unregister_tools","names":"A"}"#,
                "field `names`: expected an array",
            ),
            (
                r#"{"type":"unregister_tools","names":[1]}"#,
                "field `names[0]`: expected a string",
            ),
            (
                r#"{"type":"execute_result","content":"x"}"#,
                "field `request_id`: missing",
            ),
            (
                r#"{"type":"execute_result","request_id":"r"}"#,
                "field `content`: missing",
            ),
            (
                r#"{"type":"execute_result","request_id":"r","content":{"a":1}}"#,
                "expected a string or an array of content blocks, got object",
            ),
            (
                r#"{"type":"execute_result","request_id":"r","content":[{"text":"a"}]}"#,
                "field `content[0]`: expected a content block",
            ),
            (
                r#"{"type":"execute_result","request_id":"r","content":"","is_error":1}"#,
                "field `is_error`: expected a boolean",
            ),
        ] {
            let err = parse_line(line).unwrap_err().to_string();
            assert!(err.contains(needle), "{line}: {err}");
        }
    }
}
