//! The ask flow: `permission_request`, the client's answer, updated inputs checked again, and
//! the ways an ask becomes a deny.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

fn request_for(server: &mut Server, id: &str) -> Value {
    server.wait_for(
        &format!("permission_request for {id}"),
        Duration::from_secs(10),
        |v| v["type"] == "permission_request" && v["tool_use_id"] == id,
    )
}

fn answer(server: &mut Server, request: &Value, body: Value) {
    let mut msg = json!({"type": "permission_response", "request_id": request["request_id"]});
    msg.as_object_mut()
        .unwrap()
        .extend(body.as_object().unwrap().clone());
    server.send(msg);
}

#[test]
fn allow_runs_the_call_and_deny_carries_the_message() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&[]);
    server.tool_use("a", "Bash", json!({"command": "touch allowed.txt"}));
    let req = request_for(&mut server, "a");
    assert_eq!(req["tool_name"], "Bash");
    assert_eq!(req["input"]["command"], "touch allowed.txt");
    assert!(req["reason"].as_str().is_some_and(|r| !r.is_empty()));
    answer(&mut server, &req, json!({"behavior": "allow"}));
    assert_eq!(server.result("a")["outcome"], "success");
    server.tool_use("d", "Bash", json!({"command": "touch denied.txt"}));
    let req = request_for(&mut server, "d");
    answer(
        &mut server,
        &req,
        json!({"behavior": "deny", "message": "not today"}),
    );
    let d = server.result("d");
    assert_eq!(d["outcome"], "denied");
    assert!(d["content"].as_str().unwrap().contains("not today"));
    server.finish();
    assert!(sb.path("allowed.txt").exists());
    assert!(!sb.path("denied.txt").exists());
}

#[test]
fn updated_input_is_checked_again_before_it_runs() {
    let sb = Sandbox::new();
    let settings = sb.write("s.json", r#"{"permissions": {"deny": ["Bash(rm *)"]}}"#);
    sb.write("keep.txt", "keep");
    let mut server = sb.serve(&["--settings", settings.to_str().unwrap()]);
    // Rewritten into something a deny rule covers: denied, nothing runs.
    server.tool_use("r", "Bash", json!({"command": "touch x.txt"}));
    let req = request_for(&mut server, "r");
    answer(
        &mut server,
        &req,
        json!({"behavior": "allow", "updated_input": {"command": "rm keep.txt"}}),
    );
    assert_eq!(server.result("r")["outcome"], "denied");
    // Rewritten into an input the schema refuses: blocked, and the content says why.
    server.tool_use("s", "Bash", json!({"command": "touch y.txt"}));
    let req = request_for(&mut server, "s");
    answer(
        &mut server,
        &req,
        json!({"behavior": "allow", "updated_input": {"command": "touch y.txt", "colour": 1}}),
    );
    let s = server.result("s");
    assert_eq!(s["outcome"], "denied");
    assert!(
        s["content"]
            .as_str()
            .unwrap()
            .contains("colour: unexpected field"),
        "{s}"
    );
    // Rewritten into something fine: the new input runs, not the old one.
    server.tool_use("g", "Bash", json!({"command": "touch asked.txt"}));
    let req = request_for(&mut server, "g");
    answer(
        &mut server,
        &req,
        json!({"behavior": "allow", "updated_input": {"command": "touch granted.txt"}}),
    );
    assert_eq!(server.result("g")["outcome"], "success");
    server.finish();
    assert!(sb.path("keep.txt").exists());
    assert!(!sb.path("x.txt").exists() && !sb.path("y.txt").exists());
    assert!(sb.path("granted.txt").exists() && !sb.path("asked.txt").exists());
}

#[test]
fn waiting_for_an_answer_holds_no_execution_slot() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--max-in-flight", "1"]);
    server.tool_use("ask", "Bash", json!({"command": "touch later.txt"}));
    request_for(&mut server, "ask");
    // The only execution slot is free while "ask" waits: a read runs now.
    server.tool_use("read", "Bash", json!({"command": "pwd"}));
    assert_eq!(server.result("read")["outcome"], "success");
    let done = server.finish();
    // EOF: nobody can answer any more.
    assert_eq!(done.result("ask")["outcome"], "denied");
    assert!(!sb.path("later.txt").exists());
}

