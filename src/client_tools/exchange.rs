//! The wire half of client tools: one `execute` out per call, one `execute_result` back, and
//! the table of calls waiting for it.
//!
//! The table holds one entry per call that is executing a client tool, so it is bounded by the
//! calls in flight. An entry leaves it when the answer comes, or when its call stops waiting
//! (cancelled, timed out, dropped), and then toolrt writes `execute_cancel`; an answer after
//! that finds no entry and gets an `error` line, never a second result.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

use crate::call::Input;
use crate::deadlines::Deadlines;
use crate::emit::Emitter;
use crate::protocol::{ExecuteContent, ExecuteResult, ServerMessage};
use crate::tool::{ToolContext, ToolOutput};

/// The prefix of every `request_id` of an `execute`; the rest is a sequence number.
const REQUEST_PREFIX: &str = "exec-";

/// The calls waiting for the client to run a client tool.
pub(crate) struct Exchange {
    waiting: Mutex<Table>,
    /// The next request's number: every number below it was handed out once.
    seq: AtomicU64,
    /// No answer can come any more (the client closed its input).
    closed: AtomicBool,
    emitter: Emitter,
    /// How many calls wait for an answer only the client can give; the server's reader never
    /// stops reading input while it is above zero.
    client_waits: watch::Sender<usize>,
    /// The waiting calls' time limits (one task for all of them, not a timer per call).
    deadlines: Arc<Deadlines>,
}

/// The waiting calls by request number.
type Table = HashMap<u64, oneshot::Sender<ExecuteResult>, BuildHasherDefault<SeqHasher>>;

/// The wait table's hash. Its keys are toolrt's own sequence numbers, never the client's (an
/// answer's id is parsed and range-checked first), so they need no defence against chosen keys:
/// one multiplication spreads them (SipHash cost more than the rest of an insert).
#[derive(Default)]
struct SeqHasher(u64);

impl Hasher for SeqHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(self.0.rotate_left(8) ^ u64::from(*b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        // Fibonacci hashing: the top bits, which the table's tags use, differ too.
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("waiting", &self.lock().len())
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
    pub(crate) fn new(emitter: Emitter, client_waits: watch::Sender<usize>) -> Self {
        Self {
            waiting: Mutex::new(Table::default()),
            seq: AtomicU64::new(1),
            closed: AtomicBool::new(false),
            emitter,
            client_waits,
            deadlines: Arc::default(),
        }
    }

    /// The time limits of client tools' calls, shared by the tools run in this process.
    pub(crate) fn deadlines(&self) -> &Arc<Deadlines> {
        &self.deadlines
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
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
        let Some(tx) = self.lock().remove(&number) else {
            return Err(AnswerError::Late(result.request_id));
        };
        let id = result.request_id.clone();
        // The call may have stopped waiting between the removal and now: then it is late.
        tx.send(result).map_err(|_| AnswerError::Late(id))
    }

    /// No more answers can come: every waiting call ends `cancelled` (each with an
    /// `execute_cancel`), and later calls end at once without an `execute`.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        // Dropping the senders wakes each waiting call with "no answer".
        let drained: Vec<_> = self.lock().drain().collect();
        drop(drained);
        self.lock().shrink_to_fit();
    }

    #[cfg(test)]
    /// How many calls wait for an answer now.
    pub(crate) fn waiting(&self) -> usize {
        self.lock().len()
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
        let request_id = format!("{REQUEST_PREFIX}{number}");
        let (tx, mut rx) = oneshot::channel();
        self.lock().insert(number, tx);
        let deadline = self.deadlines.start(timeout);
        let mut wait = Wait::new(self, number, request_id.clone());
        self.emitter.send(ServerMessage::Execute {
            request_id,
            tool_use_id: ctx.tool_use_id.to_string(),
            name: name.to_string(),
            input: Value::Object(input),
            agent_id: ctx.agent.as_deref().map(String::from),
        });
        // Closing can race the insert above; check again so the wait cannot outlive the client.
        if self.closed.load(Ordering::SeqCst) {
            self.lock().remove(&number);
        }
        let answer = tokio::select! {
            biased;
            answer = &mut rx => answer.ok(),
            _ = ctx.cancel.cancelled() => None,
            _ = deadline.expired() => None,
        };
        if let Some(answer) = answer {
            wait.answered = true;
            return output_of(answer, ctx.hook_response);
        }
        // Not answered: withdraw the request (unless the answer came in the meantime).
        if !wait.withdraw()
            && let Ok(answer) = rx.try_recv()
        {
            return output_of(answer, ctx.hook_response);
        }
        if ctx.cancel.is_cancelled() {
            ToolOutput::cancelled(format!(
                "The call was cancelled while the client ran {name}; toolrt sent execute_cancel."
            ))
        } else if self.closed.load(Ordering::SeqCst) {
            ToolOutput::cancelled(format!(
                "The client closed its input before it answered this call of {name}; toolrt sent execute_cancel."
            ))
        } else {
            ToolOutput::timed_out(format!(
                "{name} timed out: the client did not answer within {} ms; toolrt sent execute_cancel.",
                timeout.as_millis()
            ))
        }
    }
}

/// One call's wait: counted as a wait for the client while it lives; a request still in the
/// table when it ends is withdrawn with an `execute_cancel`, so even a dropped call leaves
/// nothing behind.
struct Wait<'a> {
    exchange: &'a Exchange,
    number: u64,
    request_id: String,
    answered: bool,
}

impl<'a> Wait<'a> {
    fn new(exchange: &'a Exchange, number: u64, request_id: String) -> Self {
        // The reader waits only for the count to leave zero: only that change wakes it. Telling
        // every change cost a round trip 16 lock round trips (a watch channel wakes through
        // eight `Notify`s, each locked whether or not anyone waits).
        exchange.client_waits.send_if_modified(|n| {
            *n += 1;
            *n == 1
        });
        Self {
            exchange,
            number,
            request_id,
            answered: false,
        }
    }

    /// Takes the request out of the table and tells the client; false if it was no longer
    /// there (answered meanwhile).
    fn withdraw(&mut self) -> bool {
        if self.answered {
            return false;
        }
        self.answered = true;
        let removed = self.exchange.lock().remove(&self.number).is_some();
        // Also after close(), which emptied the table: the client may still read its output.
        if removed || self.exchange.closed.load(Ordering::SeqCst) {
            self.exchange.emitter.send(ServerMessage::ExecuteCancel {
                request_id: std::mem::take(&mut self.request_id),
            });
        }
        removed
    }
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        self.withdraw();
        // Nobody waits for the count to fall (see `Wait::new`).
        self.exchange.client_waits.send_if_modified(|n| {
            *n -= 1;
            false
        });
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
        let waits = watch::Sender::new(0);
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
        assert_eq!(*waits.borrow(), 1);
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
        assert_eq!(*waits.borrow(), 0);
        assert_eq!(exchange.waiting(), 0);
        assert!(
            outbox.try_recv().is_none(),
            "no execute_cancel after an answer"
        );
    }

    #[tokio::test]
    async fn timeout_cancel_and_close_withdraw_the_request() {
        let (emitter, mut outbox) = Emitter::channel();
        let exchange = Arc::new(Exchange::new(emitter, watch::Sender::new(0)));
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
