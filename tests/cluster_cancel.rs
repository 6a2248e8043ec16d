//! Cancellation crosses nodes: a cancel on the coordinator kills the process groups of calls
//! running on three workers.

mod cluster_support;
mod support;

use std::time::{Duration, Instant};

use cluster_support::*;
use serde_json::json;
use support::*;

#[test]
fn cancelling_calls_on_three_nodes_kills_every_process_group() {
    let sb = Sandbox::new();
    let (_workers, mut server) = three_node_cluster(&sb);
    let pids = sb.dir.path().join("pids");
    std::fs::create_dir_all(&pids).unwrap();
    // Each command starts a child in its group and records both pids, then waits.
    for i in 0..3 {
        let cmd = format!(
            "sleep 300 & echo $! > {dir}/child{i}; echo $$ > {dir}/shell{i}; wait",
            dir = pids.display()
        );
        server.tool_use(&format!("c{i}"), "Bash", json!({"command": cmd}));
    }
    let mut all = Vec::new();
    for i in 0..3 {
        all.push(read_pid(&pids.join(format!("child{i}"))));
        all.push(read_pid(&pids.join(format!("shell{i}"))));
    }
    for i in 0..3 {
        server.send(json!({"type": "cancel", "id": format!("c{i}")}));
    }
    let mut nodes = Vec::new();
    for i in 0..3 {
        let r = server.result(&format!("c{i}"));
        assert_eq!(r["outcome"], "cancelled", "{r}");
        nodes.push(r["node"].as_str().unwrap().to_string());
    }
    nodes.sort();
    assert_eq!(nodes, ["w1", "w2", "w3"], "one call on each node");
    let deadline = Instant::now() + Duration::from_secs(5);
    for pid in all {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            wait_gone_within(pid, left),
            "process {pid} outlived its cancelled call"
        );
    }
}
