//! Consecutive concurrency-safe calls run in parallel; other calls run alone.

mod support;

use std::time::Instant;

use serde_json::json;
use support::*;

fn timed_batch(calls: serde_json::Value) -> (f64, Finished) {
    let sb = Sandbox::new();
    let start = Instant::now();
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[json!({"type": "batch", "id": "b", "calls": calls})],
    );
    (start.elapsed().as_secs_f64(), done)
}

#[test]
fn three_safe_calls_of_one_second_run_together() {
    // `tail -f /dev/null` is read-only and never ends; the 1 s timeout stops each.
    let call = |id: &str| json!({"id": id, "name": "Bash", "input": {"command": "tail -f /dev/null", "timeout": 1000}});
    let (secs, done) = timed_batch(json!([call("a"), call("b"), call("c")]));
    for id in ["a", "b", "c"] {
        assert_eq!(done.result(id)["outcome"], "timed_out");
    }
    assert!(secs < 2.0, "three parallel 1 s calls took {secs:.2}s");
}

#[test]
fn three_unsafe_calls_of_one_second_run_one_after_another() {
    let call = |id: &str| json!({"id": id, "name": "Bash", "input": {"command": "sleep 1"}});
    let (secs, done) = timed_batch(json!([call("a"), call("b"), call("c")]));
    for id in ["a", "b", "c"] {
        assert_eq!(done.result(id)["outcome"], "success");
    }
    assert!(
        secs >= 3.0,
        "three exclusive 1 s calls took only {secs:.2}s"
    );
}

#[test]
fn max_parallel_bounds_a_batch() {
    let sb = Sandbox::new();
    let call = |id: &str| json!({"id": id, "name": "Bash", "input": {"command": "tail -f /dev/null", "timeout": 1000}});
    let start = Instant::now();
    let done = run_lines(
        &sb,
        &[
            "--permission-mode",
            "bypassPermissions",
            "--max-parallel",
            "2",
        ],
        &[
            json!({"type": "batch", "id": "b", "calls": [call("a"), call("b"), call("c"), call("d")]}),
        ],
    );
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(done.results("d").len(), 1);
    assert!(
        (2.0..3.5).contains(&secs),
        "four 1 s calls two at a time took {secs:.2}s"
    );
}

#[test]
fn separate_tool_use_lines_run_concurrently() {
    let sb = Sandbox::new();
    // `a` finishes only once `b` has run: sequential handling would never answer `a`.
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    server.tool_use(
        "a",
        "Bash",
        json!({"command": "timeout 20 sh -c 'while [ ! -f b.txt ]; do sleep 0.01; done'; echo saw b"}),
    );
    server.tool_use("b", "Bash", json!({"command": "touch b.txt"}));
    let done = server.finish();
    assert_eq!(done.result("b")["outcome"], "success");
    let a = done.result("a");
    assert_eq!(a["outcome"], "success", "{a}");
    assert!(a["content"].as_str().unwrap().contains("saw b"));
}
