//! A stdio MCP server's process: spawned by toolrt itself (own process group, recorded with the
//! watchdog, an environment built from nothing), its stderr kept in a bounded ring, its exit
//! status watched (its group killed as soon as it exits), and its stdout cut off when one
//! message grows past a cap.

use std::ffi::OsString;
use std::path::Path;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, ReadBuf};
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use crate::process::Group;

/// Variables a stdio server inherits from toolrt's environment, when set (and not scrubbed):
/// what a program needs to find its interpreter and behave, nothing that could be a secret.
pub(crate) const BASE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",
    "TZ",
];

/// How many bytes of a server's stderr are kept (the last ones).
pub(crate) const STDERR_KEPT: usize = 16 * 1024;

/// The environment of a stdio server: [`BASE_ENV`] from toolrt's own environment minus names
/// `scrub` matches, then the settings' `env`, then the server's own `env`.
pub(crate) fn server_env(
    scrub: &[String],
    settings_env: &[(String, String)],
    server_env: &[(String, String)],
) -> Vec<(OsString, OsString)> {
    let scrubbed = crate::process::scrubbed_names(scrub);
    let mut env: Vec<(OsString, OsString)> = BASE_ENV
        .iter()
        .filter(|name| !scrubbed.iter().any(|s| s == *name))
        .filter_map(|name| std::env::var_os(name).map(|v| (OsString::from(name), v)))
        .collect();
    for (k, v) in settings_env.iter().chain(server_env) {
        env.retain(|(name, _)| name != k.as_str());
        env.push((k.into(), v.into()));
    }
    env
}

/// The last bytes a server wrote to stderr, and how many it wrote in all.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    buf: Vec<u8>,
    total: u64,
}

impl Tail {
    /// Appends `bytes`, keeping only the last [`STDERR_KEPT`].
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if bytes.len() >= STDERR_KEPT {
            self.buf.clear();
            self.buf
                .extend_from_slice(&bytes[bytes.len() - STDERR_KEPT..]);
            return;
        }
        let over = (self.buf.len() + bytes.len()).saturating_sub(STDERR_KEPT);
        self.buf.drain(..over);
        self.buf.extend_from_slice(bytes);
    }

    /// The last `n` lines (each cut at 300 characters), or None if nothing was written.
    pub(crate) fn last_lines(&self, n: usize) -> Option<String> {
        let text = String::from_utf8_lossy(&self.buf);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        if lines.is_empty() {
            return None;
        }
        let shown: Vec<String> = lines[lines.len().saturating_sub(n)..]
            .iter()
            .map(|l| crate::budget::take_chars(l, 300).to_string())
            .collect();
        Some(shown.join("\n"))
    }
}

/// A running stdio server process.
pub(crate) struct ServerProcess {
    /// Its pid (and process group).
    pub pid: u32,
    /// Its exit, described ("exit status 3", "killed by signal 9"), once it has exited.
    pub exit: watch::Receiver<Option<String>>,
    /// Its stderr, bounded.
    pub stderr: Arc<Mutex<Tail>>,
    /// Set when the stdout cap cut the connection: why.
    pub overflow: Arc<Mutex<Option<String>>>,
    /// Shared with the task that waits for its exit, which kills the group then.
    guard: Arc<Mutex<Option<Group>>>,
}

impl std::fmt::Debug for ServerProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerProcess")
            .field("pid", &self.pid)
            .finish()
    }
}

/// What [`spawn`] hands back besides the process: its pipes for the MCP transport.
pub(crate) struct Pipes {
    /// The server's stdout, cut off at the message cap.
    pub stdout: LineCap<ChildStdout>,
    /// The server's stdin.
    pub stdin: ChildStdin,
}

/// Starts `command args` in `cwd` with exactly `env`, in a process group of its own recorded
/// with the watchdog; stdout over `line_cap` bytes without a newline fails the pipe.
pub(crate) async fn spawn(
    command: &str,
    args: &[String],
    env: &[(OsString, OsString)],
    cwd: &Path,
    line_cap: usize,
) -> std::io::Result<(ServerProcess, Pipes)> {
    let mut cmd = Command::new(command);
    cmd.args(args)
        .env_clear()
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The one way toolrt starts processes: own group, recorded with the watchdog at once.
    let (mut child, guard) =
        crate::process::spawn(cmd, &[], env.iter().map(|(k, v)| (k, v)), command).await?;
    let pid = child
        .id()
        .ok_or_else(|| std::io::Error::other("the server exited before it could be watched"))?;
    let (Some(stdout), Some(stdin), Some(mut err)) =
        (child.stdout.take(), child.stdin.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("the server's pipes are missing"));
    };
    let stderr = Arc::new(Mutex::new(Tail::default()));
    let sink = stderr.clone();
    let (err_done_tx, mut err_done) = watch::channel(false);
    tokio::spawn(async move {
        let mut chunk = vec![0u8; 8192];
        while let Ok(n) = err.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(&chunk[..n]);
        }
        let _ = err_done_tx.send(true);
    });
    let guard = Arc::new(Mutex::new(Some(guard)));
    let group = guard.clone();
    let (exit_tx, exit) = watch::channel(None);
    tokio::spawn(async move {
        let status = child.wait().await;
        // The server is gone: so is whatever it left running in its group (a browser it
        // launched, say). Such a process inherited its stdout and stderr, and would hold them
        // open — and the server's calls waiting for their end of file — for as long as it runs.
        if let Some(mut group) = group.lock().unwrap_or_else(|e| e.into_inner()).take() {
            group.kill();
        }
        // What it wrote last before exiting is often why: let the reader drain the pipe
        // (bounded, in case a grandchild keeps it open).
        let _ = tokio::time::timeout(
            std::time::Duration::from_millis(500),
            err_done.wait_for(|done| *done),
        )
        .await;
        let text = match status {
            Ok(s) => describe_exit(s),
            Err(e) => format!("could not be waited for: {e}"),
        };
        let _ = exit_tx.send(Some(text));
    });
    let overflow = Arc::new(Mutex::new(None));
    tracing::debug!(pid, command, "MCP server started");
    Ok((
        ServerProcess {
            pid,
            exit,
            stderr,
            overflow: overflow.clone(),
            guard,
        },
        Pipes {
            stdout: LineCap {
                inner: stdout,
                since_newline: 0,
                cap: line_cap,
                overflow,
            },
            stdin,
        },
    ))
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => status.to_string(),
    }
}

