//! A running command's new output reaches the client as `progress` events before its result.

mod support;

use std::time::Duration;

use serde_json::json;
use support::*;

#[test]
fn progress_events_carry_new_output_before_the_result() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    // Prints, then waits until the test has seen the first line as progress.
    server.tool_use(
        "p",
        "Bash",
        json!({"command": "echo first line; timeout 20 sh -c 'while [ ! -f seen ]; do sleep 0.01; done'; echo second line"}),
    );
    let progress = server.wait_for("progress", Duration::from_secs(20), |v| {
        v["type"] == "event" && v["event"] == "progress"
    });
    assert_eq!(progress["tool_use_id"], "p");
    assert!(
        progress["data"]["output"]
            .as_str()
            .is_some_and(|o| o.contains("first line")),
        "{progress}"
    );
    std::fs::write(sb.path("seen"), "").unwrap();
    let done = server.finish();
    let at =
        |pred: &dyn Fn(&serde_json::Value) -> bool| done.messages.iter().position(pred).unwrap();
    let first_progress = at(&|v| v["event"] == "progress");
    let result = at(&|v| is_result(v, "p"));
    assert!(first_progress < result);
    assert_eq!(
        done.result("p")["content"],
        "first line\nsecond line\n",
        "the result has all of it"
    );
}
