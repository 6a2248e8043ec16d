//! Bash, TaskOutput and TaskStop through the `Tool` trait with a real session.

mod tools_api_common;

use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolrt::{ProgressSink, ToolStatus};
use tools_api_common::*;

#[tokio::test]
async fn success_failure_and_exit1_rules() {
    let e = env();
    let out = call(
        &e,
        "Bash",
        "a",
        json!({"command": "echo hello; echo err >&2"}),
    )
    .await
    .unwrap();
    assert_eq!(out.status, ToolStatus::Success);
    assert!(
        out.content.contains("hello\n") && out.content.contains("err\n"),
        "{}",
        out.content
    );
    assert!(out.full_output.is_none());

    let out = call(&e, "Bash", "b", json!({"command": "echo partial; exit 3"}))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(
        out.content.starts_with("partial\n") && out.content.contains("exit code 3"),
        "{}",
        out.content
    );

    let out = call(&e, "Bash", "c", json!({"command": "echo x | grep nomatch"}))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Success, "{}", out.content);
    let out = call(&e, "Bash", "d", json!({"command": "false"}))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.content.contains("exit code 1"));

    let out = call(&e, "Bash", "e", json!({"command": "pwd"}))
        .await
        .unwrap();
    assert_eq!(out.content.trim(), e.cwd().display().to_string());

    let err = call(&e, "Bash", "f", json!({"command": "  "}))
        .await
        .unwrap_err();
    assert!(err.contains("command is empty"));
}

#[tokio::test]
async fn concurrency_safety_per_call() {
    let bash = tool("Bash");
    let input = |v: serde_json::Value| v.as_object().unwrap().clone();
    assert!(bash.is_concurrency_safe(&input(json!({"command": "ls -la"}))));
    assert!(!bash.is_concurrency_safe(&input(json!({"command": "rm -rf x"}))));
    assert!(!bash.is_concurrency_safe(&input(json!({"command": "ls", "run_in_background": true}))));
}

#[tokio::test]
async fn env_scrub_removes_matching_names() {
    let e = env_with(|s| s.env_remove = toolrt::scrubbed_names(&["HOM?".to_string()]));
    let out = call(
        &e,
        "Bash",
        "a",
        json!({"command": "echo ${HOME:-scrubbed}"}),
    )
    .await
    .unwrap();
    assert_eq!(out.content.trim(), "scrubbed");
    let plain = env();
    let out = call(
        &plain,
        "Bash",
        "a",
        json!({"command": "echo ${HOME:-scrubbed}"}),
    )
    .await
    .unwrap();
    assert_ne!(out.content.trim(), "scrubbed");
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    let e = env();
    let pidfile = e.dir.path().join("pid");
    let cmd = format!(
        "echo before; sleep 30 & echo $! > {}; wait",
        pidfile.display()
    );
    let out = call(&e, "Bash", "t", json!({"command": cmd, "timeout": 300}))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::TimedOut);
    assert!(out.content.starts_with("before\n"), "{}", out.content);
    assert!(out.content.contains("timed out after 300 ms"));
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_gone(pid).await,
        "the command's child {pid} survived the timeout"
    );
}

#[tokio::test]
async fn cancel_kills_the_group_and_streams_progress() {
    let e = env();
    let pidfile = e.dir.path().join("pid");
    let cmd = format!(
        "sleep 30 & echo $! > {}; echo started; wait",
        pidfile.display()
    );
    let cancel = CancellationToken::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let sink = ProgressSink::new(move |v| {
        let _ = tx.send(v);
    });
    let (session, state) = (e.session.clone(), e.state.clone());
    let token = cancel.clone();
    let run = tokio::spawn(async move {
        call_with(
            &session,
            &state,
            "Bash",
            "c",
            json!({"command": cmd}),
            token,
            sink,
        )
        .await
    });
    // The progress event proves the command is running; then cancel.
    let first = rx.recv().await.unwrap();
    assert!(
        first["output"].as_str().unwrap().contains("started"),
        "{first}"
    );
    cancel.cancel();
    let out = run.await.unwrap().unwrap();
    assert_eq!(out.status, ToolStatus::Cancelled);
    assert!(out.content.contains("started"));
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(wait_gone(pid).await, "child {pid} survived the cancel");
}

