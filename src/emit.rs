//! The one way out: every message to the client goes through an [`Emitter`], and one writer
//! task owns stdout.
//!
//! # What bounds the outgoing queue
//! The queue between the emitters and the writer has no fixed capacity (a result must never wait
//! for room, nor be dropped), but nothing enters it unaccounted for:
//! - A `tool_result` carries its call's admission place ([`Emitter::send_result`]); the writer
//!   gives the place back only once the line is written. Every other message of an admitted call
//!   (`permission_request`, hook events, `stop`) is sent while the call still holds its place and
//!   before its result, so it is written before the place frees. A batch's `batch_end` carries a
//!   place of its own. So admission bounds all of them, however slowly the client reads.
//! - `progress` events are counted in bytes: past [`PROGRESS_BUDGET`] queued bytes a new one is
//!   refused ([`Emitter::send_progress`] says so), and the tool may fold its text into a later
//!   event (Bash does) or drop it.
//! - What the reader answers itself (error lines, `rewound`, `hello`, `tools`, `tools_changed`,
//!   agent events) is counted, in answers and in bytes: past [`READER_BACKLOG`] unwritten
//!   answers, or [`READER_BYTES`] bytes of them, the reader stops reading until the writer
//!   catches up ([`Emitter::reader_room`]). Nothing is dropped: an answer larger than the whole
//!   budget is queued too, and the reader then waits until it is written.
//! - Messages that supersede each other (an MCP server's status) go through a [`Latest`]: at
//!   most one of them waits unwritten at a time, a newer one replaces it
//!   ([`Emitter::send_latest`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{Notify, OwnedSemaphorePermit, mpsc};

use serde_json::Value;

use crate::protocol::ServerMessage;

/// Queued, unwritten `progress` events may hold at most this many bytes (estimated); past it a
/// new event is refused.
pub(crate) const PROGRESS_BUDGET: usize = 4 << 20;

/// Answers of the reader itself (error lines, `rewound`) that may wait unwritten before the reader
/// stops reading input.
pub(crate) const READER_BACKLOG: usize = 1024;

/// Bytes (about the length of their lines) the reader's own answers may hold unwritten before the
/// reader stops reading input: a `tools` answer can be tens of MiB, so their number alone bounds
/// nothing.
pub(crate) const READER_BYTES: usize = 64 << 20;

