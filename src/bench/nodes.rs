//! The processes of the cluster figure: `toolrt worker`s on loopback and `toolrt serve`
//! coordinators driven over their stdin and stdout, all of this very binary. Each child leads a
//! process group of its own, and the whole group is killed when its handle is dropped, so an
//! error anywhere in the figure leaves nothing running.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout, Command};

use super::floors::elapsed_ns;

/// How long a worker may take to say it listens, and a coordinator to see its workers join.
const START_WAIT: Duration = Duration::from_secs(30);

/// How long one call may take before the figure gives up (a call that never ends would hang
/// the bench otherwise).
const CALL_WAIT: Duration = Duration::from_secs(60);

/// A child process that leads its own process group; dropping it kills the group.
struct Proc {
    child: tokio::process::Child,
    /// What it is, for messages.
    what: String,
    /// Where its stderr goes, quoted when it fails.
    stderr: PathBuf,
}

impl Proc {
    /// Starts `cmd` in a process group of its own, stderr to `stderr`.
    fn spawn(mut cmd: Command, what: String, stderr: PathBuf) -> Result<Self, String> {
        let file = std::fs::File::create(&stderr)
            .map_err(|e| format!("cannot create {}: {e}", stderr.display()))?;
        cmd.process_group(0)
            .kill_on_drop(true)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(file));
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the {what}: {e}"))?;
        Ok(Self {
            child,
            what,
            stderr,
        })
    }

    /// Sends `signal` to the whole group (nothing if the child is already reaped).
    fn signal_group(&self, signal: nix::sys::signal::Signal) {
        if let Some(pid) = self.child.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), signal);
        }
    }

    /// Ends it: SIGTERM to its group, SIGKILL if it has not exited within a few seconds.
    async fn stop(mut self) {
        self.signal_group(nix::sys::signal::Signal::SIGTERM);
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            self.signal_group(nix::sys::signal::Signal::SIGKILL);
            let _ = self.child.wait().await;
        }
    }

    /// `message`, with the last lines the process wrote to stderr.
    fn failed(&self, message: &str) -> String {
        let text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(5)..].join(" | ");
        if tail.is_empty() {
            format!("{}: {message}", self.what)
        } else {
            format!("{}: {message} (stderr: {tail})", self.what)
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // Reaped (stop ran): the pid may belong to someone else by now.
        if matches!(self.child.try_wait(), Ok(None)) {
            self.signal_group(nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// Where the figure's processes run: the binary, a HOME of their own (so no user settings or
/// hooks of the machine take part) and a folder for cookies, workspaces and stderr files.
pub(super) struct Place {
    /// The toolrt binary (this process's own).
    pub exe: PathBuf,
    /// The temporary folder; its `home` is every child's HOME.
    pub dir: PathBuf,
    /// The cookie file shared by workers and coordinators.
    pub cookie: PathBuf,
}

impl Place {
    /// Prepares `dir`: a home folder and a cookie.
    pub(super) fn new(dir: &Path) -> Result<Self, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find the toolrt binary to start workers: {e}"))?;
        let home = dir.join("home");
        std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
        let cookie = dir.join("cookie");
        let secret = format!("bench-{}-{}", std::process::id(), nanos());
        std::fs::write(&cookie, secret + "\n").map_err(|e| format!("{}: {e}", cookie.display()))?;
        Ok(Self {
            exe,
            dir: dir.to_path_buf(),
            cookie,
        })
    }

    /// A command of this binary with a clean environment but for PATH and HOME.
    fn command(&self, pin: Option<usize>) -> Command {
        let mut cmd = match pin {
            Some(cpu) => {
                let mut cmd = Command::new("taskset");
                cmd.arg("-c").arg(cpu.to_string()).arg(&self.exe);
                cmd
            }
            None => Command::new(&self.exe),
        };
        cmd.env_clear()
            .env("HOME", self.dir.join("home"))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        cmd
    }
}

/// A running `toolrt worker`.
pub(super) struct Worker {
    proc: Proc,
    /// Its name (`w1`, …), as results and `node` events give it.
    pub name: String,
    /// Where it listens.
    pub addr: String,
}

impl Worker {
    /// Starts worker `name` on a free loopback port, its workspace `<dir>/<name>` (holding
    /// `files`), pinned to `pin` (a CPU) through `taskset` when given. A port taken between
    /// choosing and listening is retried with another.
    pub(super) async fn start(
        place: &Place,
        name: &str,
        tools: &str,
        files: &[(&str, &str)],
        pin: Option<usize>,
    ) -> Result<Self, String> {
        let cwd = place.dir.join(name);
        std::fs::create_dir_all(&cwd).map_err(|e| format!("{}: {e}", cwd.display()))?;
        for (file, text) in files {
            let path = cwd.join(file);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("{file}: {e}"))?;
            }
            std::fs::write(path, text).map_err(|e| format!("{file}: {e}"))?;
        }
        let mut last = String::new();
        for _ in 0..3 {
            let addr = free_port()?;
            let mut cmd = place.command(pin);
            cmd.args([
                "worker", "--listen", &addr, "--name", name, "--tools", tools,
            ])
            .arg("--cookie-file")
            .arg(&place.cookie)
            .arg("--cwd")
            .arg(&cwd);
            let stderr = place.dir.join(format!("{name}.stderr"));
            let mut proc = Proc::spawn(cmd, format!("worker {name}"), stderr)?;
            match ready(&mut proc).await {
                Ok(()) => {
                    return Ok(Self {
                        proc,
                        name: name.to_string(),
                        addr,
                    });
                }
                Err(why) => {
                    last = proc.failed(&why);
                    proc.stop().await;
                }
            }
        }
        Err(last)
    }

    /// Ends it (SIGTERM, then SIGKILL).
    pub(super) async fn stop(self) {
        self.proc.stop().await;
    }
}

