//! A signal after everything was cancelled (a second SIGINT, a third SIGTERM) exits at once with
//! status 130, without writing what is still queued: for a client that has stopped reading.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use support::*;

/// Big Read results: together far more than a pipe and toolrt's write buffer hold.
const READS: usize = 10;

/// A toolrt whose stdout the test reads only when it chooses to: lines are handed over one at a
/// time, so once the test stops taking them toolrt's writes block.
struct Client {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
}

impl Client {
    fn start(sb: &Sandbox) -> Self {
        let mut child = command()
            .arg("serve")
            .arg("--cwd")
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
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::sync_channel(0);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    break;
                };
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message matching `pred` (others are dropped), within 20 s.
    fn until(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if pred(&v) => return v,
                Ok(_) => {}
                Err(e) => panic!("no {what}: {e}"),
            }
        }
    }

    fn signal(&self, sig: Signal) {
        kill(Pid::from_raw(self.child.id() as i32), sig).unwrap();
    }

    /// Waits (bounded) for toolrt to exit by itself, taking none of its output meanwhile.
    fn exit_code(&mut self) -> Option<i32> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(
                Instant::now() < deadline,
                "toolrt did not exit; its output is not being read"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The tool results written before toolrt exited.
    fn results_written(self) -> usize {
        self.lines
            .iter()
            .filter(|v| v["type"] == "tool_result")
            .count()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A batch: `first` (if any), then `READS` Reads of a 45,000-character file run together, then
/// a command that records its pid and waits: it starts only once every Read has finished, so
/// when its pid is there, all their results are queued.
fn batch(sb: &Sandbox, first: Option<Value>) -> (Value, std::path::PathBuf) {
    let body: String = (0..800).map(|i| format!("{i:0>49}\n")).collect();
    sb.write("big.txt", &body);
    let pid_file = sb.path("waiting.pid");
    let mut calls: Vec<Value> = first.into_iter().collect();
    for i in 0..READS {
        calls.push(
            json!({"id": format!("r{i}"), "name": "Read", "input": {"file_path": "big.txt"}}),
        );
    }
    calls.push(json!({"id": "wait", "name": "Bash", "input": {"command": "echo $$ > waiting.tmp && mv waiting.tmp waiting.pid; exec sleep 600"}}));
    (
        json!({"type": "batch", "id": "b", "calls": calls}),
        pid_file,
    )
}

fn assert_gone(pid: u32) {
    assert!(
        wait_gone_within(pid, Duration::from_secs(20)),
        "the waiting command {pid} was not cancelled"
    );
}

#[test]
fn a_second_sigint_exits_at_once_with_130() {
    let sb = Sandbox::new();
    let mut client = Client::start(&sb);
    let (batch, pid_file) = batch(&sb, None);
    // Nothing of the output is taken: toolrt's writes block.
    client.send(batch);
    wait_file(&pid_file);
    let waiting = read_pid(&pid_file);
    client.signal(Signal::SIGINT);
    // Everything was cancelled, but the results cannot be written.
    assert_gone(waiting);
    client.signal(Signal::SIGINT);
    assert_eq!(client.exit_code(), Some(130));
    let written = client.results_written();
    assert!(
        written < READS + 1,
        "every result was written ({written}): toolrt was not blocked"
    );
}

#[test]
fn a_third_sigterm_exits_at_once_with_130() {
    let sb = Sandbox::new();
    let mut client = Client::start(&sb);
    // The batch waits for `go` first, so the first SIGTERM can be seen to act while output is
    // still read.
    let gate = json!({"id": "gate", "name": "Bash", "input": {"command": "timeout 20 sh -c 'until [ -e go ]; do sleep 0.01; done'"}});
    let (batch, pid_file) = batch(&sb, Some(gate));
    client.send(batch);
    client.until("batch_start", |v| v["event"] == "batch_start");
    client.signal(Signal::SIGTERM);
    // Shutting down: a new call is refused (one sent before the signal acted runs).
    for n in 0.. {
        let id = format!("probe{n}");
        client.send(
            json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": "true"}}),
        );
        let answer = client.until(&id, |v| {
            v["tool_use_id"] == id.as_str() || v["ids"].get(0) == Some(&json!(id))
        });
        if answer["type"] == "error" {
            assert_eq!(answer["code"], "shutting_down", "{answer}");
            break;
        }
    }
    // From here on nothing is read. The batch goes on: its Reads' results fill stdout.
    std::fs::write(sb.path("go"), "").unwrap();
    wait_file(&pid_file);
    let waiting = read_pid(&pid_file);
    assert!(!process_gone(waiting));
    client.signal(Signal::SIGTERM);
    assert_gone(waiting);
    client.signal(Signal::SIGTERM);
    assert_eq!(client.exit_code(), Some(130));
    let written = client.results_written();
    assert!(
        written < READS + 2,
        "every result was written ({written}): toolrt was not blocked"
    );
}
