use super::*;
use serde_json::json;

fn no_if(_: &str) -> Result<(), String> {
    Ok(())
}

#[test]
fn matcher_table() {
    // (matcher, tool, matches) — one row per statement of docs/SEMANTICS.md §4.1.
    let rows: &[(&str, &str, bool)] = &[
        // "", "*" match everything.
        ("", "Bash", true),
        ("", "mcp__memory__create", true),
        ("*", "Write", true),
        // Plain names: exact and case-sensitive.
        ("Bash", "Bash", true),
        ("Bash", "bash", false),
        ("Bash", "BashOutput", false),
        ("Bash", "MyBash", false),
        // Lists split on | or , with spaces trimmed.
        ("Edit|Write", "Write", true),
        ("Edit|Write", "Edit", true),
        ("Edit|Write", "Read", false),
        ("Edit, Write", "Write", true),
        ("Edit , Write|Read", "Read", true),
        ("Edit ,Write", "Edit ", false),
        ("my-tool_2", "my-tool_2", true),
        // Separators alone name nothing.
        ("|", "Bash", false),
        // mcp__memory is an exact name: it matches no tool of the server.
        ("mcp__memory", "mcp__memory__create_entities", false),
        // Anything else is an unanchored regex.
        ("mcp__memory__.*", "mcp__memory__create_entities", true),
        ("mcp__memory__.*", "mcp__github__get", false),
        ("Ba.h", "Bash", true),
        ("^Bash$", "Bash", true),
        ("^Bash$", "BashOutput", false),
        ("ash", "Bash", false), // plain name: exact
        ("as.", "Bash", true),  // regex: unanchored
        ("as.", "Write", false),
        ("Notebook.*", "NotebookEdit", true),
        ("(?i)bash", "Bash", true),
        ("[Bb]ash", "bash", true),
        ("Web(Fetch|Search)", "WebSearch", true),
        ("Web(Fetch|Search)", "webfetch", false),
        // The reference CLI's former names select the tool they name now.
        ("Task", "Agent", true),
        ("Agent", "Agent", true),
        ("Bash|Task", "Agent", true),
        ("KillShell", "TaskStop", true),
        ("Task", "TaskStop", false),
        ("^Task$", "Agent", true),
        ("\\bTask\\b", "Agent", true),
        ("Task|Write.*", "Agent", true),
        ("Task.*", "Agent", true),
        ("TaskStop|TaskOutput", "Agent", false),
        ("Task.*", "TaskStop", true),
        ("^T", "Agent", false),
    ];
    for &(m, tool, want) in rows {
        let matcher = Matcher::parse(m).unwrap();
        assert_eq!(matcher.matches(tool), want, "matcher {m:?} on {tool:?}");
    }
    assert!(matches!(Matcher::parse("").unwrap(), Matcher::All));
    assert!(matches!(Matcher::parse("*").unwrap(), Matcher::All));
    assert!(matches!(Matcher::parse("A|B").unwrap(), Matcher::Names(_)));
    assert!(matches!(Matcher::parse("A.B").unwrap(), Matcher::Regex(_)));
}

#[test]
fn missing_or_null_matcher_matches_everything() {
    for group in [
        json!({"hooks": [{"type": "command", "command": "true"}]}),
        json!({"matcher": null, "hooks": [{"type": "command", "command": "true"}]}),
    ] {
        let mut c = HookConfig::new();
        c.add_settings_file(Path::new("s.json"), &json!({"PreToolUse": [group]}), &no_if)
            .unwrap();
        assert!(
            c.handlers(HookEvent::PreToolUse)[0]
                .matcher
                .matches("Anything")
        );
    }
}

