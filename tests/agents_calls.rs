//! Calls made in an agent scope (`agent_id`) are decided with the scope's narrowed rights: an
//! unknown agent's call is denied naming it, a tool outside the type's tools is unavailable, a
//! parent's deny holds and a child-only allow does not apply; the result, the client's
//! `execute` and the hooks' input say whose call it was. The `Agent` tool (alias `Task`) opens a
//! child scope and has the orchestrator run the subagent through `execute`.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::client::{answer, execute_of, register, tool};
use support::*;

fn event(server: &mut Server, name: &str, pred: impl Fn(&Value) -> bool) -> Value {
    server.take_for(name, Duration::from_secs(20), |v| {
        v["type"] == "event" && v["event"] == name && pred(v)
    })
}

fn scoped(server: &mut Server, id: &str, agent: &str, name: &str, input: Value) {
    server.send(
        json!({"type": "tool_use", "id": id, "name": name, "input": input, "agent_id": agent}),
    );
}

#[test]
fn a_scoped_call_has_its_agents_narrowed_rights() {
    let sb = Sandbox::new();
    sb.write("notes.txt", "hello\n");
    let log = sb.dir.path().join("pre.jsonl");
    let settings = sb.settings_file(&json!({
        "permissions": {"allow": ["Bash(echo *)", "Lookup"], "deny": ["Bash(rm *)"]},
        "agents": {"tester": {"tools": ["Read", "Bash", "Lookup"],
                              "permissions": {"allow": ["Bash(touch *)", "Bash(echo *)", "Lookup"]}}},
        "hooks": {"PreToolUse": [{"hooks": [{"type": "command",
            "command": format!("cat >> '{}'; echo >> '{}'", log.display(), log.display())}]}]}
    }));
    let mut server = sb.serve(&["--settings", &settings]);
    register(&mut server, json!([tool("Lookup", json!({}))]));
    server.send(json!({"type": "agent_start", "agent_id": "t1", "agent_type": "tester"}));
    event(&mut server, "agent_started", |_| true);

    scoped(
        &mut server,
        "ok",
        "t1",
        "Bash",
        json!({"command": "echo hi"}),
    );
    let ok = server.result("ok");
    assert_eq!(
        (ok["outcome"].as_str(), ok["agent_id"].as_str()),
        (Some("success"), Some("t1")),
        "{ok}"
    );
    scoped(
        &mut server,
        "unknown",
        "ghost",
        "Read",
        json!({"file_path": "notes.txt"}),
    );
    let unknown = server.result("unknown");
    assert_eq!(unknown["outcome"], "denied", "{unknown}");
    assert!(
        unknown["content"]
            .as_str()
            .unwrap()
            .contains("agent \"ghost\", which is unknown"),
        "{unknown}"
    );
    scoped(
        &mut server,
        "absent",
        "t1",
        "Write",
        json!({"file_path": "x", "content": "y"}),
    );
    let absent = server.result("absent");
    assert_eq!(absent["outcome"], "unavailable", "{absent}");
    assert!(
        absent["content"].as_str().unwrap().contains("agent \"t1\""),
        "{absent}"
    );
    scoped(
        &mut server,
        "rm",
        "t1",
        "Bash",
        json!({"command": "rm -rf build"}),
    );
    let rm = server.result("rm");
    assert_eq!(rm["outcome"], "denied", "{rm}");
    assert!(
        rm["content"]
            .as_str()
            .unwrap()
            .contains("the session's rules"),
        "{rm}"
    );
    // Only the tester allows touch; the session would ask, so the call asks.
    scoped(
        &mut server,
        "touch",
        "t1",
        "Bash",
        json!({"command": "touch made"}),
    );
    let ask = server.take_for("permission_request", Duration::from_secs(20), |v| {
        v["type"] == "permission_request" && v["tool_use_id"] == "touch"
    });
    assert!(
        ask["reason"]
            .as_str()
            .unwrap()
            .contains("the session's rules"),
        "{ask}"
    );
    server.send(
        json!({"type": "permission_response", "request_id": ask["request_id"], "behavior": "deny"}),
    );
    assert_eq!(server.result("touch")["outcome"], "denied");
    assert!(!sb.path("made").exists());
    // A client tool's execute says whose call it is.
    scoped(&mut server, "look", "t1", "Lookup", json!({"q": "x"}));
    let execute = execute_of(&mut server, "look");
    assert_eq!(execute["agent_id"], "t1", "{execute}");
    answer(&mut server, &execute, json!("found"));
    assert_eq!(server.result("look")["agent_id"], "t1");
    // After agent_end the agent is unknown.
    server.send(json!({"type": "agent_end", "agent_id": "t1"}));
    event(&mut server, "agent_ended", |_| true);
    scoped(
        &mut server,
        "late",
        "t1",
        "Bash",
        json!({"command": "echo late"}),
    );
    assert_eq!(server.result("late")["outcome"], "denied");
    // A call of the session itself is untouched.
    server.tool_use("own", "Bash", json!({"command": "echo own"}));
    let own = server.result("own");
    assert_eq!(own["outcome"], "success");
    assert!(own.get("agent_id").is_none(), "{own}");
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);

    let seen: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |id: &str| seen.iter().find(|v| v["tool_use_id"] == id).cloned();
    let hooked = of("ok").expect("the PreToolUse hook saw the scoped call");
    assert_eq!(
        (hooked["agent_id"].as_str(), hooked["agent_type"].as_str()),
        (Some("t1"), Some("tester"))
    );
    let own = of("own").expect("the PreToolUse hook saw the session's call");
    assert!(
        own.get("agent_id").is_none() && own.get("agent_type").is_none(),
        "{own}"
    );
    assert!(
        of("unknown").is_none() && of("absent").is_none(),
        "refused before hooks"
    );
}

