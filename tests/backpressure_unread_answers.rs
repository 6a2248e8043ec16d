//! A client that does not read its output cannot make toolrt's memory grow with toolrt's own
//! answers to its lines (`tools`, `error`), however large they are: the answers not yet written
//! are bounded in bytes (64 MiB) as well as in number, past which toolrt stops reading input, and
//! no `error` line quotes client text whole. Nothing is dropped: once the client reads, every
//! answer arrives. Measured on the real binary from /proc (VmRSS while nothing is read, VmHWM
//! for the peak).

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use support::*;

/// The bound on toolrt's resident memory while nothing is read: the 64 MiB of unwritten answers,
/// one more answer being built and one being written (a few times its size, as a JSON value and
/// as its line), the registered tools, the runtime itself. (About 140 MiB is seen.)
const BOUND_KIB: u64 = 200 * 1024;

fn start(sb: &Sandbox) -> (Child, ChildStdin, BufReader<ChildStdout>) {
    let mut child = command()
        .args(["serve", "--permission-prompt", "none", "--cwd"])
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
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());
    (child, stdin, stdout)
}

/// Writes `line` `times` times on a thread of its own (toolrt may stop reading), counting them;
/// the thread hands stdin back when done.
fn write_lines(
    mut stdin: ChildStdin,
    line: String,
    times: usize,
) -> (JoinHandle<ChildStdin>, Arc<AtomicUsize>) {
    let written = Arc::new(AtomicUsize::new(0));
    let count = written.clone();
    let writer = std::thread::spawn(move || {
        for _ in 0..times {
            // A write fails only once toolrt is gone (killed by a failing test).
            if stdin.write_all(line.as_bytes()).is_err() || stdin.write_all(b"\n").is_err() {
                break;
            }
            count.fetch_add(1, Ordering::Relaxed);
        }
        let _ = stdin.flush();
        stdin
    });
    (writer, written)
}

/// Watches toolrt's RSS while the client reads nothing, until it has not grown for a second (at
/// most `limit`): fails at once, killing toolrt, if it passes [`BOUND_KIB`].
fn watch_unread(child: &mut Child, written: &AtomicUsize, total: usize, limit: Duration) -> u64 {
    let pid = child.id();
    let start = Instant::now();
    let mut peak = 0;
    let mut grew_at = Instant::now();
    while start.elapsed() < limit && grew_at.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(20));
        let rss = status_kib(pid, "VmRSS");
        if rss > peak {
            peak = rss;
            grew_at = Instant::now();
        }
        if rss > BOUND_KIB {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "toolrt's RSS reached {} MiB (bound {} MiB) while the client read nothing, after {} of {total} lines were written",
                rss / 1024,
                BOUND_KIB / 1024,
                written.load(Ordering::Relaxed)
            );
        }
    }
    peak
}

/// Reads `count` lines (failing after 30 s), keeping of each its first 4 KiB and its length:
/// the lines may be tens of MiB each.
fn read_lines(
    stdout: BufReader<ChildStdout>,
    count: usize,
) -> (Vec<(Vec<u8>, usize)>, BufReader<ChildStdout>) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut stdout = stdout;
        let mut seen = Vec::new();
        let mut line = Vec::new();
        while seen.len() < count {
            line.clear();
            if stdout.read_until(b'\n', &mut line).unwrap() == 0 {
                break;
            }
            seen.push((line[..line.len().min(4096)].to_vec(), line.len()));
        }
        let _ = tx.send((seen, stdout));
    });
    let (seen, stdout) = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("toolrt's answers were not all read within 30 s");
    assert_eq!(seen.len(), count, "toolrt closed its output early");
    (seen, stdout)
}

/// Ends the input once everything is written: toolrt then exits, with nothing more to say.
fn end(mut child: Child, writer: JoinHandle<ChildStdin>, mut stdout: BufReader<ChildStdout>) {
    drop(writer.join().unwrap());
    let mut rest = Vec::new();
    stdout.read_to_end(&mut rest).unwrap();
    assert!(
        rest.is_empty(),
        "unexpected output: {}",
        String::from_utf8_lossy(&rest[..rest.len().min(300)])
    );
    assert!(child.wait().unwrap().success());
}

