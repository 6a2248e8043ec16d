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
    /// The step before the write (its checkpoint) refused; the file was not changed.
    #[error("{0}")]
    Refused(String),
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
    match decided {
        Some(decided) => is_decided(&opened_path(file, path)?, path, decided),
        None => Ok(()),
    }
}

/// The kernel's name for the open `file` (opened through `path`).
fn opened_path(file: &impl AsRawFd, path: &Path) -> Result<PathBuf, FileError> {
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(|source| {
        FileError::Io {
            path: path.to_path_buf(),
            source,
        }
    })
}

fn is_decided(opened: &Path, path: &Path, decided: &[PathBuf]) -> Result<(), FileError> {
    if decided.iter().any(|d| d == opened) {
        Ok(())
    } else {
        Err(FileError::NotAsDecided {
            path: path.to_path_buf(),
            opened: opened.to_path_buf(),
        })
    }
}

/// What a write found, handed to its `before` step once the file is checked and before it is
/// changed: the file to be overwritten (open for reading too, at offset 0), or `None` when this
/// write created it; and the kernel's name for it (no symlink on it).
pub(crate) type Before<'a> =
    &'a mut dyn FnMut(Option<&mut std::fs::File>, &Path) -> Result<(), String>;

/// How often a write starts over when the file appears between its two opens.
const CREATE_TRIES: usize = 8;

/// Writes `bytes` to the regular file at `path`, created if missing, for a call whose
/// permission decision judged the paths `decided`: the file opened is checked
/// ([`check_decided`]) before anything is written, then `before` runs (the checkpoint: it
/// sees the very file that will change); a file this call created is removed again if either
/// refuses. A file is only ever created new (`O_EXCL`, which also refuses a symlink, even a
/// dangling one, at the last component): a name that appears between the two opens sends the
/// write back to the first, so a file reached through a symlink is always the one checked.
pub(crate) fn write_as_decided(
    path: &Path,
    bytes: &[u8],
    decided: Option<&[PathBuf]>,
    before: Before<'_>,
) -> Result<(), FileError> {
    use nix::errno::Errno;
    use nix::sys::stat::Mode;
    let io = |source: std::io::Error| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let nix_io = |e: Errno| io(std::io::Error::from(e));
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(FileError::NotRegular(path.to_path_buf()));
    };
    // The folder is opened once: the file is created in it, and a refused file removed from it
    // by name, whatever its path leads to by then.
    let dir = nix::fcntl::open(
        parent,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::ENOENT => FileError::NotFound(path.to_path_buf()),
        e => nix_io(e),
    })?;
    // Not truncated on opening: the file is checked first.
    let flags = OFlag::O_RDWR | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC;
    let mut tries = 0;
    let (mut file, created) = loop {
        match nix::fcntl::openat(&dir, name, flags, Mode::empty()) {
            Ok(fd) => break (std::fs::File::from(fd), false),
            Err(Errno::ENOENT) => {}
            Err(e) => return Err(nix_io(e)),
        }
        #[cfg(test)]
        tests::between_opens();
        let new = OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW;
        match nix::fcntl::openat(&dir, name, flags | new, Mode::from_bits_truncate(0o666)) {
            Ok(fd) => break (std::fs::File::from(fd), true),
            Err(Errno::EEXIST) if tries < CREATE_TRIES => tries += 1,
            Err(e) => return Err(nix_io(e)),
        }
    };
    let refused = |file: &std::fs::File, e: FileError| {
        if created {
            remove_created(&dir, name, file);
        }
        e
    };
    let opened = opened_path(&file, path).map_err(|e| refused(&file, e))?;
    if let Some(decided) = decided {
        is_decided(&opened, path, decided).map_err(|e| refused(&file, e))?;
    }
    if !file.metadata().map_err(io)?.is_file() {
        return Err(FileError::NotRegular(path.to_path_buf()));
    }
    let prior = (!created).then_some(&mut file);
    if let Err(e) = before(prior, &opened) {
        return Err(refused(&file, FileError::Refused(e)));
    }
    use std::io::Seek as _;
    file.seek(std::io::SeekFrom::Start(0)).map_err(io)?;
    file.set_len(0).map_err(io)?;
    std::io::Write::write_all(&mut file, bytes).map_err(io)
}

