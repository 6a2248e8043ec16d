//! The outcomes table: every outcome, with the `is_error` the table gives it, and the fields a
//! `tool_result` always carries; a `tool_use` without `input` is a call with `{}`.

mod support;

use serde_json::json;
use support::*;

#[test]
fn every_outcome_has_the_is_error_of_the_table() {
    let sb = Sandbox::new();
    sb.write("f.txt", "x\n");
    // Never read in this session: its Edit fails validation whenever the Read of f.txt ends.
    sb.write("g.txt", "x\n");
    let settings = sb.write(
        "s.json",
        r#"{"permissions": {"deny": ["Bash(rm *)"]},
            "hooks": {"PreToolUse": [
              {"matcher": "Glob", "hooks": [{"type": "command", "command": "echo '{\"continue\": false, \"stopReason\": \"enough\"}'"}]},
              {"matcher": "Grep", "hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"defer\"}}'"}]}
            ]}}"#,
    );
    let mut server = sb.serve(&[
        "--settings",
        settings.to_str().unwrap(),
        "--permission-mode",
        "bypassPermissions",
    ]);
    let calls = [
        ("success", "Read", json!({"file_path": "f.txt"})),
        ("failed", "Bash", json!({"command": "exit 3"})),
        ("unavailable", "Teleport", json!({})),
        ("schema_error", "Read", json!({"file_path": 1})),
        (
            "validation_error",
            "Edit",
            json!({"file_path": "g.txt", "old_string": "x", "new_string": "y"}),
        ),
        ("denied", "Bash", json!({"command": "rm -f f.txt"})),
        ("stopped", "Glob", json!({"pattern": "*"})),
        ("deferred", "Grep", json!({"pattern": "x"})),
        (
            "timed_out",
            "Bash",
            json!({"command": "sleep 30", "timeout": 200}),
        ),
    ];
    for (id, name, input) in &calls {
        server.tool_use(id, name, input.clone());
    }
    // Cancelled before or while it runs: `cancelled` either way.
    server.tool_use("cancelled", "Bash", json!({"command": "sleep 30"}));
    server.send(json!({"type": "cancel", "id": "cancelled"}));
    let done = server.finish();
    let is_error = |outcome: &str| !matches!(outcome, "success" | "deferred");
    for id in calls.iter().map(|c| c.0).chain(["cancelled"]) {
        let r = done.result(id);
        assert_eq!(r["outcome"], id, "{r}");
        assert_eq!(r["is_error"], is_error(id), "{r}");
        assert!(r["content"].as_str().is_some_and(|c| !c.is_empty()), "{r}");
        assert!(r["duration_ms"].is_u64(), "{r}");
        assert!(r.get("output_file").is_none(), "{r}");
    }
    assert!(std::fs::read_to_string(sb.path("f.txt")).unwrap() == "x\n");
}

#[test]
fn a_tool_use_without_input_is_a_call_with_an_empty_object() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&[]);
    server.send_raw(r#"{"type": "tool_use", "id": "r", "name": "Read"}"#);
    server.send_raw(r#"{"type": "tool_use", "id": "", "name": "Read"}"#);
    let done = server.finish();
    let r = done.result("r");
    assert_eq!(r["outcome"], "schema_error");
    assert!(r["content"].as_str().unwrap().contains("file_path"), "{r}");
    let errors = done.of_type("error");
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("field `id`: must not be empty")
    );
    assert_eq!(errors[0]["line"], 2);
}
