//! `toolrt serve` and `toolrt run`: read NDJSON lines, hand messages to the runtime, write every
//! server message to stdout through one writer task.

use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite};
use tokio::sync::{oneshot, watch};

use crate::client_waits::ClientWaits;
use crate::dispatch::{Dispatcher, Full, Unplaced};
use crate::emit::Emitter;
use crate::formats::Format;
use crate::protocol::{ApiTurn, ClientMessage, ServerMessage, parse_line_in};
use crate::runtime::{Config, Runtime, StartError};

mod gather;

/// Longest input line accepted; the rest of a longer line is skipped and reported.
pub(crate) const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// What the process signals asked for. Later states include the earlier ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum SignalState {
    /// Nothing yet.
    #[default]
    None,
    /// First SIGTERM: finish in-flight work, then exit.
    Graceful,
    /// Second SIGTERM, or SIGINT: cancel everything, then exit.
    CancelAll,
    /// A signal after everything was cancelled: exit at once, writing nothing more.
    Abort,
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
    let (runtime, outbox) = Runtime::start(config).await?;
    let (close_tx, close_rx) = oneshot::channel();
    // Model API turns' results go out as one message each, gathered on the way out.
    let turns = gather::Turns::default();
    let shape = gather::Gather::new(turns.clone());
    // A client that closed our stdout can read no result: that is a SIGINT (cancel everything,
    // accept nothing more), not a reason to go on running its calls unseen.
    let (stop, signals) = with_output_loss(signals);
    let writer = tokio::spawn(async move {
        let written = crate::emit::write_reshaped(outbox, output, close_rx, shape).await;
        if written.is_err() {
            stop.send_modify(|s| *s = (*s).max(SignalState::CancelAll));
        }
        written
    });
    // Signals are acted on by a task of their own, never behind the reader: whatever the reader
    // waits for (input, room), a SIGINT cancels everything at once.
    let canceller = tokio::spawn(cancel_on_signal(
        signals.clone(),
        runtime.dispatcher().clone(),
    ));
    let give_back = tokio::spawn(crate::memory::give_back_when_idle(
        runtime.dispatcher().clone(),
    ));
    read_loop(&runtime, input, signals, &turns).await;
    // Nobody can send an agent's calls or end it any more: every scope ends with its calls.
    runtime.end_agents();
    runtime.close_asks();
    // Draining waits for every result to be written, as long as the slowest call takes.
    runtime.shutdown().await;
    canceller.abort();
    give_back.abort();
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

/// The process signals, followed into a channel of their own that one more sender (returned)
/// can also raise: the writer, when the client's end of stdout is gone.
fn with_output_loss(
    mut signals: watch::Receiver<SignalState>,
) -> (
    std::sync::Arc<watch::Sender<SignalState>>,
    watch::Receiver<SignalState>,
) {
    let (tx, rx) = watch::channel(*signals.borrow_and_update());
    let tx = std::sync::Arc::new(tx);
    let follow = tx.clone();
    tokio::spawn(async move {
        while signals.changed().await.is_ok() {
            let now = *signals.borrow_and_update();
            follow.send_modify(|s| *s = (*s).max(now));
        }
    });
    (tx, rx)
}

/// Cancels everything accepted as soon as the signals ask for it.
async fn cancel_on_signal(mut signals: watch::Receiver<SignalState>, dispatcher: Dispatcher) {
    loop {
        if *signals.borrow_and_update() >= SignalState::CancelAll {
            dispatcher.cancel_all();
        }
        if signals.changed().await.is_err() {
            return;
        }
    }
}

/// The reader's state between lines.
struct Reader<'a> {
    dispatcher: &'a Dispatcher,
    emitter: &'a Emitter,
    signals: watch::Receiver<SignalState>,
    signals_open: bool,
    client_waits: &'a ClientWaits,
    line_no: u64,
    shutting_down: bool,
    /// `--format`: lines in that API's shape are turns.
    format: Format,
    turns: &'a gather::Turns,
}

