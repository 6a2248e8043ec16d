//! `toolrt mcp-serve` under load and cancellation, and as an aggregator of a real MCP server:
//! 100 concurrent calls all answer; a cancelled request kills its Bash process group; progress
//! reaches the request's token; server-everything's echo passes through with rules applied.

mod mcp_serve_support;
mod support;

use std::time::Duration;

use mcp_serve_support::{call, connect, outcome, start_bash, text};
use serde_json::json;
use support::{Sandbox, mcp, read_pid, wait_gone_within};

/// Sends a Bash `tools/call` and returns its handle (to cancel it, or await its answer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_calls_all_answer() {
    let sb = Sandbox::new();
    for i in 0..100 {
        sb.write(&format!("f{i}.txt"), &format!("file number {i}\n"));
    }
    let c = connect(&sb.cwd, &sb.out, &["--max-in-flight", "8"], None).await;
    let calls = (0..100).map(|i| {
        let peer = c.service.peer().clone();
        let path = sb.path(&format!("f{i}.txt"));
        async move {
            (
                i,
                peer.call_tool(call("Read", json!({"file_path": path})))
                    .await,
            )
        }
    });
    let results = futures::future::join_all(calls).await;
    assert_eq!(results.len(), 100);
    for (i, r) in results {
        let r = r.unwrap_or_else(|e| panic!("call {i}: {e}"));
        assert_eq!(outcome(&r), "success", "{r:?}");
        assert!(
            text(&r).contains(&format!("file number {i}")),
            "call {i}: {r:?}"
        );
    }
    assert!(c.finish().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_kills_its_process_group() {
    let sb = Sandbox::new();
    let pid_file = sb.path("sleeper.pid");
    // `$!` and `wait` are past what toolrt auto-allows: the mode lets the call run.
    let c = connect(
        &sb.cwd,
        &sb.out,
        &["--permission-mode", "bypassPermissions"],
        None,
    )
    .await;
    let command = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
    let handle = start_bash(&c, &command).await;
    let sleeper = read_pid(&pid_file);
    handle
        .cancel(Some("the test cancels".into()))
        .await
        .unwrap();
    assert!(
        wait_gone_within(sleeper, Duration::from_secs(10)),
        "the cancelled call's sleep {sleeper} still runs"
    );
    // toolrt still answers after the cancel.
    let again = c
        .service
        .call_tool(call("Bash", json!({"command": "echo still here"})))
        .await
        .unwrap();
    assert!(text(&again).contains("still here"), "{again:?}");
    assert!(c.finish().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_requests_token() {
    let sb = Sandbox::new();
    let mut c = connect(&sb.cwd, &sb.out, &["--allowed-tools", "Bash"], None).await;
    let gate = sb.path("gate");
    // The command prints, then waits for the test to have seen the progress of that output.
    let command = format!(
        "echo first-line; while [ ! -e {} ]; do sleep 0.05; done; echo done",
        gate.display()
    );
    // rmcp gives every request a progress token of its own.
    let handle = start_bash(&c, &command).await;
    let token = handle.progress_token.clone();
    let update = tokio::time::timeout(Duration::from_secs(30), c.heard.progress.recv())
        .await
        .expect("a progress notification")
        .unwrap();
    assert_eq!(update.progress_token, token);
    assert!(
        update
            .message
            .as_deref()
            .unwrap_or("")
            .contains("first-line"),
        "{update:?}"
    );
    std::fs::write(&gate, "").unwrap();
    let answer = handle.await_response().await.unwrap();
    let v = serde_json::to_value(&answer).unwrap();
    assert!(v.to_string().contains("done"), "{v}");
    assert!(c.finish().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_behind_toolrt_with_rules_applied() {
    let sb = Sandbox::new();
    let config = mcp::config_file(&sb, json!({"everything": mcp::everything()}));
    let c = connect(
        &sb.cwd,
        &sb.out,
        &[
            "--mcp-config",
            config.to_str().unwrap(),
            "--allowed-tools",
            "mcp__everything__echo",
            "--disallowed-tools",
            "mcp__everything__get-sum",
        ],
        None,
    )
    .await;
    let tools = c.service.list_all_tools().await.unwrap();
    assert!(
        tools.iter().any(|t| t.name == "mcp__everything__echo"),
        "{tools:?}"
    );
    let echo = c
        .service
        .call_tool(call(
            "mcp__everything__echo",
            json!({"message": "through toolrt"}),
        ))
        .await
        .unwrap();
    assert_eq!(outcome(&echo), "success", "{echo:?}");
    assert_eq!(text(&echo), "Echo: through toolrt");
    // A bare-name deny rule takes the tool out of the registry: not listed, unknown if called.
    assert!(!tools.iter().any(|t| t.name == "mcp__everything__get-sum"));
    let sum = c
        .service
        .call_tool(call("mcp__everything__get-sum", json!({"a": 1, "b": 2})))
        .await
        .unwrap_err();
    assert!(
        sum.to_string().contains("-32602")
            || format!("{sum:?}").contains("InvalidParams")
            || format!("{sum:?}").contains("32602"),
        "{sum:?}"
    );
    // No rule for get-env: it asks, and without elicitation `--ask deny` denies it.
    let env = c
        .service
        .call_tool(call("mcp__everything__get-env", json!({})))
        .await
        .unwrap();
    assert_eq!(outcome(&env), "denied", "{env:?}");
    assert_eq!(env.is_error, Some(true));
    assert!(c.finish().await.success());
}
