//! After a burst of calls ends, toolrt gives the memory it used back: its RSS returns close to
//! where it started (measured from /proc, as a bound; the wait for the allocator to let go is
//! bounded, and only a deadline, never the figure asserted).

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::*;

/// Commands run: each call starts a process, so the burst goes through every stage, the
/// process supervision and the output capture.
const CALLS: usize = 4_000;

fn call(stdin: &mut std::process::ChildStdin, i: usize) {
    writeln!(
        stdin,
        r#"{{"type":"tool_use","id":"c{i}","name":"Bash","input":{{"command":"echo {i}"}}}}"#
    )
    .unwrap();
}

#[test]
fn rss_returns_close_to_its_start_after_a_burst() {
    let sb = Sandbox::new();
    let mut child = command()
        .args(["serve", "--cwd"])
        .arg(&sb.cwd)
        .arg("--output-dir")
        .arg(&sb.out)
        .args(["--permission-mode", "bypassPermissions"])
        .current_dir(&sb.cwd)
        .env("HOME", sb.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut buf = String::new();
    call(&mut stdin, 0);
    stdin.flush().unwrap();
    stdout.read_line(&mut buf).unwrap();
    let start = status_kib(pid, "VmRSS");
    // A burst: every call written at once while the output is read, so toolrt holds as much
    // as admission lets it.
    let writer = std::thread::spawn(move || {
        for i in 1..=CALLS {
            call(&mut stdin, i);
        }
        stdin.flush().unwrap();
        stdin
    });
    let mut results = 0;
    while results < CALLS {
        buf.clear();
        assert!(
            stdout.read_line(&mut buf).unwrap() > 0,
            "toolrt closed its output"
        );
        if buf.contains("\"tool_result\"") {
            assert!(buf.contains("\"success\""), "a call failed: {buf}");
            results += 1;
        }
    }
    let stdin = writer.join().unwrap();
    let peak = status_kib(pid, "VmHWM");
    // Idle now. What the burst added must go back but for a fifth (or 2 MiB, whichever is
    // more). Without being told, the allocator keeps about a third of it for good.
    let target = start + ((peak - start) / 5).max(2 * 1024);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut now = status_kib(pid, "VmRSS");
    while now > target && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        now = status_kib(pid, "VmRSS");
    }
    eprintln!("start {start} KiB, peak {peak} KiB, after {now} KiB, target {target} KiB");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert!(
        peak > start + 8 * 1024,
        "the burst did not use memory (start {start} KiB, peak {peak} KiB): the test measures nothing"
    );
    assert!(
        now <= target,
        "RSS stayed at {now} KiB after the burst (start {start} KiB, peak {peak} KiB, target {target} KiB)"
    );
}
