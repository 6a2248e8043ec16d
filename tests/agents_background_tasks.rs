//! Background tasks belong to the agent scope that started them (docs/SEMANTICS.md §10):
//! TaskOutput and TaskStop of a scope see only its own tasks and those of the scopes below it
//! (another scope's task id is answered as an id no task has), the session sees every task,
//! and the end of a scope kills the tasks it started.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

fn settings(sb: &Sandbox) -> String {
    sb.settings_file(&json!({
        "permissions": {"allow": ["Bash"]},
        "agents": {
            "a": {},
            "ro": {"tools": ["TaskOutput", "TaskStop"], "permissions": {"deny": ["Bash"]}}
        }
    }))
}

fn serve(sb: &Sandbox) -> Server {
    let settings = settings(sb);
    sb.serve(&[
        "--settings",
        &settings,
        "--permission-prompt",
        "none",
        "--permission-mode",
        "bypassPermissions",
    ])
}

fn start(server: &mut Server, id: &str, ty: &str, parent: Option<&str>) {
    let mut msg = json!({"type": "agent_start", "agent_id": id, "agent_type": ty});
    if let Some(p) = parent {
        msg["parent"] = json!(p);
    }
    server.send(msg);
    server.take_for(
        &format!("agent_started {id}"),
        Duration::from_secs(20),
        |v| v["event"] == "agent_started" && v["agent_id"] == id,
    );
}

fn end(server: &mut Server, id: &str) {
    server.send(json!({"type": "agent_end", "agent_id": id}));
    server.take_for(&format!("agent_ended {id}"), Duration::from_secs(20), |v| {
        v["event"] == "agent_ended" && v["agent_id"] == id
    });
}

/// One call, from `agent` (None: the session), and its result.
fn call(server: &mut Server, id: &str, name: &str, input: Value, agent: Option<&str>) -> Value {
    let mut msg = json!({"type": "tool_use", "id": id, "name": name, "input": input});
    if let Some(a) = agent {
        msg["agent_id"] = json!(a);
    }
    server.send(msg);
    server.result(id)
}

fn content(r: &Value) -> String {
    r["content"].as_str().unwrap_or_default().to_string()
}

