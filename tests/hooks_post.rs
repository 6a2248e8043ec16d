//! Black-box: PermissionRequest, PostToolUse, PostToolUseFailure and PostToolBatch hooks
//! (docs/SEMANTICS.md §4.3–§4.4), through `toolrt serve`.

mod hooks_support;
mod support;

use hooks_support::*;
use serde_json::json;

fn permission_decision(decision: serde_json::Value) -> serde_json::Value {
    json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}})
}

// ---------- PermissionRequest ----------

#[test]
fn permission_request_input_has_no_tool_use_id() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("perm");
    let run = fx.run_bash_hooks("PermissionRequest", &[&logger], "default", "touch made");
    assert_eq!(
        run.outcome("a1"),
        "denied",
        "no hook decision: the client was asked and denied"
    );
    assert_eq!(run.permission_requests().len(), 1);
    let input = &log_lines(&log)[0]["input"];
    assert_eq!(input["hook_event_name"], "PermissionRequest");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"], json!({"command": "touch made"}));
    assert_eq!(input["permission_mode"], "default");
    assert!(input.get("tool_use_id").is_none());
    assert!(input["session_id"].is_string());
}

#[test]
fn permission_request_runs_only_when_the_decision_is_ask() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("perm");
    let hooks = json!({"PermissionRequest": [group("", &[&logger])]});
    // echo is read-only (allowed without asking); bypass allows touch.
    let run = fx.run(
        hooks,
        "bypassPermissions",
        &[bash("a1", "echo hi"), bash("a2", "touch x")],
    );
    assert_eq!(run.outcome("a2"), "success");
    assert!(log_lines(&log).is_empty());
}

#[test]
fn permission_request_allow_skips_the_client() {
    let fx = Fixture::new();
    let hook = fx.json_hook(permission_decision(json!({"behavior": "allow"})));
    let run = fx.run_bash_hooks("PermissionRequest", &[&hook], "default", "touch made");
    assert_eq!(run.outcome("a1"), "success");
    assert!(run.permission_requests().is_empty());
    assert!(fx.cwd().join("made").exists());
}

#[test]
fn permission_request_deny_message_reaches_the_model() {
    let fx = Fixture::new();
    let hook = fx.json_hook(permission_decision(
        json!({"behavior": "deny", "message": "ask the on-call first"}),
    ));
    let run = fx.run_bash_hooks("PermissionRequest", &[&hook], "default", "touch made");
    assert_eq!(run.outcome("a1"), "denied");
    assert!(
        run.content("a1").contains("ask the on-call first"),
        "{}",
        run.content("a1")
    );
    assert!(run.permission_requests().is_empty());
}

#[test]
fn permission_request_exit_2_is_ignored() {
    let fx = Fixture::new();
    let hook = fx.stderr_hook("would block elsewhere", 2);
    let settings = json!({"hooks": {"PermissionRequest": [group("Bash", &[&hook])]}});
    let run = fx.run_allowing(settings, "default", &[bash("a1", "touch made")]);
    assert_eq!(
        run.permission_requests().len(),
        1,
        "no decision: the client is asked"
    );
    assert_eq!(run.outcome("a1"), "success");
}

#[test]
fn permission_request_updated_input_is_used_and_rechecked_against_deny_rules() {
    let fx = Fixture::new();
    let ok = fx.json_hook(permission_decision(
        json!({"behavior": "allow", "updatedInput": {"command": "touch rewritten"}}),
    ));
    let run = fx.run_bash_hooks("PermissionRequest", &[&ok], "default", "touch original");
    assert_eq!(run.outcome("a1"), "success");
    assert!(fx.cwd().join("rewritten").exists());
    assert!(!fx.cwd().join("original").exists());

    let fx = Fixture::new();
    let sneaky = fx.json_hook(permission_decision(
        json!({"behavior": "allow", "updatedInput": {"command": "rm -f precious"}}),
    ));
    std::fs::write(fx.cwd().join("precious"), "x").unwrap();
    fx.settings(json!({
        "permissions": {"deny": ["Bash(rm *)"]},
        "hooks": {"PermissionRequest": [group("Bash", &[&sneaky])]},
    }));
    let run = fx.serve("default").run(&[bash("a1", "touch original")]);
    assert_eq!(run.outcome("a1"), "denied");
    assert!(fx.cwd().join("precious").exists());
}

