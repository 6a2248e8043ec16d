//! Settings files written for the reference CLI load and mean what they meant there: every hook
//! event, rules for tools toolrt lacks (`Skill(x)`, `SlashCommand(/x)`), `//` comments in rule
//! lists, `disableBypassPermissionsMode`, `additionalDirectories`, and the `env` map (which
//! reaches Bash, background tasks and hooks); toolrt's own scrub list lives under `toolrt`.

mod hooks_support;
mod support;

use std::sync::Arc;

use async_trait::async_trait;
use hooks_support::*;
use serde_json::{Map, Value, json};
use toolrt::{
    AskPolicy, ClientMessage, Config, Input, Runtime, ServerMessage, Tool, ToolCall, ToolContext,
    ToolOutput,
};

#[test]
fn a_settings_file_with_every_reference_hook_event_loads() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("all");
    let events = [
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PostToolBatch",
        "Notification",
        "UserPromptSubmit",
        "UserPromptExpansion",
        "SessionStart",
        "SessionEnd",
        "Stop",
        "StopFailure",
        "SubagentStart",
        "SubagentStop",
        "PreCompact",
        "PostCompact",
        "PreModelSwitch",
        "PostModelSwitch",
        "PermissionRequest",
        "PermissionDenied",
        "Setup",
        "TeammateIdle",
        "TaskCreated",
        "TaskCompleted",
        "Elicitation",
        "ElicitationResult",
        "ConfigChange",
        "WorktreeCreate",
        "WorktreeRemove",
        "InstructionsLoaded",
        "CwdChanged",
        "FileChanged",
        "DirectoryAdded",
        "MessageDisplay",
        "PreSkillShellCommand",
    ];
    assert_eq!(events.len(), 34);
    let hooks: Map<String, Value> = events
        .iter()
        .map(|e| {
            let hook = match *e {
                // What settings files for the reference commonly hold on its other events.
                "Stop" | "SubagentStop" => json!({"type": "prompt", "prompt": "Is the task done?"}),
                "Notification" => {
                    json!({"type": "command", "command": "notify-send done", "async": true})
                }
                _ => json!({"type": "command", "command": logger}),
            };
            ((*e).to_owned(), json!([{"hooks": [hook]}]))
        })
        .collect();
    fx.settings(json!({"hooks": hooks}));
    let mut session = fx.serve("bypassPermissions");
    session.send(&batch("b1", &[bash("a1", "echo ok")]));
    let run = session.finish();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.outcome("a1"), "success");
    let fired: Vec<String> = log_lines(&log)
        .iter()
        .map(|l| l["input"]["hook_event_name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        fired,
        [
            "SessionStart",
            "PreToolUse",
            "PostToolUse",
            "PostToolBatch",
            "SessionEnd"
        ]
    );
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("do not apply to toolrt"))
        .collect();
    assert_eq!(warnings.len(), 1, "reported once: {}", run.stderr);
    for e in [
        "Stop",
        "Notification",
        "PreSkillShellCommand",
        "TeammateIdle",
    ] {
        assert!(
            warnings[0].contains(&format!("{e} (")),
            "{e}: {}",
            warnings[0]
        );
    }
}

#[test]
fn rule_lists_with_comments_and_rules_for_tools_toolrt_lacks_load() {
    let fx = Fixture::new();
    fx.settings(json!({"permissions": {
        "allow": ["// formatting is always fine", "Skill(format)", "SlashCommand(/commit)", "Bash(echo *)"],
        "deny": ["// never push", "Bash(git push *)", "Skill(deploy)", "mcp__github__create_pr"],
        "ask": ["SlashCommand(/release)"]
    }}));
    let run = fx
        .serve("default")
        .run(&[bash("a1", "echo fine"), bash("a2", "git push origin main")]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.outcome("a1"), "success");
    assert_eq!(run.outcome("a2"), "denied");
    assert!(run.content("a2").contains("Bash(git push *)"));
    assert!(
        run.stderr
            .contains("cannot check the specifier of \"Skill(format)\""),
        "an allow toolrt cannot check is reported: {}",
        run.stderr
    );
}

#[test]
fn prompt_agent_and_mcp_tool_hooks_load_with_a_warning_and_do_not_run() {
    let fx = Fixture::new();
    let (logger, log) = fx.logger("pre");
    fx.settings(
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "prompt", "prompt": "Is this command safe? $ARGUMENTS"},
            {"type": "agent", "prompt": "Check the command against the policy"},
            {"type": "mcp_tool", "server": "policy", "tool": "check"},
            {"type": "command", "command": logger},
        ]}]}}),
    );
    let run = fx.serve("bypassPermissions").run(&[bash("a1", "echo ok")]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.outcome("a1"), "success");
    assert_eq!(
        log_lines(&log).len(),
        1,
        "the command hook beside them runs"
    );
    for kind in ["prompt", "agent", "mcp_tool"] {
        assert!(
            run.stderr
                .contains(&format!("{kind:?} hooks are not run by toolrt")),
            "{kind}: {}",
            run.stderr
        );
    }
    assert_eq!(
        run.hook_ends("PreToolUse").len(),
        1,
        "only the command hook ran"
    );
    // An unknown type is still an error.
    fx.settings(json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "llm", "prompt": "x"}]}]}}));
    let run = fx.serve("bypassPermissions").run(&[]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown hook type \"llm\""),
        "{}",
        run.stderr
    );
}