async fn read_loop<R: AsyncBufRead + Unpin>(
    runtime: &Runtime,
    mut input: R,
    signals: watch::Receiver<SignalState>,
    turns: &gather::Turns,
) {
    let dispatcher = runtime.dispatcher();
    let mut reader = Reader {
        dispatcher,
        emitter: &dispatcher.pipeline().emitter,
        signals,
        signals_open: true,
        client_waits: dispatcher.pipeline().client_waits(),
        line_no: 0,
        shutting_down: false,
        format: runtime.format(),
        turns,
    };
    let mut line = LineBuf::default();
    loop {
        if reader.shutting_down && dispatcher.is_idle() {
            return;
        }
        let backlog_full = reader.emitter.reader_backlog_full();
        let read = tokio::select! {
            biased;
            changed = reader.signals.changed(), if reader.signals_open => {
                reader.on_signal(changed.is_ok());
                continue;
            }
            // While shutting down, look again for idleness now and then; this timer exists only
            // then, never on a call's path.
            _ = tokio::time::sleep(Duration::from_millis(10)), if reader.shutting_down => continue,
            // Answers the reader already gave wait for the writer: read nothing more until it
            // catches up (only a client that does not read its output gets here).
            _ = reader.emitter.reader_room(), if backlog_full => continue,
            r = line.read(&mut input), if !backlog_full => r,
        };
        reader.line_no += 1;
        reader.emitter.set_reply_line(reader.line_no);
        let too_long = match read {
            Ok(ReadLine::Eof) => return,
            Ok(ReadLine::Line { too_long }) => too_long,
            Err(e) => {
                tracing::warn!("reading stdin failed: {e}");
                return;
            }
        };
        // Taken only once whole: a read interrupted by a signal or the shutdown poll keeps its
        // partial line and goes on where it stopped.
        let bytes = line.take();
        if too_long {
            reader.over_long(runtime, &bytes);
            continue;
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            reader.error("line is not valid UTF-8".into());
            continue;
        };
        let text = text.trim();
        if text.is_empty() {
            // A blank line is no message: nothing is answered, but it counts as a line.
            continue;
        }
        let len = text.len();
        let msg = match parse_line_in(text, reader.format) {
            Ok(msg) => msg,
            Err(e) => {
                reader.error(e.to_string());
                continue;
            }
        };
        drop(bytes);
        match msg {
            ClientMessage::Shutdown => reader.shutting_down = true,
            // A `session` message only names what later hooks see; it never waits either.
            ClientMessage::PermissionResponse(_)
            | ClientMessage::Cancel(_)
            | ClientMessage::Session { .. } => dispatcher.control(msg),
            // A client tool's answer never waits either: calls holding places wait for it.
            ClientMessage::ExecuteResult(result) => runtime.answer_execute(result),
            // Ending an agent is like a cancel: read and done at once, even while shutting down.
            msg @ ClientMessage::AgentEnd { .. } => runtime.agents(msg),
            msg if reader.shutting_down => reader.refuse(
                msg,
                "shutting_down",
                "the server is shutting down and accepts no new calls".into(),
            ),
            msg @ (ClientMessage::Rewind { .. }
            | ClientMessage::Hello { .. }
            | ClientMessage::ListTools { .. }
            | ClientMessage::RegisterTools { .. }
            | ClientMessage::UnregisterTools { .. }) => runtime.submit(msg).await,
            ClientMessage::ApiTurn(turn) => reader.turn(runtime, turn, len).await,
            msg @ ClientMessage::AgentStart(_) => runtime.agents(msg),
            msg => {
                reader.accept(msg, len).await;
            }
        }
    }
}

