//! A duplicate call id while the first is unfinished gets an `error` line; the first call is
//! unaffected; the id is free again once its result is out.

mod support;

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
