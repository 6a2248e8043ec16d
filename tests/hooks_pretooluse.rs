//! Black-box: hook configuration (docs/SEMANTICS.md §4.1), input (§4.3), the exit-code and output
//! protocol and merging (§4.4) for PreToolUse, through `toolrt serve`.

mod hooks_support;
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use hooks_support::*;
use serde_json::{Value, json};

// ---------- §4.1 configuration ----------

#[test]
fn bad_hook_config_exits_2_naming_file_and_key() {
    // (A matcher that does not compile is a warning, not an error: tests/hooks_matchers.rs.)
    let cases = [
        (json!({"PreToolUsee": []}), "hooks.PreToolUsee"),
        (json!({"PreToolUse": {}}), "hooks.PreToolUse"),
        (
            json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "true", "timeout": 0}]}]}),
            "hooks.PreToolUse[0].hooks[0].timeout",
        ),
        (
            json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "true", "timeout": "5"}]}]}),
            "hooks.PreToolUse[0].hooks[0].timeout",
        ),
        (
            json!({"PostToolUse": [{"hooks": [{"type": "command"}]}]}),
            "hooks.PostToolUse[0].hooks[0].command",
        ),
        (
            json!({"PostToolUse": [{"hooks": [{"type": "command", "command": 7}]}]}),
            "hooks.PostToolUse[0].hooks[0].command",
        ),
        (
            json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "true", "if": "Bash(git *"}]}]}),
            "hooks.PreToolUse[0].hooks[0].if",
        ),
    ];
    for (hooks, key) in cases {
        let fx = Fixture::new();
        let run = fx.run(hooks, "bypassPermissions", &[bash("a1", "echo hi")]);
        assert_eq!(run.code, Some(2), "{key}: {run:?}");
        assert!(
            run.stderr.contains("settings.json"),
            "{key}: {}",
            run.stderr
        );
        assert!(run.stderr.contains(key), "{key}: {}", run.stderr);
        assert!(run.lines.is_empty(), "{key}: {:?}", run.lines);
    }
}

#[test]
fn empty_star_and_missing_matchers_match_every_tool() {
    let fx = Fixture::new();
    let (l1, log1) = fx.logger("empty");
    let (l2, log2) = fx.logger("star");
    let (l3, log3) = fx.logger("missing");
    let hooks = json!({"PreToolUse": [
        group("", &[&l1]),
        group("*", &[&l2]),
        {"hooks": [{"type": "command", "command": l3}]},
    ]});
    let run = fx.run(hooks, "bypassPermissions", &bash_read_write(&fx)[..2]);
    assert_eq!(run.outcome("a1"), "success");
    assert_eq!(run.outcome("a2"), "success");
    for log in [log1, log2, log3] {
        assert_eq!(tools_seen(&log), ["Bash", "Read"], "{}", log.display());
    }
}

/// The tool names a logger hook saw, sorted.
fn tools_seen(log: &std::path::Path) -> Vec<String> {
    let mut tools: Vec<String> = log_lines(log)
        .iter()
        .map(|l| l["input"]["tool_name"].as_str().unwrap().to_owned())
        .collect();
    tools.sort();
    tools
}

/// Calls `a1` Bash, `a2` Read of `a.txt` (written here) and `a3` Write of `new.txt`.
fn bash_read_write(fx: &Fixture) -> [Value; 3] {
    std::fs::write(fx.cwd().join("a.txt"), "hello").unwrap();
    [
        bash("a1", "echo hi"),
        call("a2", "Read", json!({"file_path": "a.txt"})),
        call(
            "a3",
            "Write",
            json!({"file_path": "new.txt", "content": "x"}),
        ),
    ]
}

