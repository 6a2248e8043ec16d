//! Batches keep request order for side effects and emit `batch_start` / `batch_end`.

mod support;

use serde_json::json;
use support::*;

#[test]
fn write_then_read_in_one_batch_sees_the_write() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[json!({"type": "batch", "id": "b1", "calls": [
            {"id": "w", "name": "Write", "input": {"file_path": "notes/n.txt", "content": "written by w\n"}},
            {"id": "r", "name": "Read", "input": {"file_path": "notes/n.txt"}},
            {"id": "w2", "name": "Write", "input": {"file_path": "notes/n.txt", "content": "second\n"}},
            {"id": "r2", "name": "Read", "input": {"file_path": "notes/n.txt"}}
        ]})],
    );
    assert!(done.status.success());
    assert!(
        done.result("r")["content"]
            .as_str()
            .unwrap()
            .contains("written by w")
    );
    assert!(
        done.result("r2")["content"]
            .as_str()
            .unwrap()
            .contains("second")
    );
    let start = done.events("batch_start");
    assert_eq!(start.len(), 1);
    assert_eq!(start[0]["ids"], json!(["w", "r", "w2", "r2"]));
    let end = done.events("batch_end");
    assert_eq!(end[0]["batch"], "b1");
    assert_eq!(end[0]["ids"], json!(["w", "r", "w2", "r2"]));
    // batch_end comes after every result of the batch.
    let pos =
        |pred: &dyn Fn(&serde_json::Value) -> bool| done.messages.iter().position(pred).unwrap();
    let end_at = pos(&|v| v["event"] == "batch_end");
    for id in ["w", "r", "w2", "r2"] {
        assert!(pos(&|v| is_result(v, id)) < end_at);
    }
}

#[test]
fn one_failure_does_not_cancel_its_siblings() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[json!({"type": "batch", "id": "b", "calls": [
            {"id": "bad", "name": "Bash", "input": {"command": "exit 3"}},
            {"id": "nope", "name": "Nope", "input": {}},
            {"id": "schema", "name": "Read", "input": {}},
            {"id": "good", "name": "Bash", "input": {"command": "echo fine"}}
        ]})],
    );
    assert_eq!(done.result("bad")["outcome"], "failed");
    assert!(
        done.result("bad")["content"]
            .as_str()
            .unwrap()
            .contains("exit code 3")
    );
    assert_eq!(done.result("nope")["outcome"], "unavailable");
    assert_eq!(done.result("schema")["outcome"], "schema_error");
    assert_eq!(done.result("good")["outcome"], "success");
}

#[test]
fn empty_batch_starts_and_ends() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &[],
        &[json!({"type": "batch", "id": "e", "calls": []})],
    );
    assert_eq!(done.events("batch_start").len(), 1);
    assert_eq!(done.events("batch_end")[0]["ids"], json!([]));
}
