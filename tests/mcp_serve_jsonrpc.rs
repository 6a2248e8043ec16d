//! `toolrt mcp-serve` at the JSON-RPC level, raw lines on its stdin: unknown methods answer
//! -32601 at once, a message of the wrong shape -32600, a line that is not JSON is ignored,
//! and none of them stops the server.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Sandbox, Server};

fn start(sb: &Sandbox) -> Server {
    let args: Vec<String> = [
        "mcp-serve",
        "--cwd",
        sb.cwd.to_str().unwrap(),
        "--output-dir",
        sb.out.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Server::start(&args, &sb.cwd)
}

fn response(server: &mut Server, id: i64) -> Value {
    server.wait_for(&format!("response {id}"), Duration::from_secs(30), |v| {
        v["id"] == json!(id)
    })
}

#[test]
fn bad_requests_get_their_errors_and_the_server_goes_on() {
    let sb = Sandbox::new();
    let mut server = start(&sb);
    server.send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    }));
    let init = response(&mut server, 1);
    assert_eq!(init["result"]["serverInfo"]["name"], "toolrt", "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "no/such/method"}));
    assert_eq!(response(&mut server, 2)["error"]["code"], -32601);
    server.send(json!({"jsonrpc": "2.0", "id": 3, "method": "prompts/list"}));
    assert_eq!(response(&mut server, 3)["error"]["code"], -32601);
    server.send_raw("this is not json {");
    server.send_raw(
        r#"{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": "not an object"}"#,
    );
    let invalid = server.wait_for("an invalid-request error", Duration::from_secs(30), |v| {
        v["error"]["code"] == json!(-32600)
    });
    assert!(invalid["error"]["message"].is_string(), "{invalid}");

    // A tools/call whose params are wrong: -32602, saying what is wrong.
    server.send(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call"}));
    let missing = response(&mut server, 6);
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("params are missing"),
        "{missing}"
    );
    server.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "Read", "arguments": "file_path=/etc/hostname"}}));
    let string = response(&mut server, 7);
    assert_eq!(string["error"]["code"], -32602, "{string}");
    assert!(
        string["error"]["message"]
            .as_str()
            .unwrap()
            .contains("params.arguments must be an object, not a string"),
        "{string}"
    );

    server.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}));
    let list = response(&mut server, 5);
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"Read") && names.contains(&"Bash"), "{list}");
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
}

#[test]
fn closing_stdin_cancels_a_running_call_at_once_and_answers_it() {
    let sb = Sandbox::new();
    let args: Vec<String> = [
        "mcp-serve",
        "--cwd",
        sb.cwd.to_str().unwrap(),
        "--output-dir",
        sb.out.to_str().unwrap(),
        "--permission-mode",
        "bypassPermissions",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut server = Server::start(&args, &sb.cwd);
    server.send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    }));
    response(&mut server, 1);
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let started = sb.path("started");
    let command = format!("touch {}; sleep 60", started.display());
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "Bash", "arguments": {"command": command}}}));
    support::wait_file(&started);
    // EOF: the call is cancelled then, so its answer is written before toolrt exits (rmcp
    // would otherwise give up draining after 5 s and write none).
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let answer = done
        .messages
        .iter()
        .find(|v| v["id"] == json!(2))
        .unwrap_or_else(|| panic!("no answer to the running call: {:#?}", done.messages));
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["_meta"]["toolrt/outcome"], "cancelled",
        "{answer}"
    );
}
