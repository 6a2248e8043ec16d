//! Admission, through the library: at most `max_in_flight + max_queued` calls are admitted; past
//! that, calls are parked in arrival order (up to `max_parked`), and past that `offer` hands the
//! message back. A place comes back only when the result is taken from the outbox.

use std::sync::Arc;

use serde_json::json;
use tokio::sync::Semaphore;
use toolrt::{AskPolicy, ClientMessage, Config, Runtime, ServerMessage, ToolCall};

#[path = "common/gate.rs"]
mod gate;
use gate::Gate;

fn call(id: &str) -> ClientMessage {
    ClientMessage::ToolUse(ToolCall::new(id, "Gate", json!({})))
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

#[tokio::test]
async fn calls_past_capacity_are_parked_then_admitted_in_arrival_order() {
    let dir = tempfile::tempdir().unwrap();
    let release = Arc::new(Semaphore::new(0));
    let mut config = Config::new(dir.path().to_path_buf()).tool(Arc::new(Gate(release.clone())));
    config.builtins = false;
    config.allowed_tools = vec!["Gate".into()];
    config.ask_policy = AskPolicy::Deny;
    config.max_in_flight = 1;
    config.max_queued = 1;
    config.max_parked = 2;
    let (runtime, mut rx) = Runtime::start(config).await.unwrap();
    let dispatcher = runtime.dispatcher();
    // Two admitted (one running, one queued), two parked: all accepted without waiting.
    for id in ["a", "b", "c", "d"] {
        assert!(
            dispatcher.offer(call(id), 10).is_ok(),
            "{id} was not accepted"
        );
    }
    assert_eq!(dispatcher.parked_calls(), 2);
    // The parked queue is full: the fifth is handed back, nothing registered.
    let Err(back) = dispatcher.offer(call("e"), 10) else {
        panic!("a fifth call was accepted past the parked bound");
    };
    let ClientMessage::ToolUse(back) = *back else {
        panic!("another message came back: {back:?}");
    };
    assert_eq!(back.id, "e");
    // Results free places only when they are taken from the outbox: release every call, take
    // the results one by one, and the parked calls run in arrival order.
    release.add_permits(4);
    let mut order = Vec::new();
    for _ in 0..4 {
        order.push(next_result(&mut rx).await);
    }
    assert_eq!(order, ["a", "b", "c", "d"]);
    assert_eq!(dispatcher.parked_calls(), 0);
    assert!(dispatcher.offer(call("e"), 10).is_ok());
    release.add_permits(1);
    assert_eq!(next_result(&mut rx).await, "e");
    runtime.shutdown().await;
}

#[tokio::test]
async fn a_place_is_given_back_only_when_the_result_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let release = Arc::new(Semaphore::new(0));
    let mut config = Config::new(dir.path().to_path_buf()).tool(Arc::new(Gate(release.clone())));
    config.builtins = false;
    config.allowed_tools = vec!["Gate".into()];
    config.ask_policy = AskPolicy::Deny;
    config.max_in_flight = 1;
    config.max_queued = 0;
    config.max_parked = 1;
    let (runtime, mut rx) = Runtime::start(config).await.unwrap();
    let dispatcher = runtime.dispatcher();
    release.add_permits(10);
    assert!(dispatcher.offer(call("a"), 10).is_ok());
    assert!(dispatcher.offer(call("b"), 10).is_ok());
    // Let "a" finish: its result is queued but not taken, so "b" stays parked.
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        dispatcher.parked_calls(),
        1,
        "a call was admitted while the only place was still held by an unread result"
    );
    assert_eq!(next_result(&mut rx).await, "a");
    assert_eq!(next_result(&mut rx).await, "b");
    runtime.shutdown().await;
}