// ---------- PostToolUse ----------

#[test]
fn post_tool_use_input_fields() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("post");
    let run = fx.run_bash_hooks(
        "PostToolUse",
        &[&logger],
        "bypassPermissions",
        "echo hello-post",
    );
    assert_eq!(run.outcome("a1"), "success");
    let input = &log_lines(&log)[0]["input"];
    assert_eq!(input["hook_event_name"], "PostToolUse");
    assert_eq!(input["tool_use_id"], "a1");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"], json!({"command": "echo hello-post"}));
    assert!(
        input["tool_response"].to_string().contains("hello-post"),
        "{input}"
    );
    assert!(input["duration_ms"].is_u64());
    assert!(input.get("transcript_path").is_some());
}

#[test]
fn post_tool_use_exit_2_puts_stderr_beside_the_kept_result() {
    let fx = Fixture::new();
    let hook = fx.stderr_hook("lint: 3 problems", 2);
    let run = fx.run_bash_hooks(
        "PostToolUse",
        &[&hook],
        "bypassPermissions",
        "echo kept-output",
    );
    assert_eq!(run.outcome("a1"), "success");
    let content = run.content("a1");
    assert!(content.contains("kept-output"), "{content}");
    assert!(content.contains("lint: 3 problems"), "{content}");
    assert!(content.contains("hook feedback"), "labelled: {content}");
}

#[test]
fn post_tool_use_decision_block_reason_and_additional_context() {
    let fx = Fixture::new();
    let block = fx.json_hook(json!({"decision": "block", "reason": "tests now fail"}));
    let ctx = fx.json_hook(json!({"hookSpecificOutput": {
        "hookEventName": "PostToolUse", "additionalContext": "coverage dropped"}}));
    let run = fx.run_bash_hooks(
        "PostToolUse",
        &[&block, &ctx],
        "bypassPermissions",
        "echo kept-output",
    );
    let content = run.content("a1");
    assert!(content.contains("kept-output"), "{content}");
    assert!(content.contains("tests now fail"), "{content}");
    assert!(content.contains("coverage dropped"), "{content}");
}

#[test]
fn post_tool_use_updated_tool_output_replaces_the_content() {
    // A string replaces the content as it is; JSON is serialised.
    for (output, shown) in [
        (json!("[redacted by policy]"), "[redacted by policy]"),
        (json!({"lines": 1}), r#"{"lines":1}"#),
    ] {
        let fx = Fixture::new();
        let hook = fx.json_hook(json!({"hookSpecificOutput": {
            "hookEventName": "PostToolUse", "updatedToolOutput": output}}));
        let run = fx.run_bash_hooks(
            "PostToolUse",
            &[&hook],
            "bypassPermissions",
            "echo secret-value",
        );
        let content = run.content("a1");
        assert!(content.contains(shown), "{shown}: {content}");
        assert!(!content.contains("secret-value"), "{shown}: {content}");
    }
}

#[test]
fn post_tool_use_continue_false_stops() {
    let fx = Fixture::new();
    let hook = fx.json_hook(json!({"continue": false, "stopReason": "enough for today"}));
    let run = fx.run_bash_hooks("PostToolUse", &[&hook], "bypassPermissions", "echo hi");
    assert_eq!(run.outcome("a1"), "stopped");
    let stops = run.events("stop");
    assert_eq!(stops.len(), 1);
    assert_eq!(stops[0]["reason"], "enough for today");
}

#[test]
fn long_hook_output_is_saved_to_a_file_with_a_preview() {
    let fx = Fixture::new();
    let long = format!("START{}END", "z".repeat(20_000));
    let hook = fx.stderr_hook(&long, 2);
    let run = fx.run_bash_hooks("PostToolUse", &[&hook], "bypassPermissions", "echo hi");
    let content = run.content("a1");
    assert!(
        content.chars().count() < 15_000,
        "{} chars",
        content.chars().count()
    );
    assert!(content.contains("START"), "preview");
    let out_dir = fx.out.path().to_string_lossy().into_owned();
    let path = content
        .split_whitespace()
        .map(|w| w.trim_end_matches([';', ',', ')', ']', '.']))
        .find(|w| w.starts_with(&out_dir))
        .unwrap_or_else(|| panic!("no path under {out_dir} in {content}"));
    let saved = std::fs::read_to_string(path).unwrap();
    assert!(saved.contains(&long));
}

// ---------- PostToolUseFailure ----------

#[test]
fn post_tool_use_failure_input_and_additional_context() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("fail");
    let (post, post_log) = fx.logger("post");
    let ctx = fx.json_hook(json!({"hookSpecificOutput": {
        "hookEventName": "PostToolUseFailure", "additionalContext": "try --verbose"}}));
    let hooks = json!({
        "PostToolUseFailure": [group("Bash", &[&logger, &ctx])],
        "PostToolUse": [group("Bash", &[&post])],
    });
    let run = fx.run(
        hooks,
        "bypassPermissions",
        &[bash("a1", "echo failing-output; exit 3")],
    );
    assert_eq!(run.outcome("a1"), "failed");
    let content = run.content("a1");
    assert!(content.contains("try --verbose"), "{content}");
    let input = &log_lines(&log)[0]["input"];
    assert_eq!(input["hook_event_name"], "PostToolUseFailure");
    assert_eq!(input["tool_use_id"], "a1");
    assert!(input["error"].is_string());
    assert_eq!(input["is_interrupt"], false);
    assert!(
        log_lines(&post_log).is_empty(),
        "PostToolUse is for successes"
    );
}

