//! A client tool's call is decided like any tool's: with no rule it asks (read-only or not),
//! `Tool(…)` deny and ask rules cover every call of it, a bare-name deny removes it, and hooks
//! see the call (PreToolUse before the client is asked to run it, PostToolUse with its answer).

mod support;

use serde_json::{Value, json};
use support::client::{answer, execute_of, register, tool};
use support::*;

#[test]
fn with_no_rule_a_call_asks_even_when_read_only_and_runs_once_approved() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&[]);
    register(
        &mut server,
        json!([tool("Look", json!({"read_only": true}))]),
    );
    server.tool_use("a", "Look", json!({"q": "x"}));
    let request = server.wait_for(
        "permission_request",
        std::time::Duration::from_secs(20),
        |v| v["type"] == "permission_request" && v["tool_use_id"] == "a",
    );
    assert_eq!(request["tool_name"], "Look");
    assert!(
        !server.seen.iter().any(|v| v["type"] == "execute"),
        "nothing runs before the answer"
    );
    server.send(json!({"type": "permission_response", "request_id": request["request_id"], "behavior": "allow"}));
    let execute = execute_of(&mut server, "a");
    answer(&mut server, &execute, json!("looked"));
    assert_eq!(server.result("a")["outcome"], "success");
    server.tool_use("d", "Look", json!({"q": "y"}));
    let request = server.wait_for(
        "permission_request",
        std::time::Duration::from_secs(20),
        |v| v["type"] == "permission_request" && v["tool_use_id"] == "d",
    );
    server.send(json!({"type": "permission_response", "request_id": request["request_id"], "behavior": "deny", "message": "not now"}));
    let denied = server.result("d");
    assert_eq!(denied["outcome"], "denied", "{denied}");
    let done = server.finish();
    assert!(
        !done
            .messages
            .iter()
            .any(|v| v["type"] == "execute" && v["tool_use_id"] == "d")
    );
}

#[test]
fn deny_and_ask_rules_with_a_specifier_cover_every_call_and_a_bare_deny_removes_the_tool() {
    let sb = Sandbox::new();
    let settings = sb.settings_file(&json!({"permissions": {
        "allow": ["Guarded", "Asked", "Gone"],
        "deny": ["Guarded(anything at all)", "Gone"],
        "ask": ["Asked(x)"]
    }}));
    let mut server = sb.serve(&["--settings", &settings, "--permission-prompt", "none"]);
    let changed = register(
        &mut server,
        json!([
            tool("Guarded", json!({})),
            tool("Asked", json!({})),
            tool("Gone", json!({})),
            tool("Free", json!({}))
        ]),
    );
    // A bare-name deny keeps a registered tool out of the effective registry.
    assert_eq!(
        changed["added"],
        json!(["Asked", "Free", "Guarded"]),
        "{changed}"
    );
    server.tool_use("g", "Guarded", json!({"q": "a"}));
    server.tool_use("a", "Asked", json!({"q": "a"}));
    server.tool_use("x", "Gone", json!({"q": "a"}));
    server.tool_use("f", "Free", json!({"q": "a"}));
    let done = server.finish();
    let g = done.result("g");
    assert_eq!(g["outcome"], "denied", "{g}");
    assert!(
        g["content"]
            .as_str()
            .unwrap()
            .contains("Guarded(anything at all)"),
        "{g}"
    );
    let a = done.result("a");
    assert_eq!(a["outcome"], "denied", "{a}");
    assert!(
        a["content"]
            .as_str()
            .unwrap()
            .contains("no one can approve it"),
        "{a}"
    );
    assert_eq!(done.result("x")["outcome"], "unavailable");
    // No rule and nobody to ask: denied.
    assert_eq!(done.result("f")["outcome"], "denied");
    assert!(
        !done.messages.iter().any(|v| v["type"] == "execute"),
        "no call reached the client: {:#?}",
        done.messages
    );
}

#[test]
fn hooks_see_the_call_before_and_after_the_client_runs_it() {
    let sb = Sandbox::new();
    let pre = sb.dir.path().join("pre.json");
    let post = sb.dir.path().join("post.json");
    let rewrite = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "updatedInput": {"q": "rewritten"}
    }});
    let settings = sb.settings_file(&json!({"hooks": {
        "PreToolUse": [{"matcher": "Hooked", "hooks": [{"type": "command", "command": format!("cat > '{}'; echo '{}'", pre.display(), rewrite)}]}],
        "PostToolUse": [{"matcher": "Hooked", "hooks": [{"type": "command", "command": format!("cat > '{}'", post.display())}]}]
    }}));
    // No allow rule: the hook's allow lets the call run.
    let mut server = sb.serve(&["--settings", &settings, "--permission-prompt", "none"]);
    register(&mut server, json!([tool("Hooked", json!({}))]));
    server.tool_use("h", "Hooked", json!({"q": "original"}));
    let execute = execute_of(&mut server, "h");
    assert_eq!(execute["input"], json!({"q": "rewritten"}));
    answer(&mut server, &execute, json!("the answer"));
    assert_eq!(server.result("h")["outcome"], "success");
    server.finish();
    let pre: Value = serde_json::from_str(&std::fs::read_to_string(&pre).unwrap()).unwrap();
    assert_eq!(pre["hook_event_name"], "PreToolUse");
    assert_eq!(pre["tool_name"], "Hooked");
    assert_eq!(pre["tool_input"], json!({"q": "original"}));
    assert_eq!(pre["tool_use_id"], "h");
    let post: Value = serde_json::from_str(&std::fs::read_to_string(&post).unwrap()).unwrap();
    assert_eq!(post["hook_event_name"], "PostToolUse");
    assert_eq!(post["tool_input"], json!({"q": "rewritten"}));
    assert_eq!(post["tool_response"], "the answer");
}