/// What the queue counts for one message, given back when the writer has written it (or the
/// message is dropped).
enum Hold {
    /// Accounted for elsewhere (sent by an admitted call holding its place).
    Nothing,
    /// An admission place.
    Place(#[allow(dead_code)] OwnedSemaphorePermit),
    /// Bytes of the progress budget.
    Progress(Arc<Shared>, usize),
    /// What several messages held, now held by the one message written for all of them.
    Many(#[allow(dead_code)] Vec<Hold>),
    /// One answer of the reader's backlog, of about this many bytes.
    Reader(Arc<Shared>, usize),
}

impl Drop for Hold {
    fn drop(&mut self) {
        match self {
            Hold::Nothing | Hold::Place(_) | Hold::Many(_) => {}
            Hold::Progress(shared, bytes) => {
                shared.progress_bytes.fetch_sub(*bytes, Ordering::Relaxed);
            }
            Hold::Reader(shared, bytes) => {
                let bytes_before = shared.reader_bytes.fetch_sub(*bytes, Ordering::AcqRel);
                let before = shared.reader_backlog.fetch_sub(1, Ordering::AcqRel);
                // Only a backlog that leaves full wakes the reader (a waiting reader looks at
                // both bounds again).
                if before == READER_BACKLOG
                    || (bytes_before >= READER_BYTES && bytes_before - *bytes < READER_BYTES)
                {
                    shared.reader_room.notify_waiters();
                }
            }
        }
    }
}

/// What the queue carries: a message, or the place of the newest message of a [`Latest`],
/// read when the message is taken.
// Nearly every message is `Ready`: boxing it to shrink the rare `Latest` would cost an
// allocation per message.
#[allow(clippy::large_enum_variant)]
enum Queued {
    Ready(Outgoing),
    Latest(Arc<Latest>),
}

impl Queued {
    /// The message itself; None for the place of a [`Latest`] whose message was already taken
    /// (not expected: a place is queued only with a message).
    fn resolve(self) -> Option<Outgoing> {
        match self {
            Queued::Ready(out) => Some(out),
            Queued::Latest(latest) => latest
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .map(|msg| Outgoing {
                    msg,
                    _hold: Hold::Nothing,
                }),
        }
    }
}

/// A stream of messages where only the newest matters (the status of one MCP server): while
/// one waits unwritten, a newer one replaces it instead of queueing behind it, so a client that
/// does not read holds at most one per stream.
#[derive(Debug, Default)]
pub(crate) struct Latest {
    /// The unwritten message; Some exactly while its place is in the queue.
    pending: std::sync::Mutex<Option<ServerMessage>>,
}

/// One queued message and what it holds until written.
pub(crate) struct Outgoing {
    msg: ServerMessage,
    _hold: Hold,
}

impl Outgoing {
    /// The message.
    pub(crate) fn message(&self) -> &ServerMessage {
        &self.msg
    }

    /// The message; what it held is given back now.
    pub(crate) fn into_message(self) -> ServerMessage {
        self.msg
    }

    /// One message written in place of `parts`: it holds what each of them held (their
    /// admission places) until it is written.
    pub(crate) fn joined(msg: ServerMessage, parts: Vec<Outgoing>) -> Outgoing {
        Outgoing {
            msg,
            _hold: Hold::Many(parts.into_iter().map(|p| p._hold).collect()),
        }
    }
}

/// What the writer does with each message before writing it: passes it on as it is, or keeps
/// it (with what it holds) to write later as part of another message — the results of a model
/// API's turn go out as one message in that API's shape.
pub(crate) trait Reshape: Send {
    /// Takes one message; pushes onto `ready` what is to be written now, in order.
    fn reshape(&mut self, out: Outgoing, ready: &mut Vec<Outgoing>);
}

#[derive(Debug, Default)]
struct Shared {
    results: AtomicU64,
    progress_bytes: AtomicUsize,
    reader_backlog: AtomicUsize,
    /// About how many bytes the reader's backlog holds.
    reader_bytes: AtomicUsize,
    reader_room: Notify,
    /// The input line the reader is handling (0: none), for error lines sent as its answers.
    reply_line: AtomicU64,
}

impl std::fmt::Debug for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Hold::Nothing => "Nothing",
            Hold::Place(_) => "Place",
            Hold::Progress(..) => "Progress",
            Hold::Reader(..) => "Reader",
            Hold::Many(_) => "Many",
        })
    }
}

/// A cheap, cloneable sender of server messages.
#[derive(Clone, Debug)]
pub(crate) struct Emitter {
    tx: mpsc::UnboundedSender<Queued>,
    shared: Arc<Shared>,
}

/// The receiving end of an [`Emitter`]: what the writer (or a library user) reads.
pub struct Outbox {
    rx: mpsc::UnboundedReceiver<Queued>,
}

impl Outbox {
    /// The next message, or None once every emitter is gone. What it held (an admission place, a
    /// share of a budget) is given back as it is handed over: from here on it is the caller's.
    pub async fn recv(&mut self) -> Option<ServerMessage> {
        self.recv_held().await.map(Outgoing::into_message)
    }

    /// The next message if one is queued.
    pub fn try_recv(&mut self) -> Option<ServerMessage> {
        self.try_recv_held().map(Outgoing::into_message)
    }

    /// The next message with what it holds, for a writer that gives it back only once the
    /// message is written.
    pub(crate) async fn recv_held(&mut self) -> Option<Outgoing> {
        loop {
            if let Some(out) = self.rx.recv().await?.resolve() {
                return Some(out);
            }
        }
    }