#[test]
fn an_ask_after_eof_is_still_announced_then_denied() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &[],
        &[
            json!({"type": "tool_use", "id": "late", "name": "Bash", "input": {"command": "touch z.txt"}}),
        ],
    );
    assert_eq!(done.result("late")["outcome"], "denied");
    assert!(
        done.result("late")["content"]
            .as_str()
            .unwrap()
            .contains("the client closed its input"),
        "{}",
        done.result("late")
    );
    assert!(
        done.of_type("permission_request")
            .iter()
            .any(|r| r["tool_use_id"] == "late")
    );
    assert!(!sb.path("z.txt").exists());
}

#[test]
fn no_prompt_dont_ask_and_run_deny_without_asking() {
    let sb = Sandbox::new();
    for args in [
        vec!["--permission-prompt", "none"],
        vec!["--permission-mode", "dontAsk"],
    ] {
        let done = run_lines(
            &sb,
            &args,
            &[
                json!({"type": "tool_use", "id": "w", "name": "Write", "input": {"file_path": "w.txt", "content": "x"}}),
            ],
        );
        assert_eq!(done.result("w")["outcome"], "denied", "{args:?}");
        assert!(done.of_type("permission_request").is_empty(), "{args:?}");
    }
    let input = sb.write("calls.ndjson", &json!({"type": "tool_use", "id": "w", "name": "Write", "input": {"file_path": "w.txt", "content": "x"}}).to_string());
    let out = std::process::Command::new(bin())
        .args([
            "run",
            input.to_str().unwrap(),
            "--cwd",
            sb.cwd.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\"outcome\":\"denied\"") && !text.contains("permission_request"),
        "{text}"
    );
    assert!(!sb.path("w.txt").exists());
}

#[test]
fn a_denied_write_is_denied_even_when_the_file_was_never_read() {
    let sb = Sandbox::new();
    sb.write("secret.txt", "TOPSECRET\n");
    let settings = sb.write(
        "s.json",
        r#"{"permissions": {"deny": ["Read(./secret.txt)"]}}"#,
    );
    let done = run_lines(
        &sb,
        &["--settings", settings.to_str().unwrap()],
        &[
            json!({"type": "tool_use", "id": "w", "name": "Write", "input": {"file_path": "secret.txt", "content": "overwritten"}}),
            json!({"type": "tool_use", "id": "e", "name": "Edit", "input": {"file_path": "secret.txt", "old_string": "TOP", "new_string": "NO"}}),
        ],
    );
    assert_eq!(done.result("w")["outcome"], "denied");
    assert_eq!(done.result("e")["outcome"], "denied");
    assert_eq!(
        std::fs::read_to_string(sb.path("secret.txt")).unwrap(),
        "TOPSECRET\n"
    );
}

#[test]
fn answering_an_unknown_request_is_an_error_line() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &[],
        &[json!({"type": "permission_response", "request_id": "nope", "behavior": "allow"})],
    );
    assert!(
        done.of_type("error")[0]["message"]
            .as_str()
            .unwrap()
            .contains("nope")
    );
    assert_eq!(done.of_type("error")[0]["line"], 1);
}

#[test]
fn a_request_names_the_canonical_tool_and_the_input_as_it_would_run() {
    let sb = Sandbox::new();
    let settings = sb.write("s.json", r#"{"aliases": {"Scribe": "Write"}}"#);
    let mut server = sb.serve(&["--settings", settings.to_str().unwrap()]);
    // An alias, a relative path and a string where the schema wants an integer elsewhere: the
    // request shows the call as it would run.
    server.tool_use(
        "w",
        "Scribe",
        json!({"file_path": "sub/../new.txt", "content": "x"}),
    );
    server.tool_use(
        "b",
        "Bash",
        json!({"command": "touch t.txt", "timeout": "5000"}),
    );
    let req = request_for(&mut server, "w");
    assert_eq!(req["tool_name"], "Write");
    assert_eq!(
        req["input"],
        json!({"file_path": sb.path("new.txt").display().to_string(), "content": "x"})
    );
    assert!(req["request_id"].as_str().is_some_and(|r| !r.is_empty()));
    assert!(req["reason"].as_str().is_some_and(|r| !r.is_empty()));
    let req_b = request_for(&mut server, "b");
    assert_eq!(req_b["input"]["timeout"], 5000);
    assert_ne!(req["request_id"], req_b["request_id"]);
    answer(&mut server, &req, json!({"behavior": "deny"}));
    answer(&mut server, &req_b, json!({"behavior": "deny"}));
    server.finish();
}
