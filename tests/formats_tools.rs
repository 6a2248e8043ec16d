//! `toolrt tools --format …`: the effective registry (built-ins after `--tools`, aliases, MCP
//! servers' tools) as each API's tool-definition list, strict-mode schemas for OpenAI.

mod support;

use serde_json::{Value, json};
use support::*;

/// Runs `toolrt tools <args>` in the sandbox's project: (exit code, stdout, stderr).
fn tools(sb: &Sandbox, args: &[&str]) -> (i32, String, String) {
    cli(sb, "tools", args)
}

fn list(sb: &Sandbox, args: &[&str]) -> Vec<Value> {
    let (code, out, err) = tools(sb, args);
    assert_eq!(code, 0, "{out}\n{err}");
    match serde_json::from_str(&out) {
        Ok(Value::Array(items)) => items,
        other => panic!("not a JSON array: {other:?}\n{out}"),
    }
}

/// Every object of a strict schema lists its properties, requires them all and allows no
/// other; no keyword outside strict mode's subset appears.
fn assert_strict(schema: &Value, at: &str) {
    let obj = schema
        .as_object()
        .unwrap_or_else(|| panic!("{at}: {schema}"));
    for key in obj.keys() {
        assert!(
            [
                "type",
                "description",
                "enum",
                "const",
                "pattern",
                "format",
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
                "multipleOf",
                "minItems",
                "maxItems",
                "properties",
                "required",
                "additionalProperties",
                "items",
                "anyOf",
                "$ref",
                "$defs",
            ]
            .contains(&key.as_str()),
            "{at}: keyword {key} in a strict schema"
        );
    }
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        assert_eq!(obj["additionalProperties"], json!(false), "{at}");
        let mut required: Vec<&str> = obj["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
        required.sort_unstable();
        names.sort_unstable();
        assert_eq!(required, names, "{at}: every property is required");
        for (name, prop) in props {
            assert_strict(prop, &format!("{at}.{name}"));
        }
    }
    if let Some(items) = obj.get("items") {
        assert_strict(items, &format!("{at}[]"));
    }
    for branch in obj
        .get("anyOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        assert_strict(branch, &format!("{at}.anyOf"));
    }
}

#[test]
fn each_format_lists_the_selected_tools_in_its_shape() {
    let sb = Sandbox::new();
    let names = |items: &[Value], pick: &dyn Fn(&Value) -> Value| -> Vec<Value> {
        items.iter().map(pick).collect()
    };
    let native = list(&sb, &["--tools", "Bash,Read", "--format", "native"]);
    assert_eq!(
        names(&native, &|t| t["name"].clone()),
        [json!("Bash"), json!("Read")]
    );
    assert_eq!(
        native[1]["input_schema"]["properties"]["file_path"]["type"],
        "string"
    );
    assert!(native[0]["description"].as_str().unwrap().len() > 20);

    let anthropic = list(&sb, &["--tools", "Bash,Read", "--format", "anthropic"]);
    assert_eq!(anthropic.len(), 2);
    for (tool, native) in anthropic.iter().zip(&native) {
        let keys: Vec<&String> = tool.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["name", "description", "input_schema"]);
        assert_eq!(
            tool["input_schema"], native["input_schema"],
            "Anthropic takes the schema as is"
        );
    }

    let chat = list(&sb, &["--tools", "Bash,Read", "--format", "openai-chat"]);
    assert_eq!(
        names(&chat, &|t| t["function"]["name"].clone()),
        [json!("Bash"), json!("Read")]
    );
    for tool in &chat {
        assert_eq!(tool["type"], "function");
        assert_eq!(tool["function"]["strict"], json!(true), "{tool}");
        assert_strict(&tool["function"]["parameters"], "parameters");
    }
    // An optional field is required and nullable; a required one stays as it is.
    let read = &chat[1]["function"]["parameters"]["properties"];
    assert_eq!(read["offset"]["type"], json!(["integer", "null"]));
    assert_eq!(read["file_path"]["type"], json!("string"));

    let responses = list(
        &sb,
        &["--tools", "Bash,Read", "--format", "openai-responses"],
    );
    for (tool, chat) in responses.iter().zip(&chat) {
        assert_eq!(tool["type"], "function");
        assert_eq!(tool["name"], chat["function"]["name"]);
        assert_eq!(tool["parameters"], chat["function"]["parameters"]);
        assert_eq!(tool["strict"], json!(true));
    }
}

#[test]
fn every_built_in_comes_out_strict_for_openai() {
    let sb = Sandbox::new();
    let (code, out, err) = tools(&sb, &["--format", "openai-responses"]);
    assert_eq!(code, 0, "{err}");
    let items: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert!(items.len() >= 10, "{out}");
    for tool in &items {
        assert_eq!(tool["strict"], json!(true), "{}: {err}", tool["name"]);
        assert_strict(&tool["parameters"], tool["name"].as_str().unwrap());
    }
    assert!(!err.contains("strict: false"), "{err}");
}

#[test]
fn aliases_are_listed_beside_their_tool_in_native_only() {
    let sb = Sandbox::new();
    let settings = sb.settings_file(&json!({"aliases": {"Shell": "Bash"}}));
    let native = list(&sb, &["--settings", &settings, "--tools", "Bash"]);
    assert_eq!(native.len(), 1);
    assert_eq!(native[0]["aliases"], json!(["Shell"]));
    let anthropic = list(
        &sb,
        &[
            "--settings",
            &settings,
            "--tools",
            "Bash",
            "--format",
            "anthropic",
        ],
    );
    assert_eq!(anthropic.len(), 1, "the model is offered each tool once");
    assert_eq!(anthropic[0]["name"], "Bash");
}

#[test]
fn a_bare_name_deny_removes_the_tool_from_the_list() {
    let sb = Sandbox::new();
    let native = list(&sb, &["--tools", "Bash,Read", "--disallowed-tools", "Bash"]);
    let names: Vec<&str> = native.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Read"]);
}

#[test]
fn mcp_servers_tools_are_listed() {
    let sb = Sandbox::new();
    let file = mcp::config_file(&sb, json!({"raw": mcp::raw("normal")}));
    let items = list(
        &sb,
        &[
            "--mcp-config",
            file.to_str().unwrap(),
            "--tools",
            "mcp__raw",
            "--format",
            "openai-chat",
        ],
    );
    let names: Vec<&str> = items
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        !names.is_empty() && names.iter().all(|n| n.starts_with("mcp__raw__")),
        "{names:?}"
    );
    for tool in &items {
        assert_strict(&tool["function"]["parameters"], "mcp tool");
    }
}

#[test]
fn bad_flags_are_refused_with_exit_2() {
    let sb = Sandbox::new();
    let (code, _, err) = tools(&sb, &["--format", "openai"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown format \"openai\""), "{err}");
    let (code, _, err) = tools(&sb, &["--tools", "Nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown tool \"Nope\""), "{err}");
}
