//! Nothing toolrt starts outlives it, even when toolrt is killed with SIGKILL.
//!
//! Every process toolrt starts (a Bash command, a background task, a command hook; later an MCP
//! server) runs in a process group of its own. A **watchdog** process — the toolrt binary itself,
//! run again as `toolrt __watchdog` ([`start`]) — is started once per toolrt, in a process group
//! of its own, with a pipe as its stdin. toolrt tells it each group it starts (`+PGID`) and each
//! group it is done with (`-PGID`) through [`track`]'s guard. When the pipe reaches end of file,
//! toolrt has exited, however it died, since the kernel closes its end: the watchdog then kills
//! every group still recorded, and exits ([`run`]).
//!
//! Why this design: `unsafe` is forbidden, so no `pre_exec` can give a child a parent-death
//! signal; a per-command helper process would double the cost of every Bash spawn; a
//! parent-death signal on the watchdog itself would fire when the *thread* that started it ends,
//! and tokio's blocking threads come and go. One pipe write per start and per end is all a spawn
//! pays: the writes do not wake the watchdog, which sleeps until toolrt's end of the pipe closes
//! and reads the lines that came meanwhile every [`DRAIN_EVERY_MS`] (docs/BENCH.md, "Bash at four
//! in flight").
//!
//! What can still escape: a process that leaves its group (`setsid`, `setpgid`, a daemon that
//! double-forks into a new session), work handed to another service (`systemd-run`, `at`, a
//! container runtime), a group started in the microseconds between its spawn and toolrt's death,
//! and everything when the watchdog itself is killed with SIGKILL (it ignores SIGINT, SIGTERM,
//! SIGHUP and SIGQUIT until toolrt is gone). If the watchdog dies while toolrt runs, toolrt starts
//! another and tells it every group still running.

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

/// The hidden subcommand that runs the watchdog.
pub const SUBCOMMAND: &str = "__watchdog";

static WATCHDOG: OnceLock<Watchdog> = OnceLock::new();

struct Watchdog {
    program: PathBuf,
    inner: Mutex<Inner>,
}

struct Inner {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    /// The groups told to the watchdog and not yet taken back.
    live: HashSet<u32>,
}

/// Starts this process's watchdog by running `program` (the toolrt binary) with
/// [`SUBCOMMAND`]. Until it is called, [`track`] records nothing.
pub fn start(program: &Path) -> std::io::Result<()> {
    let (child, stdin) = spawn(program)?;
    let dog = Watchdog {
        program: program.to_path_buf(),
        inner: Mutex::new(Inner {
            child: Some(child),
            stdin: Some(stdin),
            live: HashSet::new(),
        }),
    };
    if WATCHDOG.set(dog).is_err() {
        tracing::debug!("a watchdog was already running; the new one exits at once");
    }
    Ok(())
}

/// Whether a watchdog was started.
pub fn is_running() -> bool {
    WATCHDOG.get().is_some()
}

fn spawn(program: &Path) -> std::io::Result<(Child, ChildStdin)> {
    let mut child = Command::new(program)
        .arg(SUBCOMMAND)
        .stdin(Stdio::piped())
        // Never the client's stdout: the client's reader must see end of file when toolrt exits.
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        // Its own group: a Ctrl-C or a kill of toolrt's group does not reach it.
        .process_group(0)
        .current_dir("/")
        .spawn()?;
    let stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("the watchdog has no stdin"))?;
    tracing::debug!(pid = child.id(), "watchdog started");
    Ok((child, stdin))
}

impl Watchdog {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn add(&self, pgid: u32) {
        let mut inner = self.lock();
        inner.live.insert(pgid);
        self.tell(&mut inner, format!("+{pgid}\n").as_bytes());
    }

    fn remove(&self, pgid: u32) {
        let mut inner = self.lock();
        if inner.live.remove(&pgid) {
            self.tell(&mut inner, format!("-{pgid}\n").as_bytes());
        }
    }

    /// Writes to the watchdog; if it is gone, starts another and tells it every live group.
    fn tell(&self, inner: &mut Inner, line: &[u8]) {
        if let Some(stdin) = inner.stdin.as_mut()
            && stdin.write_all(line).is_ok()
        {
            return;
        }
        // The watchdog died (or never started): reap it, start another, tell it everything.
        if let Some(mut old) = inner.child.take() {
            let _ = old.kill();
            let _ = old.wait();
        }
        inner.stdin = None;
        match spawn(&self.program) {
            Ok((child, mut stdin)) => {
                let all: String = inner.live.iter().map(|g| format!("+{g}\n")).collect();
                if stdin.write_all(all.as_bytes()).is_ok() {
                    tracing::warn!(
                        groups = inner.live.len(),
                        "the watchdog had died; a new one took over"
                    );
                    inner.child = Some(child);
                    inner.stdin = Some(stdin);
                }
            }
            Err(err) => {
                tracing::warn!(%err, "could not restart the watchdog: processes toolrt starts may outlive it if it is killed");
            }
        }
    }
}