#[test]
fn parses_handlers_in_order_with_defaults() {
    let mut c = HookConfig::new();
    assert!(c.is_empty());
    let hooks = json!({
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [
                {"type": "command", "command": "a", "timeout": 30, "if": "Bash(git *)"},
                {"type": "command", "command": "b", "timeout": 0.5}
            ]},
            {"hooks": [{"type": "command", "command": "c"}]}
        ],
        "PostToolBatch": [{"hooks": [{"type": "command", "command": "d"}]}]
    });
    c.add_settings_file(Path::new("one.json"), &hooks, &no_if)
        .unwrap();
    c.add_settings_file(
        Path::new("two.json"),
        &json!({"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "e"}]}]}),
        &no_if,
    )
    .unwrap();
    let pre = c.handlers(HookEvent::PreToolUse);
    let labels: Vec<&str> = pre.iter().map(|h| &*h.label).collect();
    assert_eq!(labels, ["a", "b", "c", "e"]);
    assert_eq!(pre[0].timeout, Duration::from_secs(30));
    assert_eq!(pre[0].if_rule.as_deref(), Some("Bash(git *)"));
    assert_eq!(pre[1].timeout, Duration::from_millis(500));
    assert_eq!(pre[2].timeout, Duration::from_secs(600));
    assert!(c.has(HookEvent::PreToolUse));
    assert!(c.has(HookEvent::PostToolBatch));
    assert!(!c.has(HookEvent::PostToolUse));
    assert!(!c.has(HookEvent::PermissionRequest));
    assert!(!c.is_empty());
}

#[test]
fn look_around_matchers_work_and_an_invalid_one_is_a_warning_that_selects_nothing() {
    for (m, tool, want) in [
        ("^(?!Read$|Glob$|Grep$).*", "Bash", true),
        ("^(?!Read$|Glob$|Grep$).*", "Read", false),
        ("^(?!Read$|Glob$|Grep$).*", "ReadMe", true),
        ("(?<=mcp__)github__.*", "mcp__github__get", true),
        ("(?<=mcp__)github__.*", "github__get", false),
        (r"^(\w)\w*\1$", "TodoT", true), // a backreference
        ("^(?!Task$)Ta.*", "Agent", false),
    ] {
        let matcher = Matcher::parse(m).unwrap();
        assert!(matches!(matcher, Matcher::Regex(Pattern::Fancy(_))), "{m}");
        assert_eq!(matcher.matches(tool), want, "matcher {m:?} on {tool:?}");
    }
    let mut c = HookConfig::new();
    let hooks = json!({"PreToolUse": [
        {"matcher": "mcp__[", "hooks": [{"type": "command", "command": "guard"}]},
        {"matcher": "(", "hooks": [{"type": "command", "command": "other"}]},
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "runs"}]},
    ]});
    c.add_settings_file(Path::new("s.json"), &hooks, &no_if)
        .unwrap();
    assert_eq!(
        c.warnings(),
        [
            "s.json: hooks.PreToolUse[0].matcher: invalid regex \"mcp__[\": unclosed character class; this group's hooks never run",
            "s.json: hooks.PreToolUse[1].matcher: invalid regex \"(\": unclosed group; this group's hooks never run",
        ]
    );
    let h = c.handlers(HookEvent::PreToolUse);
    assert_eq!(h.len(), 3);
    for tool in ["Bash", "mcp__x", "", "mcp__["] {
        assert!(!h[0].matcher.matches(tool) && !h[1].matcher.matches(tool));
    }
    assert!(h[2].matcher.matches("Bash"));
    // The library API still refuses a pattern nobody can compile.
    assert!(Matcher::parse("mcp__[").is_err());
}

