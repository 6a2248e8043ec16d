//! A long-running MCP tool: its `notifications/progress` become `progress` events; a `cancel`
//! (of the call, of its batch, or every call on SIGINT) and a per-call timeout send
//! `notifications/cancelled`, and the Python server's tool sees the cancellation (it logs it).

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use support::Sandbox;
use support::mcp::{self, probe, status_event};

/// Waits until the server's cancellation log has `n` lines (the server writes it when its
/// tool is cancelled), and returns them.
fn cancellations(log: &Path, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let lines: Vec<String> = std::fs::read_to_string(log)
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect();
        if lines.len() >= n || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn progress_events_then_cancel_reaches_the_server() {
    let sandbox = Sandbox::new();
    let log = sandbox.dir.path().join("cancel.log");
    let mut server = mcp::serve(
        &sandbox,
        json!({"probe": probe(json!({"PROBE_CANCEL_LOG": log}))}),
        &["--permission-mode", "bypassPermissions"],
    );
    status_event(&mut server, "probe", "connected");
    // One that runs to its end: every step is a progress event, before the result.
    server.tool_use(
        "done",
        "mcp__probe__slow",
        json!({"seconds": 0.6, "steps": 3}),
    );
    let r = server.result("done");
    assert_eq!(r["outcome"], "success", "{r}");
    let progress: Vec<_> = server
        .seen
        .iter()
        .filter(|v| v["event"] == "progress" && v["tool_use_id"] == "done")
        .map(|v| v["data"].clone())
        .collect();
    assert_eq!(progress.len(), 3, "{progress:?}");
    assert_eq!(
        progress[0],
        json!({"progress": 1.0, "total": 3.0, "message": "step 1/3"})
    );
    let result_at = server
        .seen
        .iter()
        .position(|v| support::is_result(v, "done"))
        .unwrap();
    let last_progress_at = server
        .seen
        .iter()
        .rposition(|v| v["event"] == "progress" && v["tool_use_id"] == "done")
        .unwrap();
    assert!(last_progress_at < result_at || progress.len() == 3);

    // One cancelled after its second progress event.
    server.tool_use("c", "mcp__probe__slow", json!({"seconds": 30, "steps": 60}));
    for _ in 0..2 {
        server.take_for("progress of c", Duration::from_secs(20), |v| {
            v["event"] == "progress" && v["tool_use_id"] == "c"
        });
    }
    server.send(json!({"type": "cancel", "id": "c"}));
    let c = server.result("c");
    assert_eq!(c["outcome"], "cancelled", "{c}");
    assert!(
        c["content"]
            .as_str()
            .unwrap()
            .contains("notifications/cancelled"),
        "{c}"
    );
    let seen = cancellations(&log, 1);
    assert_eq!(seen.len(), 1, "the server saw the cancellation: {seen:?}");
    assert!(
        seen[0].starts_with("cancelled slow request_id="),
        "{seen:?}"
    );

    // A batch cancel reaches both of its calls.
    server.send(json!({"type": "batch", "id": "B", "calls": [
        {"type": "tool_use", "id": "b1", "name": "mcp__probe__slow", "input": {"seconds": 30, "steps": 60}},
        {"type": "tool_use", "id": "b2", "name": "mcp__probe__slow", "input": {"seconds": 30, "steps": 60}}
    ]}));
    server.take_for("progress of b1", Duration::from_secs(20), |v| {
        v["event"] == "progress" && v["tool_use_id"] == "b1"
    });
    server.send(json!({"type": "cancel", "batch": "B"}));
    assert_eq!(server.result("b1")["outcome"], "cancelled");
    assert_eq!(server.result("b2")["outcome"], "cancelled");
    // b2 runs after b1 (slow is not read-only): only b1 had started on the server.
    let seen = cancellations(&log, 2);
    assert_eq!(seen.len(), 2, "{seen:?}");
    // The server is still usable afterwards.
    server.tool_use("e", "mcp__probe__echo", json!({"message": "still here"}));
    assert_eq!(server.result("e")["content"], "still here");
    server.finish();
}

#[test]
fn a_call_past_its_timeout_is_timed_out_and_cancelled_on_the_server() {
    let sandbox = Sandbox::new();
    let log = sandbox.dir.path().join("cancel.log");
    let mut config = probe(json!({"PROBE_CANCEL_LOG": log}));
    config["timeout"] = json!(1000);
    let mut server = mcp::serve(
        &sandbox,
        json!({"probe": config}),
        &["--permission-mode", "bypassPermissions"],
    );
    status_event(&mut server, "probe", "connected");
    server.tool_use("t", "mcp__probe__slow", json!({"seconds": 20, "steps": 2}));
    let t = server.result("t");
    assert_eq!(t["outcome"], "timed_out", "{t}");
    assert!(
        t["content"].as_str().unwrap().contains("within 1000 ms"),
        "{t}"
    );
    assert_eq!(cancellations(&log, 1).len(), 1);
    server.finish();
}

#[test]
fn sigint_cancels_mcp_calls_in_flight() {
    let sandbox = Sandbox::new();
    let log = sandbox.dir.path().join("cancel.log");
    let mut server = mcp::serve(
        &sandbox,
        json!({"probe": probe(json!({"PROBE_CANCEL_LOG": log}))}),
        &["--permission-mode", "bypassPermissions"],
    );
    status_event(&mut server, "probe", "connected");
    server.tool_use("s", "mcp__probe__slow", json!({"seconds": 30, "steps": 60}));
    server.take_for("progress of s", Duration::from_secs(20), |v| {
        v["event"] == "progress" && v["tool_use_id"] == "s"
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.pid() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    assert_eq!(server.result("s")["outcome"], "cancelled");
    assert_eq!(cancellations(&log, 1).len(), 1);
    server.finish();
}
