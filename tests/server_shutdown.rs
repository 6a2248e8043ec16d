//! `shutdown`, EOF and signals: stop reading, finish what is in flight, emit every result.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::*;

#[test]
fn shutdown_finishes_in_flight_calls_and_refuses_new_ones() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    server.tool_use("slow", "Bash", json!({"command": "sleep 0.5; echo done"}));
    server.send(json!({"type": "shutdown"}));
    server.tool_use("late", "Bash", json!({"command": "echo late > late.txt"}));
    let done = server.finish();
    assert!(done.status.success());
    let r = done.result("slow");
    assert_eq!(r["outcome"], "success");
    assert!(r["content"].as_str().unwrap().contains("done"));
    assert!(done.results("late").is_empty());
    assert!(
        done.of_type("error")
            .iter()
            .any(|e| e["message"].as_str().unwrap().contains("shutting down"))
    );
    assert!(!sb.path("late.txt").exists());
}

#[test]
fn shutdown_exits_without_waiting_for_eof() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    server.tool_use("a", "Bash", json!({"command": "echo a"}));
    server.send(json!({"type": "shutdown"}));
    // stdin stays open: the server must still exit once the call is answered.
    let start = Instant::now();
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            assert!(status.success());
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "server did not exit after shutdown"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    server.result("a");
}

#[test]
fn eof_is_a_shutdown() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[
            json!({"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "sleep 0.3; echo ok"}}),
        ],
    );
    assert!(done.status.success());
    assert_eq!(done.result("a")["outcome"], "success");
}

fn signal(server: &Server, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(server.child.id() as i32), sig).unwrap();
}

#[test]
fn sigterm_finishes_in_flight_work_and_a_second_one_cancels_it() {
    use nix::sys::signal::Signal;
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    server.tool_use("short", "Bash", json!({"command": "sleep 0.5; echo short"}));
    server.tool_use(
        "long",
        "Bash",
        json!({"command": "echo $$ > long.pid; sleep 60"}),
    );
    wait_file(&sb.path("long.pid"));
    signal(&server, Signal::SIGTERM);
    let short = server.result("short");
    assert_eq!(short["outcome"], "success");
    signal(&server, Signal::SIGTERM);
    let long = server.result("long");
    assert_eq!(long["outcome"], "cancelled");
    let done = server.finish();
    assert!(done.status.success());
    let pid: i32 = std::fs::read_to_string(sb.path("long.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!pid_alive(pid), "the cancelled command is still running");
}

#[test]
fn sigint_cancels_everything_with_a_result_for_each() {
    use nix::sys::signal::Signal;
    let sb = Sandbox::new();
    let mut server = sb.serve(&[
        "--permission-mode",
        "bypassPermissions",
        "--max-in-flight",
        "1",
    ]);
    server.tool_use(
        "running",
        "Bash",
        json!({"command": "touch started; sleep 60"}),
    );
    server.tool_use("queued", "Bash", json!({"command": "touch queued-ran"}));
    wait_file(&sb.path("started"));
    signal(&server, Signal::SIGINT);
    let done = server.finish();
    assert_eq!(done.result("running")["outcome"], "cancelled");
    assert_eq!(done.result("queued")["outcome"], "cancelled");
    assert!(!sb.path("queued-ran").exists());
}

#[test]
fn after_shutdown_only_permission_answers_and_cancels_are_read() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&[]);
    // Two calls wait for permission; then the client shuts down with stdin still open.
    server.tool_use("w1", "Bash", json!({"command": "touch one.txt"}));
    server.tool_use("w2", "Bash", json!({"command": "touch two.txt"}));
    let req = server.wait_for("request for w1", Duration::from_secs(10), |v| {
        v["type"] == "permission_request" && v["tool_use_id"] == "w1"
    });
    server.wait_for("request for w2", Duration::from_secs(10), |v| {
        v["type"] == "permission_request" && v["tool_use_id"] == "w2"
    });
    server.send(json!({"type": "shutdown"}));
    server.tool_use("late", "Bash", json!({"command": "touch late.txt"}));
    server.send(json!({"type": "permission_response", "request_id": req["request_id"], "behavior": "allow"}));
    server.send(json!({"type": "cancel", "id": "w2"}));
    assert_eq!(server.result("w1")["outcome"], "success");
    assert_eq!(server.result("w2")["outcome"], "cancelled");
    // Every call answered: the server exits without waiting for EOF.
    let start = Instant::now();
    while server.child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no exit after shutdown"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let done = server.finish();
    assert!(done.results("late").is_empty());
    let errors = done.of_type("error");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("shutting down")
    );
    assert!(sb.path("one.txt").exists());
    assert!(!sb.path("two.txt").exists() && !sb.path("late.txt").exists());
}

