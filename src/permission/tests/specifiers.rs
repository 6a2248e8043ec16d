//! §3.5–3.6: other specifiers, bare deny rules, what is never auto-approved.

use super::*;

#[test]
fn s2_5_other_specifiers() {
    let fetch = |u: &str| json!({"url": u});
    table(&[
        (
            json!({"allow": ["WebFetch(domain:example.com)"]}),
            DF,
            "WebFetch",
            fetch("https://example.com/a"),
            A,
        ),
        (
            json!({"allow": ["WebFetch(domain:example.com)"]}),
            DF,
            "WebFetch",
            fetch("https://EXAMPLE.COM./a"),
            A,
        ),
        (
            json!({"allow": ["WebFetch(domain:example.com)"]}),
            DF,
            "WebFetch",
            fetch("https://docs.example.com/a"),
            Q,
        ),
        (
            json!({"allow": ["WebFetch(domain:*.example.com)"]}),
            DF,
            "WebFetch",
            fetch("https://a.b.example.com/"),
            A,
        ),
        (
            json!({"allow": ["WebFetch(domain:*.example.com)"]}),
            DF,
            "WebFetch",
            fetch("https://example.com/"),
            Q,
        ),
        (
            json!({"allow": ["WebFetch(domain:example.*)"]}),
            DF,
            "WebFetch",
            fetch("https://example.org/"),
            A,
        ),
        (
            json!({"allow": ["WebFetch(domain:example.*)"]}),
            DF,
            "WebFetch",
            fetch("https://example.evil.com/"),
            Q,
        ),
        (
            json!({"deny": ["WebFetch(domain:evil.com)"]}),
            BP,
            "WebFetch",
            fetch("https://evil.com/"),
            D,
        ),
        (
            json!({"allow": ["WebFetch"]}),
            DF,
            "WebFetch",
            fetch("https://any.com/"),
            A,
        ),
        (json!({}), DF, "WebFetch", fetch("https://any.com/"), Q),
        // MCP
        (json!({"allow": ["mcp__srv"]}), DF, "mcp__srv__get", json!({}), A),
        (json!({"allow": ["mcp__srv__*"]}), DF, "mcp__srv__get", json!({}), A),
        (json!({"allow": ["mcp__srv__get"]}), DF, "mcp__srv__get", json!({}), A),
        (json!({"allow": ["mcp__srv__get"]}), DF, "mcp__srv__put", json!({}), Q),
        (json!({"allow": ["mcp__srv__get_*"]}), DF, "mcp__srv__get_user", json!({}), A),
        (json!({"allow": ["mcp__srv"]}), DF, "mcp__srv2__get", json!({}), Q),
        (json!({"deny": ["mcp__*"]}), BP, "mcp__srv__get", json!({}), D),
        (json!({"deny": ["mcp__*__delete*"]}), DF, "mcp__srv__delete_all", json!({}), D),
        (json!({"ask": ["mcp__srv__*"]}), BP, "mcp__srv__x", json!({}), Q),
        (json!({}), DF, "mcp__srv__get", json!({}), Q),
        // Agent / Task
        (json!({"deny": ["Agent(Explore)"]}), DF, "Agent", json!({"subagent_type": "Explore"}), D),
        (json!({"deny": ["Task(Explore)"]}), DF, "Task", json!({"subagent_type": "Explore"}), D),
        (json!({"allow": ["Agent(Explore)"]}), DF, "Agent", json!({"subagent_type": "Explore"}), A),
        (json!({"allow": ["Agent(Explore)"]}), DF, "Agent", json!({"subagent_type": "Plan"}), Q),
        (json!({"deny": ["Task"]}), DF, "Agent", json!({"subagent_type": "x"}), D),
    ]);
}

#[test]
fn s2_5_bare_deny_removes_tool() {
    let p = build(&json!({"deny": ["Bash", "mcp__srv", "Read(.env)", "Task"]}));
    assert!(p.removes_tool("Bash"));
    assert!(p.removes_tool("mcp__srv__x"));
    assert!(p.removes_tool("Agent"));
    assert!(!p.removes_tool("Read"));
    assert!(!p.removes_tool("Edit"));
    let p = build(&json!({"deny": ["Bash(rm *)"], "allow": ["Edit"]}));
    assert!(!p.removes_tool("Bash"));
    assert!(!p.removes_tool("Edit"));
}

#[test]
fn s2_6_never_auto_approved() {
    let mut rows = Vec::new();
    for path in [
        "/w/proj/.git/config",
        "/w/proj/.vscode/settings.json",
        "/w/proj/.idea/x.xml",
        "/w/proj/.husky/pre-commit",
        "/w/proj/.cargo/config.toml",
        "/w/proj/.devcontainer/devcontainer.json",
        "/w/proj/.claude/settings.json",
        "/w/proj/.gitconfig",
        "/w/proj/.gitmodules",
        "/w/proj/.bashrc",
        "/w/proj/.zshrc",
        "/w/proj/.npmrc",
        "/w/proj/.mcp.json",
        "/w/proj/sub/.profile",
    ] {
        rows.push((json!({"allow": ["Edit", "Write"]}), AE, "Edit", file(path), Q));
        rows.push((json!({}), DA, "Write", file(path), D));
        rows.push((json!({}), BP, "Write", file(path), A));
    }
    rows.push((json!({}), AE, "Edit", file("/w/proj/.claude/worktrees/x/a.rs"), A));
    // jq loads ~/.jq (or ~/jq/main.jq) into every filter
    for path in ["/h/u/.jq", "/h/u/.jq/m.jq", "/h/u/jq/main.jq"] {
        rows.push((json!({"allow": ["Edit(~/**)"]}), AE, "Write", file(path), Q));
        rows.push((json!({}), AE, "Bash", bash(&format!("cp a {path}")), Q));
    }
    // toolrt's own descriptors are its protocol streams: never a file to read or write
    for p in ["/dev/stdout", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/1", "/dev/tty"] {
        rows.push((json!({}), BP, "Write", file(p), Q));
        rows.push((json!({}), BP, "Read", file(p), Q));
        rows.push((json!({"allow": ["Read", "Edit"]}), DA, "Read", file(p), D));
    }
    rows.push((json!({}), AE, "Bash", bash("rm .git/index"), Q));
    rows.push((json!({}), AE, "Bash", bash("touch .husky/pre-commit"), Q));
    // critical rm targets: ask in every mode (bypass too), deny in dontAsk
    for c in [
        "rm -rf /",
        "rm -rf /usr",
        "rm -rf ~",
        "rm -rf $HOME",
        "rm -rf /*",
        "rm -rf ~/",
        "rm -rf .",
        "rm -rf ..",
        "rm -rf /w",
        "rm -rf /w/proj/sub/../..",
        "rm -rf //usr",
        "sudo rm -rf /",
        "rmdir /tmp",
        "rm -rf ~/*",
        "rm -fr -- /",
        "/bin/rm -rf /",
        "rm -rf *",
    ] {
        rows.push((json!({"allow": ["Bash(rm *)", "Bash(sudo *)", "Bash(rmdir *)", "Bash(/bin/rm *)"]}), BP, "Bash", bash(c), Q));
        rows.push((json!({"allow": ["Bash(rm *)"]}), DA, "Bash", bash(c), D));
    }
    rows.push((json!({}), BP, "Bash", bash("rm -rf build"), A));
    rows.push((json!({}), BP, "Bash", bash("rm -rf /tmp/x"), A));
    rows.push((json!({}), AE, "Bash", bash("rm -f *.o"), Q));
    table(&rows);
}
