//! The Bash sandbox on worker nodes: a command placed on a worker runs in a sandbox that the
//! worker sets up from the coordinator's settings (paths anchored in the worker's workspace),
//! it is auto-allowed for running sandboxed as a local one is, the kernel there refuses what
//! the settings refuse, and a host the settings neither allow nor deny is asked about through
//! the coordinator, as for a local command.

mod cluster_support;
mod support;

use std::sync::{Arc, Mutex};

use cluster_support::*;
use serde_json::{Value, json};
use support::internet::Internet;
use support::*;

/// The `sandbox` fields of the worker's `node joined` event.
fn joined_sandbox(server: &mut Server) -> Value {
    let joined = server.wait_for("w1 joined", std::time::Duration::from_secs(20), |v| {
        v["type"] == "event" && v["event"] == "node" && v["status"] == "joined"
    });
    joined["sandbox"].clone()
}

/// A worker with `env` added to its environment and a coordinator with `settings` that has
/// seen it join; the `sandbox` fields of its `node joined` event.
fn cluster(sb: &Sandbox, env: &[(&str, &str)], settings: Value) -> (Worker, Server, Value) {
    let cookie = cookie(sb, "cookie", "s3cret");
    let worker = Worker::start_with_env(
        "w1",
        &cookie,
        &sb.dir.path().join("w1"),
        &free_addr(),
        &[],
        env,
    );
    let settings = sb.settings_file(&settings);
    let mut server = coordinator(
        sb,
        &cookie,
        std::slice::from_ref(&worker),
        &["--settings", &settings],
    );
    let sandbox = joined_sandbox(&mut server);
    (worker, server, sandbox)
}

/// [`cluster`] with a worker whose sandbox cannot start: the helper it would start it with
/// does not exist there.
fn without_a_sandbox(sb: &Sandbox, settings: Value) -> (Worker, Server, Value) {
    let broken = [("TOOLRT_SANDBOX_EXEC", "/nonexistent/toolrt")];
    let (worker, server, sandbox) = cluster(sb, &broken, settings);
    assert_eq!(sandbox["status"], "unavailable", "{sandbox}");
    assert!(
        (sandbox["reason"].as_str().unwrap()).contains("/nonexistent/toolrt"),
        "{sandbox}"
    );
    (worker, server, sandbox)
}

fn bash(server: &mut Server, id: &str, command: &str) -> Value {
    server.tool_use(id, "Bash", json!({ "command": command }));
    server.result(id)
}