impl Reader<'_> {
    /// A line over [`MAX_LINE_BYTES`] is not read, only reported; `head` is what was kept of
    /// it. If its start shows a client tool's answer, the call waiting for it ends now, failed,
    /// rather than at its time limit (only the start is looked at).
    fn over_long(&self, runtime: &Runtime, head: &[u8]) {
        let mut message = format!("line longer than {MAX_LINE_BYTES} bytes; ignored");
        if let Some(id) = crate::protocol::over_long_result_id(head) {
            let why = format!(
                "The client's execute_result for this call (request_id {id:?}) was longer than toolrt's line limit ({MAX_LINE_BYTES} bytes), so it was not read."
            );
            if runtime.fail_execute(id.clone(), why) {
                message.push_str(&format!(
                    ": it was the execute_result for request_id {id:?}, whose call ended failed"
                ));
            }
        }
        self.error(message);
    }

    fn error(&self, message: String) {
        self.emitter
            .send_reply(ServerMessage::error(message, Some(self.line_no)));
    }

    fn on_signal(&mut self, open: bool) {
        if !open {
            self.signals_open = false;
            return;
        }
        // CancelAll is acted on by `cancel_on_signal`; here every signal means: no new calls.
        self.signals.borrow_and_update();
        self.shutting_down = true;
    }

    /// Accepts a call line: started or parked by the dispatcher. When admission and the parked
    /// queue are both full, the reader waits for room only while no admitted call waits for the
    /// client: every admitted call then finishes by itself, so room comes without any input. If
    /// a call does wait for the client, its answer may be in the very input behind this line, so
    /// the reader refuses this line as busy and reads on.
    async fn accept(&mut self, msg: ClientMessage, bytes: usize) -> bool {
        let mut msg = msg;
        loop {
            let room = self.dispatcher.parked_room();
            match self.dispatcher.place(msg, bytes) {
                Ok(()) => return true,
                // Waiting for one agent's room would stop every other agent's lines behind
                // this one: refused, and the reader reads on.
                Err(Unplaced {
                    msg,
                    full: Full::Agent(agent),
                }) => {
                    let parked = self.dispatcher.parked_calls_of(Some(&agent));
                    self.refuse(
                        *msg,
                        "busy",
                        format!(
                            "toolrt is busy: every admission place is taken and agent {agent:?} already has {parked} calls waiting for one (its share of --max-parked); read its results and send this again"
                        ),
                    );
                    return false;
                }
                Err(back) => msg = *back.msg,
            }
            let waits = self.client_waits.now();
            if waits > 0 {
                let parked = self.dispatcher.parked_calls();
                self.refuse(
                    msg,
                    "busy",
                    format!(
                        "toolrt is busy: every admission place is taken, {parked} accepted calls wait for one, and {waits} call(s) wait for your answer (a permission_response or an execute_result); answer them, read the results, and send this again"
                    ),
                );
                return false;
            }
            let signalled = tokio::select! {
                biased;
                changed = self.signals.changed(), if self.signals_open => Some(changed.is_ok()),
                _ = self.client_waits.some() => None,
                _ = room => None,
            };
            if let Some(open) = signalled {
                self.on_signal(open);
                if self.shutting_down {
                    self.refuse(
                        msg,
                        "shutting_down",
                        "the server is shutting down and accepts no new calls".into(),
                    );
                    return false;
                }
            }
        }
    }

    /// A model API's turn (docs/FORMATS.md): its calls run as one batch named by the turn's
    /// id, and their results go out as one message in the API's shape ([`gather`]). A turn
    /// without calls, with more calls than admission places (its results go out together, so
    /// they must all fit), or whose id is in flight is refused whole.
    async fn turn(&mut self, runtime: &Runtime, turn: ApiTurn, bytes: usize) {
        let ApiTurn {
            format,
            id,
            body,
            agent_id,
        } = turn;
        let read = match crate::formats::read_calls(format, &body) {
            Ok(read) => read,
            Err(e) => {
                return self.error(format!("not a turn of the {format} format: {e}"));
            }
        };
        drop(body);
        let id = id
            .or(read.id)
            .unwrap_or_else(|| format!("line-{}", self.line_no));
        let ids: Vec<String> = read.calls.iter().map(|c| c.id.clone()).collect();
        let capacity = self.dispatcher.capacity();
        let refusal = if ids.is_empty() {
            Some((
                "no_tool_calls",
                "it holds no tool calls, so there is nothing to run".to_string(),
            ))
        } else if ids.len() > capacity {
            Some((
                "too_many_calls",
                format!(
                    "it holds {} tool calls and at most {capacity} fit (--max-in-flight + --max-queued): its results go out together",
                    ids.len()
                ),
            ))
        } else if self.dispatcher.batch_in_flight(&id) {
            Some((
                "duplicate_id",
                format!("a turn or batch with id {id:?} is still in flight"),
            ))
        } else {
            None
        };
        if let Some((code, why)) = refusal {
            return self.emitter.send_reply(ServerMessage::Error {
                message: format!("{format} turn {id:?} was not accepted: {why}"),
                line: Some(self.line_no),
                code: Some(code),
                ids,
            });
        }
        let mut calls = read.calls;
        if matches!(format, Format::OpenAiChat | Format::OpenAiResponses) {
            for call in &mut calls {
                decode_arguments(call, runtime);
            }
        }
        // An agent's turn: its calls are decided in the agent's scope, as a batch's are.
        if agent_id.is_some() {
            for call in &mut calls {
                call.agent_id.clone_from(&agent_id);
            }
        }
        self.turns.expect(&id, format, ids);
        if !self
            .accept(
                ClientMessage::Batch {
                    id: id.clone(),
                    calls,
                },
                bytes,
            )
            .await
        {
            self.turns.forget(&id);
        }
    }

    /// An error line saying this call line was not accepted, naming its ids.
    fn refuse(&self, msg: ClientMessage, code: &'static str, why: String) {
        let (what, ids) = match msg {
            ClientMessage::ToolUse(call) => (format!("tool_use {:?}", call.id), vec![call.id]),
            ClientMessage::Batch { id, calls } => {
                let ids: Vec<String> = calls.into_iter().map(|c| c.id).collect();
                (format!("batch {id:?} ({} calls)", ids.len()), ids)
            }
            ClientMessage::Rewind { to } => (format!("rewind to {to:?}"), Vec::new()),
            ClientMessage::ApiTurn(turn) => (
                format!("{} turn {:?}", turn.format, turn.id.unwrap_or_default()),
                Vec::new(),
            ),
            other => (kind_of(&other), Vec::new()),
        };
        self.emitter.send_reply(ServerMessage::Error {
            message: format!("{why}; {what} was not accepted"),
            line: Some(self.line_no),
            code: Some(code),
            ids,
        });
    }
}

