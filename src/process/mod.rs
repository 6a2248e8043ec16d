//! Every process toolrt starts — Bash commands, background tasks, command hooks, stdio MCP
//! servers (next: a sandbox) — starts here, the same way: in a process group of its own, recorded with
//! the [`watchdog`] from right after the spawn until the group is killed, with the environment
//! every child gets (toolrt's own minus the `toolrt.envScrub` names, then the settings' `env`).
//!
//! The spawn itself (fork and exec) runs on the blocking pool: on the pipeline's single thread
//! it would hold up every other call, and parallel commands would start one after another.

pub mod watchdog;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

/// The names of toolrt's own environment variables that match one of the `patterns`
/// (`toolrt.envScrub`: globs over names, `*` any run of characters, `?` exactly one; any other
/// character stands for itself). toolrt's environment does not change while it runs, so this is
/// worked out once per session.
pub fn scrubbed_names(patterns: &[String]) -> Vec<OsString> {
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

/// Where a child with the environment `remove` / `set` (as [`spawn`] gives it) would find the
/// program `name`: the first executable `name` in the directories of its `PATH`, as `execvp`
/// searches them. The bare `name` when that is not certain — no `PATH`, a relative or empty
/// entry (the child's own folder) before the hit, or no hit at all — so the child searches as
/// it always did.
///
/// Why: a child started by name tries `execve` in every `PATH` directory before the right one,
/// and those failed attempts cost each command tens of microseconds of CPU (docs/BENCH.md,
/// "Bash found once per session").
pub(crate) fn find_program(name: &str, remove: &[OsString], set: &[(String, String)]) -> PathBuf {
    let path = match set.iter().rev().find(|(k, _)| k == "PATH") {
        Some((_, v)) => Some(OsString::from(v)),
        None if remove.iter().any(|k| k == "PATH") => None,
        None => std::env::var_os("PATH"),
    };
    path.and_then(|path| search_path(name, &path))
        .unwrap_or_else(|| PathBuf::from(name))
}

fn search_path(name: &str, path: &OsStr) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    if name.is_empty() || name.contains('/') {
        return None;
    }
    for dir in path.as_bytes().split(|&b| b == b':') {
        let dir = Path::new(OsStr::from_bytes(dir));
        if !dir.is_absolute() {
            return None;
        }
        let candidate = dir.join(name);
        let is_file = std::fs::metadata(&candidate).is_ok_and(|m| m.is_file());
        if is_file && nix::unistd::access(&candidate, nix::unistd::AccessFlags::X_OK).is_ok() {
            return Some(candidate);
        }
    }
    None
}

/// Starts `cmd` in a process group of its own, with `remove` taken out of the environment it
/// inherits and then `set` set; the group is recorded with the watchdog before this returns.
/// `label` names the process in debug logs (its first 200 characters).
///
/// If this future is dropped while the spawn runs, the new group is killed.
pub(crate) async fn spawn<K, V>(
    mut cmd: Command,
    remove: &[OsString],
    set: impl IntoIterator<Item = (K, V)>,
    label: &str,
) -> std::io::Result<(Child, Group)>
where
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    cmd.process_group(0);
    for name in remove {
        cmd.env_remove(name);
    }
    cmd.envs(set);
    let shown: String = label.chars().take(200).collect();
    let spawned = tokio::task::spawn_blocking(move || {
        let child = cmd.spawn()?;
        // At once, before anything else can happen: if toolrt dies from here on, the watchdog
        // kills the group. A child without a pid has already been reaped.
        let group = Group::new(child.id().unwrap_or(0));
        Ok::<_, std::io::Error>((child, group))
    })
    .await
    .map_err(std::io::Error::other)??;
    tracing::debug!(
        pid = spawned.0.id(),
        command = shown.as_str(),
        "process started"
    );
    Ok(spawned)
}

