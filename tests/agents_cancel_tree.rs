//! The cancellation tree: every call made in an agent scope is cancelled with its scope. Cancelling
//! the `Agent` call that opened a scope (or the batch holding it, or the call an `agent_start`
//! named as `parent_tool_use_id`), `agent_end`, and the end of input each end every unfinished
//! call of that scope and of every scope below it — running (its processes killed), waiting for
//! a permission answer, waiting for an `execute_result`, or parked for admission — each with
//! exactly one `cancelled` result, while calls outside the subtree go on.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::client::{answer, cancel_of, error_with, execute_of, register, tool};
use support::*;

/// Bypass mode (so the test's shell commands need no rules) with an ask rule for `touch`, which
/// asks in every mode: a call that waits for a permission answer.
fn settings(sb: &Sandbox) -> String {
    sb.settings_file(&json!({
        "permissions": {"ask": ["Bash(touch *)"]},
        "agents": {"lead": {"tools": ["Agent", "Bash", "Lookup"]},
                   "helper": {"tools": ["Bash", "Lookup"]}}
    }))
}

fn serve(sb: &Sandbox, places: &str) -> Server {
    let settings = settings(sb);
    let mut server = sb.serve(&[
        "--settings",
        &settings,
        "--permission-mode",
        "bypassPermissions",
        "--max-in-flight",
        places,
        "--max-queued",
        "0",
    ]);
    register(&mut server, json!([tool("Lookup", json!({}))]));
    server
}

fn scoped(server: &mut Server, id: &str, agent: &str, name: &str, input: Value) {
    server.send(
        json!({"type": "tool_use", "id": id, "name": name, "input": input, "agent_id": agent}),
    );
}

/// A Bash call of `agent` running `sleep 60` in the background of its shell; returns once both
/// pids are written (each file appears whole: written, then renamed).
fn sleeper(sb: &Sandbox, server: &mut Server, id: &str, agent: &str) -> [u32; 2] {
    let command = format!(
        "sleep 60 & echo $! > {id}.c.tmp; mv {id}.c.tmp {id}.child; echo $$ > {id}.s.tmp; mv {id}.s.tmp {id}.shell; wait"
    );
    scoped(server, id, agent, "Bash", json!({"command": command}));
    [
        pid_in(&sb.path(&format!("{id}.child"))),
        pid_in(&sb.path(&format!("{id}.shell"))),
    ]
}