/// Waits for a worker's `… listening on ADDR` line.
async fn ready(proc: &mut Proc) -> Result<(), String> {
    let stdout = (proc.child.stdout.take()).ok_or("the worker has no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    match tokio::time::timeout(START_WAIT, lines.next_line()).await {
        Err(_) => Err(format!(
            "did not say it listens within {} s",
            START_WAIT.as_secs()
        )),
        Ok(Ok(Some(line))) if line.contains("listening on") => {
            // Nothing more comes on stdout; keep reading so a write never blocks it.
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            Ok(())
        }
        Ok(Ok(Some(line))) => Err(format!("said {line:?} instead of listening")),
        Ok(Ok(None)) | Ok(Err(_)) => Err("exited before it listened".into()),
    }
}

/// A loopback address whose port was free a moment ago (bound, then released: the worker
/// does not say which port it got when given port 0).
fn free_port() -> Result<String, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot find a free loopback port: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.to_string())
        .map_err(|e| e.to_string())
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// A `toolrt serve` driven over its stdin and stdout, one NDJSON line each way per message.
pub(super) struct Serve {
    proc: Proc,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    /// Tag of its call ids, so that a result of another coordinator could never be mistaken.
    tag: String,
    /// Each node's count of the calls it ran, over this coordinator's lifetime.
    pub per_node: HashMap<String, usize>,
}

