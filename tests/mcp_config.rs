//! Where MCP servers come from and which start: settings' `mcpServers`, `--mcp-config` files,
//! the project's `.mcp.json` (only approved servers start), `--strict-mcp-config`; `${VAR}`
//! errors name the server and field; library users read the same statuses from the runtime.

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::mcp::{self, everything, probe, status_event};
use support::{Sandbox, serve_status};

fn write(path: &Path, value: Value) -> String {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, value.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn project_servers_start_only_when_approved() {
    let sandbox = Sandbox::new();
    write(
        &sandbox.path(".mcp.json"),
        json!({"mcpServers": {
            "approved": everything(),
            "pending": probe(json!({})),
            "off": probe(json!({}))
        }}),
    );
    let user = write(
        &sandbox.dir.path().join("user-settings.json"),
        json!({"enabledMcpjsonServers": ["approved"], "disabledMcpjsonServers": ["off"]}),
    );
    // The project's own shared settings cannot approve its servers.
    let shared = write(
        &sandbox.path(".claude/settings.json"),
        json!({"enableAllProjectMcpServers": true}),
    );
    let mut server = sandbox.serve(&[
        "--settings",
        &user,
        "--settings",
        &shared,
        "--permission-mode",
        "bypassPermissions",
    ]);
    status_event(&mut server, "approved", "connected");
    let pending = status_event(&mut server, "pending", "needs-approval");
    assert!(
        pending["reason"]
            .as_str()
            .unwrap()
            .contains("enabledMcpjsonServers"),
        "{pending}"
    );
    status_event(&mut server, "off", "disabled");
    server.tool_use("p", "mcp__pending__echo", json!({"message": "x"}));
    assert_eq!(server.result("p")["outcome"], "unavailable");
    server.tool_use("a", "mcp__approved__echo", json!({"message": "x"}));
    assert_eq!(server.result("a")["outcome"], "success");
    let done = server.finish();
    assert!(
        done.stderr.contains("cannot approve its own MCP servers"),
        "{}",
        done.stderr
    );
    // Servers not started are reported once.
    let events = done.events("mcp_server");
    for name in ["pending", "off"] {
        assert_eq!(
            events.iter().filter(|e| e["server"] == name).count(),
            1,
            "{events:#?}"
        );
    }
}

#[test]
fn settings_flags_and_strict_mode() {
    let sandbox = Sandbox::new();
    let settings = write(
        &sandbox.dir.path().join("settings.json"),
        json!({"mcpServers": {"fromsettings": everything()}}),
    );
    let file = mcp::config_file(&sandbox, json!({"fromflag": probe(json!({}))}));
    write(
        &sandbox.path(".mcp.json"),
        json!({"mcpServers": {"fromproject": everything()}}),
    );
    let mut server = sandbox.serve(&[
        "--settings",
        &settings,
        "--mcp-config",
        file.to_str().unwrap(),
        "--permission-mode",
        "bypassPermissions",
    ]);
    status_event(&mut server, "fromsettings", "connected");
    status_event(&mut server, "fromflag", "connected");
    status_event(&mut server, "fromproject", "needs-approval");
    server.finish();

    let mut server = sandbox.serve(&[
        "--settings",
        &settings,
        "--mcp-config",
        file.to_str().unwrap(),
        "--strict-mcp-config",
    ]);
    status_event(&mut server, "fromflag", "connected");
    let done = server.finish();
    let names: Vec<&Value> = done
        .events("mcp_server")
        .iter()
        .map(|e| &e["server"])
        .collect();
    assert_eq!(names, [&json!("fromflag")]);
}

#[test]
fn configuration_errors_stop_start_up_naming_file_server_and_field() {
    let sandbox = Sandbox::new();
    for (servers, needle) in [
        (
            json!({"gh": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${TOOLRT_TEST_SURELY_UNSET}"}}}),
            "mcpServers.gh.headers.Authorization: ${TOOLRT_TEST_SURELY_UNSET} is not set and has no default",
        ),
        (
            json!({"st": {"command": "x", "args": ["${TOOLRT_TEST_SURELY_UNSET}"]}}),
            "mcpServers.st.args[0]: ${TOOLRT_TEST_SURELY_UNSET} is not set",
        ),
        (
            json!({"bad": {"command": 3}}),
            "mcpServers.bad.command: expected a string, got integer",
        ),
        (
            json!({"bad": {"type": "tcp"}}),
            "mcpServers.bad.type: unknown transport \"tcp\"",
        ),
    ] {
        let file = mcp::config_file(&sandbox, servers.clone());
        let (code, stderr) = serve_status(&sandbox.cwd, &["--mcp-config", file.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{servers}: {stderr}");
        assert!(stderr.contains(file.to_str().unwrap()), "{stderr}");
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    let (code, stderr) = serve_status(&sandbox.cwd, &["--mcp-config", "/nonexistent.json"]);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("/nonexistent.json: (file): cannot read MCP configuration"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn library_users_read_the_statuses_from_the_runtime() {
    let sandbox = Sandbox::new();
    let file = mcp::config_file(
        &sandbox,
        json!({"everything": everything(), "broken": {"command": "/nonexistent/server"}}),
    );
    let mut config = toolrt::Config::new(sandbox.cwd.clone());
    config.output_dir = toolrt::OutputDir::Temporary;
    config.mcp.config_files = vec![file];
    let (runtime, mut outbox) = toolrt::Runtime::start(config).await.unwrap();
    let statuses = runtime.mcp_servers();
    let of = |name: &str| statuses.iter().find(|s| s.server == name).unwrap().clone();
    assert_eq!(of("everything").status, toolrt::McpStatus::Connected);
    assert!(of("everything").tools.unwrap() >= 10);
    assert_eq!(of("broken").status, toolrt::McpStatus::Failed);
    assert!(of("broken").reason.unwrap().contains("cannot start"));
    let reader = tokio::spawn(async move {
        let mut events = Vec::new();
        while let Some(msg) = outbox.recv().await {
            events.push(msg);
        }
        events
    });
    runtime.shutdown().await;
    let messages = reader.await.unwrap();
    let mcp_events = messages
        .iter()
        .filter(|m| m.event_name() == Some("mcp_server"))
        .count();
    assert_eq!(mcp_events, 2);
}
