//! Path normalisation shared by coercion, the permission engine and the tools.

use std::path::{Component, Path, PathBuf};

/// Makes `raw` absolute and normal: relative paths are joined to `cwd`, a leading `~` or `~/` is
/// the home directory, and `.`, `..` and repeated separators are folded away lexically (no file
/// system access, so a path that does not exist yet normalises too).
pub(crate) fn absolutize(raw: &str, cwd: &Path, home: &Path) -> PathBuf {
    let joined = if raw == "~" {
        home.to_path_buf()
    } else if let Some(rest) = raw.strip_prefix("~/") {
        home.join(rest)
    } else if Path::new(raw).is_absolute() {
        PathBuf::from(raw)
    } else {
        cwd.join(raw)
    };
    normalize(&joined)
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

pub(crate) use crate::session::home_dir;

#[cfg(test)]
mod tests {
    use super::*;

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
}
