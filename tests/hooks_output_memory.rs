//! A hook that prints 50 MB on each of stdout and stderr does not grow `toolrt serve`'s memory
//! past a few MB: past its 1 MiB capture per stream the output is drained, dropped and counted
//! (`dropped_bytes` on `hook_end`). Measured on the real process from /proc (VmHWM), so other
//! tests running at the same time cannot move the figure.

mod support;

use std::time::Duration;

use serde_json::json;
use support::*;

const FLOOD: usize = 50_000_000;
const CAPTURE: usize = 1 << 20;

#[test]
fn fifty_megabytes_of_hook_output_stay_bounded() {
    let sb = Sandbox::new();
    let flood = format!(
        "head -c {FLOOD} /dev/zero | tr '\\0' a; head -c {FLOOD} /dev/zero | tr '\\0' b >&2"
    );
    let settings = sb.write(
        "s.json",
        &json!({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": flood, "timeout": 120}]}]}})
        .to_string(),
    );
    let mut server = sb.serve(&[
        "--permission-mode",
        "bypassPermissions",
        "--settings",
        settings.to_str().unwrap(),
    ]);
    // A call that runs no hook first, so the baseline includes a warm pipeline.
    server.tool_use("warm", "Glob", json!({"pattern": "*"}));
    assert_eq!(server.result("warm")["outcome"], "success");
    let before = status_kib(server.pid(), "VmHWM");

    server.tool_use("flood", "Bash", json!({"command": "echo hi"}));
    let end = server.wait_for("the flooding hook's end", Duration::from_secs(120), |v| {
        v["event"] == "hook_end" && v["tool_use_id"] == "flood"
    });
    assert_eq!(server.result("flood")["outcome"], "success");
    let after = status_kib(server.pid(), "VmHWM");
    assert_eq!(end["outcome"], "success", "{end}");
    assert_eq!(end["dropped_bytes"], json!(2 * (FLOOD - CAPTURE)), "{end}");
    assert!(
        after.saturating_sub(before) < 8 * 1024,
        "peak RSS grew by {} KiB ({before} -> {after})",
        after - before
    );
    server.finish();
}
