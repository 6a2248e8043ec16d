//! Admission places and the parked queue (docs/PROTOCOL.md, "Admission and backpressure"): a
//! batch larger than admission takes the rest of its places as its calls start, `batch_end`
//! holds a place of its own until written, and the parked queue is bounded by 64 MiB of input
//! lines as well as by `--max-parked`.

mod support;

use std::time::Duration;

use serde_json::json;
use support::*;

/// One admission place: one call executing, none queued.
const ONE_PLACE: &[&str] = &["--max-in-flight", "1", "--max-queued", "0"];

#[test]
fn a_batch_larger_than_admission_takes_the_rest_as_its_calls_start() {
    let sb = Sandbox::new();
    // Two places, a batch of eight calls, each depending on the one before, and a call after it.
    let mut calls = vec![
        json!({"id": "w", "name": "Write", "input": {"file_path": "n.txt", "content": "0\n"}}),
    ];
    for i in 1..=6 {
        calls.push(json!({"id": format!("s{i}"), "name": "Bash", "input": {"command": format!("echo {i} >> n.txt")}}));
    }
    calls.push(json!({"id": "r", "name": "Read", "input": {"file_path": "n.txt"}}));
    let done = run_lines(
        &sb,
        &[
            "--permission-mode",
            "bypassPermissions",
            "--max-in-flight",
            "1",
            "--max-queued",
            "1",
        ],
        &[
            json!({"type": "batch", "id": "big", "calls": calls}),
            json!({"type": "tool_use", "id": "next", "name": "Bash", "input": {"command": "echo next"}}),
        ],
    );
    assert!(done.status.success());
    let ids: Vec<&str> = ["w", "s1", "s2", "s3", "s4", "s5", "s6", "r"].to_vec();
    assert_eq!(done.events("batch_start")[0]["ids"], json!(ids));
    for id in &ids {
        assert_eq!(done.result(id)["outcome"], "success", "{id}");
    }
    assert_eq!(
        std::fs::read_to_string(sb.path("n.txt")).unwrap(),
        "0\n1\n2\n3\n4\n5\n6\n"
    );
    assert!(
        done.result("r")["content"]
            .as_str()
            .unwrap()
            .contains("\t6\n")
    );
    assert_eq!(done.events("batch_end")[0]["ids"], json!(ids));
    assert_eq!(done.result("next")["outcome"], "success");
}

#[test]
fn batch_end_holds_a_place_of_its_own_until_written() {
    let sb = Sandbox::new();
    // The PostToolBatch hook waits (at most a second) for a file the next call makes. With the
    // batch's end holding the only place, that call cannot run before the end is written: the
    // hook times out. Were the place free, the call would run and the hook see its file.
    let settings = sb.write(
        "s.json",
        &json!({"hooks": {"PostToolBatch": [{"hooks": [{"type": "command",
            "command": "until [ -e next-ran ]; do sleep 0.01; done", "timeout": 1}]}]}})
        .to_string(),
    );
    let mut args = vec![
        "--permission-mode",
        "bypassPermissions",
        "--settings",
        settings.to_str().unwrap(),
    ];
    args.extend_from_slice(ONE_PLACE);
    let mut server = sb.serve(&args);
    server.send(json!({"type": "batch", "id": "b", "calls": [
        {"id": "a", "name": "Bash", "input": {"command": "echo a"}}
    ]}));
    let start = server.wait_for("the PostToolBatch hook", Duration::from_secs(10), |v| {
        v["event"] == "hook_start" && v["hook_event"] == "PostToolBatch"
    });
    // A batch's hook belongs to no one call.
    assert_eq!(start.get("tool_use_id"), Some(&serde_json::Value::Null));
    assert_eq!(start["batch"], "b");
    server.tool_use("next", "Bash", json!({"command": "touch next-ran"}));
    let done = server.finish();
    let at = |pred: &dyn Fn(&serde_json::Value) -> bool| {
        done.messages
            .iter()
            .position(pred)
            .unwrap_or_else(|| panic!("missing in {:#?}", done.messages))
    };
    let hook_end = &done.messages[at(&|v| v["event"] == "hook_end")];
    assert_eq!(hook_end["outcome"], "timeout", "{hook_end}");
    assert!(at(&|v| v["event"] == "batch_end") < at(&|v| is_result(v, "next")));
    assert_eq!(done.result("next")["outcome"], "success");
    assert!(sb.path("next-ran").exists());
}

