//! A call in an agent scope is validated within the scope's rights: its tool's own validation
//! (which looks at files) sees every level's rules, and a tool outside the scope's selection is
//! `unavailable` before it looks at anything, so neither answer tells the agent what a file it
//! may not read holds, or whether it exists.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

fn start(server: &mut Server, agent: &str, agent_type: &str) {
    server.send(json!({"type": "agent_start", "agent_id": agent, "agent_type": agent_type}));
    server.take_for("agent_started", Duration::from_secs(20), |v| {
        v["type"] == "event" && v["event"] == "agent_started" && v["agent_id"] == agent
    });
}

fn scoped(server: &mut Server, id: &str, agent: &str, name: &str, input: Value) -> Value {
    server.send(
        json!({"type": "tool_use", "id": id, "name": name, "input": input, "agent_id": agent}),
    );
    server.result(id)
}

/// Edit guesses at a file the agent type's Read deny hides: the right guess, a wrong one and a
/// file that does not exist all answer `denied` (before, a wrong guess answered "not found").
#[test]
fn an_edit_in_a_scope_tells_nothing_of_a_file_its_rules_deny() {
    let sb = Sandbox::new();
    sb.write("secret/file.txt", "SECRET\n");
    let settings = sb.settings_file(&json!({
        "tools": {"requireReadBeforeEdit": false},
        "permissions": {"allow": ["Edit(./**)"]},
        "agents": {"sub": {"permissions": {"deny": ["Read(./secret/**)"]}}}
    }));
    let mut server = sb.serve(&["--settings", &settings]);
    start(&mut server, "s", "sub");
    let guesses = [
        ("right", "secret/file.txt", "SECRET"),
        ("wrong", "secret/file.txt", "guess"),
        ("missing", "secret/none.txt", "guess"),
    ];
    for (id, file, old) in guesses {
        let input = json!({"file_path": file, "old_string": old, "new_string": "x"});
        let r = scoped(&mut server, id, "s", "Edit", input);
        assert_eq!(r["outcome"], "denied", "{id}: {r}");
    }
    assert_eq!(
        std::fs::read_to_string(sb.path("secret/file.txt")).unwrap(),
        "SECRET\n"
    );
    // The session has no such rule: its Edit is validated as always.
    server.tool_use(
        "session",
        "Edit",
        json!({"file_path": "secret/file.txt", "old_string": "guess", "new_string": "x"}),
    );
    let r = server.result("session");
    assert_eq!(r["outcome"], "validation_error", "{r}");
}

/// An agent whose tools are ["Read"] calls Write and Edit: `unavailable`, whatever the file
/// (before, validation answered "has not been read" or "not found" about it).
#[test]
fn a_tool_outside_the_scopes_selection_looks_at_no_file() {
    let sb = Sandbox::new();
    sb.write("there.txt", "hello\n");
    let settings = sb.settings_file(&json!({"agents": {"reader": {"tools": ["Read"]}}}));
    let mut server = sb.serve(&["--settings", &settings, "--permission-mode", "acceptEdits"]);
    start(&mut server, "r", "reader");
    let calls = [
        (
            "w-there",
            "Write",
            json!({"file_path": "there.txt", "content": "x"}),
        ),
        (
            "e-there",
            "Edit",
            json!({"file_path": "there.txt", "old_string": "no", "new_string": "x"}),
        ),
        (
            "e-none",
            "Edit",
            json!({"file_path": "none.txt", "old_string": "no", "new_string": "x"}),
        ),
    ];
    for (id, name, input) in calls {
        let r = scoped(&mut server, id, "r", name, input);
        assert_eq!(r["outcome"], "unavailable", "{id}: {r}");
    }
    assert_eq!(
        std::fs::read_to_string(sb.path("there.txt")).unwrap(),
        "hello\n"
    );
}
