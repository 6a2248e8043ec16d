//! A file operation that does not return keeps only its own call waiting: toolrt's one pipeline
//! thread never does file work itself, so every other call is answered meanwhile.
//!
//! The slow operation is an `open` of a regular file on which another process holds a write
//! lease (`fcntl(F_SETLEASE)`): the kernel holds the open until the lease holder lets go, and
//! tells the holder at once (SIGIO). The holder, a small Python helper, says when that happens
//! and lets go only when the test says so, so the order of events is fixed without any clock.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::json;
use support::*;

/// Takes a write lease on argv[1]; prints `held`, then `break` when an open of the file waits
/// on the lease, and lets go (printing `released`) when a line arrives on stdin.
const HOLDER: &str = r#"
import fcntl, os, signal, sys
signal.signal(signal.SIGIO, lambda *_: print("break", flush=True))
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
print("held", flush=True)
sys.stdin.readline()
fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
os.close(fd)
print("released", flush=True)
"#;

struct Holder {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
}

impl Holder {
    fn start(path: &std::path::Path) -> Self {
        let mut child = Command::new("python3")
            .args(["-c", HOLDER])
            .arg(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the lease holder");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let holder = Self { child, lines };
        holder.expect("held");
        holder
    }

    fn expect(&self, want: &str) {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("the lease holder did not say {want:?}: {e}"));
        assert_eq!(line, want);
    }

    fn release(&mut self) {
        writeln!(self.child.stdin.as_mut().unwrap()).unwrap();
        self.expect("released");
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_write_waiting_on_its_file_does_not_hold_up_other_calls() {
    let sb = Sandbox::new();
    sb.write("small.txt", "hi\n");
    let held = sb.write("held.txt", "before\n");
    let settings = sb.write(
        "settings.json",
        r#"{"tools": {"requireReadBeforeEdit": false}}"#,
    );
    let mut server = sb.serve(&[
        "--settings",
        settings.to_str().unwrap(),
        "--permission-mode",
        "acceptEdits",
    ]);
    let mut holder = Holder::start(&held);
    // Overwriting the file opens it (for its checkpoint, then to write it): that open waits on
    // the lease, and the holder hears of it.
    server.tool_use(
        "w",
        "Write",
        json!({"file_path": "held.txt", "content": "after\n"}),
    );
    holder.expect("break");
    // Every other call goes on meanwhile.
    server.tool_use("r", "Read", json!({"file_path": "small.txt"}));
    let read = server.result("r");
    assert_eq!(read["outcome"], "success", "{read}");
    holder.release();
    // The waiting call gets its one result once the file is free (or, with a file open that
    // does not wait, at once: either way, only its own call was held).
    let write = server.result("w");
    assert!(
        write["outcome"] == "success" || write["outcome"] == "failed",
        "{write}"
    );
    let done = server.finish();
    assert_eq!(done.results("w").len(), 1);
    assert_eq!(done.results("r").len(), 1);
}
