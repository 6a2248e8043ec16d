//! Drives the real `toolrt serve` binary over NDJSON for the built-in tool tests: a temp
//! working dir and output dir, lines in, parsed lines out.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long any single wait may take before the test fails (the 200 MB test passes its own).
pub(crate) const WAIT: Duration = Duration::from_secs(60);

pub(crate) struct Server {
    pub(crate) dir: tempfile::TempDir,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// Lines read but not yet asked for.
    seen: Vec<Value>,
}

impl Server {
    /// `toolrt serve --cwd <tmp>/work --output-dir <tmp>/out --permission-mode
    /// bypassPermissions` plus `extra` flags.
    pub(crate) fn start(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        std::fs::create_dir_all(dir.path().join("out")).unwrap();
        Self::start_in(dir, extra)
    }

    /// Like [`Server::start`], with a settings file holding `settings`.
    pub(crate) fn with_settings(settings: Value) -> Server {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        std::fs::create_dir_all(dir.path().join("out")).unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(&file, settings.to_string()).unwrap();
        let file = file.display().to_string();
        Self::start_in(dir, &["--settings", &file])
    }

    fn start_in(dir: tempfile::TempDir, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolrt"))
            .arg("serve")
            .arg("--cwd")
            .arg(dir.path().join("work"))
            .arg("--output-dir")
            .arg(dir.path().join("out"))
            .args(["--permission-mode", "bypassPermissions"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start toolrt serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Server {
            stdin: child.stdin.take(),
            child,
            dir,
            lines,
            seen: Vec::new(),
        }
    }

    pub(crate) fn cwd(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    pub(crate) fn out_dir(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn send(&mut self, msg: Value) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends one `tool_use` and waits for its result.
    pub(crate) fn call(&mut self, id: &str, name: &str, input: Value) -> Value {
        self.send(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
        self.result(id)
    }

    /// Waits for the first line satisfying `pred` (earlier unmatched lines are kept).
    pub(crate) fn wait_for(
        &mut self,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        if let Some(i) = self.seen.iter().position(&pred) {
            return self.seen.remove(i);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if pred(&v) => return v,
                Ok(v) => self.seen.push(v),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("timed out waiting for {what}; saw {:?}", self.seen)
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("toolrt closed stdout before {what}; saw {:?}", self.seen)
                }
            }
        }
    }

    /// The `tool_result` of `id`.
    pub(crate) fn result(&mut self, id: &str) -> Value {
        self.result_within(id, WAIT)
    }

    pub(crate) fn result_within(&mut self, id: &str, timeout: Duration) -> Value {
        let id = id.to_string();
        self.wait_for(timeout, &format!("the result of {id}"), |v| {
            v["type"] == "tool_result" && v["tool_use_id"] == id.as_str()
        })
    }

    /// Closes stdin (EOF = shutdown) and returns every line not yet taken plus the exit status.
    pub(crate) fn finish(mut self) -> (Vec<Value>, ExitStatus) {
        drop(self.stdin.take());
        let mut rest = std::mem::take(&mut self.seen);
        while let Ok(v) = self.lines.recv_timeout(WAIT) {
            rest.push(v);
        }
        let status = self.child.wait().unwrap();
        (rest, status)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a result, from its `output_file` when the budget externalized it.
pub(crate) fn full_text(result: &Value) -> String {
    match result["output_file"].as_str() {
        Some(path) => std::fs::read_to_string(path).unwrap(),
        None => result["content"].as_str().unwrap().to_string(),
    }
}

pub(crate) fn content(result: &Value) -> &str {
    result["content"].as_str().unwrap_or_default()
}

pub(crate) fn assert_outcome(result: &Value, outcome: &str) {
    assert_eq!(result["outcome"], outcome, "{result}");
    assert_eq!(
        result["is_error"],
        outcome != "success" && outcome != "deferred",
        "{result}"
    );
}

/// Whether a process is gone (or a zombie).
pub(crate) fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z')),
    }
}

/// Polls until `pid` is gone, at most 3 s (SIGKILL delivery is asynchronous).
pub(crate) fn wait_gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if process_gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
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

/// Peak resident memory of a process in kB (VmHWM).
pub(crate) fn vm_hwm_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}