#[test]
fn a_command_on_a_worker_runs_in_the_sandbox_its_coordinators_settings_describe() {
    let net = Internet::start();
    let port = net.port;
    let sb = Sandbox::new();
    let resolve = "www.allowed.test=127.0.0.1,yes.test=127.0.0.1,no.test=127.0.0.1";
    // `./secret.txt` is the worker's: paths relative to the workspace are anchored there.
    let (worker, mut server, sandbox) = cluster(
        &sb,
        &[("TOOLRT_SANDBOX_PROXY_RESOLVE", resolve)],
        json!({
            "sandbox": {"enabled": true,
                "filesystem": {"denyRead": ["./secret.txt"]},
                "network": {"allowedDomains": ["*.allowed.test"]}},
        }),
    );
    let cwd = std::fs::canonicalize(&worker.cwd).unwrap();
    std::fs::write(cwd.join("secret.txt"), "TOPSECRET\n").unwrap();
    let outside = sb.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    assert_eq!(sandbox["status"], "ready", "{sandbox}");
    assert!(
        sandbox["enforcement"]
            .as_str()
            .unwrap()
            .contains("Landlock ABI"),
        "{sandbox}"
    );
    let asked: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = asked.clone();
    server.respond_with(Box::new(move |v| {
        if v["type"] != "permission_request" {
            return None;
        }
        seen.lock().unwrap().push(v.clone());
        let allow = v["tool_name"] == "Network" && v["input"]["host"] == "yes.test";
        let behavior = if allow { "allow" } else { "deny" };
        Some(json!({"type": "permission_response", "request_id": v["request_id"], "behavior": behavior}))
    }));

    // Inside the worker's workspace: allowed for running sandboxed, and it ran there.
    let r = bash(
        &mut server,
        "inside",
        "echo hi > inside.txt && cat inside.txt",
    );
    assert_eq!(r["outcome"], "success", "{r}");
    assert_eq!(r["node"], "w1", "{r}");
    assert_eq!(
        std::fs::read_to_string(cwd.join("inside.txt")).unwrap(),
        "hi\n"
    );

    // Outside it, and a denied read: allowed for running sandboxed, refused by the kernel.
    let escape = outside.join("escape.txt");
    let r = bash(
        &mut server,
        "outside",
        &format!("python3 -c \"open('{}','w')\"", escape.display()),
    );
    assert_ne!(r["outcome"], "success", "{r}");
    assert_eq!(r["node"], "w1", "{r}");
    assert!(
        !escape.exists(),
        "the command on the worker wrote {escape:?}"
    );
    let r = bash(&mut server, "secret", "cat secret.txt");
    assert_ne!(r["outcome"], "success", "{r}");
    assert!(!r["content"].as_str().unwrap().contains("TOPSECRET"), "{r}");

    // The network: a listed host passes the worker's proxy; an unlisted one is asked about
    // through the coordinator, on behalf of the call, and the answer holds.
    let curl =
        |host: &str, path: &str| format!("curl -sS -f --max-time 30 http://{host}:{port}/{path}");
    let r = bash(&mut server, "listed", &curl("www.allowed.test", "a"));
    assert_eq!(r["outcome"], "success", "{r}");
    assert!(r["content"].as_str().unwrap().contains("hello /a"), "{r}");
    let r = bash(&mut server, "approved", &curl("yes.test", "b"));
    assert_eq!(r["outcome"], "success", "{r}");
    assert!(r["content"].as_str().unwrap().contains("hello /b"), "{r}");
    let r = bash(&mut server, "refused", &curl("no.test", "c"));
    assert_ne!(r["outcome"], "success", "{r}");

    let asked = asked.lock().unwrap().clone();
    let hosts: Vec<(&str, &str)> = asked
        .iter()
        .map(|v| {
            assert_eq!(v["tool_name"], "Network", "only hosts are asked about: {v}");
            (
                v["tool_use_id"].as_str().unwrap(),
                v["input"]["host"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(hosts, [("approved", "yes.test"), ("refused", "no.test")]);
    let _ = server.finish();
}

#[test]
fn a_worker_that_cannot_set_the_sandbox_up_refuses_commands_when_it_is_required() {
    let sb = Sandbox::new();
    let (worker, mut server, sandbox) = without_a_sandbox(
        &sb,
        json!({
            "sandbox": {"enabled": true, "failIfUnavailable": true},
            "permissions": {"allow": ["Bash(touch *)"]},
        }),
    );
    assert_eq!(sandbox["bash"], "refused", "{sandbox}");
    let r = bash(&mut server, "t", "touch made.txt");
    assert_ne!(r["outcome"], "success", "{r}");
    assert!(
        r["content"].as_str().unwrap().contains("sandbox"),
        "says why: {r}"
    );
    assert!(!worker.cwd.join("made.txt").exists());
    let _ = server.finish();
}

#[test]
fn a_command_on_a_worker_whose_sandbox_cannot_start_is_not_allowed_for_it() {
    let sb = Sandbox::new();
    // With the sandbox on, the coordinator alone would allow this write without asking
    // (autoAllowBashIfSandboxed); the worker's sandbox cannot start, so there it asks.
    let (worker, mut server, sandbox) =
        without_a_sandbox(&sb, json!({"sandbox": {"enabled": true}}));
    assert_eq!(sandbox["bash"], "unsandboxed", "{sandbox}");
    server.tool_use("t", "Bash", json!({"command": "touch made.txt"}));
    let ask = server.wait_for("the ask for t", std::time::Duration::from_secs(30), |v| {
        v["type"] == "permission_request" && v["tool_use_id"] == "t"
    });
    assert_eq!(ask["tool_name"], "Bash", "{ask}");
    server.finish();
    assert!(
        !worker.cwd.join("made.txt").exists(),
        "ran without approval"
    );
}

#[test]
fn an_agent_types_rules_know_no_sandbox_on_a_worker_either() {
    let sb = Sandbox::new();
    let (worker, mut server, sandbox) = cluster(
        &sb,
        &[],
        json!({
            "sandbox": {"enabled": true},
            "agents": {"tester": {"permissions": {"allow": ["Bash(touch *)"]}}},
        }),
    );
    assert_eq!(sandbox["status"], "ready", "{sandbox}");
    server.send(json!({"type": "agent_start", "agent_id": "t1", "agent_type": "tester"}));
    server.wait_for("agent_started", std::time::Duration::from_secs(10), |v| {
        v["type"] == "event" && v["event"] == "agent_started"
    });
    // The session's level allows it for running sandboxed on the worker; the tester's rules,
    // which know no sandbox, do not allow it: it asks (answered no).
    server.respond_with(Box::new(|v| {
        (v["type"] == "permission_request").then(|| {
            json!({"type": "permission_response", "request_id": v["request_id"], "behavior": "deny"})
        })
    }));
    server.send(json!({"type": "tool_use", "id": "t", "name": "Bash",
        "input": {"command": "python3 -c \"open('made.txt','w')\""}, "agent_id": "t1"}));
    let r = server.result("t");
    assert_eq!(r["outcome"], "denied", "{r}");
    assert!(
        server
            .seen
            .iter()
            .any(|v| v["type"] == "permission_request" && v["tool_use_id"] == "t"),
        "asked"
    );
    // Its own rule allows it, and the session's level for running sandboxed there.
    server.send(json!({"type": "tool_use", "id": "e", "name": "Bash",
        "input": {"command": "touch touched.txt"}, "agent_id": "t1"}));
    let r = server.result("e");
    assert_eq!(
        (r["outcome"].as_str(), r["node"].as_str()),
        (Some("success"), Some("w1")),
        "{r}"
    );
    server.finish();
    let cwd = std::fs::canonicalize(&worker.cwd).unwrap();
    assert!(!cwd.join("made.txt").exists());
    assert!(cwd.join("touched.txt").exists());
}