    fn try_recv_held(&mut self) -> Option<Outgoing> {
        loop {
            if let Some(out) = self.rx.try_recv().ok()?.resolve() {
                return Some(out);
            }
        }
    }
}

impl Emitter {
    /// A new emitter and the outbox its messages arrive in.
    pub(crate) fn channel() -> (Self, Outbox) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Self {
                tx,
                shared: Arc::new(Shared::default()),
            },
            Outbox { rx },
        )
    }

    fn push(&self, msg: ServerMessage, hold: Hold) {
        // If the outbox is gone (the client went away) the message is dropped, and what it held
        // with it: there is nobody left to tell.
        let _ = self.tx.send(Queued::Ready(Outgoing { msg, _hold: hold }));
    }

    /// Sends the newest message of `latest`'s stream: it replaces the stream's message still
    /// waiting unwritten, if there is one (and takes its place in the queue), else it is
    /// queued.
    pub(crate) fn send_latest(&self, latest: &Arc<Latest>, msg: ServerMessage) {
        let mut pending = latest.pending.lock().unwrap_or_else(|e| e.into_inner());
        let queued = pending.replace(msg).is_some();
        if !queued && self.tx.send(Queued::Latest(latest.clone())).is_err() {
            // Nobody reads any more: do not keep the message.
            pending.take();
        }
    }

    /// Sends a message of an admitted call (an event, a permission request) while the call
    /// holds its admission place, or a message bounded some other way. Results go through
    /// [`Emitter::send_result`], the reader's answers through [`Emitter::send_reply`].
    pub(crate) fn send(&self, msg: ServerMessage) {
        self.push(msg, Hold::Nothing);
    }

    /// Sends a result carrying the call's admission place, given back once the result is written.
    pub(crate) fn send_result(&self, msg: ServerMessage, place: Option<OwnedSemaphorePermit>) {
        self.count_result();
        self.send_with_place(msg, place);
    }

    /// Counts a result handed straight to the caller waiting for it, not queued here.
    pub(crate) fn count_result(&self) {
        self.shared.results.fetch_add(1, Ordering::Relaxed);
    }

    /// Sends a message carrying an admission place (a batch's `batch_end`).
    pub(crate) fn send_with_place(&self, msg: ServerMessage, place: Option<OwnedSemaphorePermit>) {
        let hold = match place {
            Some(p) => Hold::Place(p),
            None => Hold::Nothing,
        };
        self.push(msg, hold);
    }

    /// Sends an answer of the reader's own (an error line, `rewound`). It counts toward the
    /// reader's backlog, in answers and in bytes, until written.
    pub(crate) fn send_reply(&self, mut msg: ServerMessage) {
        if let ServerMessage::Error {
            line: line @ None, ..
        } = &mut msg
        {
            *line = match self.shared.reply_line.load(Ordering::Relaxed) {
                0 => None,
                n => Some(n),
            };
        }
        let bytes = approx_line_len(&msg);
        self.shared.reader_bytes.fetch_add(bytes, Ordering::AcqRel);
        self.shared.reader_backlog.fetch_add(1, Ordering::AcqRel);
        self.push(msg, Hold::Reader(self.shared.clone(), bytes));
    }

    /// Names the input line the reader is now handling: an error line sent as its answer
    /// without a line number gets this one. The dispatcher's errors (a duplicate id, a cancel of
    /// an unknown id, a rewind that cannot be done) are caused by that line but do not know it.
    pub(crate) fn set_reply_line(&self, line: u64) {
        self.shared.reply_line.store(line, Ordering::Relaxed);
    }

    /// Whether the reader should stop reading until answers it already gave are written: they
    /// are [`READER_BACKLOG`] or more, or hold [`READER_BYTES`] or more.
    pub(crate) fn reader_backlog_full(&self) -> bool {
        self.shared.reader_backlog.load(Ordering::Acquire) >= READER_BACKLOG
            || self.shared.reader_bytes.load(Ordering::Acquire) >= READER_BYTES
    }

    /// Waits until the reader's backlog is below [`READER_BACKLOG`] answers and [`READER_BYTES`]
    /// bytes.
    pub(crate) async fn reader_room(&self) {
        loop {
            let notified = self.shared.reader_room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self.reader_backlog_full() {
                return;
            }
            notified.await;
        }
    }

    /// Whether a progress event of about `bytes` would be queued now.
    pub(crate) fn progress_room(&self, bytes: usize) -> bool {
        self.shared.progress_bytes.load(Ordering::Relaxed) + bytes <= PROGRESS_BUDGET
    }

    /// Sends a progress event of about `bytes` if the progress budget has room; false if it was
    /// refused (the client is reading slowly).
    pub(crate) fn send_progress(&self, msg: ServerMessage, bytes: usize) -> bool {
        let before = self
            .shared
            .progress_bytes
            .fetch_add(bytes, Ordering::Relaxed);
        if before + bytes > PROGRESS_BUDGET {
            self.shared
                .progress_bytes
                .fetch_sub(bytes, Ordering::Relaxed);
            return false;
        }
        self.push(msg, Hold::Progress(self.shared.clone(), bytes));
        true
    }

    /// How many results have been sent so far.
    pub(crate) fn results_sent(&self) -> u64 {
        self.shared.results.load(Ordering::Relaxed)
    }
}

