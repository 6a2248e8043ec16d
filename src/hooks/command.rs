//! Running one command hook: `sh -c` in its own process group, stdin fed and closed, stdout and
//! stderr captured with a bound, the whole group killed at timeout, on cancellation and when the
//! run is dropped.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// At most this many bytes of each of stdout and stderr are kept; the rest is read and dropped
/// so the hook never blocks on a full pipe and toolrt's memory stays bounded.
pub(crate) const CAPTURE_LIMIT: usize = 1 << 20;

/// After the shell exits, how long children still holding its stdout/stderr may keep writing
/// before the group is killed and the shell's exit status and output so far are used. Without
/// it, `cmd &` in a hook would hold the call until the hook's timeout.
const POST_EXIT_GRACE: Duration = Duration::from_secs(2);

/// What a command hook run produced, before the protocol reads it.
#[derive(Debug)]
pub(crate) enum CommandRun {
    /// The shell exited with a code.
    Exited {
        code: i32,
        stdout: String,
        stderr: String,
        dropped: u64,
    },
    /// The shell was killed by a signal (not by us).
    Signalled {
        signal: i32,
        stderr: String,
        dropped: u64,
    },
    /// It could not be started (fails open).
    SpawnFailed(String),
    /// Killed at its timeout.
    TimedOut,
    /// Killed because the call was cancelled.
    Cancelled,
}

/// Everything one spawn needs.
pub(crate) struct CommandSpec<'a> {
    pub(crate) command: &'a str,
    pub(crate) cwd: &'a Path,
    pub(crate) project_dir: &'a Path,
    pub(crate) env_remove: &'a [OsString],
    pub(crate) stdin: &'a [u8],
    pub(crate) timeout: Duration,
    pub(crate) cancel: &'a CancellationToken,
}

/// Kills the process group when dropped: after a normal exit it removes strays the hook left
/// behind, and when the run future is dropped mid-way it kills the whole hook.
struct GroupGuard(i32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        // ESRCH (group already gone) is the normal case.
        let _ = killpg(Pid::from_raw(self.0), Signal::SIGKILL);
    }
}

/// Runs one command hook to completion, timeout or cancellation.
pub(crate) async fn run(spec: CommandSpec<'_>) -> CommandRun {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(spec.command)
        .current_dir(spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: no terminal signals from ours, and one killpg reaches its
        // children too.
        .process_group(0)
        .kill_on_drop(true);
    for name in spec.env_remove {
        cmd.env_remove(name);
    }
    cmd.env("CLAUDE_PROJECT_DIR", spec.project_dir)
        .env("TOOLRT_PROJECT_DIR", spec.project_dir);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return CommandRun::SpawnFailed(format!("cannot start hook: {e}")),
    };
    let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) else {
        return CommandRun::SpawnFailed("hook exited before it could be tracked".into());
    };
    // Known to the watchdog until the guard below has killed the group (dropped after it).
    let _watched = crate::watchdog::track(pid as u32);
    let _guard = GroupGuard(pid);
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return CommandRun::SpawnFailed("hook pipes unavailable".into());
    };

    // Written concurrently with reading, so a hook that prints before it reads cannot deadlock;
    // errors (EPIPE from a hook that closed stdin or never reads) are ignored on purpose.
    let writer = async move {
        let _ = stdin.write_all(spec.stdin).await;
        // Closing stdin is what tells a hook reading to EOF that the input is complete.
        drop(stdin);
    };
    enum Ended {
        Exited(std::io::Result<std::process::ExitStatus>),
        TimedOut,
        Cancelled,
    }
    let mut out = Capture::default();
    let mut err = Capture::default();
    let ended = {
        let mut writer = std::pin::pin!(writer);
        let mut out_fut = std::pin::pin!(capture(stdout, &mut out));
        let mut err_fut = std::pin::pin!(capture(stderr, &mut err));
        let mut wait_fut = std::pin::pin!(child.wait());
        let deadline = tokio::time::Instant::now() + spec.timeout;
        let mut sleep = std::pin::pin!(tokio::time::sleep_until(deadline));
        let (mut writer_done, mut out_done, mut err_done) = (false, false, false);
        let mut status = None;
        loop {
            if out_done
                && err_done
                && let Some(st) = status.take()
            {
                break Ended::Exited(st);
            }
            tokio::select! {
                biased;
                _ = spec.cancel.cancelled() => break Ended::Cancelled,
                _ = &mut sleep => match status.take() {
                    // The shell finished in time; only a straggler holds the pipes.
                    Some(st) => break Ended::Exited(st),
                    None => break Ended::TimedOut,
                },
                st = &mut wait_fut, if status.is_none() => {
                    status = Some(st);
                    // Children may still hold the pipes (their output counts), but not for
                    // long: the shell's exit status is already the hook's answer.
                    let grace = tokio::time::Instant::now() + POST_EXIT_GRACE;
                    sleep.as_mut().reset(grace.min(deadline));
                }
                _ = &mut out_fut, if !out_done => out_done = true,
                _ = &mut err_fut, if !err_done => err_done = true,
                _ = &mut writer, if !writer_done => writer_done = true,
            }
        }
    };
    let status = match ended {
        Ended::Exited(st) => st,
        Ended::TimedOut => {
            kill_and_reap(pid, &mut child).await;
            return CommandRun::TimedOut;
        }
        Ended::Cancelled => {
            kill_and_reap(pid, &mut child).await;
            return CommandRun::Cancelled;
        }
    };
    let (out, err) = ((out.kept, out.dropped), (err.kept, err.dropped));
    let dropped = out.1 + err.1;
    if dropped > 0 {
        tracing::warn!(
            command = spec.command,
            dropped,
            "hook output over the capture limit dropped"
        );
    }
    let mut stderr = String::from_utf8_lossy(&err.0).into_owned();
    if err.1 > 0 {
        stderr.push_str(&format!("\n[toolrt: {} bytes of stderr dropped]", err.1));
    }
    match status {
        Ok(st) => {
            use std::os::unix::process::ExitStatusExt;
            match (st.code(), st.signal()) {
                (Some(code), _) => CommandRun::Exited {
                    code,
                    stdout: String::from_utf8_lossy(&out.0).into_owned(),
                    stderr,
                    dropped,
                },
                (None, Some(signal)) => CommandRun::Signalled {
                    signal,
                    stderr,
                    dropped,
                },
                (None, None) => CommandRun::SpawnFailed("hook ended without a status".into()),
            }
        }
        Err(e) => CommandRun::SpawnFailed(format!("cannot wait for hook: {e}")),
    }
}

