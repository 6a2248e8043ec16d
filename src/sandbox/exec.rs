//! `toolrt-sandbox-exec --policy JSON -- bash -c …` (or `toolrt sandbox-exec …`, the same code
//! in the toolrt binary): the process restricts itself, then execs the command, which inherits
//! every restriction (so do its children). Compiled into both binaries (see `policy`): std,
//! serde, nix, landlock, caps and seccompiler only.
//!
//! # Order
//! 1. The session's user, mount and network namespaces, made once by the holder (`holder`),
//!    joined (`setns`): creating namespaces costs tens of milliseconds, joining them
//!    microseconds. The network namespace has only a loopback, on which the holder relays
//!    `127.0.0.1:PROXY_PORT` to toolrt's proxy.
//! 2. Mounts in the session's mount namespace (`protect`, made once, skipped when present;
//!    the holder first made every mount read-only but the writable roots, `mounts`): each
//!    `deny_write` and `pinned` path bound onto itself read-only; each `deny_read` path covered by an
//!    empty stand-in the command may not open (mode 000, read-only), or, with `allow_read`
//!    paths below it, by a read-only tmpfs that holds only those paths, bound back. Landlock
//!    alone cannot take a path back out of a folder it allows.
//! 3. Landlock: reads everywhere, writes only below `write` (and `/dev/null`); no TCP `bind`
//!    unless `allow_local_binding` (ABI 4); signals and abstract sockets scoped to the sandbox
//!    (ABI 6). Landlock also forbids the command to mount or unmount, so step 2 cannot be
//!    undone.
//! 4. Every capability dropped (bounding set included): a command started as root keeps no
//!    power over its namespaces.
//! 5. The seccomp filter (`seccomp`): `socket(AF_UNIX, …)` and io_uring refused, unless
//!    `allow_all_unix_sockets`.
//!
//! Everything here must run before any thread exists: joining a user namespace refuses a
//! multi-threaded process. Both binaries' `main` call [`run`] first thing.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use landlock::{
    ABI, Access, AccessFs, AccessNet, LandlockStatus, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, setns};
use nix::sys::statvfs::{FsFlags, statvfs};

use super::policy::{ExecPolicy, Join, Mode};

/// The helper's whole run once its arguments are read: restrict, then become `command` (or,
/// with [`Mode::Probe`], print what is enforced; with [`Mode::Hold`], hold the session's
/// namespaces). Exit status 125 when the sandbox cannot be set up, 127 when the command cannot
/// be run. Must run before any thread exists: joining a user namespace refuses a threaded
/// process.
pub(crate) fn run(policy: &str, mode: Mode, command: &[std::ffi::OsString]) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let policy = ExecPolicy::parse(policy);
    if mode == Mode::Hold {
        return match policy.and_then(|p| super::holder::hold(&p)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(why) => {
                // On stdout: toolrt reads the holder's first line.
                println!("{why}");
                ExitCode::from(125)
            }
        };
    }
    let report = match policy.and_then(|p| restrict(&p)) {
        Ok(report) => report,
        Err(why) => {
            eprintln!("toolrt sandbox-exec: {why}");
            return ExitCode::from(125);
        }
    };
    if mode == Mode::Probe {
        println!("{report}");
        return ExitCode::SUCCESS;
    }
    let Some((program, args)) = command.split_first() else {
        eprintln!("toolrt sandbox-exec: no command given after --");
        return ExitCode::from(125);
    };
    let err = std::process::Command::new(program).args(args).exec();
    eprintln!(
        "toolrt sandbox-exec: cannot run {}: {err}",
        program.to_string_lossy()
    );
    ExitCode::from(127)
}

/// The Landlock ABI whose rights are asked for; older kernels give what they have (best
/// effort), and the report says which ABI is in force.
const TARGET: ABI = ABI::V6;

/// Restricts this process as `policy` says. Returns what is enforced, in words
/// (`Landlock ABI V7, fully enforced; …`), or why the boundary cannot be set up.
fn restrict(policy: &ExecPolicy) -> Result<String, String> {
    let join = policy
        .join
        .as_ref()
        .ok_or("the policy names no namespace holder to join")?;
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the working folder: {e}"))?;
    join_holder(join)?;
    // Joining a mount namespace moves to its root.
    std::env::set_current_dir(&cwd)
        .map_err(|e| format!("cannot return to {}: {e}", cwd.display()))?;
    protect(policy)?;
    let report = landlock(policy)?;
    drop_capabilities()?;
    // Last, just before the exec, so that no step above is subject to it.
    let sockets = super::seccomp::refuse_unix_sockets(policy.allow_all_unix_sockets)?;
    Ok(format!(
        "{report}; {sockets}; the session's user, mount and network namespaces"
    ))
}

/// The mounts that take denied paths back out of what Landlock allows, in the session's mount
/// namespace (shared by its commands): each is made once, by the holder or by the first
/// command that finds the path, and skipped by every later one (a path that appears during the
/// session is protected from the next command on). Read-only first: a denied read inside a
/// denied write is then still found.
pub(crate) fn protect(policy: &ExecPolicy) -> Result<(), String> {
    for path in policy.deny_write.iter().chain(&policy.pinned) {
        let writable = policy.write.iter().any(|w| path.starts_with(w));
        let read_only =
            statvfs(path.as_path()).is_ok_and(|s| s.flags().contains(FsFlags::ST_RDONLY));
        if writable && !read_only && path.exists() {
            bind_read_only(path, path)?;
        }
    }
    for path in &policy.deny_read {
        // allowRead wins over denyRead for the same path.
        if policy.allow_read.contains(path) {
            continue;
        }
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        if covered(path, &meta, policy) {
            continue;
        }
        let allowed: Vec<&PathBuf> = policy
            .allow_read
            .iter()
            .filter(|a| a.starts_with(path))
            .collect();
        if meta.is_dir() && !allowed.is_empty() {
            cover_except(path, &allowed)?;
        } else {
            let stand_in = if meta.is_dir() {
                &policy.stand_in_dir
            } else {
                &policy.stand_in_file
            };
            bind_read_only(stand_in, path)?;
        }
    }
    Ok(())
}

