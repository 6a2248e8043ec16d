//! Process checks through /proc, shared by the binary-level and the library-level tests.
#![allow(dead_code)]

use std::fmt::Display;
use std::path::Path;
use std::time::{Duration, Instant};

/// Whether a process is gone; a zombie (or a dead task) counts as gone, since a killed child
/// reparented to a PID 1 that does not reap stays one.
pub(crate) fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The command name in parentheses may itself hold ") ", so split at the last one.
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Polls until `pid` is gone, at most `limit` (SIGKILL delivery is asynchronous).
pub(crate) fn wait_gone_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if process_gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    process_gone(pid)
}

/// Reads a pid a shell command wrote to `file`, polling up to 3 s.
pub(crate) fn read_pid(file: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        if let Some(pid) = std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no pid in {}", file.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A `kB` field (`VmHWM`, `VmRSS`, …) of `/proc/<pid>/status`; `pid` may be `"self"`.
pub(crate) fn status_kib(pid: impl Display, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}
