//! The results of a model API's turn (`anthropic_message`, `openai_chat_message`,
//! `openai_responses_items`, or any line of a `--format` session) go out as one message in
//! that API's shape, once every call of the turn has its result.
//!
//! The reader runs the turn as a batch whose id is the turn's, and says so here first
//! ([`Turns::expect`]). The writer ([`Gather`], the writer's [`Reshape`]) learns from the
//! batch's `batch_start` which calls were accepted, keeps their `tool_result`s — each still
//! holding its call's admission place, so admission bounds what is kept — and writes the one
//! message when the last arrives, in the turn's order. A call the dispatcher refused (its id
//! in flight already) is answered in the message too, so the API gets an answer for every call.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use crate::call::{Outcome, ToolResult};
use crate::emit::{Outgoing, Reshape};
use crate::formats::Format;
use crate::protocol::ServerMessage;

/// A turn the reader placed and the writer has not seen start yet.
#[derive(Debug)]
struct Expected {
    format: Format,
    /// The call ids, in the turn's order.
    ids: Vec<String>,
}

/// The turns expected, shared by the reader (which adds them) and the writer (which takes them
/// at their `batch_start`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Turns {
    expected: Arc<Mutex<HashMap<String, Expected>>>,
}

impl Turns {
    /// Batch `id` is a turn of `format` with these calls: gather its results.
    pub(crate) fn expect(&self, id: &str, format: Format, ids: Vec<String>) {
        self.lock().insert(id.to_string(), Expected { format, ids });
    }

