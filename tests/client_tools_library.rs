//! Through the library: a client tool run by an async function (`Runtime::register_tool_fn`)
//! walks the pipeline, and toolrt owns its time limit and cancellation (the future is dropped);
//! a wire client tool registered through the library is answered through the outbox.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use toolrt::{
    AskPolicy, CancelTarget, ClientMessage, ClientToolSpec, Config, ExecuteContent, ExecuteResult,
    Outcome, Runtime, ServerMessage, ToolCall, ToolOutput,
};

/// Counts drops: a future toolrt gave up on must be dropped.
struct Dropped(Arc<AtomicUsize>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"q": {"type": "string"}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_tool_is_timed_out_and_cancelled_by_toolrt() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path().to_path_buf());
    config.output_dir = toolrt::OutputDir::Temporary;
    config.allowed_tools = vec!["Echo".into(), "Hang".into(), "Quick".into(), "Wire".into()];
    config.ask_policy = AskPolicy::Deny;
    let (runtime, mut outbox) = Runtime::start(config).await.unwrap();
    runtime
        .register_tool_fn(
            ClientToolSpec::new("Echo", schema()),
            |input, ctx| async move {
                ToolOutput::success(format!("{} from {}", input["q"], ctx.tool_use_id))
            },
        )
        .unwrap();
    let dropped = Arc::new(AtomicUsize::new(0));
    let d = dropped.clone();
    let hang = move |_, _| {
        let guard = Dropped(d.clone());
        async move {
            let _guard = guard;
            std::future::pending::<ToolOutput>().await
        }
    };
    runtime
        .register_tool_fn(ClientToolSpec::new("Hang", schema()), hang.clone())
        .unwrap();
    let quick = ClientToolSpec {
        timeout_ms: Some(50),
        ..ClientToolSpec::new("Quick", schema())
    };
    runtime.register_tool_fn(quick, hang).unwrap();
    // The same name twice, or a built-in's, is refused.
    let err = runtime
        .register_tool_fn(ClientToolSpec::new("Echo", schema()), |_, _| async {
            ToolOutput::success("")
        })
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("Echo: another tool already has this name"),
        "{err}"
    );
    runtime
        .register_tools(vec![ClientToolSpec::new("Wire", schema())])
        .unwrap();

    for (id, tool) in [("e", "Echo"), ("h", "Hang"), ("q", "Quick"), ("w", "Wire")] {
        let call = ToolCall::new(id, tool, json!({"q": "hi"}));
        runtime.submit(ClientMessage::ToolUse(call)).await;
    }
    let mut results = HashMap::new();
    let mut cancelled_hang = false;
    while results.len() < 4 {
        match outbox.recv().await.expect("messages until every result") {
            ServerMessage::ToolResult(r) => {
                if r.tool_use_id == "q" && !cancelled_hang {
                    // Quick timed out: now cancel the other hanging call.
                    runtime
                        .submit(ClientMessage::Cancel(CancelTarget::Call("h".into())))
                        .await;
                    cancelled_hang = true;
                }
                assert!(results.insert(r.tool_use_id.clone(), r).is_none());
            }
            ServerMessage::Execute {
                request_id, name, ..
            } => {
                assert_eq!(name, "Wire");
                runtime
                    .submit(ClientMessage::ExecuteResult(ExecuteResult {
                        request_id,
                        content: ExecuteContent::Text("over the wire".into()),
                        is_error: false,
                    }))
                    .await;
            }
            _ => {}
        }
    }
    assert_eq!(results["e"].outcome, Outcome::Success);
    assert_eq!(results["e"].content, "\"hi\" from e");
    assert_eq!(
        results["q"].outcome,
        Outcome::TimedOut,
        "{:?}",
        results["q"]
    );
    assert!(results["q"].content.contains("timed out after 50 ms"));
    assert_eq!(
        results["h"].outcome,
        Outcome::Cancelled,
        "{:?}",
        results["h"]
    );
    assert_eq!(results["w"].content, "over the wire");
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        2,
        "both hanging futures were dropped"
    );
    let removed = runtime.unregister_tools(&["Echo".into()]).unwrap();
    assert_eq!(removed.removed, ["Echo"]);
    runtime.shutdown().await;
}
