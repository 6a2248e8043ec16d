//! `toolrt serve` and `toolrt run`: read NDJSON lines, hand messages to the runtime, write every
//! server message to stdout through one writer task.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite};
use tokio::sync::{oneshot, watch};

use crate::protocol::{ClientMessage, ServerMessage, parse_line};
use crate::runtime::{Config, Runtime, StartError};

/// Longest input line accepted; the rest of a longer line is skipped and reported.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// What the process signals asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SignalState {
    /// Nothing yet.
    #[default]
    None,
    /// First SIGTERM: finish in-flight work, then exit.
    Graceful,
    /// Second SIGTERM, or SIGINT: cancel everything, then exit.
    CancelAll,
}

/// Runs the server loop over `input`, writing to `output`, until shutdown or EOF and every
/// result is out. Returns the process exit code.
pub async fn serve<R, W>(
    config: Config,
    input: R,
    output: W,
    signals: watch::Receiver<SignalState>,
) -> Result<i32, StartError>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (runtime, rx) = Runtime::start(config).await?;
    let (close_tx, close_rx) = oneshot::channel();
    let writer = tokio::spawn(crate::emit::write_all(rx, output, close_rx));
    let runtime = Arc::new(runtime);
    let mut signals = signals;
    read_loop(&runtime, input, &mut signals).await;
    runtime.close_asks();
    let Ok(runtime) = Arc::try_unwrap(runtime) else {
        // Unreachable: the loop holds the only other reference and has returned.
        return Ok(1);
    };
    let session = runtime.session().clone();
    let dispatcher = runtime.dispatcher().clone();
    // Draining can take as long as the slowest call; a second SIGTERM or a SIGINT still cancels
    // everything then (the input may have ended before the signal was seen).
    let drain = runtime.shutdown();
    tokio::pin!(drain);
    let mut watching = true;
    loop {
        tokio::select! {
            _ = &mut drain => break,
            changed = signals.changed(), if watching => match changed {
                Ok(()) if *signals.borrow_and_update() == SignalState::CancelAll => dispatcher.cancel_all(),
                Ok(()) => {}
                Err(_) => watching = false,
            },
        }
    }
    session.tools.shutdown();
    let _ = close_tx.send(());
    match writer.await {
        Ok(Ok(())) => Ok(0),
        Ok(Err(e)) => {
            tracing::warn!("writing to stdout failed: {e}");
            Ok(1)
        }
        Err(_) => Ok(1),
    }
}

async fn read_loop<R: AsyncBufRead + Unpin>(
    runtime: &Runtime,
    mut input: R,
    signals: &mut watch::Receiver<SignalState>,
) {
    let emitter_error = |message: String, line: u64| {
        runtime
            .dispatcher()
            .pipeline()
            .emitter
            .send(ServerMessage::Error {
                message,
                line: Some(line),
            });
    };
    let mut line_no: u64 = 0;
    let mut shutting_down = false;
    let mut buf = Vec::new();
    let mut signals_open = true;
    loop {
        if shutting_down && runtime.dispatcher().is_idle() {
            return;
        }
        let read = tokio::select! {
            biased;
            changed = signals.changed(), if signals_open => {
                if changed.is_err() {
                    signals_open = false;
                    continue;
                }
                let state = *signals.borrow_and_update();
                if state == SignalState::CancelAll {
                    runtime.dispatcher().cancel_all();
                }
                shutting_down = true;
                continue;
            }
            // While shutting down, look again for idleness now and then; this timer exists only
            // then, never on a call's path.
            _ = tokio::time::sleep(Duration::from_millis(10)), if shutting_down => continue,
            r = read_line(&mut input, &mut buf) => r,
        };
        line_no += 1;
        let too_long = match read {
            Ok(ReadLine::Eof) => return,
            Ok(ReadLine::Line { too_long }) => too_long,
            Err(e) => {
                tracing::warn!("reading stdin failed: {e}");
                return;
            }
        };
        if too_long {
            buf.clear();
            emitter_error(
                format!("line longer than {MAX_LINE_BYTES} bytes; ignored"),
                line_no,
            );
            continue;
        }
        // Taken only once whole: a read interrupted by a signal or the shutdown poll keeps its
        // partial line in `buf` and goes on where it stopped.
        let line = std::mem::take(&mut buf);
        let Ok(text) = std::str::from_utf8(&line) else {
            emitter_error("line is not valid UTF-8".into(), line_no);
            continue;
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let msg = match parse_line(text) {
            Ok(msg) => msg,
            Err(e) => {
                emitter_error(e.to_string(), line_no);
                continue;
            }
        };
        match msg {
            ClientMessage::Shutdown => shutting_down = true,
            ClientMessage::PermissionResponse(_) | ClientMessage::Cancel(_) => {
                runtime.submit(msg).await
            }
            _ if shutting_down => emitter_error(
                "the server is shutting down and accepts no new calls; message ignored".into(),
                line_no,
            ),
            msg => runtime.submit(msg).await,
        }
    }
}

enum ReadLine {
    Eof,
    Line { too_long: bool },
}

/// Reads one line into `buf` (without the newline), keeping at most [`MAX_LINE_BYTES`].
async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<ReadLine> {
    let mut too_long = false;
    let mut any = false;
    loop {
        let chunk = input.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if any || !buf.is_empty() {
                ReadLine::Line { too_long }
            } else {
                ReadLine::Eof
            });
        }
        any = true;
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if buf.len() + take > MAX_LINE_BYTES {
            too_long = true;
        } else {
            buf.extend_from_slice(&chunk[..take]);
        }
        input.consume(if done { take + 1 } else { take });
        if done {
            return Ok(ReadLine::Line { too_long });
        }
    }
}

/// Watches SIGTERM and SIGINT: the first SIGTERM asks for a graceful stop, a second SIGTERM or
/// any SIGINT cancels everything.
pub fn watch_signals() -> watch::Receiver<SignalState> {
    let (tx, rx) = watch::channel(SignalState::None);
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return;
        };
        loop {
            let next = tokio::select! {
                _ = term.recv() => if *tx.borrow() == SignalState::None { SignalState::Graceful } else { SignalState::CancelAll },
                _ = int.recv() => SignalState::CancelAll,
            };
            if tx.send(next).is_err() {
                return;
            }
        }
    });
    rx
}
