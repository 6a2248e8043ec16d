//! A duplicate call id while the first is unfinished gets an `error` line; the first call is
//! unaffected; the id is free again once its result is out.

mod support;

use std::time::Duration;

use serde_json::json;
use support::*;

#[test]
fn duplicate_id_in_flight_is_refused_and_first_call_is_unaffected() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    server.tool_use("x", "Bash", json!({"command": "sleep 0.5; echo first"}));
    server.tool_use("x", "Bash", json!({"command": "echo second > second.txt"}));
    let first = server.result("x");
    assert!(first["content"].as_str().unwrap().contains("first"));
    // Reusing the id after its result is fine.
    server.tool_use("x", "Bash", json!({"command": "echo third"}));
    let done = server.finish();
    let results = done.results("x");
    assert_eq!(results.len(), 2, "{:#?}", done.messages);
    assert!(results[1]["content"].as_str().unwrap().contains("third"));
    let errors = done.of_type("error");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("duplicate tool_use id \"x\"")
    );
    assert!(!sb.path("second.txt").exists(), "the refused call ran");
}

#[test]
fn duplicate_ids_inside_one_batch_refuse_only_the_repeat() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[json!({"type": "batch", "id": "b", "calls": [
            {"id": "a", "name": "Bash", "input": {"command": "echo one"}},
            {"id": "a", "name": "Bash", "input": {"command": "echo two > two.txt"}},
            {"id": "c", "name": "Bash", "input": {"command": "echo three"}}
        ]})],
    );
    assert_eq!(done.results("a").len(), 1);
    assert_eq!(done.result("c")["outcome"], "success");
    assert_eq!(done.events("batch_end")[0]["ids"], json!(["a", "c"]));
    assert!(!sb.path("two.txt").exists());
}

#[test]
fn a_batch_id_in_flight_refuses_the_whole_new_batch() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    server.send(json!({"type": "batch", "id": "b", "calls": [
        {"id": "slow", "name": "Bash", "input": {"command": "timeout 20 sh -c 'while [ ! -f go ]; do sleep 0.01; done'"}}
    ]}));
    server.wait_for("batch_start", std::time::Duration::from_secs(10), |v| {
        v["event"] == "batch_start"
    });
    server.send(json!({"type": "batch", "id": "b", "calls": [
        {"id": "other", "name": "Bash", "input": {"command": "touch other.txt"}}
    ]}));
    let error = server.wait_for("an error line", std::time::Duration::from_secs(10), |v| {
        v["type"] == "error"
    });
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("duplicate batch id \"b\""),
        "{error}"
    );
    std::fs::write(sb.path("go"), "").unwrap();
    let done = server.finish();
    assert!(done.results("other").is_empty());
    assert!(!sb.path("other.txt").exists());
    assert_eq!(done.events("batch_start").len(), 1);
    assert_eq!(done.result("slow")["outcome"], "success");
}

#[test]
fn batch_start_lists_the_admitted_ids_in_request_order() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &[],
        &[json!({"type": "batch", "id": "b", "calls": [
            {"id": "z", "name": "Glob", "input": {"pattern": "*"}},
            {"id": "y", "name": "Glob", "input": {"pattern": "*"}},
            {"id": "z", "name": "Glob", "input": {"pattern": "*"}},
            {"id": "x", "name": "Nope", "input": {}}
        ]})],
    );
    assert_eq!(done.events("batch_start")[0]["ids"], json!(["z", "y", "x"]));
    assert_eq!(done.events("batch_end")[0]["ids"], json!(["z", "y", "x"]));
}

#[test]
fn a_refused_duplicate_has_code_duplicate_id_its_ids_and_its_line() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    let wait = "timeout 20 sh -c 'while [ ! -f go ]; do sleep 0.01; done'";
    // Line 1: a call that stays in flight until `go` exists.
    server.tool_use("x", "Bash", json!({"command": wait}));
    // Line 2: the same id again.
    server.tool_use("x", "Bash", json!({"command": "touch second"}));
    // Line 3: a batch repeating ids within itself and naming the one in flight.
    server.send(json!({"type": "batch", "id": "b", "calls": [
        {"id": "a", "name": "Bash", "input": {"command": "echo one"}},
        {"id": "x", "name": "Bash", "input": {"command": "touch third"}},
        {"id": "a", "name": "Bash", "input": {"command": "touch fourth"}},
        {"id": "c", "name": "Bash", "input": {"command": "echo three"}}
    ]}));
    server.wait_for("batch b's end", Duration::from_secs(10), |v| {
        v["event"] == "batch_end"
    });
    std::fs::write(sb.path("go"), "").unwrap();
    let done = server.finish();
    let errors = done.of_type("error");
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert_eq!(errors[0]["code"], "duplicate_id");
    assert_eq!(errors[0]["ids"], json!(["x"]));
    assert_eq!(errors[0]["line"], 2);
    // One error line for the batch lists every refused id, in request order.
    assert_eq!(errors[1]["code"], "duplicate_id");
    assert_eq!(errors[1]["ids"], json!(["x", "a"]));
    assert_eq!(errors[1]["line"], 3);
    let message = errors[1]["message"].as_str().unwrap();
    assert!(
        message.contains("(in batch \"b\")") && message.contains(r#""x", "a""#),
        "{message}"
    );
    // The others ran; the first `x` is unaffected.
    assert_eq!(done.events("batch_start")[0]["ids"], json!(["a", "c"]));
    assert_eq!(done.result("a")["outcome"], "success");
    assert_eq!(done.result("c")["outcome"], "success");
    assert_eq!(done.result("x")["outcome"], "success");
    for f in ["second", "third", "fourth"] {
        assert!(!sb.path(f).exists(), "{f} ran");
    }
}

#[test]
fn a_refused_batch_id_has_code_duplicate_id_and_names_the_calls_not_accepted() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    server.send(json!({"type": "batch", "id": "b", "calls": [
        {"id": "slow", "name": "Bash", "input": {"command": "timeout 20 sh -c 'while [ ! -f go ]; do sleep 0.01; done'"}}
    ]}));
    server.send(json!({"type": "batch", "id": "b", "calls": [
        {"id": "p", "name": "Bash", "input": {"command": "touch p"}},
        {"id": "q", "name": "Bash", "input": {"command": "touch q"}}
    ]}));
    let error = server.wait_for("an error line", Duration::from_secs(10), |v| {
        v["type"] == "error"
    });
    assert_eq!(error["code"], "duplicate_id");
    assert_eq!(error["ids"], json!(["p", "q"]));
    assert_eq!(error["line"], 2);
    std::fs::write(sb.path("go"), "").unwrap();
    let done = server.finish();
    assert!(done.results("p").is_empty() && done.results("q").is_empty());
    assert!(!sb.path("p").exists() && !sb.path("q").exists());
}
