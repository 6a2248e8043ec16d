//! `toolrt mcp-serve` aggregating an MCP server whose tools change: the client behind toolrt
//! gets `notifications/tools/list_changed`, and tools/list then has the new tool.

mod mcp_serve_support;
mod support;

use std::time::Duration;

use mcp_serve_support::{call, connect, outcome};
use serde_json::json;
use support::{Sandbox, mcp};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_added_behind_toolrt_is_announced_and_listed() {
    let sb = Sandbox::new();
    let config = mcp::config_file(&sb, json!({"probe": mcp::probe(json!({}))}));
    let mut c = connect(
        &sb.cwd,
        &sb.out,
        &[
            "--mcp-config",
            config.to_str().unwrap(),
            "--tools",
            "mcp__probe",
            "--allowed-tools",
            "mcp__probe",
        ],
        None,
    )
    .await;
    let names = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name.to_string()).collect()
    };
    let before = names(c.service.list_all_tools().await.unwrap());
    assert!(
        before.contains(&"mcp__probe__add_tool".to_string()),
        "{before:?}"
    );
    assert!(
        !before.contains(&"mcp__probe__dyn_tool".to_string()),
        "{before:?}"
    );
    let added = c
        .service
        .call_tool(call("mcp__probe__add_tool", json!({"name": "dyn_tool"})))
        .await
        .unwrap();
    assert_eq!(outcome(&added), "success", "{added:?}");
    tokio::time::timeout(Duration::from_secs(30), c.heard.list_changed.recv())
        .await
        .expect("notifications/tools/list_changed")
        .unwrap();
    let after = names(c.service.list_all_tools().await.unwrap());
    assert!(
        after.contains(&"mcp__probe__dyn_tool".to_string()),
        "{after:?}"
    );
    let dyn_call = c
        .service
        .call_tool(call("mcp__probe__dyn_tool", json!({})))
        .await
        .unwrap();
    assert_eq!(outcome(&dyn_call), "success", "{dyn_call:?}");
    assert!(c.finish().await.success());
}