/// One logger hook per matcher, then [`bash_read_write`] in bypass mode: the run, and per
/// matcher (in order) the tools its hook saw.
fn tools_per_matcher(matchers: &[&str]) -> (Run, Vec<Vec<String>>) {
    let fx = Fixture::new();
    let loggers: Vec<(String, std::path::PathBuf)> = (0..matchers.len())
        .map(|i| fx.logger(&format!("m{i}")))
        .collect();
    let groups: Vec<Value> = matchers
        .iter()
        .zip(&loggers)
        .map(|(m, (cmd, _))| group(m, &[cmd]))
        .collect();
    let run = fx.run(
        json!({"PreToolUse": groups}),
        "bypassPermissions",
        &bash_read_write(&fx),
    );
    let seen = loggers.iter().map(|(_, log)| tools_seen(log)).collect();
    (run, seen)
}

#[test]
fn plain_matchers_are_exact_case_sensitive_names_and_lists() {
    let (run, seen) =
        tools_per_matcher(&["Read|Write", "Bash, Read", "bash", "Bas", "mcp__memory"]);
    for id in ["a1", "a2", "a3"] {
        assert_eq!(run.outcome(id), "success", "{id}");
    }
    assert_eq!(seen[0], ["Read", "Write"]);
    assert_eq!(seen[1], ["Bash", "Read"]);
    assert!(seen[2].is_empty(), "matchers are case-sensitive");
    assert!(
        seen[3].is_empty(),
        "plain names match exactly, not as prefixes"
    );
    assert!(seen[4].is_empty(), "mcp__memory names no tool");
}

#[test]
fn other_matchers_are_unanchored_case_sensitive_regexes() {
    let (run, seen) = tools_per_matcher(&["a.h", "^Wr", "ea.$", "BASH.*"]);
    assert_eq!(run.outcome("a3"), "success");
    assert_eq!(seen[0], ["Bash"]);
    assert_eq!(seen[1], ["Write"]);
    assert_eq!(seen[2], ["Read"]);
    assert!(seen[3].is_empty());
}

