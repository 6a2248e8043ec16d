//! `toolrt --version`, and the `hello` handshake: protocol version, toolrt version, tool names
//! and limits, so a client can check what it talks to.

mod support;

use serde_json::json;
use support::*;

#[test]
fn version_flag_prints_the_version() {
    let out = command().arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("toolrt {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn hello_reports_protocol_version_tools_and_limits() {
    let sb = Sandbox::new();
    let settings = sb.write(
        "s.json",
        r#"{"limits": {"bash_chars": 1234, "per_tool": {"Read": 4321}}}"#,
    );
    let mut server = sb.serve(&[
        "--tools",
        "Read,Bash,Glob",
        "--disallowed-tools",
        "Glob",
        "--max-in-flight",
        "7",
        "--max-parallel",
        "3",
        "--settings",
        settings.to_str().unwrap(),
    ]);
    server.send(json!({"type": "hello", "client": "test-orchestrator/1.0"}));
    let hello = server.wait_for("hello", std::time::Duration::from_secs(10), |v| {
        v["type"] == "hello"
    });
    assert_eq!(hello["protocol"], 1);
    assert_eq!(hello["version"], env!("CARGO_PKG_VERSION"));
    // Selected and not removed by a bare-name deny.
    assert_eq!(hello["tools"], json!(["Bash", "Read"]));
    let limits = &hello["limits"];
    assert_eq!(limits["max_in_flight"], 7);
    assert_eq!(limits["max_queued"], 4096);
    assert_eq!(limits["max_parallel"], 3);
    assert_eq!(limits["max_line_bytes"], 64 * 1024 * 1024);
    assert_eq!(limits["bash_chars"], 1234);
    assert_eq!(limits["tool_chars"], 50_000);
    assert_eq!(limits["error_chars"], 10_000);
    assert_eq!(limits["per_tool"], json!({"Read": 4321}));
    assert_eq!(limits["read_lines"], 2000);
    assert_eq!(limits["read_chars"], 4321);
    // Without `client`, and more than once: the same answer each time.
    server.send(json!({"type": "hello"}));
    let done = server.finish();
    let hellos: Vec<_> = done.of_type("hello");
    assert_eq!(hellos.len(), 2);
    assert_eq!(hellos[0], hellos[1]);
}

#[test]
fn a_bad_hello_is_an_error_line() {
    let sb = Sandbox::new();
    let done = run_lines(&sb, &[], &[json!({"type": "hello", "client": 7})]);
    assert!(done.of_type("hello").is_empty());
    let errors = done.of_type("error");
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0]["message"],
        "hello: field `client`: expected a string, got integer"
    );
    assert_eq!(errors[0]["line"], 1);
}

#[test]
fn hello_shows_the_defaults_of_every_limit() {
    let sb = Sandbox::new();
    let done = run_lines(&sb, &[], &[json!({"type": "hello"})]);
    let hello = done.of_type("hello");
    assert_eq!(hello.len(), 1, "{:#?}", done.messages);
    assert_eq!(
        hello[0]["limits"],
        json!({
            "max_line_bytes": 64 * 1024 * 1024,
            "max_in_flight": 64,
            "max_queued": 4096,
            "max_parked": 1024,
            "max_parallel": 10,
            "bash_chars": 30_000,
            "tool_chars": 50_000,
            "mcp_chars": 100_000,
            "error_chars": 10_000,
            "preview_chars": 2_000,
            "per_tool": {},
            "read_lines": 2000,
            "read_chars": 50_000,
        })
    );
}

#[test]
fn hello_shows_the_admission_flags_and_budget_settings_given() {
    let sb = Sandbox::new();
    let settings = sb.write(
        "s.json",
        r#"{"limits": {"mcp_chars": 7777, "preview_chars": 555, "error_chars": 999}}"#,
    );
    let done = run_lines(
        &sb,
        &[
            "--max-parked",
            "5",
            "--max-queued",
            "6",
            "--settings",
            settings.to_str().unwrap(),
        ],
        &[json!({"type": "hello"})],
    );
    let limits = &done.of_type("hello")[0]["limits"];
    assert_eq!(limits["max_parked"], 5);
    assert_eq!(limits["max_queued"], 6);
    assert_eq!(limits["mcp_chars"], 7777);
    assert_eq!(limits["preview_chars"], 555);
    assert_eq!(limits["error_chars"], 999);
}

#[test]
fn a_client_name_over_256_bytes_is_refused_without_quoting_it() {
    let sb = Sandbox::new();
    // 256 bytes in 128 two-byte characters is fine; one byte more is not.
    let fits = "é".repeat(128);
    let long = format!("{fits}Z");
    let done = run_lines(
        &sb,
        &[],
        &[
            json!({"type": "hello", "client": fits}),
            json!({"type": "hello", "client": long}),
        ],
    );
    assert_eq!(done.of_type("hello").len(), 1, "{:#?}", done.messages);
    let errors = done.of_type("error");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(
        errors[0]["message"],
        "hello: field `client`: longer than 256 bytes (got 257)"
    );
    assert_eq!(errors[0]["line"], 2);
}
