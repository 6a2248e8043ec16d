//! Fair admission across agents' scopes: `--max-in-flight` stays the global bound, and when
//! calls wait — for an admission place (parked) or for an execution slot — the free place or
//! slot goes to the scopes in turn, so one agent's flood delays another agent's call by a turn,
//! not by the flood. One agent holds at most a quarter of the parked queue: its further call
//! lines are refused `busy` while other agents' lines are still read and taken.

mod support;

#[path = "common/gate.rs"]
mod gate;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use gate::Gate;
use serde_json::{Value, json};
use support::client::{answer, execute_of, register, tool};
use support::*;
use tokio::sync::Semaphore;
use toolrt::{AskPolicy, ClientMessage, Config, Full, Runtime, ServerMessage, ToolCall};

const IN_FLIGHT: usize = 2;
const QUEUED: usize = 32;
const PARKED: usize = 128;
const FLOOD: usize = 10_000;

/// How many of the flood's results may come before the single call's. The single call parks
/// behind the flood's parked calls; a freed admission place goes to the scopes in turn, so it
/// is admitted after at most two of the flood's results (the flood's turn, then its own).
/// Admitted, it waits for an execution slot, which also go in turn: at most two more of the
/// flood's calls are given one first (the one granted before it joined, and one turn). Then its
/// `execute` comes out behind at most `IN_FLIGHT - 1` of the flood's, which the test answers in
/// the order they came. Doubled for scheduling slack. Without turns it would be behind every
/// admitted and parked call of the flood: `QUEUED + PARKED / 4` of them.
const BOUND: usize = 2 * (2 + 2 + IN_FLIGHT);

fn work(id: &str, agent: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "Work", "input": {"q": id}, "agent_id": agent})
}

#[test]
fn one_agents_flood_of_ten_thousand_calls_delays_another_agents_call_by_turns_not_by_the_flood() {
    const {
        assert!(
            BOUND < QUEUED + PARKED / 4,
            "the bound must tell fair from first come"
        )
    };
    let sb = Sandbox::new();
    let (in_flight, queued, parked) = (
        IN_FLIGHT.to_string(),
        QUEUED.to_string(),
        PARKED.to_string(),
    );
    let mut server = sb.serve(&[
        "--max-in-flight",
        &in_flight,
        "--max-queued",
        &queued,
        "--max-parked",
        &parked,
        "--allowed-tools",
        "Work",
    ]);
    register(&mut server, json!([tool("Work", json!({}))]));
    for agent in ["flood", "single"] {
        server.send(json!({"type": "agent_start", "agent_id": agent, "agent_type": "worker"}));
        server.wait_for("agent_started", Duration::from_secs(20), |v| {
            v["event"] == "agent_started" && v["agent_id"] == agent
        });
    }
    // The flood, then the single call, then `hello`, whose answer says every line before it
    // was read and taken, parked or refused.
    let mut lines = String::new();
    for i in 0..FLOOD {
        lines.push_str(&work(&format!("f{i}"), "flood").to_string());
        lines.push('\n');
    }
    lines.push_str(&work("single", "single").to_string());
    lines.push('\n');
    lines.push_str(&json!({"type": "hello"}).to_string());
    server.send_raw(&lines);
    server.wait_for("hello", Duration::from_secs(120), |v| v["type"] == "hello");
    let mut busy = HashSet::new();
    for e in server.seen.iter().filter(|v| v["code"] == "busy") {
        let message = e["message"].as_str().unwrap_or_default();
        assert!(message.contains("agent \"flood\""), "{message}");
        for id in e["ids"].as_array().unwrap() {
            busy.insert(id.as_str().unwrap().to_string());
        }
    }
    assert!(!busy.contains("single"), "the single call was refused");
    // Every admission place, then the flood's share of the parked queue; the rest refused.
    assert_eq!(
        FLOOD - busy.len(),
        IN_FLIGHT + QUEUED + PARKED / 4,
        "accepted of the flood"
    );
    // Run the calls one at a time, in the order their executes come, until the single call's.
    loop {
        let execute = server.take_for("an execute", Duration::from_secs(20), |v| {
            v["type"] == "execute"
        });
        let id = execute["tool_use_id"].as_str().unwrap().to_string();
        answer(&mut server, &execute, json!(format!("done {id}")));
        server.result(&id);
        if id == "single" {
            break;
        }
    }
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let single_at = done
        .messages
        .iter()
        .position(|v| is_result(v, "single"))
        .unwrap();
    assert_eq!(done.messages[single_at]["outcome"], "success");
    assert_eq!(done.messages[single_at]["agent_id"], "single");
    let before = done.messages[..single_at]
        .iter()
        .filter(|v| v["type"] == "tool_result" && v["agent_id"] == "flood")
        .count();
    assert!(
        before <= BOUND,
        "{before} of the flood's results came before the single call's (bound {BOUND})"
    );
    // Every accepted call of the flood still has exactly one result (the ones still waiting at
    // the end of input are cancelled).
    for i in 0..FLOOD {
        let id = format!("f{i}");
        let want = usize::from(!busy.contains(&id));
        assert_eq!(done.results(&id).len(), want, "{id}");
    }
}