async fn kill_and_reap(pid: i32, child: &mut tokio::process::Child) {
    let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    // The shell dies at once after SIGKILL; reaping it avoids a zombie.
    let _ = child.wait().await;
}

/// What one pipe produced: the first [`CAPTURE_LIMIT`] bytes, and how many more were dropped.
#[derive(Default)]
struct Capture {
    kept: Vec<u8>,
    dropped: u64,
}

/// Reads `pipe` to EOF into `cap`. What was read stays in `cap` if the read is abandoned (a
/// straggler child still holding the pipe when the hook is done).
async fn capture(mut pipe: impl AsyncRead + Unpin, cap: &mut Capture) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = CAPTURE_LIMIT.saturating_sub(cap.kept.len());
                let keep = n.min(room);
                cap.kept.extend_from_slice(&buf[..keep]);
                cap.dropped += (n - keep) as u64;
            }
        }
    }
}

/// The names of the current environment's variables that match any of the `patterns` (globs
/// over names: `*` any run, `?` one character), computed once per runner.
pub(crate) fn scrubbed_names(patterns: &[String]) -> Vec<OsString> {
    if patterns.is_empty() {
        return Vec::new();
    }
    std::env::vars_os()
        .map(|(k, _)| k)
        .filter(|k| {
            let name = k.to_string_lossy();
            patterns.iter().any(|p| glob_match(p, &name))
        })
        .collect()
}

/// Glob match of a whole name: `*` matches any run of characters, `?` exactly one.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative matcher with one backtrack point: linear in practice, no recursion.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn glob_table() {
        for (p, n, want) in [
            ("*_TOKEN", "GITHUB_TOKEN", true),
            ("*_TOKEN", "GITHUB_TOKENS", false),
            ("*_TOKEN", "_TOKEN", true),
            ("AWS_*", "AWS_SECRET_ACCESS_KEY", true),
            ("AWS_*", "MY_AWS_KEY", false),
            ("*SECRET*", "AWS_SECRET_ACCESS_KEY", true),
            ("HOME", "HOME", true),
            ("HOME", "HOMEX", false),
            ("A?C", "ABC", true),
            ("A?C", "AC", false),
            ("*", "", true),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
        ] {
            assert_eq!(glob_match(p, n), want, "{p} vs {n}");
        }
    }
}
