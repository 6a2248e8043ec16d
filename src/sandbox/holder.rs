//! `toolrt-sandbox-exec --policy … --hold`: the session's namespace holder (compiled into both
//! binaries, as `exec`).
//!
//! Creating a network namespace costs tens of milliseconds; joining one costs microseconds. So
//! the holder makes the session's user, mount and network namespaces once (every mount made
//! read-only, the writable roots bound back read-write, and the mounts that protect denied
//! and pinned paths), brings the loopback up, and stays: each sandboxed command joins them (`exec::restrict`). The holder is also the
//! bridge out: it listens on `127.0.0.1:PROXY_PORT` inside the namespace and relays every
//! connection to toolrt's proxy over its Unix socket, the one path that crosses the boundary.
//!
//! It prints `ready` on stdout once everything is up (or why not, and exits), and exits when
//! its stdin closes: toolrt holds the other end, so the holder cannot outlive the session.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::socket::{
    AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, recv, sendto, socket,
};
use nix::unistd::{getgid, getuid};

use super::policy::{ExecPolicy, PROXY_PORT};

/// Connections relayed at once; more are closed at once.
const MAX_BRIDGED: usize = 256;

/// Sets the namespaces up, says `ready`, relays until stdin closes. Must run before any thread
/// exists (a user namespace refuses a threaded process).
pub(crate) fn hold(policy: &ExecPolicy) -> Result<(), String> {
    let socket = policy
        .proxy_socket
        .clone()
        .ok_or("the policy names no proxy socket")?;
    let (uid, gid) = (getuid(), getgid());
    let all = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWNET;
    unshare(all).map_err(|e| {
        format!(
            "cannot create user, mount and network namespaces ({e}): unprivileged user \
             namespaces are unavailable here"
        )
    })?;
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|e| format!("cannot write {file}: {e}"))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make the mounts private: {e}"))?;
    super::mounts::read_only_everywhere()?;
    let mut roots: Vec<&PathBuf> = policy.write.iter().filter(|p| p.exists()).collect();
    roots.sort_by_key(|p| p.components().count());
    for root in roots {
        // One that cannot be bound back stays read-only: less is written, never more.
        let _ = super::mounts::bind_writable(root);
    }
    super::exec::protect(policy)?;
    loopback_up()?;
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, PROXY_PORT))
        .map_err(|e| format!("cannot listen on 127.0.0.1:{PROXY_PORT} in the sandbox: {e}"))?;
    std::thread::spawn(move || bridge(listener, socket));
    let mut out = std::io::stdout();
    let _ = writeln!(out, "ready").and_then(|()| out.flush());
    // Until toolrt closes our stdin (it ended, or dropped the sandbox).
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    Ok(())
}

/// Brings the loopback interface (index 1 in every network namespace) up with one netlink
/// `RTM_NEWLINK` request, and checks the kernel's acknowledgement.
fn loopback_up() -> Result<(), String> {
    const RTM_NEWLINK: u16 = 16;
    const NLM_F_REQUEST_ACK: u16 = 1 | 4;
    const IFF_UP: u32 = 1;
    let fail = |e: nix::Error| format!("cannot bring the sandbox's loopback up: {e}");
    let fd = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkRoute,
    )
    .map_err(fail)?;
    let mut msg = Vec::with_capacity(32);
    msg.extend_from_slice(&32u32.to_ne_bytes()); // nlmsg_len
    msg.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
    msg.extend_from_slice(&NLM_F_REQUEST_ACK.to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes()); // seq
    msg.extend_from_slice(&0u32.to_ne_bytes()); // pid: the kernel fills it
    msg.extend_from_slice(&[0, 0, 0, 0]); // family AF_UNSPEC, pad, type
    msg.extend_from_slice(&1i32.to_ne_bytes()); // ifindex of lo
    msg.extend_from_slice(&IFF_UP.to_ne_bytes()); // flags
    msg.extend_from_slice(&IFF_UP.to_ne_bytes()); // change mask
    use std::os::fd::AsRawFd;
    sendto(
        fd.as_raw_fd(),
        &msg,
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )
    .map_err(fail)?;
    let mut ack = [0u8; 256];
    let n = recv(fd.as_raw_fd(), &mut ack, MsgFlags::empty()).map_err(fail)?;
    // NLMSG_ERROR (2) with error 0 is the acknowledgement.
    let kind = (n >= 20).then(|| u16::from_ne_bytes([ack[4], ack[5]]));
    let error = (n >= 20).then(|| i32::from_ne_bytes([ack[16], ack[17], ack[18], ack[19]]));
    match (kind, error) {
        (Some(2), Some(0)) => Ok(()),
        (Some(2), Some(e)) => Err(fail(nix::Error::from_raw(-e))),
        _ => Err("cannot bring the sandbox's loopback up: unexpected netlink answer".into()),
    }
}

/// Relays each connection to the proxy's socket, two threads a connection, at most
/// [`MAX_BRIDGED`] at once.
fn bridge(listener: TcpListener, socket: PathBuf) {
    let active = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        if active.load(Ordering::Relaxed) >= MAX_BRIDGED {
            continue;
        }
        active.fetch_add(1, Ordering::Relaxed);
        let (active, socket) = (active.clone(), socket.clone());
        std::thread::spawn(move || {
            relay(conn, &socket);
            active.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

fn relay(tcp: TcpStream, socket: &Path) {
    let Ok(unix) = UnixStream::connect(socket) else {
        return;
    };
    let (Ok(tcp2), Ok(unix2)) = (tcp.try_clone(), unix.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || {
        copy(&tcp2, &unix2);
        let _ = unix2.shutdown(Shutdown::Write);
    });
    copy(&unix, &tcp);
    // The proxy is done with this connection: both ways end (a reader blocked on the command's
    // side wakes up).
    let _ = tcp.shutdown(Shutdown::Both);
    let _ = up.join();
}

/// Copies until end of input or an error, through one 16 KiB buffer.
fn copy(mut from: impl Read, mut to: impl Write) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}
