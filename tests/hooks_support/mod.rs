//! Shared harness of the black-box hook tests: temp dirs, hook scripts, and a `toolrt serve`
//! session driven over NDJSON exactly as PROTOCOL.md describes it. The process itself is a
//! [`crate::support::Server`]; the test file declares `mod support;` beside this module.

#![allow(dead_code)] // each test file uses a different part of the harness

use std::cell::Cell;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::support::{Server, Stderr};

/// How long any one wait may take before the test fails instead of hanging.
pub(crate) const DEADLINE: Duration = Duration::from_secs(60);

/// A workspace (`--cwd`), an output dir, and a dir for hook scripts, logs and settings.
pub(crate) struct Fixture {
    pub(crate) cwd: TempDir,
    pub(crate) out: TempDir,
    pub(crate) hooks: TempDir,
    next: Cell<u32>,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        Self {
            cwd: TempDir::new().unwrap(),
            out: TempDir::new().unwrap(),
            hooks: TempDir::new().unwrap(),
            next: Cell::new(0),
        }
    }

    /// The workspace path as given to `--cwd`.
    pub(crate) fn cwd(&self) -> &Path {
        self.cwd.path()
    }

    /// Whether `path` is the workspace (as given, or canonicalized by toolrt).
    pub(crate) fn is_cwd(&self, path: &str) -> bool {
        let p = Path::new(path);
        p == self.cwd.path() || p.canonicalize().ok() == self.cwd.path().canonicalize().ok()
    }

    /// Writes an executable `sh` script with `body` and returns its path: a command string
    /// unique to this script (so identical-command deduplication never merges two of them).
    pub(crate) fn script(&self, body: &str) -> String {
        let n = self.next.get();
        self.next.set(n + 1);
        let path = self.hooks.path().join(format!("hook{n}.sh"));
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_string_lossy().into_owned()
    }

    /// A hook that reads its input and prints `output` (compact JSON) on stdout, exit 0.
    pub(crate) fn json_hook(&self, output: Value) -> String {
        self.json_hook_exit(output, 0)
    }

    /// A hook that reads its input, prints `output` and exits with `code`.
    pub(crate) fn json_hook_exit(&self, output: Value, code: i32) -> String {
        let path = self.write_data(&output.to_string());
        self.script(&format!("cat > /dev/null\ncat '{path}'\nexit {code}"))
    }

    /// A hook that reads its input, prints `stderr` on stderr and exits with `code`.
    pub(crate) fn stderr_hook(&self, stderr: &str, code: i32) -> String {
        let path = self.write_data(stderr);
        self.script(&format!("cat > /dev/null\ncat '{path}' >&2\nexit {code}"))
    }

    /// A hook (python3) that appends its parsed stdin, plus its cwd and some environment, as one
    /// JSON line to a log; returns the command and the log path.
    pub(crate) fn logger(&self, name: &str) -> (String, PathBuf) {
        let log = self.hooks.path().join(format!("{name}.log"));
        let py = self.hooks.path().join(format!("{name}.py"));
        std::fs::write(
            &py,
            format!(
                r#"import json, os, sys
data = json.load(sys.stdin)
rec = {{"input": data, "cwd": os.getcwd(),
       "claude_project_dir": os.environ.get("CLAUDE_PROJECT_DIR"),
       "toolrt_project_dir": os.environ.get("TOOLRT_PROJECT_DIR"),
       "stdin_tty": os.isatty(0), "stdout_tty": os.isatty(1)}}
try:
    fd = os.open("/dev/tty", os.O_RDONLY)
    os.close(fd)
    rec["has_tty"] = True
except OSError:
    rec["has_tty"] = False
with open({log:?}, "a") as f:
    f.write(json.dumps(rec) + "\n")
"#,
                log = log.to_string_lossy()
            ),
        )
        .unwrap();
        (format!("python3 '{}'", py.display()), log)
    }

    /// Writes `text` to a fresh data file and returns its path.
    pub(crate) fn write_data(&self, text: &str) -> String {
        let n = self.next.get();
        self.next.set(n + 1);
        let path = self.hooks.path().join(format!("data{n}"));
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }

    /// Writes the settings file and returns its path.
    pub(crate) fn settings(&self, settings: Value) -> PathBuf {
        let path = self.hooks.path().join("settings.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&settings).unwrap()).unwrap();
        path
    }

    /// [`Fixture::serve`] with more flags and environment variables for toolrt (and so for the
    /// hooks it starts).
    pub(crate) fn serve_with(&self, mode: &str, extra: &[&str], env: &[(&str, &str)]) -> Session {
        let settings = self.hooks.path().join("settings.json");
        let mut args: Vec<String> = vec![
            "serve".into(),
            "--cwd".into(),
            self.cwd.path().to_string_lossy().into_owned(),
            "--output-dir".into(),
            self.out.path().to_string_lossy().into_owned(),
            "--settings".into(),
            settings.to_string_lossy().into_owned(),
            "--permission-mode".into(),
            mode.into(),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        Session::start_env(&args, env)
    }

    /// Starts `toolrt serve` with the settings written by [`Fixture::settings`], in `mode`.
    pub(crate) fn serve(&self, mode: &str) -> Session {
        let settings = self.hooks.path().join("settings.json");
        let args: Vec<String> = vec![
            "serve".into(),
            "--cwd".into(),
            self.cwd.path().to_string_lossy().into_owned(),
            "--output-dir".into(),
            self.out.path().to_string_lossy().into_owned(),
            "--settings".into(),
            settings.to_string_lossy().into_owned(),
            "--permission-mode".into(),
            mode.into(),
        ];
        Session::start(&args)
    }

    /// Settings with `hooks`, then one session in `mode`: sends `inputs`, waits for every call's
    /// result (denying every permission request), and shuts down.
    pub(crate) fn run(&self, hooks: Value, mode: &str, inputs: &[Value]) -> Run {
        self.settings(json!({ "hooks": hooks }));
        self.serve(mode).run(inputs)
    }

    /// [`Fixture::run`] with one `event` group matching Bash with `hooks`, and one call: `a1`
    /// running `command`.
    pub(crate) fn run_bash_hooks(
        &self,
        event: &str,
        hooks: &[&str],
        mode: &str,
        command: &str,
    ) -> Run {
        self.run(
            json!({ event: [group("Bash", hooks)] }),
            mode,
            &[bash("a1", command)],
        )
    }

    /// Writes `settings`, then one session in `mode` that allows every permission request.
    pub(crate) fn run_allowing(&self, settings: Value, mode: &str, inputs: &[Value]) -> Run {
        self.settings(settings);
        let mut session = self.serve(mode);
        session.answer(allow_all());
        session.run(inputs)
    }
}

/// A Bash call line.
pub(crate) fn bash(id: &str, command: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": command}})
}

/// A call line for any tool.
pub(crate) fn call(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

/// A batch line of `calls` (each a `tool_use` object).
pub(crate) fn batch(id: &str, calls: &[Value]) -> Value {
    json!({"type": "batch", "id": id, "calls": calls})
}

/// One hook event entry: a matcher group with these command hooks (each `(command, timeout)`).
pub(crate) fn group(matcher: &str, commands: &[&str]) -> Value {
    let hooks: Vec<Value> = commands
        .iter()
        .map(|c| json!({"type": "command", "command": c}))
        .collect();
    json!({"matcher": matcher, "hooks": hooks})
}

/// How the session answers `permission_request` lines.
pub(crate) type Answer = Box<dyn Fn(&Value) -> Value + Send>;

/// Deny every permission request.
pub(crate) fn deny_all() -> Answer {
    Box::new(
        |req| json!({"type": "permission_response", "request_id": req["request_id"], "behavior": "deny"}),
    )
}

/// Allow every permission request.
pub(crate) fn allow_all() -> Answer {
    Box::new(
        |req| json!({"type": "permission_response", "request_id": req["request_id"], "behavior": "allow"}),
    )
}

/// A running `toolrt serve`, answering every `permission_request` with [`Session::answer`].
pub(crate) struct Session {
    server: Server,
    /// Call ids sent whose results `finish` waits for.
    pending: Vec<String>,
}

impl Session {
    /// Starts `toolrt` with `args`, denying every permission request.
    pub(crate) fn start(args: &[String]) -> Self {
        Self::start_env(args, &[])
    }

    /// [`Session::start`] with these environment variables set for toolrt.
    pub(crate) fn start_env(args: &[String], env: &[(&str, &str)]) -> Self {
        let mut cmd = crate::support::command();
        cmd.args(args);
        cmd.envs(env.iter().copied());
        let mut session = Self {
            server: Server::spawn(cmd, Stderr::Capture),
            pending: Vec::new(),
        };
        session.answer(deny_all());
        session
    }

    /// From now on, answer `permission_request` lines with `answer`.
    pub(crate) fn answer(&mut self, answer: Answer) {
        self.server.respond_with(Box::new(move |line| {
            (line["type"] == "permission_request").then(|| answer(line))
        }));
    }

    /// Every line read so far.
    pub(crate) fn lines(&self) -> &[Value] {
        &self.server.seen
    }

    /// The server's process id (for /proc readings).
    pub(crate) fn pid(&self) -> u32 {
        self.server.pid()
    }

    /// Writes one line; remembers the call ids it introduces.
    pub(crate) fn send(&mut self, v: &Value) {
        match v["type"].as_str() {
            Some("tool_use") => self.pending.push(v["id"].as_str().unwrap().to_owned()),
            Some("batch") => {
                for c in v["calls"].as_array().unwrap() {
                    self.pending.push(c["id"].as_str().unwrap().to_owned());
                }
            }
            _ => {}
        }
        // A server that already exited (bad settings) makes this fail; the caller checks
        // the exit status.
        let _ = self.server.try_send(&v.to_string());
    }

    /// Reads lines (answering permission requests) until one satisfies `pred`; returns it.
    pub(crate) fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.server.wait_for(what, DEADLINE, pred)
    }

    /// The `tool_result` of call `id`, waiting for it.
    pub(crate) fn result(&mut self, id: &str) -> Value {
        self.wait_for(&format!("the result of {id}"), |l| {
            crate::support::is_result(l, id)
        })
    }

    /// Waits for the result of every call sent, closes stdin (EOF = shutdown), reads to the
    /// end and waits for the exit.
    pub(crate) fn finish(mut self) -> Run {
        for id in std::mem::take(&mut self.pending) {
            // A server that refused to start (bad settings) prints nothing; the caller checks
            // its exit code.
            let deadline = Instant::now() + DEADLINE;
            while !self
                .server
                .seen
                .iter()
                .any(|l| crate::support::is_result(l, &id))
            {
                let left = deadline.saturating_duration_since(Instant::now());
                if self.server.recv(left).is_none() {
                    break;
                }
            }
        }
        let done = self.server.finish();
        Run {
            lines: done.messages,
            code: done.status.code(),
            stderr: done.stderr,
        }
    }

    /// Sends every line, then [`Session::finish`].
    pub(crate) fn run(mut self, inputs: &[Value]) -> Run {
        for v in inputs {
            self.send(v);
        }
        self.finish()
    }
}

/// Everything one session printed.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) lines: Vec<Value>,
    pub(crate) code: Option<i32>,
    pub(crate) stderr: String,
}

