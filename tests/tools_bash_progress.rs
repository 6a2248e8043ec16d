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
    server.tool_use("p", "Bash", json!({"command": PRINTS_THEN_WAITS_FOR_SEEN}));
    first_progress_line(&mut server, "p");
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

#[test]
fn a_progress_event_carries_at_most_about_32000_characters_and_says_what_it_skipped() {
    let sb = Sandbox::new();
    // 100,000 characters at once, then a wait until the test has seen a progress event.
    let line = format!("{}\n", "a".repeat(99));
    sb.write("big.txt", &line.repeat(1000));
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    server.tool_use(
        "p",
        "Bash",
        json!({"command": "cat big.txt; timeout 20 sh -c 'while [ ! -f seen ]; do sleep 0.01; done'"}),
    );
    server.wait_for("progress", Duration::from_secs(20), |v| {
        v["type"] == "event" && v["event"] == "progress"
    });
    std::fs::write(sb.path("seen"), "").unwrap();
    let done = server.finish();
    // Every character was either streamed or counted as skipped by a marker.
    let (mut skipped, mut shown, mut markers) = (0, 0, 0);
    for event in done.events("progress") {
        let output = event["data"]["output"].as_str().unwrap();
        let text = match output.split_once('\n') {
            Some((first, rest)) if first.starts_with("[… ") => {
                let n: usize = first
                    .strip_prefix("[… ")
                    .and_then(|m| {
                        m.strip_suffix(" characters not streamed; all are in the output file …]")
                    })
                    .and_then(|n| n.parse().ok())
                    .unwrap_or_else(|| panic!("a bad marker: {first:?}"));
                skipped += n;
                markers += 1;
                rest
            }
            _ => output,
        };
        let chars = text.chars().count();
        assert!(chars <= 32_000, "{chars} characters in one event");
        shown += chars;
    }
    assert!(markers > 0, "100,000 characters at once were all streamed");
    assert_eq!(skipped + shown, 100_000);
    // The result's file has all of it.
    let result = done.result("p");
    let file = result["output_file"].as_str().expect("over Bash's budget");
    assert_eq!(std::fs::read_to_string(file).unwrap(), line.repeat(1000));
}
