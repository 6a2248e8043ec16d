//! MCP servers that fail: one that never answers initialize, exits at once, cannot be found,
//! dies mid-call (in-flight calls end `failed` naming the server and how it exited; the next
//! call restarts it, with events), cannot be restarted (bounded attempts with backoff), ignores
//! end of file at shutdown (killed with its process group), dies leaving a process on its
//! pipes (its calls still end at once), and toolrt killed with SIGKILL (the watchdog kills the
//! servers).

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use support::mcp::{self, everything, fixtures, probe, raw, status_event};
use support::{Sandbox, pid_alive};

fn wait_gone(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while pid_alive(pid) {
        assert!(Instant::now() < deadline, "process {pid} is still running");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The probe server's own pid, from its `env` tool.
fn probe_pid(server: &mut support::Server, id: &str, tool: &str) -> i32 {
    server.tool_use(id, tool, json!({}));
    let r = server.result(id);
    r["structured_content"]["__pid__"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .parse()
        .unwrap()
}

#[test]
fn failed_servers_are_reported_and_the_others_work() {
    let sandbox = Sandbox::new();
    let settings = sandbox.settings_file(&json!({"env": {"MCP_TIMEOUT": "5000"}}));
    let started = Instant::now();
    let mut server = mcp::serve(
        &sandbox,
        json!({
            "mute": raw("mute"),
            "dies": {"command": "sh", "args": ["-c", "echo 'fatal: missing config' >&2; exit 7"]},
            "nowhere": {"command": "/nonexistent/mcp-server"},
            "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
            "everything": everything()
        }),
        &[
            "--settings",
            &settings,
            "--permission-mode",
            "bypassPermissions",
        ],
    );
    let mute = status_event(&mut server, "mute", "failed");
    assert_eq!(
        mute["reason"], "did not answer initialize within 5000 ms",
        "{mute}"
    );
    // Reported with what it wrote to stderr (it logs the request it ignored).
    assert!(
        mute["stderr"].as_str().unwrap().contains("got initialize"),
        "{mute}"
    );
    let dies = status_event(&mut server, "dies", "failed");
    assert!(
        dies["reason"]
            .as_str()
            .unwrap()
            .contains("exited (exit status 7)"),
        "{dies}"
    );
    assert_eq!(dies["stderr"], "fatal: missing config", "{dies}");
    let nowhere = status_event(&mut server, "nowhere", "failed");
    assert!(
        nowhere["reason"]
            .as_str()
            .unwrap()
            .starts_with("cannot start \"/nonexistent/mcp-server\""),
        "{nowhere}"
    );
    let old = status_event(&mut server, "old", "failed");
    assert!(
        old["reason"]
            .as_str()
            .unwrap()
            .contains("\"sse\" is not supported"),
        "{old}"
    );
    status_event(&mut server, "everything", "connected");
    server.tool_use("e", "mcp__everything__echo", json!({"message": "fine"}));
    assert_eq!(server.result("e")["content"], "Echo: fine");
    server.tool_use("m", "mcp__mute__a", json!({}));
    assert_eq!(server.result("m")["outcome"], "unavailable");
    let done = server.finish();
    assert!(done.status.success());
    // Start-up waited for the mute server's timeout, not for ever.
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_server_that_dies_mid_call_fails_its_calls_and_restarts_on_the_next() {
    let sandbox = Sandbox::new();
    let mut server = mcp::serve(
        &sandbox,
        json!({"probe": probe(json!({}))}),
        &[
            "--permission-mode",
            "bypassPermissions",
            "--max-parallel",
            "4",
        ],
    );
    status_event(&mut server, "probe", "connected");
    let first = probe_pid(&mut server, "pid1", "mcp__probe__env");
    // A call in flight, then the server crashes (exit status 3) in another call after a flood
    // of stderr.
    server.tool_use(
        "slow",
        "mcp__probe__slow",
        json!({"seconds": 30, "steps": 30}),
    );
    server.take_for("progress", Duration::from_secs(20), |v| {
        v["event"] == "progress" && v["tool_use_id"] == "slow"
    });
    server.tool_use("flood", "mcp__probe__stderr_flood", json!({"lines": 20000}));
    assert_eq!(server.result("flood")["outcome"], "success");
    server.tool_use("crash", "mcp__probe__crash", json!({"code": 3}));
    for id in ["slow", "crash"] {
        let r = server.result(id);
        assert_eq!(r["outcome"], "failed", "{r}");
        let text = r["content"].as_str().unwrap();
        assert!(
            text.starts_with("MCP server \"probe\" exited (exit status 3) during tools/call"),
            "{text}"
        );
        assert!(text.contains("it is restarted on the next call"), "{text}");
        // Only the last lines of the flood: bounded, and the crash message last.
        assert!(text.ends_with("[probe] crashing with 3"), "{text}");
        assert!(text.len() < 4000, "{}", text.len());
    }
    let died = status_event(&mut server, "probe", "failed");
    assert!(
        died["reason"]
            .as_str()
            .unwrap()
            .contains("exited (exit status 3)"),
        "{died}"
    );
    wait_gone(first);
    // The next call starts it again.
    server.tool_use("again", "mcp__probe__echo", json!({"message": "back"}));
    let again = server.result("again");
    assert_eq!(again["content"], "back", "{again}");
    server.wait_for("restarted event", Duration::from_secs(10), |v| {
        v["event"] == "mcp_server"
            && v["server"] == "probe"
            && v["status"] == "connected"
            && v["reason"] == "restarted (restart 1)"
    });
    // Killed from outside, by a signal: named as such.
    let second = probe_pid(&mut server, "pid2", "mcp__probe__env");
    assert_ne!(first, second);
    server.tool_use(
        "slow2",
        "mcp__probe__slow",
        json!({"seconds": 30, "steps": 30}),
    );
    server.take_for("progress", Duration::from_secs(20), |v| {
        v["event"] == "progress" && v["tool_use_id"] == "slow2"
    });
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(second),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let r = server.result("slow2");
    assert_eq!(r["outcome"], "failed", "{r}");
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .contains("exited (killed by signal 9)"),
        "{r}"
    );
    server.tool_use(
        "again2",
        "mcp__probe__echo",
        json!({"message": "back again"}),
    );
    assert_eq!(server.result("again2")["content"], "back again");
    server.finish();
}

#[test]
fn restarts_are_bounded_with_backoff() {
    let sandbox = Sandbox::new();
    let flag = sandbox.dir.path().join("started-once");
    let py = fixtures().join(".venv/bin/python");
    let script = fixtures().join("probe_server.py");
    // Starts once; every later start fails at once.
    let command = format!(
        "if [ -e '{f}' ]; then echo 'cannot start twice' >&2; exit 5; fi; touch '{f}'; exec '{py}' '{script}'",
        f = flag.display(),
        py = py.display(),
        script = script.display()
    );
    let mut server = mcp::serve(
        &sandbox,
        json!({"once": {"command": "sh", "args": ["-c", command]}}),
        &["--permission-mode", "bypassPermissions"],
    );
    status_event(&mut server, "once", "connected");
    server.tool_use("crash", "mcp__once__crash", json!({"code": 1}));
    assert_eq!(server.result("crash")["outcome"], "failed");
    status_event(&mut server, "once", "failed");
    server.tool_use("r1", "mcp__once__echo", json!({"message": "x"}));
    let r1 = server.result("r1");
    assert_eq!(r1["outcome"], "failed");
    let text = r1["content"].as_str().unwrap();
    assert!(
        text.contains("restart attempt 1 of 5 failed: exited (exit status 5) before it initialized; next attempt on a call after 500 ms"),
        "{text}"
    );
    let event = server.wait_for("attempt event", Duration::from_secs(10), |v| {
        v["event"] == "mcp_server"
            && v["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("restart attempt 1 of 5"))
    });
    assert_eq!(event["stderr"], "cannot start twice");
    // The second attempt waits for its backoff first.
    let asked = Instant::now();
    server.tool_use("r2", "mcp__once__echo", json!({"message": "x"}));
    let r2 = server.result("r2");
    assert!(
        r2["content"]
            .as_str()
            .unwrap()
            .contains("restart attempt 2 of 5"),
        "{r2}"
    );
    assert!(asked.elapsed() >= Duration::from_millis(400));
    server.finish();
}

#[test]
fn a_server_ignoring_eof_is_killed_with_its_group_at_shutdown() {
    let sandbox = Sandbox::new();
    let pid_file = sandbox.dir.path().join("grandchild.pid");
    let raw = raw("ignore-eof");
    let command = format!(
        "sleep 300 & echo $! > '{}'; exec '{}' '{}' ignore-eof",
        pid_file.display(),
        raw["command"].as_str().unwrap(),
        raw["args"][0].as_str().unwrap()
    );
    let mut server = mcp::serve(
        &sandbox,
        json!({"stubborn": {"command": "sh", "args": ["-c", command]}}),
        &["--permission-mode", "bypassPermissions"],
    );
    status_event(&mut server, "stubborn", "connected");
    let grandchild: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(pid_alive(grandchild));
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
    // toolrt waited its grace, then killed the group: the grandchild is gone too.
    wait_gone(grandchild);
}

#[test]
fn servers_die_with_toolrt_even_on_sigkill() {
    let sandbox = Sandbox::new();
    let mut server = mcp::serve_probe(&sandbox);
    let pid = probe_pid(&mut server, "p", "mcp__probe__env");
    assert!(pid_alive(pid));
    server.child.kill().unwrap();
    let _ = server.child.wait();
    wait_gone(pid);
    assert!(!Path::new(&format!("/proc/{pid}")).exists() || !pid_alive(pid));
}

/// `orphan_server.py` (standard library only): `spawn` leaves a `sleep 300` on its stdout and
/// stderr, `hang` never answers (it writes `<dir>/hang` first), `die` exits with status 3.
fn orphan_server(marks: &Path) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/orphan_server.py");
    json!({"command": "python3", "args": [script, marks]})
}

/// The live processes of the process group `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command name: state, ppid, pgrp.
        let rest: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        if rest[2] == pgid.to_string() && !["Z", "X"].contains(&rest[0]) {
            members.push(pid);
        }
    }
    members
}

/// Kills a process the test left outside toolrt's reach, however the test ends.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Starts `sleep 300` from the orphan server; (server pid, its group, the sleep's pid).
fn spawn_sleep(server: &mut support::Server, id: &str, detached: bool) -> (i32, i32, i32) {
    server.tool_use(id, "mcp__orphans__spawn", json!({"detached": detached}));
    let r = server.result(id);
    assert_eq!(r["outcome"], "success", "{r}");
    let v: serde_json::Value = serde_json::from_str(r["content"].as_str().unwrap()).unwrap();
    let pid = |k: &str| v[k].as_i64().unwrap() as i32;
    (pid("server"), pid("pgid"), pid("sleep"))
}

/// A call in flight (`hang`), then the server exits (`die`); when it exited.
fn hang_then_die(server: &mut support::Server, marks: &Path) -> Instant {
    server.tool_use("hang", "mcp__orphans__hang", json!({}));
    support::wait_file(&marks.join("hang"));
    server.tool_use("die", "mcp__orphans__die", json!({}));
    Instant::now()
}

/// The call ended `failed`, naming the server, its exit and its last stderr line.
fn assert_failed_by_exit(r: &serde_json::Value, tool: &str) {
    assert_eq!(r["outcome"], "failed", "{r}");
    let text = r["content"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "MCP server \"orphans\" exited (exit status 3) during tools/call \"{tool}\""
        )),
        "{text}"
    );
    assert!(text.ends_with("[orphan] dying with 3"), "{text}");
}

