//! A client that answers its tools' `execute` lines badly — never, twice, too late, with an id
//! nobody asked for, with far too much content, in a line over the line limit, or not before
//! closing its input — still gets
//! exactly one result per call, an `error` line for every answer that is not taken, and an
//! `execute_cancel` for every request toolrt stops waiting for.

mod support;

use std::time::Duration;

use serde_json::json;
use support::client::{answer, cancel_of, error_with, execute_of, register, tool};
use support::*;

fn serve_with_tools(sb: &Sandbox, tools: serde_json::Value) -> Server {
    let mut server = sb.serve(&["--allowed-tools", "Slow", "--allowed-tools", "Quick"]);
    register(&mut server, tools);
    server
}

#[test]
fn no_answer_times_out_and_a_late_answer_gets_an_error_line() {
    let sb = Sandbox::new();
    let mut server = serve_with_tools(&sb, json!([tool("Slow", json!({"timeout_ms": 300}))]));
    server.tool_use("t", "Slow", json!({"q": "x"}));
    let execute = execute_of(&mut server, "t");
    let result = server.result("t");
    assert_eq!(result["outcome"], "timed_out", "{result}");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("did not answer within 300 ms"),
        "{result}"
    );
    cancel_of(&mut server, &execute);
    answer(&mut server, &execute, json!("too late"));
    let error = error_with(&mut server, "is no longer waited for");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains(execute["request_id"].as_str().unwrap())
    );
    let done = server.finish();
    assert_eq!(done.results("t").len(), 1, "{:#?}", done.messages);
}

#[test]
fn a_second_answer_and_an_unknown_request_id_get_error_lines_and_change_nothing() {
    let sb = Sandbox::new();
    let mut server = serve_with_tools(&sb, json!([tool("Quick", json!({}))]));
    server.send(json!({"type": "execute_result", "request_id": "exec-999999", "content": "?"}));
    error_with(&mut server, "no execute has request_id \"exec-999999\"");
    server.send(json!({"type": "execute_result", "request_id": "made-up", "content": "?"}));
    error_with(&mut server, "no execute has request_id \"made-up\"");
    server.tool_use("d", "Quick", json!({"q": "x"}));
    let execute = execute_of(&mut server, "d");
    answer(&mut server, &execute, json!("first"));
    answer(&mut server, &execute, json!("second"));
    error_with(&mut server, "is no longer waited for");
    let result = server.result("d");
    assert_eq!(result["content"], "first", "{result}");
    let done = server.finish();
    assert_eq!(done.results("d").len(), 1, "{:#?}", done.messages);
    assert!(
        !done.messages.iter().any(|v| v["type"] == "execute_cancel"),
        "an answered request is not cancelled"
    );
}

#[test]
fn cancelling_a_call_or_its_batch_writes_execute_cancel_and_answers_cancelled() {
    let sb = Sandbox::new();
    let mut server = serve_with_tools(&sb, json!([tool("Slow", json!({}))]));
    server.tool_use("c", "Slow", json!({"q": "x"}));
    let execute = execute_of(&mut server, "c");
    server.send(json!({"type": "cancel", "id": "c"}));
    let result = server.result("c");
    assert_eq!(result["outcome"], "cancelled", "{result}");
    cancel_of(&mut server, &execute);
    answer(&mut server, &execute, json!("after the cancel"));
    error_with(&mut server, "is no longer waited for");
    // A batch of two exclusive calls: the first waits for the client, the second for its turn.
    server.send(json!({"type": "batch", "id": "b", "calls": [
        {"id": "b1", "name": "Slow", "input": {"q": "1"}},
        {"id": "b2", "name": "Slow", "input": {"q": "2"}}
    ]}));
    let first = execute_of(&mut server, "b1");
    server.send(json!({"type": "cancel", "batch": "b"}));
    assert_eq!(server.result("b1")["outcome"], "cancelled");
    assert_eq!(server.result("b2")["outcome"], "cancelled");
    cancel_of(&mut server, &first);
    let done = server.finish();
    for id in ["c", "b1", "b2"] {
        assert_eq!(done.results(id).len(), 1, "{id}: {:#?}", done.messages);
    }
    assert!(
        !done
            .messages
            .iter()
            .any(|v| v["type"] == "execute" && v["tool_use_id"] == "b2"),
        "a call cancelled before its turn never reaches the client"
    );
}

