//! Malformed input lines get an `error` line with their line number; the server carries on.

mod support;

use serde_json::json;
use support::*;

#[test]
fn malformed_lines_are_reported_with_line_numbers_and_do_not_stop_the_server() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let mut server = sb.serve(&[]);
    server.send_raw("this is not json");
    server.send_raw("[1, 2]");
    server.send_raw(r#"{"type": "launch"}"#);
    server.send_raw(r#"{"type": "tool_use", "name": "Read"}"#);
    server.send_raw("");
    server.send(
        json!({"type": "tool_use", "id": "ok", "name": "Read", "input": {"file_path": "a.txt"}}),
    );
    server.send_raw(r#"{"type": "batch", "id": "b", "calls": [{"id": 3, "name": "Read"}]}"#);
    let done = server.finish();
    assert!(done.status.success());
    let errors = done.of_type("error");
    let lines: Vec<u64> = errors.iter().map(|e| e["line"].as_u64().unwrap()).collect();
    assert_eq!(lines, vec![1, 2, 3, 4, 7], "{errors:#?}");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("invalid JSON")
    );
    assert!(
        errors[2]["message"]
            .as_str()
            .unwrap()
            .contains("unknown message type \"launch\"")
    );
    assert!(errors[3]["message"].as_str().unwrap().contains("`id`"));
    assert!(
        errors[4]["message"]
            .as_str()
            .unwrap()
            .contains("calls[0].id")
    );
    let r = done.result("ok");
    assert_eq!(r["outcome"], "success");
    assert!(r["content"].as_str().unwrap().contains("alpha"));
}

#[test]
fn invalid_utf8_is_an_error_line() {
    use std::io::Write;
    let sb = Sandbox::new();
    let mut child = std::process::Command::new(bin())
        .args(["serve", "--cwd", sb.cwd.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"\xff\xfe\n{\"type\":\"shutdown\"}\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("not valid UTF-8"), "{text}");
    assert!(out.status.success());
}

#[test]
fn a_session_message_needs_a_non_empty_field() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &[],
        &[
            json!({"type": "session"}),
            json!({"type": "session", "session_id": ""}),
            json!({"type": "session", "transcript_path": ""}),
            json!({"type": "session", "session_id": null, "transcript_path": null}),
            json!({"type": "session", "session_id": "s-1"}),
        ],
    );
    let errors = done.of_type("error");
    let expected = [
        "session: field `session_id`: missing (give `session_id`, `transcript_path` or both)",
        "session: field `session_id`: expected a non-empty string without NUL characters",
        "session: field `transcript_path`: expected a non-empty string without NUL characters",
        "session: field `session_id`: missing (give `session_id`, `transcript_path` or both)",
    ];
    assert_eq!(errors.len(), expected.len(), "{errors:#?}");
    for (i, (error, message)) in errors.iter().zip(expected).enumerate() {
        assert_eq!(error["message"], message);
        assert_eq!(error["line"], i + 1);
    }
    // A good one has no answer at all.
    assert_eq!(done.messages.len(), expected.len(), "{:#?}", done.messages);
}

#[test]
fn errors_about_what_a_line_asked_name_that_line() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &[],
        &[
            json!({"type": "hello"}),
            json!({"type": "rewind", "to": "never-ran"}),
            json!({"type": "cancel", "id": "ghost"}),
            json!({"type": "permission_response", "request_id": "r-none", "behavior": "deny"}),
        ],
    );
    let errors = done.of_type("error");
    assert_eq!(errors.len(), 3, "{errors:#?}");
    for (error, (line, name)) in errors
        .iter()
        .zip([(2, "never-ran"), (3, "ghost"), (4, "r-none")])
    {
        assert!(error["message"].as_str().unwrap().contains(name), "{error}");
        assert_eq!(error["line"], line, "{error}");
    }
}
