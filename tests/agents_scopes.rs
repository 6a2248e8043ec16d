//! Agent scopes over the wire: `agent_start` answers `agent_started` with the scope as it was
//! narrowed, or an `error` line naming what is wrong (a live id, an unknown or own parent, a
//! depth past `toolrt.maxAgentDepth`, an `Agent(<type>)` rule); `agent_end` ends the agent and
//! every agent below it; SubagentStart and SubagentStop hooks hear of both.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::client::{answer, error_with, execute_of};
use support::*;

fn start(server: &mut Server, id: &str, ty: &str, parent: Option<&str>) {
    let mut msg = json!({"type": "agent_start", "agent_id": id, "agent_type": ty});
    if let Some(p) = parent {
        msg["parent"] = json!(p);
    }
    server.send(msg);
}

fn started(server: &mut Server, id: &str) -> Value {
    server.take_for(
        &format!("agent_started {id}"),
        Duration::from_secs(20),
        |v| v["event"] == "agent_started" && v["agent_id"] == id,
    )
}

fn ended(server: &mut Server, id: &str) -> Value {
    server.take_for(&format!("agent_ended {id}"), Duration::from_secs(20), |v| {
        v["event"] == "agent_ended" && v["agent_id"] == id
    })
}

#[test]
fn a_scope_starts_narrowed_and_refusals_name_the_reason() {
    let sb = Sandbox::new();
    let settings = sb.settings_file(&json!({
        "permissions": {"deny": ["Agent(deployer)"]},
        "agents": {
            "lead": {"tools": ["Read", "Bash", "Agent"], "permissionMode": "bypassPermissions",
                     "permissions": {"deny": ["Agent(helper)"]}},
            "tester": {"tools": ["Read", "Bash", "Write"], "permissionMode": "plan"}
        },
        "toolrt": {"maxAgentDepth": 3}
    }));
    let mut server = sb.serve(&["--settings", &settings]);
    start(&mut server, "lead-1", "lead", None);
    let lead = started(&mut server, "lead-1");
    assert_eq!(lead["depth"], 1, "{lead}");
    assert_eq!(lead["parent"], Value::Null);
    // bypassPermissions is wider than the session's default mode: not gained.
    assert_eq!(lead["permission_mode"], "default", "{lead}");
    assert_eq!(lead["tools"], json!(["Agent", "Bash", "Read"]));
    start(&mut server, "t-1", "tester", Some("lead-1"));
    let tester = started(&mut server, "t-1");
    assert_eq!(
        (tester["depth"].as_u64(), tester["parent"].as_str()),
        (Some(2), Some("lead-1"))
    );
    assert_eq!(tester["permission_mode"], "plan", "{tester}");
    assert_eq!(
        tester["tools"],
        json!(["Bash", "Read"]),
        "Write is not the lead's"
    );

    for (msg, needle) in [
        (
            json!({"type": "agent_start", "agent_id": "lead-1", "agent_type": "lead"}),
            "agent \"lead-1\" already exists",
        ),
        (
            json!({"type": "agent_start", "agent_id": "x", "agent_type": "lead", "parent": "x"}),
            "names itself as its parent",
        ),
        (
            json!({"type": "agent_start", "agent_id": "x", "agent_type": "lead", "parent": "ghost"}),
            "unknown parent agent \"ghost\"",
        ),
        (
            json!({"type": "agent_start", "agent_id": "x", "agent_type": "deployer"}),
            "Agent(deployer)",
        ),
        (
            json!({"type": "agent_start", "agent_id": "x", "agent_type": "helper", "parent": "lead-1"}),
            "agent type \"lead\"",
        ),
        (
            json!({"type": "agent_end", "agent_id": "ghost"}),
            "agent_end: unknown agent \"ghost\"",
        ),
        (
            json!({"type": "agent_start", "agent_id": "x"}),
            "field `agent_type`: missing",
        ),
    ] {
        server.send(msg.clone());
        error_with(&mut server, needle);
    }
    start(&mut server, "t-2", "tester", Some("t-1"));
    started(&mut server, "t-2");
    start(&mut server, "t-3", "tester", Some("t-2"));
    error_with(&mut server, "would be 4 levels deep; at most 3");
    // The deny of helper is the lead's own: a top-level helper may start.
    start(&mut server, "h-1", "helper", None);
    started(&mut server, "h-1");

    // Ending the lead ends its subtree, deepest first; the others stay.
    server.send(json!({"type": "agent_end", "agent_id": "lead-1"}));
    let gone = ended(&mut server, "lead-1");
    assert_eq!(gone["ended"], json!(["t-2", "t-1", "lead-1"]), "{gone}");
    start(&mut server, "t-4", "tester", Some("t-1"));
    error_with(&mut server, "unknown parent agent \"t-1\"");
    // An ended id may be used again.
    start(&mut server, "lead-1", "tester", Some("h-1"));
    started(&mut server, "lead-1");
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
}

