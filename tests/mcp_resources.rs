//! `ListMcpResourcesTool` and `ReadMcpResourceTool` (the reference CLI's names and shapes):
//! every connected server's resources; text inline, binary content saved to a file.

mod support;

use serde_json::{Value, json};
use support::Sandbox;
use support::mcp::{self, everything, probe, raw, status_event};

#[test]
fn list_and_read_resources() {
    let sandbox = Sandbox::new();
    let settings = sandbox.dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({"env": {"MCP_TIMEOUT": "5000"}}).to_string(),
    )
    .unwrap();
    let mut server = mcp::serve(
        &sandbox,
        json!({"everything": everything(), "probe": probe(json!({})), "mute": raw("mute")}),
        &[
            "--settings",
            settings.to_str().unwrap(),
            "--permission-mode",
            "bypassPermissions",
        ],
    );
    status_event(&mut server, "everything", "connected");
    status_event(&mut server, "probe", "connected");
    status_event(&mut server, "mute", "failed");
    server.tool_use("all", "ListMcpResourcesTool", json!({}));
    let all = server.result("all");
    assert_eq!(all["outcome"], "success", "{all}");
    let listed: Vec<Value> = serde_json::from_str(all["content"].as_str().unwrap()).unwrap();
    assert!(
        listed
            .iter()
            .any(|r| r["server"] == "everything" && r["mimeType"] == "text/markdown")
    );
    let hello = listed
        .iter()
        .find(|r| r["uri"] == "note://hello")
        .expect("probe's resource");
    assert_eq!(hello["server"], "probe");
    assert_eq!(hello["name"], "hello");

    server.tool_use("one", "ListMcpResourcesTool", json!({"server": "probe"}));
    let one: Vec<Value> =
        serde_json::from_str(server.result("one")["content"].as_str().unwrap()).unwrap();
    assert!(one.iter().all(|r| r["server"] == "probe"), "{one:?}");

    server.tool_use(
        "t",
        "ReadMcpResourceTool",
        json!({"server": "probe", "uri": "note://hello"}),
    );
    let t: Value = serde_json::from_str(server.result("t")["content"].as_str().unwrap()).unwrap();
    assert_eq!(t["contents"][0]["text"], "hello from a resource");

    server.tool_use(
        "b",
        "ReadMcpResourceTool",
        json!({"server": "probe", "uri": "note://blob"}),
    );
    let b: Value = serde_json::from_str(server.result("b")["content"].as_str().unwrap()).unwrap();
    let path = b["contents"][0]["blobSavedTo"].as_str().expect("saved");
    assert_eq!(std::fs::read(path).unwrap(), b"\x00\x01binary\xff");
    assert!(path.starts_with(sandbox.out.to_str().unwrap()), "{path}");

    server.tool_use(
        "n",
        "ReadMcpResourceTool",
        json!({"server": "probe", "uri": "note://nope"}),
    );
    assert_eq!(server.result("n")["outcome"], "failed");
    server.tool_use(
        "m",
        "ReadMcpResourceTool",
        json!({"server": "mute", "uri": "x://y"}),
    );
    let m = server.result("m");
    assert_eq!(m["outcome"], "failed");
    assert!(
        m["content"]
            .as_str()
            .unwrap()
            .contains("no MCP server named \"mute\" is running"),
        "{m}"
    );
    server.finish();
}
