//! Path normalisation shared by coercion, the permission engine and the tools, and what a path
//! resolves to through symlinks (asked of the node where the file is: here, or a worker).

use std::path::{Component, Path, PathBuf};

/// Deletes the folders in `tmp` named `<prefix><pid>` or `<prefix><pid>-…` that processes of
/// this user left when they were killed outright: those whose process is gone. Another user's
/// folders, and symlinks, are left alone.
pub(crate) fn sweep_dead_owners(tmp: &Path, prefix: &str) {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    for entry in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(pid) = (name.to_str())
            .and_then(|n| n.strip_prefix(prefix))
            .map(|rest| rest.split_once('-').map_or(rest, |(pid, _)| pid))
            .filter(|pid| pid.parse::<u32>().is_ok())
        else {
            continue;
        };
        let ours = std::fs::symlink_metadata(entry.path())
            .is_ok_and(|meta| meta.is_dir() && meta.uid() == me);
        if ours && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Makes `raw` absolute and normal: relative paths are joined to `cwd`, a leading `~` or `~/` is
/// the home directory, and `.`, `..` and repeated separators are folded away lexically (no file
/// system access, so a path that does not exist yet normalises too).
pub(crate) fn absolutize(raw: &str, cwd: &Path, home: &Path) -> PathBuf {
    normalize(&joined(raw, cwd, home))
}

/// [`absolutize`] with `..` undone as the kernel undoes it: from where the path before it
/// leads through its symlinks (`link/../x` is `x` beside the link's target, not beside the
/// link). What does not exist yet is folded lexically. For paths a process opens itself (shell
/// commands); the file tools open the lexical path.
pub(crate) fn absolutize_physical(raw: &str, cwd: &Path, home: &Path) -> PathBuf {
    physical(&joined(raw, cwd, home))
}

/// An absolute path with `.` and `..` folded as the kernel resolves them ([`absolutize_physical`]).
pub(crate) fn physical(path: &Path) -> PathBuf {
    if !path.is_absolute() {
        return normalize(path);
    }
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                if let Ok(real) = std::fs::canonicalize(&out) {
                    out = real;
                }
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

fn joined(raw: &str, cwd: &Path, home: &Path) -> PathBuf {
    if raw == "~" {
        home.to_path_buf()
    } else if let Some(rest) = raw.strip_prefix("~/") {
        home.join(rest)
    } else if Path::new(raw).is_absolute() {
        PathBuf::from(raw)
    } else {
        cwd.join(raw)
    }
}

/// Folds `.`, `..` and repeated separators out of a path lexically. `..` at the root stays at the
/// root.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    out.push("/");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(if path.is_absolute() { "/" } else { "." });
    }
    out
}

/// Creates `dir` and any missing parents, readable by their owner only (mode 700; folders that
/// exist are left as they are). Output folders: what toolrt saves may hold secrets.
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Creates a new output file `<prefix>-<random>.log` in `dir` (made private first) that stays
/// after the handle is dropped: a kept output outlives the call that wrote it. Blocking.
pub(crate) fn create_kept_log(
    dir: &Path,
    prefix: &str,
) -> std::io::Result<(std::fs::File, PathBuf)> {
    create_private_dir(dir)?;
    tempfile::Builder::new()
        .prefix(&format!("{prefix}-"))
        .suffix(".log")
        .tempfile_in(dir)?
        .keep()
        .map_err(|e| e.error)
}

/// `name` as part of a file name: its first 64 characters, each one that is not an ASCII
/// letter, digit, `-` or `_` replaced by `_` (an id from a client may hold `/` or `..`).
pub(crate) fn file_safe(name: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    (name.chars().take(64))
        .map(|c| if safe(c) { c } else { '_' })
        .collect()
}

/// The lexical path and every path it resolves to through symlinks. For a path that does not
/// exist yet the nearest existing ancestor is resolved and the rest appended; a dangling symlink
/// is followed by hand (its target is where a write would land).
pub(crate) fn candidates(path: &Path) -> Vec<PathBuf> {
    let lexical = normalize(path);
    let mut out = vec![lexical.clone()];
    resolve_into(&lexical, &mut out, 0);
    if out.len() > 1 && links_into_proc(&lexical) {
        // A symlink to `/proc/self/…` names what the process that opens it sees, which is not
        // what toolrt sees: a candidate nothing allows.
        out.push(PathBuf::from("/proc/self"));
    }
    out
}

/// Whether a symlink on the way to `path` points into `/proc` or `/dev/fd`.
fn links_into_proc(path: &Path) -> bool {
    let mut cur = PathBuf::from("/");
    for (n, comp) in path.iter().skip(1).enumerate() {
        if n > 64 {
            return true;
        }
        cur.push(comp);
        if let Ok(target) = std::fs::read_link(&cur) {
            let t = target.to_string_lossy();
            if t.starts_with("/proc") || t.starts_with("/dev/fd") || t.starts_with("/dev/std") {
                return true;
            }
            if target.is_relative() && t.contains("..") && cur.starts_with("/proc") {
                return true;
            }
        }
    }
    false
}