/// An agent type's `maxInFlight` holds end to end: with `maxInFlight: 1`, the agent's second
/// call (read-only, so nothing else keeps it back) executes only once its first has ended, while
/// a call of the session sent after both runs at once.
#[test]
fn an_agents_max_in_flight_holds_back_its_own_calls_only() {
    let sb = Sandbox::new();
    let settings = sb.settings_file(&json!({"agents": {"single": {"maxInFlight": 1}}}));
    let mut server = sb.serve(&[
        "--settings",
        &settings,
        "--allowed-tools",
        "Lookup",
        "--max-in-flight",
        "4",
    ]);
    register(
        &mut server,
        json!([tool("Lookup", json!({"read_only": true}))]),
    );
    server.send(json!({"type": "agent_start", "agent_id": "s", "agent_type": "single"}));
    server.wait_for("agent_started", Duration::from_secs(20), |v| {
        v["event"] == "agent_started" && v["agent_id"] == "s"
    });
    for id in ["a1", "a2"] {
        server.send(json!({"type": "tool_use", "id": id, "name": "Lookup", "input": {"q": id}, "agent_id": "s"}));
    }
    let first = execute_of(&mut server, "a1");
    server.tool_use("free", "Lookup", json!({"q": "free"}));
    let free = execute_of(&mut server, "free");
    answer(&mut server, &free, json!("free"));
    assert_eq!(server.result("free")["content"], "free");
    assert!(
        !server
            .seen
            .iter()
            .any(|v| v["type"] == "execute" && v["tool_use_id"] == "a2"),
        "the agent's second call executed beside its first: {:#?}",
        server.seen
    );
    answer(&mut server, &first, json!("one"));
    let second = execute_of(&mut server, "a2");
    answer(&mut server, &second, json!("two"));
    assert_eq!(server.result("a2")["content"], "two");
    let done = server.finish();
    for id in ["a1", "a2", "free"] {
        assert_eq!(done.results(id).len(), 1, "{id}: {:#?}", done.messages);
    }
}

fn gate(id: &str, agent: &str) -> ClientMessage {
    ClientMessage::ToolUse(ToolCall::new(id, "Gate", json!({})).with_agent(agent))
}