#[test]
fn subagent_hooks_hear_of_starts_and_ends() {
    let sb = Sandbox::new();
    let log = sb.dir.path().join("subagents.jsonl");
    let logger = format!("cat >> '{}'; echo >> '{}'", log.display(), log.display());
    let settings = sb.settings_file(&json!({
        "hooks": {
            "SubagentStart": [{"matcher": "tester", "hooks": [{"type": "command", "command": logger}]}],
            "SubagentStop": [{"hooks": [{"type": "command", "command": logger}]}]
        }
    }));
    let mut server = sb.serve(&["--settings", &settings]);
    start(&mut server, "a", "tester", None);
    started(&mut server, "a");
    // Not a tester: SubagentStart's matcher skips it.
    start(&mut server, "b", "other", Some("a"));
    started(&mut server, "b");
    // The orchestrator passes the agent's final answer along: the hooks of that agent see it as
    // `last_assistant_message`, those of the agents ended with it (who answered nobody) do not.
    server.send(json!({"type": "agent_end", "agent_id": "a", "last_assistant_message": "All done:\n2 files"}));
    ended(&mut server, "a");
    // An `Agent` call's subagent answers with its `execute_result`, and that text is its last
    // message; a subagent whose call failed or was cancelled gave none.
    let delegate = |server: &mut Server, id: &str| {
        let input = json!({"description": "d", "prompt": "p", "subagent_type": "tester"});
        server.tool_use(id, "Agent", input);
        execute_of(server, id)
    };
    let execute = delegate(&mut server, "d1");
    answer(&mut server, &execute, json!("found 3 bugs"));
    assert_eq!(server.result("d1")["outcome"], "success");
    let execute = delegate(&mut server, "d2");
    server.send(json!({"type": "execute_result", "request_id": execute["request_id"], "content": "model error", "is_error": true}));
    assert_eq!(server.result("d2")["outcome"], "failed");
    let lines = |n: usize| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let got: Vec<Value> = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            if got.len() >= n || std::time::Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let got = lines(7);
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
    let got_again = lines(7);
    assert_eq!(got.len(), 7, "{got_again:#?}");
    let find = |event: &str, id: &str| {
        got.iter()
            .find(|v| v["hook_event_name"] == event && v["agent_id"] == id)
            .unwrap_or_else(|| panic!("{event} {id}: {got:#?}"))
            .clone()
    };
    // Exactly the reference CLI's fields (its SubagentStart input carries no permission_mode).
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let s = find("SubagentStart", "a");
    assert_eq!(s["agent_type"], "tester");
    assert!(s["session_id"].is_string() && s["cwd"].is_string(), "{s}");
    let common = [
        "agent_id",
        "agent_type",
        "cwd",
        "hook_event_name",
        "session_id",
        "transcript_path",
    ];
    assert_eq!(keys(&s), common, "{s}");
    for id in ["a", "b", "agent-1", "agent-2"] {
        let stop = find("SubagentStop", id);
        assert_eq!(stop["stop_hook_active"], false, "{stop}");
        assert_eq!(
            stop["agent_transcript_path"], "",
            "a string, as the reference's type has it"
        );
        assert_eq!(stop["session_crons"], json!([]), "{stop}");
        assert_eq!(stop["permission_mode"], "default", "{stop}");
        let mut want: Vec<&str> = common.to_vec();
        want.extend([
            "agent_transcript_path",
            "permission_mode",
            "session_crons",
            "stop_hook_active",
        ]);
        let last = match id {
            "a" => Some("All done:\n2 files"),
            "agent-1" => Some("found 3 bugs"),
            _ => None,
        };
        if let Some(last) = last {
            assert_eq!(stop["last_assistant_message"], last, "{stop}");
            want.push("last_assistant_message");
        }
        want.sort();
        assert_eq!(keys(&stop), want, "{stop}");
    }
    assert_eq!(find("SubagentStop", "b")["agent_type"], "other");
    assert_eq!(find("SubagentStart", "agent-1")["agent_type"], "tester");
}

#[test]
fn bad_agent_settings_stop_start_up_naming_the_key() {
    let sb = Sandbox::new();
    for (settings, needle) in [
        (
            json!({"agents": {"t": {"permissionMode": "yolo"}}}),
            "agents.t.permissionMode",
        ),
        (
            json!({"agents": {"t": {"permissions": {"allow": ["Bash("]}}}}),
            "agents.t.permissions.allow[0]",
        ),
        (
            json!({"toolrt": {"maxAgentDepth": 0}}),
            "toolrt.maxAgentDepth",
        ),
    ] {
        let file = sb.settings_file(&settings);
        let (code, stderr) = serve_status(&sb.cwd, &["--settings", &file]);
        assert_eq!(code, Some(2), "{settings}: {stderr}");
        assert!(stderr.contains(needle), "{settings}: {stderr}");
    }
}
