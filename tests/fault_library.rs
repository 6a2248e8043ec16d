//! Through the library API: 10,000 calls of which ~10% panic and ~10% are cancelled at random
//! points. Every id gets exactly one result, no duplicates.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolrt::{
    AskPolicy, CancelTarget, ClientMessage, Config, Input, Outcome, Runtime, ServerMessage, Tool,
    ToolCall, ToolContext, ToolOutput,
};

/// Sleeps a little, then panics or succeeds as its input says; sees cancellation.
struct Flaky;

#[async_trait]
impl Tool for Flaky {
    fn name(&self) -> &str {
        "Flaky"
    }
    fn description(&self) -> &str {
        "test tool"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"panic": {"type": "boolean"}, "sleep_us": {"type": "integer"}}, "additionalProperties": false})
    }
    fn is_concurrency_safe(&self, _: &Input) -> bool {
        true
    }
    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        let sleep = Duration::from_micros(input["sleep_us"].as_u64().unwrap_or(0));
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = ctx.cancel.cancelled() => return ToolOutput { status: toolrt::ToolStatus::Cancelled, content: "stopped".into(), full_output: None, response: None, attachments: None },
        }
        if input["panic"].as_bool() == Some(true) {
            panic!("flaky tool panicked on purpose");
        }
        ToolOutput::success("fine")
    }
}

/// A tiny deterministic generator (no extra dependency).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_calls_with_panics_and_cancels_each_get_one_result() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path().to_path_buf()).tool(Arc::new(Flaky));
    config.builtins = false;
    config.allowed_tools = vec!["Flaky".into()];
    config.ask_policy = AskPolicy::Deny;
    config.max_in_flight = 256;
    config.max_queued = 20_000;
    let (runtime, mut rx) = Runtime::start(config).await.unwrap();
    let runtime = Arc::new(runtime);
    let collector = tokio::spawn(async move {
        let mut results: HashMap<String, Vec<Outcome>> = HashMap::new();
        while let Some(msg) = rx.recv().await {
            if let ServerMessage::ToolResult(r) = msg {
                results
                    .entry(r.tool_use_id.clone())
                    .or_default()
                    .push(r.outcome);
            }
        }
        results
    });
    let mut rng = Lcg(42);
    const N: usize = 10_000;
    let mut cancels = Vec::new();
    let mut batch = Vec::new();
    for i in 0..N {
        let roll = rng.next() % 100;
        let id = format!("c{i}");
        let input = json!({"panic": roll < 10, "sleep_us": rng.next() % 2000});
        if (10..20).contains(&roll) {
            cancels.push((id.clone(), rng.next() % 3));
        }
        let call = ToolCall::new(id, "Flaky", input);
        // Mix single calls and batches.
        if i % 3 == 0 {
            runtime.submit(ClientMessage::ToolUse(call)).await;
        } else {
            batch.push(call);
            if batch.len() == 7 {
                runtime
                    .submit(ClientMessage::Batch {
                        id: format!("b{i}"),
                        calls: std::mem::take(&mut batch),
                    })
                    .await;
            }
        }
        // Cancel some earlier calls at random points: before, during or after they run.
        if let Some(pos) = cancels.iter().position(|(_, delay)| *delay == 0) {
            let (cid, _) = cancels.remove(pos);
            runtime.dispatcher().cancel(&CancelTarget::Call(cid));
        }
        for c in cancels.iter_mut() {
            c.1 = c.1.saturating_sub(1);
        }
        if i % 500 == 0 {
            tokio::task::yield_now().await;
        }
    }
    if !batch.is_empty() {
        runtime
            .submit(ClientMessage::Batch {
                id: "last".into(),
                calls: batch,
            })
            .await;
    }
    for (cid, _) in cancels {
        runtime.dispatcher().cancel(&CancelTarget::Call(cid));
    }
    let runtime = Arc::try_unwrap(runtime).ok().unwrap();
    runtime.shutdown().await;
    let results = tokio::time::timeout(Duration::from_secs(60), collector)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(results.len(), N, "every id answered");
    let mut panicked = 0;
    let mut cancelled = 0;
    for (id, outcomes) in &results {
        assert_eq!(outcomes.len(), 1, "{id} got {outcomes:?}");
        match outcomes[0] {
            Outcome::Failed => panicked += 1,
            Outcome::Cancelled => cancelled += 1,
            Outcome::Success => {}
            other => panic!("{id}: unexpected outcome {other:?}"),
        }
    }
    assert!(
        panicked > 500,
        "panics surfaced as failed results: {panicked}"
    );
    assert!(cancelled > 0, "some cancels landed: {cancelled}");
}
