//! Admission: at most `max_in_flight + max_queued` calls are admitted; past that, `submit`
//! waits (so the server stops reading stdin) until a result frees a place.

use std::sync::Arc;

use async_trait::async_trait;
use futures::FutureExt;
use serde_json::{Value, json};
use tokio::sync::Notify;
use toolrt::call::{Input, ToolCall};
use toolrt::protocol::{ClientMessage, ServerMessage};
use toolrt::supervisor::AskPolicy;
use toolrt::{Config, Runtime, Tool, ToolContext, ToolOutput};

/// Waits until released.
struct Gate(Arc<Notify>);

#[async_trait]
impl Tool for Gate {
    fn name(&self) -> &str {
        "Gate"
    }
    fn description(&self) -> &str {
        "waits"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "additionalProperties": false})
    }
    async fn call(&self, _: Input, _: ToolContext) -> ToolOutput {
        self.0.notified().await;
        ToolOutput::success("released")
    }
}

#[tokio::test]
async fn submit_waits_when_admission_is_full() {
    let dir = tempfile::tempdir().unwrap();
    let release = Arc::new(Notify::new());
    let mut config = Config::new(dir.path().to_path_buf()).tool(Arc::new(Gate(release.clone())));
    config.builtins = false;
    config.allowed_tools = vec!["Gate".into()];
    config.ask_policy = AskPolicy::Deny;
    config.max_in_flight = 1;
    config.max_queued = 1;
    let (runtime, mut rx) = Runtime::start(config).await.unwrap();
    let call = |id: &str| ClientMessage::ToolUse(ToolCall::new(id, "Gate", json!({})));
    runtime.submit(call("a")).await;
    runtime.submit(call("b")).await;
    // Two admitted (one running, one queued): the third must wait.
    let mut third = Box::pin(runtime.submit(call("c")));
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert!(
        (&mut third).now_or_never().is_none(),
        "a third call was admitted past capacity"
    );
    // Free one place: the first call finishes, and the third is admitted.
    release.notify_one();
    loop {
        if let Some(ServerMessage::ToolResult(r)) = rx.recv().await {
            assert_eq!(r.tool_use_id, "a");
            break;
        }
    }
    third.await;
    release.notify_one();
    release.notify_one();
    runtime.shutdown().await;
    let mut ids = Vec::new();
    while let Some(msg) = rx.recv().await {
        if let ServerMessage::ToolResult(r) = msg {
            ids.push(r.tool_use_id);
        }
    }
    ids.sort();
    assert_eq!(ids, vec!["b", "c"]);
}
