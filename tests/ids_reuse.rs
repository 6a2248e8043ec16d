//! A call id may be used again once its result is out, and the new call inherits nothing from the
//! old one: not its cancellation, not its batch, not its checkpoints.

mod support;

use std::time::Duration;

use serde_json::json;
use support::*;

const BYPASS: &[&str] = &["--permission-mode", "bypassPermissions"];

/// A Bash command that waits until `file` exists (a gate the test opens).
fn gated(file: &str) -> serde_json::Value {
    json!({"command": format!("while [ ! -e {file} ]; do sleep 0.02; done; echo {file}")})
}

#[test]
fn an_id_cancelled_while_queued_in_a_batch_runs_normally_in_a_later_batch() {
    let sb = Sandbox::new();
    let mut server = sb.serve(BYPASS);
    // B1: a gated exclusive call, then y waiting for its turn. Cancel y while it waits.
    server.send(json!({"type": "batch", "id": "B1", "calls": [
        {"id": "x1", "name": "Bash", "input": gated("gate1")},
        {"id": "y", "name": "Bash", "input": {"command": "echo old > old.txt"}}
    ]}));
    server.send(json!({"type": "cancel", "id": "y"}));
    let first = server.take_for("y's first result", Duration::from_secs(10), |v| {
        is_result(v, "y")
    });
    assert_eq!(first["outcome"], "cancelled");
    // B2 reuses y behind a gated call of its own; B1 is still running x1.
    server.send(json!({"type": "batch", "id": "B2", "calls": [
        {"id": "z", "name": "Bash", "input": gated("gate2")},
        {"id": "y", "name": "Bash", "input": {"command": "echo new"}}
    ]}));
    server.wait_for("B2 started", Duration::from_secs(10), |v| {
        v["event"] == "batch_start" && v["batch"] == "B2"
    });
    // B1 goes on past the cancelled y: it must not touch the new y.
    sb.write("gate1", "");
    assert_eq!(server.result("x1")["outcome"], "success");
    server.wait_for("B1 ended", Duration::from_secs(10), |v| {
        v["event"] == "batch_end" && v["batch"] == "B1"
    });
    sb.write("gate2", "");
    let second = server.result("y");
    assert_eq!(second["outcome"], "success", "{second}");
    assert_eq!(second["content"], "new\n");
    let done = server.finish();
    assert_eq!(
        done.results("y").len(),
        1,
        "the reused y got exactly one result"
    );
    assert!(!sb.path("old.txt").exists(), "the cancelled y ran");
}

#[test]
fn cancelling_an_old_batch_leaves_a_reused_id_alone() {
    let sb = Sandbox::new();
    let mut server = sb.serve(BYPASS);
    // B1: a quick call a, then a gated one that keeps B1 in flight.
    server.send(json!({"type": "batch", "id": "B1", "calls": [
        {"id": "a", "name": "Bash", "input": {"command": "echo first"}},
        {"id": "g", "name": "Bash", "input": gated("gate")}
    ]}));
    assert_eq!(
        server.take_for("a", Duration::from_secs(10), |v| is_result(v, "a"))["outcome"],
        "success"
    );
    // a is free again: reuse it for a call of its own, then cancel B1.
    server.tool_use("a", "Bash", gated("gate-a"));
    server.wait_for("B1 in flight", Duration::from_secs(1), |v| {
        v["event"] == "batch_start"
    });
    server.send(json!({"type": "cancel", "batch": "B1"}));
    assert_eq!(server.result("g")["outcome"], "cancelled");
    sb.write("gate-a", "");
    let a = server.result("a");
    assert_eq!(
        a["outcome"], "success",
        "cancel of B1 reached the reused id: {a}"
    );
    server.finish();
}

#[test]
fn a_reused_id_after_a_cancel_of_a_lone_call_runs() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&[
        "--permission-mode",
        "bypassPermissions",
        "--max-in-flight",
        "1",
    ]);
    server.tool_use("hold", "Bash", gated("gate"));
    server.tool_use("q", "Bash", json!({"command": "echo old > old.txt"}));
    server.send(json!({"type": "cancel", "id": "q"}));
    assert_eq!(
        server.take_for("q", Duration::from_secs(10), |v| is_result(v, "q"))["outcome"],
        "cancelled"
    );
    server.tool_use("q", "Bash", json!({"command": "echo new"}));
    sb.write("gate", "");
    let q = server.result("q");
    assert_eq!(q["outcome"], "success", "{q}");
    let done = server.finish();
    assert_eq!(done.results("q").len(), 1);
    assert!(!sb.path("old.txt").exists());
}

#[test]
fn rewinding_a_reused_id_undoes_its_latest_call_first() {
    let sb = Sandbox::new();
    let mut server = sb.serve(BYPASS);
    let file = sb.write("f.txt", "v0");
    server.tool_use("r", "Read", json!({"file_path": file}));
    server.take_for("read", Duration::from_secs(10), |v| is_result(v, "r"));
    for content in ["v1", "v2"] {
        server.tool_use("w", "Write", json!({"file_path": file, "content": content}));
        let w = server.take_for("write", Duration::from_secs(10), |v| is_result(v, "w"));
        assert_eq!(w["outcome"], "success", "{w}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "v2");
    for expected in ["v1", "v0"] {
        server.send(json!({"type": "rewind", "to": "w"}));
        server.take_for("rewound", Duration::from_secs(10), |v| {
            v["event"] == "rewound"
        });
        assert_eq!(std::fs::read_to_string(&file).unwrap(), expected);
    }
    server.send(json!({"type": "rewind", "to": "w"}));
    let err = server.take_for("rewind error", Duration::from_secs(10), |v| {
        v["type"] == "error"
    });
    assert!(
        err["message"].as_str().unwrap().contains("no checkpoint"),
        "{err}"
    );
    server.finish();
}