impl Serve {
    /// Starts `toolrt serve` in `cwd` with `args`, dialing `workers`, and waits until every
    /// worker has joined (its `node` event) — without workers, until it answers `hello`.
    pub(super) async fn start(
        place: &Place,
        tag: &str,
        cwd: &Path,
        args: &[&str],
        workers: &[Worker],
    ) -> Result<Self, String> {
        let mut cmd = place.command(None);
        cmd.arg("serve").arg("--cwd").arg(cwd).args(args);
        if !workers.is_empty() {
            cmd.arg("--cookie-file").arg(&place.cookie);
            for w in workers {
                cmd.args(["--worker", &w.addr]);
            }
        }
        let stderr = place.dir.join(format!("{tag}.stderr"));
        let mut proc = Proc::spawn(cmd, format!("coordinator {tag}"), stderr)?;
        let (Some(stdin), Some(stdout)) = (proc.child.stdin.take(), proc.child.stdout.take())
        else {
            return Err(proc.failed("has no pipes"));
        };
        let mut serve = Self {
            proc,
            stdin,
            lines: BufReader::new(stdout).lines(),
            next_id: 0,
            tag: tag.to_string(),
            per_node: HashMap::new(),
        };
        let mut waiting: Vec<&str> = workers.iter().map(|w| w.name.as_str()).collect();
        if waiting.is_empty() {
            serve.send(r#"{"type":"hello"}"#).await?;
        }
        let deadline = Instant::now() + START_WAIT;
        loop {
            let v = serve.next(deadline, "start").await?;
            if v["type"] == "hello" && workers.is_empty() {
                return Ok(serve);
            }
            if v["type"] == "event" && v["event"] == "node" && v["status"] == "joined" {
                waiting.retain(|n| v["node"] != *n);
                if waiting.is_empty() {
                    return Ok(serve);
                }
            }
        }
    }

    async fn send(&mut self, line: &str) -> Result<(), String> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let written = async {
            self.stdin.write_all(&bytes).await?;
            self.stdin.flush().await
        };
        match written.await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.proc.failed(&format!("cannot write to it: {e}"))),
        }
    }

    /// The next line as JSON; an `error` line, the end of its output or `deadline` is an
    /// error naming `what` was awaited.
    async fn next(&mut self, deadline: Instant, what: &str) -> Result<Value, String> {
        let line = match tokio::time::timeout_at(deadline.into(), self.lines.next_line()).await {
            Err(_) => return Err(self.proc.failed(&format!("no answer in time ({what})"))),
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) | Ok(Err(_)) => {
                return Err(self.proc.failed(&format!("its output ended ({what})")));
            }
        };
        let v: Value = serde_json::from_str(&line).map_err(|e| {
            self.proc
                .failed(&format!("wrote a line that is not JSON: {e}"))
        })?;
        if v["type"] == "error" {
            return Err(self.proc.failed(&format!("answered an error: {line}")));
        }
        Ok(v)
    }

    /// Sends one call of `input` (a JSON object) to `tool`; returns its id.
    async fn call(&mut self, tool: &str, input: &str) -> Result<String, String> {
        let id = format!("{}-{}", self.tag, self.next_id);
        self.next_id += 1;
        let line = format!(r#"{{"type":"tool_use","id":"{id}","name":"{tool}","input":{input}}}"#);
        self.send(&line).await?;
        Ok(id)
    }

    /// Waits for the next result: its id. A result that is not `success`, or that ran on a
    /// worker when `remote` is false (or not on one when it is true), is an error: the figure
    /// would measure something else.
    async fn result(&mut self, remote: bool) -> Result<String, String> {
        let deadline = Instant::now() + CALL_WAIT;
        loop {
            let v = self.next(deadline, "a call's result").await?;
            // A worker lost mid-run would leave the others to carry its share unseen.
            if v["type"] == "event" && v["event"] == "node" && v["status"] != "joined" {
                let node = v["node"].as_str().unwrap_or("?");
                return Err(self
                    .proc
                    .failed(&format!("worker {node} was lost during the run")));
            }
            if v["type"] != "tool_result" {
                continue;
            }
            if v["outcome"] != "success" {
                return Err(self
                    .proc
                    .failed(&format!("a bench call did not succeed: {v}")));
            }
            match (remote, v["node"].as_str()) {
                (true, Some(node)) => *self.per_node.entry(node.to_string()).or_default() += 1,
                (false, None) => {}
                (true, None) => return Err(self.proc.failed("a call meant for a worker ran here")),
                (false, Some(n)) => return Err(self.proc.failed(&format!("a call ran on {n}"))),
            }
            return Ok(v["tool_use_id"].as_str().unwrap_or_default().to_string());
        }
    }

    /// `calls` calls one at a time, each from its line written to its result line read: the
    /// latency of each in nanoseconds.
    pub(super) async fn latency(
        &mut self,
        tool: &str,
        input: &str,
        calls: usize,
        remote: bool,
    ) -> Result<Vec<u64>, String> {
        let inputs = vec![input; calls];
        self.latency_each(tool, &inputs, remote).await
    }

    /// One call per input, one in flight: each call's time from its line written to its
    /// result read.
    pub(super) async fn latency_each(
        &mut self,
        tool: &str,
        inputs: &[&str],
        remote: bool,
    ) -> Result<Vec<u64>, String> {
        let mut samples = Vec::with_capacity(inputs.len());
        for input in inputs {
            let start = Instant::now();
            let id = self.call(tool, input).await?;
            let got = self.result(remote).await?;
            samples.push(elapsed_ns(start));
            if got != id {
                return Err(self.proc.failed(&format!("answered {got} for {id}")));
            }
        }
        Ok(samples)
    }

    /// `calls` calls with `in_flight` kept outstanding (a new one sent as each result comes):
    /// the time from the first line written to the last result read.
    pub(super) async fn closed_loop(
        &mut self,
        tool: &str,
        input: &str,
        calls: usize,
        in_flight: usize,
        remote: bool,
    ) -> Result<Duration, String> {
        let start = Instant::now();
        let (mut sent, mut done) = (0, 0);
        while done < calls {
            while sent < calls && sent - done < in_flight.max(1) {
                self.call(tool, input).await?;
                sent += 1;
            }
            self.result(remote).await?;
            done += 1;
        }
        Ok(start.elapsed())
    }

    /// Closes its input (it finishes and exits), then ends it if it has not within a few
    /// seconds.
    pub(super) async fn stop(self) {
        let Self {
            mut proc, stdin, ..
        } = self;
        drop(stdin);
        if tokio::time::timeout(Duration::from_secs(5), proc.child.wait())
            .await
            .is_err()
        {
            proc.stop().await;
        }
    }
}

