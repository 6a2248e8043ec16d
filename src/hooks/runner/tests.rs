//! The hook runner with real processes: sh and python3 hook scripts written into temp dirs.

#[path = "../../../tests/support/procfs.rs"]
mod procfs;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use self::procfs::{process_gone, read_pid, wait_gone_within};
use crate::hooks::{
    BatchCallRecord, HookConfig, HookEnv, HookEvent, HookOutput, HookPermission, HookRunner,
    IfFilter, InProcessHook, PermissionRequestDecision, ToolHookCall,
};
use serde_json::{Map, Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// `Bash(prefix *)` matches commands starting with `prefix`; anything else matches by tool name.
struct PrefixFilter;

impl IfFilter for PrefixFilter {
    fn matches(&self, rule: &str, call: &ToolHookCall<'_>) -> bool {
        let (tool, input) = (call.tool_name, call.tool_input);
        match rule
            .strip_prefix("Bash(")
            .and_then(|r| r.strip_suffix(" *)"))
        {
            Some(prefix) => {
                tool == "Bash"
                    && input
                        .get("command")
                        .and_then(Value::as_str)
                        .is_some_and(|c| c.starts_with(prefix))
            }
            None => rule == tool,
        }
    }
}

struct Harness {
    dir: TempDir,
    events: Arc<Mutex<Vec<Value>>>,
    runner: HookRunner,
}

impl Harness {
    fn new(hooks: Value) -> Self {
        Self::with(hooks, |_| {}, Vec::new(), |_| {})
    }

    fn with(
        hooks: Value,
        register: impl FnOnce(&mut HookConfig),
        env_scrub: Vec<String>,
        on_event: impl Fn(&Value) + Send + Sync + 'static,
    ) -> Self {
        let dir = TempDir::new().unwrap();
        let mut config = HookConfig::new();
        config
            .add_settings_file(&dir.path().join("settings.json"), &hooks, &|_| Ok(()))
            .unwrap();
        register(&mut config);
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&events);
        let env = HookEnv {
            cwd: dir.path().to_path_buf(),
            project_dir: dir.path().to_path_buf(),
            session_id: "sess-1".into(),
            env_scrub,
            output_dir: dir.path().join("out"),
            ..Default::default()
        };
        let runner = HookRunner::new(
            Arc::new(config),
            env,
            Arc::new(PrefixFilter),
            Arc::new(move |v: Value| {
                on_event(&v);
                sink.lock().unwrap().push(v);
            }),
        );
        Self {
            dir,
            events,
            runner,
        }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_string_lossy().into_owned()
    }

    fn events(&self) -> Vec<Value> {
        self.events.lock().unwrap().clone()
    }

    fn ends(&self) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["event"] == "hook_end")
            .collect()
    }
}

fn hooks(event: &str, matcher: &str, commands: &[(&str, u64)]) -> Value {
    let list: Vec<Value> = commands
        .iter()
        .map(|(c, t)| json!({"type": "command", "command": c, "timeout": t}))
        .collect();
    json!({ event: [{"matcher": matcher, "hooks": list}] })
}

fn bash_input(command: &str) -> Map<String, Value> {
    json!({"command": command}).as_object().cloned().unwrap()
}

fn call<'a>(input: &'a Map<String, Value>) -> ToolHookCall<'a> {
    ToolHookCall {
        tool_name: "Bash",
        access: Default::default(),
        tool_input: input,
        tool_use_id: "t1",
        permission_mode: "default",
        agent: None,
    }
}

async fn pre(h: &Harness, command: &str) -> crate::hooks::PreToolUseResult {
    let input = bash_input(command);
    h.runner
        .pre_tool_use(&call(&input), &CancellationToken::new())
        .await
}

fn deny_json(reason: &str) -> String {
    format!(
        r#"echo '{{"hookSpecificOutput":{{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"{reason}"}}}}'"#
    )
}

#[tokio::test]
async fn three_sleeping_hooks_run_in_parallel() {
    let h = Harness::new(hooks(
        "PreToolUse",
        "Bash",
        &[
            ("sleep 1; echo a", 10),
            ("sleep 1; echo b", 10),
            ("sleep 1; echo c", 10),
        ],
    ));
    let t = Instant::now();
    let r = pre(&h, "ls").await;
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(950), "{took:?}");
    assert!(
        took < Duration::from_millis(1900),
        "three 1 s hooks took {took:?}"
    );
    assert_eq!(r.permission, None);
    assert_eq!(h.ends().len(), 3);
}

