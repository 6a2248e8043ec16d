//! Client tools come and go over the wire: `register_tools` adds tools the client runs, a call
//! of one reaches the client as an `execute` with the input as checked (coerced), and its
//! `execute_result` becomes the call's one result. Refused registrations change nothing;
//! `unregister_tools` removes tools while a call of one is still in flight.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::client::{answer, error_with, execute_of, register, tool};
use support::*;

fn hello_tools(server: &mut Server) -> Value {
    server.send(json!({"type": "hello"}));
    server.take_for("hello", Duration::from_secs(20), |v| v["type"] == "hello")["tools"].clone()
}

#[test]
fn a_registered_tool_is_called_through_execute_and_answered_once() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--allowed-tools", "Lookup"]);
    let changed = register(&mut server, json!([tool("Lookup", json!({}))]));
    assert_eq!(changed["added"], json!(["Lookup"]), "{changed}");
    assert!(
        hello_tools(&mut server)
            .as_array()
            .unwrap()
            .contains(&json!("Lookup"))
    );
    // "n" arrives as a string and is coerced to the schema's integer before the client sees it.
    server.tool_use("c1", "Lookup", json!({"q": "rust", "n": "3"}));
    let execute = execute_of(&mut server, "c1");
    assert_eq!(execute["name"], "Lookup");
    assert_eq!(execute["input"], json!({"q": "rust", "n": 3}));
    assert!(
        execute["request_id"]
            .as_str()
            .is_some_and(|r| !r.is_empty())
    );
    answer(&mut server, &execute, json!("found 3 crates"));
    let result = server.result("c1");
    assert_eq!(result["outcome"], "success", "{result}");
    assert_eq!(result["content"], "found 3 crates");
    // An error answer is a failed call; content blocks are read like an MCP result's.
    server.tool_use("c2", "Lookup", json!({"q": "x"}));
    let execute = execute_of(&mut server, "c2");
    server.send(json!({"type": "execute_result", "request_id": execute["request_id"], "content": "no index", "is_error": true}));
    let failed = server.result("c2");
    assert_eq!(
        (failed["outcome"].as_str(), failed["is_error"].as_bool()),
        (Some("failed"), Some(true))
    );
    assert_eq!(failed["content"], "no index");
    server.tool_use("c3", "Lookup", json!({"q": "img"}));
    let execute = execute_of(&mut server, "c3");
    let blocks = json!([
        {"type": "text", "text": "a picture"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    ]);
    answer(&mut server, &execute, blocks.clone());
    let with_blocks = server.result("c3");
    assert_eq!(with_blocks["outcome"], "success", "{with_blocks}");
    assert!(
        with_blocks["content"]
            .as_str()
            .unwrap()
            .starts_with("a picture\n[image: image/png"),
        "{with_blocks}"
    );
    assert_eq!(with_blocks["content_blocks"], blocks);
    // A schema error never reaches the client.
    server.tool_use("c4", "Lookup", json!({"n": 1}));
    let bad = server.result("c4");
    assert_eq!(bad["outcome"], "schema_error", "{bad}");
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
    for id in ["c1", "c2", "c3", "c4"] {
        done.result(id);
    }
    assert!(
        !done
            .messages
            .iter()
            .any(|v| v["type"] == "execute" && v["tool_use_id"] == "c4")
    );
    assert!(
        done.of_type("error").is_empty(),
        "{:#?}",
        done.of_type("error")
    );
}