#[test]
fn post_tool_use_failure_exit_2_stderr_is_feedback_but_block_and_rewrite_are_not() {
    let fx = Fixture::new();
    let exit2 = fx.stderr_hook("see the runbook", 2);
    let rewrite = fx.json_hook(json!({"decision": "block", "reason": "not-for-failures",
        "hookSpecificOutput": {"hookEventName": "PostToolUseFailure", "updatedToolOutput": "replaced"}}));
    let run = fx.run_bash_hooks(
        "PostToolUseFailure",
        &[&exit2, &rewrite],
        "bypassPermissions",
        "echo original-failure; exit 3",
    );
    assert_eq!(run.outcome("a1"), "failed");
    let content = run.content("a1");
    assert!(content.contains("see the runbook"), "{content}");
    assert!(content.contains("original-failure"), "{content}");
    assert!(!content.contains("replaced"), "{content}");
}

#[test]
fn success_does_not_fire_post_tool_use_failure() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("fail");
    let hooks = json!({"PostToolUseFailure": [group("", &[&logger])]});
    let run = fx.run(hooks, "bypassPermissions", &[bash("a1", "echo ok")]);
    assert_eq!(run.outcome("a1"), "success");
    assert!(log_lines(&log).is_empty());
}

#[test]
fn cancellation_does_not_fire_post_tool_use_failure() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("fail");
    let (post, post_log) = fx.logger("post");
    let marker = fx.cwd().join("started");
    fx.settings(json!({"hooks": {
        "PostToolUseFailure": [group("", &[&logger])],
        "PostToolUse": [group("", &[&post])],
    }}));
    let mut s = fx.serve("bypassPermissions");
    s.send(&bash(
        "a1",
        &format!("touch '{}'; sleep 30", marker.display()),
    ));
    // Wait until the command really runs (progress is optional, so poll the file it creates).
    let deadline = std::time::Instant::now() + DEADLINE;
    while !marker.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the call never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    s.send(&json!({"type": "cancel", "id": "a1"}));
    let r = s.result("a1");
    assert_eq!(r["outcome"], "cancelled");
    s.finish();
    assert!(log_lines(&log).is_empty());
    assert!(log_lines(&post_log).is_empty());
}

// ---------- PostToolBatch ----------