/// Sends SIGKILL to the process group `pgid`. A group that no longer exists is fine.
pub(crate) fn kill_group(pgid: u32) {
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

/// A process group toolrt started: killed when dropped (a call whose future is dropped midway
/// must not leave its processes running), and known to the watchdog while it lives, so it is
/// killed even if toolrt dies first.
#[derive(Debug)]
pub(crate) struct Group {
    pgid: Option<u32>,
    watched: Option<watchdog::Watched>,
}

impl Group {
    /// Guards the group `pgid` and records it with the watchdog.
    fn new(pgid: u32) -> Self {
        Self {
            pgid: (pgid > 1).then_some(pgid),
            watched: Some(watchdog::track(pgid)),
        }
    }

    /// The group guarded, until it is killed.
    pub(crate) fn pgid(&self) -> Option<u32> {
        self.pgid
    }

    /// Kills the group now (then the watchdog forgets it); later calls and the drop do nothing.
    pub(crate) fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid);
        }
        self.watched.take();
    }
}

impl Group {
    /// Lets the group live on (the watchdog forgets it): for what a hook detached on purpose.
    pub(crate) fn release(&mut self) {
        self.pgid.take();
        self.watched.take();
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Kills `group` and reaps its leader `child`, which SIGKILL makes quick; without the reap the
/// leader would linger as a zombie.
pub(crate) async fn kill_and_reap(group: &mut Group, child: &mut Child) {
    group.kill();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), child.wait()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

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
            // Not a glob character here: brackets and braces are themselves.
            ("[AB]_KEY", "A_KEY", false),
            ("[AB]_KEY", "[AB]_KEY", true),
            ("{A,B}", "A", false),
        ] {
            assert_eq!(glob_match(p, n), want, "{p} vs {n}");
        }
    }

    #[test]
    fn a_program_is_found_as_execvp_would_find_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (plain, exec) = (dir.path().join("plain"), dir.path().join("exec"));
        std::fs::create_dir_all(&plain).unwrap();
        std::fs::create_dir_all(&exec).unwrap();
        // Not executable: execvp would go on to the next directory, and so does the search.
        std::fs::write(plain.join("prog"), "#!/bin/sh\n").unwrap();
        std::fs::write(exec.join("prog"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(exec.join("prog"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let path = |dirs: &[&str]| OsString::from(dirs.join(":"));
        let (p, e) = (plain.to_str().unwrap(), exec.to_str().unwrap());
        assert_eq!(
            search_path("prog", &path(&["/nonexistent", p, e])),
            Some(exec.join("prog"))
        );
        assert_eq!(search_path("prog", &path(&[p])), None, "no executable one");
        // The child's own folder (a relative or empty entry) comes first: leave it to the child.
        assert_eq!(search_path("prog", &path(&["bin", e])), None);
        assert_eq!(search_path("prog", &path(&["", e])), None);
        // An entry after the hit does not matter.
        assert_eq!(
            search_path("prog", &path(&[e, "bin"])),
            Some(exec.join("prog"))
        );
        assert_eq!(
            search_path("a/prog", &path(&[e])),
            None,
            "a path is not searched"
        );
        assert_eq!(search_path("", &path(&[e])), None);
    }

    #[test]
    fn the_childrens_path_decides_where_a_program_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::copy("/bin/sh", bin.join("sh")).unwrap();
        let set = [("PATH".to_string(), bin.to_str().unwrap().to_string())];
        assert_eq!(
            find_program("sh", &[], &set),
            bin.join("sh"),
            "settings' PATH"
        );
        let removed = [OsString::from("PATH")];
        assert_eq!(
            find_program("sh", &removed, &[]),
            PathBuf::from("sh"),
            "no PATH"
        );
        assert_eq!(
            find_program("no-such-program-here", &[], &set),
            PathBuf::from("no-such-program-here")
        );
    }

    #[tokio::test]
    async fn a_child_runs_in_its_own_group_with_the_environment_given() {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "echo \"$(cut -d' ' -f5 /proc/$$/stat) ${HOME:-unset} $TOOLRT_SET\"",
        ])
        .stdout(std::process::Stdio::piped());
        let remove = [OsString::from("HOME")];
        let (child, mut group) = spawn(cmd, &remove, [("TOOLRT_SET", "yes")], "test")
            .await
            .unwrap();
        let pid = child.id().unwrap();
        let out = child.wait_with_output().await.unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let words: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(
            words,
            vec![pid.to_string().as_str(), "unset", "yes"],
            "{text}"
        );
        assert_eq!(group.pgid(), Some(pid));
        group.kill();
        assert_eq!(group.pgid(), None);
    }
}
