//! An MCP server over streamable HTTP on loopback (the Python `mcp` package's server, which
//! wants `Authorization: Bearer <token>` on every request): the header's token comes from
//! `${VAR}` in the configuration; a wrong token is a failed server, not a failed toolrt.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;
use support::mcp::{self, fixtures, status_event};
use support::{Sandbox, Server, Stderr};

/// The probe server in HTTP mode on a free loopback port; killed when dropped.
struct HttpProbe {
    child: Child,
    url: String,
}

impl HttpProbe {
    fn start(token: &str, cancel_log: &std::path::Path) -> Self {
        let mut child = Command::new(fixtures().join(".venv/bin/python"))
            .arg(fixtures().join("probe_server.py"))
            .args(["--http", "--port", "0"])
            .env("PROBE_TOKEN", token)
            .env("PROBE_CANCEL_LOG", cancel_log)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let port = loop {
            let line = lines.next().expect("the HTTP server exited").unwrap();
            if let Some(port) = line.strip_prefix("LISTENING ") {
                break port.trim().to_string();
            }
        };
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpProbe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn http_server_with_a_bearer_token_from_the_environment() {
    let sandbox = Sandbox::new();
    let log = sandbox.dir.path().join("cancel.log");
    let mut http = HttpProbe::start("s3cret-token", &log);
    let file = mcp::config_file(
        &sandbox,
        json!({
            "remote": {"type": "http", "url": http.url, "headers": {"Authorization": "Bearer ${TOOLRT_TEST_MCP_TOKEN}"}},
            "wrong": {"type": "http", "url": http.url, "headers": {"Authorization": "Bearer ${NOT_SET_ANYWHERE:-wrong}"}}
        }),
    );
    let mut cmd = support::command();
    cmd.args([
        "serve",
        "--cwd",
        sandbox.cwd.to_str().unwrap(),
        "--output-dir",
        sandbox.out.to_str().unwrap(),
        "--mcp-config",
        file.to_str().unwrap(),
        "--permission-mode",
        "bypassPermissions",
    ])
    .current_dir(&sandbox.cwd)
    .env("TOOLRT_TEST_MCP_TOKEN", "s3cret-token");
    let mut server = Server::spawn(cmd, Stderr::Capture);
    status_event(&mut server, "remote", "connected");
    let wrong = status_event(&mut server, "wrong", "failed");
    assert!(
        wrong["reason"]
            .as_str()
            .unwrap()
            .contains("asks for authorization"),
        "{wrong}"
    );

    server.tool_use("e", "mcp__remote__echo", json!({"message": "over http"}));
    assert_eq!(server.result("e")["content"], "over http");
    server.tool_use("m", "mcp__remote__mixed", json!({}));
    let m = server.result("m");
    assert_eq!(m["content_blocks"].as_array().unwrap().len(), 5, "{m}");
    // Progress and cancellation over HTTP too.
    server.tool_use(
        "s",
        "mcp__remote__slow",
        json!({"seconds": 30, "steps": 60}),
    );
    server.take_for("progress", Duration::from_secs(20), |v| {
        v["event"] == "progress" && v["tool_use_id"] == "s"
    });
    server.send(json!({"type": "cancel", "id": "s"}));
    assert_eq!(server.result("s")["outcome"], "cancelled");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&log).unwrap_or_default().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never saw the cancel"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // The server goes away: the call fails naming it, and nothing hangs.
    let _ = http.child.kill();
    let _ = http.child.wait();
    server.tool_use("gone", "mcp__remote__echo", json!({"message": "x"}));
    let gone = server.result("gone");
    assert_eq!(gone["outcome"], "failed", "{gone}");
    assert!(
        gone["content"].as_str().unwrap().contains("\"remote\""),
        "{gone}"
    );
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
}
