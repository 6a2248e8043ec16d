//! Selection decides which tools exist; permission rules never add one. An absent tool is
//! `unavailable`, not `denied`.

mod support;

use serde_json::json;
use support::*;

#[test]
fn unknown_tools_are_unavailable_and_list_what_exists() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &[],
        &[json!({"type": "tool_use", "id": "u", "name": "Teleport", "input": {}})],
    );
    let r = done.result("u");
    assert_eq!(r["outcome"], "unavailable");
    assert_eq!(r["is_error"], true);
    let text = r["content"].as_str().unwrap();
    assert!(text.contains("Teleport") && text.contains("Available tools: Agent, Bash, Edit, Glob, Grep, Read, TaskOutput, TaskStop, WebFetch, Write"), "{text}");
}

#[test]
fn unselected_tool_is_unavailable_even_when_allowed_or_bypassed() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &[
            "--tools",
            "Read",
            "--allowed-tools",
            "Bash",
            "--permission-mode",
            "bypassPermissions",
        ],
        &[
            json!({"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "touch ran.txt"}}),
        ],
    );
    assert_eq!(done.result("b")["outcome"], "unavailable");
    assert!(!sb.path("ran.txt").exists());
}

#[test]
fn empty_selection_has_no_tools() {
    let sb = Sandbox::new();
    sb.write("a.txt", "a");
    let done = run_lines(
        &sb,
        &["--tools", ""],
        &[json!({"type": "tool_use", "id": "r", "name": "Read", "input": {"file_path": "a.txt"}})],
    );
    assert_eq!(done.result("r")["outcome"], "unavailable");
    assert!(
        done.result("r")["content"]
            .as_str()
            .unwrap()
            .contains("Available tools: none")
    );
}

#[test]
fn selected_but_not_allowed_is_a_permission_matter() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &["--tools", "Bash", "--permission-mode", "dontAsk"],
        &[
            json!({"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "touch ran.txt"}}),
        ],
    );
    assert_eq!(done.result("b")["outcome"], "denied");
    assert!(!sb.path("ran.txt").exists());
}

#[test]
fn unknown_tool_in_selection_is_a_startup_error() {
    let sb = Sandbox::new();
    let (code, stderr) = serve_status(&sb.cwd, &["--tools", "Read,Teleport"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("unknown tool \"Teleport\""), "{stderr}");
}

#[test]
fn bare_name_deny_removes_the_tool() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &[
            "--disallowed-tools",
            "Bash",
            "--permission-mode",
            "bypassPermissions",
        ],
        &[json!({"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "true"}})],
    );
    assert_eq!(done.result("b")["outcome"], "unavailable");
}
