//! Worker nodes: calls spread over three `toolrt worker`s, files on a worker's own workspace,
//! and decisions taken on the coordinator.

mod cluster_support;
mod support;

use std::collections::HashMap;
use std::time::Duration;

use cluster_support::*;
use serde_json::json;
use support::*;

#[test]
fn a_batch_of_30_bash_calls_spreads_over_three_workers_with_one_result_each() {
    let sb = Sandbox::new();
    let (workers, mut server) = three_node_cluster(&sb);
    let calls: Vec<_> = (0..30)
        .map(|i| json!({"id": format!("c{i}"), "name": "Bash", "input": {"command": format!("echo n-{i} $(pwd)")}}))
        .collect();
    server.send(json!({"type": "batch", "id": "b", "calls": calls}));
    let end = server.wait_for("batch_end", Duration::from_secs(60), |v| {
        v["event"] == "batch_end"
    });
    let ids: Vec<String> = (0..30).map(|i| format!("c{i}")).collect();
    assert_eq!(
        end["ids"],
        json!(ids),
        "batch_end lists the ids in request order"
    );
    let done = server.finish();
    let mut per_node: HashMap<String, usize> = HashMap::new();
    for i in 0..30 {
        let r = done.result(&format!("c{i}"));
        assert_eq!(r["outcome"], "success", "{r}");
        let node = r["node"]
            .as_str()
            .expect("a result executed on a worker names it");
        let w = workers
            .iter()
            .find(|w| w.name == node)
            .expect("a known worker");
        // It ran in that worker's own workspace.
        let want = format!("n-{i} {}", std::fs::canonicalize(&w.cwd).unwrap().display());
        assert_eq!(r["content"].as_str().unwrap().trim(), want, "{r}");
        *per_node.entry(node.to_string()).or_default() += 1;
    }
    for w in &workers {
        assert!(
            per_node.get(&w.name).copied().unwrap_or(0) > 0,
            "{} ran none: {per_node:?}",
            w.name
        );
    }
}

#[test]
fn write_then_read_act_on_the_workers_own_workspace() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let workers = workers(&sb, &cookie, 1);
    let file = std::fs::canonicalize(&workers[0].cwd)
        .unwrap()
        .join("notes.txt");
    let mut server = coordinator(
        &sb,
        &cookie,
        &workers,
        &["--allowed-tools", "Write", "--allowed-tools", "Read"],
    );
    let path = file.display().to_string();
    server.tool_use(
        "w",
        "Write",
        json!({"file_path": path, "content": "from the coordinator\n"}),
    );
    let w = server.result("w");
    assert_eq!(w["outcome"], "success", "{w}");
    assert_eq!(w["node"], "w1");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "from the coordinator\n"
    );
    server.tool_use("r", "Read", json!({"file_path": path}));
    let r = server.result("r");
    assert_eq!(r["outcome"], "success", "{r}");
    assert_eq!(r["node"], "w1");
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .contains("from the coordinator"),
        "{r}"
    );
    // The coordinator's own folder was never touched.
    assert!(!sb.cwd.join("notes.txt").exists());
}

#[test]
fn a_deny_rule_on_the_coordinator_blocks_a_call_before_it_reaches_a_worker() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let workers = workers(&sb, &cookie, 1);
    let marker = workers[0].cwd.join("ran");
    let mut server = coordinator(
        &sb,
        &cookie,
        &workers,
        &[
            "--allowed-tools",
            "Bash",
            "--disallowed-tools",
            "Bash(touch:*)",
        ],
    );
    let cmd = format!("touch {}", marker.display());
    server.tool_use("d", "Bash", json!({"command": cmd}));
    let d = server.result("d");
    assert_eq!(d["outcome"], "denied", "{d}");
    assert!(d.get("node").is_none(), "a denied call ran nowhere: {d}");
    server.tool_use("ok", "Bash", json!({"command": "echo fine"}));
    let ok = server.result("ok");
    assert_eq!(
        (ok["outcome"].as_str(), ok["node"].as_str()),
        (Some("success"), Some("w1"))
    );
    let done = server.finish();
    assert!(!marker.exists(), "the denied command ran on the worker");
    assert_eq!(done.results("d").len(), 1);
}