/// A message named for an error line by its type (and its id, for an agent's): never its
/// contents, which may be as long as the line (a `register_tools`' tools).
fn kind_of(msg: &ClientMessage) -> String {
    match msg {
        ClientMessage::Hello { .. } => "hello".into(),
        ClientMessage::ListTools { .. } => "list_tools".into(),
        ClientMessage::RegisterTools { tools } => format!("register_tools ({} tools)", tools.len()),
        ClientMessage::UnregisterTools { names } => {
            format!("unregister_tools ({} names)", names.len())
        }
        // Agent ids are at most MAX_ID_BYTES long.
        ClientMessage::AgentStart(start) => format!("agent_start {:?}", start.agent_id),
        ClientMessage::AgentEnd { agent_id, .. } => format!("agent_end {agent_id:?}"),
        ClientMessage::ToolUse(_) => "tool_use".into(),
        ClientMessage::Batch { .. } => "batch".into(),
        ClientMessage::Cancel(_) => "cancel".into(),
        ClientMessage::PermissionResponse(_) => "permission_response".into(),
        ClientMessage::Rewind { .. } => "rewind".into(),
        ClientMessage::Session { .. } => "session".into(),
        ClientMessage::Shutdown => "shutdown".into(),
        ClientMessage::ExecuteResult(_) => "execute_result".into(),
        ClientMessage::ApiTurn(turn) => format!("{} turn", turn.format),
    }
}

/// An OpenAI call's `arguments`, the JSON text the model wrote, decoded as strictly as an
/// input line (what does not decode to an object stays text: the schema check says why), and
/// the `null`s strict mode makes the model send for absent optional fields dropped.
fn decode_arguments(call: &mut crate::call::ToolCall, runtime: &Runtime) {
    if let serde_json::Value::String(text) = &call.input
        && let Ok(serde_json::Value::Object(map)) = crate::protocol::json::from_str(text)
    {
        call.input = serde_json::Value::Object(map);
    }
    if call.input.is_object()
        && let Some(entry) = runtime.resolve_tool(&call.name)
    {
        crate::formats::strict::drop_absent_nulls(&mut call.input, &entry.schema);
    }
}

enum ReadLine {
    Eof,
    Line { too_long: bool },
}

/// One input line as it is read, kept across interrupted reads.
#[derive(Default)]
struct LineBuf {
    buf: Vec<u8>,
    too_long: bool,
    any: bool,
}

impl LineBuf {
    /// Reads up to the end of a line (without the newline), keeping at most
    /// [`MAX_LINE_BYTES`]. Cancel-safe: what was read stays for the next call.
    async fn read<R: AsyncBufRead + Unpin>(&mut self, input: &mut R) -> std::io::Result<ReadLine> {
        loop {
            let chunk = input.fill_buf().await?;
            if chunk.is_empty() {
                return Ok(if self.any {
                    ReadLine::Line {
                        too_long: self.too_long,
                    }
                } else {
                    ReadLine::Eof
                });
            }
            self.any = true;
            let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            if self.too_long || self.buf.len() + take > MAX_LINE_BYTES {
                self.too_long = true;
            } else {
                self.buf.extend_from_slice(&chunk[..take]);
            }
            input.consume(if done { take + 1 } else { take });
            if done {
                return Ok(ReadLine::Line {
                    too_long: self.too_long,
                });
            }
        }
    }

    /// The line read, leaving the buffer ready for the next. A buffer a long line grew is not
    /// kept.
    fn take(&mut self) -> Vec<u8> {
        self.too_long = false;
        self.any = false;
        let keep = if self.buf.capacity() > 64 * 1024 {
            Vec::new()
        } else {
            Vec::with_capacity(self.buf.capacity())
        };
        std::mem::replace(&mut self.buf, keep)
    }
}

/// Watches SIGTERM and SIGINT: the first SIGTERM asks for a graceful stop, a second SIGTERM or
/// any SIGINT cancels everything, and a signal after that aborts.
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
            let now = *tx.borrow();
            let next = tokio::select! {
                _ = term.recv() => match now {
                    SignalState::None => SignalState::Graceful,
                    SignalState::Graceful => SignalState::CancelAll,
                    _ => SignalState::Abort,
                },
                _ = int.recv() => if now < SignalState::CancelAll {
                    SignalState::CancelAll
                } else {
                    SignalState::Abort
                },
            };
            if tx.send(next).is_err() {
                return;
            }
        }
    });
    rx
}
