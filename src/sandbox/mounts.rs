//! The session's mount table, read-only but for the writable roots (compiled into both
//! binaries, as `exec`: std and nix only).
//!
//! Landlock does not cover changing a file's mode, owner, timestamps or extended attributes, so
//! without this a sandboxed command could `chmod` or `setfattr` any file its user owns
//! anywhere. A read-only mount refuses all of them (`EROFS`), whatever the file; writing a
//! device (`/dev/null`) is not refused by it. The holder makes every mount of the session's
//! mount namespace read-only, then binds each writable root back read-write over itself.

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sys::statvfs::{FsFlags, statvfs};

/// Makes every mount reachable in this (private) mount namespace read-only. Checked after:
/// each mount point must then be read-only or no longer reachable by its path (covered by a
/// later mount, or gone), else the boundary cannot be set up.
pub(crate) fn read_only_everywhere() -> Result<(), String> {
    let table = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read the mount table: {e}"))?;
    let mut points: Vec<PathBuf> = table.lines().filter_map(mount_point).collect();
    points.sort();
    points.dedup();
    for point in &points {
        // A covered mount's path leads to another mount (or nowhere); the check below judges.
        let _ = remount(point, MsFlags::MS_RDONLY);
    }
    for point in &points {
        match statvfs(point.as_path()) {
            Ok(s) if s.flags().contains(FsFlags::ST_RDONLY) => {}
            Err(nix::Error::ENOENT) | Err(nix::Error::ENOTDIR) => {}
            Ok(_) => {
                return Err(format!(
                    "cannot make the mount at {} read-only in the sandbox",
                    point.display()
                ));
            }
            Err(e) => {
                return Err(format!(
                    "cannot check the mount at {}: {e}",
                    point.display()
                ));
            }
        }
    }
    Ok(())
}

/// Binds `path` over itself read-write (in a namespace where everything else is read-only).
/// Parents first: a root inside another is bound after it, so its own bind is on top.
pub(crate) fn bind_writable(path: &Path) -> Result<(), nix::Error> {
    mount(
        Some(path),
        path,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )?;
    remount(path, MsFlags::empty())
}

/// Changes the flags of the mount at `target` (a bind remount: the mount's, not its file
/// system's) to `extra` plus the flags the kernel locks in a user namespace (nosuid, nodev,
/// noexec, atime), which must be kept or the remount is refused.
pub(crate) fn remount(target: &Path, extra: MsFlags) -> Result<(), nix::Error> {
    mount(
        None::<&str>,
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REMOUNT | locked_flags(target) | extra,
        None::<&str>,
    )
}

/// The flags of the mount at `target` that a remount must keep.
fn locked_flags(target: &Path) -> MsFlags {
    let flags = statvfs(target)
        .map(|s| s.flags())
        .unwrap_or(FsFlags::empty());
    let mut keep = MsFlags::empty();
    for (fs, ms) in [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ] {
        if flags.contains(fs) {
            keep |= ms;
        }
    }
    keep
}

/// The mount point of one `/proc/self/mountinfo` line (its fifth field, octal escapes read).
fn mount_point(line: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let field = line.split(' ').nth(4)?;
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escape = bytes.get(i + 1..i + 4).filter(|_| bytes[i] == b'\\');
        match escape.and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok()) {
            Some(b) => {
                out.push(b);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_read_with_their_escapes() {
        let line = "36 35 98:0 /mnt1 /mnt/a\\040b rw,noatime master:1 - ext3 /dev/root rw";
        assert_eq!(mount_point(line), Some(PathBuf::from("/mnt/a b")));
        let line = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw";
        assert_eq!(mount_point(line), Some(PathBuf::from("/")));
        assert_eq!(mount_point("short line"), None);
    }
}