fn pid_in(path: &Path) -> u32 {
    wait_line(path);
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Starts an `Agent` call `id` of `agent` (None: the session) for a subagent of type `ty`;
/// returns the new agent's id, from the `execute`, and the `execute`.
fn delegate(server: &mut Server, id: &str, agent: Option<&str>, ty: &str) -> (String, Value) {
    let input = json!({"description": ty, "prompt": "work", "subagent_type": ty});
    match agent {
        Some(agent) => scoped(server, id, agent, "Agent", input),
        None => server.tool_use(id, "Agent", input),
    }
    let execute = execute_of(server, id);
    let sub = execute["agent_id"].as_str().expect("agent_id").to_string();
    (sub, execute)
}

/// Sends a call that asks (`touch`) and waits for its permission request.
fn asking(server: &mut Server, id: &str, agent: &str) -> Value {
    scoped(
        server,
        id,
        agent,
        "Bash",
        json!({"command": format!("touch {id}-made")}),
    );
    server.wait_for("permission_request", Duration::from_secs(20), |v| {
        v["type"] == "permission_request" && v["tool_use_id"] == id
    })
}

fn assert_cancelled(server: &mut Server, ids: &[&str]) {
    for id in ids {
        let r = server.result(id);
        assert_eq!(r["outcome"], "cancelled", "{id}: {r}");
    }
}

fn assert_gone(pids: &[u32]) {
    for pid in pids {
        assert!(
            wait_gone_within(*pid, Duration::from_secs(5)),
            "process {pid} survived its scope's cancellation"
        );
    }
}

fn assert_one_result_each(done: &Finished, ids: &[&str]) {
    for id in ids {
        done.result(id);
    }
}

/// A call of the ended `agent` is denied (the agent is unknown now); then end of input, and
/// every call in `ids` (and the late one) had exactly one result.
fn finish_after_a_late_call(mut server: Server, agent: &str, ids: &[&str]) {
    let late = json!({"command": "echo late"});
    scoped(&mut server, "late", agent, "Bash", late);
    assert_eq!(server.result("late")["outcome"], "denied");
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert_one_result_each(&done, ids);
    done.result("late");
}

#[test]
fn cancelling_the_top_agent_call_ends_its_whole_subtree() {
    let sb = Sandbox::new();
    // Seven places: the two Agent calls, two sleeps, a lookup, an ask and the session's own
    // lookup; the eighth call is parked.
    let mut server = serve(&sb, "7");
    let (lead, _) = delegate(&mut server, "a1", None, "lead");
    let (helper, _) = delegate(&mut server, "a2", Some(&lead), "helper");
    let lead_pids = sleeper(&sb, &mut server, "l-sleep", &lead);
    let helper_pids = sleeper(&sb, &mut server, "h-sleep", &helper);
    scoped(&mut server, "h-look", &helper, "Lookup", json!({"q": "x"}));
    let look = execute_of(&mut server, "h-look");
    let ask = asking(&mut server, "h-ask", &helper);
    assert_eq!(ask["agent_id"], helper.as_str(), "{ask}");
    server.send(json!({"type": "tool_use", "id": "other", "name": "Lookup", "input": {"q": "y"}}));
    let other = execute_of(&mut server, "other");
    assert!(other.get("agent_id").is_none(), "{other}");
    scoped(
        &mut server,
        "h-parked",
        &helper,
        "Bash",
        json!({"command": "echo ran > parked-ran"}),
    );

    server.send(json!({"type": "cancel", "id": "a1"}));
    assert_cancelled(
        &mut server,
        &[
            "a1", "a2", "l-sleep", "h-sleep", "h-look", "h-ask", "h-parked",
        ],
    );
    assert!(
        server.result("h-parked")["content"]
            .as_str()
            .unwrap()
            .contains("before it ran"),
        "the parked call never ran"
    );
    assert!(!sb.path("parked-ran").exists());
    cancel_of(&mut server, &look);
    assert_gone(&lead_pids);
    assert_gone(&helper_pids);
    let ended = server.wait_for("agent_ended", Duration::from_secs(20), |v| {
        v["event"] == "agent_ended" && v["agent_id"] == lead.as_str()
    });
    assert_eq!(ended["ended"], json!([helper, lead]), "{ended}");

    // Outside the subtree nothing was touched.
    answer(&mut server, &other, json!("found"));
    assert_eq!(server.result("other")["outcome"], "success");
    finish_after_a_late_call(
        server,
        &helper,
        &[
            "a1", "a2", "l-sleep", "h-sleep", "h-look", "h-ask", "h-parked", "other",
        ],
    );
}

#[test]
fn cancelling_the_call_an_agent_start_names_ends_that_scope() {
    let sb = Sandbox::new();
    let mut server = serve(&sb, "8");
    // The orchestrator delegates through a tool of its own: the scope names that call.
    server.tool_use("task", "Lookup", json!({"q": "delegate"}));
    let task = execute_of(&mut server, "task");
    server.send(json!({"type": "agent_start", "agent_id": "sub", "agent_type": "lead", "parent_tool_use_id": "task"}));
    server.send(
        json!({"type": "agent_start", "agent_id": "kid", "agent_type": "helper", "parent": "sub"}),
    );
    let sub_pids = sleeper(&sb, &mut server, "s-sleep", "sub");
    let kid_pids = sleeper(&sb, &mut server, "k-sleep", "kid");
    scoped(&mut server, "k-look", "kid", "Lookup", json!({"q": "x"}));
    let look = execute_of(&mut server, "k-look");

    server.send(json!({"type": "cancel", "id": "task"}));
    assert_cancelled(&mut server, &["task", "s-sleep", "k-sleep", "k-look"]);
    cancel_of(&mut server, &task);
    cancel_of(&mut server, &look);
    assert_gone(&sub_pids);
    assert_gone(&kid_pids);
    // The scope ends with its opener's cancellation, not at a later `agent_end`.
    let ended = server.wait_for("agent_ended", Duration::from_secs(20), |v| {
        v["event"] == "agent_ended" && v["agent_id"] == "sub"
    });
    assert_eq!(ended["ended"], json!(["kid", "sub"]), "{ended}");
    let late = json!({"command": "echo late"});
    scoped(&mut server, "late-sub", "sub", "Bash", late);
    let denied = server.result("late-sub");
    assert_eq!(denied["outcome"], "denied", "{denied}");
    assert!(
        denied["content"]
            .as_str()
            .unwrap()
            .contains("\"sub\", which is unknown"),
        "{denied}"
    );
    // Ended, its id is free again; `agent_end` of it is an error, not a second `agent_ended`.
    server.send(json!({"type": "agent_end", "agent_id": "sub"}));
    error_with(&mut server, "agent_end: unknown agent \"sub\"");
    finish_after_a_late_call(
        server,
        "kid",
        &["task", "s-sleep", "k-sleep", "k-look", "late-sub"],
    );
}

#[test]
fn agent_end_cancels_running_asking_waiting_and_parked_calls_of_the_subtree() {
    let sb = Sandbox::new();
    // Four places: a sleep, a lookup, an ask and a sleep of another agent; the fifth is parked.
    let mut server = serve(&sb, "4");
    server.send(json!({"type": "agent_start", "agent_id": "top", "agent_type": "lead"}));
    server.send(
        json!({"type": "agent_start", "agent_id": "kid", "agent_type": "helper", "parent": "top"}),
    );
    server.send(json!({"type": "agent_start", "agent_id": "peer", "agent_type": "helper"}));
    let kid_pids = sleeper(&sb, &mut server, "k-sleep", "kid");
    scoped(&mut server, "t-look", "top", "Lookup", json!({"q": "x"}));
    let look = execute_of(&mut server, "t-look");
    let ask = asking(&mut server, "k-ask", "kid");
    assert_eq!(ask["agent_id"], "kid", "{ask}");
    let peer_pids = sleeper(&sb, &mut server, "p-sleep", "peer");
    scoped(
        &mut server,
        "k-parked",
        "kid",
        "Bash",
        json!({"command": "echo ran > parked-ran"}),
    );

    server.send(json!({"type": "agent_end", "agent_id": "top"}));
    let ended = server.wait_for("agent_ended", Duration::from_secs(20), |v| {
        v["event"] == "agent_ended" && v["agent_id"] == "top"
    });
    assert_eq!(ended["ended"], json!(["kid", "top"]), "{ended}");
    assert_cancelled(&mut server, &["k-sleep", "t-look", "k-ask", "k-parked"]);
    assert!(!sb.path("parked-ran").exists());
    cancel_of(&mut server, &look);
    assert_gone(&kid_pids);
    // Another agent's call runs on.
    assert!(
        peer_pids.iter().all(|p| pid_alive(*p as i32)),
        "the peer agent's sleep was killed"
    );
    server.send(json!({"type": "cancel", "id": "p-sleep"}));
    assert_cancelled(&mut server, &["p-sleep"]);
    finish_after_a_late_call(
        server,
        "kid",
        &["k-sleep", "t-look", "k-ask", "k-parked", "p-sleep"],
    );
}

#[test]
fn cancelling_the_batch_that_holds_an_agent_call_ends_the_subagents_work() {
    let sb = Sandbox::new();
    let mut server = serve(&sb, "8");
    server.send(json!({"type": "batch", "id": "turn", "calls": [
        {"id": "a1", "name": "Agent", "input": {"description": "lead", "prompt": "work", "subagent_type": "lead"}},
        {"id": "echo", "name": "Bash", "input": {"command": "echo hi"}}
    ]}));
    let execute = execute_of(&mut server, "a1");
    let lead = execute["agent_id"].as_str().unwrap().to_string();
    let pids = sleeper(&sb, &mut server, "l-sleep", &lead);
    let (helper, _) = delegate(&mut server, "a2", Some(&lead), "helper");
    let helper_pids = sleeper(&sb, &mut server, "h-sleep", &helper);

    server.send(json!({"type": "cancel", "batch": "turn"}));
    assert_cancelled(&mut server, &["a1", "l-sleep", "a2", "h-sleep"]);
    assert_gone(&pids);
    assert_gone(&helper_pids);
    server.wait_for("batch_end", Duration::from_secs(20), |v| {
        v["event"] == "batch_end" && v["batch"] == "turn"
    });
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert_one_result_each(&done, &["a1", "echo", "l-sleep", "a2", "h-sleep"]);
}

#[test]
fn end_of_input_ends_every_scope_and_its_calls() {
    let sb = Sandbox::new();
    let mut server = serve(&sb, "8");
    server.send(json!({"type": "agent_start", "agent_id": "top", "agent_type": "lead"}));
    server.send(
        json!({"type": "agent_start", "agent_id": "kid", "agent_type": "helper", "parent": "top"}),
    );
    let kid_pids = sleeper(&sb, &mut server, "k-sleep", "kid");
    let (sub, _) = delegate(&mut server, "a1", Some("top"), "helper");
    let sub_pids = sleeper(&sb, &mut server, "s-sleep", &sub);
    scoped(&mut server, "t-look", "top", "Lookup", json!({"q": "x"}));
    execute_of(&mut server, "t-look");
    asking(&mut server, "k-ask", "kid");
    // The session's own call is finished, not cancelled.
    server.tool_use("own", "Bash", json!({"command": "echo own"}));
    server.result("own");

    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
    for id in ["k-sleep", "a1", "s-sleep", "t-look"] {
        assert_eq!(done.result(id)["outcome"], "cancelled", "{id}");
    }
    // Nobody can answer the ask any more: denied or cancelled, once.
    let ask = done.result("k-ask");
    assert!(
        ask["outcome"] == "cancelled" || ask["outcome"] == "denied",
        "{ask}"
    );
    assert_gone(&kid_pids);
    assert_gone(&sub_pids);
    let ended: Vec<&Value> = done.events("agent_ended");
    assert!(
        ended
            .iter()
            .any(|e| e["agent_id"] == "top" && e["ended"].as_array().is_some_and(|a| a.len() == 3)),
        "{ended:#?}"
    );
}

#[test]
fn a_client_cannot_take_the_id_of_an_agent_tool_subagent() {
    let sb = Sandbox::new();
    let mut server = serve(&sb, "8");
    // Before and after the Agent tool gives `agent-1`, the form is refused to the client, so a
    // client's calls can never land in (or outlive into) a scope the tool opened.
    server.send(json!({"type": "agent_start", "agent_id": "agent-1", "agent_type": "lead"}));
    error_with(&mut server, "\"agent-1\" is reserved");
    let (sub, execute) = delegate(&mut server, "a1", None, "helper");
    assert_eq!(sub, "agent-1");
    server.send(json!({"type": "agent_start", "agent_id": "agent-2", "agent_type": "lead"}));
    error_with(&mut server, "\"agent-2\" is reserved");
    scoped(
        &mut server,
        "in-sub",
        &sub,
        "Bash",
        json!({"command": "echo in"}),
    );
    assert_eq!(server.result("in-sub")["outcome"], "success");
    answer(&mut server, &execute, json!("done"));
    assert_eq!(server.result("a1")["outcome"], "success");
    // A client id of another form is the client's own.
    server.send(json!({"type": "agent_start", "agent_id": "agent-one", "agent_type": "lead"}));
    server.wait_for("agent_started", Duration::from_secs(20), |v| {
        v["event"] == "agent_started" && v["agent_id"] == "agent-one"
    });
    finish_after_a_late_call(server, &sub, &["a1", "in-sub"]);
}