#[test]
fn if_rule_selects_calls_including_compound_commands() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("if");
    let hooks = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": logger, "if": "Bash(git *)"}
    ]}]});
    let run = fx.run(
        hooks,
        "bypassPermissions",
        &[
            bash("a1", "echo hi"),
            bash("a2", "git status"),
            bash("a3", "echo a && git log -1"),
        ],
    );
    for id in ["a1", "a2", "a3"] {
        run.result(id);
    }
    let mut commands: Vec<String> = log_lines(&log)
        .iter()
        .map(|l| {
            l["input"]["tool_input"]["command"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    commands.sort();
    assert_eq!(commands, ["echo a && git log -1", "git status"]);
}

#[test]
fn timeout_is_in_seconds() {
    let fx = Fixture::new();
    let slow = fx.script(&format!(
        "sleep 30\necho '{}'",
        pre_decision("deny", "too late")
    ));
    let hooks =
        json!({"PreToolUse": [{"hooks": [{"type": "command", "command": slow, "timeout": 1}]}]});
    fx.settings(json!({ "hooks": hooks }));
    let mut s = fx.serve("bypassPermissions");
    let t = Instant::now();
    s.send(&bash("a1", "echo hi"));
    let r = s.result("a1");
    let took = t.elapsed();
    assert_eq!(r["outcome"], "success");
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let run = s.finish();
    assert_eq!(run.hook_ends("PreToolUse")[0]["outcome"], "timeout");
}

#[test]
fn command_hooks_run_through_the_shell_in_cwd_with_project_dir_and_no_terminal() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("env");
    let shell = fx.hooks.path().join("shell.txt");
    let dollar0 = format!(
        "cat > /dev/null; printf '%s' \"$0\" > '{}'",
        shell.display()
    );
    let run = fx.run_bash_hooks(
        "PreToolUse",
        &[&logger, &dollar0],
        "bypassPermissions",
        "echo hi",
    );
    assert_eq!(run.outcome("a1"), "success");
    let rec = &log_lines(&log)[0];
    assert!(fx.is_cwd(rec["cwd"].as_str().unwrap()), "{rec}");
    assert!(
        fx.is_cwd(rec["claude_project_dir"].as_str().unwrap()),
        "{rec}"
    );
    assert!(
        fx.is_cwd(rec["toolrt_project_dir"].as_str().unwrap()),
        "{rec}"
    );
    assert_eq!(rec["stdin_tty"], false);
    assert_eq!(rec["stdout_tty"], false);
    // `<shell> -c <command>` makes $0 the shell: the user's $SHELL when it is bash, zsh or sh,
    // else /bin/sh (tests/hooks_shell.rs pins $SHELL).
    let user = std::env::var("SHELL").unwrap_or_default();
    let want = match Path::new(&user).file_name().and_then(|n| n.to_str()) {
        Some("bash" | "zsh" | "sh") if user.starts_with('/') => user.clone(),
        _ => "/bin/sh".to_owned(),
    };
    assert_eq!(std::fs::read_to_string(&shell).unwrap(), want);
}

// ---------- §4.3 input ----------

#[test]
fn pretooluse_input_fields() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("input");
    let hooks = json!({"PreToolUse": [group("Bash", &[&logger])]});
    let run = fx.run(
        hooks,
        "bypassPermissions",
        &[bash("a1", "echo hi"), bash("a2", "echo two")],
    );
    run.result("a2");
    let lines = log_lines(&log);
    assert_eq!(lines.len(), 2);
    let input = lines
        .iter()
        .map(|l| &l["input"])
        .find(|i| i["tool_use_id"] == "a1")
        .unwrap();
    assert!(input["session_id"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(fx.is_cwd(input["cwd"].as_str().unwrap()));
    assert_eq!(input["permission_mode"], "bypassPermissions");
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert!(
        input.get("transcript_path").is_some(),
        "transcript_path is present (may be null)"
    );
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"], json!({"command": "echo hi"}));
    // One session id per server run.
    assert_eq!(
        lines[0]["input"]["session_id"],
        lines[1]["input"]["session_id"]
    );
}

#[test]
fn file_paths_reach_hooks_absolute() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.cwd().join("sub")).unwrap();
    std::fs::write(fx.cwd().join("a.txt"), "hello").unwrap();
    let (logger, log) = fx.logger("paths");
    let hooks = json!({"PreToolUse": [group("Read|Write", &[&logger])]});
    let run = fx.run(
        hooks,
        "bypassPermissions",
        &[
            call("a1", "Read", json!({"file_path": "sub/../a.txt"})),
            call(
                "a2",
                "Write",
                json!({"file_path": "./sub/b.txt", "content": "x"}),
            ),
        ],
    );
    run.result("a2");
    for rec in log_lines(&log) {
        let path = rec["input"]["tool_input"]["file_path"]
            .as_str()
            .unwrap()
            .to_owned();
        let p = std::path::Path::new(&path);
        assert!(p.is_absolute(), "{path}");
        assert!(!path.contains("/./") && !path.contains("/../"), "{path}");
        let parent = if path.ends_with("a.txt") {
            p.parent().unwrap()
        } else {
            p.parent().unwrap().parent().unwrap()
        };
        assert!(fx.is_cwd(&parent.to_string_lossy()), "{path}");
    }
}

// ---------- §4.4 output ----------

#[test]
fn exit_0_json_deny_blocks_and_the_model_sees_the_reason() {
    let fx = Fixture::new();
    let hook = fx.json_hook(pre_decision("deny", "use the safe wrapper instead"));
    let run = fx.run_bash_hooks("PreToolUse", &[&hook], "bypassPermissions", "touch made");
    assert_eq!(run.outcome("a1"), "denied");
    assert_eq!(run.result("a1")["is_error"], true);
    assert!(
        run.content("a1").contains("use the safe wrapper instead"),
        "{}",
        run.content("a1")
    );
    assert!(!fx.cwd().join("made").exists());
}

