//! Special paths a shell command may name, and glob expansion at decision time.
//!
//! - `/dev/null` and friends are devices: reading or writing them touches no file.
//! - `/dev/stdin`, `/dev/fd/N`, `/proc/self/fd/N` are the command's own file descriptors: what
//!   they name was opened by a redirect (checked on its own) or a pipe.
//! - `/dev/tcp/HOST/PORT` and `/dev/udp/…` in a redirect are network connections bash opens
//!   itself.
//! - `/proc/self/cwd/…` and `/proc/self/root/…` name the command's working directory and `/`;
//!   they are resolved to what they name before any rule matches. `/proc/<pid>/…` names another
//!   process's view: never understood.

use std::path::{Path, PathBuf};

/// What a path names, before the file system is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Named {
    /// A file system path (absolute, normalised), with the command's cwd and home applied.
    File(PathBuf),
    /// A device that is not a file (`/dev/null`, `/dev/zero`, `/dev/urandom`, …).
    Device,
    /// One of the command's own file descriptors.
    Fd,
    /// A network endpoint (`/dev/tcp/host/port`).
    Net {
        /// `tcp` or `udp`.
        proto: &'static str,
        /// The host.
        host: String,
        /// The port.
        port: String,
    },
    /// Something toolrt cannot place (another process's `/proc` entry), and why.
    Unknown(String),
}

/// An absolute path that names no file: a device like `/dev/null` or one of the command's own
/// file descriptors.
pub(crate) fn not_a_file(path: &str) -> bool {
    matches!(
        name(path, Path::new("/"), Path::new("/")),
        Named::Device | Named::Fd
    ) && path.starts_with('/')
}

/// Where `/dev/tcp/…` points, if `path` is such a path.
pub(crate) fn network(path: &str) -> Option<(&'static str, String, String)> {
    let (proto, rest) = if let Some(r) = path.strip_prefix("/dev/tcp/") {
        ("tcp", r)
    } else if let Some(r) = path.strip_prefix("/dev/udp/") {
        ("udp", r)
    } else {
        return None;
    };
    let (host, port) = rest.split_once('/').unwrap_or((rest, ""));
    Some((proto, host.to_string(), port.to_string()))
}

/// What `path` (as a shell command run in `cwd` would see it) names. `cwd` and `home` are
/// absolute.
pub(crate) fn name(path: &str, cwd: &Path, home: &Path) -> Named {
    name_at(path, cwd, home, true)
}

/// [`name`], with `..` undone through this file system's symlinks (`physical`, as the kernel
/// does) or lexically (a path on another node).
pub(crate) fn name_at(path: &str, cwd: &Path, home: &Path, physical: bool) -> Named {
    if let Some((proto, host, port)) = network(path) {
        return Named::Net { proto, host, port };
    }
    // `/proc/self/cwd/..` is the parent of the cwd: map the magic link before `..` is folded,
    // and again as long as the result is another such link.
    let mut abs = match proc_self(path, cwd, physical) {
        Some(mapped) => mapped,
        // The process opening the path undoes `..` after symlinks are followed.
        None if physical => crate::paths::absolutize_physical(path, cwd, home),
        None => crate::paths::absolutize(path, cwd, home),
    };
    for _ in 0..8 {
        match proc_self(&abs.to_string_lossy(), cwd, physical) {
            Some(mapped) => abs = mapped,
            None => break,
        }
    }
    let s = abs.to_string_lossy();
    match s.as_ref() {
        "/dev/null" | "/dev/zero" | "/dev/full" | "/dev/random" | "/dev/urandom" => {
            return Named::Device;
        }
        "/dev/stdin" | "/dev/stdout" | "/dev/stderr" => return Named::Fd,
        _ => {}
    }
    // A descriptor itself is the command's own; a path *below* one (`/dev/fd/3/x` after
    // `3< dir`) is a file in whatever directory the descriptor holds.
    for prefix in ["/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"] {
        if let Some(rest) = s.strip_prefix(prefix) {
            return if !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit()) {
                Named::Fd
            } else {
                Named::Unknown(format!("{s} is a path below a file descriptor"))
            };
        }
    }
    if ["/dev/stdin/", "/dev/stdout/", "/dev/stderr/"]
        .iter()
        .any(|p| s.starts_with(p))
    {
        return Named::Unknown(format!("{s} is a path below a file descriptor"));
    }
    if let Some(rest) = s.strip_prefix("/proc/") {
        let (pid, tail) = rest.split_once('/').unwrap_or((rest, ""));
        let entry = tail.split('/').next().unwrap_or("");
        if pid.chars().all(|c| c.is_ascii_digit())
            && matches!(entry, "cwd" | "root" | "fd" | "map_files" | "exe")
        {
            return Named::Unknown(format!(
                "{s} names what another process sees, not a file toolrt can check"
            ));
        }
    }
    Named::File(abs)
}

/// `/proc/self/cwd/…` and `/proc/self/root/…` (or `thread-self`) as the path they name.
fn proc_self(path: &str, cwd: &Path, physical: bool) -> Option<PathBuf> {
    use std::path::Component;
    let mut comps = Path::new(path).components();
    if comps.next() != Some(Component::RootDir) {
        return None;
    }
    let names: Vec<Component<'_>> = comps.by_ref().take(3).collect();
    let base = match names.as_slice() {
        [
            Component::Normal(p),
            Component::Normal(s),
            Component::Normal(e),
        ] if *p == "proc" && (*s == "self" || *s == "thread-self") => {
            if *e == "cwd" {
                cwd.to_path_buf()
            } else if *e == "root" {
                PathBuf::from("/")
            } else {
                return None;
            }
        }
        _ => return None,
    };
    let joined = base.join(comps.as_path());
    Some(if physical {
        crate::paths::physical(&joined)
    } else {
        crate::paths::normalize(&joined)
    })
}

