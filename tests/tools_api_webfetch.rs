//! WebFetch against a tiny HTTP server on 127.0.0.1 started by the test.

mod tools_api_common;

use std::sync::Arc;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolrt::{ToolOutput, ToolStatus};
use tools_api_common::*;

/// Serves a few fixed routes until the test ends; returns the base URL.
async fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let me = base.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let me = me.clone();
            tokio::spawn(async move {
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                    // A TLS ClientHello: answer like a plain HTTP server would, and hang up.
                    if req.first() == Some(&0x16) {
                        let _ = sock.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
                        return;
                    }
                }
                let line = String::from_utf8_lossy(&req)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string();
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                let (status, headers, body): (&str, String, Vec<u8>) = match path.as_str() {
                    "/page" => ("200 OK", "Content-Type: text/html; charset=utf-8\r\n".into(),
                        b"<html><head><style>p{}</style></head><body><h1>Title</h1><p>Some <b>bold</b> text.</p></body></html>".to_vec()),
                    "/plain" => ("200 OK", "Content-Type: text/plain\r\n".into(), b"just text".to_vec()),
                    "/hop" => ("302 Found", "Location: /page\r\n".into(), Vec::new()),
                    "/abs" => ("301 Moved Permanently", format!("Location: {me}/hop\r\n"), Vec::new()),
                    "/denied" => ("302 Found", "Location: http://denied.example/x\r\n".into(), Vec::new()),
                    "/loop" => ("302 Found", "Location: /loop\r\n".into(), Vec::new()),
                    "/big" => ("200 OK", "Content-Type: text/plain\r\n".into(), vec![b'z'; 11 * 1024 * 1024]),
                    "/image" => ("200 OK", "Content-Type: image/png\r\n".into(), vec![0x89, b'P', b'N', b'G']),
                    _ => ("404 Not Found", "Content-Type: text/plain\r\n".into(), b"nothing here".to_vec()),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(&body).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    base
}

/// Runs WebFetch on `url` with `prompt` in `e`'s session, as the pipeline would.
async fn fetch(e: &Env, url: &str, prompt: &str) -> Result<ToolOutput, String> {
    call(e, "WebFetch", "w", json!({"url": url, "prompt": prompt})).await
}

#[tokio::test]
async fn fetches_html_as_markdown_through_redirects() {
    let base = serve().await;
    let e = env_with(|s| s.guard = Arc::new(TestGuard));
    let out = fetch(&e, &format!("{base}/abs"), "find the title")
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Success, "{}", out.content);
    assert!(
        out.content
            .starts_with(&format!("URL: {base}/page\nPrompt: find the title\n")),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("# Title") && out.content.contains("**bold**"),
        "{}",
        out.content
    );
    assert!(!out.content.contains("p{}"));

    let out = fetch(&e, &format!("{base}/plain"), "p").await.unwrap();
    assert!(out.content.ends_with("just text"));
    assert!(tool("WebFetch").is_concurrency_safe(&Default::default()));
}

#[tokio::test]
async fn redirect_to_denied_host_is_refused() {
    let base = serve().await;
    let e = env_with(|s| s.guard = Arc::new(TestGuard));
    let out = fetch(&e, &format!("{base}/denied"), "p").await.unwrap();
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(
        out.content
            .contains("redirect to denied.example is not allowed by the permission rules"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn limits_and_errors() {
    let base = serve().await;
    let e = env();
    let out = fetch(&e, &format!("{base}/loop"), "p").await.unwrap();
    assert!(
        out.content.contains("more than 10 redirects"),
        "{}",
        out.content
    );
    let out = fetch(&e, &format!("{base}/big"), "p").await.unwrap();
    assert_eq!(out.status, ToolStatus::Success);
    assert!(out.content.ends_with("the rest was not fetched.]"));
    assert!(out.content.len() < 10 * 1024 * 1024 + 1000);
    let out = fetch(&e, &format!("{base}/missing"), "p").await.unwrap();
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.content.starts_with("HTTP 404"), "{}", out.content);
    let out = fetch(&e, &format!("{base}/image"), "p").await.unwrap();
    assert!(out.content.contains("not text"), "{}", out.content);
    let err = fetch(&e, "file:///etc/passwd", "p").await.unwrap_err();
    assert!(err.contains("only http"), "{err}");
    let err = fetch(&e, "::nonsense", "p").await.unwrap_err();
    assert!(err.contains("not a valid URL"), "{err}");
}

#[tokio::test]
async fn https_to_a_plain_http_server_fails_clearly() {
    let base = serve().await;
    let e = env();
    let url = base.replace("http://", "https://");
    let out = fetch(&e, &format!("{url}/page"), "p").await.unwrap();
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(
        out.content
            .starts_with(&format!("could not fetch {url}/page")),
        "{}",
        out.content
    );
}
