//! A stdio MCP server's environment is built from nothing: a minimal base taken from toolrt's
//! own (PATH, HOME, LANG, …, minus `toolrt.envScrub`), the settings' `env`, and the server's
//! configured `env` (with `${VAR}` expanded) — never toolrt's whole environment. Its working
//! directory is its `cwd`, and it leads a process group of its own.

mod support;

use std::collections::BTreeSet;

use serde_json::json;
use support::mcp::{self, everything, probe, status_event};
use support::{Sandbox, Server, Stderr};

#[test]
fn servers_see_only_the_base_and_what_was_configured() {
    let sandbox = Sandbox::new();
    let settings = sandbox.dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({"env": {"FROM_SETTINGS": "s"}, "toolrt": {"envScrub": ["TERM"]}}).to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(sandbox.path("sub")).unwrap();
    let mut probe = probe(json!({"CONFIGURED": "c", "EXPANDED": "${TOOLRT_TEST_SOURCE}"}));
    probe["cwd"] = json!("sub");
    let file = mcp::config_file(
        &sandbox,
        json!({"probe": probe, "everything": {
            "command": everything()["command"], "args": ["stdio"], "env": {"ONLY_THIS": "1"}
        }}),
    );
    let mut cmd = support::command();
    cmd.args([
        "serve",
        "--cwd",
        sandbox.cwd.to_str().unwrap(),
        "--output-dir",
        sandbox.out.to_str().unwrap(),
        "--settings",
        settings.to_str().unwrap(),
        "--mcp-config",
        file.to_str().unwrap(),
        "--permission-mode",
        "bypassPermissions",
    ])
    .current_dir(&sandbox.cwd)
    .env("SECRET_TOKEN_OF_TOOLRT", "leak")
    .env("TOOLRT_TEST_SOURCE", "expanded-value")
    .env("TERM", "xterm-scrubbed");
    let mut server = Server::spawn(cmd, Stderr::Capture);
    status_event(&mut server, "probe", "connected");
    status_event(&mut server, "everything", "connected");

    server.tool_use("p", "mcp__probe__env", json!({}));
    let env = server.result("p")["structured_content"].clone();
    let names: BTreeSet<&str> = env
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .filter(|k| !k.starts_with("__"))
        .collect();
    let allowed = [
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TMPDIR",
        "TZ",
        "FROM_SETTINGS",
        "CONFIGURED",
        "EXPANDED",
    ];
    for name in &names {
        assert!(
            allowed.contains(name),
            "{name} reached the server: {names:?}"
        );
    }
    for name in ["PATH", "FROM_SETTINGS", "CONFIGURED", "EXPANDED"] {
        assert!(names.contains(name), "{name} missing: {names:?}");
    }
    assert!(!names.contains("SECRET_TOKEN_OF_TOOLRT"));
    assert!(!names.contains("TERM"), "scrubbed by toolrt.envScrub");
    assert_eq!(env["EXPANDED"], "expanded-value");
    assert_eq!(env["__cwd__"], sandbox.path("sub").to_str().unwrap());
    assert_eq!(
        env["__pgid__"], env["__pid__"],
        "the server leads its own group"
    );

    // A second, unrelated server (node): the same rule.
    server.tool_use("e", "mcp__everything__get-env", json!({}));
    let text = server.result("e")["content"].as_str().unwrap().to_string();
    let env: serde_json::Value = serde_json::from_str(&text).unwrap();
    let names: BTreeSet<&str> = env
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for name in &names {
        assert!(
            allowed.contains(name) || *name == "ONLY_THIS",
            "{name} reached the server: {names:?}"
        );
    }
    assert!(names.contains("ONLY_THIS"));
    server.finish();
}