/// Removes `name` from `dir` if it is still the file this write created (`file`): by name in
/// the folder it was created in, so nothing a symlink leads to is ever removed.
fn remove_created(dir: &std::os::fd::OwnedFd, name: &std::ffi::OsStr, file: &std::fs::File) {
    use nix::sys::stat::{fstat, fstatat};
    let (Ok(mine), Ok(there)) = (
        fstat(file),
        fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW),
    ) else {
        return;
    };
    if (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino) {
        let _ = nix::unistd::unlinkat(dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir);
    }
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
    use std::cell::RefCell;

    thread_local! {
        /// Run once between a write's two opens: a test's rival making the name appear.
        static RIVAL: RefCell<Option<Box<dyn FnOnce()>>> = const { RefCell::new(None) };
    }

    pub(super) fn between_opens() {
        if let Some(rival) = RIVAL.with(|r| r.borrow_mut().take()) {
            rival();
        }
    }

    /// `write_as_decided` with no step before the write.
    fn write(path: &Path, bytes: &[u8], decided: Option<&[PathBuf]>) -> Result<(), FileError> {
        write_as_decided(path, bytes, decided, &mut |_, _| Ok(()))
    }

    /// A symlink to a file outside what was decided appears between the write's two opens
    /// (the name was missing at the first): the write neither writes through it nor removes
    /// the file it leads to.
    #[test]
    fn a_symlink_appearing_between_the_opens_is_neither_followed_nor_its_target_removed() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (victim, f) = (root.join("victim"), root.join("f"));
        std::fs::write(&victim, "precious").unwrap();
        let decided = crate::paths::candidates(&f);
        let (v, l) = (victim.clone(), f.clone());
        RIVAL.with(|r| {
            *r.borrow_mut() = Some(Box::new(move || {
                std::os::unix::fs::symlink(&v, &l).unwrap()
            }))
        });
        let wrote = write(&f, b"new", Some(&decided));
        assert!(
            matches!(&wrote, Err(FileError::NotAsDecided { opened, .. }) if *opened == victim),
            "{wrote:?}"
        );
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");

        // A refused checkpoint: the file this write created goes again, nothing else.
        std::fs::remove_file(&f).unwrap();
        let refused = write_as_decided(&f, b"x", Some(&decided), &mut |_, _| Err("no".into()));
        assert!(matches!(refused, Err(FileError::Refused(_))), "{refused:?}");
        assert!(!f.exists() && victim.exists());

        // The step before sees the file that will change, and its real name.
        std::fs::write(&victim, "old").unwrap();
        let mut seen = (String::new(), PathBuf::new());
        std::os::unix::fs::symlink(&victim, &f).unwrap();
        write_as_decided(&f, b"new", None, &mut |file, real| {
            std::io::Read::read_to_string(file.unwrap(), &mut seen.0).unwrap();
            seen.1 = real.to_path_buf();
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, ("old".to_string(), victim.clone()));
        assert_eq!(
            std::fs::read(&victim).unwrap(),
            b"new",
            "written from the start"
        );
    }

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
        write(&link, b"new", Some(&decided)).unwrap();
        assert_eq!(std::fs::read(&plain).unwrap(), b"new");

        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let read = read_regular_as_decided(&link, 100, Some(&decided));
        assert!(
            matches!(&read, Err(FileError::NotAsDecided { opened, .. }) if *opened == secret),
            "{read:?}"
        );
        // Its checkpoint is not taken either: it would save the secret's bytes.
        let mut before = |_: Option<&mut std::fs::File>, _: &Path| panic!("saved before the check");
        let wrote = write_as_decided(&link, b"PWNED", Some(&decided), &mut before);
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

        // A dangling link swapped to lead elsewhere: no file is made through it.
        let elsewhere = root.join("elsewhere");
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(root.join("meant"), &link).unwrap();
        let decided = crate::paths::candidates(&link);
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        let wrote = write(&link, b"x", Some(&decided));
        assert!(wrote.is_err(), "{wrote:?}");
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
