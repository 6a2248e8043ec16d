//! Drives the real `toolrt serve` binary over NDJSON for the built-in tool tests: a temp
//! working dir and output dir, lines in, parsed lines out. The process itself is a
//! [`crate::support::Server`]; the test file declares `mod support;` beside this module.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::{Value, json};

#[allow(unused_imports)] // only the Bash tests read pids
pub(crate) use crate::support::read_pid;
use crate::support::{Stderr, status_kib, wait_gone_within};

/// How long any single wait may take before the test fails (the 200 MB test passes its own).
pub(crate) const WAIT: Duration = Duration::from_secs(60);

/// A `toolrt serve` in bypassPermissions mode on its own temp dirs.
pub(crate) struct Server {
    // Declared first so the process is killed before its directories are removed.
    inner: crate::support::Server,
    pub(crate) dir: tempfile::TempDir,
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
        let mut cmd = crate::support::command();
        cmd.arg("serve")
            .arg("--cwd")
            .arg(dir.path().join("work"))
            .arg("--output-dir")
            .arg(dir.path().join("out"))
            .args(["--permission-mode", "bypassPermissions"])
            .args(extra);
        // The server's own log shows live beside a failing tool test.
        let inner = crate::support::Server::spawn(cmd, Stderr::Inherit);
        Server { inner, dir }
    }

    pub(crate) fn cwd(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    pub(crate) fn out_dir(&self) -> PathBuf {
        self.dir.path().join("out")
    }

    pub(crate) fn pid(&self) -> u32 {
        self.inner.pid()
    }

    pub(crate) fn send(&mut self, msg: Value) {
        self.inner.send(msg);
    }

    /// Sends one `tool_use` and waits for its result.
    pub(crate) fn call(&mut self, id: &str, name: &str, input: Value) -> Value {
        self.send(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
        self.result(id)
    }

    /// Waits for the first line satisfying `pred` and takes it (other lines are kept).
    pub(crate) fn wait_for(
        &mut self,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        self.inner.take_for(what, timeout, pred)
    }

    /// The `tool_result` of `id`.
    pub(crate) fn result(&mut self, id: &str) -> Value {
        self.result_within(id, WAIT)
    }

    /// The `tool_result` of `id`, waiting at most `timeout`.
    pub(crate) fn result_within(&mut self, id: &str, timeout: Duration) -> Value {
        self.wait_for(timeout, &format!("the result of {id}"), |v| {
            crate::support::is_result(v, id)
        })
    }

    /// Closes stdin (EOF = shutdown) and returns every line not yet taken plus the exit status.
    pub(crate) fn finish(self) -> (Vec<Value>, ExitStatus) {
        let done = self.inner.finish();
        (done.messages, done.status)
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

/// Polls until `pid` is gone, at most 3 s (SIGKILL delivery is asynchronous).
pub(crate) fn wait_gone(pid: u32) -> bool {
    wait_gone_within(pid, Duration::from_secs(3))
}

/// Peak resident memory of a process in kB (VmHWM).
pub(crate) fn vm_hwm_kb(pid: u32) -> u64 {
    status_kib(pid, "VmHWM")
}
