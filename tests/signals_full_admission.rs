//! Signals are acted on whatever the reader is doing: with every admission place and the parked
//! queue taken (the reader waiting for room), a SIGINT still cancels every accepted call at once
//! and toolrt exits, with one `cancelled` result per call.

mod support;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use support::*;

/// 2 admission places (1 executing + 1 queued) and 2 parked calls.
const SMALL: &[&str] = &[
    "--max-in-flight",
    "1",
    "--max-queued",
    "1",
    "--max-parked",
    "2",
];

/// Waits (bounded) until toolrt exits by itself, stdin still open.
fn exits_within(server: &mut Server, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            return status;
        }
        assert!(
            start.elapsed() < limit,
            "toolrt did not exit within {limit:?} of SIGINT; seen: {:#?}",
            server.seen
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every id has exactly one `cancelled` result, or (a line read but not yet accepted when the
/// signal came) one `shutting_down` refusal naming it.
fn each_cancelled_or_refused(done: &Finished, ids: &[String]) {
    let refused: HashSet<&str> = done
        .of_type("error")
        .iter()
        .filter(|e| e["code"] == "shutting_down")
        .flat_map(|e| {
            e["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_str().unwrap())
        })
        .collect();
    for id in ids {
        match (done.results(id).as_slice(), refused.contains(id.as_str())) {
            ([r], false) => assert_eq!(r["outcome"], "cancelled", "{id}: {r}"),
            ([], true) => {}
            (rs, r) => panic!("{id}: results {rs:?}, refused {r}"),
        }
    }
}

#[test]
fn sigint_with_admission_and_parked_queue_full_cancels_every_call_and_exits() {
    let sb = Sandbox::new();
    let mut args = SMALL.to_vec();
    args.extend(["--permission-mode", "bypassPermissions"]);
    let mut server = sb.serve(&args);
    // 1 running, 1 queued, 2 parked, and one more line the reader holds while it waits for room.
    let ids: Vec<String> = (0..5).map(|i| format!("s{i}")).collect();
    for id in &ids {
        server.tool_use(
            id,
            "Bash",
            json!({"command": format!("echo $$ > {id}.pid; sleep 600")}),
        );
    }
    wait_file(&sb.path("s0.pid"));
    let pid = read_pid(&sb.path("s0.pid"));
    kill(Pid::from_raw(server.pid() as i32), Signal::SIGINT).unwrap();
    // Far sooner than any command would end by itself (600 s): the cancel grace is 2 s.
    exits_within(&mut server, Duration::from_secs(20));
    let done = server.finish();
    each_cancelled_or_refused(&done, &ids);
    assert_eq!(done.result("s0")["outcome"], "cancelled");
    assert!(
        wait_gone_within(pid, Duration::from_secs(5)),
        "the running command survived"
    );
    for id in &ids[1..] {
        assert!(
            !sb.path(&format!("{id}.pid")).exists(),
            "{id} ran after SIGINT"
        );
    }
}

#[test]
fn sigint_while_asks_hold_every_place_cancels_them() {
    let sb = Sandbox::new();
    let mut server = sb.serve(SMALL);
    let ids: Vec<String> = (0..4).map(|i| format!("w{i}")).collect();
    for id in &ids {
        let path = sb.path(&format!("{id}.txt"));
        server.tool_use(id, "Write", json!({"file_path": path, "content": "x"}));
    }
    // Both admitted calls wait for an answer that never comes.
    for id in &ids[..2] {
        server.wait_for(&format!("request for {id}"), Duration::from_secs(20), |v| {
            v["type"] == "permission_request" && v["tool_use_id"] == id.as_str()
        });
    }
    kill(Pid::from_raw(server.pid() as i32), Signal::SIGINT).unwrap();
    exits_within(&mut server, Duration::from_secs(20));
    let done = server.finish();
    each_cancelled_or_refused(&done, &ids);
    for id in &ids[..2] {
        assert_eq!(done.result(id)["outcome"], "cancelled");
    }
    for id in &ids {
        assert!(!sb.path(&format!("{id}.txt")).exists());
    }
}

#[test]
fn a_call_line_not_yet_accepted_at_sigterm_is_refused_as_shutting_down() {
    let sb = Sandbox::new();
    // One place and one parked call: the third call line does not fit, and the reader holds it
    // (nothing waits for the client) until the signal comes.
    let mut server = sb.serve(&[
        "--permission-mode",
        "bypassPermissions",
        "--max-in-flight",
        "1",
        "--max-queued",
        "0",
        "--max-parked",
        "1",
    ]);
    let wait = "echo $$ > b.pid; timeout 20 sh -c 'until [ -e go ]; do sleep 0.01; done'";
    server.tool_use("b", "Bash", json!({"command": wait}));
    wait_file(&sb.path("b.pid"));
    server.tool_use("p", "Bash", json!({"command": "touch p"}));
    // Lines are read in order: once `hello` is answered, `p` was read and parked (a line still
    // unread at the signal would be refused too).
    server.send(json!({"type": "hello"}));
    server.wait_for("hello", Duration::from_secs(20), |v| v["type"] == "hello");
    server.send(json!({"type": "batch", "id": "x", "calls": [
        {"id": "x1", "name": "Bash", "input": {"command": "touch x1"}},
        {"id": "x2", "name": "Bash", "input": {"command": "touch x2"}}
    ]}));
    kill(Pid::from_raw(server.pid() as i32), Signal::SIGTERM).unwrap();
    let refused = server.wait_for("a shutting_down error", Duration::from_secs(20), |v| {
        v["type"] == "error"
    });
    assert_eq!(refused["code"], "shutting_down", "{refused}");
    assert_eq!(refused["ids"], json!(["x1", "x2"]));
    assert_eq!(refused["line"], 4);
    // SIGTERM finishes what was accepted: the running call and the parked one.
    std::fs::write(sb.path("go"), "").unwrap();
    exits_within(&mut server, Duration::from_secs(20));
    let done = server.finish();
    assert_eq!(done.result("b")["outcome"], "success");
    assert_eq!(done.result("p")["outcome"], "success");
    assert!(done.results("x1").is_empty() && done.results("x2").is_empty());
    assert!(done.events("batch_start").is_empty());
    assert!(sb.path("p").exists());
    assert!(!sb.path("x1").exists() && !sb.path("x2").exists());
}
