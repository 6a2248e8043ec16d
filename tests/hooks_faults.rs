//! Black-box fault tests of hooks: hangs, floods, missing scripts, signals, closed stdin,
//! through `toolrt serve`. Every call must still get exactly one result.

mod hooks_support;
mod support;

use std::time::{Duration, Instant};

use hooks_support::*;
use serde_json::{Value, json};
use support::{read_pid, status_kib, wait_gone_within};

#[test]
fn a_hanging_hook_is_killed_with_its_children_and_the_call_proceeds() {
    let fx = Fixture::new();
    let pidfile = fx.hooks.path().join("child.pid");
    let hang = fx.script(&format!(
        "cat > /dev/null\nsleep 300 &\necho $! > '{}'\nwait\necho '{}'",
        pidfile.display(),
        pre_decision("deny", "too late")
    ));
    let hooks =
        json!({"PreToolUse": [{"hooks": [{"type": "command", "command": hang, "timeout": 1}]}]});
    fx.settings(json!({ "hooks": hooks }));
    let mut s = fx.serve("bypassPermissions");
    let t = Instant::now();
    s.send(&bash("a1", "echo proceeded"));
    let r = s.result("a1");
    assert!(t.elapsed() < Duration::from_secs(10));
    assert_eq!(r["outcome"], "success");
    assert!(r["content"].as_str().unwrap().contains("proceeded"));
    let run = s.finish();
    assert_eq!(run.hook_ends("PreToolUse")[0]["outcome"], "timeout");
    let pid = read_pid(&pidfile);
    assert!(
        wait_gone_within(pid, Duration::from_secs(5)),
        "the hook's child {pid} survived its timeout"
    );
}

/// (VmHWM, VmRSS) of a process, in KiB.
fn memory_kib(pid: u32) -> (u64, u64) {
    (status_kib(pid, "VmHWM"), status_kib(pid, "VmRSS"))
}

#[test]
fn a_hook_printing_50_mb_keeps_memory_bounded() {
    let fx = Fixture::new();
    let flood = fx.script(
        "cat > /dev/null\nhead -c 50000000 /dev/zero | tr '\\0' a\nhead -c 50000000 /dev/zero | tr '\\0' b >&2\nexit 2",
    );
    let hooks = json!({"PostToolUse": [group("Bash", &[&flood])]});
    fx.settings(json!({ "hooks": hooks }));
    let mut s = fx.serve("bypassPermissions");
    // A first call warms the server up so its baseline includes the runtime.
    s.send(&bash("w", "echo warm"));
    s.result("w");
    let (hwm_before, _) = memory_kib(s.pid());
    s.send(&bash("a1", "echo hi"));
    let r = s.result("a1");
    let (hwm_after, rss_after) = memory_kib(s.pid());
    eprintln!("server VmHWM {hwm_before} -> {hwm_after} KiB, VmRSS now {rss_after} KiB");
    assert_eq!(r["outcome"], "success");
    // The exit-2 stderr is feedback, but only a bounded, externalized part of it.
    let content = r["content"].as_str().unwrap();
    assert!(content.len() < 100_000, "{} bytes", content.len());
    assert!(
        hwm_after.saturating_sub(hwm_before) < 16 * 1024,
        "peak RSS grew by {} KiB",
        hwm_after - hwm_before
    );
    s.finish();
}

#[test]
fn a_hook_that_does_not_exist_fails_open() {
    let fx = Fixture::new();
    let missing = fx.hooks.path().join("no-such-hook.sh");
    let not_executable = fx.write_data("#!/bin/sh\necho '{}'\n");
    let hooks =
        json!({"PreToolUse": [group("Bash", &[&missing.to_string_lossy(), &not_executable])]});
    let run = fx.run(hooks, "bypassPermissions", &[bash("a1", "echo proceeded")]);
    assert_eq!(run.outcome("a1"), "success");
    assert!(run.content("a1").contains("proceeded"));
    let ends = run.hook_ends("PreToolUse");
    assert_eq!(ends.len(), 2);
    for end in ends {
        assert_eq!(end["outcome"], "error");
        assert!(end["exit_code"] == 127 || end["exit_code"] == 126 || end["exit_code"].is_null());
    }
}

#[test]
fn exit_2_with_a_json_allow_blocks() {
    let fx = Fixture::new();
    let data = fx.write_data(&pre_decision("allow", "looks fine").to_string());
    let hook = fx.script(&format!(
        "cat > /dev/null\ncat '{data}'\necho 'blocked by policy' >&2\nexit 2"
    ));
    let run = fx.run_bash_hooks("PreToolUse", &[&hook], "bypassPermissions", "touch made");
    assert_eq!(run.outcome("a1"), "denied");
    assert!(
        run.content("a1").contains("blocked by policy"),
        "{}",
        run.content("a1")
    );
    assert!(!fx.cwd().join("made").exists());
}

#[test]
fn a_hook_killed_by_a_signal_is_a_non_blocking_error() {
    let fx = Fixture::new();
    let data = fx.write_data(&pre_decision("deny", "half-written").to_string());
    // Inline, so `$$` is the `sh -c` shell itself (a script file would run as its child, and
    // the shell would then exit normally with 137).
    let hook = format!("cat > /dev/null; cat '{data}'; kill -9 $$");
    let run = fx.run_bash_hooks(
        "PreToolUse",
        &[&hook],
        "bypassPermissions",
        "echo proceeded",
    );
    assert_eq!(run.outcome("a1"), "success");
    let end = run.hook_ends("PreToolUse")[0];
    assert_eq!(end["outcome"], "error");
    assert!(end["exit_code"].is_null());
}

