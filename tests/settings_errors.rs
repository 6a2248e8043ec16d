//! Bad settings files and flags: exit 2 with a message naming the file, the key and what was
//! expected, before any line is read. Unknown keys only warn.

mod support;

use serde_json::json;
use support::*;

#[test]
fn bad_settings_exit_2_naming_file_and_key() {
    let sb = Sandbox::new();
    for (body, needle) in [
        ("{ not json", "not valid JSON"),
        (r#"{"permissions": {"allow": "Bash"}}"#, "permissions.allow"),
        (
            r#"{"permissions": {"defaultMode": "yolo"}}"#,
            "permissions.defaultMode",
        ),
        (
            r#"{"limits": {"bash_chars": -1}}"#,
            "limits.bash_chars: expected a positive integer",
        ),
        (r#"{"hooks": []}"#, "hooks: expected an object"),
        (
            r#"{"tools": {"requireReadBeforeEdit": 1}}"#,
            "tools.requireReadBeforeEdit",
        ),
    ] {
        let settings = sb.write("bad.json", body);
        let (code, stderr) = serve_status(&sb.cwd, &["--settings", settings.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{body}: {stderr}");
        assert!(stderr.contains("bad.json"), "{body}: {stderr}");
        assert!(stderr.contains(needle), "{body}: {stderr}");
    }
}

#[test]
fn missing_settings_file_and_bad_flags_exit_2() {
    let sb = Sandbox::new();
    let (code, stderr) = run_status(&["serve", "--settings", "/nonexistent/s.json"], &sb.cwd);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("/nonexistent/s.json"), "{stderr}");
    let (code, _) = run_status(&["serve", "--permission-mode", "yolo"], &sb.cwd);
    assert_eq!(code, Some(2));
    let (code, _) = run_status(&["serve", "--max-in-flight", "0"], &sb.cwd);
    assert_eq!(code, Some(2));
    let (code, stderr) = run_status(&["serve", "--cwd", "/nonexistent/dir"], &sb.cwd);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--cwd"), "{stderr}");
}

#[test]
fn unknown_keys_warn_and_the_server_runs() {
    let sb = Sandbox::new();
    let settings = sb.write(
        "s.json",
        r#"{"colour": "blue", "permissions": {"allow": []}}"#,
    );
    let done = run_lines(
        &sb,
        &["--settings", settings.to_str().unwrap()],
        &[json!({"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "pwd"}})],
    );
    assert!(done.status.success());
    assert!(done.stderr.contains("\"colour\""), "{}", done.stderr);
    assert_eq!(done.result("a")["outcome"], "success");
}

#[test]
fn a_start_up_error_is_one_stderr_line_and_no_input_is_read() {
    use std::io::Write;
    use std::process::Stdio;
    let sb = Sandbox::new();
    let settings = sb.write("bad.json", r#"{"permissions": {"allow": "Bash"}}"#);
    for args in [
        vec!["--settings", settings.to_str().unwrap()],
        vec!["--allowed-tools", ""],
        vec!["--tools", "Read,Nope"],
    ] {
        let mut child = command()
            .arg("serve")
            .arg("--cwd")
            .arg(&sb.cwd)
            .args(["--permission-mode", "bypassPermissions"])
            .args(&args)
            .current_dir(&sb.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A call is waiting on stdin: it must not be read, let alone run.
        let mut stdin = child.stdin.take().unwrap();
        let _ = writeln!(
            stdin,
            "{}",
            json!({"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "touch ran"}})
        );
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("toolrt: "), "{stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: {:?}", out.stdout);
        assert!(!sb.path("ran").exists(), "{args:?}");
    }
}
