//! Spawning shell commands in their own process group, killing that group, and scrubbing the
//! environment. Hooks use [`scrubbed_vars`] too, so every child process loses the same names.

use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;

use globset::{Glob, GlobSetBuilder};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

/// The names of the current process's environment variables that match one of the glob
/// `patterns` (settings `env.scrub`, e.g. `*_TOKEN`). A pattern that is not a valid glob matches
/// its literal text only, so a typo never scrubs everything nor nothing silently.
pub fn scrubbed_vars(patterns: &[String]) -> Vec<OsString> {
    if patterns.is_empty() {
        return Vec::new();
    }
    let mut builder = GlobSetBuilder::new();
    let mut literals = Vec::new();
    for pattern in patterns {
        match Glob::new(pattern) {
            Ok(glob) => {
                builder.add(glob);
            }
            Err(err) => {
                tracing::warn!(%pattern, %err, "env.scrub pattern is not a valid glob; matching it literally");
                literals.push(pattern.as_str());
            }
        }
    }
    let set = match builder.build() {
        Ok(set) => set,
        Err(err) => {
            tracing::warn!(%err, "env.scrub patterns could not be compiled");
            return Vec::new();
        }
    };
    std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| {
            let text = name.to_string_lossy();
            set.is_match(text.as_ref()) || literals.contains(&text.as_ref())
        })
        .collect()
}

/// A `bash -c command` child in its own process group (so the whole group can be killed), in
/// `cwd`, stdin from /dev/null, stdout and stderr piped, with the scrubbed variables removed and
/// then the settings' `env` variables set; and the guard of its group, already known to the
/// watchdog.
pub fn spawn_shell(
    command: &str,
    cwd: &Path,
    env_scrub: &[String],
    env: &[(String, String)],
) -> std::io::Result<(Child, Option<GroupGuard>)> {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for name in scrubbed_vars(env_scrub) {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let child = cmd.spawn()?;
    // At once, before anything else can happen: if toolrt dies from here on, the watchdog
    // kills the group.
    let guard = child.id().map(GroupGuard::new);
    // A command may be megabytes long; its start is enough to tell which one it is.
    let shown = command
        .char_indices()
        .nth(200)
        .map_or(command, |(end, _)| &command[..end]);
    tracing::debug!(pid = child.id(), command = shown, "process started");
    Ok((child, guard))
}

/// Sends SIGKILL to the process group `pgid`. A group that no longer exists is fine.
pub fn kill_group(pgid: u32) {
    let Ok(raw) = i32::try_from(pgid) else {
        return;
    };
    // pgid 0 or 1 would signal our own group or init's; never do that.
    if raw <= 1 {
        return;
    }
    if let Err(err) = killpg(Pid::from_raw(raw), Signal::SIGKILL)
        && err != nix::errno::Errno::ESRCH
    {
        tracing::warn!(pgid, %err, "could not kill process group");
    }
}

/// Kills a process group when dropped: a Bash call whose future is dropped midway (its task
/// aborted) must not leave its processes running. The group is known to the watchdog while the
/// guard lives, so it is killed even if toolrt dies first.
#[derive(Debug)]
pub struct GroupGuard {
    pgid: Option<u32>,
    watched: Option<crate::watchdog::Watched>,
}

impl GroupGuard {
    /// Guards the group `pgid` and records it with the watchdog.
    pub fn new(pgid: u32) -> Self {
        Self {
            pgid: Some(pgid),
            watched: Some(crate::watchdog::track(pgid)),
        }
    }

    /// The group guarded, until it is killed.
    pub fn pgid(&self) -> Option<u32> {
        self.pgid
    }

    /// Kills the group now (then the watchdog forgets it); later calls and the drop do nothing.
    pub fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid);
        }
        self.watched.take();
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}