#[test]
fn a_hook_that_closes_stdin_at_once_neither_fails_nor_hangs() {
    let fx = Fixture::new();
    let data = fx.write_data(&pre_decision("deny", "read nothing, still decided").to_string());
    let closer = fx.script(&format!("exec 0<&-\ncat '{data}'"));
    let never_reads = fx.script("exit 0");
    let hooks = json!({"PreToolUse": [group("Write", &[&closer, &never_reads])]});
    // An input far larger than a pipe buffer.
    let big = "x".repeat(2_000_000);
    let run = fx.run(
        hooks,
        "bypassPermissions",
        &[call(
            "a1",
            "Write",
            json!({"file_path": "big.txt", "content": big}),
        )],
    );
    assert_eq!(run.outcome("a1"), "denied");
    assert!(run.content("a1").contains("read nothing, still decided"));
    assert!(!fx.cwd().join("big.txt").exists());
}

#[test]
fn broken_hooks_never_break_the_protocol() {
    let fx = Fixture::new();
    let garbage = fx.script("cat > /dev/null\nprintf '{\"hookSpecificOutput\": '\nexit 0");
    let binary = fx.script("cat > /dev/null\nhead -c 4096 /dev/urandom\nexit 1");
    let crash = fx.script("cat > /dev/null\nkill -SEGV $$");
    let hooks = json!({
        "PreToolUse": [group("", &[&garbage, &binary, &crash])],
        "PostToolUse": [group("", &[&garbage, &binary, &crash])],
        "PostToolBatch": [group("", &[&garbage, &binary, &crash])],
    });
    let calls: Vec<Value> = (0..5)
        .map(|i| bash(&format!("c{i}"), &format!("echo {i}")))
        .collect();
    let run = fx.run(
        hooks,
        "bypassPermissions",
        &[batch("b1", &calls), bash("a1", "echo solo")],
    );
    // The harness already checked every stdout line is one JSON object.
    for i in 0..5 {
        assert_eq!(run.outcome(&format!("c{i}")), "success");
    }
    assert_eq!(run.outcome("a1"), "success");
    assert_eq!(run.code, Some(0));
}

/// As the reference CLI does, a `hookSpecificOutput` without `hookEventName` (or naming another
/// event) makes the whole output invalid: the call runs as if the hook had said nothing, and
/// `hook_end` says why the output was ignored. An exit 2 still blocks.
#[test]
fn hook_specific_output_without_its_event_name_is_ignored_and_reported() {
    let fx = Fixture::new();
    let missing = fx.json_hook(json!({"systemMessage": "seen", "hookSpecificOutput": {
        "permissionDecision": "deny", "permissionDecisionReason": "no"}}));
    let other = fx.json_hook(json!({"hookSpecificOutput": {
        "hookEventName": "PostToolUse", "permissionDecision": "deny"}}));
    for (hook, why) in [(&missing, "no hookEventName"), (&other, "\"PostToolUse\"")] {
        let run = fx.run_bash_hooks("PreToolUse", &[hook], "bypassPermissions", "echo ran");
        assert_eq!(run.outcome("a1"), "success", "{:#?}", run.lines);
        assert_eq!(run.content("a1").trim(), "ran");
        assert!(
            run.events("hook_message").is_empty(),
            "nothing of it is obeyed"
        );
        let end = run.hook_ends("PreToolUse")[0];
        assert_eq!(end["outcome"], "error");
        let error = end["error"].as_str().unwrap();
        assert!(
            error.contains("invalid output ignored") && error.contains(why),
            "{error}"
        );
    }
    // Named, it decides.
    let named = fx.json_hook(pre_decision("deny", "no"));
    let run = fx.run_bash_hooks("PreToolUse", &[&named], "bypassPermissions", "echo ran");
    assert_eq!(run.outcome("a1"), "denied");
    // Exit 2 blocks whatever it printed.
    let blocking = fx.json_hook_exit(
        json!({"hookSpecificOutput": {"permissionDecision": "allow"}}),
        2,
    );
    let run = fx.run_bash_hooks("PreToolUse", &[&blocking], "bypassPermissions", "echo ran");
    assert_eq!(run.outcome("a1"), "denied");
}

/// A job a hook detached on purpose (`nohup … >/dev/null 2>&1 &`: its output redirected, so
/// nothing holds the hook's pipes once it exits) lives on, as the reference CLI lets it; a child
/// still holding the pipes is killed after the grace (tested beside the runner).
#[test]
fn a_fully_detached_job_a_hook_started_lives_on() {
    let fx = Fixture::new();
    let marker = fx.hooks.path().join("marker");
    let hook = format!(
        "nohup sh -c \"sleep 1; touch '{}'\" >/dev/null 2>&1 &",
        marker.display()
    );
    let run = fx.run_bash_hooks("PreToolUse", &[&hook], "bypassPermissions", "echo hi");
    assert_eq!(run.outcome("a1"), "success");
    assert_eq!(run.hook_ends("PreToolUse")[0]["outcome"], "success");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !marker.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(marker.exists(), "the detached job was killed");
}