#[test]
fn many_large_tools_answers_unread_keep_rss_bounded_and_all_arrive() {
    // 1,000 tools of 4,000-character descriptions: each `tools` answer is about 4 MB, and the 60
    // asked for would hold about 240 MB were they all queued (a debug build writes them at
    // about 35 MB/s: more would make a slow test).
    const TOOLS: usize = 1_000;
    const DESCRIPTION: usize = 4_000;
    const ASKS: usize = 60;
    let sb = Sandbox::new();
    let (mut child, mut stdin, mut stdout) = start(&sb);
    let description = "d".repeat(DESCRIPTION);
    let tools: Vec<String> = (0..TOOLS)
        .map(|i| {
            format!(
                r#"{{"name":"T{i}","description":"{description}","input_schema":{{"type":"object"}}}}"#
            )
        })
        .collect();
    writeln!(
        stdin,
        r#"{{"type":"register_tools","tools":[{}]}}"#,
        tools.join(",")
    )
    .unwrap();
    stdin.flush().unwrap();
    let mut answer = String::new();
    stdout.read_line(&mut answer).unwrap();
    assert!(answer.contains("tools_changed"), "{answer}");

    let started = Instant::now();
    let (writer, written) = write_lines(stdin, r#"{"type":"list_tools"}"#.into(), ASKS);
    let peak = watch_unread(&mut child, &written, ASKS, Duration::from_secs(8));
    eprintln!(
        "unread: peak RSS {} MiB after {:?}",
        peak / 1024,
        started.elapsed()
    );

    // Now read: exactly one answer per list_tools, each whole.
    let (seen, stdout) = read_lines(stdout, ASKS);
    let hwm = status_kib(child.id(), "VmHWM");
    end(child, writer, stdout);
    assert!(
        hwm <= BOUND_KIB,
        "toolrt's peak RSS was {} MiB (bound {} MiB)",
        hwm / 1024,
        BOUND_KIB / 1024
    );
    let mut answers = 0;
    let mut length = None;
    for (head, len) in &seen {
        let head = String::from_utf8_lossy(head);
        assert!(head.starts_with(r#"{"type":"tools""#), "{head}");
        assert!(*len > TOOLS * DESCRIPTION, "{len} bytes: {head}");
        // Every answer whole: all the same length.
        assert_eq!(*length.get_or_insert(*len), *len, "{head}");
        answers += 1;
    }
    assert_eq!(answers, ASKS, "every list_tools answered");
    eprintln!("all {ASKS} answers read after {:?}", started.elapsed());
}

#[test]
fn many_huge_quotes_unread_keep_rss_bounded_and_error_lines_short() {
    // 150 lines of a 2 MiB `format`: an error line quoting it whole would be as long, and 150 of
    // them 300 MiB.
    const LINES: usize = 150;
    let sb = Sandbox::new();
    let (mut child, stdin, stdout) = start(&sb);
    let long = "k".repeat(2 << 20);
    let line = format!(r#"{{"type":"list_tools","format":"{long}"}}"#);
    let started = Instant::now();
    let (writer, written) = write_lines(stdin, line, LINES);
    watch_unread(&mut child, &written, LINES, Duration::from_secs(8));
    let (seen, stdout) = read_lines(stdout, LINES);
    let hwm = status_kib(child.id(), "VmHWM");
    end(child, writer, stdout);
    assert!(hwm <= BOUND_KIB, "peak RSS {} MiB", hwm / 1024);
    assert_eq!(seen.len(), LINES, "one error line per input line");
    for (i, (line, len)) in seen.iter().enumerate() {
        let line = String::from_utf8_lossy(line);
        assert!(*len < 1024, "{len} bytes: {}", &line[..300]);
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["type"], "error", "{line}");
        assert_eq!(v["line"], i + 1, "{line}");
        let message = v["message"].as_str().unwrap();
        assert!(
            message.contains("unknown format \"kkk") && message.contains("… (2097152 bytes)"),
            "{message}"
        );
    }
    eprintln!("{LINES} error lines read after {:?}", started.elapsed());
}