/// Progress updates of running calls go to the client as `progress` events, counted against
/// the progress budget.
impl crate::tool::ProgressTarget for Emitter {
    fn send(&self, id: &Arc<str>, data: Value) -> bool {
        let bytes = approx_size(&data) + id.len() + 64;
        self.send_progress(
            ServerMessage::event(
                "progress",
                serde_json::json!({"tool_use_id": &**id, "data": data}),
            ),
            bytes,
        )
    }

    fn has_room(&self, bytes: usize) -> bool {
        self.progress_room(bytes + 64)
    }
}

/// About how many bytes `value` takes as JSON (strings by their length, everything else a few
/// bytes), to count progress against its budget without serialising it twice.
fn approx_size(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len() + 2,
        Value::Array(items) => items.iter().map(approx_size).sum::<usize>() + 2,
        Value::Object(map) => approx_map_size(map),
        _ => 8,
    }
}

/// [`approx_size`] of an object.
fn approx_map_size(map: &serde_json::Map<String, Value>) -> usize {
    map.iter()
        .map(|(k, v)| k.len() + 4 + approx_size(v))
        .sum::<usize>()
        + 2
}

/// About how many bytes `msg`'s line takes, for the reader's byte budget: the large answers
/// (`tools`, events) measured by [`approx_size`] without serialising them; the rest, small and
/// rare, by serialising them into a counter.
fn approx_line_len(msg: &ServerMessage) -> usize {
    use crate::protocol::EventBody;
    /// `"type"`, `"line"`, `"code"` and the punctuation around them.
    const FRAME: usize = 64;
    match msg {
        ServerMessage::Error { message, ids, .. } => {
            FRAME + message.len() + ids.iter().map(|id| id.len() + 3).sum::<usize>()
        }
        ServerMessage::Event(EventBody(body))
        | ServerMessage::Tools(EventBody(body))
        | ServerMessage::AnthropicResults(EventBody(body))
        | ServerMessage::OpenaiChatResults(EventBody(body))
        | ServerMessage::OpenaiResponsesResults(EventBody(body)) => FRAME + approx_map_size(body),
        other => {
            struct Count(usize);
            impl std::io::Write for Count {
                fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                    self.0 += buf.len();
                    Ok(buf.len())
                }
                fn flush(&mut self) -> std::io::Result<()> {
                    Ok(())
                }
            }
            let mut count = Count(1);
            let _ = serde_json::to_writer(&mut count, other);
            count.0
        }
    }
}

