//! A model-API turn (`anthropic_message`, `openai_chat_message`, `openai_responses_items`) may
//! carry `agent_id`: every call of the turn is then made in that agent's scope, exactly as a
//! native `batch` with `agent_id` — the scope's narrowed tools and rules apply, an agent that is
//! not alive gets each call denied, and a malformed `agent_id` refuses the line.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::client::error_with;
use support::*;

const WAIT: Duration = Duration::from_secs(30);

/// The session may run `echo`; a `reader` may use Bash and Read only (it inherits the rules).
fn serve(sb: &Sandbox) -> Server {
    let settings = sb.settings_file(&json!({
        "permissions": {"allow": ["Bash(echo *)"]},
        "agents": {"reader": {"tools": ["Read", "Bash"]}}
    }));
    let mut server = sb.serve(&["--settings", &settings, "--permission-prompt", "none"]);
    server.send(json!({"type": "agent_start", "agent_id": "r1", "agent_type": "reader"}));
    server.wait_for("agent_started", WAIT, |v| {
        v["event"] == "agent_started" && v["agent_id"] == "r1"
    });
    server
}

/// The answer to turn `id`.
fn answer(server: &mut Server, kind: &str, id: &str) -> Value {
    server.wait_for(&format!("{kind} {id}"), WAIT, |v| {
        v["type"] == kind && v["id"] == id
    })
}

/// The outcome of each call of the answer to turn `id`, by call id.
fn outcomes(server: &mut Server, kind: &str, id: &str) -> Vec<(String, String)> {
    let answer = answer(server, kind, id);
    answer["outcomes"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|o| {
            (
                o["id"].as_str().unwrap().into(),
                o["outcome"].as_str().unwrap().into(),
            )
        })
        .collect()
}

fn pairs(want: &[(&str, &str)]) -> Vec<(String, String)> {
    want.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn anthropic(id: &str, agent: Option<&str>) -> Value {
    let mut line = json!({"type": "anthropic_message", "id": id, "message": {"role": "assistant", "content": [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": format!("{id}-echo"), "name": "Bash", "input": {"command": "echo hi"}},
        {"type": "tool_use", "id": format!("{id}-write"), "name": "Write", "input": {"file_path": "w.txt", "content": "x"}}
    ]}});
    if let Some(agent) = agent {
        line["agent_id"] = json!(agent);
    }
    line
}

#[test]
fn each_formats_turn_runs_in_the_named_agents_scope() {
    let sb = Sandbox::new();
    let mut server = serve(&sb);
    server.send(anthropic("a1", Some("r1")));
    // Write is not among the reader's tools: it does not exist for the agent.
    assert_eq!(
        outcomes(&mut server, "anthropic_results", "a1"),
        pairs(&[("a1-echo", "success"), ("a1-write", "unavailable")])
    );
    let write = json!({"file_path": "w.txt", "content": "x"}).to_string();
    server.send(json!({"type": "openai_chat_message", "id": "c1", "agent_id": "r1", "message": {
        "role": "assistant", "content": null, "tool_calls": [
            {"id": "c1-write", "type": "function", "function": {"name": "Write", "arguments": write}},
            {"id": "c1-echo", "type": "function", "function": {"name": "Bash", "arguments": "{\"command\":\"echo hi\"}"}}
        ]}}));
    assert_eq!(
        outcomes(&mut server, "openai_chat_results", "c1"),
        pairs(&[("c1-write", "unavailable"), ("c1-echo", "success")])
    );
    server.send(
        json!({"type": "openai_responses_items", "id": "r1", "agent_id": "r1", "items": [
            {"type": "function_call", "call_id": "r1-write", "name": "Write", "arguments": write}
        ]}),
    );
    assert_eq!(
        outcomes(&mut server, "openai_responses_results", "r1"),
        pairs(&[("r1-write", "unavailable")])
    );
    // The same turn without `agent_id` is the session's: Write exists (and, unasked, is denied).
    server.send(anthropic("s1", None));
    assert_eq!(
        outcomes(&mut server, "anthropic_results", "s1"),
        pairs(&[("s1-echo", "success"), ("s1-write", "denied")])
    );
    assert!(!sb.path("w.txt").exists());
    let unavailable = &answer(&mut server, "anthropic_results", "a1")["message"]["content"][1];
    assert!(
        unavailable["content"]
            .as_str()
            .unwrap()
            .contains("No such tool available to agent \"r1\""),
        "{unavailable}"
    );
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
}

#[test]
fn a_turn_of_an_agent_that_is_not_alive_is_denied_and_a_bad_agent_id_refused() {
    let sb = Sandbox::new();
    let mut server = serve(&sb);
    server.send(json!({"type": "agent_end", "agent_id": "r1"}));
    server.wait_for("agent_ended", WAIT, |v| v["event"] == "agent_ended");
    server.send(anthropic("a1", Some("r1")));
    assert_eq!(
        outcomes(&mut server, "anthropic_results", "a1"),
        pairs(&[("a1-echo", "denied"), ("a1-write", "denied")])
    );
    let denied = &answer(&mut server, "anthropic_results", "a1")["message"]["content"][0];
    assert_eq!(denied["is_error"], true, "{denied}");
    assert!(
        denied["content"]
            .as_str()
            .unwrap()
            .contains("agent \"r1\", which is unknown"),
        "{denied}"
    );
    let mut line = anthropic("a2", None);
    line["agent_id"] = json!(7);
    server.send(line);
    error_with(
        &mut server,
        "anthropic_message: field `agent_id`: expected a string, got integer",
    );
    server.send(json!({"type": "openai_responses_items", "id": "r2", "agent_id": "", "items": []}));
    error_with(&mut server, "openai_responses_items: field `agent_id`");
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(
        done.of_type("anthropic_results")
            .iter()
            .all(|a| a["id"] != "a2"),
        "a refused line runs nothing"
    );
}
