//! The wire half of client tools: one `execute` out per call, one `execute_result` back, and
//! the table of calls waiting for it.
//!
//! The table holds one entry per call that is executing a client tool, so it is bounded by the
//! calls in flight. The entry carries the call's deadline too (a [`Timed`] table: one insert and
//! one lock per call, no timer, token or task of its own); the sweeper answers an expired call
//! "timed out" through its entry. An entry leaves the table when the answer comes, when its
//! deadline passes, when the client closes its input, or when its call stops waiting
//! (cancelled, dropped); in every case but the answer toolrt writes `execute_cancel`. An answer
//! after that finds no entry and gets an `error` line, never a second result.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::call::Input;
use crate::client_waits::{ClientWait, ClientWaits};
use crate::deadlines::{Deadlines, Expire, Timed};
use crate::emit::Emitter;
use crate::protocol::{ExecuteContent, ExecuteResult, ServerMessage};
use crate::tool::{ToolContext, ToolOutput};

/// The prefix of every `request_id` of an `execute`; the rest is a sequence number.
const REQUEST_PREFIX: &str = "exec-";

/// The calls waiting for the client to run a client tool.
pub(crate) struct Exchange {
    /// The waiting calls by request number, each with its deadline.
    waiting: Timed<Waiter>,
    /// The next request's number: every number below it was handed out once.
    seq: AtomicU64,
    /// No answer can come any more (the client closed its input).
    closed: AtomicBool,
    emitter: Emitter,
    /// How many calls wait for an answer only the client can give; the server's reader never
    /// stops reading input while it is above zero.
    client_waits: Arc<ClientWaits>,
    /// The time limits of library users' client tools (their functions run in this process).
    deadlines: Arc<Deadlines>,
}

/// What ends a call's wait, sent through its entry (a dropped entry: the client closed).
enum Reply {
    Answer(ExecuteResult),
    TimedOut,
}

/// A waiting call's entry: where its answer goes.
struct Waiter(oneshot::Sender<Reply>);

impl Expire for Waiter {
    fn expire(self) {
        let _ = self.0.send(Reply::TimedOut);
    }
}

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("waiting", &self.waiting.len())
            .finish()
    }
}

/// Why an `execute_result` was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AnswerError {
    /// No `execute` ever had this id.
    #[error("execute_result: no execute has request_id {0:?}")]
    Unknown(String),
    /// The call no longer waits: answered already, cancelled or timed out.
    #[error(
        "execute_result: request_id {0:?} is no longer waited for (it was answered already, or its call was cancelled or timed out; an execute_cancel was sent); this answer was ignored"
    )]
    Late(String),
}

impl Exchange {
    /// An exchange writing through `emitter`, counting its waits in `client_waits`.
    pub(crate) fn new(emitter: Emitter, client_waits: Arc<ClientWaits>) -> Self {
        Self {
            waiting: Timed::default(),
            seq: AtomicU64::new(1),
            closed: AtomicBool::new(false),
            emitter,
            client_waits,
            deadlines: Arc::default(),
        }
    }

    /// The time limits of client tools run in this process.
    pub(crate) fn deadlines(&self) -> &Arc<Deadlines> {
        &self.deadlines
    }

    /// Hands the client's answer to the call waiting for it.
    pub(crate) fn answer(&self, result: ExecuteResult) -> Result<(), AnswerError> {
        let number = result
            .request_id
            .strip_prefix(REQUEST_PREFIX)
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|n| *n >= 1 && *n < self.seq.load(Ordering::Acquire));
        let Some(number) = number else {
            return Err(AnswerError::Unknown(result.request_id));
        };
        let mut result = Some(result);
        // Sent under the table's lock: whoever finds the entry gone finds the reply in place.
        let sent = self.waiting.remove_then(number, |Waiter(tx)| {
            result
                .take()
                .is_some_and(|answer| tx.send(Reply::Answer(answer)).is_ok())
        });
        if sent == Some(true) {
            return Ok(());
        }
        let id = match result {
            Some(result) => result.request_id,
            // The call stopped waiting in the meantime (its reply is dropped with it).
            None => format!("{REQUEST_PREFIX}{number}"),
        };
        Err(AnswerError::Late(id))
    }

    /// No more answers can come: every waiting call ends `cancelled` (each with an
    /// `execute_cancel`), and later calls end at once without an `execute`.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        // Dropping the entries wakes each waiting call with "no answer".
        self.waiting.drain();
    }

    #[cfg(test)]
    /// How many calls wait for an answer now.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Runs one call of client tool `name` through the client: writes `execute`, waits for the
    /// answer within `timeout`, and writes `execute_cancel` when the call stops waiting without
    /// one.
    pub(crate) async fn execute(
        &self,
        name: &str,
        input: Input,
        ctx: &ToolContext,
        timeout: Duration,
    ) -> ToolOutput {
        if self.closed.load(Ordering::SeqCst) {
            return closed_output(name);
        }
        let number = self.seq.fetch_add(1, Ordering::AcqRel);
        let (tx, rx) = oneshot::channel();
        self.waiting.insert(number, timeout, Waiter(tx));
        let mut wait = Wait::new(self, number, rx);
        self.emitter.send(ServerMessage::Execute {
            request_id: format!("{REQUEST_PREFIX}{number}"),
            tool_use_id: ctx.tool_use_id.to_string(),
            name: name.to_string(),
            input: Value::Object(input),
            agent_id: ctx.agent.as_deref().map(String::from),
        });
        // Closing can race the insert above; drop the entry so the wait cannot outlive the
        // client (the call then ends as closed).
        if self.closed.load(Ordering::SeqCst) {
            self.waiting.remove_then(number, drop);
        }
        let end = tokio::select! {
            biased;
            reply = &mut wait.rx => wait.settle(reply.ok()),
            _ = ctx.cancel.cancelled() => wait.withdraw(),
        };
        match end {
            End::Answer(answer) => output_of(answer, ctx.hook_response),
            _ if ctx.cancel.is_cancelled() => ToolOutput::cancelled(format!(
                "The call was cancelled while the client ran {name}; toolrt sent execute_cancel."
            )),
            End::Closed => ToolOutput::cancelled(format!(
                "The client closed its input before it answered this call of {name}; toolrt sent execute_cancel."
            )),
            End::TimedOut | End::Withdrawn => ToolOutput::timed_out(format!(
                "{name} timed out: the client did not answer within {} ms; toolrt sent execute_cancel.",
                timeout.as_millis()
            )),
        }
    }
}

