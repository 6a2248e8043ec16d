//! The model APIs' own shapes: tool definitions out, tool calls in, results out, for the
//! Anthropic Messages API, OpenAI Chat Completions and OpenAI Responses (docs/FORMATS.md).
//!
//! Pure translation, one file per API: the server and the runtime call it at the edge; the
//! dispatcher, the supervisor and the stages never see a format. It knows calls and results
//! (`call`), nothing else of the crate.

use serde_json::{Map, Value, json};

use crate::call::{ToolCall, ToolResult};

pub(crate) mod anthropic;
pub(crate) mod openai_chat;
pub(crate) mod openai_responses;
pub(crate) mod strict;

/// Which API's shapes a message or a session speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Format {
    /// toolrt's own (docs/PROTOCOL.md).
    #[default]
    Native,
    /// The Anthropic Messages API.
    Anthropic,
    /// OpenAI Chat Completions.
    OpenAiChat,
    /// OpenAI Responses.
    OpenAiResponses,
}

/// A format name that is not one of [`Format::NAMES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown format {} (expected one of native, anthropic, openai-chat, openai-responses)",
    crate::quote::quoted(&self.0)
)]
pub struct UnknownFormat(pub String);

impl Format {
    /// Every format's name, as flags and messages spell it.
    pub const NAMES: [&'static str; 4] = ["native", "anthropic", "openai-chat", "openai-responses"];

    /// The name flags and messages use.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::Anthropic => "anthropic",
            Format::OpenAiChat => "openai-chat",
            Format::OpenAiResponses => "openai-responses",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "native" => Format::Native,
            "anthropic" => Format::Anthropic,
            "openai-chat" => Format::OpenAiChat,
            "openai-responses" => Format::OpenAiResponses,
            other => return Err(UnknownFormat(other.to_string())),
        })
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Longest call id and tool name read from an API message, in bytes (the wire's own limit).
pub const MAX_ID_BYTES: usize = 256;

/// Why an API message cannot be read: where in it, and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}`: {expected}")]
pub struct ShapeError {
    /// The path inside the message, e.g. `content[2].id`.
    pub field: String,
    /// What was expected there.
    pub expected: String,
}

impl ShapeError {
    fn new(field: impl Into<String>, expected: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            expected: expected.into(),
        }
    }
}

/// The tool calls of one model turn, read from an API message.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Turn {
    /// The calls, in the message's order.
    pub calls: Vec<ToolCall>,
    /// The message's own id, when it carries one (`msg_…`, `chatcmpl-…`, `resp_…`).
    pub id: Option<String>,
}

/// Reads the tool calls out of `body`, an API message in `format`'s shape (native has none:
/// it is refused).
pub fn read_calls(format: Format, body: &Value) -> Result<Turn, ShapeError> {
    let turn = match format {
        Format::Anthropic => anthropic::calls(body),
        Format::OpenAiChat => openai_chat::calls(body),
        Format::OpenAiResponses => openai_responses::calls(body),
        Format::Native => Err(ShapeError::new(
            "format",
            "native calls are tool_use and batch lines",
        )),
    }?;
    // Each call is answered by its id: two calls with one id could not be told apart.
    let mut seen = std::collections::HashSet::new();
    if let Some(twice) = turn.calls.iter().find(|c| !seen.insert(c.id.as_str())) {
        return Err(ShapeError::new(
            "id",
            format!("call id {:?} is used by two calls of the message", twice.id),
        ));
    }
    Ok(turn)
}

/// The answer to one turn in `format`'s shape: the Anthropic `user` message, the list of Chat
/// Completions `tool` messages, or the list of Responses `function_call_output` items; the
/// results in the turn's order.
pub fn results_body(format: Format, results: &[&ToolResult]) -> Value {
    match format {
        Format::Anthropic => anthropic::results(results),
        Format::OpenAiChat => openai_chat::results(results),
        Format::OpenAiResponses | Format::Native => openai_responses::results(results),
    }
}

