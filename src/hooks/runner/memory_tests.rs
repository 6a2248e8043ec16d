//! A hook printing 50 MB must not grow toolrt's memory past a few MB (peak RSS of the test
//! process, read before and after the one hook run).

use std::sync::Arc;

use super::procfs;
use crate::hooks::{HookConfig, HookEnv, HookRunner, IfFilter, ToolHookCall};
use serde_json::json;
use tokio_util::sync::CancellationToken;

struct NoFilter;

impl IfFilter for NoFilter {
    fn matches(&self, _: &str, _: &ToolHookCall<'_>) -> bool {
        true
    }
}

/// (VmHWM, VmRSS) of this process in KiB.
fn memory_kib() -> (u64, u64) {
    (
        procfs::status_kib("self", "VmHWM"),
        procfs::status_kib("self", "VmRSS"),
    )
}

#[test]
fn fifty_megabytes_of_hook_output_stay_bounded() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::TempDir::new().unwrap();
    let flood =
        "head -c 50000000 /dev/zero | tr '\\0' a; head -c 50000000 /dev/zero | tr '\\0' b >&2";
    let mut config = HookConfig::new();
    config
        .add_settings_file(
            &dir.path().join("s.json"),
            &json!({"PostToolUse": [{"hooks": [{"type": "command", "command": flood}]}]}),
            &|_| Ok(()),
        )
        .unwrap();
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let runner = HookRunner::new(
        Arc::new(config),
        HookEnv {
            cwd: dir.path().to_path_buf(),
            project_dir: dir.path().to_path_buf(),
            session_id: "s".into(),
            env_scrub: vec![],
            output_dir: dir.path().to_path_buf(),
            ..Default::default()
        },
        Arc::new(NoFilter),
        Arc::new(move |v| sink.lock().unwrap().push(v)),
    );
    let input = json!({"command": "ls"}).as_object().cloned().unwrap();
    let call = ToolHookCall {
        tool_name: "Bash",
        access: Default::default(),
        tool_input: &input,
        tool_use_id: "t1",
        permission_mode: "default",
        agent: None,
    };
    let (hwm_before, rss_before) = memory_kib();
    let r = rt.block_on(runner.post_tool_use(&call, &json!("x"), 1, &CancellationToken::new()));
    let (hwm_after, rss_after) = memory_kib();
    eprintln!("VmHWM {hwm_before} -> {hwm_after} KiB, VmRSS {rss_before} -> {rss_after} KiB");
    assert!(r.feedback.is_empty());
    let end = events.lock().unwrap().last().cloned().unwrap();
    assert_eq!(end["outcome"], "success");
    // Everything past 1 MiB of each stream was drained and dropped, and counted.
    assert_eq!(end["dropped_bytes"], 2 * (50_000_000 - (1 << 20)));
    assert!(
        hwm_after.saturating_sub(hwm_before) < 8 * 1024,
        "peak RSS grew by {} KiB",
        hwm_after - hwm_before
    );
}
