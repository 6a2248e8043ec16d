//! Calls waiting for a permission answer never stop toolrt from reading the answers: when every
//! admission place and the parked queue are taken while a call waits for the client, further call
//! lines are refused as `busy` (naming their ids) and control lines are still read.

mod support;

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// Small bounds: 2 admission places (1 executing + 1 queued) and 1 parked call.
const SMALL: &[&str] = &[
    "--max-in-flight",
    "1",
    "--max-queued",
    "1",
    "--max-parked",
    "1",
];

fn asking_write(server: &mut Server, sb: &Sandbox, id: &str) {
    let path = sb.path(&format!("{id}.txt"));
    server.tool_use(id, "Write", json!({"file_path": path, "content": id}));
}

fn busy_for(server: &mut Server, id: &str) -> Value {
    server.wait_for(
        &format!("busy error for {id}"),
        Duration::from_secs(20),
        |v| v["type"] == "error" && v["code"] == "busy" && v["ids"] == json!([id]),
    )
}

fn answer_all_requests(server: &mut Server, answered: &mut HashSet<String>, behavior: &str) {
    let pending: Vec<String> = server
        .seen
        .iter()
        .filter(|v| v["type"] == "permission_request")
        .map(|v| v["request_id"].as_str().unwrap().to_string())
        .filter(|r| !answered.contains(r))
        .collect();
    for request_id in pending {
        server.send(
            json!({"type": "permission_response", "request_id": request_id, "behavior": behavior}),
        );
        answered.insert(request_id);
    }
}

#[test]
fn asks_that_fill_admission_still_get_their_answers_and_every_call_finishes() {
    let sb = Sandbox::new();
    let mut server = sb.serve(SMALL);
    // a and b take both places and ask; c is parked; d finds everything full while calls wait
    // for the client, so it is refused rather than waited for.
    for id in ["a", "b", "c", "d"] {
        asking_write(&mut server, &sb, id);
    }
    let busy = busy_for(&mut server, "d");
    assert!(
        busy["message"].as_str().unwrap().contains("\"d\""),
        "the busy error names the id: {busy}"
    );
    assert_eq!(busy["line"], 4);
    // The answers are read although every place is taken.
    let mut answered = HashSet::new();
    for id in ["a", "b", "c"] {
        server.wait_for(&format!("request for {id}"), Duration::from_secs(20), |v| {
            v["type"] == "permission_request" && v["tool_use_id"] == id
        });
        answer_all_requests(&mut server, &mut answered, "allow");
    }
    for id in ["a", "b", "c"] {
        assert_eq!(server.result(id)["outcome"], "success", "{id}");
    }
    let done = server.finish();
    assert!(done.status.success());
    assert!(done.results("d").is_empty());
    for id in ["a", "b", "c"] {
        assert_eq!(
            std::fs::read_to_string(sb.path(&format!("{id}.txt"))).unwrap(),
            id
        );
    }
    assert!(!sb.path("d.txt").exists());
}

#[test]
fn a_cancel_and_eof_are_read_while_every_place_waits_for_an_answer() {
    let sb = Sandbox::new();
    let mut server = sb.serve(SMALL);
    for id in ["a", "b", "c", "d"] {
        asking_write(&mut server, &sb, id);
    }
    busy_for(&mut server, "d");
    server.send(json!({"type": "cancel", "id": "a"}));
    assert_eq!(server.result("a")["outcome"], "cancelled");
    // End of input: nobody can answer any more; what still waits is denied and toolrt exits.
    let done = server.finish();
    assert!(done.status.success());
    assert_eq!(done.result("b")["outcome"], "denied");
    assert_eq!(done.result("c")["outcome"], "denied");
    assert!(done.results("d").is_empty());
}

#[test]
fn many_asks_past_every_bound_each_get_one_answer_or_one_refusal() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&[
        "--max-in-flight",
        "2",
        "--max-queued",
        "2",
        "--max-parked",
        "4",
    ]);
    // Requests are answered as soon as they are read.
    server.respond_with(Box::new(|v: &Value| {
        (v["type"] == "permission_request").then(|| {
            json!({"type": "permission_response", "request_id": v["request_id"], "behavior": "allow"})
        })
    }));
    let ids: Vec<String> = (0..60).map(|i| format!("w{i}")).collect();
    for id in &ids {
        asking_write(&mut server, &sb, id);
    }
    // Every id ends with exactly one result or one busy refusal; none is lost.
    for id in &ids {
        server.wait_for(
            &format!("result or refusal of {id}"),
            Duration::from_secs(30),
            |v| is_result(v, id) || (v["code"] == "busy" && v["ids"] == json!([id])),
        );
    }
    let done = server.finish();
    assert!(done.status.success());
    let refused: HashSet<String> = done
        .of_type("error")
        .iter()
        .filter(|e| e["code"] == "busy")
        .flat_map(|e| e["ids"].as_array().unwrap().iter())
        .map(|i| i.as_str().unwrap().to_string())
        .collect();
    for id in &ids {
        let results = done.results(id);
        match (results.len(), refused.contains(id)) {
            (1, false) => assert_eq!(results[0]["outcome"], "success", "{id}"),
            (0, true) => assert!(
                !sb.path(&format!("{id}.txt")).exists(),
                "{id} refused but ran"
            ),
            (n, r) => panic!("{id}: {n} results, refused: {r}"),
        }
    }
}