impl ServerProcess {
    /// How it exited, if it has.
    pub(crate) fn exited(&self) -> Option<String> {
        self.exit.borrow().clone()
    }

    /// Waits up to `limit` for it to exit; its exit, if it did.
    pub(crate) async fn wait_exit(&self, limit: std::time::Duration) -> Option<String> {
        let mut exit = self.exit.clone();
        let _ = tokio::time::timeout(limit, exit.wait_for(Option::is_some)).await;
        self.exited()
    }

    /// The last lines of its stderr.
    pub(crate) fn stderr_lines(&self, n: usize) -> Option<String> {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .last_lines(n)
    }

    /// Sends `signal` to its whole group (not after [`ServerProcess::kill`], nor once it exited).
    pub(crate) fn signal(&self, signal: nix::sys::signal::Signal) {
        let guard = self.guard.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pgid) = guard.as_ref().and_then(Group::pgid)
            && let Ok(raw) = i32::try_from(pgid)
            && raw > 1
        {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(raw), signal);
        }
    }

    /// Kills its whole group with SIGKILL; the watchdog then forgets it.
    pub(crate) fn kill(&self) {
        if let Some(mut guard) = self.guard.lock().unwrap_or_else(|e| e.into_inner()).take() {
            guard.kill();
        }
    }
}

/// A reader that fails once a line grows past `cap` bytes: rmcp would drop such a line
/// silently and leave its call waiting, so the pipe is failed instead and every call in flight
/// ends at once (docs/SEMANTICS.md, "MCP servers").
pub(crate) struct LineCap<R> {
    inner: R,
    since_newline: usize,
    cap: usize,
    overflow: Arc<Mutex<Option<String>>>,
}

impl<R: AsyncRead + Unpin> AsyncRead for LineCap<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let new = &buf.filled()[before..];
            let since = match new.iter().rposition(|b| *b == b'\n') {
                Some(i) => new.len() - i - 1,
                None => self.since_newline + new.len(),
            };
            self.since_newline = since;
            if since > self.cap {
                let why = format!("it wrote a message over {} MiB", self.cap >> 20);
                *self.overflow.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.clone());
                // A read that fails hands over nothing (AsyncRead's contract; tokio checks it).
                buf.set_filled(before);
                return Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    why,
                )));
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_bytes() {
        let mut t = Tail::default();
        assert_eq!(t.last_lines(3), None);
        for i in 0..5000 {
            t.push(format!("line {i}\n").as_bytes());
        }
        assert!(t.buf.len() <= STDERR_KEPT);
        assert_eq!(t.last_lines(2).unwrap(), "line 4998\nline 4999");
        t.push(&vec![b'x'; STDERR_KEPT * 3]);
        assert_eq!(t.buf.len(), STDERR_KEPT);
        assert!(t.total > (STDERR_KEPT * 3) as u64);
    }

    #[tokio::test]
    async fn line_cap_fails_the_pipe() {
        let overflow = Arc::new(Mutex::new(None));
        let data = [b"short\n".as_slice(), &vec![b'y'; 3 << 20]].concat();
        let mut capped = LineCap {
            inner: data.as_slice(),
            since_newline: 0,
            cap: 1 << 20,
            overflow: overflow.clone(),
        };
        let mut out = Vec::new();
        let err = capped.read_to_end(&mut out).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
        assert_eq!(
            overflow.lock().unwrap().as_deref(),
            Some("it wrote a message over 1 MiB")
        );
        let mut fine = LineCap {
            inner: b"a\nb\n".as_slice(),
            since_newline: 0,
            cap: 1,
            overflow,
        };
        let mut out = Vec::new();
        fine.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, b"a\nb\n");
    }

    #[test]
    fn env_is_built_from_nothing() {
        let env = server_env(
            &["HOME".into()],
            &[("A".into(), "settings".into()), ("B".into(), "b".into())],
            &[("A".into(), "server".into())],
        );
        let names: Vec<&str> = env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
        assert!(!names.contains(&"HOME"), "scrubbed: {names:?}");
        assert!(
            names
                .iter()
                .all(|n| BASE_ENV.contains(n) || ["A", "B"].contains(n))
        );
        let a: Vec<_> = env.iter().filter(|(k, _)| k == "A").collect();
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].1, "server");
    }
}
