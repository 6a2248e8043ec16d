//! Through the library: tools are added and removed while calls are in flight
//! (`Runtime::set_tools`). A call keeps the tool it resolved; calls resolved after a removal
//! are `unavailable`; every call gets exactly one result.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::{Semaphore, watch};
use toolrt::{
    AskPolicy, ClientMessage, Config, Input, Outcome, Runtime, ServerMessage, Tool, ToolCall,
    ToolContext, ToolOutput,
};

/// Counts its started calls, then waits for a permit of `release` (none: returns at once).
struct Held {
    name: &'static str,
    started: Arc<AtomicUsize>,
    started_tx: watch::Sender<usize>,
    release: Option<Arc<Semaphore>>,
}

impl Held {
    fn new(
        name: &'static str,
        release: Option<Arc<Semaphore>>,
    ) -> (Arc<Self>, watch::Receiver<usize>) {
        let (started_tx, rx) = watch::channel(0);
        let tool = Arc::new(Self {
            name,
            started: Arc::new(AtomicUsize::new(0)),
            started_tx,
            release,
        });
        (tool, rx)
    }
}

#[async_trait]
impl Tool for Held {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "waits for the test to release it"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "additionalProperties": false})
    }
    fn is_concurrency_safe(&self, _: &Input) -> bool {
        true
    }
    async fn call(&self, _: Input, _: ToolContext) -> ToolOutput {
        let n = self.started.fetch_add(1, Ordering::SeqCst) + 1;
        self.started_tx.send_replace(n);
        if let Some(release) = &self.release
            && let Ok(permit) = release.acquire().await
        {
            permit.forget();
        }
        ToolOutput::success(self.name)
    }
}

fn call(id: String, tool: &str) -> ClientMessage {
    ClientMessage::ToolUse(ToolCall::new(id, tool, json!({})))
}

async fn runtime() -> (Arc<Runtime>, toolrt::Outbox) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path().to_path_buf());
    config.builtins = false;
    config.allowed_tools = vec!["Probe".into(), "Extra".into(), "Flip".into()];
    config.disallowed_tools = vec!["Gone".into()];
    config.ask_policy = AskPolicy::Deny;
    config.max_in_flight = 2_000;
    config.max_queued = 10_000;
    let (rt, rx) = Runtime::start(config).await.unwrap();
    (Arc::new(rt), rx)
}

/// Collects every result by id until the outbox closes.
fn collect(
    mut rx: toolrt::Outbox,
) -> tokio::task::JoinHandle<HashMap<String, Vec<(Outcome, String)>>> {
    tokio::spawn(async move {
        let mut results: HashMap<String, Vec<(Outcome, String)>> = HashMap::new();
        while let Some(msg) = rx.recv().await {
            if let ServerMessage::ToolResult(r) = msg {
                results
                    .entry(r.tool_use_id)
                    .or_default()
                    .push((r.outcome, r.content));
            }
        }
        results
    })
}

async fn shutdown(rt: Arc<Runtime>) {
    let rt = Arc::try_unwrap(rt)
        .ok()
        .expect("the test holds the only handle");
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_calls_in_flight_keep_their_tool_across_removal() {
    const N: usize = 1_000;
    let (rt, rx) = runtime().await;
    let results = collect(rx);
    let release = Arc::new(Semaphore::new(0));
    let (probe, mut started) = Held::new("Probe", Some(release.clone()));
    let (gone, _) = Held::new("Gone", None);
    let change = rt.set_tools("probe", vec![probe.clone() as Arc<dyn Tool>, gone]);
    assert_eq!(
        change.added,
        vec!["Probe"],
        "Gone is removed by its deny rule"
    );
    assert_eq!(rt.tools(), vec!["Probe"]);

    for i in 0..N {
        rt.submit(call(format!("p{i}"), "Probe")).await;
    }
    // Every call has resolved Probe and is running in it.
    started.wait_for(|n| *n == N).await.unwrap();

    // Another group comes, Probe's group goes, while the thousand still run.
    let (extra, _) = Held::new("Extra", None);
    assert_eq!(
        rt.set_tools("extra", vec![extra as Arc<dyn Tool>]).added,
        vec!["Extra"]
    );
    let change = rt.set_tools("probe", Vec::new());
    assert_eq!(change.removed, vec!["Probe"]);
    assert_eq!(rt.tools(), vec!["Extra"]);
    for i in 0..100 {
        rt.submit(call(format!("late{i}"), "Probe")).await;
        rt.submit(call(format!("extra{i}"), "Extra")).await;
        rt.submit(call(format!("gone{i}"), "Gone")).await;
    }
    // Only now may the thousand finish.
    release.add_permits(N);
    shutdown(rt).await;
    let results = tokio::time::timeout(Duration::from_secs(60), results)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(results.len(), N + 300, "every call answered");
    for (id, got) in &results {
        assert_eq!(got.len(), 1, "{id} got {got:?}");
        let (outcome, content) = &got[0];
        let want = match id.trim_end_matches(|c: char| c.is_ascii_digit()) {
            "p" | "extra" => Outcome::Success,
            "late" | "gone" => Outcome::Unavailable,
            other => panic!("unexpected id {other}"),
        };
        assert_eq!(*outcome, want, "{id}: {content}");
    }
    assert!(
        results["late0"][0].1.contains("Available tools: Extra"),
        "{:?}",
        results["late0"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_flipping_in_and_out_under_a_thousand_calls_answer_each_once() {
    const N: usize = 1_000;
    let (rt, rx) = runtime().await;
    let results = collect(rx);
    let (flip, _) = Held::new("Flip", None);
    rt.set_tools("flip", vec![flip.clone() as Arc<dyn Tool>]);
    let flipper = {
        let rt = rt.clone();
        let flip: Arc<dyn Tool> = flip.clone();
        tokio::spawn(async move {
            for round in 0..400 {
                let tools = if round % 2 == 0 {
                    Vec::new()
                } else {
                    vec![flip.clone()]
                };
                rt.set_tools("flip", tools);
                tokio::task::yield_now().await;
            }
        })
    };
    for i in 0..N {
        rt.submit(call(format!("f{i}"), "Flip")).await;
        if i % 50 == 0 {
            tokio::task::yield_now().await;
        }
    }
    flipper.await.unwrap();
    // The last round added it back; remove it for good: every later call is unavailable.
    assert_eq!(rt.set_tools("flip", Vec::new()).removed, vec!["Flip"]);
    for i in 0..100 {
        rt.submit(call(format!("after{i}"), "Flip")).await;
    }
    shutdown(rt).await;
    let results = tokio::time::timeout(Duration::from_secs(60), results)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(results.len(), N + 100, "every call answered");
    let mut ran = 0;
    for (id, got) in &results {
        assert_eq!(got.len(), 1, "{id} got {got:?}");
        let outcome = got[0].0;
        if id.starts_with("after") {
            assert_eq!(outcome, Outcome::Unavailable, "{id}");
        } else {
            assert!(
                matches!(outcome, Outcome::Success | Outcome::Unavailable),
                "{id}: {got:?}"
            );
            ran += usize::from(outcome == Outcome::Success);
        }
    }
    // Each success ran the tool once, and nothing else did.
    assert_eq!(flip.started.load(Ordering::SeqCst), ran);
}