    /// Batch `id` was refused whole: no `batch_start` will come.
    pub(crate) fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    fn take(&self, id: &str) -> Option<Expected> {
        self.lock().remove(id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Expected>> {
        self.expected.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A turn started: results kept until every accepted call has one.
struct Gathering {
    format: Format,
    ids: Vec<String>,
    results: HashMap<String, Outgoing>,
    waiting: usize,
}

/// The writer's side: see the module doc.
pub(crate) struct Gather {
    turns: Turns,
    started: HashMap<String, Gathering>,
    /// Call id → its turn's id, for the accepted calls whose result has not come yet.
    turn_of: HashMap<String, String>,
}

impl Gather {
    pub(crate) fn new(turns: Turns) -> Self {
        Self {
            turns,
            started: HashMap::new(),
            turn_of: HashMap::new(),
        }
    }

    /// A `batch_start` (its fields): if the batch is an expected turn, its accepted calls'
    /// results are kept from now on. A turn with no accepted call is answered at once.
    fn on_batch_start(
        &mut self,
        fields: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<Outgoing> {
        let batch = fields.get("batch")?.as_str()?;
        let expected = self.turns.take(batch)?;
        let accepted: HashSet<&str> = fields
            .get("ids")
            .and_then(|ids| ids.as_array())
            .into_iter()
            .flatten()
            .filter_map(|id| id.as_str())
            .collect();
        for id in &accepted {
            self.turn_of.insert((*id).to_string(), batch.to_string());
        }
        let gathering = Gathering {
            format: expected.format,
            ids: expected.ids,
            results: HashMap::new(),
            waiting: accepted.len(),
        };
        if gathering.waiting == 0 {
            return Some(answer(batch, gathering));
        }
        self.started.insert(batch.to_string(), gathering);
        None
    }
}

impl Reshape for Gather {
    fn reshape(&mut self, out: Outgoing, ready: &mut Vec<Outgoing>) {
        let (turn, id) = match out.message() {
            // A native session's results pass without a lookup.
            ServerMessage::ToolResult(_) if self.turn_of.is_empty() => return ready.push(out),
            ServerMessage::ToolResult(result) => match self.turn_of.remove(&result.tool_use_id) {
                Some(turn) => (turn, result.tool_use_id.clone()),
                None => return ready.push(out),
            },
            ServerMessage::Event(body) if out.message().event_name() == Some("batch_start") => {
                let answered = self.on_batch_start(&body.0);
                ready.push(out);
                ready.extend(answered);
                return;
            }
            _ => return ready.push(out),
        };
        let Some(gathering) = self.started.get_mut(&turn) else {
            return ready.push(out);
        };
        gathering.results.insert(id, out);
        gathering.waiting -= 1;
        if gathering.waiting == 0
            && let Some(done) = self.started.remove(&turn)
        {
            ready.push(answer(&turn, done));
        }
    }
}

/// The one message answering a turn, holding every result's admission place until written.
fn answer(turn: &str, mut gathering: Gathering) -> Outgoing {
    let mut parts = Vec::with_capacity(gathering.results.len());
    let mut refused = Vec::new();
    // Where each call's result is, in the turn's order: Ok(in parts) or Err(in refused).
    let mut order = Vec::with_capacity(gathering.ids.len());
    for id in &gathering.ids {
        match gathering.results.remove(id) {
            Some(out) => {
                order.push(Ok(parts.len()));
                parts.push(out);
            }
            None => {
                order.push(Err(refused.len()));
                refused.push(ToolResult::new(
                    id.clone(),
                    Outcome::Failed,
                    "toolrt did not run this call: another call with this id is still in flight; send it again with an id of its own",
                ));
            }
        }
    }
    let ordered: Vec<&ToolResult> = order
        .iter()
        .filter_map(|at| match *at {
            Ok(i) => match parts[i].message() {
                ServerMessage::ToolResult(r) => Some(r),
                _ => None,
            },
            Err(i) => Some(&refused[i]),
        })
        .collect();
    let msg = ServerMessage::api_results(gathering.format, turn, &ordered);
    Outgoing::joined(msg, parts)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::emit::Emitter;

    #[tokio::test]
    async fn a_turns_results_go_out_once_all_are_in_in_its_order_holding_their_places() {
        let (emitter, mut outbox) = Emitter::channel();
        let places = Arc::new(tokio::sync::Semaphore::new(3));
        let turns = Turns::default();
        // "dup" was refused by the dispatcher: batch_start does not list it.
        turns.expect(
            "t",
            Format::OpenAiChat,
            vec!["a".into(), "b".into(), "dup".into()],
        );
        let mut gather = Gather::new(turns.clone());
        let result =
            |id: &str| ServerMessage::ToolResult(ToolResult::new(id, Outcome::Success, id));
        emitter.send(ServerMessage::event(
            "batch_start",
            json!({"batch": "t", "ids": ["a", "b"]}),
        ));
        for id in ["b", "native", "a"] {
            let place = places.clone().try_acquire_owned().unwrap();
            emitter.send_result(result(id), Some(place));
        }
        let mut ready = Vec::new();
        for _ in 0..4 {
            let out = outbox.recv_held().await.unwrap();
            gather.reshape(out, &mut ready);
        }
        let lines: Vec<String> = ready
            .iter()
            .map(|o| String::from_utf8(o.message().to_line()).unwrap())
            .collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].contains("batch_start"));
        assert!(
            lines[1].contains(r#""tool_use_id":"native""#),
            "a native result passes: {lines:?}"
        );
        let answer: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
        assert_eq!(answer["type"], "openai_chat_results");
        let ids: Vec<&str> = answer["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["tool_call_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["a", "b", "dup"]);
        assert_eq!(answer["outcomes"][2]["outcome"], "failed");
        assert!(
            answer["items"][2]["content"]
                .as_str()
                .unwrap()
                .contains("still in flight")
        );
        // The answer holds a's and b's places until written; the native result held its own.
        drop(ready.remove(1));
        assert_eq!(places.available_permits(), 1);
        drop(ready);
        assert_eq!(places.available_permits(), 3);
        assert!(turns.lock().is_empty() && gather.turn_of.is_empty() && gather.started.is_empty());
    }

    #[tokio::test]
    async fn a_turn_with_no_accepted_call_is_answered_at_its_start() {
        let (emitter, mut outbox) = Emitter::channel();
        let turns = Turns::default();
        turns.expect("t", Format::Anthropic, vec!["x".into()]);
        let mut gather = Gather::new(turns);
        emitter.send(ServerMessage::event(
            "batch_start",
            json!({"batch": "t", "ids": []}),
        ));
        let mut ready = Vec::new();
        gather.reshape(outbox.recv_held().await.unwrap(), &mut ready);
        assert_eq!(ready.len(), 2);
        assert!(matches!(
            ready[1].message(),
            ServerMessage::AnthropicResults(_)
        ));
    }
}