/// Writes every message from `outbox` to `out` as NDJSON until every [`Emitter`] is dropped or
/// `close` fires (then what is already queued is written, and no more). What a message holds is
/// given back once its line is in the write buffer. Flushes whenever the queue runs dry, so a
/// lone result is not held back in a buffer. Each message goes through `shape` first (model-API
/// turns gather their results there).
pub(crate) async fn write_reshaped<W: AsyncWrite + Unpin, R: Reshape>(
    mut outbox: Outbox,
    out: W,
    mut close: tokio::sync::oneshot::Receiver<()>,
    mut shape: R,
) -> std::io::Result<()> {
    let mut out = tokio::io::BufWriter::with_capacity(64 * 1024, out);
    let mut ready = Vec::new();
    loop {
        let next = tokio::select! {
            biased;
            next = outbox.recv_held() => next,
            _ = &mut close => {
                while let Some(more) = outbox.try_recv_held() {
                    shape.reshape(more, &mut ready);
                }
                write_ready(&mut out, &mut ready).await?;
                break;
            }
        };
        let Some(next) = next else { break };
        shape.reshape(next, &mut ready);
        write_ready(&mut out, &mut ready).await?;
        while let Some(more) = outbox.try_recv_held() {
            shape.reshape(more, &mut ready);
            write_ready(&mut out, &mut ready).await?;
        }
        out.flush().await?;
    }
    out.flush().await
}

