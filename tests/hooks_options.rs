//! The per-hook keys besides `command`: `onFailure` (what a hook that fails does), `async`
//! (runs in the background, reported by its own `hook_end`), `once`, `statusMessage`, and the
//! `systemMessage` a hook prints (an `event` `hook_message` for the client, never the model).

mod hooks_support;
mod support;

use hooks_support::*;
use serde_json::{Value, json};

fn hook(command: &str, extra: Value) -> Value {
    let mut h = json!({"type": "command", "command": command});
    for (k, v) in extra.as_object().unwrap() {
        h[k] = v.clone();
    }
    h
}

#[test]
fn on_failure_continue_lets_the_call_go_ahead_and_block_blocks_it() {
    let fx = Fixture::new();
    let exit1 = fx.stderr_hook("lint crashed", 1);
    let bad_json = fx.script("cat > /dev/null\necho '{not json'");
    let slow = fx.script("cat > /dev/null\nsleep 30");
    // (name, command, timeout, what hook_end's error says)
    let failures: [(&str, &str, Option<f64>, &str); 4] = [
        ("exit1", &exit1, None, "exit code 1: lint crashed"),
        ("json", &bad_json, None, "not a valid JSON object"),
        ("timeout", &slow, Some(0.5), "timed out after 0.5 s"),
        ("missing", "/no/such/hook.sh", None, "exit code 127"),
    ];
    for (name, command, timeout, why) in failures {
        for on_failure in ["continue", "block"] {
            let mut extra = json!({"onFailure": on_failure});
            if let Some(t) = timeout {
                extra["timeout"] = json!(t);
            }
            let run = fx.run(
                json!({"PreToolUse": [{"matcher": "Bash", "hooks": [hook(command, extra)]}]}),
                "bypassPermissions",
                &[bash("a1", "echo went ahead")],
            );
            let end = run.hook_ends("PreToolUse")[0];
            let error = end["error"].as_str().unwrap_or_default();
            assert!(error.contains(why), "{name}/{on_failure}: {end}");
            if on_failure == "continue" {
                assert_eq!(run.outcome("a1"), "success", "{name}: {:#?}", run.lines);
                assert_eq!(run.content("a1").trim(), "went ahead", "{name}");
            } else {
                assert_eq!(run.outcome("a1"), "denied", "{name}: {:#?}", run.lines);
                assert!(
                    run.content("a1").contains(why),
                    "{name}: {}",
                    run.content("a1")
                );
                assert_eq!(end["outcome"], "blocking", "{name}");
            }
        }
    }
}

#[test]
fn on_failure_block_on_permission_request_denies() {
    let fx = Fixture::new();
    let exit1 = fx.stderr_hook("policy service down", 1);
    fx.settings(
        json!({"hooks": {"PermissionRequest": [{"matcher": "Bash", "hooks": [
            hook(&exit1, json!({"onFailure": "block"}))
        ]}]}}),
    );
    let mut session = fx.serve("default");
    session.answer(allow_all());
    let run = session.run(&[bash("a1", "touch x")]);
    assert_eq!(run.outcome("a1"), "denied");
    assert!(
        run.permission_requests().is_empty(),
        "the client is not asked"
    );
    assert!(run.content("a1").contains("policy service down"));
    assert!(!fx.cwd().join("x").exists());
}