/// A process group the watchdog kills if toolrt dies first; dropping it tells the watchdog the
/// group is done with (kill the group before dropping this).
#[derive(Debug)]
pub struct Watched(Option<u32>);

/// Records `pgid` with the watchdog (nothing if none was started).
pub fn track(pgid: u32) -> Watched {
    match WATCHDOG.get() {
        Some(dog) if pgid > 1 => {
            dog.add(pgid);
            Watched(Some(pgid))
        }
        _ => Watched(None),
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let (Some(pgid), Some(dog)) = (self.0.take(), WATCHDOG.get()) {
            dog.remove(pgid);
        }
    }
}

/// Ends the watchdog when toolrt exits normally: closing the pipe makes it kill whatever is
/// still recorded (normally nothing) and exit; it is then reaped, so no zombie is left.
pub fn stop() {
    if let Some(dog) = WATCHDOG.get() {
        let mut inner = dog.lock();
        inner.stdin = None;
        if let Some(mut child) = inner.child.take() {
            let _ = child.wait();
        }
    }
}

/// The watchdog itself (`toolrt __watchdog`): records the groups named on stdin until end of
/// file, then kills every one still recorded. Returns the exit status.
pub fn run() -> i32 {
    use nix::sys::signal::{SigSet, Signal};
    // Signals meant for toolrt (a terminal's Ctrl-C, `kill` by name) must not take the watchdog
    // with it before it has done its job; they stay pending until it exits.
    let mut blocked = SigSet::empty();
    for sig in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        blocked.add(sig);
    }
    if let Err(err) = blocked.thread_block() {
        eprintln!("toolrt watchdog: cannot block signals: {err}");
    }
    // Shown by `ps` and `top` instead of a second "toolrt".
    let _ = nix::sys::prctl::set_name(c"toolrt-watchdog");
    let mut groups: HashSet<u32> = HashSet::new();
    read_until_end(&mut groups);
    for pgid in groups {
        super::kill_group(pgid);
    }
    0
}

/// Applies one `+PGID` / `-PGID` line to `groups`; anything else is ignored.
fn apply(groups: &mut HashSet<u32>, line: &[u8]) {
    let Ok(text) = std::str::from_utf8(line) else {
        return;
    };
    let text = text.trim();
    let (add, number) = match text.split_at_checked(1) {
        Some(("+", n)) => (true, n),
        Some(("-", n)) => (false, n),
        _ => return,
    };
    let Ok(pgid) = number.parse::<u32>() else {
        return;
    };
    if add {
        groups.insert(pgid);
    } else {
        groups.remove(&pgid);
    }
}

/// Reads the groups from stdin until end of file, woken by every line: the way when stdin cannot
/// be made non-blocking.
fn read_woken(groups: &mut HashSet<u32>) {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        match lines.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => apply(groups, &line),
        }
    }
}

/// How often the watchdog reads what toolrt told it. It is not woken by each line (a wake-up of
/// another process per spawn and per end costs every command CPU on a busy machine), only by
/// toolrt's end; between reads the lines wait in the pipe, which holds thousands of them.
const DRAIN_EVERY_MS: u16 = 100;

/// Reads the groups from stdin until end of file, sleeping between reads: `poll` with no event
/// asked for wakes on the pipe's hang-up (toolrt gone) or the timeout, not on data.
fn read_until_end(groups: &mut HashSet<u32>) {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::io::Read;
    use std::os::fd::AsFd;
    let stdin = std::io::stdin();
    // Reads take what is there and never wait: the wait is the poll's.
    if fcntl(stdin.as_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).is_err() {
        return read_woken(groups);
    }
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::empty())];
        let hung_up = match poll(&mut fds, PollTimeout::from(DRAIN_EVERY_MS)) {
            Ok(_) => fds[0]
                .revents()
                .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR)),
            Err(nix::errno::Errno::EINTR) => false,
            Err(_) => true,
        };
        // Drain: after a hang-up the lines written before it are still in the pipe.
        let ended = loop {
            match stdin.lock().read(&mut chunk) {
                Ok(0) => break true,
                Ok(n) => pending.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break false,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break true,
            }
        };
        let complete = pending
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        for line in pending[..complete].split(|&b| b == b'\n') {
            apply(groups, line);
        }
        pending.drain(..complete);
        if ended || hung_up {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_table() {
        let mut groups = HashSet::from([7u32]);
        for (line, want) in [
            (&b"+12\n"[..], vec![7, 12]),
            (b"+13", vec![7, 12, 13]),
            (b"-7\n", vec![12, 13]),
            (b"-99\n", vec![12, 13]),
            (b"12\n", vec![12, 13]),
            (b"+x\n", vec![12, 13]),
            (b"+-3\n", vec![12, 13]),
            (b"\xff+4\n", vec![12, 13]),
            (b"", vec![12, 13]),
            (b"-13", vec![12]),
        ] {
            apply(&mut groups, line);
            let mut got: Vec<u32> = groups.iter().copied().collect();
            got.sort_unstable();
            assert_eq!(got, want, "after {:?}", String::from_utf8_lossy(line));
        }
    }
}
