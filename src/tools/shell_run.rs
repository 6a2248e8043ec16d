//! Running a shell command to its end, shared by the Bash tool (in the foreground) and
//! background tasks: `bash -c` started through [`crate::process`], its output captured as it
//! arrives, its process group killed once the shell is done.

use std::future::pending;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use futures::FutureExt;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::capture::{Capture, Captured};
use crate::process::Group;
use crate::session::{Session, ShellLaunch};
use crate::tool::ProgressSink;

/// How often at most new output is streamed as a progress event (and flushed to the file).
const PROGRESS_EVERY: Duration = Duration::from_millis(200);
/// After the shell exits, how long to wait for its pipes to close: a process it started in the
/// background may hold them open forever.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// Starts `bash -c command` in the session's cwd, stdin from /dev/null, stdout and stderr
/// piped, with the environment every child of the session gets; in a process group of its own
/// that the watchdog knows of. With `sandbox`, bash is started by the sandbox helper, which
/// restricts itself first (so everything the command starts stays inside).
pub(crate) async fn spawn_shell(
    command: &str,
    session: &Session,
    sandbox: Option<&ShellLaunch>,
) -> std::io::Result<(Child, Group)> {
    let mut cmd = match sandbox {
        Some(launch) => {
            let mut cmd = Command::new(&launch.program);
            cmd.args(&launch.args).arg("--").arg("bash");
            cmd
        }
        None => {
            // Found once per session; `$0` stays `bash`, as when started by name.
            let mut cmd = Command::new(&session.shell);
            cmd.arg0("bash");
            cmd
        }
    };
    cmd.arg("-c")
        .arg(command)
        .current_dir(&session.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let extra = sandbox.map(|l| l.env.as_slice()).unwrap_or_default();
    crate::process::spawn(
        cmd,
        &session.env_remove,
        session.env.iter().chain(extra).map(|(k, v)| (k, v)),
        command,
    )
    .await
}

/// How a command run ended.
#[derive(Debug)]
pub(crate) enum Ending {
    /// The shell exited by itself.
    Exited(ExitStatus),
    /// The deadline passed; the group was killed.
    TimedOut,
    /// The token was cancelled; the group was killed.
    Cancelled,
    /// Waiting for the child failed.
    Lost(String),
}

impl std::fmt::Display for Ending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ending::Exited(status) => write!(f, "{status}"),
            Ending::TimedOut => f.write_str("timed out, group killed"),
            Ending::Cancelled => f.write_str("cancelled, group killed"),
            Ending::Lost(why) => write!(f, "lost: {why}"),
        }
    }
}

/// Runs `child` to its end, capturing its output, until it exits, `deadline` passes or `cancel`
/// fires. Its process group is killed in every case once the shell is done, so nothing it
/// started outlives the call (a command that must keep running belongs in the background).
pub(crate) async fn run_captured(
    mut child: Child,
    mut group: Group,
    mut capture: Capture,
    deadline: Option<Instant>,
    cancel: CancellationToken,
    progress: Option<&ProgressSink>,
) -> (Ending, Captured) {
    let pid = child.id();
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    // Room, not zeroed memory: a command that prints little never touches most of it.
    let mut buf_out = Vec::with_capacity(64 * 1024);
    let mut buf_err = Vec::with_capacity(64 * 1024);
    let mut exit: Option<ExitStatus> = None;
    let mut grace: Option<Instant> = None;
    // The first tick comes one period in: a command that finishes sooner streams nothing, since
    // its result carries all of its output anyway.
    let mut ticker = tokio::time::interval_at(Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    let mut streamed = false;
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Made once, not at every turn of the loop: a timer made anew is registered anew. Each is
    // polled until it fires, which ends the loop, so none is polled after it is done.
    let timeout = sleep_opt(deadline);
    let cancelled = cancel.cancelled();
    tokio::pin!(timeout, cancelled);
    let ending = loop {
        if out.is_none()
            && err.is_none()
            && let Some(status) = exit
        {
            break Ending::Exited(status);
        }
        tokio::select! {
            _ = &mut cancelled => break Ending::Cancelled,
            _ = &mut timeout => break Ending::TimedOut,
            _ = sleep_opt(grace) => {
                if let Some(status) = exit {
                    break Ending::Exited(status);
                }
            }
            r = read_opt(&mut out, &mut buf_out) => match r {
                Ok(n) if n > 0 => capture.push(&buf_out[..n]).await,
                _ => out = None,
            },
            r = read_opt(&mut err, &mut buf_err) => match r {
                Ok(n) if n > 0 => capture.push(&buf_err[..n]).await,
                _ => err = None,
            },
            status = child.wait(), if exit.is_none() => match status {
                Ok(status) => {
                    exit = Some(status);
                    // The pipes' end of file usually comes with the exit: take what they already
                    // hold, so that only a pipe still open (a background process holding it)
                    // needs the grace timer.
                    take_ready(&mut out, &mut buf_out, &mut capture).await;
                    take_ready(&mut err, &mut buf_err, &mut capture).await;
                    if out.is_some() || err.is_some() {
                        grace = Some(Instant::now() + EXIT_GRACE);
                    }
                }
                Err(e) => break Ending::Lost(e.to_string()),
            },
            // Only while there is output to flush or stream: a command that prints nothing
            // never puts the ticker in the timer wheel (nor wakes the runtime to do it).
            _ = ticker.tick(), if capture.has_unsent() => {
                // Readers of a background task's file (TaskOutput) see output within a tick.
                capture.flush().await;
                // While the client reads slowly, new output waits in the capture (bounded, with
                // a marker for what it skips) and goes out with a later update.
                if let Some(sink) = progress
                    && sink.has_room(capture.progress_len())
                    && let Some(text) = capture.take_progress()
                {
                    sink.send(json!({ "output": text }));
                    streamed = true;
                }
            }
        }
    };
    if exit.is_none() {
        crate::process::kill_and_reap(&mut group, &mut child).await;
    } else {
        group.kill();
    }
    tracing::debug!(pid, ending = %ending, "process ended");
    // Finish the stream for a client that has been following it.
    if streamed && let (Some(sink), Some(text)) = (progress, capture.take_progress()) {
        sink.send(json!({ "output": text }));
    }
    (ending, capture.finish().await)
}

async fn sleep_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => pending().await,
    }
}

/// One read of `r` if it is ready now, into the capture; `r` is gone at its end of file (or an
/// error).
async fn take_ready<R: AsyncRead + Unpin>(
    r: &mut Option<R>,
    buf: &mut Vec<u8>,
    capture: &mut Capture,
) {
    match read_opt(r, buf).now_or_never() {
        Some(Ok(n)) if n > 0 => capture.push(&buf[..n]).await,
        Some(_) => *r = None,
        None => {}
    }
}

/// Reads what is there into `buf`'s room (after emptying it); pending forever once `r` is gone.
async fn read_opt<R: AsyncRead + Unpin>(
    r: &mut Option<R>,
    buf: &mut Vec<u8>,
) -> std::io::Result<usize> {
    match r {
        Some(r) => {
            buf.clear();
            r.read_buf(buf).await
        }
        None => pending().await,
    }
}
