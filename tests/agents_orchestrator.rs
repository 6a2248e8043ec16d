//! The multi-agent acceptance run: `tests/agents_orchestrator.py`, a test orchestrator written
//! with Python's standard library only, drives the real binary as a multi-agent runner would
//! (two client tools, three subagents in parallel, one nested two deep, each sending batches)
//! and checks narrowed rules, one result per call and what hooks saw; then, on a second toolrt,
//! that cancelling the top `Agent` call of a two-level tree ends the whole subtree (a running
//! `sleep` in the grandchild killed, every call answered once: `check_cancel_tree`). See the
//! script's docstring for every check.

mod support;

use std::process::Command;

#[test]
fn a_python_orchestrator_runs_three_subagents_with_narrowed_rights() {
    let work = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/agents_orchestrator.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(support::bin())
        .arg(work.path())
        .output()
        .expect("python3 runs (the MCP tests need it too)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the orchestrator failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.starts_with("ok: "), "{stdout}");
}
