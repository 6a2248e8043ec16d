//! Each agent scope has its own read-before-edit state and checkpoints: a file one agent read
//! does not count as read for another agent or for the session, and the reverse; calls without
//! `agent_id` keep the session's state; an ended scope's state is gone (a new agent with the
//! same id reads again); a rewind undoes only the named call's agent's later changes.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

const WAIT: Duration = Duration::from_secs(20);

fn event(server: &mut Server, name: &str) -> Value {
    server.take_for(name, WAIT, |v| v["type"] == "event" && v["event"] == name)
}

fn start(server: &mut Server, agent: &str) {
    server.send(json!({"type": "agent_start", "agent_id": agent, "agent_type": "worker"}));
    let started = event(server, "agent_started");
    assert_eq!(started["agent_id"], agent, "{started}");
}

/// One call, in `agent`'s scope (`None`: the session's); its result.
fn call(server: &mut Server, id: &str, agent: Option<&str>, name: &str, input: Value) -> Value {
    let mut line = json!({"type": "tool_use", "id": id, "name": name, "input": input});
    if let Some(agent) = agent {
        line["agent_id"] = json!(agent);
    }
    server.send(line);
    server.result(id)
}

fn read(server: &mut Server, id: &str, agent: Option<&str>, file: &str) {
    let r = call(server, id, agent, "Read", json!({"file_path": file}));
    assert_eq!(r["outcome"], "success", "{r}");
}

fn edit(server: &mut Server, id: &str, agent: Option<&str>, file: &str) -> Value {
    let input = json!({"file_path": file, "old_string": "one", "new_string": id});
    call(server, id, agent, "Edit", input)
}

/// The answer of an Edit refused because its caller has not read the file.
fn assert_unread(r: &Value) {
    assert_eq!(r["outcome"], "validation_error", "{r}");
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .contains("has not been read in this session. Read it first"),
        "{r}"
    );
}

fn serve(sb: &Sandbox) -> Server {
    sb.serve(&["--permission-mode", "acceptEdits"])
}

#[test]
fn a_read_counts_only_in_the_scope_that_made_it() {
    let sb = Sandbox::new();
    for f in ["a.txt", "b.txt", "c.txt", "d.txt"] {
        sb.write(f, "one\n");
    }
    let mut s = serve(&sb);
    start(&mut s, "A");
    start(&mut s, "B");

    // (reader, editor, file, the edit runs)
    let rows = [
        (Some("A"), Some("B"), "a.txt", false),
        (Some("A"), None, "b.txt", false),
        (None, Some("A"), "c.txt", false),
        (Some("A"), Some("A"), "a.txt", true),
        (None, None, "d.txt", true),
    ];
    for (i, (reader, editor, file, runs)) in rows.into_iter().enumerate() {
        read(&mut s, &format!("r{i}"), reader, file);
        let r = edit(&mut s, &format!("e{i}"), editor, file);
        if runs {
            assert_eq!(
                r["outcome"], "success",
                "{reader:?} read, {editor:?} edits: {r}"
            );
        } else {
            assert_unread(&r);
        }
    }
    assert_eq!(std::fs::read_to_string(sb.path("a.txt")).unwrap(), "e3\n");
    assert_eq!(std::fs::read_to_string(sb.path("b.txt")).unwrap(), "one\n");
    // A Write over an existing file follows the same rule.
    let w = call(
        &mut s,
        "w",
        Some("B"),
        "Write",
        json!({"file_path": "d.txt", "content": "x"}),
    );
    assert_unread(&w);
    s.finish();
}

#[test]
fn an_ended_scopes_state_is_gone_and_its_id_starts_afresh() {
    let sb = Sandbox::new();
    sb.write("f.txt", "one\n");
    let mut s = serve(&sb);
    start(&mut s, "A");
    read(&mut s, "r1", Some("A"), "f.txt");
    s.send(json!({"type": "agent_end", "agent_id": "A"}));
    event(&mut s, "agent_ended");
    start(&mut s, "A");
    assert_unread(&edit(&mut s, "e1", Some("A"), "f.txt"));
    read(&mut s, "r2", Some("A"), "f.txt");
    let r = edit(&mut s, "e2", Some("A"), "f.txt");
    assert_eq!(r["outcome"], "success", "{r}");
    s.finish();
}

#[test]
fn a_rewind_undoes_its_own_agents_later_changes_only() {
    let sb = Sandbox::new();
    let mut s = serve(&sb);
    start(&mut s, "A");
    let write = |s: &mut Server, id: &str, agent: Option<&str>, file: &str| {
        let r = call(
            s,
            id,
            agent,
            "Write",
            json!({"file_path": file, "content": id}),
        );
        assert_eq!(r["outcome"], "success", "{r}");
    };
    write(&mut s, "a1", Some("A"), "a1.txt");
    write(&mut s, "s1", None, "s1.txt");
    write(&mut s, "a2", Some("A"), "a2.txt");

    s.send(json!({"type": "rewind", "to": "a1"}));
    let ev = event(&mut s, "rewound");
    let files: Vec<&str> = ev["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    let want = [sb.path("a1.txt"), sb.path("a2.txt")].map(|p| p.display().to_string());
    assert_eq!(
        files, want,
        "A's calls from a1 on, not the session's s1: {ev}"
    );
    assert!(!sb.path("a1.txt").exists() && !sb.path("a2.txt").exists());
    assert!(sb.path("s1.txt").exists(), "the session's change stays");

    // An ended agent's checkpoints are gone with it.
    write(&mut s, "a3", Some("A"), "a3.txt");
    s.send(json!({"type": "agent_end", "agent_id": "A"}));
    event(&mut s, "agent_ended");
    s.send(json!({"type": "rewind", "to": "a3"}));
    let err = s.take_for("error", WAIT, |v| v["type"] == "error");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("an agent that has ended"),
        "{err}"
    );
    assert!(sb.path("a3.txt").exists());
    s.send(json!({"type": "rewind", "to": "s1"}));
    event(&mut s, "rewound");
    assert!(
        !sb.path("s1.txt").exists(),
        "the session's own rewind still works"
    );
    s.finish();
}
