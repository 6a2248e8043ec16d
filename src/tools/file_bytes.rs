//! Reading what a path names, bounded: only regular files, never more than a limit.
//!
//! A path may name a device (`/dev/zero` never ends), a FIFO (opening it waits for a writer, and
//! reading it for data), a socket or toolrt's own stdin (`/dev/stdin`). Length checks on the
//! path's metadata do not help: those report length 0. So every tool that reads a file's bytes
//! opens it without waiting (`O_NONBLOCK`, which a regular file ignores), checks what the open
//! handle is, and reads at most one byte over its limit.

use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

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
    let file = open_regular(path)?;
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
