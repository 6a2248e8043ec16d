//! What one input line may hold (docs/PROTOCOL.md, "Client → toolrt"): at most 64 MiB, at most
//! 1,000,000 JSON values, ids and names of at most 256 bytes, a permission answer's `message` of
//! at most 64 KiB, no repeated key in `updated_input`. A line past a limit is refused whole with
//! an `error` line naming the field (never quoting the value), nothing of it runs, and the server
//! goes on.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

/// The error lines in the order they were written.
fn errors(done: &Finished) -> Vec<&Value> {
    done.of_type("error")
}

fn message(v: &Value) -> &str {
    v["message"].as_str().unwrap_or("")
}

#[test]
fn a_line_over_64_mib_is_skipped_with_an_error_and_the_server_goes_on() {
    const MAX: usize = 64 * 1024 * 1024;
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    // A call that would run if it were read: JSON whitespace pads it to one byte over the limit.
    let head =
        r#"{"type":"tool_use","id":"big","name":"Bash","input":{"command":"touch too-long"}"#;
    let mut line = String::with_capacity(MAX + 1);
    line.push_str(head);
    line.push_str(&" ".repeat(MAX - head.len()));
    line.push('}');
    assert_eq!(line.len(), MAX + 1);
    server.send_raw(&line);
    drop(line);
    server.tool_use("after", "Bash", json!({"command": "touch after"}));
    assert_eq!(server.result("after")["outcome"], "success");
    let done = server.finish();
    assert!(done.status.success());
    let errors = errors(&done);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(
        message(errors[0]),
        "line longer than 67108864 bytes; ignored"
    );
    assert_eq!(errors[0]["line"], 1);
    assert!(done.results("big").is_empty());
    assert!(!sb.path("too-long").exists());
    assert!(sb.path("after").exists());
}

/// A `tool_use` line holding `values` JSON values in all: `pad` zeros at the message's top level
/// (an unknown field, ignored) or, with `in_input`, inside `input` (a field Bash does not have).
fn line_of_values(id: &str, values: usize, in_input: bool) -> String {
    // The message, `type`, `id`, `name`, `input`, `command` and the array itself.
    let zeros = vec!["0"; values - 7].join(",");
    let command = format!(r#""command":"touch ran-{id}""#);
    if in_input {
        format!(
            r#"{{"type":"tool_use","id":"{id}","name":"Bash","input":{{{command},"x":[{zeros}]}}}}"#
        )
    } else {
        format!(
            r#"{{"type":"tool_use","id":"{id}","name":"Bash","input":{{{command}}},"pad":[{zeros}]}}"#
        )
    }
}

#[test]
fn a_line_of_more_than_a_million_values_is_refused_whole() {
    const MAX: usize = 1_000_000;
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    server.send_raw(&line_of_values("top-max", MAX, false));
    server.send_raw(&line_of_values("top-over", MAX + 1, false));
    server.send_raw(&line_of_values("in-max", MAX, true));
    server.send_raw(&line_of_values("in-over", MAX + 1, true));
    let done = server.finish();
    assert!(done.status.success());
    // At the limit: accepted (an unknown top-level field is ignored; `x` is not Bash's).
    assert_eq!(done.result("top-max")["outcome"], "success");
    assert!(sb.path("ran-top-max").exists());
    assert_eq!(done.result("in-max")["outcome"], "schema_error");
    // One more: refused whole, wherever the values are.
    let errors = errors(&done);
    assert_eq!(errors.len(), 2, "{errors:#?}");
    for (error, line) in errors.iter().zip([2, 4]) {
        assert!(
            message(error).starts_with("more than 1000000 JSON values in one message")
                && message(error).ends_with("the message was refused"),
            "{error}"
        );
        assert_eq!(error["line"], line);
    }
    assert!(done.results("top-over").is_empty() && done.results("in-over").is_empty());
    assert!(!sb.path("ran-top-over").exists());
}

#[test]
fn ids_over_256_bytes_are_refused_naming_the_field_never_the_value() {
    let sb = Sandbox::new();
    let long = "q".repeat(300);
    let at_limit = "b".repeat(256);
    let call = |id: &str, file: &str| json!({"id": id, "name": "Bash", "input": {"command": format!("touch {file}")}});
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[
            json!({"type": "batch", "id": long, "calls": [call("in-long-batch", "ran-1")]}),
            json!({"type": "batch", "id": "B", "calls": [call("fine", "ran-2"), call(&long, "ran-3")]}),
            json!({"type": "tool_use", "id": long, "name": "Bash", "input": {"command": "touch ran-4"}}),
            json!({"type": "cancel", "id": long}),
            json!({"type": "cancel", "batch": long}),
            json!({"type": "rewind", "to": long}),
            json!({"type": "permission_response", "request_id": long, "behavior": "allow"}),
            // 256 bytes is still an id.
            json!({"type": "batch", "id": at_limit, "calls": [call("at-limit", "ran-5")]}),
        ],
    );
    assert!(done.status.success());
    let errors = errors(&done);
    let expected = [
        "batch: field `id`",
        "batch: field `calls[1].id`",
        "tool_use: field `id`",
        "cancel: field `id`",
        "cancel: field `batch`",
        "rewind: field `to`",
        "permission_response: field `request_id`",
    ];
    assert_eq!(errors.len(), expected.len(), "{errors:#?}");
    for (i, (error, field)) in errors.iter().zip(expected).enumerate() {
        assert_eq!(
            message(error),
            format!("{field}: longer than 256 bytes (got 300)")
        );
        assert_eq!(error["line"], i + 1);
        assert!(!message(error).contains("qqqq"), "{error}");
    }
    // A refused line is refused whole: no call of it was accepted or ran.
    for id in ["in-long-batch", "fine", long.as_str()] {
        assert!(done.results(id).is_empty(), "{id} has a result");
    }
    for n in 1..=4 {
        assert!(!sb.path(&format!("ran-{n}")).exists(), "ran-{n}");
    }
    assert_eq!(done.events("batch_start").len(), 1);
    assert_eq!(done.events("batch_end")[0]["batch"], at_limit);
    assert_eq!(done.result("at-limit")["outcome"], "success");
}

