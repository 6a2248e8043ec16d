//! Calls in and results out in the model APIs' shapes (docs/FORMATS.md): recorded real-shaped
//! messages (tests/fixtures/formats) go in as `anthropic_message`, `openai_chat_message`,
//! `openai_responses_items` or as lines of a `--format` session; each turn is answered by one
//! message in its API's shape, with every call's result in the turn's order.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

const WAIT: Duration = Duration::from_secs(30);

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/formats/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn answer(server: &mut Server, kind: &str, id: &str) -> Value {
    server.wait_for(&format!("{kind} {id}"), WAIT, |v| {
        v["type"] == kind && v["id"] == id
    })
}

fn outcomes(answer: &Value) -> Vec<(String, String)> {
    answer["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["id"].as_str().unwrap().into(),
                o["outcome"].as_str().unwrap().into(),
            )
        })
        .collect()
}

#[test]
fn an_anthropic_turn_of_parallel_calls_is_answered_by_one_user_message_in_tool_use_order() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "first\nsecond\n");
    sb.write("main.rs", "fn main() {}\n");
    let mut server = sb.serve(&["--permission-prompt", "none"]);
    server.send(json!({"type": "anthropic_message", "id": "turn-1", "message": fixture("anthropic_parallel.json")}));
    let done = answer(&mut server, "anthropic_results", "turn-1");
    let message = &done["message"];
    assert_eq!(message["role"], "user");
    let blocks = message["content"].as_array().unwrap();
    let ids: Vec<&str> = blocks
        .iter()
        .map(|b| b["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "toolu_01A09q90qw90lq917835lq9",
            "toolu_01B2c3d4e5f6g7h8i9j0k1l2",
            "toolu_01Cunknowntool0000000000",
            "toolu_01Dwrite00000000000000000"
        ]
    );
    for block in blocks {
        assert_eq!(block["type"], "tool_result");
    }
    assert_eq!(blocks[0]["is_error"], json!(false));
    assert!(
        blocks[0]["content"].as_str().unwrap().contains("first"),
        "{done}"
    );
    assert!(
        blocks[1]["content"].as_str().unwrap().contains("main.rs"),
        "{done}"
    );
    assert_eq!(blocks[2]["is_error"], json!(true), "unknown tool");
    assert!(
        blocks[2]["content"].as_str().unwrap().contains("Summarize"),
        "{done}"
    );
    assert_eq!(blocks[3]["is_error"], json!(true), "denied write");
    let got = outcomes(&done);
    let want = ["success", "success", "unavailable", "denied"];
    assert_eq!(
        got.iter().map(|(_, o)| o.as_str()).collect::<Vec<_>>(),
        want
    );
    // The calls' own result lines are not written: the turn's answer replaces them.
    let done = server.finish();
    assert!(
        done.of_type("tool_result").is_empty(),
        "{:#?}",
        done.messages
    );
    assert_eq!(done.of_type("anthropic_results").len(), 1);
    assert!(!sb.path("summary.txt").exists());
}

#[test]
fn openai_chat_arguments_that_are_not_json_are_that_calls_schema_error_and_nulls_mean_absent() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "first\nsecond\n");
    let mut server = sb.serve(&["--permission-prompt", "none"]);
    let completion = fixture("openai_chat_completion.json");
    server.send(
        json!({"type": "openai_chat_message", "id": "t1", "message": completion["choices"][0]}),
    );
    let done = answer(&mut server, "openai_chat_results", "t1");
    let items = done["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["role"], "tool");
    assert_eq!(items[0]["tool_call_id"], "call_Vu2UQYqNVZdWWHJMpSJRmHNk");
    // `offset: null, limit: null` (strict mode's "absent") read the whole file.
    assert!(
        items[0]["content"].as_str().unwrap().contains("second"),
        "{done}"
    );
    assert_eq!(items[1]["tool_call_id"], "call_3Lb4sF0u6P8Xv1nQeR2tY7zA");
    let text = items[1]["content"].as_str().unwrap();
    assert!(text.contains("not valid JSON"), "{text}");
    assert_eq!(
        outcomes(&done),
        [
            (
                "call_Vu2UQYqNVZdWWHJMpSJRmHNk".to_string(),
                "success".to_string()
            ),
            (
                "call_3Lb4sF0u6P8Xv1nQeR2tY7zA".to_string(),
                "schema_error".to_string()
            )
        ]
    );
    // The whole completion is read too (one choice), its id naming nothing but the turn's.
    server.send(json!({"type": "openai_chat_message", "id": "t2", "message": completion}));
    let again = answer(&mut server, "openai_chat_results", "t2");
    assert_eq!(again["items"].as_array().unwrap().len(), 2);
    server.finish();
}

