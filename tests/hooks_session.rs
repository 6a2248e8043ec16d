//! What hooks learn about the session and when they run beyond a call: `session_id` and
//! `transcript_path` (flags, or a `session` message), `CLAUDE_CODE_SESSION_ID`, SessionStart /
//! SessionEnd at start and stop, PermissionDenied after the decision denies; and the asks the
//! reference makes: a hook's `ask` (with its reason) even in dontAsk, a write in plan mode.

mod hooks_support;
mod support;

use hooks_support::*;
use serde_json::{Value, json};

#[test]
fn session_id_and_transcript_path_come_from_flags_then_a_session_message() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("ids");
    let env_out = fx.hooks.path().join("env.txt");
    let env_hook = format!(
        "cat > /dev/null; printf '%s\\n' \"$CLAUDE_CODE_SESSION_ID\" >> '{}'",
        env_out.display()
    );
    fx.settings(json!({"hooks": {"PreToolUse": [group("Bash", &[&logger, &env_hook])]}}));
    let mut session = fx.serve_with(
        "bypassPermissions",
        &[
            "--session-id",
            "sess-42",
            "--transcript-path",
            "/tmp/t1.jsonl",
        ],
        &[],
    );
    session.send(&bash("a1", "echo 1"));
    session.result("a1");
    session.send(
        &json!({"type": "session", "session_id": "sess-43", "transcript_path": "/tmp/t2.jsonl"}),
    );
    session.send(&bash("a2", "echo 2"));
    session.result("a2");
    session.send(&json!({"type": "session", "transcript_path": "/tmp/t3.jsonl"}));
    session.send(&bash("a3", "echo 3"));
    let run = session.finish();
    let seen: Vec<(Value, Value)> = log_lines(&log)
        .iter()
        .map(|l| {
            (
                l["input"]["session_id"].clone(),
                l["input"]["transcript_path"].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (json!("sess-42"), json!("/tmp/t1.jsonl")),
            (json!("sess-43"), json!("/tmp/t2.jsonl")),
            (json!("sess-43"), json!("/tmp/t3.jsonl")),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(&env_out).unwrap(),
        "sess-42\nsess-43\nsess-43\n"
    );
    assert!(
        run.lines.iter().all(|l| l["type"] != "error"),
        "{:#?}",
        run.lines
    );

    // Without flags: a fresh id, and a null transcript path.
    let run = fx.serve("bypassPermissions").run(&[bash("b1", "echo 1")]);
    assert_eq!(run.outcome("b1"), "success");
    let last = log_lines(&log).pop().unwrap();
    assert!(
        last["input"]["session_id"]
            .as_str()
            .unwrap()
            .starts_with("toolrt-")
    );
    assert_eq!(last["input"]["transcript_path"], Value::Null);

    // A malformed session message is an error line; the server carries on.
    let mut session = fx.serve("bypassPermissions");
    session.send(&json!({"type": "session", "session_id": 7}));
    session.send(&bash("c1", "echo 1"));
    let run = session.finish();
    assert_eq!(run.outcome("c1"), "success");
    let errors: Vec<&Value> = run.lines.iter().filter(|l| l["type"] == "error").collect();
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("session_id"),
        "{}",
        errors[0]
    );
}