/// The calls of `agent` (`echo` of their index), sent one at a time; the node each ran on.
fn nodes_of_calls(server: &mut Server, agent: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let id = format!("{agent}-{i}");
            server.send(json!({"type": "tool_use", "id": id, "name": "Bash",
                "input": {"command": format!("echo {i}")}, "agent_id": agent}));
            let r = server.result(&id);
            assert_eq!(r["outcome"], "success", "{r}");
            r["node"].as_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn an_agents_calls_run_on_its_node_from_its_type_or_its_start() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let mut workers = workers(&sb, &cookie, 2);
    let settings = sb.settings_file(&json!({"agents": {"builder": {"node": "w2"}}}));
    let mut server = coordinator(
        &sb,
        &cookie,
        &workers,
        &["--settings", &settings, "--allowed-tools", "Bash(echo:*)"],
    );
    server.send(json!({"type": "agent_start", "agent_id": "b1", "agent_type": "builder"}));
    let started = server.wait_for("b1 started", Duration::from_secs(10), |v| {
        v["event"] == "agent_started"
    });
    assert_eq!(started["node"], "w2", "{started}");
    // Sent one at a time, calls without a node would take turns on w1 and w2.
    assert_eq!(nodes_of_calls(&mut server, "b1", 6), vec!["w2"; 6]);
    // The start's own node wins over its type's; a child keeps its parent's.
    server.send(
        json!({"type": "agent_start", "agent_id": "b2", "agent_type": "builder", "node": "w1"}),
    );
    server.send(
        json!({"type": "agent_start", "agent_id": "c2", "agent_type": "helper", "parent": "b2"}),
    );
    server.wait_for("c2 started", Duration::from_secs(10), |v| {
        v["event"] == "agent_started" && v["agent_id"] == "c2"
    });
    assert_eq!(nodes_of_calls(&mut server, "b2", 3), vec!["w1"; 3]);
    assert_eq!(nodes_of_calls(&mut server, "c2", 3), vec!["w1"; 3]);
    // Its node lost, the agent's calls fail saying so and run nowhere else.
    workers[1].kill9();
    wait_node(&mut server, "w2", "lost", Duration::from_secs(10));
    server.send(json!({"type": "tool_use", "id": "late", "name": "Bash",
        "input": {"command": "echo late"}, "agent_id": "b1"}));
    let late = server.result("late");
    assert_eq!(late["outcome"], "failed", "{late}");
    let text = late["content"].as_str().unwrap();
    assert!(
        text.contains("w2 (lost)") && text.contains("did not run"),
        "{text}"
    );
    assert!(late.get("node").is_none(), "{late}");
    // Calls of no agent still run on the node that is up.
    server.tool_use("free", "Bash", json!({"command": "echo free"}));
    assert_eq!(server.result("free")["node"], "w1");
    let done = server.finish();
    assert_eq!(done.results("late").len(), 1);
}

#[test]
fn an_agent_placed_on_a_node_is_refused_in_a_session_without_workers() {
    let sb = Sandbox::new();
    let settings = sb.settings_file(&json!({"agents": {"builder": {"node": "w2"}}}));
    let mut server = sb.serve(&["--settings", &settings]);
    server.send(json!({"type": "agent_start", "agent_id": "b1", "agent_type": "builder"}));
    let err = server.wait_for("error", Duration::from_secs(10), |v| v["type"] == "error");
    let text = err["message"].as_str().unwrap();
    assert!(
        text.contains("worker node \"w2\"") && text.contains("no worker nodes"),
        "{text}"
    );
    // The agent was not started: its calls are refused as any unknown agent's.
    server.send(json!({"type": "tool_use", "id": "x", "name": "Bash",
        "input": {"command": "echo x"}, "agent_id": "b1"}));
    let x = server.result("x");
    assert_ne!(x["outcome"], "success", "{x}");
}
