//! What both hook measurements share (`benches/hooks.rs` and `examples/hook_latency.rs`): a hook
//! runner with one PreToolUse command hook, `true`, on Bash, and the bare `sh -c true` spawn it
//! is compared with.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolrt::hooks::{HookConfig, HookEnv, HookRunner, IfFilter, ToolHookCall};

/// Every hook's `if` condition holds.
struct NoFilter;

impl IfFilter for NoFilter {
    fn matches(&self, _: &str, _: &ToolHookCall<'_>) -> bool {
        true
    }
}

/// A runner whose only hook is PreToolUse `true` matching Bash, run in `dir`.
pub(crate) fn runner(dir: &Path) -> HookRunner {
    let mut config = HookConfig::new();
    config
        .add_settings_file(
            Path::new("bench.json"),
            &json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}),
            &|_| Ok(()),
        )
        .expect("valid hooks");
    HookRunner::new(
        Arc::new(config),
        HookEnv {
            cwd: dir.to_path_buf(),
            project_dir: dir.to_path_buf(),
            session_id: "bench".into(),
            env_scrub: vec!["*_TOKEN".into()],
            output_dir: dir.to_path_buf(),
            ..Default::default()
        },
        Arc::new(NoFilter),
        Arc::new(|_| {}),
    )
}

/// The tool input of the hooked and unhooked calls.
pub(crate) fn input() -> Map<String, Value> {
    json!({"command": "ls"})
        .as_object()
        .cloned()
        .expect("an object")
}

/// `sh -c true` in `dir`, spawned the way a command hook is (stdin piped, output read).
pub(crate) async fn bare_sh_true(dir: &Path) -> std::process::Output {
    tokio::process::Command::new("sh")
        .arg("-c")
        .arg("true")
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .output()
        .await
        .expect("sh runs")
}