#[test]
fn the_agent_tool_opens_a_child_scope_the_orchestrator_runs() {
    let sb = Sandbox::new();
    let settings = sb.settings_file(&json!({
        "permissions": {"allow": ["Bash(echo *)"], "deny": ["Agent(deployer)"]},
        "agents": {"lead": {"tools": ["Bash", "Agent"]}, "helper": {"tools": ["Bash"]}}
    }));
    let mut server = sb.serve(&["--settings", &settings]);
    server.tool_use(
        "a1",
        "Agent",
        json!({"description": "lead", "prompt": "plan it", "subagent_type": "lead"}),
    );
    let execute = execute_of(&mut server, "a1");
    assert_eq!(execute["name"], "Agent");
    assert_eq!(execute["input"]["prompt"], "plan it");
    let lead = execute["agent_id"]
        .as_str()
        .expect("the execute names the new agent")
        .to_string();
    let started = event(&mut server, "agent_started", |v| {
        v["agent_id"] == lead.as_str()
    });
    assert_eq!(
        (started["parent"].clone(), started["depth"].clone()),
        (Value::Null, json!(1))
    );
    // The lead delegates in turn (through the alias), two levels deep.
    scoped(
        &mut server,
        "a2",
        &lead,
        "Task",
        json!({"description": "help", "prompt": "echo", "subagent_type": "helper"}),
    );
    let nested = execute_of(&mut server, "a2");
    let helper = nested["agent_id"].as_str().unwrap().to_string();
    let started = event(&mut server, "agent_started", |v| {
        v["agent_id"] == helper.as_str()
    });
    assert_eq!(
        (started["parent"].as_str(), started["depth"].as_u64()),
        (Some(lead.as_str()), Some(2))
    );
    scoped(
        &mut server,
        "h1",
        &helper,
        "Bash",
        json!({"command": "echo from the helper"}),
    );
    assert_eq!(server.result("h1")["outcome"], "success");
    scoped(
        &mut server,
        "h2",
        &helper,
        "Agent",
        json!({"description": "x", "prompt": "x", "subagent_type": "lead"}),
    );
    assert_eq!(
        server.result("h2")["outcome"],
        "unavailable",
        "the helper has no Agent tool"
    );
    answer(&mut server, &nested, json!("helped"));
    let r = server.result("a2");
    assert_eq!(
        (
            r["outcome"].as_str(),
            r["content"].as_str(),
            r["agent_id"].as_str()
        ),
        (Some("success"), Some("helped"), Some(lead.as_str()))
    );
    // The helper's scope ended with its Agent call.
    event(&mut server, "agent_ended", |v| {
        v["agent_id"] == helper.as_str()
    });
    scoped(
        &mut server,
        "h3",
        &helper,
        "Bash",
        json!({"command": "echo gone"}),
    );
    assert_eq!(server.result("h3")["outcome"], "denied");
    // Agent(<type>) rules apply to the call.
    server.tool_use(
        "d1",
        "Agent",
        json!({"description": "x", "prompt": "x", "subagent_type": "deployer"}),
    );
    assert_eq!(server.result("d1")["outcome"], "denied");
    answer(&mut server, &execute, json!("planned"));
    assert_eq!(server.result("a1")["content"], "planned");
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
    // The lead's scope ended with its call (the helper's event was taken above).
    let ended = done.events("agent_ended");
    assert_eq!(ended.len(), 1, "{:#?}", done.messages);
    assert_eq!(ended[0]["ended"], json!([lead]));
}