/// A string field of a call: present, non-empty, at most [`MAX_ID_BYTES`].
fn id_field(obj: &Map<String, Value>, key: &str, at: &str) -> Result<String, ShapeError> {
    let field = || format!("{at}.{key}");
    match obj.get(key) {
        Some(Value::String(s)) if s.is_empty() => {
            Err(ShapeError::new(field(), "must not be empty"))
        }
        Some(Value::String(s)) if s.len() > MAX_ID_BYTES => Err(ShapeError::new(
            field(),
            format!("longer than {MAX_ID_BYTES} bytes (got {})", s.len()),
        )),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(ShapeError::new(
            field(),
            format!("expected a string, got {}", type_name(other)),
        )),
        None => Err(ShapeError::new(field(), "missing (expected a string)")),
    }
}

/// A message's `role`, when it has one, must be the assistant's.
fn assistant_role(obj: &Map<String, Value>, at: &str) -> Result<(), ShapeError> {
    match obj.get("role") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(r)) if r == "assistant" => Ok(()),
        Some(other) => Err(ShapeError::new(
            format!("{at}role"),
            format!(
                "expected \"assistant\" (the model's message holds the calls), got {}",
                match other {
                    Value::String(role) => crate::quote::quoted(role),
                    other => type_name(other).to_string(),
                }
            ),
        )),
    }
}

/// The message's own id, if it has a usable one.
fn own_id(obj: &Map<String, Value>) -> Option<String> {
    obj.get("id")
        .and_then(Value::as_str)
        .filter(|id| {
            !id.is_empty() && id.len() <= MAX_ID_BYTES && !id.chars().any(char::is_control)
        })
        .map(str::to_string)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A result's content blocks (MCP's shape) as `(kind, payload)`: text, or an image's media type
/// and base64 data; any other block is described in a line of text.
fn blocks(result: &ToolResult) -> Option<Vec<Block<'_>>> {
    let raw = result.content_blocks.as_ref()?;
    Some(
        raw.iter()
            .map(|b| match (b.get("type").and_then(Value::as_str), b) {
                (Some("text"), _) => {
                    Block::Text(b.get("text").and_then(Value::as_str).unwrap_or("").into())
                }
                (Some("image"), _) => match (
                    b.get("mimeType").and_then(Value::as_str),
                    b.get("data").and_then(Value::as_str),
                ) {
                    (Some(mime), Some(data)) if IMAGE_TYPES.contains(&mime) => {
                        Block::Image { mime, data }
                    }
                    (mime, data) => Block::Text(
                        format!(
                            "[image: {}, {} base64 characters; a type the API does not take]",
                            mime.unwrap_or("unknown type"),
                            data.map_or(0, str::len)
                        )
                        .into(),
                    ),
                },
                (Some("resource"), _) => {
                    match b.pointer("/resource/text").and_then(Value::as_str) {
                        Some(text) => Block::Text(text.into()),
                        None => Block::Text(describe(b).into()),
                    }
                }
                _ => Block::Text(describe(b).into()),
            })
            .collect(),
    )
}

/// Image types every API here takes inline.
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// A block that is neither text nor image, in one line.
fn describe(block: &Value) -> String {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let uri = block
        .get("uri")
        .or_else(|| block.pointer("/resource/uri"))
        .and_then(Value::as_str);
    match uri {
        Some(uri) => format!("[{kind}: {uri}]"),
        None => format!("[{kind} block]"),
    }
}

/// One content block of a result, as the APIs can take it.
enum Block<'a> {
    Text(std::borrow::Cow<'a, str>),
    Image { mime: &'a str, data: &'a str },
}