/// Expands a glob pattern (an absolute path with unquoted `*`, `?`, `[…]`) the way bash would
/// now: matches in sorted order, a leading `.` only matched explicitly, the pattern itself when
/// nothing matches. `None` when it would take more than `limit` directory entries or paths.
pub(crate) fn expand_glob(pattern: &Path, limit: usize) -> Option<Vec<PathBuf>> {
    let mut current = vec![PathBuf::from("/")];
    let mut budget = limit * 8;
    for comp in pattern.iter().skip(1) {
        let seg = comp.to_string_lossy();
        let mut next = Vec::new();
        if !super::word::has_glob(&seg) {
            for d in &current {
                next.push(d.join(comp));
            }
        } else {
            let matcher = globset::GlobBuilder::new(&seg)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .ok()?
                .compile_matcher();
            for d in &current {
                let Ok(entries) = std::fs::read_dir(d) else {
                    continue;
                };
                let mut found = Vec::new();
                for e in entries {
                    budget = budget.checked_sub(1)?;
                    let Ok(e) = e else { continue };
                    let name = e.file_name();
                    let n = name.to_string_lossy();
                    if n.starts_with('.') && !seg.starts_with('.') {
                        continue;
                    }
                    if matcher.is_match(n.as_ref()) {
                        found.push(d.join(&name));
                    }
                }
                found.sort();
                next.extend(found);
            }
        }
        if next.len() > limit {
            return None;
        }
        current = next;
    }
    if current.is_empty()
        || current
            .iter()
            .all(|p| std::fs::symlink_metadata(p).is_err())
    {
        // No match: bash passes the pattern on as it is.
        return Some(vec![pattern.to_path_buf()]);
    }
    current.retain(|p| std::fs::symlink_metadata(p).is_ok());
    Some(current)
}

/// The first match of the relative glob word `word` (expanded from `base`) that bash would hand
/// over as a word starting with `-`, which a program reads as an option.
pub(crate) fn option_like_match<'a>(
    word: &str,
    base: &Path,
    matches: &'a [PathBuf],
) -> Option<&'a PathBuf> {
    let first = word.split('/').next().unwrap_or("");
    if word.starts_with(['/', '~']) || !super::word::has_glob(first) {
        return None;
    }
    matches.iter().find(|m| {
        m.strip_prefix(base)
            .ok()
            .and_then(|rel| rel.iter().next())
            .is_some_and(|c| c.to_string_lossy().starts_with('-'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_table() {
        let cwd = Path::new("/w/p");
        let home = Path::new("/h");
        let f = |s: &str| Named::File(PathBuf::from(s));
        for (path, want) in [
            ("a.txt", f("/w/p/a.txt")),
            ("/dev/null", Named::Device),
            ("/dev/stdin", Named::Fd),
            ("/dev/fd/3", Named::Fd),
            ("/proc/self/fd/0", Named::Fd),
            ("/proc/self/cwd/.env", f("/w/p/.env")),
            ("/proc/thread-self/cwd/../x", f("/w/x")),
            ("/proc/self/root/etc/passwd", f("/etc/passwd")),
            ("/proc/self/environ", f("/proc/self/environ")),
            ("/proc/self/root/proc/self/cwd/.env", f("/w/p/.env")),
            ("~/.ssh/id", f("/h/.ssh/id")),
        ] {
            assert_eq!(name(path, cwd, home), want, "{path}");
        }
        for p in [
            "/proc/1/root/etc/shadow",
            "/proc/self/fd/3/.env",
            "/dev/fd/3/x",
            "/dev/stdin/.env",
        ] {
            assert!(matches!(name(p, cwd, home), Named::Unknown(_)), "{p}");
        }
        assert_eq!(
            name("/dev/tcp/evil.com/80", cwd, home),
            Named::Net {
                proto: "tcp",
                host: "evil.com".into(),
                port: "80".into()
            }
        );
    }

    #[test]
    fn glob_expansion() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        for f in ["a.rs", "b.rs", ".hidden.rs", "c.txt"] {
            std::fs::write(root.join(f), "").unwrap();
        }
        let got = expand_glob(&root.join("*.rs"), 100).unwrap();
        assert_eq!(got, vec![root.join("a.rs"), root.join("b.rs")]);
        let got = expand_glob(&root.join(".*.rs"), 100).unwrap();
        assert_eq!(got, vec![root.join(".hidden.rs")]);
        let got = expand_glob(&root.join("*.md"), 100).unwrap();
        assert_eq!(got, vec![root.join("*.md")]);
        assert!(expand_glob(&root.join("*"), 2).is_none());
    }

    #[test]
    fn option_like_matches() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        for f in ["a.rs", "-n.rs"] {
            std::fs::write(root.join(f), "").unwrap();
        }
        let found = expand_glob(&root.join("*.rs"), 100).unwrap();
        assert_eq!(
            option_like_match("*.rs", &root, &found),
            Some(&root.join("-n.rs"))
        );
        // `./-n.rs` is not an option.
        assert_eq!(option_like_match("./*.rs", &root, &found), None);
        let only_a = [root.join("a.rs")];
        assert_eq!(option_like_match("*.rs", &root, &only_a), None);
    }
}
