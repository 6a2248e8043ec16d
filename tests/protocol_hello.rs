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
