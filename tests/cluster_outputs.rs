//! Worker nodes: a long output of a call on a worker comes back whole, in chunks, into the
//! coordinator's output folder, and the worker keeps no copy once it is fetched.

mod cluster_support;
mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use cluster_support::*;
use serde_json::{Value, json};
use support::*;

#[test]
fn a_long_remote_output_comes_back_whole_and_the_worker_keeps_none() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let workers = workers(&sb, &cookie, 1);
    let hook_log = sb.dir.path().join("post.json");
    let settings = sb.settings_file(&json!({"hooks": {"PostToolUse": [{
        "matcher": "Bash",
        "hooks": [{"type": "command", "command": format!("cat > {}", hook_log.display())}]
    }]}}));
    let mut server = coordinator(
        &sb,
        &cookie,
        &workers,
        &[
            "--settings",
            &settings,
            "--permission-mode",
            "bypassPermissions",
        ],
    );
    // About 39 MB: more than one frame of the link may carry (16 MiB), so it must come in
    // chunks.
    let n = 5_000_000;
    server.tool_use("long", "Bash", json!({"command": format!("seq 1 {n}")}));
    let long = server.result("long");
    assert_eq!(
        (long["outcome"].as_str(), long["node"].as_str()),
        (Some("success"), Some("w1")),
        "{}",
        &long.to_string()[..500.min(long.to_string().len())]
    );
    let file = PathBuf::from(long["output_file"].as_str().expect("an output file"));
    assert!(
        file.starts_with(&sb.out),
        "{} is not on the coordinator",
        file.display()
    );
    let whole = std::fs::read_to_string(&file).unwrap();
    let expected: String = (1..=n).map(|i| format!("{i}\n")).collect();
    assert_eq!(whole.len(), expected.len());
    assert!(
        whole == expected,
        "the copy differs from the command's output"
    );
    // What hooks are told names the coordinator's copy, not the worker's file.
    let post: Value = serde_json::from_str(&std::fs::read_to_string(&hook_log).unwrap()).unwrap();
    let response = &post["tool_response"];
    assert_eq!(response["persistedOutputPath"].as_str(), file.to_str());
    assert_eq!(response["persistedOutputSize"], expected.len());
    // The worker let its file go once the last chunk was sent.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = files_under(&workers[0].tmp);
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left on the worker: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A short output stays in the result, with no file.
    server.tool_use("short", "Bash", json!({"command": "echo hi"}));
    let short = server.result("short");
    assert_eq!(short["content"], "hi\n", "{short}");
    assert!(short.get("output_file").is_none(), "{short}");
}

#[test]
fn a_remote_commands_new_output_reaches_the_client_as_progress_before_its_result() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let workers = workers(&sb, &cookie, 1);
    let mut server = coordinator(
        &sb,
        &cookie,
        &workers,
        &["--permission-mode", "bypassPermissions"],
    );
    // Prints, then waits (in the worker's folder) until the test has seen the first line.
    server.tool_use("p", "Bash", json!({"command": PRINTS_THEN_WAITS_FOR_SEEN}));
    first_progress_line(&mut server, "p");
    std::fs::write(workers[0].cwd.join("seen"), "").unwrap();
    let done = server.result("p");
    assert_eq!(
        (done["outcome"].as_str(), done["node"].as_str()),
        (Some("success"), Some("w1")),
        "{done}"
    );
    assert_eq!(done["content"], "first line\nsecond line\n");
}