/// Starts a Bash call that asks (nothing allows `touch` in the default mode) and returns its
/// permission request.
fn asking(server: &mut Server, id: &str, file: &str) -> Value {
    server.tool_use(id, "Bash", json!({"command": format!("touch {file}")}));
    server.wait_for("a permission_request", Duration::from_secs(10), |v| {
        v["type"] == "permission_request" && v["tool_use_id"] == id
    })
}

#[test]
fn a_permission_message_over_64_kib_is_refused_and_the_call_still_waits() {
    const MAX: usize = 64 * 1024;
    let sb = Sandbox::new();
    let mut server = sb.serve(&[]);
    let request = asking(&mut server, "a", "asked");
    let rid = request["request_id"].clone();
    server.send(json!({"type": "permission_response", "request_id": rid, "behavior": "deny", "message": "z".repeat(MAX + 1)}));
    let error = server.wait_for("an error line", Duration::from_secs(10), |v| {
        v["type"] == "error"
    });
    assert_eq!(
        message(&error),
        "permission_response: field `message`: longer than 65536 bytes (got 65537)"
    );
    assert_eq!(error["line"], 2);
    // The refused answer did not count: the call still waits, and a message of 64 KiB is fine.
    let fits = "m".repeat(MAX);
    server.send(json!({"type": "permission_response", "request_id": rid, "behavior": "deny", "message": fits}));
    let result = server.result("a");
    assert_eq!(result["outcome"], "denied");
    assert!(result["content"].as_str().unwrap().contains(&fits));
    let done = server.finish();
    assert_eq!(done.results("a").len(), 1);
    assert_eq!(done.of_type("error").len(), 1);
    assert!(!sb.path("asked").exists());
}

#[test]
fn a_repeated_key_in_updated_input_refuses_the_answer_and_nothing_runs() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&[]);
    let request = asking(&mut server, "a", "asked");
    let rid = request["request_id"].as_str().unwrap();
    server.send_raw(&format!(
        r#"{{"type":"permission_response","request_id":"{rid}","behavior":"allow","updated_input":{{"command":"echo safe","command":"touch pwned"}}}}"#
    ));
    let error = server.wait_for("an error line", Duration::from_secs(10), |v| {
        v["type"] == "error"
    });
    assert!(
        message(&error).starts_with(
            "duplicate key `command` in `updated_input`: a key may appear only once in an object"
        ) && message(&error).ends_with("the message was refused"),
        "{error}"
    );
    assert_eq!(error["line"], 2);
    // The call still waits for an answer; this one denies it.
    server.send(json!({"type": "permission_response", "request_id": rid, "behavior": "deny"}));
    assert_eq!(server.result("a")["outcome"], "denied");
    let done = server.finish();
    assert_eq!(done.results("a").len(), 1);
    assert!(!sb.path("pwned").exists() && !sb.path("asked").exists());
}
