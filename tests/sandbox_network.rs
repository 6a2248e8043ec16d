//! The Bash sandbox's network boundary through `toolrt serve` (docs/SEMANTICS.md §11): a
//! sandboxed command reaches the network only through toolrt's proxy, which lets through
//! `allowedDomains` and `WebFetch(domain:…)` allow rules, refuses `deniedDomains`, and asks
//! (`Network`) about any other host. A loopback HTTP server in the test stands in for the
//! internet; test host names reach it through the proxy's resolver override.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use support::internet::Internet;
use support::{Finished, Server, Stderr, command};

const WAIT: Duration = Duration::from_secs(90);

/// Runs one session: the Bash calls in order; each `Network` request approved when its host is
/// in `approve`, denied otherwise.
fn run(settings: Value, calls: &[(&str, String)], approve: &[&str], args: &[&str]) -> Finished {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let (cwd, home) = (root.join("proj"), root.join("home"));
    for d in [&cwd, &home, &root.join("out")] {
        std::fs::create_dir_all(d).unwrap();
    }
    let file: PathBuf = root.join("settings.json");
    std::fs::write(&file, settings.to_string()).unwrap();
    let hosts = [
        "www.allowed.test",
        "bad.allowed.test",
        "webfetch.test",
        "yes.test",
        "no.test",
    ];
    let resolve: Vec<String> = hosts.iter().map(|h| format!("{h}=127.0.0.1")).collect();
    let mut cmd = command();
    cmd.args(["serve", "--cwd"])
        .arg(&cwd)
        .arg("--output-dir")
        .arg(root.join("out"))
        .arg("--settings")
        .arg(&file)
        .args(args)
        .current_dir(&cwd)
        .env("HOME", &home)
        .env("TOOLRT_SANDBOX_PROXY_RESOLVE", resolve.join(","));
    let mut server = Server::spawn(cmd, Stderr::Capture);
    for (id, command) in calls {
        server.tool_use(id, "Bash", json!({ "command": command }));
        loop {
            let v = server.recv(WAIT).expect("a message before the timeout");
            if v["type"] == "permission_request" {
                let host = v["input"]["host"].as_str().unwrap_or("");
                let behavior = if approve.contains(&host) {
                    "allow"
                } else {
                    "deny"
                };
                server.send(json!({"type": "permission_response", "request_id": v["request_id"], "behavior": behavior}));
            }
            if v["type"] == "tool_result" && v["tool_use_id"] == *id {
                break;
            }
        }
    }
    server.finish()
}

fn outcome<'a>(run: &'a Finished, id: &str) -> &'a str {
    run.result(id)["outcome"].as_str().unwrap_or("")
}

fn content(run: &Finished, id: &str) -> String {
    run.result(id)["content"].as_str().unwrap_or("").to_string()
}

/// The `Network` requests of call `id`, by host.
fn asked_hosts(run: &Finished, id: &str) -> Vec<String> {
    run.of_type("permission_request")
        .iter()
        .filter(|v| v["tool_use_id"] == id)
        .map(|v| {
            assert_eq!(v["tool_name"], "Network", "{v}");
            v["input"]["host"].as_str().unwrap_or("").to_string()
        })
        .collect()
}

fn curl(url: &str) -> String {
    format!("curl -sS -f --max-time 30 {url}")
}

fn settings() -> Value {
    json!({
        "sandbox": {"enabled": true, "network": {
            "allowedDomains": ["*.allowed.test"], "deniedDomains": ["bad.allowed.test"]}},
        "permissions": {"allow": ["WebFetch(domain:webfetch.test)"]}
    })
}

#[test]
fn allowed_hosts_pass_denied_fail_others_are_asked() {
    let net = Internet::start();
    let url = |host: &str, path: &str| format!("http://{host}:{}/{path}", net.port);
    let calls = [
        ("allowed", curl(&url("www.allowed.test", "a"))),
        (
            "tunnel",
            format!("{} --proxytunnel", curl(&url("www.allowed.test", "t"))),
        ),
        ("webfetch", curl(&url("webfetch.test", "w"))),
        ("denied", curl(&url("bad.allowed.test", "d"))),
        ("approved", curl(&url("yes.test", "y"))),
        ("refused", curl(&url("no.test", "n"))),
    ];
    let run = run(settings(), &calls, &["yes.test"], &[]);
    for (id, path) in [
        ("allowed", "/a"),
        ("tunnel", "/t"),
        ("webfetch", "/w"),
        ("approved", "/y"),
    ] {
        assert_eq!(outcome(&run, id), "success", "{id}: {}", content(&run, id));
        assert!(
            content(&run, id).contains(&format!("hello {path}")),
            "{id}: {}",
            content(&run, id)
        );
    }
    for (id, host) in [("denied", "bad.allowed.test"), ("refused", "no.test")] {
        assert_ne!(outcome(&run, id), "success", "{id}: {}", content(&run, id));
        assert!(
            content(&run, id).contains(&format!("(sandbox: the network proxy refused {host}:")),
            "{id}: the result says the sandbox refused it: {}",
            content(&run, id)
        );
    }
    for id in ["allowed", "tunnel", "webfetch", "denied"] {
        assert!(
            asked_hosts(&run, id).is_empty(),
            "{id}: rules decide, nobody is asked"
        );
    }
    assert_eq!(asked_hosts(&run, "approved"), ["yes.test"]);
    assert_eq!(asked_hosts(&run, "refused"), ["no.test"]);
    let mut paths = net.paths();
    paths.sort();
    assert_eq!(
        paths,
        ["/a", "/t", "/w", "/y"],
        "only the allowed and approved requests arrive"
    );
}

#[test]
fn direct_connections_fail_and_dont_ask_denies() {
    let net = Internet::start();
    let port = net.port;
    let calls = [
        (
            "direct",
            format!("curl -sS -f --max-time 30 --noproxy '*' http://127.0.0.1:{port}/direct"),
        ),
        (
            "python",
            format!(
                "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5)\""
            ),
        ),
        ("unknown", curl(&format!("http://yes.test:{port}/u"))),
    ];
    let run = run(
        settings(),
        &calls,
        &["yes.test"],
        &["--permission-mode", "dontAsk"],
    );
    for id in ["direct", "python", "unknown"] {
        assert_ne!(outcome(&run, id), "success", "{id}: {}", content(&run, id));
    }
    assert!(
        run.of_type("permission_request").is_empty(),
        "dontAsk asks nobody"
    );
    assert!(
        content(&run, "unknown").contains("(sandbox: the network proxy refused yes.test:"),
        "{}",
        content(&run, "unknown")
    );
    assert!(
        net.paths().is_empty(),
        "nothing reached the server: {:?}",
        net.paths()
    );
}