impl Run {
    /// The one `tool_result` of call `id`.
    pub(crate) fn result(&self, id: &str) -> &Value {
        let found: Vec<&Value> = self
            .lines
            .iter()
            .filter(|l| l["type"] == "tool_result" && l["tool_use_id"] == id)
            .collect();
        assert_eq!(found.len(), 1, "results of {id}: {:#?}", self.lines);
        found[0]
    }

    /// The outcome of call `id`.
    pub(crate) fn outcome(&self, id: &str) -> &str {
        self.result(id)["outcome"].as_str().unwrap()
    }

    /// The content of call `id`.
    pub(crate) fn content(&self, id: &str) -> &str {
        self.result(id)["content"].as_str().unwrap()
    }

    /// Every `event` line named `name`.
    pub(crate) fn events(&self, name: &str) -> Vec<&Value> {
        self.lines
            .iter()
            .filter(|l| l["type"] == "event" && l["event"] == name)
            .collect()
    }

    /// `hook_end` events of `hook_event`.
    pub(crate) fn hook_ends(&self, hook_event: &str) -> Vec<&Value> {
        self.events("hook_end")
            .into_iter()
            .filter(|e| e["hook_event"] == hook_event)
            .collect()
    }

    /// Every `permission_request` line.
    pub(crate) fn permission_requests(&self) -> Vec<&Value> {
        self.lines
            .iter()
            .filter(|l| l["type"] == "permission_request")
            .collect()
    }
}

/// The JSON lines a logger hook wrote (empty if it never ran).
pub(crate) fn log_lines(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// PreToolUse JSON output with this decision.
pub(crate) fn pre_decision(decision: &str, reason: &str) -> Value {
    json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }})
}
