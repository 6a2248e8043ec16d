//! Hooks and rules see MCP tools by name: a PreToolUse hook matching `mcp__.*` rewrites an
//! argument; an `if` filter narrows a hook to one tool; the hook input has the reference's
//! field names; `toolrt explain` explains MCP calls without starting a server.

mod support;

use serde_json::{Value, json};
use support::mcp::{self, everything, status_event};
use support::{Sandbox, run_in};

#[test]
fn a_pretooluse_hook_rewrites_an_mcp_tools_argument() {
    let sandbox = Sandbox::new();
    let seen = sandbox.dir.path().join("hook-input.json");
    let only_sum = sandbox.dir.path().join("only-sum.log");
    let post = sandbox.dir.path().join("post-input.json");
    let rewrite = format!(
        "tee '{}' >/dev/null; echo '{}'",
        seen.display(),
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {"message": "rewritten by the hook"}
        }})
    );
    let settings = sandbox.dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({"hooks": {
            "PostToolUse": [{"matcher": "mcp__everything__echo", "hooks": [{"type": "command", "command": format!("cat > '{}'", post.display())}]}],
            "PreToolUse": [
            {"matcher": "mcp__.*__echo", "hooks": [{"type": "command", "command": rewrite}]},
            {"matcher": "mcp__everything__.*", "hooks": [{
                "type": "command",
                "command": format!("cat >> '{}'; echo >> '{}'", only_sum.display(), only_sum.display()),
                "if": "mcp__everything__get-sum"
            }]}
        ]}})
        .to_string(),
    )
    .unwrap();
    // No allow rule: the hook's allow is what lets the echo run.
    let mut server = mcp::serve(
        &sandbox,
        json!({"everything": everything()}),
        &[
            "--settings",
            settings.to_str().unwrap(),
            "--permission-prompt",
            "none",
        ],
    );
    status_event(&mut server, "everything", "connected");
    server.tool_use("e", "mcp__everything__echo", json!({"message": "original"}));
    let e = server.result("e");
    assert_eq!(e["outcome"], "success", "{e}");
    assert_eq!(e["content"], "Echo: rewritten by the hook");
    server.tool_use("s", "mcp__everything__get-sum", json!({"a": 1, "b": 2}));
    server.tool_use("t", "mcp__everything__get-tiny-image", json!({}));
    server.result("s");
    server.result("t");
    server.finish();

    let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "mcp__everything__echo");
    assert_eq!(input["tool_input"], json!({"message": "original"}));
    assert_eq!(input["tool_use_id"], "e");
    // The `if` filter ran the second hook for get-sum only.
    let log = std::fs::read_to_string(&only_sum).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert_eq!(lines[0]["tool_name"], "mcp__everything__get-sum");
    // PostToolUse gets the server's content blocks as `tool_response`.
    let post: Value = serde_json::from_str(&std::fs::read_to_string(&post).unwrap()).unwrap();
    assert_eq!(
        post["tool_response"],
        json!([{"type": "text", "text": "Echo: rewritten by the hook"}])
    );
    assert_eq!(
        post["tool_input"],
        json!({"message": "rewritten by the hook"})
    );
}

#[test]
fn explain_decides_mcp_calls_without_starting_servers() {
    let sandbox = Sandbox::new();
    let marker = sandbox.dir.path().join("started");
    let file = mcp::config_file(
        &sandbox,
        json!({"srv": {"command": "sh", "args": ["-c", format!("touch '{}'", marker.display())]}}),
    );
    let file = file.to_str().unwrap();
    let cwd = &sandbox.cwd;
    for (args, code, needle) in [
        (
            vec!["--allowed-tools", "mcp__srv__get"],
            Some(0),
            "decision: allow",
        ),
        (
            vec!["--disallowed-tools", "mcp__srv__*"],
            Some(2),
            "unavailable: No such tool: mcp__srv__get. A deny rule removes it",
        ),
        (vec![], Some(3), "decision: ask"),
        (
            vec!["--allowed-tools", "mcp__srv"],
            Some(0),
            "the input is checked against the input schema MCP server \"srv\" gives when it starts",
        ),
    ] {
        let mut all = vec!["explain", "--mcp-config", file];
        all.extend(args.iter().copied());
        all.extend(["mcp__srv__get", "{\"x\": 1}"]);
        let (status, out) = run_in(&all, cwd, sandbox.dir.path());
        assert_eq!(status, code, "{args:?}: {out}");
        assert!(out.contains(needle), "{args:?}: {out}");
    }
    let (status, out) = run_in(
        &["explain", "--mcp-config", file, "mcp__other__get", "{}"],
        cwd,
        sandbox.dir.path(),
    );
    assert_eq!(status, Some(2));
    assert!(
        out.contains("No MCP server named \"other\" is configured"),
        "{out}"
    );
    assert!(!marker.exists(), "explain started a server");
}
