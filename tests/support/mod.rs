//! Drives the real `toolrt` binary over NDJSON for the integration tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub(crate) mod client;
pub(crate) mod internet;
pub(crate) mod mcp;
mod procfs;
pub(crate) use procfs::*;

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

    /// Writes `value` as a settings file beside the working folder (not in it, so the tool calls
    /// under test never see it); its path, for `--settings`.
    pub(crate) fn settings_file(&self, value: &Value) -> String {
        let path = self.dir.path().join("settings.json");
        std::fs::write(&path, value.to_string()).unwrap();
        path.display().to_string()
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

/// Where a started server's stderr goes.
pub(crate) enum Stderr {
    /// Read in full and handed back by [`Server::finish`].
    Capture,
    /// Shared with the test process, so it shows up live.
    Inherit,
}

/// Answers some server messages (a `permission_request`, say) as they arrive.
pub(crate) type Responder = Box<dyn FnMut(&Value) -> Option<Value> + Send>;

/// A running `toolrt` process.
pub(crate) struct Server {
    pub child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Value>,
    pub seen: Vec<Value>,
    stderr: mpsc::Receiver<String>,
    responder: Option<Responder>,
}

pub(crate) fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_toolrt")
}

/// A command for the `toolrt` binary under test, to be started with [`Server::spawn`].
pub(crate) fn command() -> Command {
    Command::new(bin())
}

impl Server {
    /// Starts `toolrt` with `args` in `cwd`, with `$HOME` the parent of `cwd`.
    pub(crate) fn start(args: &[String], cwd: &Path) -> Self {
        Self::start_with_home(args, cwd, cwd.parent().unwrap())
    }

    /// Starts `toolrt` with `args` in `cwd` and the given `$HOME`.
    pub(crate) fn start_with_home(args: &[String], cwd: &Path, home: &Path) -> Self {
        let mut cmd = command();
        cmd.args(args).current_dir(cwd).env("HOME", home);
        Self::spawn(cmd, Stderr::Capture)
    }

