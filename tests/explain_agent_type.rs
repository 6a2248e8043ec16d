//! `toolrt explain --agent-type T` decides a call as an agent of type T would have it decided
//! (nested types outermost first), for built-in and MCP tools alike: the scope's tools, the
//! chain's decision and the level that decided. MCP servers are not started.

mod support;

use serde_json::json;
use support::*;

#[test]
fn built_in_and_mcp_calls_are_decided_in_the_agents_scope() {
    let sb = Sandbox::new();
    let marker = sb.dir.path().join("started");
    let mcp = mcp::config_file(
        &sb,
        json!({"srv": {"command": "sh", "args": ["-c", format!("touch '{}'", marker.display())]}}),
    );
    let settings = sb.settings_file(&json!({
        "permissions": {"allow": ["mcp__srv__get", "mcp__srv__put", "Bash(echo *)"]},
        "agents": {
            "reader": {"tools": ["Read", "Bash", "mcp__srv"]},
            "plain": {"tools": ["Read"]},
            "strict": {"permissions": {"deny": ["mcp__srv__put"], "allow": ["mcp__srv__get", "mcp__srv__list"]}}
        }
    }));
    let base = [
        "explain",
        "--mcp-config",
        mcp.to_str().unwrap(),
        "--settings",
        &settings,
    ];
    // (agent types, tool, exit status, what the output says)
    let rows: [(&[&str], &str, i32, &[&str]); 8] = [
        (
            &["reader"],
            "mcp__srv__get",
            0,
            &["decision: allow", "agent types: reader"],
        ),
        (&["reader"], "Bash", 0, &["decision: allow"]),
        (
            &["plain"],
            "mcp__srv__get",
            2,
            &[
                "unavailable: No such tool available to agent",
                "type \"plain\"",
                "Read",
            ],
        ),
        (
            &["strict"],
            "mcp__srv__put",
            1,
            &["decision: deny", "level: agent type \"strict\""],
        ),
        (&["strict"], "mcp__srv__get", 0, &["decision: allow"]),
        // The type allows it, the session does not: it asks, decided at the session's rules.
        (
            &["strict"],
            "mcp__srv__list",
            3,
            &["decision: ask", "level: the session's rules"],
        ),
        // Nested: reader's tools and strict's rules both hold.
        (
            &["reader", "strict"],
            "mcp__srv__put",
            1,
            &["decision: deny", "agent types: reader > strict"],
        ),
        (&["plain", "strict"], "mcp__srv__get", 2, &["unavailable"]),
    ];
    for (types, tool, code, needles) in rows {
        let mut args: Vec<&str> = base.to_vec();
        for t in types {
            args.extend(["--agent-type", t]);
        }
        let input = if tool == "Bash" {
            r#"{"command": "echo hi"}"#
        } else {
            "{}"
        };
        args.extend([tool, input]);
        let (status, out) = run_in(&args, &sb.cwd, sb.dir.path());
        assert_eq!(status, Some(code), "{types:?} {tool}: {out}");
        for needle in needles {
            assert!(
                out.contains(needle),
                "{types:?} {tool}: no {needle:?} in {out}"
            );
        }
    }
    // An unknown server is unknown in a scope too.
    let mut args = base.to_vec();
    args.extend(["--agent-type", "reader", "mcp__other__get", "{}"]);
    let (status, out) = run_in(&args, &sb.cwd, sb.dir.path());
    assert_eq!(status, Some(2), "{out}");
    assert!(out.contains("No MCP server named \"other\""), "{out}");
    assert!(!marker.exists(), "explain started a server");
}

/// A session in bypassPermissions, a parent type with a `permissions` block of its own (even
/// empty) and a child type whose mode is not bypass: the child's level is decided with the
/// parent type's rules, which know the session's output folder and nothing more. `explain`
/// once gave those rules the whole temporary directory as the output folder, so it allowed
/// (as "a built-in default") reads under it that `serve` asks about.
#[test]
fn explain_decides_a_nested_types_reads_outside_the_workspace_as_serve_does() {
    let sb = Sandbox::new();
    // Outside the workspace, under the temporary directory like the sandbox itself.
    let other = sb.dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let file = other.join("f");
    std::fs::write(&file, "x\n").unwrap();
    assert!(file.starts_with(std::env::temp_dir()), "{}", file.display());
    let settings = sb.settings_file(&json!({
        "agents": {
            "lead": {"permissions": {"allow": []}},
            "kid": {"permissionMode": "default"}
        }
    }));
    let (f, dir) = (file.display().to_string(), other.display().to_string());
    let calls = [
        ("Read", json!({"file_path": f})),
        ("Glob", json!({"pattern": "*", "path": dir})),
        ("Grep", json!({"pattern": "x", "path": dir})),
        ("Bash", json!({"command": format!("cat {f}")})),
    ];

    let mut server = sb.serve(&[
        "--settings",
        &settings,
        "--permission-mode",
        "bypassPermissions",
        "--permission-prompt",
        "none",
    ]);
    server.send(json!({"type": "agent_start", "agent_id": "L", "agent_type": "lead"}));
    server
        .send(json!({"type": "agent_start", "agent_id": "K", "agent_type": "kid", "parent": "L"}));
    for (i, (tool, input)) in calls.iter().enumerate() {
        let id = format!("c{i}");
        server.send(
            json!({"type": "tool_use", "id": id, "name": tool, "input": input, "agent_id": "K"}),
        );
        let r = server.result(&id);
        assert_eq!(r["outcome"], "denied", "serve, {tool}: {r}");
        assert!(
            r["content"]
                .as_str()
                .is_some_and(|c| c.contains("agent type \"kid\"")),
            "serve, {tool}: {r}"
        );

        let input = input.to_string();
        let (code, out, err) = cli(
            &sb,
            "explain",
            &[
                "--settings",
                &settings,
                "--permission-mode",
                "bypassPermissions",
                "--agent-type",
                "lead",
                "--agent-type",
                "kid",
                tool,
                &input,
            ],
        );
        assert!(
            out.contains("decision: ask") && out.contains("level: agent type \"kid\""),
            "explain, {tool}: {code}\n{out}{err}"
        );
        assert_ne!(code, 0, "explain, {tool}: {out}{err}");
    }
}
