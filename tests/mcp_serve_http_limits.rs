//! `toolrt mcp-serve --http` under clients that hold its resources: sessions are capped (a new
//! `initialize` past the cap answers 503 with a JSON-RPC error, and closing a session makes
//! room), and connections that stall mid-headers are closed by the server, so an authorized
//! client is answered after them. Driven over loopback against the real binary.

mod mcp_serve_support;
mod support;

use std::time::Duration;

use mcp_serve_support::{http_client, start_http_with_env};
use serde_json::{Value, json};
use support::{Sandbox, status_kib};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "test-token-77c2";

/// The cap on sessions toolrt documents.
const MAX_SESSIONS: usize = 256;

fn init() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
}

/// POSTs an `initialize`; its status, session id and body.
async fn initialize(http: &reqwest::Client, url: &str) -> (u16, Option<String>, String) {
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(init().to_string())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let session = resp
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_string());
    (status, session, resp.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_capped_and_closing_one_makes_room() {
    // Uncapped, each session held about 80 KB: 2,000 took toolrt past 190 MB.
    const INITIALIZES: usize = 2_000;
    const BOUND_KIB: u64 = 120 * 1024;
    let sb = Sandbox::new();
    let tokens = sb.write("token", TOKEN).to_string_lossy().into_owned();
    let serve = start_http_with_env(&sb.cwd, &sb.out, &["--http-token-file", &tokens], &[]).await;
    let http = http_client();
    let mut sessions = Vec::new();
    let mut refused = 0;
    for _ in 0..INITIALIZES {
        let (status, session, body) = initialize(&http, &serve.url).await;
        match status {
            200 => sessions.push(session.expect("a session id")),
            503 => {
                let error: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(error["error"]["code"], -32000, "{body}");
                assert!(
                    error["error"]["message"]
                        .as_str()
                        .unwrap()
                        .contains("sessions open"),
                    "{body}"
                );
                refused += 1;
            }
            other => panic!("initialize answered {other}: {body}"),
        }
    }
    assert_eq!(sessions.len(), MAX_SESSIONS);
    assert_eq!(refused, INITIALIZES - MAX_SESSIONS);
    let hwm = status_kib(serve.child.id().unwrap(), "VmHWM");
    eprintln!("peak RSS {} MiB", hwm / 1024);
    assert!(
        hwm <= BOUND_KIB,
        "peak RSS {} MiB (bound {} MiB)",
        hwm / 1024,
        BOUND_KIB / 1024
    );
    // Closing a session makes room for one more.
    let closed = http
        .delete(&serve.url)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("mcp-session-id", sessions.pop().unwrap())
        .send()
        .await
        .unwrap();
    assert!(closed.status().is_success(), "{}", closed.status());
    assert_eq!(initialize(&http, &serve.url).await.0, 200);
    assert_eq!(initialize(&http, &serve.url).await.0, 503);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_connections_are_closed_and_a_client_is_answered_after_them() {
    // More than the 64 connections served at once, each stopping inside its headers.
    const STALLED: usize = 70;
    let sb = Sandbox::new();
    let tokens = sb.write("token", TOKEN).to_string_lossy().into_owned();
    let serve = start_http_with_env(
        &sb.cwd,
        &sb.out,
        &["--http-token-file", &tokens],
        &[("TOOLRT_MCP_HTTP_HEADER_TIMEOUT_MS", "1000")],
    )
    .await;
    let addr = serve
        .url
        .strip_prefix("http://")
        .unwrap()
        .strip_suffix("/mcp")
        .unwrap()
        .to_string();
    let mut stalled = Vec::new();
    for _ in 0..STALLED {
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await
            .unwrap();
        stalled.push(s);
    }
    let http = http_client();
    let url = serve.url.clone();
    let client = tokio::spawn(async move { initialize(&http, &url).await });
    // The server closes every stalled connection (those waiting to be accepted too): each
    // reads to its end. Without a header timeout they would stay open for good.
    for mut s in stalled {
        let mut rest = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(60), s.read_to_end(&mut rest)).await;
        assert!(read.is_ok(), "a stalled connection was never closed");
    }
    let (status, session, body) = tokio::time::timeout(Duration::from_secs(60), client)
        .await
        .expect("the authorized initialize was answered")
        .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(session.is_some());
}