/// A session whose one server is the orphan server, connected; its calls run side by side.
fn serve_orphans(sandbox: &Sandbox, marks: &Path) -> support::Server {
    let mut server = mcp::serve(
        sandbox,
        json!({"orphans": orphan_server(marks)}),
        &[
            "--permission-mode",
            "bypassPermissions",
            "--max-parallel",
            "4",
        ],
    );
    status_event(&mut server, "orphans", "connected");
    server
}

#[test]
fn a_server_that_dies_leaving_a_child_on_its_pipes_fails_its_calls_and_its_group_is_killed() {
    let sandbox = Sandbox::new();
    let marks = sandbox.dir.path().to_path_buf();
    let mut server = serve_orphans(&sandbox, &marks);
    let (first, pgid, sleep) = spawn_sleep(&mut server, "spawn", false);
    let _cleanup = KillOnDrop(sleep);
    assert_eq!(pgid, first, "the server leads a group of its own");
    let died = hang_then_die(&mut server, &marks);
    // The sleep still holds the server's stdout: the calls end with the server's exit all the
    // same, and at once.
    for id in ["hang", "die"] {
        assert_failed_by_exit(&server.result(id), id);
    }
    assert!(
        died.elapsed() < Duration::from_secs(10),
        "{:?}",
        died.elapsed()
    );
    let event = status_event(&mut server, "orphans", "failed");
    assert!(
        event["reason"]
            .as_str()
            .unwrap()
            .contains("exited (exit status 3)"),
        "{event}"
    );
    // The dead server's group was killed with it, not left until a restart or the end.
    wait_gone(sleep);
    assert_eq!(group_members(pgid), Vec::<i32>::new());
    // The next call starts it again.
    let (second, _, sleep2) = spawn_sleep(&mut server, "spawn2", false);
    let _cleanup2 = KillOnDrop(sleep2);
    assert_ne!(first, second);
    server.wait_for("restarted event", Duration::from_secs(10), |v| {
        v["event"] == "mcp_server"
            && v["server"] == "orphans"
            && v["status"] == "connected"
            && v["reason"] == "restarted (restart 1)"
    });
    let done = server.finish();
    assert!(done.status.success(), "{}", done.stderr);
    for id in ["hang", "die", "spawn", "spawn2"] {
        done.result(id);
    }
    wait_gone(sleep2);
    assert_eq!(group_members(second), Vec::<i32>::new());
}

#[test]
fn a_server_that_dies_leaving_a_child_outside_its_group_on_its_pipes_still_fails_its_calls() {
    let sandbox = Sandbox::new();
    let marks = sandbox.dir.path().to_path_buf();
    let mut server = serve_orphans(&sandbox, &marks);
    // In a session of its own, the sleep outlives the server's group: toolrt cannot end it,
    // and the calls must not wait for it.
    let (first, _, sleep) = spawn_sleep(&mut server, "spawn", true);
    let _cleanup = KillOnDrop(sleep);
    assert!(!group_members(first).contains(&sleep));
    let died = hang_then_die(&mut server, &marks);
    // End of input right away: toolrt still answers every call and exits.
    let done = server.finish();
    assert!(
        died.elapsed() < Duration::from_secs(10),
        "{:?}",
        died.elapsed()
    );
    assert!(done.status.success(), "{}", done.stderr);
    for id in ["hang", "die"] {
        assert_failed_by_exit(done.result(id), id);
    }
    assert!(
        pid_alive(sleep),
        "the detached sleep is not toolrt's to kill"
    );
}