#[test]
fn exit_0_non_json_stdout_is_ignored() {
    let fx = Fixture::new();
    let hook = fx.script("cat > /dev/null\necho deny\necho '{\"not\": \"first\"}'");
    let run = fx.run_bash_hooks("PreToolUse", &[&hook], "bypassPermissions", "echo hi");
    assert_eq!(run.outcome("a1"), "success");
    assert_eq!(run.hook_ends("PreToolUse")[0]["outcome"], "success");
}

#[test]
fn exit_0_json_after_leading_whitespace_counts() {
    let fx = Fixture::new();
    let data = fx.write_data(&format!("\n   {}", pre_decision("deny", "ws")));
    let hook = fx.script(&format!("cat > /dev/null\ncat '{data}'"));
    let run = fx.run_bash_hooks("PreToolUse", &[&hook], "bypassPermissions", "echo hi");
    assert_eq!(run.outcome("a1"), "denied");
}

#[test]
fn exit_2_blocks_with_stderr_in_every_mode() {
    for mode in [
        "default",
        "acceptEdits",
        "plan",
        "dontAsk",
        "bypassPermissions",
    ] {
        let fx = Fixture::new();
        let hook = fx.stderr_hook("rm is not allowed here", 2);
        let run = fx.run_bash_hooks("PreToolUse", &[&hook], mode, "echo hi");
        assert_eq!(run.outcome("a1"), "denied", "{mode}");
        assert!(
            run.content("a1").contains("rm is not allowed here"),
            "{mode}: {}",
            run.content("a1")
        );
        assert!(run.permission_requests().is_empty(), "{mode}");
        let end = run.hook_ends("PreToolUse")[0];
        assert_eq!(end["outcome"], "blocking");
        assert_eq!(end["exit_code"], 2);
    }
}

