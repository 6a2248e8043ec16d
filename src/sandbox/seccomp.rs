//! The sandboxed command's seccomp filter: `socket(AF_UNIX, …)` fails with `EPERM`, so a command
//! cannot connect to a Unix socket file it can reach (an ssh-agent, a session bus, a docker
//! socket), which neither the namespaces nor Landlock refuse. `io_uring_setup`, `_enter` and
//! `_register` fail too: an io_uring makes sockets without the `socket` system call, out of the
//! filter's sight. Every other system call is allowed. `sandbox.network.allowAllUnixSockets`
//! leaves the filter out entirely. Compiled into both binaries (see `policy`): std, nix and
//! seccompiler only.
//!
//! Held only where the filter knows the system call numbers (x86_64, aarch64); elsewhere the
//! helper refuses to run the command rather than run it with Unix sockets open. The filter is
//! inherited by every child and kept across exec (with no_new_privs, which Landlock set and
//! seccompiler sets again), and cannot be removed.
//!
//! The filter also checks the calling convention (the audit architecture) first: a program of
//! another one (a 32-bit x86 or ARM binary, whose socket calls have other numbers) is killed
//! at its first system call rather than let through.

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The system call numbers the filter names, for one architecture. Kernel ABI, never renumbered;
/// a unit test checks them against the C library's for the architecture it runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Numbers {
    socket: i64,
    io_uring: [i64; 3],
    /// x86_64's x32 calling convention has the same audit architecture, with this bit set in
    /// the call's number; its calls are refused as well.
    x32_bit: Option<i64>,
}

/// The numbers for `arch` (as `std::env::consts::ARCH` names it), or why none.
fn numbers(arch: &str) -> Result<(TargetArch, Numbers), String> {
    // io_uring's three calls have the same numbers on every architecture (the common table).
    let io_uring = [425, 426, 427];
    match arch {
        "x86_64" => Ok((
            TargetArch::x86_64,
            Numbers {
                socket: 41,
                io_uring,
                x32_bit: Some(0x4000_0000),
            },
        )),
        "aarch64" => Ok((
            TargetArch::aarch64,
            Numbers {
                socket: 198,
                io_uring,
                x32_bit: None,
            },
        )),
        other => Err(format!(
            "Unix sockets cannot be refused on {other} (the seccomp filter knows x86_64 and \
             aarch64 only), so sandboxed commands are not run; set \
             sandbox.network.allowAllUnixSockets to run them with Unix sockets allowed"
        )),
    }
}

/// The filter for `arch`, compiled: `socket(AF_UNIX, …)` and the io_uring calls return `EPERM`,
/// everything else is allowed.
pub(crate) fn unix_socket_filter(arch: &str) -> Result<BpfProgram, String> {
    let (target, n) = numbers(arch)?;
    let fail = |e: seccompiler::BackendError| format!("cannot build the seccomp filter: {e}");
    // The domain is an int: the low 32 bits of the first argument.
    let unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        libc::AF_UNIX as u64,
    )
    .map_err(fail)?;
    let unix = SeccompRule::new(vec![unix]).map_err(fail)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for bit in [Some(0), n.x32_bit].into_iter().flatten() {
        rules.insert(n.socket | bit, vec![unix.clone()]);
        for call in n.io_uring {
            // No rule: the call is refused whatever its arguments.
            rules.insert(call | bit, Vec::new());
        }
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        target,
    )
    .map_err(fail)?;
    filter.try_into().map_err(fail)
}

/// Installs the filter on this thread (the helper has no other), for the command it execs and
/// all its children; returns what holds, in words. With `allow_all`, installs nothing.
pub(crate) fn refuse_unix_sockets(allow_all: bool) -> Result<String, String> {
    if allow_all {
        return Ok("Unix sockets allowed (sandbox.network.allowAllUnixSockets)".into());
    }
    let program = unix_socket_filter(std::env::consts::ARCH)?;
    seccompiler::apply_filter(&program)
        .map_err(|e| format!("cannot install the seccomp filter that refuses Unix sockets: {e}"))?;
    Ok("Unix sockets refused (seccomp)".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};

    #[test]
    fn the_filter_builds_for_the_known_architectures_only() {
        for arch in ["x86_64", "aarch64"] {
            let program = unix_socket_filter(arch).unwrap();
            let compared: Vec<u32> = program.iter().map(|i| i.k).collect();
            // socket, and the three io_uring calls, each compared against the call's number.
            let (_, n) = numbers(arch).unwrap();
            for call in [n.socket].iter().chain(&n.io_uring) {
                assert!(compared.contains(&(*call as u32)), "{arch}: {call}");
                if let Some(bit) = n.x32_bit {
                    assert!(
                        compared.contains(&((call | bit) as u32)),
                        "{arch}: x32 {call}"
                    );
                }
            }
        }
        for arch in ["riscv64", "x86", "arm", "powerpc64", ""] {
            let err = unix_socket_filter(arch).unwrap_err();
            assert!(
                err.contains("cannot be refused") && err.contains("allowAllUnixSockets"),
                "{arch}: {err}"
            );
        }
    }

    #[test]
    fn the_numbers_are_the_c_librarys_here() {
        let Ok((_, n)) = numbers(std::env::consts::ARCH) else {
            return;
        };
        assert_eq!(n.socket, libc::SYS_socket);
        assert_eq!(
            n.io_uring,
            [
                libc::SYS_io_uring_setup,
                libc::SYS_io_uring_enter,
                libc::SYS_io_uring_register
            ]
        );
    }

    #[test]
    fn allow_all_installs_nothing() {
        let words = refuse_unix_sockets(true).unwrap();
        assert!(words.contains("allowed"), "{words}");
        // This thread is still free to make Unix sockets.
        UnixStream::pair().unwrap();
        UnixDatagram::unbound().unwrap();
    }

    /// The filter on a thread of its own (a seccomp filter holds for the thread that installs
    /// it and what it starts, not for the test's other threads).
    #[test]
    fn on_a_thread_unix_sockets_fail_and_the_rest_works() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        let target = path.clone();
        let seen = std::thread::spawn(move || {
            if numbers(std::env::consts::ARCH).is_err() {
                return None;
            }
            let words = refuse_unix_sockets(false).unwrap();
            let connect = UnixStream::connect(&target).map(drop);
            let datagram = UnixDatagram::unbound().map(drop);
            // A connected pair reaches nothing outside: socketpair stays allowed.
            let pair = UnixStream::pair().map(drop);
            let tcp = std::net::TcpListener::bind("127.0.0.1:0").map(drop);
            Some((words, connect, datagram, pair, tcp))
        })
        .join()
        .unwrap();
        let Some((words, connect, datagram, pair, tcp)) = seen else {
            return;
        };
        assert_eq!(words, "Unix sockets refused (seccomp)");
        for (what, result) in [("connect", connect), ("unbound datagram", datagram)] {
            let err = result.expect_err(what);
            assert_eq!(err.raw_os_error(), Some(libc::EPERM), "{what}: {err}");
        }
        pair.unwrap();
        tcp.unwrap();
        let accepted = listener.accept();
        assert!(
            matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "the listener saw a connection: {accepted:?}"
        );
        // This thread never had the filter.
        UnixStream::connect(&path).unwrap();
    }
}