/// A stand-in for a tool toolrt does not ship (a library user's `Skill`).
struct Skill;

#[async_trait]
impl Tool for Skill {
    fn name(&self) -> &str {
        "Skill"
    }
    fn description(&self) -> &str {
        "runs a skill"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"skill": {"type": "string"}}, "required": ["skill"], "additionalProperties": false})
    }
    async fn call(&self, input: Input, _ctx: ToolContext) -> ToolOutput {
        ToolOutput::success(format!("ran {}", input["skill"]))
    }
}

async fn decide_skill(permissions: Value, skill: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("s.json");
    std::fs::write(&settings, json!({"permissions": permissions}).to_string()).unwrap();
    let mut config = Config::new(dir.path().to_path_buf()).tool(Arc::new(Skill));
    config.settings = toolrt::Settings::load(&[settings]).unwrap();
    config.ask_policy = AskPolicy::Deny;
    let (rt, mut rx) = Runtime::start(config).await.unwrap();
    rt.submit(ClientMessage::ToolUse(ToolCall::new(
        "s1",
        "Skill",
        json!({"skill": skill}),
    )))
    .await;
    // A result keeps its place until it is read: read it, then shut down.
    let mut result = None;
    while let Some(msg) = rx.recv().await {
        if let ServerMessage::ToolResult(r) = msg {
            result = Some((format!("{:?}", r.outcome), r.content));
            break;
        }
    }
    let shutdown = tokio::spawn(rt.shutdown());
    while rx.recv().await.is_some() {}
    shutdown.await.unwrap();
    result.expect("a result")
}

#[tokio::test]
async fn skill_rules_match_by_tool_name_and_fail_closed() {
    // A deny or ask with a specifier toolrt cannot read covers every call of the tool.
    let (outcome, content) = decide_skill(json!({"deny": ["Skill(deploy)"]}), "other").await;
    assert_eq!(outcome, "Denied");
    assert!(content.contains("Skill(deploy)"), "{content}");
    // An allow of that kind approves nothing: the call still needs approval (none here).
    let (outcome, content) = decide_skill(json!({"allow": ["Skill(format)"]}), "format").await;
    assert_eq!(outcome, "Denied");
    assert!(content.contains("no one can approve"), "{content}");
    // The bare name allows, as for any tool.
    let (outcome, content) = decide_skill(json!({"allow": ["Skill"]}), "format").await;
    assert_eq!(outcome, "Success", "{content}");
}