#[test]
fn exit_2_reason_is_the_json_reason_if_any() {
    let fx = Fixture::new();
    let data = fx.write_data(r#"{"reason": "reason from json"}"#);
    let hook = fx.script(&format!(
        "cat > /dev/null\ncat '{data}'\necho 'stderr text' >&2\nexit 2"
    ));
    let run = fx.run_bash_hooks("PreToolUse", &[&hook], "bypassPermissions", "echo hi");
    assert_eq!(run.outcome("a1"), "denied");
    assert!(
        run.content("a1").contains("reason from json"),
        "{}",
        run.content("a1")
    );
}

#[test]
fn other_exit_codes_are_non_blocking() {
    let fx = Fixture::new();
    let one = fx.stderr_hook("hook crashed", 1);
    let three = fx.stderr_hook("", 3);
    let run = fx.run_bash_hooks(
        "PreToolUse",
        &[&one, &three],
        "bypassPermissions",
        "echo proceeded",
    );
    assert_eq!(run.outcome("a1"), "success");
    assert!(run.content("a1").contains("proceeded"));
    assert!(
        !run.content("a1").contains("hook crashed"),
        "non-blocking stderr is not for the model"
    );
    for end in run.hook_ends("PreToolUse") {
        assert_eq!(end["outcome"], "error");
    }
}

#[test]
fn other_exit_with_valid_json_stdout_decides() {
    let fx = Fixture::new();
    let hook = fx.json_hook_exit(pre_decision("deny", "json decides"), 1);
    let run = fx.run_bash_hooks("PreToolUse", &[&hook], "bypassPermissions", "echo hi");
    assert_eq!(run.outcome("a1"), "denied");
    assert!(run.content("a1").contains("json decides"));
}

#[test]
fn continue_false_stops_the_call_and_the_reason_goes_to_the_client() {
    let fx = Fixture::new();
    let hook = fx.json_hook(json!({"continue": false, "stopReason": "budget exhausted XYZ"}));
    let run = fx.run_bash_hooks("PreToolUse", &[&hook], "bypassPermissions", "touch made");
    assert_eq!(run.outcome("a1"), "stopped");
    assert_eq!(run.result("a1")["is_error"], true);
    assert!(!fx.cwd().join("made").exists(), "the call must not run");
    let stops = run.events("stop");
    assert_eq!(stops.len(), 1);
    assert_eq!(stops[0]["tool_use_id"], "a1");
    assert_eq!(stops[0]["reason"], "budget exhausted XYZ");
    assert!(
        !run.content("a1").contains("budget exhausted XYZ"),
        "stopReason is for the client"
    );
}

#[test]
fn continue_false_cancels_the_not_yet_started_calls_of_the_batch() {
    let fx = Fixture::new();
    let py = fx.write_data(
        r#"import json, sys
d = json.load(sys.stdin)
if "STOP" in d["tool_input"].get("command", ""):
    print(json.dumps({"continue": False, "stopReason": "stop here"}))
"#,
    );
    let hook = format!("python3 '{py}'");
    let hooks = json!({"PreToolUse": [group("Bash", &[&hook])]});
    let calls = [
        bash("c1", "echo first"),
        bash("c2", "echo STOP"),
        bash("c3", "touch third"),
    ];
    let run = fx.run(hooks, "bypassPermissions", &[batch("b1", &calls)]);
    assert_eq!(run.outcome("c1"), "success");
    assert_eq!(run.outcome("c2"), "stopped");
    assert_eq!(run.outcome("c3"), "cancelled");
    assert!(!fx.cwd().join("third").exists());
    let end = run.events("batch_end");
    assert_eq!(end[0]["ids"], json!(["c1", "c2", "c3"]));
}

#[test]
fn allow_skips_the_prompt() {
    let fx = Fixture::new();
    let hook = fx.json_hook(pre_decision("allow", "trusted"));
    // `touch` is no read-only command: in default mode it would ask.
    let run = fx.run_bash_hooks("PreToolUse", &[&hook], "default", "touch made");
    assert_eq!(run.outcome("a1"), "success");
    assert!(run.permission_requests().is_empty());
    assert!(fx.cwd().join("made").exists());
}

#[test]
fn allow_never_lifts_a_deny_rule() {
    let fx = Fixture::new();
    let hook = fx.json_hook(pre_decision("allow", "trusted"));
    fx.settings(json!({
        "permissions": {"deny": ["Bash(touch *)"]},
        "hooks": {"PreToolUse": [group("Bash", &[&hook])]},
    }));
    let run = fx
        .serve("bypassPermissions")
        .run(&[bash("a1", "touch made")]);
    assert_eq!(run.outcome("a1"), "denied");
    assert!(!fx.cwd().join("made").exists());
}

#[test]
fn allow_never_lifts_an_ask_rule() {
    let fx = Fixture::new();
    let hook = fx.json_hook(pre_decision("allow", "trusted"));
    fx.settings(json!({
        "permissions": {"ask": ["Bash(touch *)"]},
        "hooks": {"PreToolUse": [group("Bash", &[&hook])]},
    }));
    let run = fx.serve("default").run(&[bash("a1", "touch made")]);
    assert_eq!(
        run.permission_requests().len(),
        1,
        "the ask rule still asks"
    );
    assert_eq!(run.outcome("a1"), "denied", "the client denied");
    assert!(!fx.cwd().join("made").exists());
}

#[test]
fn ask_asks_the_client() {
    let fx = Fixture::new();
    let hook = fx.json_hook(pre_decision("ask", "please confirm"));
    let settings = json!({"hooks": {"PreToolUse": [group("Bash", &[&hook])]}});
    // `echo` is read-only: without the hook it would run unasked.
    let run = fx.run_allowing(settings, "default", &[bash("a1", "echo hi")]);
    let reqs = run.permission_requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0]["tool_use_id"], "a1");
    assert_eq!(run.outcome("a1"), "success");
}

