//! Running one command hook: a shell (or, in exec form, the program itself) in its own process
//! group, stdin fed and closed, stdout and stderr captured with a bound, the whole group killed
//! at timeout, on cancellation and when the run is dropped.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

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
    /// The program: a shell, or the exec-form `command`.
    pub(crate) program: &'a OsStr,
    /// Its arguments (`-c <command>` for a shell).
    pub(crate) args: &'a [OsString],
    /// What logs call it.
    pub(crate) label: &'a str,
    pub(crate) cwd: &'a Path,
    /// Removed from the inherited environment first.
    pub(crate) env_remove: &'a [OsString],
    /// Then set (settings `env`, `CLAUDE_PROJECT_DIR`, plugin directories, …).
    pub(crate) env_set: &'a [(OsString, OsString)],
    pub(crate) stdin: &'a [u8],
    pub(crate) timeout: Duration,
    pub(crate) cancel: &'a CancellationToken,
}

/// Runs one command hook to completion, timeout or cancellation.
pub(crate) async fn run(spec: CommandSpec<'_>) -> CommandRun {
    let mut cmd = Command::new(spec.program);
    cmd.args(spec.args)
        .current_dir(spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own process group (no terminal signals from ours, one kill reaches its children too),
    // killed when this run ends: after a normal exit that removes strays still holding the
    // hook's pipes, and when the run future is dropped midway it kills the whole hook. A job the
    // hook fully detached (its output redirected, so both pipes closed when the hook exited)
    // is let live, as the reference CLI lets it.
    let spawned = crate::process::spawn(
        cmd,
        spec.env_remove,
        spec.env_set.iter().map(|(k, v)| (k, v)),
        spec.label,
    )
    .await;
    let (mut child, mut group) = match spawned {
        Ok(spawned) => spawned,
        Err(e) => {
            return CommandRun::SpawnFailed(format!(
                "cannot start {}: {e}",
                spec.program.to_string_lossy()
            ));
        }
    };
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
    let mut out = Capture::default();
    let mut err = Capture::default();
    let ended = supervise(
        &spec,
        &mut child,
        writer,
        (stdout, stderr),
        (&mut out, &mut err),
    )
    .await;
    let status = match ended {
        Ended::Exited(st, pipes_closed) => {
            if pipes_closed {
                group.release();
            }
            st
        }
        Ended::TimedOut => {
            crate::process::kill_and_reap(&mut group, &mut child).await;
            return CommandRun::TimedOut;
        }
        Ended::Cancelled => {
            crate::process::kill_and_reap(&mut group, &mut child).await;
            return CommandRun::Cancelled;
        }
    };
    exited(status, out, err, spec.label)
}

/// How a hook run ended.
enum Ended {
    /// The hook exited; `true`: nothing held its pipes any more (else a straggler did, past
    /// the grace).
    Exited(std::io::Result<std::process::ExitStatus>, bool),
    TimedOut,
    Cancelled,
}

/// Feeds the hook its input and captures its output until it exits (and its pipes close, or
/// a short grace passes), its timeout passes, or the call is cancelled.
async fn supervise(
    spec: &CommandSpec<'_>,
    child: &mut tokio::process::Child,
    writer: impl std::future::Future<Output = ()>,
    (stdout, stderr): (impl AsyncRead + Unpin, impl AsyncRead + Unpin),
    (out, err): (&mut Capture, &mut Capture),
) -> Ended {
    let mut writer = std::pin::pin!(writer);
    let mut out_fut = std::pin::pin!(capture(stdout, out));
    let mut err_fut = std::pin::pin!(capture(stderr, err));
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
            break Ended::Exited(st, true);
        }
        tokio::select! {
            biased;
            _ = spec.cancel.cancelled() => break Ended::Cancelled,
            _ = &mut sleep => match status.take() {
                // The shell finished in time; only a straggler holds the pipes.
                Some(st) => break Ended::Exited(st, false),
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
}

/// The run's result from the hook's exit status and what it printed.
fn exited(
    status: std::io::Result<std::process::ExitStatus>,
    out: Capture,
    err: Capture,
    label: &str,
) -> CommandRun {
    let (out, err) = ((out.kept, out.dropped), (err.kept, err.dropped));
    let dropped = out.1 + err.1;
    if dropped > 0 {
        tracing::warn!(
            command = label,
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

/// The program a shell-form hook with `shell: "bash"` runs through: the user's `$SHELL` when it
/// is bash, zsh or sh (by its file name), else `/bin/sh`.
pub(crate) fn user_shell(shell_var: Option<&OsStr>) -> PathBuf {
    if let Some(shell) = shell_var {
        let path = Path::new(shell);
        let name = path.file_name().and_then(OsStr::to_str).unwrap_or("");
        if path.is_absolute() && matches!(name, "bash" | "zsh" | "sh") {
            return path.to_path_buf();
        }
    }
    PathBuf::from("/bin/sh")
}

/// How long a syntax check (`shell -n`) may take.
const SYNTAX_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether the shell reports a syntax error in the text of `command` itself: `<shell> -n -c`
/// parses without running anything. Only the command line is checked, never the text of a script
/// it runs: a script's interpreter reads it as it goes (a `shopt -s extglob` changes how the rest
/// parses; an error after the `exit 2` it reaches is never read), so a script that exits 2 ran
/// and asked to block. Errs on the side of "no syntax error" when the check itself cannot run.
pub(crate) async fn has_syntax_error(shell: &Path, command: &str, cwd: &Path) -> bool {
    let mut cmd = Command::new(shell);
    cmd.args(["-n", "-c", command])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let label = format!("{} -n (syntax check)", shell.display());
    // `-n` runs nothing, so the child needs no particular environment.
    let none: [(&str, &str); 0] = [];
    let Ok((mut child, _group)) = crate::process::spawn(cmd, &[], none, &label).await else {
        return false;
    };
    match tokio::time::timeout(SYNTAX_CHECK_TIMEOUT, child.wait()).await {
        Ok(Ok(status)) => !status.success(),
        _ => false,
    }
}

/// Whether `stderr` holds the shell's own report of a syntax error in its `-c` text: bash's
/// `<shell>: -c: line N: syntax error…`, dash's `<shell>: N: Syntax error: …`, zsh's
/// `zsh:N: parse error…`. A script's interpreter names the script instead, so a script that
/// fails to parse mid-run (it ran) never matches.
pub(crate) fn shell_reported_syntax_error(shell: &Path, stderr: &str) -> bool {
    let full = shell.to_string_lossy();
    let name = shell.file_name().and_then(OsStr::to_str).unwrap_or("");
    stderr.lines().any(|line| {
        let rest = [full.as_ref(), name]
            .into_iter()
            .filter(|p| !p.is_empty())
            .find_map(|p| line.strip_prefix(p).and_then(|r| r.strip_prefix(':')));
        let Some(rest) = rest else {
            return false;
        };
        let rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("-c: line ") {
            return r.contains("syntax error");
        }
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        digits > 0 && {
            let r = rest[digits..].trim_start_matches(':').trim_start();
            r.starts_with("Syntax error") || r.starts_with("parse error")
        }
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_shell_table() {
        for (var, want) in [
            (Some("/bin/bash"), "/bin/bash"),
            (Some("/usr/bin/zsh"), "/usr/bin/zsh"),
            (Some("/bin/sh"), "/bin/sh"),
            (Some("/usr/bin/fish"), "/bin/sh"),
            (Some("/bin/dash"), "/bin/sh"),
            (Some("bash"), "/bin/sh"),
            (Some(""), "/bin/sh"),
            (None, "/bin/sh"),
        ] {
            assert_eq!(
                user_shell(var.map(OsStr::new)),
                PathBuf::from(want),
                "{var:?}"
            );
        }
    }

    #[tokio::test]
    async fn syntax_errors_of_the_shell_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let sh = Path::new("/bin/sh");
        assert!(has_syntax_error(sh, "if then fi", dir.path()).await);
        assert!(!has_syntax_error(sh, "exit 2", dir.path()).await);
        // A script's own text is never checked: its interpreter reads it as it runs it.
        std::fs::write(dir.path().join("bad.sh"), "#!/bin/sh\nif then\n").unwrap();
        std::fs::write(
            dir.path().join("extglob.sh"),
            "#!/bin/bash\nshopt -s extglob\ncase x in @(a|b)) ;; esac\nexit 2\n",
        )
        .unwrap();
        assert!(!has_syntax_error(sh, "./bad.sh", dir.path()).await);
        assert!(!has_syntax_error(sh, "'./bad.sh'", dir.path()).await);
        assert!(!has_syntax_error(sh, "./extglob.sh", dir.path()).await);
        assert!(!has_syntax_error(sh, "./missing.sh", dir.path()).await);
    }

    #[test]
    fn only_the_shells_own_parse_report_counts() {
        let bash = Path::new("/bin/bash");
        let dash = Path::new("/bin/sh");
        let zsh = Path::new("/usr/bin/zsh");
        for (shell, stderr, want) in [
            (
                bash,
                "/bin/bash: -c: line 1: syntax error near unexpected token `then'",
                true,
            ),
            (
                bash,
                "bash: -c: line 2: syntax error: unexpected end of file",
                true,
            ),
            (dash, "/bin/sh: 1: Syntax error: \"then\" unexpected", true),
            (zsh, "zsh:1: parse error near `then'", true),
            // A script's interpreter names the script: it ran.
            (
                bash,
                "/x/guard.sh: line 9: syntax error near unexpected token `('",
                false,
            ),
            (
                dash,
                "./bad.sh: 2: Syntax error: \"then\" unexpected",
                false,
            ),
            (bash, "Blocked: rm keep.txt", false),
            (bash, "/bin/bash: line 1: foo: command not found", false),
            (bash, "", false),
        ] {
            assert_eq!(shell_reported_syntax_error(shell, stderr), want, "{stderr}");
        }
    }
}