#[test]
fn a_responses_session_reads_each_response_line_and_cuts_an_over_budget_result_to_a_file() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "first\nsecond\nthird\n");
    let mut server = sb.serve(&[
        "--format",
        "openai-responses",
        "--allowed-tools",
        "Bash(seq *)",
    ]);
    let response = fixture("openai_responses.json");
    server.send(response.clone());
    let id = response["id"].as_str().unwrap();
    let done = answer(&mut server, "openai_responses_results", id);
    let items = done["items"].as_array().unwrap();
    assert_eq!(items[0]["type"], "function_call_output");
    assert_eq!(items[0]["call_id"], "call_12xyz");
    let read = items[0]["output"].as_str().unwrap();
    assert!(
        read.contains("second") && !read.contains("third"),
        "limit 2: {read}"
    );
    assert_eq!(items[1]["call_id"], "call_34abc");
    let bash = items[1]["output"].as_str().unwrap();
    let file = done["outcomes"][1]["output_file"]
        .as_str()
        .expect("over budget: a file");
    assert!(bash.contains(file), "the text names the file: {bash}");
    let whole = std::fs::read_to_string(file).unwrap();
    assert!(whole.ends_with("200000\n"), "the file holds it all");
    // A native line still works in a format session, and list_tools defaults to its format.
    server.send(json!({"type": "list_tools"}));
    let tools = server.wait_for("tools", WAIT, |v| v["type"] == "tools");
    assert_eq!(tools["format"], "openai-responses");
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["strict"] == json!(true))
    );
    server.finish();
}

#[test]
fn permission_requests_and_cancellation_work_as_in_native_turns() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&[]);
    let message = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "w1", "name": "Write", "input": {"file_path": "a.txt", "content": "A"}},
        {"type": "tool_use", "id": "b1", "name": "Bash", "input": {"command": "sleep 30"}}
    ]});
    server.send(json!({"type": "anthropic_message", "id": "t1", "message": message}));
    let ask = server.wait_for("ask", WAIT, |v| {
        v["type"] == "permission_request" && v["tool_use_id"] == "w1"
    });
    server.send(json!({"type": "permission_response", "request_id": ask["request_id"], "behavior": "allow"}));
    let ask = server.wait_for("ask", WAIT, |v| {
        v["type"] == "permission_request" && v["tool_use_id"] == "b1"
    });
    assert_eq!(ask["tool_name"], "Bash");
    server.send(json!({"type": "cancel", "batch": "t1"}));
    let done = answer(&mut server, "anthropic_results", "t1");
    assert_eq!(
        outcomes(&done)
            .into_iter()
            .map(|(_, o)| o)
            .collect::<Vec<_>>(),
        ["success", "cancelled"]
    );
    assert_eq!(std::fs::read_to_string(sb.path("a.txt")).unwrap(), "A");
    server.finish();
}

#[test]
fn an_image_result_goes_out_as_each_api_takes_images() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--allowed-tools", "Snap"]);
    let schema = json!({"type": "object", "properties": {}});
    server.send(
        json!({"type": "register_tools", "tools": [{"name": "Snap", "input_schema": schema}]}),
    );
    server.wait_for("registered", WAIT, |v| v["event"] == "tools_changed");
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let turns = [
        (
            "anthropic_message",
            "message",
            json!([{"type": "tool_use", "id": "s1", "name": "Snap", "input": {}}]),
        ),
        (
            "openai_responses_items",
            "items",
            json!([{"type": "function_call", "call_id": "s2", "name": "Snap", "arguments": "{}"}]),
        ),
    ];
    for (i, (kind, field, body)) in turns.into_iter().enumerate() {
        let id = format!("t{i}");
        server.send(json!({"type": kind, "id": id, field: body}));
        let exec = server.take_for("execute", WAIT, |v| v["type"] == "execute");
        server.send(
            json!({"type": "execute_result", "request_id": exec["request_id"], "content": [
                {"type": "text", "text": "the screen"},
                {"type": "image", "data": png, "mimeType": "image/png"}
            ]}),
        );
    }
    let anthropic = answer(&mut server, "anthropic_results", "t0");
    let content = &anthropic["message"]["content"][0]["content"];
    assert_eq!(content[0], json!({"type": "text", "text": "the screen"}));
    assert_eq!(
        content[1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}})
    );
    let responses = answer(&mut server, "openai_responses_results", "t1");
    let output = &responses["items"][0]["output"];
    assert_eq!(
        output[1],
        json!({"type": "input_image", "image_url": format!("data:image/png;base64,{png}")})
    );
    server.finish();
}

#[test]
fn a_turn_that_cannot_run_is_refused_whole_with_why() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--max-in-flight", "1", "--max-queued", "1"]);
    let call =
        |id: &str| json!({"type": "tool_use", "id": id, "name": "Glob", "input": {"pattern": "*"}});
    let cases = [
        (
            json!({"type": "anthropic_message", "id": "a", "message": {"role": "assistant", "content": "no calls"}}),
            "no_tool_calls",
        ),
        (
            json!({"type": "anthropic_message", "id": "b", "message": [call("1"), call("2"), call("3")]}),
            "too_many_calls",
        ),
    ];
    for (line, code) in cases {
        server.send(line);
        let err = server.take_for("error", WAIT, |v| v["type"] == "error");
        assert_eq!(err["code"], code, "{err}");
    }
    server.send(
        json!({"type": "anthropic_message", "id": "c", "message": {"role": "user", "content": []}}),
    );
    let err = server.take_for("error", WAIT, |v| v["type"] == "error");
    assert!(err["message"].as_str().unwrap().contains("`role`"), "{err}");
    server.send(json!({"type": "openai_chat_message", "id": "d"}));
    let err = server.take_for("error", WAIT, |v| v["type"] == "error");
    assert!(
        err["message"].as_str().unwrap().contains("message"),
        "{err}"
    );
    server.finish();
}