#[tokio::test]
async fn identical_commands_run_once() {
    let scratch = TempDir::new().unwrap();
    let log = scratch.path().join("runs.log").display().to_string();
    let cmd = format!("echo run >> {log}");
    let h = Harness::new(json!({"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": cmd}]},
        {"matcher": "*", "hooks": [{"type": "command", "command": cmd}]},
    ]}));
    pre(&h, "ls").await;
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "run\n");
    assert_eq!(h.ends().len(), 1);
}

#[tokio::test]
async fn hanging_hook_is_killed_with_its_child_at_timeout() {
    let scratch = TempDir::new().unwrap();
    let pidfile = scratch.path().join("child.pid").display().to_string();
    let cmd = format!(
        "sleep 300 & echo $! > {pidfile}; wait; {}",
        deny_json("late")
    );
    let h = Harness::new(hooks("PreToolUse", "Bash", &[(&cmd, 1)]));
    let t = Instant::now();
    let r = pre(&h, "ls").await;
    let took = t.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(took >= Duration::from_millis(950), "{took:?}");
    // A timed-out hook gives no decision: the call proceeds.
    assert_eq!(r.permission, None);
    assert_eq!(r.reason, None);
    let end = &h.ends()[0];
    assert_eq!(end["outcome"], "timeout");
    assert_eq!(end["exit_code"], Value::Null);
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SIGKILL is delivered asynchronously; poll with a deadline rather than sleep blindly.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !process_gone(pid) && Instant::now() < deadline {
        tokio::task::yield_now().await;
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(process_gone(pid), "child {pid} of the hook survived");
}

#[tokio::test]
async fn a_child_holding_the_pipes_after_the_shell_exits_is_killed_and_the_answer_kept() {
    let scratch = TempDir::new().unwrap();
    let pidfile = scratch.path().join("child.pid").display().to_string();
    // The background sleep inherits stdout, so the pipe stays open after the shell exits.
    let cmd = format!("{}; sleep 300 & echo $! > {pidfile}", deny_json("decided"));
    let h = Harness::new(hooks("PreToolUse", "Bash", &[(&cmd, 60)]));
    let t = Instant::now();
    let r = pre(&h, "ls").await;
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert_eq!(r.permission, Some(HookPermission::Deny));
    assert_eq!(h.ends()[0]["outcome"], "success");
    let pid = read_pid(Path::new(&pidfile));
    assert!(
        wait_gone_within(pid, Duration::from_secs(5)),
        "straggler {pid} survived"
    );
}

#[tokio::test]
async fn missing_hook_fails_open() {
    let h = Harness::new(hooks("PreToolUse", "Bash", &[("/nonexistent/hook.sh", 10)]));
    let r = pre(&h, "ls").await;
    assert_eq!(r.permission, None);
    let end = &h.ends()[0];
    assert_eq!(end["outcome"], "error");
    assert_eq!(end["exit_code"], 127);
}

#[tokio::test]
async fn hook_that_cannot_start_fails_open() {
    let h = Harness::new(hooks("PreToolUse", "Bash", &[("echo hi", 10)]));
    let dir = h.dir.path().to_path_buf();
    // The cwd vanishes, so the spawn itself fails.
    let gone = dir.join("gone");
    std::fs::create_dir(&gone).unwrap();
    let mut config = HookConfig::new();
    config
        .add_settings_file(
            Path::new("s.json"),
            &hooks("PreToolUse", "Bash", &[(&deny_json("x"), 10)]),
            &|_| Ok(()),
        )
        .unwrap();
    let runner = HookRunner::new(
        Arc::new(config),
        HookEnv {
            cwd: gone.clone(),
            project_dir: dir.clone(),
            session_id: "s".into(),
            env_scrub: vec![],
            output_dir: dir.clone(),
            ..Default::default()
        },
        Arc::new(PrefixFilter),
        Arc::new(|_| {}),
    );
    std::fs::remove_dir(&gone).unwrap();
    let input = bash_input("ls");
    let r = runner
        .pre_tool_use(&call(&input), &CancellationToken::new())
        .await;
    assert_eq!(r.permission, None);
}

#[tokio::test]
async fn exit_2_with_json_allow_blocks() {
    let cmd = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'; echo 'rm is not allowed' >&2; exit 2"#;
    let h = Harness::new(hooks("PreToolUse", "Bash", &[(cmd, 10)]));
    let r = pre(&h, "rm -rf /").await;
    assert_eq!(r.permission, Some(HookPermission::Deny));
    let reason = r.reason.unwrap();
    assert!(reason.contains("rm is not allowed"), "{reason}");
    assert!(reason.contains("PreToolUse hook"), "{reason}");
    let end = &h.ends()[0];
    assert_eq!(end["outcome"], "blocking");
    assert_eq!(end["exit_code"], 2);
}

#[tokio::test]
async fn hook_killed_by_signal_is_a_nonblocking_error() {
    let cmd = format!("{}; kill -9 $$", deny_json("never counted"));
    let h = Harness::new(hooks("PreToolUse", "Bash", &[(&cmd, 10)]));
    let r = pre(&h, "ls").await;
    assert_eq!(r.permission, None);
    let end = &h.ends()[0];
    assert_eq!(end["outcome"], "error");
    assert_eq!(end["exit_code"], Value::Null);
}

#[tokio::test]
async fn hook_that_closes_stdin_at_once_still_counts() {
    let cmd = r#"exec 0<&-; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}'"#;
    let h = Harness::new(hooks("PreToolUse", "Bash", &[(cmd, 10)]));
    // An input far over the pipe buffer, so writing it runs into the closed pipe.
    let big = "x".repeat(2_000_000);
    let r = pre(&h, &big).await;
    assert_eq!(r.permission, Some(HookPermission::Ask));
    // A hook that never reads at all.
    let h = Harness::new(hooks("PreToolUse", "Bash", &[("exit 0", 10)]));
    assert_eq!(pre(&h, &big).await.permission, None);
    assert_eq!(h.ends()[0]["outcome"], "success");
}

#[tokio::test]
async fn environment_cwd_and_stdin() {
    let probe = TempDir::new().unwrap();
    let script = probe.path().join("probe.py");
    std::fs::write(
        &script,
        r#"import json, os, sys
data = json.load(sys.stdin)
out = {"input": data, "cwd": os.getcwd(),
       "claude": os.environ.get("CLAUDE_PROJECT_DIR"),
       "toolrt": os.environ.get("TOOLRT_PROJECT_DIR"),
       "home": os.environ.get("HOME"), "path": os.environ.get("PATH"),
       "tty": os.isatty(0)}
open(sys.argv[1], "w").write(json.dumps(out))
"#,
    )
    .unwrap();
    let report = probe.path().join("report.json");
    let cmd = format!("python3 {} {}", script.display(), report.display());
    let h = Harness::with(
        hooks("PreToolUse", "Bash", &[(&cmd, 30)]),
        |_| {},
        vec!["HOM?".into(), "*_NEVER_SET_*".into()],
        |_| {},
    );
    pre(&h, "git status").await;
    let got: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let dir = h.dir.path().canonicalize().unwrap();
    assert_eq!(
        Path::new(got["cwd"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        dir
    );
    assert_eq!(got["claude"], h.dir.path().to_string_lossy().as_ref());
    assert_eq!(got["toolrt"], h.dir.path().to_string_lossy().as_ref());
    assert_eq!(got["home"], Value::Null, "HOME should be scrubbed");
    assert!(got["path"].is_string(), "PATH should stay");
    assert_eq!(got["tty"], false);
    assert_eq!(
        got["input"],
        json!({
            "session_id": "sess-1",
            "transcript_path": null,
            "cwd": h.dir.path().to_string_lossy(),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "git status"},
            "tool_use_id": "t1",
        })
    );
}

#[tokio::test]
async fn event_specific_input_fields() {
    let scratch = TempDir::new().unwrap();
    let dump = scratch.path().join("dump").display().to_string();
    let cmd = format!("cat >> {dump}; echo >> {dump}");
    let list = json!([{"hooks": [{"type": "command", "command": cmd}]}]);
    let h = Harness::new(json!({
        "PermissionRequest": list, "PostToolUse": list, "PostToolUseFailure": list, "PostToolBatch": list,
    }));
    let input = bash_input("ls");
    let c = call(&input);
    let never = CancellationToken::new();
    h.runner.permission_request(&c, &never).await;
    h.runner
        .post_tool_use(&c, &json!({"stdout": "hi"}), 12, &never)
        .await;
    h.runner
        .post_tool_use_failure(&c, "exit 1", false, 7, &never)
        .await;
    let record = BatchCallRecord {
        tool_name: "Bash".into(),
        tool_input: json!({"command": "ls"}),
        tool_use_id: "t1".into(),
        tool_response: json!("out"),
    };
    let never = CancellationToken::new();
    h.runner
        .post_tool_batch("b1", &[record], "plan", &never)
        .await;
    let lines: Vec<Value> = std::fs::read_to_string(&dump)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["hook_event_name"], "PermissionRequest");
    assert!(lines[0].get("tool_use_id").is_none());
    assert_eq!(lines[0]["tool_name"], "Bash");
    assert_eq!(lines[1]["tool_response"], json!({"stdout": "hi"}));
    assert_eq!(lines[1]["duration_ms"], 12);
    assert_eq!(lines[1]["tool_use_id"], "t1");
    assert_eq!(lines[2]["error"], "exit 1");
    assert_eq!(lines[2]["is_interrupt"], false);
    assert_eq!(lines[3]["hook_event_name"], "PostToolBatch");
    assert_eq!(lines[3]["permission_mode"], "plan");
    assert_eq!(
        lines[3]["tool_calls"],
        json!([{"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t1", "tool_response": "out"}])
    );
    let batch_start = h
        .events()
        .into_iter()
        .find(|e| e["event"] == "hook_start" && e["hook_event"] == "PostToolBatch")
        .unwrap();
    assert_eq!(batch_start["tool_use_id"], Value::Null);
    assert_eq!(batch_start["batch"], "b1");
}

#[tokio::test]
async fn wire_events_shape() {
    let long = format!("true # {}", "x".repeat(300));
    let h = Harness::new(hooks("PreToolUse", "Bash", &[(&long, 10)]));
    pre(&h, "ls").await;
    let ev = h.events();
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[0]["type"], "event");
    assert_eq!(ev[0]["event"], "hook_start");
    assert_eq!(ev[0]["hook_event"], "PreToolUse");
    assert_eq!(ev[0]["tool_use_id"], "t1");
    assert_eq!(ev[0]["command"].as_str().unwrap().chars().count(), 200);
    assert_eq!(ev[1]["event"], "hook_end");
    assert_eq!(ev[1]["exit_code"], 0);
    assert_eq!(ev[1]["outcome"], "success");
    assert!(ev[1]["duration_ms"].is_u64());
}