#[test]
fn disable_bypass_permissions_mode_takes_bypass_away() {
    let fx = Fixture::new();
    for (settings, extra) in [
        (
            json!({"permissions": {"disableBypassPermissionsMode": "disable"}}),
            vec!["--permission-mode", "bypassPermissions"],
        ),
        (
            json!({"permissions": {"disableBypassPermissionsMode": "disable", "defaultMode": "bypassPermissions"}}),
            vec![],
        ),
    ] {
        fx.settings(settings);
        let settings_path = fx.hooks.path().join("settings.json");
        let cwd = fx.cwd().to_string_lossy().into_owned();
        let mut args = vec![
            "serve".to_owned(),
            "--cwd".into(),
            cwd,
            "--settings".into(),
            settings_path.to_string_lossy().into_owned(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let run = Session::start(&args).run(&[bash("a1", "touch made.txt")]);
        assert!(
            run.stderr.contains("bypassPermissions is disabled"),
            "{}",
            run.stderr
        );
        assert_eq!(run.permission_requests().len(), 1, "default mode asks");
        assert_eq!(run.outcome("a1"), "denied");
        assert!(!fx.cwd().join("made.txt").exists());
    }
}

#[test]
fn additional_directories_extend_the_workspace() {
    let fx = Fixture::new();
    let extra = fx.hooks.path().join("shared");
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::write(extra.join("notes.txt"), "shared notes").unwrap();
    std::fs::write(fx.hooks.path().join("outside.txt"), "outside").unwrap();
    fx.settings(json!({"permissions": {"additionalDirectories": [extra.to_string_lossy()]}}));
    let run = fx.serve("default").run(&[
        call(
            "r1",
            "Read",
            json!({"file_path": extra.join("notes.txt").to_string_lossy()}),
        ),
        call(
            "r2",
            "Read",
            json!({"file_path": fx.hooks.path().join("outside.txt").to_string_lossy()}),
        ),
    ]);
    assert_eq!(run.outcome("r1"), "success");
    assert!(run.content("r1").contains("shared notes"));
    assert_eq!(
        run.outcome("r2"),
        "denied",
        "outside the workspace asks (denied here)"
    );
    assert_eq!(run.permission_requests().len(), 1);
}

#[test]
fn env_reaches_bash_background_tasks_and_hooks_merged_across_files() {
    let fx = Fixture::new();
    // Given after the fixture's settings.json, so it is the later file.
    let later = fx.hooks.path().join("later.json");
    std::fs::write(
        &later,
        json!({"env": {"SHARED": "from-later", "ONLY_BASE": "1", "DROP_TOKEN": "kept-by-env"},
               "toolrt": {"envScrub": ["*_TOKEN"]}})
        .to_string(),
    )
    .unwrap();
    let hook_out = fx.hooks.path().join("hook-env.txt");
    fx.settings(json!({
        "env": {"SHARED": "from-first", "NUM": 8080},
        "hooks": {"PreToolUse": [group("Bash", &[&format!(
            "cat > /dev/null; printf '%s %s %s %s' \"$SHARED\" \"$ONLY_BASE\" \"$NUM\" \"${{SECRET_TOKEN:-scrubbed}}\" > '{}'",
            hook_out.display()
        )])]}
    }));
    let later_s = later.to_string_lossy().into_owned();
    let mut session = fx.serve_with(
        "bypassPermissions",
        &["--settings", &later_s],
        &[("SECRET_TOKEN", "hunter2")],
    );
    let show = "printf '%s %s %s %s %s' \"$SHARED\" \"$ONLY_BASE\" \"$NUM\" \"${SECRET_TOKEN:-scrubbed}\" \"$DROP_TOKEN\"";
    session.send(&bash("fg", show));
    let fg = session.result("fg");
    session.send(&json!({"type": "tool_use", "id": "bg", "name": "Bash",
        "input": {"command": show, "run_in_background": true}}));
    let bg = session.result("bg");
    let content = bg["content"].as_str().unwrap();
    let task = content
        .split("task id ")
        .nth(1)
        .and_then(|rest| rest.split('.').next())
        .unwrap_or_else(|| panic!("no task id in {bg}"));
    session.send(&call(
        "out",
        "TaskOutput",
        json!({"task_id": task, "block": true}),
    ));
    let out = session.result("out");
    let run = session.finish();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // The later file wins per name; numbers are their text; names toolrt's scrub list removes
    // from its own environment are gone, a name `env` sets is set.
    let want = "from-later 1 8080 scrubbed kept-by-env";
    assert_eq!(fg["content"].as_str().unwrap().trim(), want);
    assert!(out["content"].as_str().unwrap().contains(want), "{out}");
    assert_eq!(
        std::fs::read_to_string(&hook_out).unwrap(),
        "from-later 1 8080 scrubbed"
    );
}

#[test]
fn the_bash_commands_run_is_the_one_on_the_settings_path() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    // A `bash` of its own, first on the PATH the settings give every child: toolrt finds it
    // once for the session, where each command used to search the PATH itself.
    let bin = fx.hooks.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("bash");
    std::fs::write(&fake, "#!/bin/sh\nprintf 'own bash: %s' \"$*\"\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    fx.settings(json!({"env": {"PATH": path}}));
    let mut session = fx.serve_with("bypassPermissions", &[], &[]);
    session.send(&bash("own", "echo hi"));
    let own = session.result("own");
    let run = session.finish();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(own["content"].as_str().unwrap(), "own bash: -c echo hi");

    // Without that PATH, the system's bash; `$0` is still the name it was started by.
    let fx = Fixture::new();
    fx.settings(json!({}));
    let mut session = fx.serve_with("bypassPermissions", &[], &[]);
    session.send(&bash("sys", "echo \"$0\"; echo \"$BASH\""));
    let sys = session.result("sys");
    let run = session.finish();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let text = sys["content"].as_str().unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("bash"), "{text}");
    assert!(
        lines.next().is_some_and(|exe| exe.ends_with("/bash")),
        "{text}"
    );
}

#[test]
fn the_old_env_scrub_key_is_refused_with_the_new_name() {
    let fx = Fixture::new();
    let settings = fx.settings(json!({"env": {"scrub": ["*_TOKEN"]}}));
    let (code, stderr) =
        support::serve_status(fx.cwd(), &["--settings", &settings.to_string_lossy()]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("env.scrub"), "{stderr}");
    assert!(stderr.contains("toolrt.envScrub"), "{stderr}");
}