#[tokio::test]
async fn parked_calls_are_admitted_a_scope_at_a_time_and_one_agent_holds_a_quarter_of_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let release = Arc::new(Semaphore::new(0));
    let mut config = Config::new(dir.path().to_path_buf()).tool(Arc::new(Gate(release.clone())));
    config.builtins = false;
    config.allowed_tools = vec!["Gate".into()];
    config.ask_policy = AskPolicy::Deny;
    config.max_in_flight = 1;
    config.max_queued = 0;
    config.max_parked = 8;
    let (runtime, mut rx) = Runtime::start(config).await.unwrap();
    start_agents(&runtime, ["a", "b", "c", "d"]);
    let dispatcher = runtime.dispatcher();
    // One admitted; then agent a parks its share (2 of 8), b two, the root three.
    for (id, agent) in [
        ("first", "a"),
        ("a1", "a"),
        ("a2", "a"),
        ("b1", "b"),
        ("b2", "b"),
    ] {
        assert!(dispatcher.place(gate(id, agent), 10).is_ok(), "{id}");
    }
    for id in ["r1", "r2", "r3"] {
        let root = ClientMessage::ToolUse(ToolCall::new(id, "Gate", json!({})));
        assert!(dispatcher.place(root, 10).is_ok(), "{id}");
    }
    // a holds its share: refused, named; the whole queue is not full yet.
    let Err(back) = dispatcher.place(gate("a3", "a"), 10) else {
        panic!("an agent parked past its share");
    };
    assert_eq!(back.full, Full::Agent(Arc::from("a")));
    assert!(dispatcher.place(gate("c1", "c"), 10).is_ok());
    assert_eq!(dispatcher.parked_calls(), 8);
    // Now the whole queue is full, for anyone.
    let Err(back) = dispatcher.place(gate("d1", "d"), 10) else {
        panic!("parked past the queue's bound");
    };
    assert_eq!(back.full, Full::Queue);
    assert_eq!(dispatcher.parked_calls_of(Some("a")), 2);
    // Release one call at a time: the parked calls come in turns of a, b, root, c.
    let mut order = Vec::new();
    for _ in 0..9 {
        release.add_permits(1);
        order.push(next_result(&mut rx).await);
    }
    assert_eq!(
        order,
        ["first", "a1", "b1", "r1", "c1", "a2", "b2", "r2", "r3"]
    );
    runtime.shutdown().await;
}

#[tokio::test]
async fn many_agents_parking_stay_within_the_queues_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let release = Arc::new(Semaphore::new(0));
    let mut config = Config::new(dir.path().to_path_buf()).tool(Arc::new(Gate(release.clone())));
    config.builtins = false;
    config.allowed_tools = vec!["Gate".into()];
    config.ask_policy = AskPolicy::Deny;
    config.max_in_flight = 2;
    config.max_queued = 2;
    config.max_parked = 64;
    let (runtime, mut rx) = Runtime::start(config).await.unwrap();
    start_agents(&runtime, (0..1_000).map(|i| format!("agent-{i}")));
    let dispatcher = runtime.dispatcher();
    let mut accepted = 0;
    for i in 0..5_000 {
        let agent = format!("agent-{}", i % 1_000);
        if dispatcher
            .place(gate(&format!("c{i}"), &agent), 100)
            .is_ok()
        {
            accepted += 1;
        }
        assert!(dispatcher.parked_calls() <= 64);
        assert!(dispatcher.parked_calls_of(Some(&agent)) <= 16);
    }
    assert_eq!(accepted, 4 + 64);
    release.add_permits(accepted);
    for _ in 0..accepted {
        next_result(&mut rx).await;
    }
    assert_eq!(dispatcher.parked_calls(), 0);
    runtime.shutdown().await;
}

/// Starts an agent scope for each id (calls naming an agent that was never started are denied).
fn start_agents<S: Into<String>>(runtime: &Runtime, ids: impl IntoIterator<Item = S>) {
    for id in ids {
        runtime.agents(ClientMessage::AgentStart(toolrt::AgentStart {
            agent_id: id.into(),
            agent_type: "worker".into(),
            parent: None,
            parent_tool_use_id: None,
            node: None,
        }));
    }
}

async fn next_result(rx: &mut toolrt::Outbox) -> String {
    loop {
        match rx.recv().await {
            Some(ServerMessage::ToolResult(r)) => return r.tool_use_id,
            Some(_) => {}
            None => panic!("the outbox closed"),
        }
    }
}
