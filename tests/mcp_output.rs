//! MCP results go through the output budget with their own limit (25,000 tokens at four
//! characters a token; `MAX_MCP_OUTPUT_TOKENS` changes it): past it the whole result — non-text
//! parts included — is written to a file and the model gets a notice and a preview. Never cut
//! silently.

mod support;

use serde_json::json;
use support::Sandbox;
use support::mcp::{self, probe, status_event};

#[test]
fn a_megabyte_result_is_externalized_whole() {
    let sandbox = Sandbox::new();
    let mut server = mcp::serve_probe(&sandbox);
    server.tool_use("big", "mcp__probe__big", json!({"n": 1_000_000}));
    // Just under the limit stays inline.
    server.tool_use("fits", "mcp__probe__big", json!({"n": 99_000}));
    let big = server.result("big");
    assert_eq!(big["outcome"], "success");
    let text = big["content"].as_str().unwrap();
    assert!(text.starts_with("Output too large ("), "{}", &text[..200]);
    assert!(text.len() < 10_000, "{}", text.len());
    let path = big["output_file"].as_str().expect("an output file");
    let saved = std::fs::read_to_string(path).unwrap();
    assert!(saved.starts_with(&"x".repeat(1_000_000)), "{}", saved.len());
    let fits = server.result("fits");
    assert_eq!(fits["content"].as_str().unwrap().len(), 99_000);
    assert!(fits.get("output_file").is_none());
    server.finish();
}

#[test]
fn the_limit_follows_max_mcp_output_tokens_and_counts_non_text_parts() {
    let sandbox = Sandbox::new();
    let settings = sandbox.dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({"env": {"MAX_MCP_OUTPUT_TOKENS": "50"}}).to_string(),
    )
    .unwrap();
    let mut server = mcp::serve(
        &sandbox,
        json!({"probe": probe(json!({}))}),
        &[
            "--settings",
            settings.to_str().unwrap(),
            "--permission-mode",
            "bypassPermissions",
        ],
    );
    status_event(&mut server, "probe", "connected");
    server.send(json!({"type": "hello"}));
    let hello = server.wait_for("hello", std::time::Duration::from_secs(10), |v| {
        v["type"] == "hello"
    });
    assert_eq!(hello["limits"]["mcp_chars"], 200);
    let tools: Vec<&str> = hello["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(tools.contains(&"mcp__probe__echo"), "{tools:?}");
    server.tool_use("e", "mcp__probe__big", json!({"n": 150}));
    assert!(server.result("e").get("output_file").is_none());
    server.tool_use("b", "mcp__probe__big", json!({"n": 250}));
    assert!(server.result("b")["output_file"].is_string());
    // Short text, but its image and audio parts count too: the whole result goes to the file.
    server.tool_use("m", "mcp__probe__mixed", json!({}));
    let m = server.result("m");
    let path = m["output_file"].as_str().expect("externalized");
    assert!(m.get("content_blocks").is_none(), "{m}");
    let saved = std::fs::read_to_string(path).unwrap();
    assert!(saved.contains("\"type\": \"image\""), "{saved}");
    assert!(saved.contains("\"answer\": 42"), "{saved}");
    server.finish();
}
