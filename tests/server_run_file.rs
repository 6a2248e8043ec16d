//! `toolrt run FILE` reads the lines `serve` would read, from a file, and writes the same output;
//! nobody can answer a permission request there, so an ask is a deny. Without `--cwd` the
//! current directory is the workspace.

mod support;

use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::*;

/// The messages without what differs from run to run (timings).
fn comparable(stdout: &[u8]) -> Vec<Value> {
    let mut out: Vec<Value> = String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if let Some(o) = v.as_object_mut() {
                o.remove("duration_ms");
            }
            v
        })
        .collect();
    // Separate calls may finish in any order.
    out.sort_by_key(|v| v.to_string());
    out
}

#[test]
fn run_file_answers_like_serve() {
    let sb = Sandbox::new();
    sb.write("a.txt", "alpha\n");
    let lines = [
        json!({"type": "tool_use", "id": "r", "name": "Read", "input": {"file_path": "a.txt"}}),
        json!({"type": "batch", "id": "b", "calls": [
            {"id": "l", "name": "Bash", "input": {"command": "ls"}},
            {"id": "n", "name": "Nope", "input": {}}
        ]}),
        json!({"type": "tool_use", "id": "s", "name": "Read", "input": {"file_path": 5}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let file = sb.dir.path().join("calls.ndjson");
    std::fs::write(&file, &text).unwrap();
    let run = |args: &[&str], stdin: &str| {
        let mut child = Command::new(bin())
            .args(args)
            .args([
                "--cwd",
                sb.cwd.to_str().unwrap(),
                "--output-dir",
                sb.out.to_str().unwrap(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(stdin.as_bytes())
                .unwrap();
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        comparable(&out.stdout)
    };
    let from_file = run(&["run", file.to_str().unwrap()], "");
    let from_stdin = run(&["run", "-"], &text);
    let served = run(&["serve"], &text);
    assert_eq!(from_file.len(), 6, "{from_file:#?}");
    assert_eq!(from_file, served);
    assert_eq!(from_stdin, served);
}

#[test]
fn run_denies_what_would_ask() {
    let sb = Sandbox::new();
    let file = sb.dir.path().join("calls.ndjson");
    std::fs::write(
        &file,
        json!({"type": "tool_use", "id": "w", "name": "Write", "input": {"file_path": "new.txt", "content": "x"}}).to_string() + "\n",
    )
    .unwrap();
    let out = Command::new(bin())
        .args([
            "run",
            file.to_str().unwrap(),
            "--cwd",
            sb.cwd.to_str().unwrap(),
        ])
        .env("HOME", sb.dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("permission_request"), "{text}");
    let r: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(r["outcome"], "denied");
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .contains("no one can approve"),
        "{r}"
    );
    assert!(!sb.path("new.txt").exists());
}

#[test]
fn without_cwd_the_current_directory_is_the_workspace() {
    let sb = Sandbox::new();
    sb.write("here.txt", "here\n");
    let mut cmd = command();
    cmd.args(["serve", "--output-dir", sb.out.to_str().unwrap()])
        .current_dir(&sb.cwd)
        .env("HOME", sb.dir.path());
    let mut server = Server::spawn(cmd, Stderr::Capture);
    // A relative path resolves against it, and reading inside it needs no rule.
    server.tool_use("r", "Read", json!({"file_path": "here.txt"}));
    let r = server.result("r");
    assert_eq!(r["outcome"], "success", "{r}");
    assert!(r["content"].as_str().unwrap().contains("here"));
    server.finish();
}