#[test]
fn an_async_hook_never_delays_the_call_and_reports_its_output_later() {
    let fx = Fixture::new();
    let go = fx.hooks.path().join("go");
    let waiter = fx.script(&format!(
        "cat > /dev/null\nwhile [ ! -e '{}' ]; do sleep 0.02; done\necho '{{\"systemMessage\": \"async says hi\"}}'\necho late-stderr >&2\nexit 2",
        go.display()
    ));
    fx.settings(
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            hook(&waiter, json!({"async": true}))
        ]}]}}),
    );
    let mut session = fx.serve("bypassPermissions");
    session.send(&bash("a1", "echo done"));
    // The result comes while the hook is still waiting for `go`: nothing waited for it.
    let r = session.result("a1");
    assert_eq!(
        r["outcome"], "success",
        "an async hook's exit 2 blocks nothing: {r}"
    );
    assert!(
        !session.lines().iter().any(|l| l["event"] == "hook_end"),
        "the hook cannot have ended yet: {:#?}",
        session.lines()
    );
    std::fs::write(&go, "").unwrap();
    let end = session.wait_for("the async hook_end", |l| l["event"] == "hook_end");
    assert_eq!(end["async"], true);
    assert_eq!(end["tool_use_id"], "a1");
    assert_eq!(end["exit_code"], 2);
    assert!(
        end["stdout"].as_str().unwrap().contains("async says hi"),
        "{end}"
    );
    assert_eq!(end["stderr"].as_str().unwrap().trim(), "late-stderr");
    let msg = session.wait_for("hook_message", |l| l["event"] == "hook_message");
    assert_eq!(msg["message"], "async says hi");
    let start = &session
        .lines()
        .iter()
        .find(|l| l["event"] == "hook_start")
        .unwrap()
        .clone();
    assert_eq!(start["async"], true);
    let run = session.finish();
    assert_eq!(run.code, Some(0));
}

#[test]
fn async_hooks_still_running_at_shutdown_are_ended() {
    let fx = Fixture::new();
    let pidfile = fx.hooks.path().join("pid");
    let forever = fx.script(&format!(
        // Written whole (a rename), so the test never reads a pid file that is still empty.
        "echo $$ > '{0}.tmp' && mv '{0}.tmp' '{0}'\nexec sleep 1000",
        pidfile.display()
    ));
    fx.settings(
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            hook(&forever, json!({"async": true}))
        ]}]}}),
    );
    let mut session = fx.serve("bypassPermissions");
    session.send(&bash("a1", "echo done"));
    session.result("a1");
    support::wait_file(&pidfile);
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // EOF: SessionEnd, a few seconds for async hooks, then they are killed.
    let run = session.finish();
    assert_eq!(run.code, Some(0));
    let end = run.hook_ends("PreToolUse")[0];
    assert_eq!(end["outcome"], "cancelled", "{end}");
    assert!(!support::pid_alive(pid), "the async hook's process is gone");
}

#[test]
fn a_flood_of_async_hooks_is_bounded() {
    let fx = Fixture::new();
    std::fs::write(fx.cwd().join("f.txt"), "x").unwrap();
    let go = fx.hooks.path().join("go");
    let waiter = fx.script(&format!(
        "cat > /dev/null\nwhile [ ! -e '{}' ]; do sleep 0.05; done",
        go.display()
    ));
    fx.settings(
        json!({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [
            hook(&waiter, json!({"async": true}))
        ]}]}}),
    );
    let mut session = fx.serve("default");
    let n = 300;
    let file = fx.cwd().join("f.txt").to_string_lossy().into_owned();
    for i in 0..n {
        session.send(&call(&format!("r{i}"), "Read", json!({"file_path": file})));
    }
    for i in 0..n {
        assert_eq!(session.result(&format!("r{i}"))["outcome"], "success");
    }
    std::fs::write(&go, "").unwrap();
    let run = session.finish();
    let ends = run.hook_ends("PreToolUse");
    assert_eq!(ends.len(), n, "every run is accounted for");
    let skipped = ends
        .iter()
        .filter(|e| {
            e["error"]
                .as_str()
                .is_some_and(|s| s.starts_with("not run: 256 async hooks"))
        })
        .count();
    assert_eq!(
        skipped,
        n - 256,
        "past 256 at once, runs are skipped and reported"
    );
    assert_eq!(
        ends.iter().filter(|e| e["outcome"] == "success").count(),
        256
    );
}

