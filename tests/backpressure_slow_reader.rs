//! A client that stops reading its output cannot make toolrt's memory grow: results keep their
//! admission place until written, so toolrt stops reading input once admission and the parked
//! queue are full, and its RSS stays under a bound computed from those sizes.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use support::*;

const IN_FLIGHT: usize = 16;
const QUEUED: usize = 240;
const PARKED: usize = 256;
const CALLS: usize = 100_000;

/// What one accepted call may cost at most while it waits (its parsed line, its slot and
/// registry entry, its queued result), with room to spare.
const PER_CALL_KIB: u64 = 16;
/// Buffers, the blocking pool's threads, allocator slack.
const SLACK_KIB: u64 = 16 * 1024;

#[test]
fn a_paused_reader_keeps_rss_within_the_admission_bound() {
    let sb = Sandbox::new();
    let n = |x: usize| x.to_string();
    let mut child = command()
        .args(["serve", "--cwd"])
        .arg(&sb.cwd)
        .arg("--output-dir")
        .arg(&sb.out)
        .args(["--max-in-flight", &n(IN_FLIGHT), "--max-queued", &n(QUEUED)])
        .args(["--max-parked", &n(PARKED)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let line = |i: usize| format!(r#"{{"type":"tool_use","id":"c{i}","name":"NoSuchTool"}}"#);
    // Warm up (one call through every part), then take the baseline.
    writeln!(stdin, "{}", line(0)).unwrap();
    stdin.flush().unwrap();
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.contains("\"c0\""), "{first}");
    let baseline = status_kib(pid, "VmRSS");

    let written = Arc::new(AtomicUsize::new(0));
    let writer = {
        let written = written.clone();
        std::thread::spawn(move || {
            for i in 1..=CALLS {
                if writeln!(stdin, "{}", line(i)).is_err() {
                    break;
                }
                written.store(i, Ordering::Relaxed);
            }
            stdin
        })
    };
    // Read nothing until the writer is blocked by toolrt (its count stops moving) or done.
    let mut last = usize::MAX;
    let mut still = 0;
    while still < 20 && written.load(Ordering::Relaxed) < CALLS {
        std::thread::sleep(Duration::from_millis(25));
        let now = written.load(Ordering::Relaxed);
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    let paused_at = written.load(Ordering::Relaxed);
    assert!(
        paused_at < CALLS,
        "toolrt read all {CALLS} calls while nobody read its output"
    );
    // Now read every result.
    let mut results = 1;
    let mut buf = String::new();
    while results < CALLS + 1 {
        buf.clear();
        if stdout.read_line(&mut buf).unwrap() == 0 {
            break;
        }
        if buf.contains("\"tool_result\"") {
            results += 1;
        }
    }
    // stdin stays open until the peak is read: toolrt is still running then.
    let stdin = writer.join().unwrap();
    let peak = status_kib(pid, "VmHWM");
    drop(stdin);
    assert_eq!(results, CALLS + 1, "every call has its result");
    let status = child.wait().unwrap();
    assert!(status.success());
    let places = (IN_FLIGHT + QUEUED + PARKED) as u64;
    let bound = baseline + places * PER_CALL_KIB + SLACK_KIB;
    assert!(
        peak <= bound,
        "peak RSS {peak} KiB over the bound {bound} KiB (baseline {baseline} KiB, {places} places)"
    );
    eprintln!(
        "baseline {baseline} KiB, peak {peak} KiB, bound {bound} KiB, writer paused at {paused_at}"
    );
}

#[test]
fn error_lines_nobody_reads_stop_toolrt_reading() {
    const LINES: usize = 200_000;
    let sb = Sandbox::new();
    let mut child = command()
        .args(["serve", "--cwd"])
        .arg(&sb.cwd)
        .arg("--output-dir")
        .arg(&sb.out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    // Each line is answered by an error line of toolrt's own; nobody reads them yet.
    let written = Arc::new(AtomicUsize::new(0));
    let writer = {
        let written = written.clone();
        std::thread::spawn(move || {
            for i in 1..=LINES {
                if stdin.write_all(b"x\n").is_err() {
                    break;
                }
                written.store(i, Ordering::Relaxed);
            }
            stdin
        })
    };
    let mut last = usize::MAX;
    let mut still = 0;
    while still < 20 && written.load(Ordering::Relaxed) < LINES {
        std::thread::sleep(Duration::from_millis(25));
        let now = written.load(Ordering::Relaxed);
        still = if now == last { still + 1 } else { 0 };
        last = now;
    }
    let paused_at = written.load(Ordering::Relaxed);
    // 1,024 unwritten answers, what the pipes and toolrt's write buffer hold, and the input
    // pipe's 32,768 two-byte lines: far fewer than all of them.
    assert!(
        paused_at < LINES / 2,
        "toolrt read {paused_at} lines while nobody read its answers"
    );
    // Reading resumes: every line is answered, in order.
    let mut expected = 1;
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        assert_eq!(v["type"], "error");
        assert_eq!(v["line"], expected);
        expected += 1;
        if expected > LINES {
            break;
        }
    }
    drop(writer.join().unwrap());
    assert_eq!(expected, LINES + 1);
    assert!(child.wait().unwrap().success());
}
