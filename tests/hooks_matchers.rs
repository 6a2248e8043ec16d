//! Which calls a hook group's `matcher` selects, seen from outside: the reference CLI's former
//! tool names (`Task` for `Agent`), and matcher patterns the `regex` crate does not take
//! (look-around) or nobody can compile (a warning; that group selects nothing).

mod hooks_support;
mod support;

use hooks_support::*;
use serde_json::{Value, json};

fn agent(id: &str, name: &str, subagent_type: &str) -> Value {
    call(
        id,
        name,
        json!({"description": "d", "prompt": "say hi", "subagent_type": subagent_type}),
    )
}

#[test]
fn a_task_matcher_selects_agent_calls_and_an_agent_matcher_task_calls() {
    let fx = Fixture::new();
    let block = fx.stderr_hook("no subagents", 2);
    for (matcher, name) in [("Task", "Agent"), ("Agent", "Task"), ("Bash|Task", "Task")] {
        fx.settings(json!({"hooks": {"PreToolUse": [group(matcher, &[&block])]}}));
        let run = fx
            .serve("bypassPermissions")
            .run(&[agent("a1", name, "general-purpose")]);
        assert_eq!(
            run.outcome("a1"),
            "denied",
            "{matcher} on {name}: {:#?}",
            run.lines
        );
        assert!(
            run.content("a1").contains("no subagents"),
            "{matcher} on {name}"
        );
        assert_eq!(run.hook_ends("PreToolUse").len(), 1);
    }
}

#[test]
fn an_if_rule_naming_task_filters_agent_calls_by_subagent_type() {
    let fx = Fixture::new();
    let explore = fx.stderr_hook("no Explore", 2);
    let fallback = fx.stderr_hook("fallback", 2);
    fx.settings(json!({"hooks": {"PreToolUse": [
        {"matcher": "Task", "hooks": [{"type": "command", "command": explore, "if": "Task(Explore)"}]},
        group("Agent", &[&fallback]),
    ]}}));
    let run = fx.serve("bypassPermissions").run(&[
        agent("a1", "Agent", "Explore"),
        agent("a2", "Task", "general-purpose"),
    ]);
    assert_eq!(run.outcome("a1"), "denied");
    assert!(
        run.content("a1").contains("no Explore"),
        "{}",
        run.content("a1")
    );
    assert_eq!(run.outcome("a2"), "denied");
    assert!(
        !run.content("a2").contains("no Explore"),
        "{}",
        run.content("a2")
    );
    assert!(run.content("a2").contains("fallback"));
}

#[test]
fn a_look_around_matcher_selects_by_it_and_an_invalid_one_is_only_a_warning() {
    let fx = Fixture::new();
    let block = fx.stderr_hook("writes need review", 2);
    let invalid = fx.stderr_hook("never runs", 2);
    let (logger, log) = fx.logger("seen");
    fx.settings(json!({"hooks": {"PreToolUse": [
        group("^(?!Read$|Glob$|Grep$).*", &[&block]),
        group("mcp__[", &[&invalid]),
        group("", &[&logger]),
    ]}}));
    std::fs::write(fx.cwd().join("f.txt"), "x\n").unwrap();
    let path = fx.cwd().join("f.txt").to_string_lossy().into_owned();
    let run = fx.serve("bypassPermissions").run(&[
        bash("a1", "echo hi"),
        call("a2", "Read", json!({"file_path": path})),
    ]);
    assert_eq!(run.outcome("a1"), "denied", "{:#?}", run.lines);
    assert!(run.content("a1").contains("writes need review"));
    assert_eq!(run.outcome("a2"), "success", "{:#?}", run.lines);
    assert!(!run.content("a1").contains("never runs"));
    // Other hooks still run: the logger saw both calls.
    assert_eq!(log_lines(&log).len(), 2);
    assert!(
        run.stderr.contains("invalid regex \"mcp__[\"")
            && run.stderr.contains("hooks.PreToolUse[1].matcher"),
        "{}",
        run.stderr
    );
}