#[tokio::test]
async fn no_matching_hook_returns_at_once_without_events() {
    let h = Harness::new(hooks("PreToolUse", "Write|Edit", &[("sleep 5", 10)]));
    let r = pre(&h, "ls").await;
    assert_eq!(r, Default::default());
    assert!(h.events().is_empty());
    let h = Harness::new(hooks("PreToolUse", "mcp__memory", &[("sleep 5", 10)]));
    let input = Map::new();
    let mcp = ToolHookCall {
        tool_name: "mcp__memory__create_entities",
        access: Default::default(),
        tool_input: &input,
        tool_use_id: "m1",
        permission_mode: "default",
        agent: None,
    };
    h.runner.pre_tool_use(&mcp, &CancellationToken::new()).await;
    assert!(h.events().is_empty());
}

#[tokio::test]
async fn if_filter_selects_calls() {
    let h = Harness::new(json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": deny_json("no git push"), "if": "Bash(git push *)"}
    ]}]}));
    assert_eq!(pre(&h, "ls -la").await.permission, None);
    assert!(h.events().is_empty());
    assert_eq!(
        pre(&h, "git push origin main").await.permission,
        Some(HookPermission::Deny)
    );
}

#[tokio::test]
async fn cancellation_kills_the_hook() {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let h = Harness::with(
        hooks(
            "PreToolUse",
            "Bash",
            &[(&format!("sleep 30; {}", deny_json("x")), 60)],
        ),
        |_| {},
        vec![],
        move |e| {
            if e["event"] == "hook_start" {
                trigger.cancel();
            }
        },
    );
    let input = bash_input("ls");
    let t = Instant::now();
    let r = h.runner.pre_tool_use(&call(&input), &cancel).await;
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(r.permission, None);
    assert_eq!(h.ends()[0]["outcome"], "cancelled");
}