#[test]
fn content_past_the_budget_goes_to_an_output_file() {
    let sb = Sandbox::new();
    let mut server = serve_with_tools(&sb, json!([tool("Quick", json!({}))]));
    server.tool_use("big", "Quick", json!({"q": "x"}));
    let execute = execute_of(&mut server, "big");
    let huge = "0123456789".repeat(20_000);
    answer(&mut server, &execute, json!(huge));
    let result = server.result("big");
    assert_eq!(
        result["outcome"],
        "success",
        "{}",
        &result.to_string()[..300]
    );
    let content = result["content"].as_str().unwrap();
    assert!(
        content.len() < 60_000,
        "inline content is cut: {}",
        content.len()
    );
    let file = result["output_file"].as_str().expect("an output file");
    assert_eq!(std::fs::read_to_string(file).unwrap(), huge);
    server.finish();
}

#[test]
fn an_answer_over_the_line_limit_ends_its_call_failed_at_once() {
    const MAX: usize = 64 * 1024 * 1024;
    let sb = Sandbox::new();
    // No `timeout_ms`: without the line's start read, the call would wait the default 10 minutes
    // (and `result` below gives up after 30 s).
    let mut server = serve_with_tools(&sb, json!([tool("Quick", json!({}))]));
    server.tool_use("big", "Quick", json!({"q": "x"}));
    let execute = execute_of(&mut server, "big");
    let id = execute["request_id"].as_str().unwrap().to_string();
    let head = format!(r#"{{"type":"execute_result","request_id":"{id}","content":""#);
    let mut line = String::with_capacity(MAX + 1);
    line.push_str(&head);
    line.push_str(&"x".repeat(MAX - 1 - head.len()));
    line.push_str(r#""}"#);
    assert_eq!(line.len(), MAX + 1, "one byte over the limit");
    server.send_raw(&line);
    let result = server.result("big");
    assert_eq!(result["outcome"], "failed", "{result}");
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains(&format!("request_id \"{id}\"")) && content.contains("line limit"),
        "{result}"
    );
    error_with(
        &mut server,
        &format!(
            "line longer than {MAX} bytes; ignored: it was the execute_result for request_id \"{id}\", whose call ended failed"
        ),
    );
    // The same line again finds no call waiting: reported as any over-long line.
    server.send_raw(&line);
    drop(line);
    server.tool_use("after", "Quick", json!({"q": "y"}));
    let next = execute_of(&mut server, "after");
    answer(&mut server, &next, json!("fine"));
    assert_eq!(server.result("after")["content"], "fine");
    let done = server.finish();
    assert_eq!(done.results("big").len(), 1, "{:#?}", done.messages);
    let errors: Vec<_> = done
        .messages
        .iter()
        .filter(|v| v["type"] == "error")
        .map(|v| v["message"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        errors,
        [format!("line longer than {MAX} bytes; ignored")],
        "the second line: {:#?}",
        done.messages
    );
    assert!(
        !done.messages.iter().any(|v| v["type"] == "execute_cancel"),
        "an answer that came, even unread, is not cancelled"
    );
}

#[test]
fn end_of_input_while_calls_wait_for_the_client_answers_each_once() {
    let sb = Sandbox::new();
    let mut server = serve_with_tools(&sb, json!([tool("Slow", json!({"read_only": true}))]));
    // Three read-only calls run in parallel, each waiting for its execute_result.
    server.send(json!({"type": "batch", "id": "b", "calls": [
        {"id": "e1", "name": "Slow", "input": {"q": "1"}},
        {"id": "e2", "name": "Slow", "input": {"q": "2"}},
        {"id": "e3", "name": "Slow", "input": {"q": "3"}}
    ]}));
    let executes: Vec<_> = ["e1", "e2", "e3"]
        .iter()
        .map(|id| execute_of(&mut server, id))
        .collect();
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
    for (id, execute) in ["e1", "e2", "e3"].iter().zip(&executes) {
        let result = done.result(id);
        assert_eq!(result["outcome"], "cancelled", "{result}");
        assert!(
            result["content"]
                .as_str()
                .unwrap()
                .contains("closed its input"),
            "{result}"
        );
        let cancels = done
            .messages
            .iter()
            .filter(|v| v["type"] == "execute_cancel" && v["request_id"] == execute["request_id"])
            .count();
        assert_eq!(cancels, 1, "{id}: {:#?}", done.messages);
    }
    assert_eq!(done.events("batch_end").len(), 1);
}

#[test]
fn shutdown_keeps_reading_execute_results_until_calls_finish() {
    let sb = Sandbox::new();
    let mut server = serve_with_tools(&sb, json!([tool("Quick", json!({}))]));
    server.tool_use("s", "Quick", json!({"q": "x"}));
    let execute = execute_of(&mut server, "s");
    server.send(json!({"type": "shutdown"}));
    answer(&mut server, &execute, json!("answered after shutdown"));
    let result = server.result("s");
    assert_eq!(result["content"], "answered after shutdown", "{result}");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "toolrt did not exit");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success());
}