/// A call line of exactly `bytes` bytes: JSON whitespace pads it.
fn padded_line(id: &str, bytes: usize) -> String {
    let head = format!(
        r#"{{"type":"tool_use","id":"{id}","name":"Bash","input":{{"command":"touch {id}"}}"#
    );
    let mut line = String::with_capacity(bytes);
    line.push_str(&head);
    line.push_str(&" ".repeat(bytes - head.len() - 1));
    line.push('}');
    line
}

#[test]
fn the_parked_queue_holds_at_most_64_mib_of_lines() {
    const MIB: usize = 1 << 20;
    let sb = Sandbox::new();
    let mut args = vec!["--allowed-tools", "Bash(touch *)"];
    args.extend_from_slice(ONE_PLACE);
    let mut server = sb.serve(&args);
    // The only place is taken by a call waiting for the client's answer, so a line that does
    // not fit the parked queue is refused as busy rather than waited on.
    server.tool_use(
        "ask",
        "Write",
        json!({"file_path": "asked.txt", "content": "x"}),
    );
    let request = server.wait_for("a permission_request", Duration::from_secs(10), |v| {
        v["type"] == "permission_request"
    });
    // 33 MiB parked; 32 MiB more would make 65: refused; a small line still fits.
    server.send_raw(&padded_line("p1", 33 * MIB));
    server.send_raw(&padded_line("p2", 32 * MIB));
    server.tool_use("p3", "Bash", json!({"command": "touch p3"}));
    let busy = server.wait_for("a busy error", Duration::from_secs(20), |v| {
        v["type"] == "error"
    });
    assert_eq!(busy["code"], "busy", "{busy}");
    assert_eq!(busy["ids"], json!(["p2"]));
    assert_eq!(busy["line"], 3);
    server.send(json!({"type": "permission_response", "request_id": request["request_id"], "behavior": "deny"}));
    let done = server.finish();
    assert_eq!(done.result("ask")["outcome"], "denied");
    assert_eq!(done.result("p1")["outcome"], "success");
    assert_eq!(done.result("p3")["outcome"], "success");
    assert!(done.results("p2").is_empty());
    assert!(sb.path("p1").exists() && sb.path("p3").exists());
    assert!(!sb.path("p2").exists());
    assert_eq!(done.of_type("error").len(), 1);
}

#[test]
fn a_cancel_behind_a_stalled_call_line_is_read_when_reading_resumes() {
    let sb = Sandbox::new();
    // One place and one parked call, nobody waiting for the client: a third call line makes
    // toolrt stop reading until a place frees. The cancel behind it is read then.
    let mut args = vec![
        "--permission-mode",
        "bypassPermissions",
        "--max-parked",
        "1",
    ];
    args.extend_from_slice(ONE_PLACE);
    let mut server = sb.serve(&args);
    let waits_for = |file: &str| json!({"command": format!("timeout 20 sh -c 'until [ -e {file} ]; do sleep 0.01; done'")});
    server.tool_use("first", "Bash", waits_for("go1"));
    server.tool_use("second", "Bash", waits_for("go2"));
    server.tool_use("third", "Bash", json!({"command": "touch third-ran"}));
    server.send(json!({"type": "cancel", "id": "third"}));
    // `first` ends; `second` takes its place; `third` is parked; the cancel is read and answers
    // it while `second` still runs.
    std::fs::write(sb.path("go1"), "").unwrap();
    let third = server.result("third");
    assert_eq!(third["outcome"], "cancelled", "{third}");
    assert!(!server.seen.iter().any(|v| is_result(v, "second")));
    std::fs::write(sb.path("go2"), "").unwrap();
    let done = server.finish();
    let at = |id: &str| done.messages.iter().position(|v| is_result(v, id)).unwrap();
    assert!(
        at("first") < at("third"),
        "the cancel was read before a place freed"
    );
    assert_eq!(done.result("first")["outcome"], "success");
    assert_eq!(done.result("second")["outcome"], "success");
    // The line was accepted, not refused: one result, no error.
    assert!(done.of_type("error").is_empty(), "{:#?}", done.messages);
    assert!(!sb.path("third-ran").exists());
}