#[test]
fn session_start_and_end_run_at_start_and_stop() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("session");
    let context = fx.json_hook(json!({"hookSpecificOutput": {
        "hookEventName": "SessionStart", "additionalContext": "repo uses pnpm"}}));
    fx.settings(json!({"hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": logger}, {"type": "command", "command": context}]}],
        "SessionEnd": [{"matcher": "ignored", "hooks": [{"type": "command", "command": logger}]}]
    }}));
    let run = fx
        .serve_with("plan", &["--session-id", "s-1"], &[])
        .run(&[call("r1", "Glob", json!({"pattern": "*"}))]);
    assert_eq!(run.code, Some(0));
    let inputs: Vec<Value> = log_lines(&log)
        .into_iter()
        .map(|l| l["input"].clone())
        .collect();
    assert_eq!(inputs.len(), 2);
    assert_eq!(inputs[0]["hook_event_name"], "SessionStart");
    assert_eq!(inputs[0]["source"], "startup");
    assert_eq!(inputs[0]["session_id"], "s-1");
    assert_eq!(inputs[0]["permission_mode"], "plan");
    assert_eq!(inputs[1]["hook_event_name"], "SessionEnd");
    assert_eq!(inputs[1]["reason"], "other");
    // SessionStart comes before anything of the first call; its context goes to the client.
    let first_start = run
        .lines
        .iter()
        .position(|l| l["event"] == "hook_start")
        .unwrap();
    assert_eq!(run.lines[first_start]["hook_event"], "SessionStart");
    // A session's hook belongs to no call: `tool_use_id` is there, and null.
    assert_eq!(
        run.lines[first_start].get("tool_use_id"),
        Some(&Value::Null)
    );
    let msg = run.events("hook_message");
    assert_eq!(msg.len(), 1);
    assert_eq!(msg[0]["hook_event"], "SessionStart");
    assert_eq!(msg[0]["message"], "repo uses pnpm");
    assert_eq!(msg[0]["tool_use_id"], Value::Null);
}

#[test]
fn permission_denied_hooks_hear_of_denials_by_the_decision() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("denied");
    let retry = fx.json_hook(
        json!({"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": true}}),
    );
    fx.settings(json!({
        "permissions": {"deny": ["Bash(rm *)"]},
        "hooks": {"PermissionDenied": [group("Bash", &[&logger, &retry])]}
    }));
    let run = fx.serve("dontAsk").run(&[
        bash("a1", "rm -rf build"),
        bash("a2", "touch x"),
        bash("a3", "echo fine"),
    ]);
    assert_eq!(run.outcome("a1"), "denied");
    assert_eq!(
        run.outcome("a2"),
        "denied",
        "dontAsk turns the ask into a denial"
    );
    assert_eq!(run.outcome("a3"), "success");
    // Separate calls run concurrently: the log is in finishing order.
    let mut inputs: Vec<Value> = log_lines(&log)
        .into_iter()
        .map(|l| l["input"].clone())
        .collect();
    inputs.sort_by_key(|i| i["tool_use_id"].as_str().unwrap().to_owned());
    let ids: Vec<&str> = inputs
        .iter()
        .map(|i| i["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a1", "a2"]);
    assert_eq!(inputs[0]["hook_event_name"], "PermissionDenied");
    assert_eq!(inputs[0]["tool_name"], "Bash");
    assert_eq!(inputs[0]["tool_input"]["command"], "rm -rf build");
    assert!(inputs[0]["reason"].as_str().unwrap().contains("Bash(rm *)"));
    assert!(
        run.content("a1").contains("may be retried"),
        "{}",
        run.content("a1")
    );
}

#[test]
fn a_hook_ask_reaches_the_client_with_its_reason_even_in_dont_ask() {
    let fx = Fixture::new();
    let ask = fx.json_hook(pre_decision("ask", "hook wants a human"));
    fx.settings(json!({"hooks": {"PreToolUse": [group("Bash", &[&ask])]}}));
    let mut session = fx.serve("dontAsk");
    session.answer(allow_all());
    let run = session.run(&[bash("a1", "echo hi")]);
    let reqs = run.permission_requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0]["reason"], "hook wants a human");
    assert_eq!(run.outcome("a1"), "success");
}

#[test]
fn a_write_in_plan_mode_asks() {
    let fx = Fixture::new();
    fx.settings(json!({}));
    let path = fx.cwd().join("plan.txt").to_string_lossy().into_owned();
    let mut session = fx.serve("plan");
    session.answer(allow_all());
    let run = session.run(&[
        call("w1", "Write", json!({"file_path": path, "content": "x"})),
        call("r1", "Glob", json!({"pattern": "*"})),
    ]);
    let reqs = run.permission_requests();
    assert_eq!(reqs.len(), 1, "only the write asks");
    assert_eq!(reqs[0]["tool_use_id"], "w1");
    assert_eq!(run.outcome("w1"), "success");
    assert!(fx.cwd().join("plan.txt").exists());
}