#[test]
fn config_error_table() {
    let bad_if = |rule: &str| {
        if rule.contains('(') && !rule.ends_with(')') {
            Err("unclosed parenthesis".to_owned())
        } else {
            Ok(())
        }
    };
    let h = |extra: Value| {
        let mut base = json!({"type": "command", "command": "true"});
        for (k, v) in extra.as_object().unwrap() {
            base[k] = v.clone();
        }
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": [base]}]})
    };
    let rows: Vec<(Value, &str)> = vec![
        (
            json!([]),
            "settings.json: hooks: expected an object, got an array",
        ),
        (
            json!({"PreToolUse": [{"matcher": 3, "hooks": []}]}),
            "settings.json: hooks.PreToolUse[0].matcher: expected a string, got a number",
        ),
        (
            json!({"PreTooluse": []}),
            "settings.json: hooks.PreTooluse: unknown hook event \"PreTooluse\" (did you mean \"PreToolUse\"?)",
        ),
        (
            json!({"Nonsense": []}),
            "settings.json: hooks.Nonsense: unknown hook event \"Nonsense\" (not an event of the reference CLI; docs/SEMANTICS.md lists them)",
        ),
        (
            json!({"Stop": [{"hooks": [{"type": "command"}]}]}),
            "settings.json: hooks.Stop[0].hooks[0].command: missing",
        ),
        (
            json!({"PostToolUse": {}}),
            "settings.json: hooks.PostToolUse: expected an array of matcher groups, got an object",
        ),
        (
            json!({"PostToolUse": ["x"]}),
            "settings.json: hooks.PostToolUse[0]: expected an object, got a string",
        ),
        (
            json!({"PostToolUse": [{"matcher": "Bash"}]}),
            "settings.json: hooks.PostToolUse[0].hooks: missing",
        ),
        (
            json!({"PostToolUse": [{"hooks": {"type": "command"}}]}),
            "settings.json: hooks.PostToolUse[0].hooks: expected an array, got an object",
        ),
        (
            json!({"PreToolUse": [{"hooks": [[]]}]}),
            "settings.json: hooks.PreToolUse[0].hooks[0]: expected an object, got an array",
        ),
        (
            json!({"PreToolUse": [{"hooks": [{"command": "x"}]}]}),
            "settings.json: hooks.PreToolUse[0].hooks[0].type: missing (expected \"command\" or \"http\")",
        ),
        (
            h(json!({"type": "script"})),
            "settings.json: hooks.PreToolUse[0].hooks[0].type: unknown hook type \"script\" (expected \"command\", \"http\", \"prompt\", \"agent\" or \"mcp_tool\")",
        ),
        (
            h(json!({"onFailure": "stop"})),
            "settings.json: hooks.PreToolUse[0].hooks[0].onFailure: expected \"continue\" or \"block\", got \"stop\"",
        ),
        (
            h(json!({"shell": "fish"})),
            "settings.json: hooks.PreToolUse[0].hooks[0].shell: expected \"bash\" or \"powershell\", got \"fish\"",
        ),
        (
            h(json!({"args": "a b"})),
            "settings.json: hooks.PreToolUse[0].hooks[0].args: expected an array of strings, got a string",
        ),
        (
            h(json!({"args": ["a", 1]})),
            "settings.json: hooks.PreToolUse[0].hooks[0].args[1]: expected a string, got a number",
        ),
        (
            h(json!({"async": "yes"})),
            "settings.json: hooks.PreToolUse[0].hooks[0].async: expected true or false, got a string",
        ),
        (
            h(json!({"once": 1})),
            "settings.json: hooks.PreToolUse[0].hooks[0].once: expected true or false, got a number",
        ),
        (
            h(json!({"statusMessage": ["x"]})),
            "settings.json: hooks.PreToolUse[0].hooks[0].statusMessage: expected a string, got an array",
        ),
        (
            json!({"PreToolUse": [{"hooks": [{"type": "http"}]}]}),
            "settings.json: hooks.PreToolUse[0].hooks[0].url: missing",
        ),
        (
            json!({"PreToolUse": [{"hooks": [{"type": "http", "url": "ftp://x/"}]}]}),
            "settings.json: hooks.PreToolUse[0].hooks[0].url: expected an http or https URL, got scheme \"ftp\"",
        ),
        (
            json!({"PreToolUse": [{"hooks": [{"type": "http", "url": "not a url"}]}]}),
            "settings.json: hooks.PreToolUse[0].hooks[0].url: invalid URL \"not a url\": relative URL without a base",
        ),
        (
            json!({"PreToolUse": [{"hooks": [{"type": "http", "url": "http://x/", "headers": {"A": 1}}]}]}),
            "settings.json: hooks.PreToolUse[0].hooks[0].headers.A: expected a string, got a number",
        ),
        (
            json!({"PreToolUse": [{"hooks": [{"type": "http", "url": "http://x/", "headers": {"bad header": "v"}}]}]}),
            "settings.json: hooks.PreToolUse[0].hooks[0].headers.bad header: not a valid header name",
        ),
        (
            json!({"PreToolUse": [{"hooks": [{"type": "http", "url": "http://x/", "allowedEnvVars": "TOKEN"}]}]}),
            "settings.json: hooks.PreToolUse[0].hooks[0].allowedEnvVars: expected an array of variable names, got a string",
        ),
        (
            h(json!({"type": 1})),
            "settings.json: hooks.PreToolUse[0].hooks[0].type: expected a string, got a number",
        ),
        (
            h(json!({"command": ["ls"]})),
            "settings.json: hooks.PreToolUse[0].hooks[0].command: expected a string, got an array",
        ),
        (
            h(json!({"command": "  "})),
            "settings.json: hooks.PreToolUse[0].hooks[0].command: must not be empty",
        ),
        (
            h(json!({"timeout": 0})),
            "settings.json: hooks.PreToolUse[0].hooks[0].timeout: must be a positive number of seconds, got 0",
        ),
        (
            h(json!({"timeout": -5})),
            "settings.json: hooks.PreToolUse[0].hooks[0].timeout: must be a positive number of seconds, got -5",
        ),
        (
            h(json!({"timeout": "30"})),
            "settings.json: hooks.PreToolUse[0].hooks[0].timeout: expected a positive number of seconds, got a string",
        ),
        (
            h(json!({"timeout": 1e300})),
            "settings.json: hooks.PreToolUse[0].hooks[0].timeout: too large: 1e+300",
        ),
        (
            h(json!({"if": "Bash(git *"})),
            "settings.json: hooks.PreToolUse[0].hooks[0].if: invalid rule \"Bash(git *\": unclosed parenthesis",
        ),
        (
            h(json!({"if": true})),
            "settings.json: hooks.PreToolUse[0].hooks[0].if: expected a permission rule string, got a boolean",
        ),
        (
            json!({"PostToolBatch": [{"hooks": [{"type": "command", "command": "x", "if": "Bash"}]}]}),
            "settings.json: hooks.PostToolBatch[0].hooks[0].if: only tool events take an `if` rule, not PostToolBatch",
        ),
    ];
    for (hooks, want) in rows {
        let mut c = HookConfig::new();
        let e = c
            .add_settings_file(Path::new("settings.json"), &hooks, &bad_if)
            .expect_err(want);
        assert_eq!(e.to_string(), want);
        // Nothing of a bad file is added.
        assert!(c.is_empty(), "{want}");
    }
}

