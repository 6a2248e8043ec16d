//! `execute_result` is control traffic: while every admission place and the parked queue are
//! taken and the calls holding them wait for the client to run its tools, toolrt keeps reading
//! (refusing further call lines as `busy`), so the answers arrive and every accepted call ends.

mod support;

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use support::client::{register, tool};
use support::*;

#[test]
fn a_full_admission_queue_still_reads_execute_results() {
    let sb = Sandbox::new();
    // 4 admission places (2 executing, 2 waiting for a slot) and 2 parked: ten calls overflow it.
    let mut server = sb.serve(&[
        "--max-in-flight",
        "2",
        "--max-queued",
        "2",
        "--max-parked",
        "2",
        "--allowed-tools",
        "Work",
    ]);
    register(&mut server, json!([tool("Work", json!({}))]));
    let ids: Vec<String> = (0..10).map(|i| format!("w{i}")).collect();
    for id in &ids {
        server.tool_use(id, "Work", json!({"q": id}));
    }
    // Nothing is answered yet: two calls wait for the client, six are admitted or parked, and
    // the last four lines find everything full while calls wait for the client.
    let mut busy: HashSet<String> = HashSet::new();
    while busy.len() < 4 {
        let error = server.take_for("busy", Duration::from_secs(20), |v| {
            v["type"] == "error" && v["code"] == "busy"
        });
        for id in error["ids"].as_array().unwrap() {
            busy.insert(id.as_str().unwrap().to_string());
        }
    }
    let expected: HashSet<String> = ["w6", "w7", "w8", "w9"].map(String::from).into();
    assert_eq!(busy, expected);
    // Answer every execute as it comes: the answers are read although admission is full.
    let mut answered = HashSet::new();
    let accepted: Vec<&String> = ids.iter().filter(|id| !busy.contains(*id)).collect();
    while answered.len() < accepted.len() {
        let execute = server.take_for("an execute", Duration::from_secs(20), |v| {
            v["type"] == "execute"
        });
        let id = execute["tool_use_id"].as_str().unwrap().to_string();
        server.send(json!({"type": "execute_result", "request_id": execute["request_id"], "content": format!("done {id}")}));
        answered.insert(id);
    }
    for id in &accepted {
        let result = server.result(id);
        assert_eq!(result["outcome"], "success", "{result}");
        assert_eq!(result["content"], format!("done {id}"));
    }
    let done = server.finish();
    assert!(done.status.success());
    for id in &ids {
        let expected = usize::from(!busy.contains(id));
        assert_eq!(
            done.results(id).len(),
            expected,
            "{id}: {:#?}",
            done.messages
        );
    }
    let executes: Vec<&Value> = done.of_type("execute");
    assert!(executes.is_empty(), "every execute was taken above");
}