/// Round trips of a 200-byte message over a loopback TCP connection (`TCP_NODELAY`, as
/// ractor_cluster sets it) between two threads of this process, nanoseconds each: the kernel's
/// and the machine's floor under one request to a worker and its reply, with no encoding, no
/// actor and no runtime in the way.
pub(super) async fn loopback_round_trips(samples: usize) -> Result<Vec<u64>, String> {
    tokio::task::spawn_blocking(move || round_trips(samples))
        .await
        .map_err(|e| format!("the loopback floor failed: {e}"))?
        .map_err(|e| format!("the loopback floor failed: {e}"))
}

fn round_trips(samples: usize) -> std::io::Result<Vec<u64>> {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut peer, _) = listener.accept()?;
        peer.set_nodelay(true)?;
        let mut buf = [0u8; 512];
        loop {
            match peer.read(&mut buf)? {
                0 => return Ok(()),
                n => peer.write_all(&buf[..n])?,
            }
        }
    });
    let mut out = Vec::with_capacity(samples);
    {
        let mut conn = std::net::TcpStream::connect(addr)?;
        conn.set_nodelay(true)?;
        // A peer that stops answering ends the floor instead of hanging the bench.
        conn.set_read_timeout(Some(Duration::from_secs(10)))?;
        let msg = [7u8; 200];
        let mut buf = [0u8; 200];
        for _ in 0..samples {
            let start = Instant::now();
            conn.write_all(&msg)?;
            conn.read_exact(&mut buf)?;
            out.push(elapsed_ns(start));
        }
    }
    echo.join()
        .map_err(|_| std::io::Error::other("the echo thread panicked"))??;
    Ok(out)
}

/// The CPUs this process may run on (its affinity mask), in order.
pub(super) fn allowed_cpus() -> Vec<usize> {
    use nix::sched::{CpuSet, sched_getaffinity};
    let Ok(set) = sched_getaffinity(nix::unistd::Pid::from_raw(0)) else {
        return Vec::new();
    };
    (0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect()
}

/// Whether `taskset` can be run from PATH.
pub(super) fn has_taskset() -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(dir.join("taskset"))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// The machine's CPU time so far from /proc/stat: (busy, total) in clock ticks, every CPU
/// summed. None where there is no /proc.
pub(super) fn cpu_ticks() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_line(text.lines().next()?)
}

fn parse_cpu_line(line: &str) -> Option<(u64, u64)> {
    let mut words = line.split_whitespace();
    if words.next()? != "cpu" {
        return None;
    }
    let ticks: Vec<u64> = words.map_while(|w| w.parse().ok()).collect();
    if ticks.len() < 5 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest time is counted in user already).
    let total: u64 = ticks.iter().take(8).sum();
    let idle = ticks[3] + ticks[4];
    Some((total - idle, total))
}

/// The one-minute load average, where /proc has it.
pub(super) fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lines_give_busy_and_total_ticks() {
        let line = "cpu  100 5 50 800 20 3 2 0 0 0";
        assert_eq!(parse_cpu_line(line), Some((160, 980)));
        assert_eq!(parse_cpu_line("cpu0 1 2 3 4 5"), None);
        assert_eq!(parse_cpu_line("cpu 1 2"), None);
    }

    #[tokio::test]
    async fn the_loopback_floor_times_every_round_trip() {
        let samples = loopback_round_trips(20).await.expect("round trips");
        assert_eq!(samples.len(), 20);
        assert!(samples.iter().all(|&ns| ns > 0), "{samples:?}");
    }

    #[test]
    fn this_process_may_run_on_some_cpu() {
        assert!(!allowed_cpus().is_empty());
    }
}
