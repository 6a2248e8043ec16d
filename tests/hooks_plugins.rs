//! `--plugin-dir DIR` (repeatable): each plugin's `hooks/hooks.json` loads, and its hooks run with
//! `CLAUDE_PLUGIN_ROOT` and `CLAUDE_PLUGIN_DATA` set to that plugin's own directories.

mod hooks_support;
mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use hooks_support::*;
use serde_json::json;

/// A plugin named `name` under `base` whose PreToolUse hook (the same command string in every
/// plugin) appends its root and data directory to `log`.
fn plugin(base: &Path, name: &str, log: &Path) -> PathBuf {
    let root = base.join(name);
    std::fs::create_dir_all(root.join("hooks")).unwrap();
    std::fs::create_dir_all(root.join(".claude-plugin")).unwrap();
    std::fs::write(
        root.join(".claude-plugin/plugin.json"),
        json!({"name": name, "version": "1.0.0"}).to_string(),
    )
    .unwrap();
    let script = root.join("hook.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat > /dev/null\nprintf '%s|%s|%s\\n' \"$1\" \"$CLAUDE_PLUGIN_ROOT\" \"$CLAUDE_PLUGIN_DATA\" >> '{}'\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(
        root.join("hooks/hooks.json"),
        json!({"description": "logs", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "\"${CLAUDE_PLUGIN_ROOT}/hook.sh\" shell"},
            {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hook.sh", "args": ["exec"]}
        ]}]}})
        .to_string(),
    )
    .unwrap();
    std::fs::canonicalize(root).unwrap()
}

#[test]
fn two_plugins_each_see_their_own_root_and_data() {
    let fx = Fixture::new();
    let log = fx.hooks.path().join("plugins.log");
    let base = fx.hooks.path().join("plugins");
    let a = plugin(&base, "alpha", &log);
    let b = plugin(&base, "beta", &log);
    fx.settings(json!({}));
    let home = fx.hooks.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let home_s = home.to_string_lossy().into_owned();
    let (a_s, b_s) = (
        a.to_string_lossy().into_owned(),
        b.to_string_lossy().into_owned(),
    );
    let run = fx
        .serve_with(
            "bypassPermissions",
            &["--plugin-dir", &a_s, "--plugin-dir", &b_s],
            &[("HOME", &home_s)],
        )
        .run(&[bash("a1", "echo hi")]);
    assert_eq!(run.outcome("a1"), "success", "{:#?}", run.lines);
    let mut lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    let data = |n: &str| home.join(".toolrt/plugin-data").join(n);
    let mut want = vec![
        format!("exec|{}|{}", a.display(), data("alpha").display()),
        format!("exec|{}|{}", b.display(), data("beta").display()),
        format!("shell|{}|{}", a.display(), data("alpha").display()),
        format!("shell|{}|{}", b.display(), data("beta").display()),
    ];
    want.sort();
    assert_eq!(
        lines, want,
        "the same command in two plugins runs once per plugin"
    );
    assert!(data("alpha").is_dir() && data("beta").is_dir());
    // hook_start says which plugin a hook belongs to.
    let mut plugins: Vec<&str> = run
        .events("hook_start")
        .iter()
        .map(|e| e["plugin"].as_str().unwrap())
        .collect();
    plugins.sort();
    assert_eq!(plugins, ["alpha", "alpha", "beta", "beta"]);
}

#[test]
fn a_missing_or_broken_plugin_dir_stops_start_up_naming_it() {
    let fx = Fixture::new();
    let cwd = fx.cwd().to_string_lossy().into_owned();
    let (code, stderr) = support::run_status(
        &["serve", "--cwd", &cwd, "--plugin-dir", "no-such-plugin"],
        fx.cwd(),
    );
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--plugin-dir no-such-plugin:"), "{stderr}");

    let bad = fx.cwd().join("bad");
    std::fs::create_dir_all(bad.join("hooks")).unwrap();
    std::fs::write(
        bad.join("hooks/hooks.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": 3, "hooks": []}]}}).to_string(),
    )
    .unwrap();
    let (code, stderr) =
        support::run_status(&["serve", "--cwd", &cwd, "--plugin-dir", "bad"], fx.cwd());
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("bad/hooks/hooks.json: hooks.PreToolUse[0].matcher: expected a string"),
        "{stderr}"
    );

    // A plugin without hooks is fine.
    let empty = fx.cwd().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    fx.settings(json!({}));
    let run = fx
        .serve_with(
            "bypassPermissions",
            &["--plugin-dir", &empty.to_string_lossy()],
            &[],
        )
        .run(&[bash("a1", "echo hi")]);
    assert_eq!(run.outcome("a1"), "success");
}