#[test]
fn a_refused_registration_names_each_tool_and_registers_none_of_them() {
    let sb = Sandbox::new();
    let settings = sb.settings_file(&json!({"aliases": {"Shell": "Bash"}}));
    let mut server = sb.serve(&["--settings", &settings, "--allowed-tools", "Good"]);
    register(&mut server, json!([tool("Taken", json!({}))]));
    let bad_schema = json!({"name": "BadSchema", "input_schema": {"type": "object", "properties": {"a": {"type": 12}}}});
    for (tools, needles) in [
        (
            json!([tool("Good", json!({})), tool("Read", json!({}))]),
            vec!["\"Read\": the name is reserved"],
        ),
        (
            json!([tool("Good", json!({})), tool("TaskOutput", json!({}))]),
            vec!["TaskOutput: another tool already has this name"],
        ),
        (
            json!([tool("Good", json!({})), tool("Shell", json!({}))]),
            vec!["Shell: an alias has this name"],
        ),
        (
            json!([tool("Good", json!({})), tool("Taken", json!({}))]),
            vec!["Taken: another tool already has this name"],
        ),
        (
            json!([tool("Good", json!({})), tool("Good", json!({}))]),
            vec!["Good: another tool already has this name"],
        ),
        (
            json!([tool("Good", json!({})), bad_schema]),
            vec!["tool BadSchema: invalid input schema"],
        ),
        (
            json!([tool("Good", json!({})), {"name": "Arr", "input_schema": {"type": "array"}}]),
            vec!["\"Arr\": invalid input schema"],
        ),
        (
            json!([
                tool("Good", json!({})),
                tool("has space", json!({})),
                tool("mcp__x__y", json!({}))
            ]),
            vec!["\"has space\": invalid name", "\"mcp__x__y\": invalid name"],
        ),
    ] {
        server.send(json!({"type": "register_tools", "tools": tools}));
        let error = error_with(&mut server, "register_tools refused, nothing was changed");
        let message = error["message"].as_str().unwrap();
        for needle in needles {
            assert!(message.contains(needle), "{tools}: {message}");
        }
    }
    // A line whose shape is wrong is refused by the parser, naming the field.
    server.send(json!({"type": "register_tools", "tools": [{"name": "Good"}]}));
    error_with(&mut server, "field `tools[0].input_schema`: missing");
    server.tool_use("g", "Good", json!({"q": "x"}));
    let g = server.result("g");
    assert_eq!(g["outcome"], "unavailable", "{g}");
    let done = server.finish();
    // Only the first registration (taken from `seen` above) changed the tools.
    assert!(
        done.events("tools_changed").is_empty(),
        "{:#?}",
        done.messages
    );
    assert!(!done.messages.iter().any(|v| v["type"] == "execute"));
}

#[test]
fn unregistering_leaves_a_call_in_flight_its_tool_and_later_calls_unavailable() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--allowed-tools", "Slow"]);
    register(&mut server, json!([tool("Slow", json!({}))]));
    server.tool_use("first", "Slow", json!({"q": "1"}));
    let execute = execute_of(&mut server, "first");
    server.send(json!({"type": "unregister_tools", "names": ["Slow"]}));
    let changed = server.take_for("tools_changed", Duration::from_secs(20), |v| {
        v["event"] == "tools_changed"
    });
    assert_eq!(changed["removed"], json!(["Slow"]), "{changed}");
    server.tool_use("later", "Slow", json!({"q": "2"}));
    let later = server.result("later");
    assert_eq!(later["outcome"], "unavailable", "{later}");
    // Unregistering what is not (or no longer) registered is refused whole.
    server.send(json!({"type": "unregister_tools", "names": ["Slow"]}));
    error_with(&mut server, "Slow: no such tool was registered");
    answer(&mut server, &execute, json!("finished anyway"));
    let first = server.result("first");
    assert_eq!(first["outcome"], "success", "{first}");
    assert_eq!(first["content"], "finished anyway");
    // The name is free again.
    let changed = register(&mut server, json!([tool("Slow", json!({}))]));
    assert_eq!(changed["added"], json!(["Slow"]));
    let done = server.finish();
    assert!(done.status.success());
    done.result("first");
    done.result("later");
}

#[test]
fn the_tools_flag_does_not_filter_client_tools() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--tools", "Read", "--allowed-tools", "Mine"]);
    let changed = register(&mut server, json!([tool("Mine", json!({}))]));
    assert_eq!(changed["added"], json!(["Mine"]));
    assert_eq!(hello_tools(&mut server), json!(["Mine", "Read"]));
    server.tool_use("m", "Mine", json!({"q": "x"}));
    let execute = execute_of(&mut server, "m");
    answer(&mut server, &execute, json!("ok"));
    assert_eq!(server.result("m")["outcome"], "success");
    // Built-ins outside the selection stay unavailable.
    server.tool_use("b", "Bash", json!({"command": "true"}));
    assert_eq!(server.result("b")["outcome"], "unavailable");
    server.finish();
}
