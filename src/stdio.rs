//! Standard input and output of the commands that serve a client over them.
//!
//! tokio's `stdin()` and `stdout()` hand every read and every write to a thread of the blocking
//! pool and back, so each line a client sends and each line toolrt answers costs two hand-overs
//! between threads (on a virtual machine, waking an idle CPU for each). When the standard input
//! or output is a pipe — as it is for any program that drives toolrt — it is made non-blocking
//! and read or written from the runtime's own event loop instead. Anything else (a file, a
//! terminal, a socket) keeps tokio's handles, and so does a standard output that is the very pipe
//! standard error writes to (`2>&1`): non-blocking, a full pipe would fail a log line. The
//! flags are put back when the handle is dropped, for whoever shares the pipe after toolrt.
//! `TOOLRT_STDIO=blocking` keeps tokio's handles in every case.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::sys::stat::{SFlag, fstat};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;

/// Set to `blocking`, toolrt keeps tokio's handles whatever its stdin and stdout are (for a
/// pipe that another program must keep blocking while toolrt runs).
const ENV: &str = "TOOLRT_STDIO";

/// Whether the environment asks for tokio's handles.
fn blocking_asked() -> bool {
    std::env::var_os(ENV).is_some_and(|v| v == "blocking")
}

/// Standard input, read from the event loop when it is a pipe.
pub(crate) fn stdin() -> Box<dyn AsyncRead + Send + Unpin> {
    let stdin = std::io::stdin();
    let end = own_pipe(stdin.as_fd()).and_then(|(file, flags)| {
        let end = pipe::Receiver::from_file(file).ok()?;
        Some(Restoring { end, flags })
    });
    match end {
        Some(end) => Box::new(end),
        None => Box::new(tokio::io::stdin()),
    }
}

/// Standard output, written from the event loop when it is a pipe of its own.
pub(crate) fn stdout() -> Box<dyn AsyncWrite + Send + Unpin> {
    let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
    let end = (!same_pipe(stdout.as_fd(), stderr.as_fd()))
        .then(|| own_pipe(stdout.as_fd()))
        .flatten()
        .and_then(|(file, flags)| {
            let end = pipe::Sender::from_file(file).ok()?;
            Some(Restoring { end, flags })
        });
    match end {
        Some(end) => Box::new(end),
        None => Box::new(tokio::io::stdout()),
    }
}

/// A handle of its own on the pipe `fd` (a duplicate: they share the flags) and the flags it
/// had; None when `fd` is not a pipe or the environment asks for tokio's handles.
fn own_pipe(fd: BorrowedFd<'_>) -> Option<(File, OFlag)> {
    if blocking_asked() {
        return None;
    }
    let flags = flags_of_pipe(fd)?;
    Some((File::from(fd.try_clone_to_owned().ok()?), flags))
}

/// The status flags of `fd` when it is a pipe (a FIFO); None otherwise.
fn flags_of_pipe(fd: BorrowedFd<'_>) -> Option<OFlag> {
    let stat = fstat(fd).ok()?;
    if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT != SFlag::S_IFIFO {
        return None;
    }
    fcntl(fd, FcntlArg::F_GETFL)
        .ok()
        .map(OFlag::from_bits_truncate)
}

/// Whether `a` and `b` are the same pipe (the same FIFO inode).
fn same_pipe(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    match (fstat(a), fstat(b)) {
        (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
        // Not known: as if shared, so nothing else is made non-blocking.
        _ => true,
    }
}

/// A pipe end that puts back the file status flags it found when dropped.
struct Restoring<E: AsFd> {
    end: E,
    flags: OFlag,
}

impl<E: AsFd> Drop for Restoring<E> {
    fn drop(&mut self) {
        let _ = fcntl(self.end.as_fd(), FcntlArg::F_SETFL(self.flags));
    }
}

impl AsyncRead for Restoring<pipe::Receiver> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.end).poll_read(cx, buf)
    }
}

impl AsyncWrite for Restoring<pipe::Sender> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.end).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.end).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.end).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.end).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.end.is_write_vectored()
    }
}
