//! `agent_id` on `tool_use` and `batch`: read, checked, carried with the call and echoed on its
//! one result, whatever the outcome; a bad one refuses the line with the field named.

mod support;

use serde_json::{Value, json};
use support::*;

fn agent_of(v: &Value) -> Option<&str> {
    v.get("agent_id").and_then(Value::as_str)
}

#[test]
fn every_result_of_an_agents_call_repeats_its_agent_id() {
    let sb = Sandbox::new();
    sb.write("f.txt", "hello\n");
    // Input stays open until every result is in: the end of input would end the agents' scopes
    // and cancel their unfinished calls (docs/SEMANTICS.md, the cancellation tree).
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    for line in [
        json!({"type": "agent_start", "agent_id": "a-1", "agent_type": "any"}),
        json!({"type": "agent_start", "agent_id": "a-2", "agent_type": "any"}),
        json!({"type": "tool_use", "id": "plain", "name": "Read", "input": {"file_path": "f.txt"}}),
        json!({"type": "tool_use", "id": "one", "name": "Read", "input": {"file_path": "f.txt"}, "agent_id": "a-1"}),
        // The general parser's path (an extra field) reads it the same way.
        json!({"type": "tool_use", "id": "extra", "name": "Read", "input": {"file_path": "f.txt"}, "agent_id": "a-1", "note": 1}),
        json!({"type": "batch", "id": "b", "agent_id": "a-2", "calls": [
            {"id": "b1", "name": "Read", "input": {"file_path": "f.txt"}},
            {"id": "b2", "name": "Read", "input": {"file_path": "f.txt"}, "agent_id": "a-2"},
            // Refused before it runs: the result still says whose call it was.
            {"id": "b3", "name": "NoSuchTool", "input": {}},
            {"id": "b4", "name": "Read", "input": {"file_path": 7}},
        ]}),
    ] {
        server.send(line);
    }
    for id in ["plain", "one", "extra", "b1", "b2", "b3", "b4"] {
        server.result(id);
    }
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert_eq!(agent_of(done.result("plain")), None);
    assert_eq!(done.result("plain")["outcome"], "success");
    for (id, agent, outcome) in [
        ("one", "a-1", "success"),
        ("extra", "a-1", "success"),
        ("b1", "a-2", "success"),
        ("b2", "a-2", "success"),
        ("b3", "a-2", "unavailable"),
        ("b4", "a-2", "schema_error"),
    ] {
        let r = done.result(id);
        assert_eq!(agent_of(r), Some(agent), "{id}: {r}");
        assert_eq!(r["outcome"], outcome, "{id}: {r}");
    }
}

#[test]
fn a_cancelled_agents_call_repeats_its_agent_id() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&[
        "--permission-mode",
        "bypassPermissions",
        "--max-in-flight",
        "1",
    ]);
    for agent in ["runner", "other"] {
        server.send(json!({"type": "agent_start", "agent_id": agent, "agent_type": "any"}));
    }
    server.send(json!({"type": "tool_use", "id": "long", "name": "Bash", "input": {"command": "touch started; sleep 30"}, "agent_id": "runner"}));
    wait_file(&sb.path("started"));
    // Waits for the only slot: cancelled before it runs.
    server.send(json!({"type": "tool_use", "id": "queued", "name": "Bash", "input": {"command": "true"}, "agent_id": "other"}));
    server.send(json!({"type": "cancel", "id": "queued"}));
    server.send(json!({"type": "cancel", "id": "long"}));
    let done = server.finish();
    for (id, agent) in [("long", "runner"), ("queued", "other")] {
        let r = done.result(id);
        assert_eq!(r["outcome"], "cancelled", "{r}");
        assert_eq!(agent_of(r), Some(agent), "{r}");
    }
}

#[test]
fn a_bad_agent_id_refuses_the_line_and_names_the_field() {
    let sb = Sandbox::new();
    let long = "x".repeat(257);
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[
            json!({"type": "tool_use", "id": "empty", "name": "Read", "agent_id": ""}),
            json!({"type": "tool_use", "id": "null", "name": "Read", "agent_id": null}),
            json!({"type": "tool_use", "id": "num", "name": "Read", "agent_id": 3}),
            json!({"type": "tool_use", "id": "ctl", "name": "Read", "agent_id": "a\u{1b}[31m"}),
            json!({"type": "tool_use", "id": "long", "name": "Read", "agent_id": long}),
            json!({"type": "batch", "id": "mixed", "agent_id": "a", "calls": [
                {"id": "m1", "name": "Read"},
                {"id": "m2", "name": "Read", "agent_id": "b"},
            ]}),
        ],
    );
    assert!(done.status.success(), "{}", done.stderr);
    assert!(
        done.of_type("tool_result").is_empty(),
        "a refused line ran: {:#?}",
        done.messages
    );
    let errors: Vec<String> = done
        .of_type("error")
        .iter()
        .map(|e| e["message"].as_str().unwrap_or_default().to_string())
        .collect();
    let expected = [
        "tool_use: field `agent_id`: must not be empty",
        "tool_use: field `agent_id`: expected a string, got null",
        "tool_use: field `agent_id`: expected a string, got integer",
        "tool_use: field `agent_id`: must not contain control characters",
        "tool_use: field `agent_id`: longer than 256 bytes (got 257)",
        "batch: field `calls[1].agent_id`: differs from the batch's",
    ];
    assert_eq!(errors.len(), expected.len(), "{errors:#?}");
    for (got, want) in errors.iter().zip(expected) {
        assert!(
            got.starts_with(want),
            "{got:?} does not start with {want:?}"
        );
        assert!(!got.contains(&long), "the error quotes the value");
    }
}