#[tokio::test]
async fn merge_across_real_hooks() {
    // Configuration order: rewrite A (slow), rewrite B (fast), allow. B is last in order, so it
    // wins although A finishes later.
    let rewrite = |cmd: &str, delay: &str| {
        format!(
            r#"sleep {delay}; echo '{{"hookSpecificOutput":{{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{{"command":"{cmd}"}},"additionalContext":"ctx {cmd}"}}}}'"#
        )
    };
    let a = rewrite("A", "0.5");
    let b = rewrite("B", "0");
    let ask = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}'"#;
    let h = Harness::new(hooks(
        "PreToolUse",
        "Bash",
        &[(&a, 10), (&b, 10), (ask, 10)],
    ));
    let r = pre(&h, "ls").await;
    assert_eq!(r.permission, Some(HookPermission::Ask));
    let u = r.updated_input.unwrap();
    assert_eq!(u.input, bash_input("B"));
    assert_eq!(u.hook, b);
    assert_eq!(
        r.additional_context,
        [
            "[PreToolUse hook context] ctx A",
            "[PreToolUse hook context] ctx B"
        ]
    );
}

struct Fixed(HookOutput);

#[async_trait::async_trait]
impl InProcessHook for Fixed {
    async fn run(&self, _input: Value) -> HookOutput {
        self.0.clone()
    }
}