#[test]
fn every_reference_event_loads_and_the_unfired_are_reported_once() {
    let mut c = HookConfig::new();
    let group = json!([{"hooks": [{"type": "command", "command": "true"}]}]);
    let all: Map<String, Value> = REFERENCE_EVENTS
        .iter()
        .map(|e| ((*e).to_owned(), group.clone()))
        .collect();
    c.add_settings_file(Path::new("a.json"), &Value::Object(all.clone()), &no_if)
        .unwrap();
    c.add_settings_file(
        Path::new("b.json"),
        &json!({"Stop": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]}),
        &no_if,
    )
    .unwrap();
    for e in HookEvent::ALL {
        assert_eq!(c.handlers(e).len(), 1, "{e}");
    }
    let w = c.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("hooks for events that do not apply to toolrt are loaded but never run: ")
            && w[0].contains("Stop (a.json, b.json)")
            && w[0].contains("Notification (a.json)")
            && !w[0].contains("PreToolUse"),
        "{}",
        w[0]
    );
    assert_eq!(REFERENCE_EVENTS.len(), 34);
}

#[test]
fn hook_keys_and_types() {
    let mut c = HookConfig::new();
    let hooks = json!({
        "PreToolUse": [{"matcher": "Bash", "extra": 1, "hooks": [
            {"type": "command", "command": "x", "frob": true},
            {"type": "command", "command": "prog", "args": ["${CLAUDE_PROJECT_DIR}/a", "b"],
             "shell": "bash", "onFailure": "block", "once": true, "statusMessage": "checking"},
            {"type": "command", "command": "y", "async": true, "onFailure": "block"},
            {"type": "command", "command": "z", "asyncRewake": true},
            {"type": "http", "url": "http://127.0.0.1:9/hook", "headers": {"Authorization": "Bearer $T"},
             "allowedEnvVars": ["T"], "timeout": 5},
            {"type": "prompt", "prompt": "is this safe?"},
            {"type": "agent", "prompt": "check"},
            {"type": "mcp_tool", "server": "s", "tool": "t"}
        ]}]
    });
    c.add_settings_file(Path::new("s.json"), &hooks, &no_if)
        .unwrap();
    assert_eq!(
        c.warnings(),
        [
            "s.json: hooks.PreToolUse[0].extra: unknown key ignored",
            "s.json: hooks.PreToolUse[0].hooks[0].frob: unknown key ignored",
            "s.json: hooks.PreToolUse[0].hooks[2].onFailure: an async hook cannot block anything; \"block\" is ignored",
            "s.json: hooks.PreToolUse[0].hooks[3].asyncRewake: there is no model for toolrt to wake; the hook runs as an async hook",
            "s.json: hooks.PreToolUse[0].hooks[5].type: \"prompt\" hooks are not run by toolrt; this hook is ignored",
            "s.json: hooks.PreToolUse[0].hooks[6].type: \"agent\" hooks are not run by toolrt; this hook is ignored",
            "s.json: hooks.PreToolUse[0].hooks[7].type: \"mcp_tool\" hooks are not run by toolrt; this hook is ignored",
        ]
    );
    let h = c.handlers(HookEvent::PreToolUse);
    assert_eq!(h.len(), 5);
    assert_eq!(&*h[1].label, "prog ${CLAUDE_PROJECT_DIR}/a b");
    assert_eq!(h[1].on_failure, OnFailure::Block);
    assert_eq!(h[1].status_message.as_deref(), Some("checking"));
    assert!(h[1].claim() && !h[1].claim(), "once: one run only");
    assert!(h[0].claim() && h[0].claim());
    assert!(h[2].is_async && h[3].is_async && !h[0].is_async);
    match &h[4].kind {
        HandlerKind::Http(http) => {
            assert_eq!(http.url, "http://127.0.0.1:9/hook");
            assert_eq!(http.allowed_env_vars, ["T"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(h[4].timeout, Duration::from_secs(5));
}

#[test]
fn register_fn_errors() {
    struct Nop;
    #[async_trait::async_trait]
    impl InProcessHook for Nop {
        async fn run(&self, _input: Value) -> super::super::HookOutput {
            super::super::HookOutput::none()
        }
    }
    let mut c = HookConfig::new();
    let e = c
        .register_fn(
            HookEvent::PostToolUse,
            "[",
            Duration::from_secs(1),
            Arc::new(Nop),
        )
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("register_fn: PostToolUse.matcher: invalid regex \"[\": "),
        "{e}"
    );
    let e = c
        .register_fn(
            HookEvent::PostToolUse,
            "Bash",
            Duration::ZERO,
            Arc::new(Nop),
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "register_fn: PostToolUse.timeout: must be a positive duration"
    );
    c.register_fn(
        HookEvent::PostToolUse,
        "Bash",
        Duration::from_secs(1),
        Arc::new(Nop),
    )
    .unwrap();
    assert!(c.has(HookEvent::PostToolUse));
    assert_eq!(
        &*c.handlers(HookEvent::PostToolUse)[0].label,
        "in-process hook #1"
    );
}

#[test]
fn event_names_round_trip() {
    for e in HookEvent::ALL {
        assert_eq!(HookEvent::from_name(e.as_str()), Some(e));
    }
    assert_eq!(HookEvent::from_name("pretooluse"), None);
}