/// Whether a denied path is covered already: it is a stand-in, or the tmpfs `cover_except`
/// put over it (mode 0111, another device than its parent).
fn covered(path: &Path, meta: &std::fs::Metadata, policy: &ExecPolicy) -> bool {
    use std::os::unix::fs::MetadataExt;
    let same = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino())
    };
    if same(&policy.stand_in_file) || same(&policy.stand_in_dir) {
        return true;
    }
    let parent = path.parent().and_then(|p| std::fs::metadata(p).ok());
    meta.is_dir() && meta.mode() & 0o7777 == 0o111 && parent.is_some_and(|p| p.dev() != meta.dev())
}

/// Hides the folder `dir` except `allowed` paths below it: a read-only tmpfs over it whose
/// folders may be passed through but not listed (mode 0111), with each allowed path bound
/// back at its place. The allowed paths are opened before the tmpfs covers them.
fn cover_except(dir: &Path, allowed: &[&PathBuf]) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::DirBuilderExt;
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |e: &dyn std::fmt::Display| format!("cannot hide {}: {e}", dir.display());
    let mut kept = Vec::new();
    for path in allowed {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        let fd = nix::fcntl::open(
            path.as_path(),
            nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .map_err(|e| fail(&e))?;
        kept.push((path, meta.is_dir(), fd));
    }
    mount(
        Some("tmpfs"),
        dir,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        Some("mode=0111,size=64k"),
    )
    .map_err(|e| fail(&e))?;
    for (path, is_dir, fd) in &kept {
        let Ok(rel) = path.strip_prefix(dir) else {
            continue;
        };
        let target = dir.join(rel);
        if let Some(parent) = target.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o111)
                .create(parent)
                .map_err(|e| fail(&e))?;
        }
        let made = if *is_dir {
            std::fs::DirBuilder::new().mode(0o111).create(&target)
        } else {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o000)
                .open(&target)
                .map(drop)
        };
        made.map_err(|e| fail(&e))?;
        let source = format!("/proc/self/fd/{}", fd.as_raw_fd());
        mount(
            Some(source.as_str()),
            &target,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|e| fail(&e))?;
    }
    mount(
        None::<&str>,
        dir,
        None::<&str>,
        MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
        None::<&str>,
    )
    .map_err(|e| fail(&e))
}

/// Joins the holder's user namespace, then its mount and network namespaces, each checked to be the one
/// the holder had when it started (a recycled pid names other namespaces).
fn join_holder(join: &Join) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    for (kind, inode, flag) in [
        ("user", join.user, CloneFlags::CLONE_NEWUSER),
        ("mnt", join.mnt, CloneFlags::CLONE_NEWNS),
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

/// Binds `source` onto `target`, read-only.
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
    super::mounts::remount(target, MsFlags::MS_RDONLY).map_err(fail)
}

/// Landlock: read and execute everywhere, write only below the writable paths; no TCP `bind`
/// unless `allow_local_binding`.
fn landlock(policy: &ExecPolicy) -> Result<String, String> {
    let fail = |e: landlock::RulesetError| format!("Landlock: {e}");
    let all = AccessFs::from_all(TARGET);
    let mut ruleset = Ruleset::default().handle_access(all).map_err(fail)?;
    if !policy.allow_local_binding {
        // Handled with no port allowed: every TCP bind fails. Before ABI 4 the right is
        // dropped (best effort) and the report says binding is not enforced.
        ruleset = ruleset.handle_access(AccessNet::BindTcp).map_err(fail)?;
    }
    let mut ruleset = ruleset
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
    let effective = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => Some(effective_abi),
        _ => None,
    };
    let binding = binding_words(policy.allow_local_binding, effective);
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
            "Landlock ABI {abi}, partially enforced (an older kernel); {binding}"
        )),
        RulesetStatus::FullyEnforced => {
            Ok(format!("Landlock ABI {abi}, fully enforced; {binding}"))
        }
    }
}

/// What holds for `sandbox.network.allowLocalBinding`, given the Landlock ABI in force.
fn binding_words(allowed: bool, effective: Option<ABI>) -> &'static str {
    if allowed {
        "TCP bind allowed (sandbox.network.allowLocalBinding)"
    } else if effective >= Some(ABI::V4) {
        "TCP bind refused (Landlock)"
    } else {
        "local binding not enforced (TCP bind needs Landlock ABI 4)"
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_is_refused_only_from_abi_4() {
        for (allowed, abi, want) in [
            (true, Some(ABI::V6), "TCP bind allowed"),
            (true, None, "TCP bind allowed"),
            (false, Some(ABI::V4), "TCP bind refused (Landlock)"),
            (false, Some(ABI::V6), "TCP bind refused (Landlock)"),
            (false, Some(ABI::V3), "local binding not enforced"),
            (false, None, "local binding not enforced"),
        ] {
            let words = binding_words(allowed, abi);
            assert!(words.starts_with(want), "{allowed} {abi:?}: {words}");
        }
    }
}