struct Slow;

#[async_trait::async_trait]
impl InProcessHook for Slow {
    async fn run(&self, _input: Value) -> HookOutput {
        tokio::time::sleep(Duration::from_secs(30)).await;
        HookOutput::block("too late")
    }
}

struct Panics;

#[async_trait::async_trait]
impl InProcessHook for Panics {
    async fn run(&self, _input: Value) -> HookOutput {
        panic!("hook bug")
    }
}

struct Echo(Arc<Mutex<Option<Value>>>);

#[async_trait::async_trait]
impl InProcessHook for Echo {
    async fn run(&self, input: Value) -> HookOutput {
        *self.0.lock().unwrap() = Some(input);
        HookOutput::none()
    }
}

#[tokio::test]
async fn in_process_hooks_merge_with_command_hooks() {
    let seen = Arc::new(Mutex::new(None));
    let seen2 = Arc::clone(&seen);
    let allow = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"from command"}}}'"#;
    let h = Harness::with(
        hooks("PreToolUse", "Bash", &[(allow, 10)]),
        move |c| {
            let rewrite = HookOutput::json(json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "defer", "updatedInput": {"command": "from rust"}}}));
            c.register_fn(
                HookEvent::PreToolUse,
                "Bash",
                Duration::from_secs(5),
                Arc::new(Fixed(rewrite)),
            )
            .unwrap();
            c.register_fn(
                HookEvent::PreToolUse,
                "*",
                Duration::from_millis(100),
                Arc::new(Slow),
            )
            .unwrap();
            c.register_fn(
                HookEvent::PreToolUse,
                "Ba.h",
                Duration::from_secs(5),
                Arc::new(Panics),
            )
            .unwrap();
            c.register_fn(
                HookEvent::PreToolUse,
                "Bash",
                Duration::from_secs(5),
                Arc::new(Echo(seen2)),
            )
            .unwrap();
            c.register_fn(
                HookEvent::PreToolUse,
                "Write",
                Duration::from_secs(5),
                Arc::new(Fixed(HookOutput::block("w"))),
            )
            .unwrap();
        },
        vec![],
        |_| {},
    );
    let t = Instant::now();
    let r = pre(&h, "ls").await;
    // The slow hook sleeps 30 s: answering well before that shows its 100 ms timeout ended it
    // (a bound far from any scheduling delay, so a loaded machine cannot fail it).
    assert!(t.elapsed() < Duration::from_secs(20));
    // defer (rust) > allow (command); the slow hook timed out (no decision); the panic is an error.
    assert_eq!(r.permission, Some(HookPermission::Defer));
    let u = r.updated_input.unwrap();
    assert_eq!(u.input, bash_input("from rust"));
    assert_eq!(u.hook, "in-process hook #1");
    // hook_end events come in finish order; check each hook's outcome by its name.
    let outcome = |name: &str| {
        h.ends()
            .into_iter()
            .find(|e| e["command"] == name)
            .map(|e| e["outcome"].clone())
    };
    assert_eq!(outcome(allow).unwrap(), "success");
    assert_eq!(outcome("in-process hook #1").unwrap(), "success");
    assert_eq!(outcome("in-process hook #2").unwrap(), "timeout");
    assert_eq!(outcome("in-process hook #3").unwrap(), "error");
    assert_eq!(outcome("in-process hook #4").unwrap(), "success");
    // The Write-only hook did not run.
    assert_eq!(outcome("in-process hook #5"), None);
    let input = seen.lock().unwrap().clone().unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_input"], json!({"command": "ls"}));
}