/// serve reads and writes its pipes without blocking, and leaves them as it found them for
/// whoever shares them after it (here the shell's next command), on stdin and on stdout.
#[test]
fn serve_leaves_its_pipes_blocking_when_it_exits() {
    let check = r#"import os, fcntl, sys
fd = int(sys.argv[1])
print("nonblocking" if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK else "blocking", file=sys.stderr)"#;
    let line = r#"{"type":"tool_use","id":"a","name":"Noop","input":{}}"#;
    let script = format!(
        "printf '%s\\n' '{line}' | ( \"$0\" serve --allowed-tools Noop 2>/dev/null; python3 -c \"$1\" 0; python3 -c \"$1\" 1 ) | cat"
    );
    let sb = Sandbox::new();
    let out = std::process::Command::new("sh")
        .args(["-c", &script, bin(), check])
        .env("HOME", sb.dir.path())
        .current_dir(sb.dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(r#""tool_use_id":"a""#), "{stdout}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "blocking\nblocking\n");
}

/// The pipes are non-blocking while serve runs (seen through /proc), and stay blocking with
/// TOOLRT_STDIO=blocking.
#[test]
fn serve_makes_its_pipes_non_blocking_unless_told_not_to() {
    let sb = Sandbox::new();
    let flags = |env: Option<&str>| {
        let mut cmd = command();
        cmd.args(["serve", "--allowed-tools", "Noop"])
            .env("HOME", sb.dir.path())
            .current_dir(sb.dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        if let Some(v) = env {
            cmd.env("TOOLRT_STDIO", v);
        }
        let mut child = cmd.spawn().unwrap();
        let pid = child.id();
        // It answers a line once it reads: by then both handles are made.
        let mut stdin = child.stdin.take().unwrap();
        std::io::Write::write_all(
            &mut stdin,
            b"{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"Noop\",\"input\":{}}\n",
        )
        .unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        let nonblocking = |fd: u32| {
            let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap();
            let flags = info
                .lines()
                .find_map(|l| l.strip_prefix("flags:"))
                .map(|f| u32::from_str_radix(f.trim(), 8).unwrap())
                .unwrap();
            flags & 0o4000 != 0
        };
        let both = (nonblocking(0), nonblocking(1));
        drop(stdin);
        child.wait().unwrap();
        both
    };
    assert_eq!(flags(None), (true, true));
    assert_eq!(flags(Some("blocking")), (false, false));
}

/// A client that closed toolrt's stdout can read no result: the first result that cannot be
/// written cancels everything (the running `sleep` is killed) and toolrt exits, though stdin is
/// still open, instead of running the client's calls unseen.
#[test]
fn a_closed_stdout_cancels_everything_and_ends_the_session() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let sb = Sandbox::new();
    let mut child = Command::new(bin())
        .args(["serve", "--permission-mode", "bypassPermissions", "--cwd"])
        .arg(&sb.cwd)
        .current_dir(&sb.cwd)
        .env("HOME", sb.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut send = |id: &str, command: &str| {
        let line =
            json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": command}});
        writeln!(stdin, "{line}").and_then(|_| stdin.flush())
    };
    send("long", "echo $$ > long.pid; exec sleep 60").unwrap();
    let pid_file = sb.path("long.pid");
    let start = Instant::now();
    while std::fs::read_to_string(&pid_file).map_or(true, |s| !s.ends_with('\n')) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let sleeper = read_pid(&pid_file);
    drop(child.stdout.take());
    // Its result is the first write that fails.
    send("quick", "true").unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "toolrt went on with no reader of its output"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success(), "a lost output is not a clean exit");
    assert!(
        wait_gone_within(sleeper, Duration::from_secs(10)),
        "the running command was not killed"
    );
    drop(stdin);
}