#[test]
fn post_tool_batch_runs_once_after_the_batch_with_every_call() {
    let fx = Fixture::new();
    std::fs::write(fx.cwd().join("a.txt"), "hello").unwrap();
    let (logger, log) = fx.logger("batch");
    let feedback = fx.stderr_hook("batch looked odd", 2);
    let hooks = json!({"PostToolBatch": [{"hooks": [
        {"type": "command", "command": logger},
        {"type": "command", "command": feedback},
    ]}]});
    let calls = [
        call("c1", "Read", json!({"file_path": "a.txt"})),
        bash("c2", "echo second"),
        bash("c3", "exit 4"),
    ];
    let run = fx.run(hooks, "bypassPermissions", &[batch("b1", &calls)]);
    let lines = log_lines(&log);
    assert_eq!(lines.len(), 1, "once per batch");
    let input = &lines[0]["input"];
    assert_eq!(input["hook_event_name"], "PostToolBatch");
    assert!(input.get("tool_use_id").is_none() || input["tool_use_id"].is_null());
    let tool_calls = input["tool_calls"].as_array().unwrap();
    let ids: Vec<&str> = tool_calls
        .iter()
        .map(|c| c["tool_use_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c1", "c2", "c3"]);
    assert_eq!(tool_calls[1]["tool_name"], "Bash");
    assert_eq!(
        tool_calls[1]["tool_input"],
        json!({"command": "echo second"})
    );
    assert!(
        tool_calls[1]["tool_response"]
            .to_string()
            .contains("second")
    );
    assert!(
        tool_calls[0]["tool_input"]["file_path"]
            .as_str()
            .unwrap()
            .starts_with('/')
    );

    // It ran after every call had finished, and its feedback is in batch_end.
    let pos = |pred: &dyn Fn(&serde_json::Value) -> bool| run.lines.iter().position(pred).unwrap();
    let last_result = run
        .lines
        .iter()
        .rposition(|l| l["type"] == "tool_result")
        .unwrap();
    let start = pos(&|l| l["event"] == "hook_start" && l["hook_event"] == "PostToolBatch");
    assert!(start > last_result);
    let starts = run.events("hook_start");
    let batch_start = starts
        .iter()
        .find(|e| e["hook_event"] == "PostToolBatch")
        .unwrap();
    assert_eq!(batch_start["batch"], "b1");
    assert!(batch_start["tool_use_id"].is_null());
    let end = run.events("batch_end");
    assert_eq!(end.len(), 1);
    assert_eq!(end[0]["ids"], json!(["c1", "c2", "c3"]));
    let feedback = end[0]["hook_feedback"].to_string();
    assert!(feedback.contains("batch looked odd"), "{}", end[0]);
}

/// A `tool_use` is a batch of one: PostToolBatch fires for it too, with the input a one-call
/// batch gives, and its feedback goes beside the call's result (there is no `batch_end`).
#[test]
fn post_tool_batch_fires_for_a_lone_tool_use_as_for_a_batch_of_one() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("lone");
    let feedback = fx.stderr_hook("lone looked odd", 2);
    let hooks = json!({"PostToolBatch": [{"hooks": [
        {"type": "command", "command": logger},
        {"type": "command", "command": feedback},
    ]}]});
    let run = fx.run(
        hooks.clone(),
        "bypassPermissions",
        &[bash("t1", "echo lone")],
    );
    let lone = log_lines(&log);
    assert_eq!(lone.len(), 1, "{:#?}", run.lines);
    assert!(run.content("t1").contains("lone"));
    assert!(
        run.content("t1").contains("lone looked odd"),
        "{}",
        run.content("t1")
    );
    assert!(run.events("batch_end").is_empty());
    let start = run
        .events("hook_start")
        .into_iter()
        .find(|e| e["hook_event"] == "PostToolBatch")
        .unwrap();
    assert_eq!(start["batch"], "t1");
    assert!(start["tool_use_id"].is_null());

    // The same call as a batch of one: the hook sees the same input (but for the session).
    std::fs::remove_file(&log).unwrap();
    fx.run(
        hooks,
        "bypassPermissions",
        &[batch("b1", &[bash("t1", "echo lone")])],
    );
    let in_batch = log_lines(&log);
    assert_eq!(in_batch.len(), 1);
    let strip = |v: &serde_json::Value| {
        let mut v = v["input"].clone();
        v.as_object_mut().unwrap().remove("session_id");
        v
    };
    assert_eq!(strip(&lone[0]), strip(&in_batch[0]));
}