#[test]
fn post_tool_use_failure_input_has_duration_and_error() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("fail");
    let run = fx.run(
        json!({"PostToolUseFailure": [group("Bash", &[&logger])]}),
        "bypassPermissions",
        &[bash("a1", "echo partial; echo bad >&2; exit 3")],
    );
    assert_eq!(run.outcome("a1"), "failed");
    let input = &log_lines(&log)[0]["input"];
    assert!(input["duration_ms"].is_u64(), "{input}");
    assert_eq!(input["is_interrupt"], false);
    assert!(input["error"].is_string());
}

/// A SessionEnd hook gets 1.5 s unless a `timeout` of its own or
/// `CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS` gives it more, as in the reference CLI.
#[test]
fn session_end_hooks_have_a_short_time_budget() {
    let fx = Fixture::new();
    let done = fx.hooks.path().join("done");
    let slow = fx.script(&format!(
        "cat > /dev/null\nsleep 3\ntouch '{}'",
        done.display()
    ));
    fx.settings(
        json!({"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": slow}]}]}}),
    );
    let started = std::time::Instant::now();
    let run = fx.serve("plan").run(&[bash("a1", "echo hi")]);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run.code, Some(0));
    assert!(!done.exists());
    assert_eq!(run.hook_ends("SessionEnd")[0]["outcome"], "timeout");

    // The variable raises the budget.
    let run = fx
        .serve_with(
            "plan",
            &[],
            &[("CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS", "6000")],
        )
        .run(&[bash("a2", "echo hi")]);
    assert_eq!(run.hook_ends("SessionEnd")[0]["outcome"], "success");
    assert!(done.exists());

    // So does the hook's own `timeout`.
    std::fs::remove_file(&done).unwrap();
    fx.settings(json!({"hooks": {"SessionEnd": [{"hooks": [
        {"type": "command", "command": slow, "timeout": 6}
    ]}]}}));
    let run = fx.serve("plan").run(&[bash("a3", "echo hi")]);
    assert_eq!(run.hook_ends("SessionEnd")[0]["outcome"], "success");
    assert!(done.exists());
}

/// SIGINT cancels everything, the hooks that run at shutdown (PostToolBatch of the last call,
/// SessionEnd) included: toolrt exits at once.
#[test]
fn sigint_cancels_post_tool_batch_and_session_end_hooks() {
    for event in ["PostToolBatch", "SessionEnd"] {
        let fx = Fixture::new();
        let started = fx.hooks.path().join("started");
        let slow = fx.script(&format!(
            "cat > /dev/null\ntouch '{}'\nsleep 30",
            started.display()
        ));
        fx.settings(json!({"hooks": {event: [{"hooks": [
            {"type": "command", "command": slow, "timeout": 60}
        ]}]}}));
        let mut session = fx.serve_with("plan", &["--session-id", "s"], &[]);
        let pid = session.pid();
        let flag = started.clone();
        let signaller = std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + DEADLINE;
            while !flag.exists() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            let _ = std::process::Command::new("kill")
                .args(["-INT", &pid.to_string()])
                .status();
        });
        let t0 = std::time::Instant::now();
        session.send(&bash("a1", "echo hi"));
        let run = session.finish();
        signaller.join().unwrap();
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(15),
            "{event}: {:?}",
            t0.elapsed()
        );
        assert!(started.exists(), "{event}");
        assert_eq!(run.outcome("a1"), "success", "{event}: {:#?}", run.lines);
        assert_eq!(run.hook_ends(event)[0]["outcome"], "cancelled", "{event}");
    }
}
