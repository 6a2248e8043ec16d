//! Nothing toolrt starts outlives it: when toolrt is killed with SIGKILL, its watchdog kills every
//! process group it had started — running Bash commands, background tasks, command hooks — with
//! the children they started in those groups.

mod support;

use std::path::Path;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use support::*;

/// A shell command that starts a child in its group, records both pids under `name`, and waits.
fn lingering(dir: &Path, name: &str) -> String {
    let p = |ext: &str| dir.join(format!("{name}.{ext}")).display().to_string();
    format!(
        "sleep 600 & echo $! > '{}'; echo $$ > '{}.tmp' && mv '{}.tmp' '{}'; wait",
        p("child"),
        p("pid"),
        p("pid"),
        p("pid")
    )
}

/// The pids a `lingering` command recorded (the shell and its child), once both are there.
fn pids_of(dir: &Path, name: &str) -> [u32; 2] {
    let pid = dir.join(format!("{name}.pid"));
    wait_file(&pid);
    [read_pid(&pid), read_pid(&dir.join(format!("{name}.child")))]
}

/// The watchdog of toolrt `parent`: its child running `__watchdog` (waiting up to 10 s for it
/// to appear).
fn watchdog_of(parent: u32) -> u32 {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = find_watchdog(parent) {
            return pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "toolrt {parent} has no watchdog"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn find_watchdog(parent: u32) -> Option<u32> {
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let ppid: Option<u32> = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok());
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if ppid == Some(parent)
            && cmdline.windows(10).any(|w| w == b"__watchdog")
            && !process_gone(pid)
        {
            return Some(pid);
        }
    }
    None
}

fn sigkill(pid: u32) {
    kill(Pid::from_raw(pid as i32), Signal::SIGKILL).unwrap();
}

fn all_gone(pids: &[u32]) {
    for &pid in pids {
        assert!(
            wait_gone_within(pid, Duration::from_secs(10)),
            "process {pid} outlived toolrt"
        );
    }
}

#[test]
fn sigkill_of_toolrt_kills_running_commands_background_tasks_and_hooks() {
    let sb = Sandbox::new();
    let marks = sb.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let hook = lingering(&marks, "hook");
    let settings = sb.write(
        "settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": hook}]}]}})
            .to_string(),
    );
    let mut server = sb.serve(&[
        "--permission-mode",
        "bypassPermissions",
        "--settings",
        settings.to_str().unwrap(),
    ]);
    for name in ["c1", "c2", "c3"] {
        server.tool_use(name, "Bash", json!({"command": lingering(&marks, name)}));
    }
    server.tool_use(
        "bg",
        "Bash",
        json!({"command": lingering(&marks, "bg"), "run_in_background": true}),
    );
    server.tool_use("r", "Read", json!({"file_path": "settings.json"}));
    let mut pids = Vec::new();
    for name in ["c1", "c2", "c3", "bg", "hook"] {
        pids.extend(pids_of(&marks, name));
    }
    // A later result: every group above was told to the watchdog before its call went on.
    server.tool_use("after", "Bash", json!({"command": "true"}));
    server.result("after");
    let watchdog = watchdog_of(server.pid());
    sigkill(server.pid());
    all_gone(&pids);
    assert!(
        wait_gone_within(watchdog, Duration::from_secs(10)),
        "the watchdog did not exit after its work"
    );
}

#[test]
fn a_killed_watchdog_is_replaced_and_still_covers_earlier_commands() {
    let sb = Sandbox::new();
    let marks = sb.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    server.tool_use(
        "early",
        "Bash",
        json!({"command": lingering(&marks, "early")}),
    );
    let mut pids = pids_of(&marks, "early").to_vec();
    let first = watchdog_of(server.pid());
    sigkill(first);
    assert!(wait_gone_within(first, Duration::from_secs(10)));
    // The next command finds the watchdog gone and starts another, which learns of both.
    server.tool_use(
        "late",
        "Bash",
        json!({"command": lingering(&marks, "late")}),
    );
    pids.extend(pids_of(&marks, "late"));
    // A later result: toolrt has told the new watchdog about "late" by then (it does so before
    // the command's call goes on).
    server.tool_use("after", "Bash", json!({"command": "true"}));
    server.result("after");
    let second = watchdog_of(server.pid());
    assert_ne!(first, second);
    sigkill(server.pid());
    all_gone(&pids);
}

#[test]
fn a_normal_exit_leaves_no_watchdog_behind() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    server.tool_use("a", "Bash", json!({"command": "echo hi"}));
    server.result("a");
    let watchdog = watchdog_of(server.pid());
    let done = server.finish();
    assert!(done.status.success());
    assert!(wait_gone_within(watchdog, Duration::from_secs(10)));
}

#[test]
fn the_watchdog_ignores_interrupt_terminate_hangup_and_quit() {
    let sb = Sandbox::new();
    let marks = sb.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    server.tool_use("c", "Bash", json!({"command": lingering(&marks, "c")}));
    let pids = pids_of(&marks, "c");
    server.tool_use("after", "Bash", json!({"command": "true"}));
    server.result("after");
    let watchdog = watchdog_of(server.pid());
    // What a terminal, a session leader or `kill` would send to it.
    for sig in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        kill(Pid::from_raw(watchdog as i32), sig).unwrap();
    }
    // Still there, still toolrt's watchdog (none was started in its place)...
    assert_eq!(find_watchdog(server.pid()), Some(watchdog));
    // ...and still doing its job: when toolrt dies, the command it started dies too.
    sigkill(server.pid());
    all_gone(&pids);
    assert!(
        wait_gone_within(watchdog, Duration::from_secs(10)),
        "the watchdog did not exit after its work"
    );
}