fn resolve_into(lexical: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    // Symlink chains longer than this fail in the kernel too (ELOOP is at 40).
    if depth > 8 {
        return;
    }
    let mut existing = lexical;
    let mut tail: Vec<&std::ffi::OsStr> = Vec::new();
    let with_tail = |mut base: PathBuf, tail: &[&std::ffi::OsStr]| {
        for part in tail.iter().rev() {
            base.push(part);
        }
        normalize(&base)
    };
    loop {
        let real = match symlink_free(existing) {
            // Nothing to follow: the path is its own resolution, and it is already in `out`.
            Some(true) if tail.is_empty() => return,
            Some(true) => Some(existing.to_path_buf()),
            // A component is missing and none before it is a symlink, so this path is not a
            // dangling symlink either: on to its parent.
            Some(false) => None,
            None => {
                let real = std::fs::canonicalize(existing).ok();
                let dangling = real.is_none()
                    && std::fs::symlink_metadata(existing).is_ok_and(|m| m.is_symlink());
                if dangling {
                    if let Ok(target) = std::fs::read_link(existing) {
                        let base = existing.parent().unwrap_or(Path::new("/"));
                        let full = with_tail(base.join(target), &tail);
                        if !out.contains(&full) {
                            out.push(full.clone());
                            resolve_into(&full, out, depth + 1);
                        }
                    }
                    return;
                }
                real
            }
        };
        if let Some(real) = real {
            let full = with_tail(real, &tail);
            if !out.contains(&full) {
                out.push(full);
            }
            return;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name);
                existing = parent;
            }
            _ => return,
        }
    }
}

/// Whether an absolute path exists without a symlink on it, in one system call (Linux's
/// `openat2` with `RESOLVE_NO_SYMLINKS`; an `O_PATH` open reads nothing, so even a FIFO is safe):
/// `Some(true)` if it exists and no component is a symlink, `Some(false)` if a component is
/// missing and none before it is a symlink, None when it cannot tell (a symlink on the way, an
/// older kernel, anything else). Resolving component by component costs one `readlink` per
/// component; this is the common case's shortcut, and None falls back to that.
#[cfg(target_os = "linux")]
fn symlink_free(path: &Path) -> Option<bool> {
    use nix::errno::Errno;
    use nix::fcntl::{AT_FDCWD, OFlag, OpenHow, ResolveFlag, openat2};
    if !path.is_absolute() {
        return None;
    }
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
    match openat2(AT_FDCWD, path, how) {
        Ok(_fd) => Some(true),
        Err(Errno::ENOENT) => Some(false),
        Err(_) => None,
    }
}

#[cfg(not(target_os = "linux"))]
fn symlink_free(_path: &Path) -> Option<bool> {
    None
}

pub(crate) use crate::session::home_dir;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_folders_of_dead_processes_of_this_user_are_swept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = |name: &str| {
            let path = tmp.path().join(name);
            std::fs::create_dir_all(path.join("inner")).unwrap();
            std::fs::write(path.join("inner/x.log"), "x").unwrap();
            path
        };
        // No process has a pid this large (the kernel's limit is 2^22).
        let dead = dir("toolrt-worker-4294967295");
        let dead_suffixed = dir("toolrt-worker-4294967293-aB3xYz");
        let alive = dir(&format!("toolrt-worker-{}", std::process::id()));
        let alive_suffixed = dir(&format!("toolrt-worker-{}-aB3xYz", std::process::id()));
        let other = dir("toolrt-worker-x");
        let other_prefix = dir("toolrt-sandbox-4294967295");
        let target = dir("elsewhere");
        let link = tmp.path().join("toolrt-worker-4294967294");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        sweep_dead_owners(tmp.path(), "toolrt-worker-");
        assert!(!dead.exists() && !dead_suffixed.exists());
        assert!(alive.exists() && alive_suffixed.exists());
        assert!(other.exists() && other_prefix.exists());
        assert!(target.join("inner/x.log").exists() && link.exists());
    }

    #[test]
    fn absolutize_table() {
        let cwd = Path::new("/work/proj");
        let home = Path::new("/home/u");
        for (raw, want) in [
            ("a.txt", "/work/proj/a.txt"),
            ("./a.txt", "/work/proj/a.txt"),
            ("../x/./y", "/work/x/y"),
            ("src//lib.rs", "/work/proj/src/lib.rs"),
            ("~", "/home/u"),
            ("~/notes.md", "/home/u/notes.md"),
            ("/etc/../etc//passwd", "/etc/passwd"),
            ("/../../x", "/x"),
            ("~user/x", "/work/proj/~user/x"),
        ] {
            assert_eq!(absolutize(raw, cwd, home), PathBuf::from(want), "{raw}");
        }
    }

    #[test]
    fn dot_dot_after_a_symlink_is_undone_from_its_target() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir_all(root.join("secret/inner")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::os::unix::fs::symlink("../secret/inner", root.join("sub/ln")).unwrap();
        let home = Path::new("/h");
        for (raw, want) in [
            ("sub/ln/../key", "secret/key"),
            ("sub/ln/./../../x", "x"),
            ("sub/../sub/ln/../key", "secret/key"),
            // what does not exist yet folds lexically
            ("sub/ln/new/../../key", "secret/key"),
            ("sub/none/../x", "sub/x"),
        ] {
            assert_eq!(
                absolutize_physical(raw, &root, home),
                root.join(want),
                "{raw}"
            );
        }
        assert_eq!(
            absolutize("sub/ln/../key", &root, home),
            root.join("sub/key")
        );
    }
}