/// How a call's wait ended.
enum End {
    Answer(ExecuteResult),
    TimedOut,
    Closed,
    /// The call took its request back (cancelled).
    Withdrawn,
}

/// One call's wait: counted as a wait for the client while it lives. However it ends (even
/// dropped), a request that was not answered is withdrawn with one `execute_cancel`.
struct Wait<'a> {
    exchange: &'a Exchange,
    number: u64,
    rx: oneshot::Receiver<Reply>,
    settled: bool,
    /// Dropped after `Drop::drop` has withdrawn the request.
    _counted: ClientWait<'a>,
}

impl<'a> Wait<'a> {
    fn new(exchange: &'a Exchange, number: u64, rx: oneshot::Receiver<Reply>) -> Self {
        Self {
            exchange,
            number,
            rx,
            settled: false,
            _counted: exchange.client_waits.start(),
        }
    }

    /// The entry left the table with `reply` (None: dropped, as closing does); anything but an
    /// answer is told to the client with `execute_cancel`.
    fn settle(&mut self, reply: Option<Reply>) -> End {
        self.settled = true;
        let end = match reply {
            Some(Reply::Answer(answer)) => return End::Answer(answer),
            Some(Reply::TimedOut) => End::TimedOut,
            None => End::Closed,
        };
        self.cancel_line();
        end
    }

    /// Takes the request back: out of the table, told to the client. If it had left the table
    /// already, how it left decides (an answer that came meanwhile is kept).
    fn withdraw(&mut self) -> End {
        if self
            .exchange
            .waiting
            .remove_then(self.number, drop)
            .is_some()
        {
            self.settled = true;
            self.cancel_line();
            return End::Withdrawn;
        }
        // Whoever took the entry sent its reply under the table's lock, or dropped it.
        let reply = self.rx.try_recv().ok();
        self.settle(reply)
    }

    fn cancel_line(&self) {
        self.exchange.emitter.send(ServerMessage::ExecuteCancel {
            request_id: format!("{REQUEST_PREFIX}{}", self.number),
        });
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.withdraw();
        }
    }
}

fn closed_output(name: &str) -> ToolOutput {
    ToolOutput::cancelled(format!(
        "The client closed its input: nobody can run {name} any more, so this call did not run."
    ))
}

