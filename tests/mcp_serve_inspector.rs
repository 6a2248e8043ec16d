//! `toolrt mcp-serve` driven by the official MCP Inspector's CLI (`@modelcontextprotocol/
//! inspector-cli`, pinned in tests/fixtures/mcp) in `--cli` mode, over stdio and over
//! `--http`: tools/list, a call that runs, a deny rule and a blocking PreToolUse hook hold.

mod mcp_serve_support;
mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use mcp_serve_support::{guarded_flags, start_http};
use serde_json::Value;
use support::{Sandbox, mcp};

const TOKEN: &str = "inspector-token-93c2";

/// The Inspector CLI, installed by tests/fixtures/mcp/install.
fn inspector() -> (PathBuf, PathBuf) {
    let modules = mcp::fixtures().join("node_modules");
    (modules.join(".bin/mcp-inspector-cli"), modules)
}

/// Runs the Inspector CLI with `args` and returns what it printed as JSON (it prints the
/// method's result), panicking with its output if it failed.
async fn run_inspector(home: &Path, args: &[String]) -> Value {
    let (bin, modules) = inspector();
    // inspector-cli 1.0.3 finds its own package.json through `../package.json` checked
    // against the working directory: run it where that holds (the fixtures' package.json).
    let out = tokio::process::Command::new(bin)
        .arg("--cli")
        .args(args)
        .current_dir(modules)
        .env("HOME", home)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .expect("run the MCP Inspector CLI");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "inspector {args:?}: {}\n{stdout}\n{stderr}",
        out.status
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("inspector {args:?} printed no JSON ({e}): {stdout}\n{stderr}"))
}

/// The Inspector's arguments for a `tools/call` of `tool` with `key=value` arguments.
fn call_args(tool: &str, pairs: &[(&str, &str)]) -> Vec<String> {
    let mut args = vec![
        "--method".into(),
        "tools/call".into(),
        "--tool-name".into(),
        tool.into(),
    ];
    for (k, v) in pairs {
        args.push("--tool-arg".into());
        args.push(format!("{k}={v}"));
    }
    args
}

fn list_args() -> Vec<String> {
    vec!["--method".into(), "tools/list".into()]
}

/// `--cwd`, `--output-dir` and the guarded flags (a deny rule on written.txt, a PreToolUse
/// hook blocking every Bash command that names `blocked`).
fn serve_flags(sb: &Sandbox) -> Vec<String> {
    let mut flags = vec![
        "--cwd".to_string(),
        sb.cwd.to_str().unwrap().to_string(),
        "--output-dir".to_string(),
        sb.out.to_str().unwrap().to_string(),
    ];
    flags.extend(guarded_flags(sb));
    flags
}

/// tools/list, a call that runs, a denied Write and a hook-blocked Bash, through `target`
/// (the Inspector's arguments that name the server).
async fn check(sb: &Sandbox, target: &[String]) {
    let home = sb.cwd.parent().unwrap();
    let with = |rest: Vec<String>| -> Vec<String> { target.iter().cloned().chain(rest).collect() };
    let listed = run_inspector(home, &with(list_args())).await;
    let mut names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort();
    assert_eq!(names, ["Bash", "Read", "Write"], "{listed}");

    let ran = run_inspector(
        home,
        &with(call_args("Bash", &[("command", "echo ran-through-toolrt")])),
    )
    .await;
    assert_eq!(ran["isError"], false, "{ran}");
    assert!(
        ran["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("ran-through-toolrt"),
        "{ran}"
    );

    let target_file = sb.path("written.txt");
    let denied = run_inspector(
        home,
        &with(call_args(
            "Write",
            &[
                ("file_path", target_file.to_str().unwrap()),
                ("content", "x"),
            ],
        )),
    )
    .await;
    assert_eq!(denied["isError"], true, "{denied}");
    assert_eq!(denied["_meta"]["toolrt/outcome"], "denied", "{denied}");
    assert!(!target_file.exists(), "a denied Write wrote its file");

    let marker = sb.path("ran.txt");
    let command = format!("touch {} # blocked", marker.display());
    let blocked = run_inspector(home, &with(call_args("Bash", &[("command", &command)]))).await;
    assert_eq!(blocked["isError"], true, "{blocked}");
    assert!(
        blocked["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("blocked by the test hook"),
        "{blocked}"
    );
    assert!(!marker.exists(), "a blocked Bash call ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_over_stdio() {
    let sb = Sandbox::new();
    let target: Vec<String> = [env!("CARGO_BIN_EXE_toolrt").to_string(), "mcp-serve".into()]
        .into_iter()
        .chain(serve_flags(&sb))
        .collect();
    check(&sb, &target).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_over_http_with_the_token() {
    let sb = Sandbox::new();
    let tokens = sb.write("token", TOKEN).to_string_lossy().into_owned();
    let mut flags = serve_flags(&sb);
    // start_http passes --cwd and --output-dir itself.
    flags.drain(..4);
    flags.extend(["--http-token-file".to_string(), tokens]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let serve = start_http(&sb.cwd, &sb.out, &flags).await;
    let target: Vec<String> = vec![
        serve.url.clone(),
        "--transport".into(),
        "http".into(),
        "--header".into(),
        format!("Authorization: Bearer {TOKEN}"),
    ];
    check(&sb, &target).await;
    // Without the token the Inspector is refused.
    let (bin, modules) = inspector();
    let refused = tokio::process::Command::new(bin)
        .args([
            "--cli",
            &serve.url,
            "--transport",
            "http",
            "--method",
            "tools/list",
        ])
        .current_dir(modules)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!refused.status.success(), "{refused:?}");
}