/// The outcome of each result, in order: `[{id, outcome, output_file?}]`, for the client (the
/// APIs' shapes have no room for them).
pub fn outcomes(results: &[&ToolResult]) -> Value {
    Value::Array(
        results
            .iter()
            .map(|r| {
                let mut o = Map::new();
                o.insert("id".into(), Value::from(r.tool_use_id.as_str()));
                o.insert("outcome".into(), Value::from(r.outcome.as_str()));
                if let Some(f) = &r.output_file {
                    o.insert(
                        "output_file".into(),
                        Value::from(f.to_string_lossy().into_owned()),
                    );
                }
                Value::Object(o)
            })
            .collect(),
    )
}

/// One tool of the effective registry, as a definition for a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// The canonical name.
    pub name: String,
    /// Text for the model.
    pub description: String,
    /// The input schema toolrt checks calls against.
    pub input_schema: Value,
    /// Other names the model may call it by (settings `aliases`), sorted.
    pub aliases: Vec<String>,
}

/// A tool left out of a list, or listed in a weaker form, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// The tool.
    pub name: String,
    /// Why, in words for a person.
    pub reason: String,
}

/// The registry as one API's tool-definition list.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolList {
    /// The definitions, in the API's shape, sorted by name.
    pub tools: Vec<Value>,
    /// OpenAI formats: tools whose schema could not be made strict, listed with `strict: false`.
    pub non_strict: Vec<Note>,
    /// Tools the API cannot take at all (a name it refuses), left out.
    pub skipped: Vec<Note>,
}

impl ToolList {
    /// The body of the `tools` message: `{format, tools}`, with `non_strict` and `skipped`
    /// when there are any.
    pub fn to_message_fields(&self, format: Format) -> Value {
        let mut body = Map::new();
        body.insert("format".into(), Value::from(format.as_str()));
        body.insert("tools".into(), Value::Array(self.tools.clone()));
        let notes = |notes: &[Note]| {
            Value::Array(
                notes
                    .iter()
                    .map(|n| json!({"name": n.name, "reason": n.reason}))
                    .collect(),
            )
        };
        if !self.non_strict.is_empty() {
            body.insert("non_strict".into(), notes(&self.non_strict));
        }
        if !self.skipped.is_empty() {
            body.insert("skipped".into(), notes(&self.skipped));
        }
        Value::Object(body)
    }
}

/// The tools as `format`'s definition list. Each tool is listed once, by its canonical name
/// (native lists its aliases beside it; an API list would offer the model the same tool twice).
pub fn tool_list(format: Format, defs: &[ToolDef]) -> ToolList {
    let mut defs: Vec<&ToolDef> = defs.iter().collect();
    defs.sort_by(|a, b| a.name.cmp(&b.name));
    let mut list = ToolList::default();
    for def in defs {
        match format {
            Format::Native => list.tools.push(native_def(def)),
            Format::Anthropic => match name_problem(&def.name, anthropic::MAX_NAME_CHARS) {
                Some(reason) => list.skipped.push(note(def, reason)),
                None => list.tools.push(anthropic::definition(def)),
            },
            Format::OpenAiChat | Format::OpenAiResponses => {
                if let Some(reason) = name_problem(&def.name, openai_chat::MAX_NAME_CHARS) {
                    list.skipped.push(note(def, reason));
                    continue;
                }
                let strict = strict::strict_schema(&def.input_schema);
                if let Err(reason) = &strict {
                    list.non_strict.push(note(def, reason.clone()));
                }
                list.tools.push(match format {
                    Format::OpenAiChat => openai_chat::definition(def, strict.ok()),
                    _ => openai_responses::definition(def, strict.ok()),
                });
            }
        }
    }
    list
}

fn note(def: &ToolDef, reason: String) -> Note {
    Note {
        name: def.name.clone(),
        reason,
    }
}

/// toolrt's own definition: the `register_tools` shape, with the aliases.
fn native_def(def: &ToolDef) -> Value {
    let mut obj = Map::new();
    obj.insert("name".into(), Value::from(def.name.as_str()));
    obj.insert("description".into(), Value::from(def.description.as_str()));
    obj.insert("input_schema".into(), def.input_schema.clone());
    if !def.aliases.is_empty() {
        obj.insert("aliases".into(), Value::from(def.aliases.clone()));
    }
    Value::Object(obj)
}

