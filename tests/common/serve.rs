//! Drives `toolrt serve` over NDJSON for the permission tests: a temp project, a temp home, a
//! settings file, tool calls in, every `permission_request` answered, every line out.
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::Server;
#[allow(unused_imports)] // not every test file that includes this module calls it
pub(crate) use crate::support::serve_status;

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
        self.run_from(&self.cwd, settings, extra, calls, answer)
    }

    /// Like [`Fixture::run`], with the toolrt process started in `process_cwd` (the session's
    /// cwd is still `--cwd <cwd>`).
    pub fn run_from(
        &self,
        process_cwd: &Path,
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
        let mut server = Server::start_with_home(&args, process_cwd, &self.home);
        for (id, name, input) in calls {
            server.tool_use(id, name, input.clone());
        }
        let mut results = 0;
        while results < calls.len() {
            let Some(v) = server.recv(RUN_TIMEOUT) else {
                break;
            };
            match v["type"].as_str() {
                Some("tool_result") => results += 1,
                Some("permission_request") => server.send(json!({
                    "type": "permission_response",
                    "request_id": v["request_id"],
                    "behavior": answer,
                })),
                _ => {}
            }
        }
        // EOF on stdin is shutdown: the server finishes and exits.
        let done = server.finish();
        Run {
            lines: done.messages,
            status: done.status,
            stderr: done.stderr,
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