#[test]
fn defer_yields_deferred_and_nothing_runs() {
    let fx = Fixture::new();
    let hook = fx.json_hook(pre_decision("defer", "later"));
    let run = fx.run_bash_hooks("PreToolUse", &[&hook], "bypassPermissions", "touch made");
    assert_eq!(run.outcome("a1"), "deferred");
    assert_eq!(run.result("a1")["is_error"], false);
    assert!(!fx.cwd().join("made").exists());
}

#[test]
fn legacy_decision_block_and_approve() {
    let fx = Fixture::new();
    let block = fx.json_hook(json!({"decision": "block", "reason": "legacy says no"}));
    let approve = fx.json_hook(json!({"decision": "approve"}));
    let hooks = json!({"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": block, "if": "Bash(touch blocked*)"}]},
        {"matcher": "Bash", "hooks": [{"type": "command", "command": approve, "if": "Bash(touch approved*)"}]},
    ]});
    let run = fx.run(
        hooks,
        "default",
        &[bash("a1", "touch blocked"), bash("a2", "touch approved")],
    );
    assert_eq!(run.outcome("a1"), "denied");
    assert!(run.content("a1").contains("legacy says no"));
    assert_eq!(run.outcome("a2"), "success");
    assert!(run.permission_requests().is_empty());
    assert!(fx.cwd().join("approved").exists());
}

#[test]
fn updated_input_replaces_the_whole_input() {
    let fx = Fixture::new();
    let hook = fx.json_hook(json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "allow",
        "updatedInput": {"command": "echo rewritten"}}}));
    let (post, post_log) = fx.logger("post");
    let hooks =
        json!({"PreToolUse": [group("Bash", &[&hook])], "PostToolUse": [group("Bash", &[&post])]});
    let run = fx.run(
        hooks,
        "bypassPermissions",
        &[call(
            "a1",
            "Bash",
            json!({"command": "echo original", "timeout": 5000}),
        )],
    );
    assert_eq!(run.outcome("a1"), "success");
    assert!(
        run.content("a1").contains("rewritten"),
        "{}",
        run.content("a1")
    );
    assert!(!run.content("a1").contains("original"));
    let seen = &log_lines(&post_log)[0]["input"]["tool_input"];
    assert_eq!(
        *seen,
        json!({"command": "echo rewritten"}),
        "the whole input is replaced"
    );
}

#[test]
fn rules_are_evaluated_on_the_updated_input() {
    let fx = Fixture::new();
    let hook = fx.json_hook(json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "updatedInput": {"command": "touch sneaky"}}}));
    fx.settings(json!({
        "permissions": {"deny": ["Bash(touch *)"]},
        "hooks": {"PreToolUse": [group("Bash", &[&hook])]},
    }));
    let run = fx
        .serve("bypassPermissions")
        .run(&[bash("a1", "echo harmless")]);
    assert_eq!(run.outcome("a1"), "denied");
    assert!(!fx.cwd().join("sneaky").exists());
}

#[test]
fn updated_input_failing_the_schema_blocks_naming_the_hook() {
    let fx = Fixture::new();
    let hook = fx.json_hook(json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "updatedInput": {"cmd": "echo hi"}}}));
    let run = fx.run_bash_hooks("PreToolUse", &[&hook], "bypassPermissions", "echo hi");
    assert_eq!(run.outcome("a1"), "denied");
    let content = run.content("a1");
    assert!(content.contains(&hook), "names the hook: {content}");
    assert!(
        content.contains("command"),
        "names the schema problem: {content}"
    );
}

#[test]
fn additional_context_is_added_beside_the_result() {
    let fx = Fixture::new();
    let hook = fx.json_hook(json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "additionalContext": "remember the style guide"}}));
    let run = fx.run_bash_hooks("PreToolUse", &[&hook], "bypassPermissions", "echo hi");
    assert_eq!(run.outcome("a1"), "success");
    let content = run.content("a1");
    assert!(content.contains("hi"), "{content}");
    assert!(content.contains("remember the style guide"), "{content}");
}