/// A background command writing its sleeping child's pid to `pidfile` and a marker; returns
/// the task id and the pid.
fn background(
    server: &mut Server,
    sb: &Sandbox,
    id: &str,
    marker: &str,
    agent: Option<&str>,
) -> (String, u32) {
    let pidfile = sb.dir.path().join(format!("{id}.pid"));
    let cmd = format!(
        "echo {marker}; sleep 37 & echo $! > {}; wait",
        pidfile.display()
    );
    let r = call(
        server,
        id,
        "Bash",
        json!({"command": cmd, "run_in_background": true}),
        agent,
    );
    assert_eq!(r["outcome"], "success", "{r}");
    let text = content(&r);
    let task = text
        .split_whitespace()
        .find(|w| w.starts_with("bg-"))
        .map(|w| w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-'))
        .unwrap_or_else(|| panic!("no task id in {r}"))
        .to_string();
    (task, read_pid(&pidfile))
}

fn output(server: &mut Server, id: &str, task: &str, agent: Option<&str>) -> Value {
    call(
        server,
        id,
        "TaskOutput",
        json!({"task_id": task, "block": false}),
        agent,
    )
}

#[test]
fn a_sibling_can_neither_read_nor_stop_a_task_and_its_id_looks_unknown() {
    let sb = Sandbox::new();
    let mut server = serve(&sb);
    start(&mut server, "A", "a", None);
    start(&mut server, "B", "ro", None);
    let (task, pid) = background(&mut server, &sb, "bg", "SECRET-OUT", Some("A"));

    let seen = output(&mut server, "to", &task, Some("B"));
    assert_eq!(seen["outcome"], "validation_error", "{seen}");
    assert!(!content(&seen).contains("SECRET-OUT"), "{seen}");
    // Exactly what an id no task has gets.
    let ghost = output(&mut server, "to-ghost", "bg-999", Some("B"));
    assert_eq!(seen["outcome"], ghost["outcome"], "{seen} vs {ghost}");
    assert_eq!(
        content(&seen).replace(&task, "ID"),
        content(&ghost).replace("bg-999", "ID"),
        "{seen} vs {ghost}"
    );

    let stop = call(
        &mut server,
        "ts",
        "TaskStop",
        json!({"task_id": task}),
        Some("B"),
    );
    assert_eq!(stop["outcome"], "validation_error", "{stop}");
    assert!(!process_gone(pid), "a sibling's TaskStop killed {pid}");

    // The owner still reads it.
    let own = output(&mut server, "to-own", &task, Some("A"));
    assert_eq!(own["outcome"], "success", "{own}");
    assert!(content(&own).contains("SECRET-OUT"), "{own}");

    // A child of A does not see its parent's task either.
    start(&mut server, "A-kid", "ro", Some("A"));
    let kid = output(&mut server, "to-kid", &task, Some("A-kid"));
    assert_eq!(kid["outcome"], "validation_error", "{kid}");
    assert!(!content(&kid).contains("SECRET-OUT"), "{kid}");
    drop(server);
}

#[test]
fn a_parent_and_the_session_manage_a_childs_task() {
    let sb = Sandbox::new();
    let mut server = serve(&sb);
    start(&mut server, "P", "a", None);
    start(&mut server, "C", "a", Some("P"));
    start(&mut server, "G", "a", Some("C"));
    let (task, pid) = background(&mut server, &sb, "bg", "CHILD-OUT", Some("G"));

    for (id, agent) in [("to-c", Some("C")), ("to-p", Some("P")), ("to-s", None)] {
        let r = output(&mut server, id, &task, agent);
        assert_eq!(r["outcome"], "success", "{agent:?}: {r}");
        assert!(content(&r).contains("CHILD-OUT"), "{agent:?}: {r}");
    }
    let stop = call(
        &mut server,
        "ts",
        "TaskStop",
        json!({"task_id": task}),
        Some("P"),
    );
    assert_eq!(stop["outcome"], "success", "{stop}");
    assert!(
        wait_gone_within(pid, Duration::from_secs(5)),
        "{pid} outlived the parent's TaskStop"
    );
}

#[test]
fn agent_end_kills_the_tasks_of_the_ended_scopes_and_no_others() {
    let sb = Sandbox::new();
    let mut server = serve(&sb);
    start(&mut server, "A", "a", None);
    start(&mut server, "A-kid", "a", Some("A"));
    start(&mut server, "S", "a", None);
    let (a_task, a_pid) = background(&mut server, &sb, "bg-a", "A-OUT", Some("A"));
    let (_, kid_pid) = background(&mut server, &sb, "bg-kid", "KID-OUT", Some("A-kid"));
    let (_, s_pid) = background(&mut server, &sb, "bg-s", "S-OUT", Some("S"));
    let (session_task, session_pid) = background(&mut server, &sb, "bg-0", "SESSION-OUT", None);

    end(&mut server, "A");
    assert!(
        wait_gone_within(a_pid, Duration::from_secs(5)),
        "the ended agent's task {a_pid} kept running"
    );
    assert!(
        wait_gone_within(kid_pid, Duration::from_secs(5)),
        "the ended agent's child's task {kid_pid} kept running"
    );
    assert!(!process_gone(s_pid), "another agent's task died with A");
    assert!(!process_gone(session_pid), "the session's task died with A");

    // The session still sees them all: the ended agent's as killed, its own as running.
    let r = call(
        &mut server,
        "to-a",
        "TaskOutput",
        json!({"task_id": a_task, "timeout": 5000}),
        None,
    );
    assert!(content(&r).contains("status: killed"), "{r}");
    let r = output(&mut server, "to-0", &session_task, None);
    assert_eq!(r["outcome"], "success", "{r}");
    assert!(
        content(&r).contains("status: running") && content(&r).contains("SESSION-OUT"),
        "{r}"
    );
    // A session-level task is not any agent's.
    let r = output(&mut server, "to-0-s", &session_task, Some("S"));
    assert_eq!(r["outcome"], "validation_error", "{r}");

    let stop = call(
        &mut server,
        "ts",
        "TaskStop",
        json!({"task_id": session_task}),
        None,
    );
    assert_eq!(stop["outcome"], "success", "{stop}");
    assert!(wait_gone_within(session_pid, Duration::from_secs(5)));
    let finished = server.finish();
    assert!(finished.status.success(), "{}", finished.stderr);
    assert!(wait_gone_within(s_pid, Duration::from_secs(5)));
}

#[test]
fn cancelling_the_agent_call_kills_its_subagents_tasks_and_a_sibling_agent_s_stay() {
    let sb = Sandbox::new();
    let mut server = serve(&sb);
    start(&mut server, "S", "a", None);
    let (_, s_pid) = background(&mut server, &sb, "bg-s", "S-OUT", Some("S"));
    // The session's Agent call opens agent-1, which starts a task, and a child below it too.
    server.tool_use(
        "d1",
        "Agent",
        json!({"description": "a", "prompt": "work", "subagent_type": "a"}),
    );
    let execute = support::client::execute_of(&mut server, "d1");
    let sub = execute["agent_id"].as_str().expect("agent_id").to_string();
    let (_, sub_pid) = background(&mut server, &sb, "bg-sub", "SUB-OUT", Some(&sub));
    start(&mut server, "sub-kid", "a", Some(&sub));
    let (_, kid_pid) = background(&mut server, &sb, "bg-kid", "KID-OUT", Some("sub-kid"));

    server.send(json!({"type": "cancel", "id": "d1"}));
    assert_eq!(server.result("d1")["outcome"], "cancelled");
    for pid in [sub_pid, kid_pid] {
        assert!(
            wait_gone_within(pid, Duration::from_secs(5)),
            "a task of the cancelled Agent call's scopes ({pid}) kept running"
        );
    }
    assert!(!process_gone(s_pid), "another agent's task died");
}
