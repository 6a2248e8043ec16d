//! `--max-in-flight` bounds the calls executing at once across every batch and line; the rest
//! wait their turn and still get their result.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::*;

fn started(sb: &Sandbox) -> usize {
    std::fs::read_dir(&sb.cwd)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("started-"))
        .count()
}

#[test]
fn max_in_flight_bounds_calls_across_batches() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&[
        "--permission-mode",
        "bypassPermissions",
        "--max-in-flight",
        "2",
    ]);
    // Each call marks that it started, then waits for `release`.
    let wait = |id: &str| json!({"command": format!("touch started-{id}; timeout 20 sh -c 'while [ ! -f release ]; do sleep 0.01; done'")});
    server.tool_use("a", "Bash", wait("a"));
    server.send(json!({"type": "batch", "id": "b1", "calls": [{"id": "b", "name": "Bash", "input": wait("b")}]}));
    server.send(json!({"type": "batch", "id": "b2", "calls": [{"id": "c", "name": "Bash", "input": wait("c")}]}));
    server.tool_use("d", "Bash", wait("d"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while started(&sb) < 2 {
        assert!(Instant::now() < deadline, "two calls never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Give a third call every chance to start if the bound did not hold.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        started(&sb),
        2,
        "more than --max-in-flight calls ran at once"
    );
    std::fs::write(sb.path("release"), "").unwrap();
    let done = server.finish();
    for id in ["a", "b", "c", "d"] {
        assert_eq!(done.result(id)["outcome"], "success", "{id}");
    }
    assert_eq!(started(&sb), 4);
}
