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