#[test]
fn cancelling_an_agent_call_ends_its_scope() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&[]);
    server.tool_use(
        "a1",
        "Agent",
        json!({"description": "x", "prompt": "x", "subagent_type": "any"}),
    );
    let execute = execute_of(&mut server, "a1");
    let agent = execute["agent_id"].as_str().unwrap().to_string();
    server.send(json!({"type": "cancel", "id": "a1"}));
    let cancelled = server.result("a1");
    assert_eq!(cancelled["outcome"], "cancelled", "{cancelled}");
    server.take_for("execute_cancel", Duration::from_secs(20), |v| {
        v["type"] == "execute_cancel" && v["request_id"] == execute["request_id"]
    });
    event(&mut server, "agent_ended", |v| {
        v["agent_id"] == agent.as_str()
    });
    scoped(
        &mut server,
        "after",
        &agent,
        "Read",
        json!({"file_path": "x"}),
    );
    assert_eq!(server.result("after")["outcome"], "denied");
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
}

#[test]
fn a_scopes_read_deny_hides_files_from_its_glob_and_grep_and_its_childrens() {
    let sb = Sandbox::new();
    sb.write("open.txt", "needle open\n");
    sb.write("secret/key.txt", "needle SECRET\n");
    let settings = sb.settings_file(&json!({
        "agents": {"reader": {"permissions": {"deny": ["Read(secret/**)"]}},
                   "helper": {}}
    }));
    let mut server = sb.serve(&["--settings", &settings]);
    server.send(json!({"type": "agent_start", "agent_id": "r", "agent_type": "reader"}));
    event(&mut server, "agent_started", |v| v["agent_id"] == "r");
    // A child without rules of its own keeps its parent's.
    server.send(
        json!({"type": "agent_start", "agent_id": "h", "agent_type": "helper", "parent": "r"}),
    );
    event(&mut server, "agent_started", |v| v["agent_id"] == "h");
    let grep = json!({"pattern": "needle", "output_mode": "content"});
    let glob = json!({"pattern": "**/*.txt"});
    for agent in ["r", "h"] {
        scoped(
            &mut server,
            &format!("{agent}-grep"),
            agent,
            "Grep",
            grep.clone(),
        );
        scoped(
            &mut server,
            &format!("{agent}-glob"),
            agent,
            "Glob",
            glob.clone(),
        );
        for id in [format!("{agent}-grep"), format!("{agent}-glob")] {
            let r = server.result(&id);
            let content = r["content"].as_str().unwrap();
            assert_eq!(r["outcome"], "success", "{r}");
            assert!(content.contains("open.txt"), "{id}: {content}");
            assert!(
                !content.contains("key.txt"),
                "{id} shows a denied file: {content}"
            );
        }
    }
    // The session itself has no such rule.
    server.tool_use("s", "Grep", grep);
    let s = server.result("s");
    assert!(
        s["content"].as_str().unwrap().contains("needle SECRET"),
        "{s}"
    );
}
