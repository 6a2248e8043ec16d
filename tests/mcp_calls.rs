//! MCP tools through `serve` against real servers: server-everything (npm) and a Python server
//! built with the official `mcp` package. Names, schema checks, content mapping, errors, rules.

mod support;

use serde_json::{Value, json};
use support::mcp::{self, everything, probe, status_event};
use support::{Sandbox, is_result};

#[test]
fn echo_and_sum_through_serve() {
    let sandbox = Sandbox::new();
    let mut server = mcp::serve(
        &sandbox,
        json!({"everything": everything()}),
        &["--permission-mode", "bypassPermissions"],
    );
    let connected = status_event(&mut server, "everything", "connected");
    assert!(connected["tools"].as_u64().unwrap() >= 10, "{connected}");
    server.tool_use(
        "e",
        "mcp__everything__echo",
        json!({"message": "hello mcp"}),
    );
    server.tool_use("s", "mcp__everything__get-sum", json!({"a": 2, "b": 40}));
    let e = server.result("e");
    assert_eq!(e["outcome"], "success", "{e}");
    assert_eq!(e["content"], "Echo: hello mcp");
    let s = server.result("s");
    assert_eq!(s["outcome"], "success", "{s}");
    assert!(s["content"].as_str().unwrap().contains("42"), "{s}");
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
}

#[test]
fn unknown_tool_and_schema_errors_never_reach_the_server() {
    let sandbox = Sandbox::new();
    let mut server = mcp::serve_probe(&sandbox);
    server.tool_use("u", "mcp__probe__no_such_tool", json!({}));
    server.tool_use("w", "mcp__nosuchserver__echo", json!({}));
    // `add` wants two integers: toolrt's schema stage answers, so the outcome is schema_error
    // (a server-side validation error would be a `failed` result from the server).
    server.tool_use("x", "mcp__probe__add", json!({"a": "one"}));
    let u = server.result("u");
    assert_eq!(u["outcome"], "unavailable", "{u}");
    assert_eq!(server.result("w")["outcome"], "unavailable");
    let x = server.result("x");
    assert_eq!(x["outcome"], "schema_error", "{x}");
    let text = x["content"].as_str().unwrap();
    assert!(text.contains("mcp__probe__add"), "{text}");
    assert!(text.contains("b: required field is missing"), "{text}");
    // Coercion applies to MCP tools like any other: "2" becomes the integer the schema wants.
    server.tool_use("c", "mcp__probe__add", json!({"a": "2", "b": 3}));
    let c = server.result("c");
    assert_eq!(c["outcome"], "success", "{c}");
    assert_eq!(c["structured_content"], json!({"result": 5}), "{c}");
    server.finish();
}

#[test]
fn every_content_type_is_mapped_and_kept() {
    let sandbox = Sandbox::new();
    let mut server = mcp::serve(
        &sandbox,
        json!({"probe": probe(json!({})), "everything": everything()}),
        &["--permission-mode", "bypassPermissions"],
    );
    status_event(&mut server, "probe", "connected");
    status_event(&mut server, "everything", "connected");
    server.tool_use("m", "mcp__probe__mixed", json!({}));
    let m = server.result("m");
    assert_eq!(m["outcome"], "success", "{m}");
    let text = m["content"].as_str().unwrap();
    for needle in [
        "hello",
        "[image: image/png, 66 bytes; in content_blocks]",
        "[audio: audio/wav, 12 bytes; in content_blocks]",
        "[resource note://inline (text/plain)]\ninline text",
        "[resource link: note://hello \"hello\" (text/plain)]",
    ] {
        assert!(text.contains(needle), "{needle:?} not in {text}");
    }
    let kinds: Vec<&str> = m["content_blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["text", "image", "audio", "resource", "resource_link"]
    );
    assert_eq!(m["content_blocks"][1]["mimeType"], "image/png");
    assert!(m["content_blocks"][1]["data"].as_str().unwrap().len() > 20);
    assert_eq!(m["structured_content"], json!({"answer": 42}));

    // A real server's embedded blob resource.
    server.tool_use(
        "r",
        "mcp__everything__get-resource-reference",
        json!({"resourceType": "Blob", "resourceId": 2}),
    );
    let r = server.result("r");
    assert_eq!(r["outcome"], "success", "{r}");
    let blocks = r["content_blocks"].as_array().unwrap();
    assert!(
        blocks
            .iter()
            .any(|b| b["type"] == "resource" && b["resource"]["blob"].is_string()),
        "{r}"
    );
    // A text-only result keeps the plain shape.
    server.tool_use("t", "mcp__probe__echo", json!({"message": "x"}));
    let t = server.result("t");
    assert_eq!(t["content"], "x");
    assert!(t.get("content_blocks").is_none(), "{t}");
    server.finish();
}

