//! `toolrt mcp-serve --http`: the MCP server over streamable HTTP, driven by an rmcp client
//! (the official Rust SDK) over loopback. The token guards every request; tools/list, a call,
//! a deny rule and a blocking hook behave as over stdio; SIGTERM ends it cleanly.

mod mcp_serve_support;
mod support;

use std::time::Duration;

use mcp_serve_support::{
    call, connect_http, deny_and_hook_hold, guarded_flags, http_client, outcome, start_http, text,
};
use nix::sys::signal::Signal;
use serde_json::json;
use support::Sandbox;

const TOKEN: &str = "test-token-5d1f";

fn token_file(sb: &Sandbox) -> String {
    sb.write("token", &format!("{TOKEN}\n"))
        .to_string_lossy()
        .into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_a_call_a_deny_rule_and_a_hook_over_http() {
    let sb = Sandbox::new();
    let file = sb.write("notes.txt", "alpha\nbeta\n");
    let mut flags = guarded_flags(&sb);
    flags.extend(["--http-token-file".to_string(), token_file(&sb)]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let mut serve = start_http(&sb.cwd, &sb.out, &flags).await;
    let client = connect_http(&serve.url, Some(TOKEN)).await.unwrap();
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["Bash", "Read", "Write"]);
    let read = client
        .call_tool(call("Read", json!({"file_path": file})))
        .await
        .unwrap();
    assert_eq!(outcome(&read), "success", "{read:?}");
    assert!(text(&read).contains("beta"), "{read:?}");
    deny_and_hook_hold(client.peer(), &sb).await;
    // SIGTERM: nothing is running, so toolrt closes the session and exits 0.
    serve.signal(Signal::SIGTERM);
    let status = tokio::time::timeout(Duration::from_secs(30), serve.child.wait())
        .await
        .expect("toolrt exits after SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    drop(client);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_wrong_token_is_refused_with_401() {
    let sb = Sandbox::new();
    let tokens = token_file(&sb);
    let serve = start_http(&sb.cwd, &sb.out, &["--http-token-file", &tokens]).await;
    let http = http_client();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    for auth in [None, Some("Bearer wrong"), Some(&*format!("Basic {TOKEN}"))] {
        let mut req = http
            .post(&serve.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init.to_string());
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 401, "{auth:?}");
        assert_eq!(
            resp.headers()["www-authenticate"].to_str().unwrap(),
            "Bearer"
        );
    }
    assert!(connect_http(&serve.url, Some("wrong")).await.is_err());
    assert!(connect_http(&serve.url, None).await.is_err());
    // The right token gets in.
    let client = connect_http(&serve.url, Some(TOKEN)).await.unwrap();
    assert!(!client.list_all_tools().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_or_a_remote_address_is_refused_at_start() {
    let sb = Sandbox::new();
    let tokens = token_file(&sb);
    let cases: [(&[&str], &str); 3] = [
        (&["--http", "127.0.0.1:0"], "needs a token"),
        (
            &["--http", "0.0.0.0:0", "--http-token-file", &tokens],
            "not a loopback address",
        ),
        (&["--http-no-auth"], "--http"),
    ];
    for (args, want) in cases {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolrt"))
            .arg("mcp-serve")
            .args(args)
            .arg("--cwd")
            .arg(&sb.cwd)
            .env_remove("TOOLRT_MCP_TOKEN")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}