// ---------- §4.4 several hooks ----------

#[test]
fn decisions_combine_deny_over_defer_over_ask_over_allow() {
    let cases: &[(&[&str], &str, usize)] = &[
        (&["allow", "ask"], "success", 1), // ask wins: the client is asked (and allows)
        (&["ask", "defer"], "deferred", 0),
        (&["allow", "defer"], "deferred", 0),
        (&["defer", "deny"], "denied", 0),
        (&["allow", "deny", "defer", "ask"], "denied", 0),
        (&["allow", "allow"], "success", 0),
    ];
    for (decisions, outcome, asks) in cases {
        let fx = Fixture::new();
        let cmds: Vec<String> = decisions
            .iter()
            .map(|d| fx.json_hook(pre_decision(d, &format!("hook says {d}"))))
            .collect();
        let refs: Vec<&str> = cmds.iter().map(String::as_str).collect();
        let settings = json!({"hooks": {"PreToolUse": [group("Bash", &refs)]}});
        let run = fx.run_allowing(settings, "default", &[bash("a1", "touch made")]);
        assert_eq!(run.outcome("a1"), *outcome, "{decisions:?}");
        assert_eq!(run.permission_requests().len(), *asks, "{decisions:?}");
    }
}

#[test]
fn last_updated_input_in_configuration_order_wins() {
    let fx = Fixture::new();
    let rewrite = |text: &str| {
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "updatedInput": {"command": format!("echo {text}")}}})
    };
    // The first hook finishes last; configuration order, not finish order, decides.
    let data = fx.write_data(&rewrite("from-first").to_string());
    let slow_first = fx.script(&format!("cat > /dev/null\nsleep 1\ncat '{data}'"));
    let fast_second = fx.json_hook(rewrite("from-second"));
    let hooks = json!({"PreToolUse": [group("Bash", &[&slow_first]), group("*", &[&fast_second])]});
    let run = fx.run(hooks, "bypassPermissions", &[bash("a1", "echo original")]);
    assert!(
        run.content("a1").contains("from-second"),
        "{}",
        run.content("a1")
    );
}

#[test]
fn matching_hooks_run_in_parallel() {
    let fx = Fixture::new();
    let cmds: Vec<String> = (0..3)
        .map(|i| fx.script(&format!("cat > /dev/null\nsleep 1\necho '{{}}' # {i}")))
        .collect();
    let refs: Vec<&str> = cmds.iter().map(String::as_str).collect();
    fx.settings(json!({"hooks": {"PreToolUse": [group("Bash", &refs)]}}));
    let mut s = fx.serve("bypassPermissions");
    // Warm up the server so its start-up is not timed.
    s.send(&bash("w", "echo warm"));
    s.result("w");
    let t = Instant::now();
    s.send(&bash("a1", "echo hi"));
    s.result("a1");
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(950), "{took:?}");
    assert!(
        took < Duration::from_millis(2500),
        "three 1 s hooks took {took:?}: not parallel"
    );
    s.finish();
}

#[test]
fn identical_commands_run_once() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("dup");
    let hooks = json!({"PreToolUse": [group("Bash", &[&logger]), group("*", &[&logger])]});
    let run = fx.run(hooks, "bypassPermissions", &[bash("a1", "echo hi")]);
    assert_eq!(run.outcome("a1"), "success");
    assert_eq!(log_lines(&log).len(), 1);
    assert_eq!(run.events("hook_start").len(), 1);
}