#[test]
fn a_once_hook_runs_for_the_first_matching_call_only() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("once");
    let run = fx.run(
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [hook(&logger, json!({"once": true}))]}]}),
        "bypassPermissions",
        &[bash("a1", "echo 1"), bash("a2", "echo 2"), bash("a3", "echo 3")],
    );
    for id in ["a1", "a2", "a3"] {
        assert_eq!(run.outcome(id), "success");
    }
    assert_eq!(log_lines(&log).len(), 1);
    assert_eq!(run.events("hook_start").len(), 1);
}

#[test]
fn status_message_rides_on_hook_start() {
    let fx = Fixture::new();
    let ok = fx.script("cat > /dev/null");
    let run = fx.run(
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [hook(&ok, json!({"statusMessage": "Checking policy…"}))]}]}),
        "bypassPermissions",
        &[bash("a1", "echo 1")],
    );
    let start = run.events("hook_start")[0];
    assert_eq!(start["status_message"], "Checking policy…");
    assert!(
        run.hook_ends("PreToolUse")[0]
            .get("status_message")
            .is_none()
    );
}

#[test]
fn system_message_goes_to_the_client_not_the_model() {
    let fx = Fixture::new();
    let pre = fx.json_hook(json!({"systemMessage": "pre says hi"}));
    let post = fx.json_hook(json!({"systemMessage": "post says hi"}));
    let run = fx.run(
        json!({
            "PreToolUse": [group("Bash", &[&pre])],
            "PostToolUse": [group("Bash", &[&post])]
        }),
        "bypassPermissions",
        &[bash("a1", "echo out")],
    );
    assert_eq!(run.outcome("a1"), "success");
    assert_eq!(run.content("a1").trim(), "out");
    let msgs: Vec<(&str, &str, &str)> = run
        .events("hook_message")
        .iter()
        .map(|m| {
            (
                m["hook_event"].as_str().unwrap(),
                m["tool_use_id"].as_str().unwrap(),
                m["message"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        msgs,
        [
            ("PreToolUse", "a1", "pre says hi"),
            ("PostToolUse", "a1", "post says hi")
        ]
    );
}

#[test]
fn a_hook_that_floods_its_output_is_cut_and_the_call_proceeds() {
    let fx = Fixture::new();
    // 20 MiB on stdout and stderr, then a decision that must not be read from a cut stream.
    let flood = fx.script(
        "cat > /dev/null\nhead -c 20000000 /dev/zero | tr '\\0' x\nhead -c 20000000 /dev/zero | tr '\\0' y >&2\nexit 1",
    );
    let run = fx.run(
        json!({"PreToolUse": [group("Bash", &[&flood])]}),
        "bypassPermissions",
        &[bash("a1", "echo fine")],
    );
    assert_eq!(run.outcome("a1"), "success");
    let end = run.hook_ends("PreToolUse")[0];
    assert!(end["dropped_bytes"].as_u64().unwrap() > 30_000_000, "{end}");
    assert!(
        end["error"].as_str().unwrap().len() <= 2_100,
        "the diagnostic is cut"
    );
}

#[test]
fn an_async_hooks_reported_output_is_its_first_2000_characters() {
    let fx = Fixture::new();
    // 3,000 two-byte characters on each stream: cut by characters, not bytes.
    let noisy =
        fx.script("cat > /dev/null\nprintf 'é%.0s' $(seq 3000)\nprintf 'ß%.0s' $(seq 3000) >&2");
    fx.settings(
        json!({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
            hook(&noisy, json!({"async": true}))
        ]}]}}),
    );
    let mut session = fx.serve("bypassPermissions");
    session.send(&bash("a1", "echo done"));
    let end = session.wait_for("the async hook_end", |l| l["event"] == "hook_end");
    assert_eq!(end["async"], true);
    assert_eq!(end["stdout"], "é".repeat(2000));
    assert_eq!(end["stderr"], "ß".repeat(2000));
    assert_eq!(session.finish().code, Some(0));
}
