//! Drives `toolrt serve` over NDJSON for the permission tests: a temp project, a temp home, a
//! settings file, tool calls in, every `permission_request` answered, every line out.
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long one run may take before the test fails instead of hanging.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);

/// A project directory (`cwd`), a home directory and an output directory in one temp dir.
pub struct Fixture {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub cwd: PathBuf,
    pub home: PathBuf,
    pub out: PathBuf,
}

/// Everything one server run printed.
pub struct Run {
    pub lines: Vec<Value>,
    pub status: ExitStatus,
    pub stderr: String,
}

impl Fixture {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = std::fs::canonicalize(tmp.path()).expect("canonical temp dir");
        let cwd = root.join("proj");
        let home = root.join("home");
        let out = root.join("out");
        for d in [&cwd, &home, &out] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        Fixture {
            tmp,
            root,
            cwd,
            home,
            out,
        }
    }

    /// Writes a file under the project (parents created) and returns its path.
    pub fn write(&self, rel: &str, content: &str) -> PathBuf {
        let p = self.cwd.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, content).expect("write");
        p
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.cwd.join(rel)
    }

    /// Writes `{"permissions": permissions}` to `<root>/settings.json`.
    pub fn settings(&self, permissions: Value) -> PathBuf {
        let p = self.root.join("settings.json");
        std::fs::write(&p, json!({ "permissions": permissions }).to_string())
            .expect("write settings");
        p
    }

    /// Runs `toolrt serve --cwd <cwd> --output-dir <out> --settings <settings> <extra>`, sends
    /// one `tool_use` line per call, answers every `permission_request` with `answer`
    /// (`"deny"` or `"allow"`), closes stdin once every call has a result, and collects stdout.
    pub fn run(
        &self,
        settings: &Path,
        extra: &[&str],
        calls: &[(String, &str, Value)],
        answer: &str,
    ) -> Run {
        let mut args: Vec<String> = vec![
            "serve".into(),
            "--cwd".into(),
            self.cwd.display().to_string(),
            "--output-dir".into(),
            self.out.display().to_string(),
            "--settings".into(),
            settings.display().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolrt"))
            .args(&args)
            .current_dir(&self.cwd)
            .env("HOME", &self.home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start toolrt");
        let stdout = child.stdout.take().expect("stdout");
        let mut stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel::<Value>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let err_reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let mut stdin = child.stdin.take().expect("stdin");
        for (id, name, input) in calls {
            let line = json!({ "type": "tool_use", "id": id, "name": name, "input": input });
            writeln!(stdin, "{line}").expect("write tool_use");
        }
        stdin.flush().expect("flush");
        let mut lines = Vec::new();
        let mut results = 0;
        let start = Instant::now();
        let mut stdin = Some(stdin);
        loop {
            if results >= calls.len() {
                // EOF on stdin is shutdown: the server finishes and exits.
                stdin.take();
            }
            let left = RUN_TIMEOUT.checked_sub(start.elapsed()).unwrap_or_default();
            match rx.recv_timeout(left) {
                Ok(v) => {
                    match v["type"].as_str() {
                        Some("tool_result") => results += 1,
                        Some("permission_request") => {
                            if let Some(w) = stdin.as_mut() {
                                let resp = json!({
                                    "type": "permission_response",
                                    "request_id": v["request_id"],
                                    "behavior": answer,
                                });
                                let _ = writeln!(w, "{resp}");
                                let _ = w.flush();
                            }
                        }
                        _ => {}
                    }
                    lines.push(v);
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    panic!(
                        "toolrt did not finish within {RUN_TIMEOUT:?}; lines so far: {lines:#?}"
                    );
                }
            }
        }
        drop(stdin);
        let status = child.wait().expect("wait");
        let _ = reader.join();
        let stderr = err_reader.join().unwrap_or_default();
        Run {
            lines,
            status,
            stderr,
        }
    }
}

impl Run {
    /// The one `tool_result` for `id`.
    pub fn result(&self, id: &str) -> &Value {
        let found: Vec<&Value> = self
            .lines
            .iter()
            .filter(|v| v["type"] == "tool_result" && v["tool_use_id"] == id)
            .collect();
        assert_eq!(
            found.len(),
            1,
            "exactly one result for {id}; lines: {:#?}\nstderr: {}",
            self.lines,
            self.stderr
        );
        found[0]
    }

    pub fn outcome(&self, id: &str) -> String {
        self.result(id)["outcome"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    pub fn content(&self, id: &str) -> String {
        self.result(id)["content"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// Whether a `permission_request` was sent for `id`.
    pub fn asked(&self, id: &str) -> bool {
        self.lines
            .iter()
            .any(|v| v["type"] == "permission_request" && v["tool_use_id"] == id)
    }
}

/// A Bash call.
pub fn bash(id: &str, command: &str) -> (String, &'static str, Value) {
    (id.to_string(), "Bash", json!({ "command": command }))
}

/// Any tool call.
pub fn call(id: &str, name: &'static str, input: Value) -> (String, &'static str, Value) {
    (id.to_string(), name, input)
}

/// Runs `toolrt` with `args` to completion (no stdin) and returns its exit code and stderr.
pub fn run_status(args: &[&str], cwd: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolrt"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run toolrt");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
