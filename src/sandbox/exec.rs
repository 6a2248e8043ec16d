//! `toolrt sandbox-exec --policy JSON -- bash -c …`: the process restricts itself, then the
//! binary execs the command, which inherits every restriction (so do its children).
//!
//! # Order
//! 1. The session's user and network namespaces, made once by the holder (`holder`), joined
//!    (`setns`); then a mount namespace of its own (`unshare`). The network namespace has only
//!    a loopback, on which the holder relays `127.0.0.1:PROXY_PORT` to toolrt's proxy.
//! 2. Mounts, private to the new namespace: each `deny_write` path bound onto itself read-only;
//!    each `deny_read` path covered by an empty stand-in the command may not open (mode 000,
//!    read-only). Landlock alone cannot take a path back out of a folder it allows.
//! 3. Landlock: reads everywhere, writes only below `write` (and `/dev/null`); signals and
//!    abstract sockets scoped to the sandbox (ABI 6). Landlock also forbids the command to
//!    mount or unmount, so step 2 cannot be undone.
//! 4. Every capability dropped (bounding set included): a command started as root keeps no
//!    power over its namespaces.
//!
//! Everything here must run before any thread exists: `unshare` of a user namespace refuses a
//! multi-threaded process. `main` calls it first thing.

use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, LandlockStatus, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, setns, unshare};
use nix::sys::statvfs::{FsFlags, statvfs};

use super::{ExecPolicy, Join};

/// The Landlock ABI whose rights are asked for; older kernels give what they have (best
/// effort), and the report says which ABI is in force.
const TARGET: ABI = ABI::V6;

/// Restricts this process as `policy` (JSON) says. Returns what is enforced, in words
/// (`Landlock ABI V7, fully enforced; …`), or why the boundary cannot be set up.
pub fn restrict(policy: &str) -> Result<String, String> {
    let policy: ExecPolicy =
        serde_json::from_str(policy).map_err(|e| format!("unreadable --policy: {e}"))?;
    let join = policy
        .join
        .as_ref()
        .ok_or("the policy names no namespace holder to join")?;
    join_holder(join)?;
    unshare(CloneFlags::CLONE_NEWNS)
        .map_err(|e| format!("cannot create a mount namespace: {e}"))?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make the mounts private: {e}"))?;
    // Read-only first: a denied read inside a denied write is then still found.
    for path in &policy.deny_write {
        if path.exists() && policy.write.iter().any(|w| path.starts_with(w)) {
            bind_read_only(path, path)?;
        }
    }
    for path in &policy.deny_read {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        let stand_in = if meta.is_dir() {
            &policy.stand_in_dir
        } else {
            &policy.stand_in_file
        };
        bind_read_only(stand_in, path)?;
    }
    let report = landlock(&policy)?;
    drop_capabilities()?;
    Ok(format!(
        "{report}; the session's user and network namespaces, own mount namespace"
    ))
}

/// Joins the holder's user namespace, then its network namespace, each checked to be the one
/// the holder had when it started (a recycled pid names other namespaces).
fn join_holder(join: &Join) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    for (kind, inode, flag) in [
        ("user", join.user, CloneFlags::CLONE_NEWUSER),
        ("net", join.net, CloneFlags::CLONE_NEWNET),
    ] {
        let path = format!("/proc/{}/ns/{kind}", join.pid);
        let file = std::fs::File::open(&path)
            .map_err(|e| format!("the sandbox's namespace holder is gone ({path}: {e})"))?;
        let found = file.metadata().map(|m| m.ino()).unwrap_or(0);
        if found != inode {
            return Err(format!(
                "the sandbox's namespace holder is gone ({path} is another namespace)"
            ));
        }
        setns(&file, flag)
            .map_err(|e| format!("cannot join the sandbox's {kind} namespace: {e}"))?;
    }
    Ok(())
}

/// Binds `source` onto `target`, read-only, keeping the flags the kernel locks in a user
/// namespace (nosuid, nodev, noexec, atime) or the remount is refused.
fn bind_read_only(source: &Path, target: &Path) -> Result<(), String> {
    let fail = |e: nix::Error| format!("cannot protect {}: {e}", target.display());
    mount(
        Some(source),
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(fail)?;
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
    mount(
        None::<&str>,
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | keep,
        None::<&str>,
    )
    .map_err(fail)
}

/// Landlock: read and execute everywhere, write only below the writable paths.
fn landlock(policy: &ExecPolicy) -> Result<String, String> {
    let fail = |e: landlock::RulesetError| format!("Landlock: {e}");
    let all = AccessFs::from_all(TARGET);
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(fail)?
        .scope(Scope::from_all(TARGET))
        .map_err(fail)?
        .create()
        .map_err(fail)?;
    let root = PathFd::new("/").map_err(|e| format!("Landlock: {e}"))?;
    ruleset = ruleset
        .add_rule(PathBeneath::new(root, AccessFs::from_read(TARGET)))
        .map_err(fail)?;
    let writable = policy
        .write
        .iter()
        .map(|p| p.as_path())
        .chain([Path::new("/dev/null")]);
    for path in writable {
        // A path that does not exist (yet) grants nothing; it cannot be created either.
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        let Ok(fd) = PathFd::new(path) else { continue };
        let rights = if meta.is_dir() {
            all
        } else {
            AccessFs::from_file(TARGET)
        };
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, rights))
            .map_err(fail)?;
    }
    let status = ruleset.restrict_self().map_err(fail)?;
    let abi = match status.landlock {
        LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => match kernel_abi {
            Some(k) => format!("{k}"),
            None => format!("{effective_abi:?}")
                .trim_start_matches('V')
                .to_string(),
        },
        _ => String::new(),
    };
    match status.ruleset {
        RulesetStatus::NotEnforced => Err(
            "Landlock is not available in this kernel (it must be built in and listed in the \
             lsm= boot parameter)"
                .into(),
        ),
        RulesetStatus::PartiallyEnforced => Ok(format!(
            "Landlock ABI {abi}, partially enforced (an older kernel)"
        )),
        RulesetStatus::FullyEnforced => Ok(format!("Landlock ABI {abi}, fully enforced")),
    }
}

/// Drops every capability the new user namespace gave, the bounding set first (so an exec as
/// root in the namespace gains none back).
fn drop_capabilities() -> Result<(), String> {
    use caps::CapSet;
    let fail = |e: caps::errors::CapsError| format!("cannot drop capabilities: {e}");
    for cap in caps::read(None, CapSet::Bounding).map_err(fail)? {
        caps::drop(None, CapSet::Bounding, cap).map_err(fail)?;
    }
    for set in [
        CapSet::Ambient,
        CapSet::Inheritable,
        CapSet::Effective,
        CapSet::Permitted,
    ] {
        caps::clear(None, set).map_err(fail)?;
    }
    Ok(())
}
