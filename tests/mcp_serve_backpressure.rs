//! `toolrt mcp-serve` over stdio with a client that writes requests without reading the
//! answers: toolrt stops reading once a bound of requests is unanswered, so its memory stays
//! bounded (measured from /proc on the real binary), and once the client reads, every request
//! gets its one answer.

mod support;

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

/// toolrt's peak RSS while nothing is read: the runtime and its tools, and at most 256 answers
/// queued (tools/list's are about 50 KB each). Unbounded, 100,000 pings took about 280 MB and
/// 8,000 tools/list about 400 MB.
const BOUND_KIB: u64 = 150 * 1024;

fn start(sb: &Sandbox) -> (Child, ChildStdin, BufReader<ChildStdout>) {
    let mut child = command()
        .args(["mcp-serve", "--cwd"])
        .arg(&sb.cwd)
        .arg("--output-dir")
        .arg(&sb.out)
        .current_dir(&sb.cwd)
        .env("HOME", sb.dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());
    let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "flood", "version": "1"}}});
    writeln!(stdin, "{init}").unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"init\""), "{line}");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    (child, stdin, stdout)
}

/// Writes `times` requests of `method` (ids 0, 1, …) on a thread of its own, since toolrt may
/// stop reading; counts them.
fn flood(
    mut stdin: ChildStdin,
    method: &'static str,
    times: usize,
) -> (JoinHandle<ChildStdin>, Arc<AtomicUsize>) {
    let written = Arc::new(AtomicUsize::new(0));
    let count = written.clone();
    let writer = std::thread::spawn(move || {
        let mut out = std::io::BufWriter::new(&mut stdin);
        for id in 0..times {
            let line = json!({"jsonrpc": "2.0", "id": id, "method": method});
            // A write fails only once toolrt is gone (killed by a failing test).
            if writeln!(out, "{line}").is_err() {
                break;
            }
            count.fetch_add(1, Ordering::Relaxed);
        }
        let _ = out.flush();
        drop(out);
        stdin
    });
    (writer, written)
}

/// Waits while the client reads nothing until the writer is done or has not progressed for a
/// second; fails at once, killing toolrt, if its RSS passes [`BOUND_KIB`].
fn unread(child: &mut Child, written: &AtomicUsize, total: usize) {
    let mut last = usize::MAX;
    let mut still_since = Instant::now();
    while written.load(Ordering::Relaxed) < total && still_since.elapsed() < Duration::from_secs(1)
    {
        std::thread::sleep(Duration::from_millis(20));
        let rss = status_kib(child.id(), "VmRSS");
        if rss > BOUND_KIB {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "toolrt's RSS reached {} MiB (bound {} MiB) with {} requests written and none read",
                rss / 1024,
                BOUND_KIB / 1024,
                written.load(Ordering::Relaxed)
            );
        }
        let now = written.load(Ordering::Relaxed);
        if now != last {
            last = now;
            still_since = Instant::now();
        }
    }
}

/// Reads answers until every id in 0..total has one (each exactly once), checking each.
fn read_all(stdout: &mut BufReader<ChildStdout>, total: usize, check: impl Fn(&Value)) {
    let mut seen = HashSet::new();
    let mut line = String::new();
    while seen.len() < total {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "toolrt closed its output after {} answers",
            seen.len()
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        let Some(id) = v["id"].as_u64() else {
            continue;
        };
        check(&v);
        assert!(seen.insert(id), "id {id} answered twice");
    }
}

fn run(method: &'static str, total: usize, check: impl Fn(&Value)) {
    let sb = Sandbox::new();
    let (mut child, stdin, mut stdout) = start(&sb);
    let (writer, written) = flood(stdin, method, total);
    unread(&mut child, &written, total);
    eprintln!(
        "{method}: {} of {total} written before reading; RSS {} MiB",
        written.load(Ordering::Relaxed),
        status_kib(child.id(), "VmRSS") / 1024
    );
    read_all(&mut stdout, total, check);
    let hwm = status_kib(child.id(), "VmHWM");
    drop(writer.join().unwrap());
    assert!(child.wait().unwrap().success());
    assert!(
        hwm <= BOUND_KIB,
        "toolrt's peak RSS was {} MiB (bound {} MiB)",
        hwm / 1024,
        BOUND_KIB / 1024
    );
}

#[test]
fn an_unread_flood_of_pings_keeps_memory_bounded_and_all_are_answered() {
    run("ping", 100_000, |v| {
        assert_eq!(v["result"], json!({}), "{v}")
    });
}

#[test]
fn an_unread_flood_of_tools_list_keeps_memory_bounded_and_all_are_answered() {
    run("tools/list", 8_000, |v| {
        assert!(v["result"]["tools"].as_array().unwrap().len() > 3, "{v}")
    });
}