    /// Spawns `cmd` (from [`command`]) with piped stdin and stdout; every stdout line must be
    /// one JSON object.
    pub(crate) fn spawn(mut cmd: Command, stderr: Stderr) -> Self {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        match stderr {
            Stderr::Capture => cmd.stderr(Stdio::piped()),
            Stderr::Inherit => cmd.stderr(Stdio::inherit()),
        };
        let mut child = cmd.spawn().expect("start toolrt");
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
        // With stderr inherited the sender is dropped here, and `finish` reports "".
        let (etx, erx) = mpsc::channel();
        if let Some(stderr) = child.stderr.take() {
            std::thread::spawn(move || {
                let mut all = String::new();
                let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut all);
                let _ = etx.send(all);
            });
        }
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            rx,
            seen: Vec::new(),
            stderr: erx,
            responder: None,
        }
    }

    /// From now on, every message `responder` returns a line for is answered with that line
    /// as soon as it is read.
    pub(crate) fn respond_with(&mut self, responder: Responder) {
        self.responder = Some(responder);
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn send(&mut self, v: Value) {
        self.send_raw(&v.to_string());
    }

    pub(crate) fn send_raw(&mut self, line: &str) {
        self.try_send(line).expect("write to toolrt's stdin");
    }

    /// Writes one line; an error (the server already exited, say) is returned, not a panic.
    pub(crate) fn try_send(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}")?;
        stdin.flush()
    }

    pub(crate) fn tool_use(&mut self, id: &str, name: &str, input: Value) {
        self.send(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
    }

    /// Reads one message into `seen`, answering it if the responder has a reply.
    fn next(&mut self, timeout: Duration) -> Result<Value, mpsc::RecvTimeoutError> {
        let v = self.rx.recv_timeout(timeout)?;
        if let Some(reply) = self.responder.as_mut().and_then(|r| r(&v))
            && let Some(stdin) = self.stdin.as_mut()
        {
            // The server may be gone already; its exit status tells the test.
            let _ = writeln!(stdin, "{reply}").and_then(|()| stdin.flush());
        }
        self.seen.push(v.clone());
        Ok(v)
    }

    /// The next message (also kept in `seen`); None once stdout is closed. Panics after
    /// `timeout`.
    pub(crate) fn recv(&mut self, timeout: Duration) -> Option<Value> {
        match self.next(timeout) {
            Ok(v) => Some(v),
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
        let i = self.position(what, timeout, pred);
        self.seen[i].clone()
    }

    /// Like [`Server::wait_for`], but removes the message from `seen`, so the next wait for
    /// the same kind of message finds a later one.
    pub(crate) fn take_for(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let i = self.position(what, timeout, pred);
        self.seen.remove(i)
    }

    /// The index in `seen` of the first message matching `pred`, reading more as needed.
    fn position(&mut self, what: &str, timeout: Duration, pred: impl Fn(&Value) -> bool) -> usize {
        if let Some(i) = self.seen.iter().position(&pred) {
            return i;
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Ok(v) if pred(&v) => return self.seen.len() - 1,
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!("timed out waiting for {what}; seen: {:#?}", self.seen)
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    panic!("toolrt closed stdout before {what}; seen: {:#?}", self.seen)
                }
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

/// Every file under `dir`, however deep.
pub(crate) fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A Bash command that prints `first line`, waits (at most 20 s) until a file `seen` exists
/// in its folder, then prints `second line`: the test sees its progress before it ends.
pub(crate) const PRINTS_THEN_WAITS_FOR_SEEN: &str = "echo first line; timeout 20 sh -c 'while [ ! -f seen ]; do sleep 0.01; done'; echo second line";

/// Waits for call `id`'s first `progress` event and checks that it carries `first line`.
pub(crate) fn first_progress_line(server: &mut Server, id: &str) {
    let progress = server.wait_for("progress", Duration::from_secs(20), |v| {
        v["type"] == "event" && v["event"] == "progress"
    });
    assert_eq!(progress["tool_use_id"], id);
    assert!(
        (progress["data"]["output"].as_str()).is_some_and(|o| o.contains("first line")),
        "{progress}"
    );
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

/// Runs `toolrt <subcommand> <args> --cwd <project>` in the sandbox's project (HOME its own,
/// stdin empty): (exit code, stdout, stderr).
pub(crate) fn cli(sb: &Sandbox, subcommand: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin())
        .arg(subcommand)
        .args(args)
        .arg("--cwd")
        .arg(&sb.cwd)
        .current_dir(&sb.cwd)
        .env("HOME", sb.dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
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

/// Runs `toolrt <args>` in `cwd` with `home` as HOME and no stdin; returns (exit code, stdout
/// then stderr): how the `explain` tests read a decision and its errors alike.
pub(crate) fn run_in(args: &[&str], cwd: &Path, home: &Path) -> (Option<i32>, String) {
    let out = Command::new(bin())
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), text)
}

/// Runs `toolrt serve <args> --cwd <cwd>` in `cwd` with no stdin and returns (exit code,
/// stderr): how the start-up error tests see a refused configuration.
pub(crate) fn serve_status(cwd: &Path, args: &[&str]) -> (Option<i32>, String) {
    let cwd_arg = cwd.display().to_string();
    let mut all = vec!["serve"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--cwd", &cwd_arg]);
    run_status(&all, cwd)
}

/// Whether a process with this pid is alive (not a zombie).
pub(crate) fn pid_alive(pid: i32) -> bool {
    !process_gone(pid.try_into().expect("a pid is positive"))
}

/// Waits until a file exists (a command under test signals it has started).
/// Waits until `path` holds at least one whole line (a shell's `echo … > file` creates the file
/// before it writes to it).
pub(crate) fn wait_line(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(path).is_ok_and(|text| text.ends_with('\n')) {
        assert!(
            Instant::now() < deadline,
            "timed out waiting for a line in {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

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
