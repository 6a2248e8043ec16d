//! Bash, TaskOutput and TaskStop through `toolrt serve`.

mod support;
mod tools_common;

use std::time::Duration;

use serde_json::json;
use tools_common::*;

#[test]
fn exit_codes_decide_the_outcome() {
    let mut s = Server::start(&[]);
    let r = s.call("a", "Bash", json!({"command": "echo hello; echo oops >&2"}));
    assert_outcome(&r, "success");
    assert!(
        content(&r).contains("hello") && content(&r).contains("oops"),
        "{r}"
    );
    let r = s.call("b", "Bash", json!({"command": "echo partial; exit 3"}));
    assert_outcome(&r, "failed");
    assert!(
        content(&r).contains("partial") && content(&r).contains("exit code 3"),
        "{r}"
    );
    for (id, cmd) in [
        ("c", "grep nothing /dev/null"),
        ("d", "diff <(echo a) <(echo b)"),
        ("e", "test -e /nonexistent"),
        ("f", "git diff --no-index --quiet /dev/null /etc/hostname"),
    ] {
        let r = s.call(id, "Bash", json!({"command": cmd}));
        assert_outcome(&r, "success");
    }
    let r = s.call("g", "Bash", json!({"command": "false"}));
    assert_outcome(&r, "failed");
    let r = s.call("h", "Bash", json!({"command": "pwd"}));
    assert_eq!(content(&r).trim(), s.cwd().display().to_string());
    let (_, status) = s.finish();
    assert!(status.success());
}

#[test]
fn timeout_kills_the_process_group() {
    let mut s = Server::start(&[]);
    let pidfile = s.dir.path().join("pid");
    let cmd = format!(
        "echo before; sleep 60 & echo $! > {}; wait",
        pidfile.display()
    );
    let r = s.call("t", "Bash", json!({"command": cmd, "timeout": 500}));
    assert_outcome(&r, "timed_out");
    assert!(content(&r).contains("before"), "{r}");
    let pid = read_pid(&pidfile);
    assert!(
        wait_gone(pid),
        "the command's child {pid} outlived the timeout"
    );
}

#[test]
fn cancel_kills_the_process_group() {
    let mut s = Server::start(&[]);
    let pidfile = s.dir.path().join("pid");
    let cmd = format!("sleep 60 & echo $! > {}; wait", pidfile.display());
    s.send(json!({"type": "tool_use", "id": "c", "name": "Bash", "input": {"command": cmd}}));
    let pid = read_pid(&pidfile);
    s.send(json!({"type": "cancel", "id": "c"}));
    let r = s.result("c");
    assert_outcome(&r, "cancelled");
    assert!(wait_gone(pid), "child {pid} outlived the cancel");
}

#[test]
fn two_hundred_megabytes_keep_memory_small_and_the_file_complete() {
    let mut s = Server::start(&[]);
    // 200,000,000 bytes: 10,000,000 lines of 20 bytes.
    s.send(json!({"type": "tool_use", "id": "big", "name": "Bash",
        "input": {"command": "yes 0123456789abcdefghi | head -n 10000000", "timeout": 600000}}));
    let r = s.result_within("big", Duration::from_secs(300));
    let hwm = vm_hwm_kb(s.pid());
    eprintln!("toolrt peak RSS after 200 MB of output: {hwm} kB");
    assert_outcome(&r, "success");
    let file = r["output_file"].as_str().expect("output_file set");
    assert_eq!(std::fs::metadata(file).unwrap().len(), 200_000_000);
    assert!(content(&r).len() < 100_000, "content is a preview");
    assert!(content(&r).contains("0123456789abcdefghi"));
    assert!(hwm < 100 * 1024, "toolrt peak RSS {hwm} kB");
    let (_, status) = s.finish();
    assert!(status.success());
}

fn task_id(r: &serde_json::Value) -> String {
    let text = content(r);
    let at = text.find("task id ").expect("task id in content") + "task id ".len();
    text[at..]
        .split(|c: char| c.is_whitespace() || c == '.')
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn background_task_is_read_and_stopped() {
    let mut s = Server::start(&[]);
    let pidfile = s.dir.path().join("pid");
    let cmd = format!(
        "echo start; sleep 60 & echo $! > {}; wait",
        pidfile.display()
    );
    let r = s.call(
        "bg",
        "Bash",
        json!({"command": cmd, "run_in_background": true}),
    );
    assert_outcome(&r, "success");
    let id = task_id(&r);
    let pid = read_pid(&pidfile);

    let r = s.call("o1", "TaskOutput", json!({"task_id": id, "timeout": 300}));
    assert_outcome(&r, "success");
    assert!(
        content(&r).contains("status: running") && content(&r).contains("start"),
        "{r}"
    );

    let r = s.call("k", "TaskStop", json!({"task_id": id}));
    assert_outcome(&r, "success");
    assert!(wait_gone(pid), "background child {pid} outlived TaskStop");
    let r = s.call("o2", "TaskOutput", json!({"task_id": id, "block": false}));
    assert!(content(&r).contains("status: killed"), "{r}");

    let r = s.call("o3", "TaskOutput", json!({"task_id": "no-such-task"}));
    assert_outcome(&r, "validation_error");
}

#[test]
fn background_task_reports_its_exit_code() {
    let mut s = Server::start(&[]);
    let r = s.call(
        "bg",
        "Bash",
        json!({"command": "echo done; exit 4", "run_in_background": true}),
    );
    let id = task_id(&r);
    let r = s.call("o", "TaskOutput", json!({"task_id": id}));
    assert!(
        content(&r).contains("completed (exit code 4)") && content(&r).contains("done"),
        "{r}"
    );
}

#[test]
fn background_tasks_die_at_shutdown() {
    let mut s = Server::start(&[]);
    let pidfile = s.dir.path().join("pid");
    let cmd = format!("sleep 60 & echo $! > {}; wait", pidfile.display());
    s.call(
        "bg",
        "Bash",
        json!({"command": cmd, "run_in_background": true}),
    );
    let pid = read_pid(&pidfile);
    let (_, status) = s.finish();
    assert!(status.success());
    assert!(wait_gone(pid), "background child {pid} outlived the server");
}

/// A command holding a NUL character cannot be passed to bash: the call is refused as invalid
/// input before anything runs, not reported as a failure to start bash.
#[test]
fn a_command_with_a_nul_is_a_validation_error() {
    let mut s = Server::start(&[]);
    let r = s.call("n", "Bash", json!({"command": "echo \u{0}nul"}));
    assert_outcome(&r, "validation_error");
    assert!(content(&r).contains("NUL"), "{r}");
    let (_, status) = s.finish();
    assert!(status.success());
}