#[test]
fn a_timed_out_hook_gives_no_decision() {
    let fx = Fixture::new();
    let data = fx.write_data(&pre_decision("deny", "too late").to_string());
    let slow = fx.script(&format!("cat > /dev/null\nsleep 30\ncat '{data}'"));
    let ask = fx.json_hook(pre_decision("allow", "fine"));
    let hooks = json!({"PreToolUse": [
        {"hooks": [{"type": "command", "command": slow, "timeout": 1}]},
        group("Bash", &[&ask]),
    ]});
    let run = fx.run(hooks, "default", &[bash("a1", "touch made")]);
    assert_eq!(run.outcome("a1"), "success", "only the allow counts");
    assert!(fx.cwd().join("made").exists());
}

// ---------- wire events and when hooks fire ----------

#[test]
fn hook_start_and_hook_end_events() {
    let fx = Fixture::new();
    let long = format!("cat > /dev/null; true # {}", "x".repeat(300));
    let run = fx.run_bash_hooks("PreToolUse", &[&long], "bypassPermissions", "echo hi");
    let start = run.events("hook_start");
    let end = run.events("hook_end");
    assert_eq!((start.len(), end.len()), (1, 1));
    assert_eq!(start[0]["hook_event"], "PreToolUse");
    assert_eq!(start[0]["tool_use_id"], "a1");
    assert_eq!(start[0]["command"].as_str().unwrap().chars().count(), 200);
    assert!(long.starts_with(start[0]["command"].as_str().unwrap()));
    assert_eq!(end[0]["hook_event"], "PreToolUse");
    assert_eq!(end[0]["tool_use_id"], "a1");
    assert_eq!(end[0]["exit_code"], 0);
    assert!(end[0]["duration_ms"].is_u64());
    assert_eq!(end[0]["outcome"], "success");
    let pos = |pred: &dyn Fn(&Value) -> bool| run.lines.iter().position(pred).unwrap();
    assert!(
        pos(&|l| l["event"] == "hook_end") < pos(&|l| l["type"] == "tool_result"),
        "PreToolUse ends before the result"
    );
}

#[test]
fn no_hooks_fire_for_unavailable_schema_or_validation_errors() {
    let fx = Fixture::new();
    std::fs::write(fx.cwd().join("existing.txt"), "old").unwrap();
    let (logger, log) = fx.logger("never");
    let hooks = json!({
        "PreToolUse": [group("", &[&logger])],
        "PostToolUse": [group("", &[&logger])],
        "PostToolUseFailure": [group("", &[&logger])],
    });
    let run = fx.run(
        hooks,
        "bypassPermissions",
        &[
            call("u1", "NoSuchTool", json!({})),
            call("s1", "Bash", json!({"commandd": "echo hi"})),
            // Write over an existing file that was never read: a validation error.
            call(
                "v1",
                "Write",
                json!({"file_path": "existing.txt", "content": "new"}),
            ),
        ],
    );
    assert_eq!(run.outcome("u1"), "unavailable");
    assert_eq!(run.outcome("s1"), "schema_error");
    assert_eq!(run.outcome("v1"), "validation_error");
    assert!(log_lines(&log).is_empty());
    assert!(run.events("hook_start").is_empty());
}

#[test]
fn a_denial_fires_pretooluse_only() {
    let fx = Fixture::new();
    let (pre, pre_log) = fx.logger("pre");
    let (post, post_log) = fx.logger("post");
    let (fail, fail_log) = fx.logger("fail");
    fx.settings(json!({
        "permissions": {"deny": ["Bash(touch *)"]},
        "hooks": {
            "PreToolUse": [group("Bash", &[&pre])],
            "PostToolUse": [group("Bash", &[&post])],
            "PostToolUseFailure": [group("Bash", &[&fail])],
        },
    }));
    let run = fx
        .serve("bypassPermissions")
        .run(&[bash("a1", "touch made")]);
    assert_eq!(run.outcome("a1"), "denied");
    assert_eq!(log_lines(&pre_log).len(), 1);
    assert!(log_lines(&post_log).is_empty());
    assert!(log_lines(&fail_log).is_empty());
}
