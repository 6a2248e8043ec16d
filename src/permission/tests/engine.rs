//! The engine's own API: rechecks and hooks' `if`, the guard, explanations and messages.

use super::*;

#[test]
fn recheck_and_hooks_if() {
    let p = build(
        &json!({"deny": ["Bash(rm *)", "Read(.env)"], "ask": ["Bash(git push *)"], "allow": ["Bash(ls *)"]}),
    );
    let r = |tool, v: Value, m| p.recheck_updated(tool, access(tool), &obj(v), m).behavior;
    assert_eq!(r("Bash", bash("ls && rm x"), DF), D);
    assert_eq!(r("Bash", bash("git push origin"), DF), Q);
    assert_eq!(r("Bash", bash("git push origin"), DA), D);
    assert_eq!(r("Bash", bash("cargo build"), DF), A);
    assert_eq!(r("Edit", file("/w/proj/.env"), DF), D);
    assert_eq!(r("Edit", file("/w/proj/.git/config"), DF), Q);
    assert_eq!(r("Edit", file("/w/proj/.git/config"), BP), A);
    assert_eq!(r("Bash", bash("rm -rf /"), BP), D);

    let rule = Policy::parse_rule("Bash(git *)").unwrap();
    assert!(p.rule_matches(&rule, "Bash", access("Bash"), &obj(bash("ls && git status"))));
    assert!(p.rule_matches(&rule, "Bash", access("Bash"), &obj(bash("FOO=1 git status"))));
    assert!(!p.rule_matches(&rule, "Bash", access("Bash"), &obj(bash("ls"))));
    assert!(!p.rule_matches(&rule, "Read", access("Read"), &obj(file("/w/proj/a"))));
    let rule = Policy::parse_rule("Edit(src/**)").unwrap();
    assert!(p.rule_matches(&rule, "Write", access("Write"), &obj(file("/w/proj/src/a.rs"))));
    assert!(!p.rule_matches(&rule, "Write", access("Write"), &obj(file("/w/proj/lib/a.rs"))));
    let rule = Policy::parse_rule("Read").unwrap();
    assert!(p.rule_matches(&rule, "Grep", access("Grep"), &obj(json!({"pattern": "x"}))));
    let rule = Policy::parse_rule("Skill(deploy)").unwrap();
    assert!(p.rule_matches(&rule, "Skill", access("Skill"), &obj(json!({"skill": "x"}))));
    assert!(!p.rule_matches(&rule, "Bash", access("Bash"), &obj(bash("ls"))));
    // A tool the engine does not know by name is matched through what it says it acts on.
    let inspect = Access {
        subject: Subject::Path {
            field: "target",
            read_only: true,
            default_cwd: false,
        },
        allowed_by_default: false,
    };
    let at = |p: &str| obj(json!({ "target": p }));
    let rule = Policy::parse_rule("Read(src/**)").unwrap();
    assert!(p.rule_matches(&rule, "Inspect", inspect, &at("/w/proj/src/a")));
    assert!(!p.rule_matches(&rule, "Inspect", inspect, &at("/w/proj/lib/a")));
    assert!(!p.rule_matches(&rule, "Inspect", Access::default(), &at("/w/proj/src/a")));
    let rule = Policy::parse_rule("Edit(src/**)").unwrap();
    assert!(!p.rule_matches(&rule, "Inspect", inspect, &at("/w/proj/src/a")));
    let rule = Policy::parse_rule("mcp__srv").unwrap();
    assert!(p.rule_matches(&rule, "mcp__srv__x", access("mcp__srv__x"), &obj(json!({}))));
    assert!(!p.rule_matches(&rule, "mcp__other__x", access("mcp__other__x"), &obj(json!({}))));
}

#[test]
fn guard() {
    let p = build(
        &json!({"deny": ["Read(.env)", "WebFetch(domain:evil.com)"], "allow": ["WebFetch(domain:*.docs.rs)"]}),
    );
    assert!(p.read_denied(Path::new("/w/proj/x/.env")));
    assert!(!p.read_denied(Path::new("/w/proj/x/env")));
    assert!(p.fetch_allowed("https://a.docs.rs/x"));
    assert!(!p.fetch_allowed("https://evil.com/x"));
    assert!(!p.fetch_allowed("https://other.com/x"));
}

#[test]
fn explain_and_messages() {
    let p = build(&json!({"deny": ["Bash(curl *)"], "allow": ["Bash(npm *)"]}));
    let d = decide(&p, DF, "Bash", bash("npm i && curl https://x?token=SECRET"));
    assert_eq!(d.behavior, D);
    assert_eq!(d.subcommands.len(), 2);
    assert_eq!(d.subcommands[0].behavior, A);
    assert_eq!(d.subcommands[1].behavior, D);
    let e = d.explain();
    assert!(
        e.contains("decision: deny")
            && e.contains("Bash(curl *)")
            && e.contains("/w/proj/.claude/settings.json"),
        "{e}"
    );
    assert!(!d.message("Bash").contains("SECRET"));
    let d = decide(&p, DF, "Bash", bash("make"));
    assert_eq!(
        d.message("Bash"),
        "Bash would need approval: no rule allows it"
    );
    let d = decide(&p, DA, "Bash", bash("make"));
    assert!(
        d.message("Bash").contains("dontAsk"),
        "{}",
        d.message("Bash")
    );
    let d = decide(&p, PL, "Edit", file("/w/proj/a"));
    assert!(
        d.message("Edit").contains("plan mode auto-allows only reads"),
        "{}",
        d.message("Edit")
    );
}

#[test]
fn send_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Policy>();
    assert_send_sync::<Decision>();
}
