//! Reading what a path names, bounded: only regular files, never more than a limit.
//!
//! A path may name a device (`/dev/zero` never ends), a FIFO (opening it waits for a writer, and
//! reading it for data), a socket or toolrt's own stdin (`/dev/stdin`). Length checks on the
//! path's metadata do not help: those report length 0. So every tool that reads a file's bytes
//! opens it without waiting (`O_NONBLOCK`, which a regular file ignores), checks what the open
//! handle is, and reads at most one byte over its limit.

use std::io::Read as _;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

/// Why a file's bytes could not be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileError {
    /// Nothing at the path.
    #[error("{} does not exist", .0.display())]
    NotFound(std::path::PathBuf),
    /// A device, FIFO, socket or folder.
    #[error(
        "{} is not a regular file (a device, FIFO, socket or folder): only regular files are read or changed",
        .0.display()
    )]
    NotRegular(std::path::PathBuf),
    /// Longer than the caller's limit.
    #[error("{} is larger than {limit} bytes", .path.display())]
    TooLarge {
        /// The file.
        path: std::path::PathBuf,
        /// The caller's limit.
        limit: u64,
    },
    /// The file opened through the path is not one its permission decision judged.
    #[error(
        "{} now leads to {}, which is not the file the permission decision was about (a symlink \
         on its way changed since); nothing was read or written. Send the call again to have it \
         decided anew",
        .path.display(),
        .opened.display()
    )]
    NotAsDecided {
        /// The call's path.
        path: std::path::PathBuf,
        /// The file it led to when opened.
        opened: std::path::PathBuf,
    },
    /// Any other failure to open or read.
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
}

/// Opens `path` for reading if it is a regular file (following symlinks), without waiting on a
/// FIFO and without making a terminal toolrt's own.
pub(crate) fn open_regular(path: &Path) -> Result<std::fs::File, FileError> {
    let io = |source: std::io::Error| match source.kind() {
        std::io::ErrorKind::NotFound => FileError::NotFound(path.to_path_buf()),
        _ => FileError::Io {
            path: path.to_path_buf(),
            source,
        },
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)
        .map_err(io)?;
    if !file.metadata().map_err(io)?.is_file() {
        return Err(FileError::NotRegular(path.to_path_buf()));
    }
    Ok(file)
}

/// The bytes of the regular file at `path`, at most `limit` of them (a longer file is
/// [`FileError::TooLarge`], whatever its metadata said a moment earlier).
pub(crate) fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    read_limited(open_regular(path)?, path, limit)
}

/// [`read_regular`], for a call whose permission decision judged the paths `decided`: the file
/// opened must be one of them ([`check_decided`]).
pub(crate) fn read_regular_as_decided(
    path: &Path,
    limit: u64,
    decided: Option<&[PathBuf]>,
) -> Result<Vec<u8>, FileError> {
    let file = open_regular(path)?;
    check_decided(&file, path, decided)?;
    read_limited(file, path, limit)
}

/// Checks that `file`, opened through `path`, is one of the paths the call's permission
/// decision judged (the kernel's name for the open file: a symlink swapped between the
/// decision and the open leads elsewhere). Nothing decided: nothing to check.
pub(crate) fn check_decided(
    file: &std::fs::File,
    path: &Path,
    decided: Option<&[PathBuf]>,
) -> Result<(), FileError> {
    let Some(decided) = decided else {
        return Ok(());
    };
    let opened =
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(|source| {
            FileError::Io {
                path: path.to_path_buf(),
                source,
            }
        })?;
    if decided.contains(&opened) {
        Ok(())
    } else {
        Err(FileError::NotAsDecided {
            path: path.to_path_buf(),
            opened,
        })
    }
}