#[test]
fn tool_errors_and_protocol_errors_are_failed_with_the_servers_words() {
    let sandbox = Sandbox::new();
    let mut server = mcp::serve_probe(&sandbox);
    server.tool_use("f", "mcp__probe__fail", json!({"reason": "because"}));
    server.tool_use("r", "mcp__probe__rpc_error", json!({}));
    let f = server.result("f");
    assert_eq!(f["outcome"], "failed", "{f}");
    assert!(
        f["content"]
            .as_str()
            .unwrap()
            .contains("failed on purpose: because"),
        "{f}"
    );
    let r = server.result("r");
    assert_eq!(r["outcome"], "failed", "{r}");
    assert_eq!(
        r["content"],
        "MCP server \"probe\" answered tools/call \"rpc_error\" with error -32001: custom rpc error (data: {\"hint\":\"data\"})"
    );
    server.finish();
}

#[test]
fn rules_and_selection_apply_to_mcp_tools() {
    let sandbox = Sandbox::new();
    // A deny rule on one tool holds even in bypass mode; a bare server name in deny removes
    // the whole server's tools; `--tools mcp__everything` selects one server's tools.
    let mut server = mcp::serve(
        &sandbox,
        json!({"everything": everything(), "probe": probe(json!({}))}),
        &[
            "--permission-mode",
            "bypassPermissions",
            "--disallowed-tools",
            "mcp__everything__get-sum",
            "--tools",
            "mcp__everything,mcp__probe__add,mcp__gone__x",
        ],
    );
    status_event(&mut server, "everything", "connected");
    server.tool_use("d", "mcp__everything__get-sum", json!({"a": 1, "b": 2}));
    server.tool_use("e", "mcp__everything__echo", json!({"message": "ok"}));
    server.tool_use("a", "mcp__probe__add", json!({"a": 1, "b": 2}));
    server.tool_use("n", "mcp__probe__echo", json!({"message": "not selected"}));
    server.tool_use("b", "Bash", json!({"command": "true"}));
    // A deny rule naming a tool (MCP tools take no specifier) removes it, as for built-ins.
    let d = server.result("d");
    assert_eq!(d["outcome"], "unavailable", "{d}");
    assert!(
        d["content"]
            .as_str()
            .unwrap()
            .contains("mcp__everything__get-sum"),
        "{d}"
    );
    assert_eq!(server.result("e")["outcome"], "success");
    assert_eq!(server.result("a")["outcome"], "success");
    assert_eq!(server.result("n")["outcome"], "unavailable");
    assert_eq!(server.result("b")["outcome"], "unavailable");
    let done = server.finish();
    assert!(
        done.stderr
            .contains("\"mcp__gone__x\" is no tool of a connected MCP server"),
        "{}",
        done.stderr
    );

    let sandbox = Sandbox::new();
    let mut server = mcp::serve(
        &sandbox,
        json!({"everything": everything()}),
        &[
            "--permission-mode",
            "bypassPermissions",
            "--disallowed-tools",
            "mcp__everything",
        ],
    );
    status_event(&mut server, "everything", "connected");
    server.tool_use("e", "mcp__everything__echo", json!({"message": "x"}));
    assert_eq!(server.result("e")["outcome"], "unavailable");
    server.finish();
}

#[test]
fn mcp_tools_ask_by_default_and_allow_rules_approve_them() {
    let sandbox = Sandbox::new();
    let mut server = mcp::serve(
        &sandbox,
        json!({"everything": everything()}),
        &[
            "--allowed-tools",
            "mcp__everything__echo",
            "--permission-prompt",
            "none",
        ],
    );
    status_event(&mut server, "everything", "connected");
    server.tool_use("e", "mcp__everything__echo", json!({"message": "x"}));
    server.tool_use("s", "mcp__everything__get-sum", json!({"a": 1, "b": 2}));
    assert_eq!(server.result("e")["outcome"], "success");
    let s = server.result("s");
    assert_eq!(s["outcome"], "denied", "{s}");
    let done = server.finish();
    let asked: Vec<&Value> = done.of_type("permission_request");
    assert!(
        asked.is_empty(),
        "no client prompt with --permission-prompt none"
    );
    assert!(done.messages.iter().any(|m| is_result(m, "s")));
}
