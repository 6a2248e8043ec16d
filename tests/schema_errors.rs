//! Schema errors name every failing field and what was expected; coercion fixes what models
//! commonly get almost right.

mod support;

use serde_json::json;
use support::*;

#[test]
fn schema_errors_name_every_field() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[
            json!({"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "echo hi", "timeout": "soon", "colour": "red"}}),
            json!({"type": "tool_use", "id": "b", "name": "Read", "input": {}}),
            json!({"type": "tool_use", "id": "c", "name": "Write", "input": "not an object"}),
            json!({"type": "tool_use", "id": "d", "name": "Read", "input": {"file_path": "x", "limit": 0}}),
        ],
    );
    let a = done.result("a");
    assert_eq!(a["outcome"], "schema_error");
    assert_eq!(a["is_error"], true);
    let text = a["content"].as_str().unwrap();
    assert!(
        text.contains("timeout: expected integer, got \"soon\""),
        "{text}"
    );
    assert!(text.contains("colour: unexpected field"), "{text}");
    assert!(
        done.result("b")["content"]
            .as_str()
            .unwrap()
            .contains("file_path: required field is missing")
    );
    assert!(
        done.result("c")["content"]
            .as_str()
            .unwrap()
            .contains("input: expected an object, got string")
    );
    assert!(
        done.result("d")["content"]
            .as_str()
            .unwrap()
            .contains("limit: expected a number >= 1")
    );
}

#[test]
fn coercion_fixes_strings_and_encoded_values() {
    let sb = Sandbox::new();
    sb.write("lines.txt", "one\ntwo\nthree\n");
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[
            json!({"type": "tool_use", "id": "n", "name": "Read", "input": {"file_path": "lines.txt", "offset": "2", "limit": "1"}}),
            json!({"type": "tool_use", "id": "enc", "name": "Read", "input": "{\"file_path\": \"lines.txt\", \"limit\": 1}"}),
            json!({"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "echo ok", "timeout": "5000", "run_in_background": "false"}}),
            json!({"type": "tool_use", "id": "tilde", "name": "Read", "input": {"file_path": "~/proj/lines.txt", "limit": 1}}),
        ],
    );
    let n = done.result("n");
    assert_eq!(n["outcome"], "success", "{n}");
    assert!(n["content"].as_str().unwrap().contains("2\ttwo"));
    assert!(!n["content"].as_str().unwrap().contains("three"));
    assert_eq!(done.result("enc")["outcome"], "success");
    assert_eq!(done.result("b")["outcome"], "success");
    let t = done.result("tilde");
    assert_eq!(t["outcome"], "success", "{t}");
}