#[tokio::test]
async fn permission_request_hooks_decide() {
    let allow = r#"echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"command":"ls -l"}}}}'"#;
    let h = Harness::new(hooks(
        "PermissionRequest",
        "Bash",
        &[(allow, 10), ("echo ignored >&2; exit 2", 10)],
    ));
    let input = bash_input("ls");
    let r = h
        .runner
        .permission_request(&call(&input), &CancellationToken::new())
        .await;
    assert_eq!(
        r.decision,
        Some(PermissionRequestDecision::Allow {
            updated_input: Some(bash_input("ls -l"))
        })
    );
}

#[tokio::test]
async fn post_tool_use_feedback_and_output() {
    let cmds = [
        ("echo 'lint: 3 errors' >&2; exit 2", 10),
        (
            r#"echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"ran lint","updatedToolOutput":"REDACTED"}}'"#,
            10,
        ),
        (
            r#"echo '{"continue":false,"stopReason":"quota reached"}'"#,
            10,
        ),
    ];
    let h = Harness::new(hooks("PostToolUse", "Bash", &cmds));
    let input = bash_input("ls");
    let r = h
        .runner
        .post_tool_use(
            &call(&input),
            &json!("secret"),
            5,
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(
        r.feedback,
        [
            "[PostToolUse hook feedback] lint: 3 errors",
            "[PostToolUse hook feedback] ran lint"
        ]
    );
    assert_eq!(r.updated_output.as_deref(), Some("REDACTED"));
    assert_eq!(r.stop.as_deref(), Some("quota reached"));
}

#[tokio::test]
async fn long_hook_output_is_saved_to_a_file() {
    let cmd = r#"python3 -c "import sys; sys.stderr.write('y' * 20000); sys.exit(2)""#;
    let h = Harness::new(hooks("PostToolUseFailure", "*", &[(cmd, 30)]));
    let input = bash_input("ls");
    let r = h
        .runner
        .post_tool_use_failure(&call(&input), "boom", false, 3, &CancellationToken::new())
        .await;
    assert_eq!(r.feedback.len(), 1);
    let text = &r.feedback[0];
    assert!(
        text.starts_with(
            "[PostToolUseFailure hook feedback] [hook output of 20000 characters saved to "
        ),
        "{}",
        &text[..200]
    );
    assert!(text.chars().count() < 3_000);
    let path = text
        .split("saved to ")
        .nth(1)
        .unwrap()
        .split(';')
        .next()
        .unwrap();
    assert!(path.starts_with(&h.path("out")));
    assert_eq!(std::fs::read_to_string(path).unwrap(), "y".repeat(20000));
}

#[test]
fn runner_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<HookRunner>();
    assert_send_sync::<HookConfig>();
}

#[test]
fn session_end_budget_follows_the_reference() {
    use crate::hooks::runner::session_end_budget;
    let s = Duration::from_secs;
    let ms = Duration::from_millis;
    let none = std::iter::empty::<Duration>;
    assert_eq!(session_end_budget(none(), None), ms(1_500));
    assert_eq!(session_end_budget([ms(200)].into_iter(), None), ms(1_500));
    assert_eq!(session_end_budget([s(5), s(9)].into_iter(), None), s(9));
    assert_eq!(session_end_budget([s(600)].into_iter(), None), s(60));
    assert_eq!(session_end_budget(none(), Some("4000")), ms(4_000));
    assert_eq!(session_end_budget(none(), Some("99999999")), s(3_600));
    assert_eq!(session_end_budget([s(9)].into_iter(), Some("4000")), s(9));
    assert_eq!(session_end_budget(none(), Some("soon")), ms(1_500));
}