/// Writes the messages in `ready`, each giving back what it held once its line is in the
/// buffer.
async fn write_ready<W: AsyncWrite + Unpin>(
    out: &mut tokio::io::BufWriter<W>,
    ready: &mut Vec<Outgoing>,
) -> std::io::Result<()> {
    for next in ready.drain(..) {
        out.write_all(&next.msg.to_line()).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_place_comes_back_only_when_its_message_is_taken() {
        let (emitter, mut outbox) = Emitter::channel();
        let places = Arc::new(tokio::sync::Semaphore::new(1));
        let place = places.clone().try_acquire_owned().unwrap();
        emitter.send_result(ServerMessage::event("x", json!({})), Some(place));
        assert_eq!(places.available_permits(), 0);
        let held = outbox.recv_held().await.unwrap();
        assert_eq!(
            places.available_permits(),
            0,
            "still held while being written"
        );
        drop(held);
        assert_eq!(places.available_permits(), 1);
    }

    #[tokio::test]
    async fn progress_past_its_budget_is_refused_until_written() {
        let (emitter, mut outbox) = Emitter::channel();
        let big = PROGRESS_BUDGET / 2;
        let msg = || ServerMessage::event("progress", json!({}));
        assert!(emitter.send_progress(msg(), big));
        assert!(emitter.send_progress(msg(), big));
        assert!(!emitter.progress_room(1));
        assert!(!emitter.send_progress(msg(), 1));
        outbox.recv().await.unwrap();
        assert!(emitter.send_progress(msg(), 1));
    }

    #[tokio::test]
    async fn the_reader_waits_while_its_backlog_is_full() {
        let (emitter, mut outbox) = Emitter::channel();
        let err = || ServerMessage::Error {
            message: "x".into(),
            line: None,
            code: None,
            ids: Vec::new(),
        };
        for _ in 0..READER_BACKLOG {
            emitter.send_reply(err());
        }
        assert!(emitter.reader_backlog_full());
        let waiting = emitter.clone();
        let room = tokio::spawn(async move { waiting.reader_room().await });
        tokio::task::yield_now().await;
        assert!(!room.is_finished());
        outbox.recv().await.unwrap();
        room.await.unwrap();
        assert!(!emitter.reader_backlog_full());
    }

    #[tokio::test]
    async fn the_reader_waits_while_its_backlog_holds_too_many_bytes() {
        let (emitter, mut outbox) = Emitter::channel();
        // Two answers of 40 MiB each: the first leaves room, the second passes the budget (it
        // is queued all the same: nothing is dropped).
        let big = || {
            ServerMessage::Tools(crate::protocol::EventBody(
                json!({"format": "native", "tools": [{"description": "d".repeat(40 << 20)}]})
                    .as_object()
                    .unwrap()
                    .clone(),
            ))
        };
        emitter.send_reply(big());
        assert!(!emitter.reader_backlog_full());
        emitter.send_reply(big());
        assert!(emitter.reader_backlog_full());
        let waiting = emitter.clone();
        let room = tokio::spawn(async move { waiting.reader_room().await });
        tokio::task::yield_now().await;
        assert!(!room.is_finished());
        // Taken by the writer but not yet written: still counted.
        let first = outbox.recv_held().await.unwrap();
        tokio::task::yield_now().await;
        assert!(!room.is_finished());
        drop(first);
        room.await.unwrap();
        assert!(!emitter.reader_backlog_full());
        // Both arrive, whole.
        let second = outbox.recv().await.unwrap();
        assert!(second.to_line().len() > 40 << 20);
        assert!(outbox.try_recv().is_none());
        // Everything written: nothing counted any more.
        assert_eq!(emitter.shared.reader_bytes.load(Ordering::Relaxed), 0);
        assert_eq!(emitter.shared.reader_backlog.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_line_is_measured_about_as_long_as_it_is() {
        let msgs = [
            ServerMessage::error("x".repeat(5000), Some(3)),
            ServerMessage::event("agent_started", json!({"agent_id": "a", "n": [1, 2, 3]})),
            ServerMessage::Tools(crate::protocol::EventBody(
                json!({"format": "native", "tools": [{"name": "T", "description": "d".repeat(9000)}]})
                    .as_object()
                    .unwrap()
                    .clone(),
            )),
            ServerMessage::Hello {
                protocol: 1,
                version: "1".into(),
                tools: vec!["Bash".into(); 100],
                limits: json!({"a": 1}),
            },
        ];
        for msg in msgs {
            let real = msg.to_line().len();
            let counted = approx_line_len(&msg);
            assert!(
                counted >= real && counted <= real + 128,
                "{real} bytes counted as {counted}: {msg:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_newer_status_replaces_the_unwritten_one() {
        let (emitter, mut outbox) = Emitter::channel();
        let (a, b) = (Arc::new(Latest::default()), Arc::new(Latest::default()));
        let status = |server: &str, n: u64| {
            ServerMessage::event("mcp_server", json!({"server": server, "n": n}))
        };
        // A client that does not read: 1,000 statuses of two servers, around a result.
        for n in 0..500 {
            emitter.send_latest(&a, status("a", n));
            emitter.send_latest(&b, status("b", n));
        }
        emitter.send(ServerMessage::event("other", json!({})));
        for n in 500..1000 {
            emitter.send_latest(&a, status("a", n));
        }
        let mut seen = Vec::new();
        while let Some(msg) = outbox.try_recv() {
            seen.push(String::from_utf8(msg.to_line()).unwrap());
        }
        assert_eq!(
            seen.len(),
            3,
            "one per server and the other message: {seen:?}"
        );
        assert!(seen[0].contains(r#""server":"a""#) && seen[0].contains(r#""n":999"#));
        assert!(seen[1].contains(r#""server":"b""#) && seen[1].contains(r#""n":499"#));
        assert!(seen[2].contains(r#""event":"other""#));
        // Once written, the next status is queued again.
        emitter.send_latest(&a, status("a", 1000));
        let next = String::from_utf8(outbox.recv().await.unwrap().to_line()).unwrap();
        assert!(next.contains(r#""n":1000"#), "{next}");
        assert!(outbox.try_recv().is_none());
    }
}