/// The client's answer as a tool output: text as it is; content blocks as an MCP result's
/// (text blocks' text for the model, every other block described and passed whole).
fn output_of(answer: ExecuteResult, for_hooks: bool) -> ToolOutput {
    match answer.content {
        ExecuteContent::Text(text) if answer.is_error => ToolOutput::failed(text),
        ExecuteContent::Text(text) => ToolOutput::success(text),
        ExecuteContent::Blocks(blocks) => crate::mcp::content::map_result(
            &json!({"content": blocks, "isError": answer.is_error}),
            for_hooks,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::Emitter;
    use crate::tool::{ProgressSink, ToolStatus};
    use tokio_util::sync::CancellationToken;

    fn ctx() -> ToolContext {
        ToolContext {
            tool_use_id: Arc::from("t1"),
            cancel: CancellationToken::new(),
            progress: ProgressSink::discard(),
            session: Arc::new(crate::session::Session::new(
                std::env::temp_dir(),
                std::env::temp_dir(),
            )),
            agent: None,
            state: crate::tool::StateKey::SESSION,
            output_chars: 1000,
            hook_response: false,
            decided_paths: None,
        }
    }

    fn result(id: &str, text: &str) -> ExecuteResult {
        ExecuteResult {
            request_id: id.into(),
            content: ExecuteContent::Text(text.into()),
            is_error: false,
        }
    }

    #[tokio::test]
    async fn answers_reach_their_call_once_and_every_other_answer_is_refused() {
        let (emitter, mut outbox) = Emitter::channel();
        let waits = Arc::new(ClientWaits::default());
        let exchange = Arc::new(Exchange::new(emitter, waits.clone()));
        let ex = exchange.clone();
        let ctx = ctx();
        let call = tokio::spawn(async move {
            ex.execute("Tool", Input::new(), &ctx, Duration::from_secs(30))
                .await
        });
        let Some(ServerMessage::Execute { request_id, .. }) = outbox.recv().await else {
            panic!("an execute first")
        };
        assert_eq!(waits.now(), 1);
        assert_eq!(
            exchange.answer(result("exec-99", "x")),
            Err(AnswerError::Unknown("exec-99".into()))
        );
        assert_eq!(
            exchange.answer(result("exec-0", "x")),
            Err(AnswerError::Unknown("exec-0".into()))
        );
        assert_eq!(
            exchange.answer(result("nonsense", "x")),
            Err(AnswerError::Unknown("nonsense".into()))
        );
        exchange.answer(result(&request_id, "done")).unwrap();
        assert_eq!(
            exchange.answer(result(&request_id, "again")),
            Err(AnswerError::Late(request_id.clone()))
        );
        let out = call.await.unwrap();
        assert_eq!(out, ToolOutput::success("done"));
        assert_eq!(waits.now(), 0);
        assert_eq!(exchange.waiting(), 0);
        assert!(
            outbox.try_recv().is_none(),
            "no execute_cancel after an answer"
        );
    }

    #[tokio::test]
    async fn timeout_cancel_and_close_withdraw_the_request() {
        let (emitter, mut outbox) = Emitter::channel();
        let exchange = Arc::new(Exchange::new(emitter, Arc::default()));
        // Timeout.
        let out = exchange
            .execute("Slow", Input::new(), &ctx(), Duration::from_millis(1))
            .await;
        assert_eq!(out.status, ToolStatus::TimedOut);
        assert!(
            out.content.contains("did not answer within 1 ms"),
            "{out:?}"
        );
        let Some(ServerMessage::Execute { request_id, .. }) = outbox.recv().await else {
            panic!()
        };
        assert_eq!(
            outbox.recv().await,
            Some(ServerMessage::ExecuteCancel {
                request_id: request_id.clone()
            })
        );
        assert_eq!(
            exchange.answer(result(&request_id, "late")),
            Err(AnswerError::Late(request_id))
        );
        // Cancel.
        let c = ctx();
        c.cancel.cancel();
        let out = exchange
            .execute("Slow", Input::new(), &c, Duration::from_secs(30))
            .await;
        assert_eq!(out.status, ToolStatus::Cancelled);
        assert!(matches!(
            outbox.recv().await,
            Some(ServerMessage::Execute { .. })
        ));
        assert!(matches!(
            outbox.recv().await,
            Some(ServerMessage::ExecuteCancel { .. })
        ));
        // Close while waiting, then a call after close.
        let ex = exchange.clone();
        let call = tokio::spawn(async move {
            ex.execute("Slow", Input::new(), &ctx(), Duration::from_secs(30))
                .await
        });
        assert!(matches!(
            outbox.recv().await,
            Some(ServerMessage::Execute { .. })
        ));
        exchange.close();
        let out = call.await.unwrap();
        assert_eq!(out.status, ToolStatus::Cancelled);
        assert!(out.content.contains("closed its input"), "{out:?}");
        assert!(matches!(
            outbox.recv().await,
            Some(ServerMessage::ExecuteCancel { .. })
        ));
        let out = exchange
            .execute("Slow", Input::new(), &ctx(), Duration::from_secs(30))
            .await;
        assert_eq!(out.status, ToolStatus::Cancelled);
        assert!(outbox.try_recv().is_none(), "no execute after close");
        assert_eq!(exchange.waiting(), 0);
    }

    #[test]
    fn blocks_become_text_and_attachments() {
        let out = output_of(
            ExecuteResult {
                request_id: "exec-1".into(),
                content: ExecuteContent::Blocks(vec![
                    json!({"type": "text", "text": "hello"}),
                    json!({"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}),
                ]),
                is_error: false,
            },
            false,
        );
        assert_eq!(out.status, ToolStatus::Success);
        assert!(
            out.content.starts_with("hello\n[image: image/png"),
            "{out:?}"
        );
        assert_eq!(out.attachments.map(|a| a.blocks.len()), Some(2));
        let out = output_of(
            ExecuteResult {
                request_id: "exec-1".into(),
                content: ExecuteContent::Text("broke".into()),
                is_error: true,
            },
            false,
        );
        assert_eq!(out, ToolOutput::failed("broke"));
    }
}
