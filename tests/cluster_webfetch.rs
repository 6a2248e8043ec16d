//! WebFetch on a worker node: decided on the coordinator, fetched by the worker, and no
//! redirect followed there (the rules that judge a hop are the coordinator's).

mod cluster_support;
mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use cluster_support::*;
use serde_json::json;
use support::*;

/// Serves `/page` and `/moved` (a 302 to `/page`) on 127.0.0.1 from a thread of its own;
/// its base URL and the paths requested so far, in order.
fn http_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match sock.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let head = String::from_utf8_lossy(&req).to_string();
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            log.lock().unwrap().push(path.clone());
            let (status, extra, body): (&str, &str, &str) = match path.as_str() {
                "/page" => (
                    "200 OK",
                    "Content-Type: text/html\r\n",
                    "<html><body><h2>Worker docs</h2></body></html>",
                ),
                "/moved" => ("302 Found", "Location: /page\r\n", ""),
                _ => ("404 Not Found", "Content-Type: text/plain\r\n", "no"),
            };
            let reply = format!(
                "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(reply.as_bytes());
        }
    });
    (base, seen)
}

#[test]
fn a_worker_fetches_what_the_coordinator_allowed_and_follows_no_redirect() {
    let (base, seen) = http_server();
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let workers = workers(&sb, &cookie, 1);
    let mut server = coordinator(
        &sb,
        &cookie,
        &workers,
        &[
            "--allowed-tools",
            "WebFetch(domain:127.0.0.1)",
            "--disallowed-tools",
            "WebFetch(domain:localhost)",
        ],
    );

    server.tool_use(
        "page",
        "WebFetch",
        json!({"url": format!("{base}/page"), "prompt": "the title"}),
    );
    let page = server.result("page");
    assert_eq!(page["outcome"], "success", "{page}");
    assert_eq!(page["node"], "w1", "run on the worker: {page}");
    assert!(
        page["content"].as_str().unwrap().contains("## Worker docs"),
        "{page}"
    );

    // A redirect ends the call there, naming where it leads; the worker does not follow it,
    // even to a host the coordinator's rules allow.
    server.tool_use(
        "moved",
        "WebFetch",
        json!({"url": format!("{base}/moved"), "prompt": "the title"}),
    );
    let moved = server.result("moved");
    assert_eq!(moved["outcome"], "failed", "{moved}");
    assert_eq!(moved["node"], "w1", "{moved}");
    let text = moved["content"].as_str().unwrap();
    assert!(
        text.contains("was not followed: on a worker node")
            && text.contains(&format!("{base}/page")),
        "{moved}"
    );

    // A deny rule on the coordinator: nothing reaches the worker, nor the server.
    let port = base.rsplit(':').next().unwrap();
    server.tool_use(
        "denied",
        "WebFetch",
        json!({"url": format!("http://localhost:{port}/page"), "prompt": "x"}),
    );
    let denied = server.result("denied");
    assert_eq!(denied["outcome"], "denied", "{denied}");
    assert!(denied.get("node").is_none(), "{denied}");

    server.finish();
    assert_eq!(
        *seen.lock().unwrap(),
        ["/page", "/moved"],
        "one request per allowed call, no redirect followed, nothing for the denied one"
    );
}