/// Writes `bytes` to the regular file at `path`, created if missing, for a call whose
/// permission decision judged the paths `decided`: the file opened is checked
/// ([`check_decided`]) before anything is written, and one this call created where the decision
/// did not look is removed again.
pub(crate) fn write_as_decided(
    path: &Path,
    bytes: &[u8],
    decided: Option<&[PathBuf]>,
) -> Result<(), FileError> {
    let io = |source: std::io::Error| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Not truncated on opening: the file is checked first.
    let flags = (OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits();
    let existing = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(flags)
        .open(path);
    let (mut file, created) = match existing {
        Ok(file) => (file, false),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Through a dangling symlink too, as a write lands there (the decision looked).
            let new = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .custom_flags(flags)
                .open(path)
                .map_err(io)?;
            (new, true)
        }
        Err(e) => return Err(io(e)),
    };
    if let Err(e) = check_decided(&file, path, decided) {
        if let (true, FileError::NotAsDecided { opened, .. }) = (created, &e) {
            let _ = std::fs::remove_file(opened);
        }
        return Err(e);
    }
    if !file.metadata().map_err(io)?.is_file() {
        return Err(FileError::NotRegular(path.to_path_buf()));
    }
    file.set_len(0).map_err(io)?;
    std::io::Write::write_all(&mut file, bytes).map_err(io)
}

/// At most `limit` bytes of `file` (more is [`FileError::TooLarge`]).
fn read_limited(file: std::fs::File, path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| FileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A symlink swapped after the decision (it judged `link` → `plain`; it now leads to
    /// `secret`): nothing is read, nothing written, and a file the write would have created
    /// where the decision did not look is gone again.
    #[test]
    fn a_file_that_is_not_the_decided_one_is_neither_read_nor_written() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (plain, secret, link) = (root.join("plain"), root.join("secret"), root.join("link"));
        std::fs::write(&plain, "plain").unwrap();
        std::fs::write(&secret, "SECRET").unwrap();
        std::os::unix::fs::symlink(&plain, &link).unwrap();
        let decided = crate::paths::candidates(&link);
        assert_eq!(decided, vec![link.clone(), plain.clone()]);
        assert_eq!(
            read_regular_as_decided(&link, 100, Some(&decided)).unwrap(),
            b"plain"
        );
        write_as_decided(&link, b"new", Some(&decided)).unwrap();
        assert_eq!(std::fs::read(&plain).unwrap(), b"new");

        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let read = read_regular_as_decided(&link, 100, Some(&decided));
        assert!(
            matches!(&read, Err(FileError::NotAsDecided { opened, .. }) if *opened == secret),
            "{read:?}"
        );
        let wrote = write_as_decided(&link, b"PWNED", Some(&decided));
        assert!(
            matches!(wrote, Err(FileError::NotAsDecided { .. })),
            "{wrote:?}"
        );
        assert_eq!(std::fs::read(&secret).unwrap(), b"SECRET");
        // Nothing decided (no decision about a path): as before.
        assert_eq!(
            read_regular_as_decided(&link, 100, None).unwrap(),
            b"SECRET"
        );

        // A dangling link swapped to lead elsewhere: the file it made is removed.
        let elsewhere = root.join("elsewhere");
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(root.join("meant"), &link).unwrap();
        let decided = crate::paths::candidates(&link);
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        let wrote = write_as_decided(&link, b"x", Some(&decided));
        assert!(
            matches!(wrote, Err(FileError::NotAsDecided { .. })),
            "{wrote:?}"
        );
        assert!(!elsewhere.exists() && !root.join("meant").exists());
    }

    /// A path, a limit, and the bytes or the error text wanted.
    type Case<'a> = (&'a Path, u64, Result<&'a [u8], &'a str>);

    #[test]
    fn regular_files_only_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "12345").unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let cases: [Case; 6] = [
            (&file, 5, Ok(b"12345")),
            (&file, 4, Err("larger than 4 bytes")),
            (&fifo, 100, Err("not a regular file")),
            (Path::new("/dev/zero"), 100, Err("not a regular file")),
            (dir.path(), 100, Err("not a regular file")),
            (&dir.path().join("none"), 100, Err("does not exist")),
        ];
        for (path, limit, want) in cases {
            match (read_regular(path, limit), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{}", path.display()),
                (Err(e), Err(want)) => {
                    assert!(e.to_string().contains(want), "{}: {e}", path.display())
                }
                (got, want) => panic!("{}: got {got:?}, want {want:?}", path.display()),
            }
        }
    }
}
