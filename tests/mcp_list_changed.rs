//! `notifications/tools/list_changed` refreshes a server's tools while toolrt serves: the new
//! tool is callable, the selection (`--tools mcp__srv`) and rules apply to it, an event says
//! what changed, and no server is restarted.

mod support;

use std::time::Duration;

use serde_json::json;
use support::Sandbox;
use support::mcp::{self, probe, status_event};

#[test]
fn a_tool_added_by_the_server_becomes_callable() {
    let sandbox = Sandbox::new();
    let mut server = mcp::serve(
        &sandbox,
        json!({"probe": probe(json!({}))}),
        &[
            "--permission-mode",
            "bypassPermissions",
            "--tools",
            "mcp__probe",
            "--disallowed-tools",
            "mcp__probe__denied_tool",
        ],
    );
    let first = status_event(&mut server, "probe", "connected");
    let before = first["tools"].as_u64().unwrap();
    server.tool_use("early", "mcp__probe__dyn_tool", json!({}));
    assert_eq!(server.result("early")["outcome"], "unavailable");
    server.tool_use("pid", "mcp__probe__env", json!({}));
    let pid = server.result("pid")["structured_content"]["__pid__"].clone();

    server.tool_use("add", "mcp__probe__add_tool", json!({"name": "dyn_tool"}));
    assert_eq!(server.result("add")["outcome"], "success");
    let changed = server.wait_for("list_changed event", Duration::from_secs(20), |v| {
        v["event"] == "mcp_server"
            && v["server"] == "probe"
            && v["reason"]
                .as_str()
                .is_some_and(|r| r.contains("added mcp__probe__dyn_tool"))
    });
    assert_eq!(changed["status"], "connected");
    assert_eq!(changed["tools"].as_u64().unwrap(), before + 1, "{changed}");
    server.tool_use("late", "mcp__probe__dyn_tool", json!({}));
    let late = server.result("late");
    assert_eq!(late["outcome"], "success", "{late}");
    assert_eq!(late["content"], "I am dyn_tool");
    // A deny rule removes a tool that arrives later too.
    // (A change that adds only a removed tool changes nothing the client sees, so it is not
    // reported: the next tool's event shows the server's list was read after both.)
    server.tool_use(
        "add2",
        "mcp__probe__add_tool",
        json!({"name": "denied_tool"}),
    );
    server.result("add2");
    server.tool_use(
        "add3",
        "mcp__probe__add_tool",
        json!({"name": "third_tool"}),
    );
    server.result("add3");
    let third = server.wait_for("third change", Duration::from_secs(20), |v| {
        v["event"] == "mcp_server"
            && v["reason"]
                .as_str()
                .is_some_and(|r| r.contains("added mcp__probe__third_tool"))
    });
    assert_eq!(third["tools"].as_u64().unwrap(), before + 2, "{third}");
    assert!(
        !third["reason"].as_str().unwrap().contains("denied_tool"),
        "{third}"
    );
    server.tool_use("d", "mcp__probe__denied_tool", json!({}));
    assert_eq!(server.result("d")["outcome"], "unavailable");
    // The same process all along.
    server.tool_use("pid2", "mcp__probe__env", json!({}));
    assert_eq!(server.result("pid2")["structured_content"]["__pid__"], pid);
    server.send(json!({"type": "hello"}));
    let hello = server.wait_for("hello", Duration::from_secs(10), |v| v["type"] == "hello");
    let tools = hello["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("mcp__probe__dyn_tool")), "{hello}");
    server.finish();
}
