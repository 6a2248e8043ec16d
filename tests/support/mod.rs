//! Drives the real `toolrt` binary over NDJSON for the integration tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A project directory, a home and an output directory in one temp dir.
pub(crate) struct Sandbox {
    pub dir: tempfile::TempDir,
    pub cwd: PathBuf,
    pub out: PathBuf,
}

impl Sandbox {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("proj");
        let out = dir.path().join("out");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        let cwd = std::fs::canonicalize(cwd).unwrap();
        Self { dir, cwd, out }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.cwd.join(rel)
    }

    pub(crate) fn write(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, content).unwrap();
        p
    }

    /// Starts `toolrt serve --cwd <cwd> --output-dir <out>` plus `args`.
    pub(crate) fn serve(&self, args: &[&str]) -> Server {
        let mut all = vec![
            "serve".to_string(),
            "--cwd".into(),
            self.cwd.display().to_string(),
            "--output-dir".into(),
            self.out.display().to_string(),
        ];
        all.extend(args.iter().map(|s| s.to_string()));
        Server::start(&all, &self.cwd)
    }
}

/// A running `toolrt` process.
pub(crate) struct Server {
    pub child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Value>,
    pub seen: Vec<Value>,
    stderr: mpsc::Receiver<String>,
}

pub(crate) fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_toolrt")
}

impl Server {
    /// Starts `toolrt` with `args` in `cwd`, with `$HOME` the parent of `cwd`.
    pub(crate) fn start(args: &[String], cwd: &Path) -> Self {
        Self::start_with_home(args, cwd, cwd.parent().unwrap())
    }

    /// Starts `toolrt` with `args` in `cwd` and the given `$HOME`.
    pub(crate) fn start_with_home(args: &[String], cwd: &Path, home: &Path) -> Self {
        let mut child = Command::new(bin())
            .args(args)
            .current_dir(cwd)
            .env("HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start toolrt");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                assert!(v.is_object(), "stdout line is not an object: {line}");
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let stderr = child.stderr.take().unwrap();
        let (etx, erx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut all = String::new();
            let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut all);
            let _ = etx.send(all);
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            rx,
            seen: Vec::new(),
            stderr: erx,
        }
    }

    pub(crate) fn send(&mut self, v: Value) {
        self.send_raw(&v.to_string());
    }

    pub(crate) fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    pub(crate) fn tool_use(&mut self, id: &str, name: &str, input: Value) {
        self.send(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
    }

    /// The next message (also kept in `seen`); None once stdout is closed. Panics after
    /// `timeout`.
    pub(crate) fn recv(&mut self, timeout: Duration) -> Option<Value> {
        match self.rx.recv_timeout(timeout) {
            Ok(v) => {
                self.seen.push(v.clone());
                Some(v)
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("no message within {timeout:?}; seen: {:#?}", self.seen)
            }
        }
    }

    /// Waits for the first message (seen or new) matching `pred`.
    pub(crate) fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        if let Some(v) = self.seen.iter().find(|v| pred(v)) {
            return v.clone();
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(v) => {
                    self.seen.push(v.clone());
                    if pred(&v) {
                        return v;
                    }
                }
                Err(_) => panic!("timed out waiting for {what}; seen: {:#?}", self.seen),
            }
        }
    }

    pub(crate) fn result(&mut self, id: &str) -> Value {
        self.wait_for(&format!("result {id}"), Duration::from_secs(30), |v| {
            is_result(v, id)
        })
    }

    /// Closes stdin (EOF = shutdown), waits for exit, returns every message.
    pub(crate) fn finish(mut self) -> Finished {
        self.stdin.take();
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let stderr = self
                    .stderr
                    .recv_timeout(Duration::from_secs(5))
                    .unwrap_or_default();
                panic!(
                    "toolrt did not exit after EOF; seen: {:#?}\nstderr:\n{stderr}",
                    self.seen
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        while let Ok(v) = self.rx.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(v);
        }
        let stderr = self
            .stderr
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_default();
        Finished {
            status,
            messages: std::mem::take(&mut self.seen),
            stderr,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn is_result(v: &Value, id: &str) -> bool {
    v["type"] == "tool_result" && v["tool_use_id"] == id
}

/// Everything a finished server said.
pub(crate) struct Finished {
    pub status: ExitStatus,
    pub messages: Vec<Value>,
    pub stderr: String,
}

impl Finished {
    pub(crate) fn results(&self, id: &str) -> Vec<&Value> {
        self.messages.iter().filter(|v| is_result(v, id)).collect()
    }

    /// The one result of `id` (panics unless there is exactly one).
    pub(crate) fn result(&self, id: &str) -> &Value {
        let r = self.results(id);
        assert_eq!(
            r.len(),
            1,
            "expected exactly one result for {id}: {:#?}",
            self.messages
        );
        r[0]
    }

    pub(crate) fn of_type(&self, t: &str) -> Vec<&Value> {
        self.messages.iter().filter(|v| v["type"] == t).collect()
    }

    pub(crate) fn events(&self, name: &str) -> Vec<&Value> {
        self.messages
            .iter()
            .filter(|v| v["type"] == "event" && v["event"] == name)
            .collect()
    }
}

/// Runs toolrt with `args` and `lines` on stdin to completion.
pub(crate) fn run_lines(sandbox: &Sandbox, args: &[&str], lines: &[Value]) -> Finished {
    let mut server = sandbox.serve(args);
    for l in lines {
        server.send(l.clone());
    }
    server.finish()
}

/// Runs `toolrt <args>` with no stdin and returns (exit code, stderr).
pub(crate) fn run_status(args: &[&str], cwd: &Path) -> (Option<i32>, String) {
    let out = Command::new(bin())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether a process with this pid is alive (not a zombie).
pub(crate) fn pid_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .split(") ")
            .nth(1)
            .is_some_and(|rest| rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits until a file exists (a command under test signals it has started).
pub(crate) fn wait_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}