/// Why the APIs would refuse `name` as a tool name, if they would: both take 1 to `max`
/// characters of `A-Z a-z 0-9 _ -`.
fn name_problem(name: &str, max: usize) -> Option<String> {
    if name.is_empty() || name.len() > max {
        return Some(format!(
            "the API takes tool names of 1 to {max} characters; this one has {}",
            name.chars().count()
        ));
    }
    name.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        .map(|c| format!("the API takes only A-Z a-z 0-9 _ - in tool names; this one has {c:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(name: &str, schema: Value) -> ToolDef {
        ToolDef {
            name: name.into(),
            description: format!("{name} does things"),
            input_schema: schema,
            aliases: Vec::new(),
        }
    }

    fn obj_schema() -> Value {
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})
    }

    #[test]
    fn format_names_round_trip() {
        for name in Format::NAMES {
            let f: Format = name.parse().unwrap();
            assert_eq!(f.as_str(), name);
        }
        assert!("openai".parse::<Format>().is_err());
    }

    #[test]
    fn each_format_has_its_shape() {
        let defs = [def("Lookup", obj_schema())];
        let cases: [(Format, Value); 4] = [
            (
                Format::Native,
                json!({"name": "Lookup", "description": "Lookup does things", "input_schema": obj_schema()}),
            ),
            (
                Format::Anthropic,
                json!({"name": "Lookup", "description": "Lookup does things", "input_schema": obj_schema()}),
            ),
            (
                Format::OpenAiChat,
                json!({"type": "function", "function": {"name": "Lookup", "description": "Lookup does things",
                    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"], "additionalProperties": false},
                    "strict": true}}),
            ),
            (
                Format::OpenAiResponses,
                json!({"type": "function", "name": "Lookup", "description": "Lookup does things",
                    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"], "additionalProperties": false},
                    "strict": true}),
            ),
        ];
        for (format, want) in cases {
            let list = tool_list(format, &defs);
            assert_eq!(list.tools, vec![want], "{format}");
            assert!(list.non_strict.is_empty() && list.skipped.is_empty());
        }
    }

    #[test]
    fn a_schema_that_cannot_be_strict_is_listed_non_strict_with_why() {
        let schema = json!({"type": "object", "properties": {"x": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}});
        let list = tool_list(Format::OpenAiResponses, &[def("Odd", schema.clone())]);
        assert_eq!(list.tools[0]["strict"], json!(false));
        assert_eq!(list.tools[0]["parameters"], schema);
        assert_eq!(list.non_strict.len(), 1);
        assert!(
            list.non_strict[0].reason.contains("oneOf"),
            "{:?}",
            list.non_strict
        );
    }

    #[test]
    fn names_the_api_refuses_are_skipped() {
        let long = format!("mcp__server__{}", "x".repeat(60));
        let defs = [def(&long, obj_schema()), def("ok", obj_schema())];
        for format in [Format::OpenAiChat, Format::OpenAiResponses] {
            let list = tool_list(format, &defs);
            assert_eq!(list.tools.len(), 1);
            assert_eq!(list.skipped[0].name, long);
        }
        // Anthropic takes longer names.
        assert_eq!(tool_list(Format::Anthropic, &defs).tools.len(), 2);
        assert!(name_problem("a.b", 64).unwrap().contains("'.'"));
    }

    #[test]
    fn native_lists_aliases_and_sorts_by_name() {
        let mut bash = def("Bash", obj_schema());
        bash.aliases = vec!["Shell".into()];
        let list = tool_list(Format::Native, &[def("Read", obj_schema()), bash]);
        assert_eq!(list.tools[0]["name"], "Bash");
        assert_eq!(list.tools[0]["aliases"], json!(["Shell"]));
        assert_eq!(list.tools[1]["name"], "Read");
        assert!(list.tools[1].get("aliases").is_none());
    }
}

#[cfg(test)]
mod api_tests;
