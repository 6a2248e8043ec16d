//! WebFetch through `toolrt serve`, against a tiny HTTP server on 127.0.0.1 run by the test.

mod support;
mod tools_common;

use std::io::{Read, Write};
use std::net::TcpListener;

use serde_json::json;
use tools_common::*;

/// Serves fixed routes on a background thread for the rest of the test process.
fn serve() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            std::thread::spawn(move || {
                let mut req = Vec::new();
                let mut buf = [0u8; 1024];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let line = String::from_utf8_lossy(&req)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string();
                let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
                let (status, extra, body): (&str, &str, &[u8]) = match path.as_str() {
                    "/page" => ("200 OK", "Content-Type: text/html\r\n", b"<html><body><h2>Docs</h2><ul><li>first</li></ul><script>evil()</script></body></html>"),
                    "/moved" => ("302 Found", "Location: /page\r\n", b""),
                    "/away" => ("302 Found", "Location: http://denied.example/secret\r\n", b""),
                    _ => ("404 Not Found", "Content-Type: text/plain\r\n", b"no"),
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes());
                let _ = sock.write_all(body);
            });
        }
    });
    base
}

#[test]
fn fetch_follows_allowed_redirects_and_converts_html() {
    let base = serve();
    let mut s = Server::start(&[]);
    let r = s.call(
        "w",
        "WebFetch",
        json!({"url": format!("{base}/moved"), "prompt": "list the items"}),
    );
    assert_outcome(&r, "success");
    let text = content(&r);
    assert!(
        text.contains(&format!("{base}/page")) && text.contains("list the items"),
        "{r}"
    );
    assert!(
        text.contains("## Docs") && text.contains("first") && !text.contains("evil()"),
        "{r}"
    );
}

#[test]
fn redirect_to_a_denied_domain_is_refused() {
    let base = serve();
    let mut s = Server::with_settings(
        json!({"permissions": {"deny": ["WebFetch(domain:denied.example)"]}}),
    );
    let r = s.call(
        "w",
        "WebFetch",
        json!({"url": format!("{base}/away"), "prompt": "p"}),
    );
    assert_outcome(&r, "failed");
    assert!(
        content(&r).contains("redirect to denied.example is not allowed by the permission rules"),
        "{r}"
    );
}

#[test]
fn bad_urls_are_validation_errors() {
    let mut s = Server::start(&[]);
    let r = s.call(
        "a",
        "WebFetch",
        json!({"url": "ftp://example.com/x", "prompt": "p"}),
    );
    assert_outcome(&r, "validation_error");
    let r = s.call("b", "WebFetch", json!({"url": "not a url", "prompt": "p"}));
    assert_outcome(&r, "validation_error");
    let base = serve();
    let r = s.call(
        "c",
        "WebFetch",
        json!({"url": format!("{base}/missing"), "prompt": "p"}),
    );
    assert_outcome(&r, "failed");
    assert!(content(&r).contains("404"), "{r}");
}