fn vm_hwm_kb() -> u64 {
    status_kib("self", "VmHWM")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_megabytes_stay_small_in_memory() {
    let e = env();
    let before = vm_hwm_kb();
    // 200,000,000 bytes: 10,000,000 lines of 20 bytes.
    let cmd = "yes 0123456789abcdefghi | head -n 10000000";
    let out = call(
        &e,
        "Bash",
        "big",
        json!({"command": cmd, "timeout": 600000}),
    )
    .await
    .unwrap();
    let after = vm_hwm_kb();
    eprintln!("VmHWM before {before} kB, after {after} kB");
    assert_eq!(
        out.status,
        ToolStatus::Success,
        "{}",
        &out.content[..200.min(out.content.len())]
    );
    let full = out.full_output.expect("a spill file");
    assert_eq!(std::fs::metadata(&full.path).unwrap().len(), 200_000_000);
    assert_eq!(full.chars, 200_000_000);
    assert_eq!(full.lines, 10_000_000);
    assert!(
        out.content.len() < 200_000,
        "content keeps only head and tail"
    );
    assert!(out.content.starts_with("0123456789abcdefghi\n"));
    assert!(out.content.ends_with("0123456789abcdefghi\n"));
    assert!(after < 100 * 1024, "peak RSS {after} kB");
}

#[tokio::test]
async fn background_task_read_and_stopped() {
    let e = env();
    let out = call(
        &e,
        "Bash",
        "bg",
        json!({"command": "echo start; exec sleep 30", "run_in_background": true}),
    )
    .await
    .unwrap();
    assert_eq!(out.status, ToolStatus::Success);
    assert!(out.content.contains("task id bg-1"), "{}", out.content);
    assert!(out.content.contains("Output file: "));
    assert!(tool("TaskOutput").is_concurrency_safe(&Default::default()));
    assert!(!tool("TaskStop").is_concurrency_safe(&Default::default()));

    let out = call(
        &e,
        "TaskOutput",
        "o1",
        json!({"task_id": "bg-1", "timeout": 500}),
    )
    .await
    .unwrap();
    assert!(out.content.contains("status: running"), "{}", out.content);
    assert!(out.content.contains("start\n"), "{}", out.content);

    let out = call(&e, "TaskStop", "s", json!({"task_id": "bg-1"}))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Success);
    assert!(out.content.contains("status: killed"), "{}", out.content);
    let out = call(
        &e,
        "TaskOutput",
        "o2",
        json!({"task_id": "bg-1", "block": false}),
    )
    .await
    .unwrap();
    assert!(out.content.contains("status: killed"), "{}", out.content);

    let err = call(&e, "TaskOutput", "o3", json!({"task_id": "bg-9"}))
        .await
        .unwrap_err();
    assert!(err.contains("bg-1"), "{err}");
    let err = call(&e, "TaskStop", "s2", json!({"task_id": "nope"}))
        .await
        .unwrap_err();
    assert!(err.contains("no background task"), "{err}");
}

#[tokio::test]
async fn background_task_completes_with_exit_code() {
    let e = env();
    call(
        &e,
        "Bash",
        "bg",
        json!({"command": "echo done; exit 3", "run_in_background": true}),
    )
    .await
    .unwrap();
    let out = call(&e, "TaskOutput", "o", json!({"task_id": "bg-1"}))
        .await
        .unwrap();
    assert!(
        out.content.contains("status: completed (exit code 3)"),
        "{}",
        out.content
    );
    assert!(out.content.contains("done\n"));
}

#[tokio::test]
async fn shutdown_kills_background_tasks() {
    let e = env();
    let pidfile = e.dir.path().join("pid");
    let cmd = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
    call(
        &e,
        "Bash",
        "bg",
        json!({"command": cmd, "run_in_background": true}),
    )
    .await
    .unwrap();
    // The pid file appears once the shell has started its child.
    let mut pid = None;
    for _ in 0..300 {
        if let Some(p) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
        {
            pid = Some(p);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let pid = pid.expect("background command started");
    e.state.shutdown();
    assert!(
        wait_gone(pid).await,
        "background child {pid} survived shutdown"
    );
    let out = call(
        &e,
        "TaskOutput",
        "o",
        json!({"task_id": "bg-1", "timeout": 3000}),
    )
    .await
    .unwrap();
    assert!(out.content.contains("status: killed"), "{}", out.content);
}
