//! `cancel {id}`: a running call sees its token and its process group dies; a queued call is
//! answered at once; unknown ids get an error line.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::*;

#[test]
fn cancelling_a_running_bash_call_kills_its_process_group() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    // A child in the background of the command: it must die with the group.
    server.tool_use(
        "long",
        "Bash",
        // Each pid file appears whole (written, then renamed): a cancel right after it appears
        // cannot leave it empty.
        json!({"command": "sleep 60 & echo $! > child.tmp; mv child.tmp child.pid; echo $$ > shell.tmp; mv shell.tmp shell.pid; wait"}),
    );
    wait_line(&sb.path("child.pid"));
    wait_line(&sb.path("shell.pid"));
    let start = Instant::now();
    server.send(json!({"type": "cancel", "id": "long"}));
    let r = server.result("long");
    assert_eq!(r["outcome"], "cancelled");
    assert_eq!(r["is_error"], true);
    assert!(start.elapsed() < Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(100));
    for f in ["child.pid", "shell.pid"] {
        let pid: i32 = std::fs::read_to_string(sb.path(f))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!pid_alive(pid), "{f} ({pid}) still alive");
    }
    let done = server.finish();
    assert_eq!(done.results("long").len(), 1);
}

#[test]
fn cancelling_a_queued_call_answers_it_at_once() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&[
        "--permission-mode",
        "bypassPermissions",
        "--max-in-flight",
        "1",
    ]);
    server.tool_use("busy", "Bash", json!({"command": "touch busy; sleep 2"}));
    wait_file(&sb.path("busy"));
    server.tool_use("queued", "Bash", json!({"command": "touch queued-ran"}));
    std::thread::sleep(Duration::from_millis(100));
    server.send(json!({"type": "cancel", "id": "queued"}));
    let r = server.result("queued");
    assert_eq!(r["outcome"], "cancelled");
    // Answered while the busy call still runs.
    assert!(!server.seen.iter().any(|v| is_result(v, "busy")));
    let done = server.finish();
    assert_eq!(done.result("busy")["outcome"], "success");
    assert!(!sb.path("queued-ran").exists());
}

#[test]
fn cancelling_an_unknown_id_is_an_error_line() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &[],
        &[
            json!({"type": "hello"}),
            json!({"type": "cancel", "id": "ghost"}),
            json!({"type": "cancel", "batch": "ghosts"}),
        ],
    );
    let errors = done.of_type("error");
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(errors[0]["message"].as_str().unwrap().contains("\"ghost\""));
    assert!(
        errors[1]["message"]
            .as_str()
            .unwrap()
            .contains("\"ghosts\"")
    );
    // The line that caused each.
    assert_eq!(errors[0]["line"], 2);
    assert_eq!(errors[1]["line"], 3);
}

#[test]
fn cancelling_a_parked_call_answers_it_at_once() {
    let sb = Sandbox::new();
    // One admission place: while `busy` holds it, `parked` waits for admission.
    let mut server = sb.serve(&[
        "--permission-mode",
        "bypassPermissions",
        "--max-in-flight",
        "1",
        "--max-queued",
        "0",
    ]);
    server.tool_use(
        "busy",
        "Bash",
        json!({"command": "timeout 20 sh -c 'until [ -e go ]; do sleep 0.01; done'"}),
    );
    server.tool_use("parked", "Bash", json!({"command": "touch parked-ran"}));
    server.send(json!({"type": "cancel", "id": "parked"}));
    // Answered while `busy` still holds the only place (it waits for `go`, made only after).
    let r = server.result("parked");
    assert_eq!(r["outcome"], "cancelled");
    assert!(!server.seen.iter().any(|v| is_result(v, "busy")));
    std::fs::write(sb.path("go"), "").unwrap();
    let done = server.finish();
    assert_eq!(done.result("busy")["outcome"], "success");
    assert_eq!(done.results("parked").len(), 1);
    assert!(!sb.path("parked-ran").exists());
}

#[test]
fn cancelling_a_call_waiting_for_permission_ends_the_wait() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&[]);
    server.tool_use("w", "Write", json!({"file_path": "x.txt", "content": "x"}));
    server.wait_for("permission request", Duration::from_secs(10), |v| {
        v["type"] == "permission_request"
    });
    server.send(json!({"type": "cancel", "id": "w"}));
    assert_eq!(server.result("w")["outcome"], "cancelled");
    server.finish();
    assert!(!sb.path("x.txt").exists());
}
