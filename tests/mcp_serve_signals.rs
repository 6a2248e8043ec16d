//! `toolrt mcp-serve` and signals, as `serve`: SIGTERM takes no new call and answers the
//! running ones when they finish; SIGINT cancels them (their process groups die) and answers
//! them `cancelled`; either way toolrt exits 0.

mod mcp_serve_support;
mod support;

use std::time::Duration;

use mcp_serve_support::{call, connect, outcome, start_bash, text};
use nix::sys::signal::Signal;
use serde_json::json;
use support::{Sandbox, read_pid, wait_gone_within};

/// toolrt's exit status, once it exits after `what`.
async fn exit_status(c: &mut mcp_serve_support::Connected, what: &str) -> std::process::ExitStatus {
    tokio::time::timeout(Duration::from_secs(30), c.child.wait())
        .await
        .unwrap_or_else(|_| panic!("toolrt did not exit after {what}"))
        .unwrap()
}

/// `toolrt mcp-serve` that runs any Bash command.
async fn connect_any_bash(sb: &Sandbox) -> mcp_serve_support::Connected {
    connect(
        &sb.cwd,
        &sb.out,
        &["--permission-mode", "bypassPermissions"],
        None,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_the_running_call_and_takes_no_new_one() {
    let sb = Sandbox::new();
    let gate = sb.path("gate");
    let mut c = connect_any_bash(&sb).await;
    let command = format!(
        "echo started; while [ ! -e {} ]; do sleep 0.05; done; echo finished",
        gate.display()
    );
    let handle = start_bash(&c, &command).await;
    // Its first output's progress says the command runs.
    tokio::time::timeout(Duration::from_secs(30), c.heard.progress.recv())
        .await
        .expect("a progress notification")
        .unwrap();
    c.signal(Signal::SIGTERM);
    // Once toolrt has taken the signal, a new call is refused.
    let refused = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match c
                .service
                .call_tool(call("Bash", json!({"command": "echo late"})))
                .await
            {
                Err(e) => return e.to_string(),
                Ok(r) => assert!(text(&r).contains("late"), "{r:?}"),
            }
        }
    })
    .await
    .expect("a call refused after SIGTERM");
    assert!(refused.contains("shutting down"), "{refused}");
    std::fs::write(&gate, "").unwrap();
    let answer = handle.await_response().await.unwrap();
    assert!(
        serde_json::to_value(&answer)
            .unwrap()
            .to_string()
            .contains("finished"),
        "{answer:?}"
    );
    let status = exit_status(&mut c, "SIGTERM").await;
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_cancels_the_running_call_and_kills_its_process_group() {
    let sb = Sandbox::new();
    let pid_file = sb.path("sleeper.pid");
    let mut c = connect_any_bash(&sb).await;
    let command = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
    let handle = start_bash(&c, &command).await;
    let sleeper = read_pid(&pid_file);
    c.signal(Signal::SIGINT);
    let answer = handle.await_response().await.unwrap();
    let rmcp::model::ServerResult::CallToolResult(result) = answer else {
        panic!("not a tools/call result: {answer:?}");
    };
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert_eq!(outcome(&result), "cancelled", "{result:?}");
    assert!(
        wait_gone_within(sleeper, Duration::from_secs(10)),
        "the cancelled call's sleep {sleeper} still runs"
    );
    let status = exit_status(&mut c, "SIGINT").await;
    assert!(status.success(), "{status:?}");
}
