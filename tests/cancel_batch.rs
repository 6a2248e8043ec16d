//! `cancel {batch}`: every call of the batch is answered, no process of the batch stays alive,
//! and nothing after the cancel runs.

mod support;

use std::time::Duration;

use serde_json::json;
use support::*;

#[test]
fn cancelling_a_batch_answers_every_call_and_runs_nothing_more() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    server.send(json!({"type": "batch", "id": "B", "calls": [
        {"id": "first", "name": "Bash", "input": {"command": "echo first > first.txt"}},
        {"id": "running", "name": "Bash", "input": {"command": "sleep 60 & echo $! > child.pid; echo $$ > shell.pid; wait"}},
        {"id": "after1", "name": "Write", "input": {"file_path": "after1.txt", "content": "no"}},
        {"id": "after2", "name": "Bash", "input": {"command": "touch after2.txt"}},
        {"id": "after3", "name": "Read", "input": {"file_path": "first.txt"}}
    ]}));
    wait_line(&sb.path("child.pid"));
    wait_line(&sb.path("shell.pid"));
    server.send(json!({"type": "cancel", "batch": "B"}));
    server.wait_for("batch_end", Duration::from_secs(10), |v| {
        v["event"] == "batch_end"
    });
    let done = server.finish();
    assert_eq!(done.result("first")["outcome"], "success");
    for id in ["running", "after1", "after2", "after3"] {
        assert_eq!(done.result(id)["outcome"], "cancelled", "{id}");
    }
    assert_eq!(
        done.events("batch_end")[0]["ids"],
        json!(["first", "running", "after1", "after2", "after3"])
    );
    assert!(!sb.path("after1.txt").exists());
    assert!(!sb.path("after2.txt").exists());
    std::thread::sleep(Duration::from_millis(100));
    for f in ["child.pid", "shell.pid"] {
        let pid: i32 = std::fs::read_to_string(sb.path(f))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            !pid_alive(pid),
            "{f} ({pid}) of the cancelled batch is still alive"
        );
    }
}

#[test]
fn cancelling_one_batch_leaves_another_alone() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    server.send(json!({"type": "batch", "id": "A", "calls": [{"id": "a", "name": "Bash", "input": {"command": "touch a-started; sleep 60"}}]}));
    server.send(json!({"type": "batch", "id": "K", "calls": [{"id": "k", "name": "Bash", "input": {"command": "sleep 0.5; echo kept"}}]}));
    wait_file(&sb.path("a-started"));
    server.send(json!({"type": "cancel", "batch": "A"}));
    assert_eq!(server.result("a")["outcome"], "cancelled");
    let done = server.finish();
    assert_eq!(done.result("k")["outcome"], "success");
}
