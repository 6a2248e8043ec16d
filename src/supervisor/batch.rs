//! What a call of a multi-call batch shares with its batch: its turn ([`Gate`]), the batch's
//! stop flag and the records PostToolBatch hooks are given ([`BatchLink`]), and the
//! PostToolBatch hook call itself, made when the batch runner has seen every call finish.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{Pipeline, mode_name};
use crate::call::{Outcome, ToolResult};
use crate::hooks::{BatchCallRecord, HookEvent};
use crate::inflight::ResultSlot;
use crate::protocol::ServerMessage;

/// Where a call of a batch waits for its turn.
pub(crate) struct Gate {
    /// Tells the batch runner whether the call is concurrency-safe; a call refused before its
    /// turn counts as safe (it runs nothing). Dropped: cancelled before its turn.
    pub ready: oneshot::Sender<bool>,
    /// Fires when the call may run.
    pub go: oneshot::Receiver<()>,
}

/// Finished calls of a batch with their position, for PostToolBatch hooks.
pub(crate) type BatchRecords = Arc<Mutex<Vec<(usize, BatchCallRecord)>>>;

/// What a call shares with the rest of its batch.
pub(crate) struct BatchLink {
    /// Set when a hook stops processing: the batch starts nothing more.
    pub stop: Arc<AtomicBool>,
    /// The call's position in the batch.
    pub index: usize,
    /// Where finished calls leave their record for PostToolBatch hooks (when configured).
    pub records: Option<BatchRecords>,
}

impl BatchLink {
    /// Leaves a finished call's record for the batch's PostToolBatch hooks.
    pub(super) fn record(&self, record: BatchCallRecord) {
        if let Some(records) = &self.records {
            records
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((self.index, record));
        }
    }
}

/// Where a batch's calls leave their records: only when PostToolBatch hooks will read them.
pub(crate) fn batch_records(p: &Pipeline) -> Option<BatchRecords> {
    p.hooks
        .has(HookEvent::PostToolBatch)
        .then(|| Arc::new(Mutex::new(Vec::new())))
}

/// Runs the batch's PostToolBatch hooks over its calls' records, in batch order, and returns
/// what `batch_end` carries of them (`hook_feedback`, `stop_reason`).
pub(crate) async fn end_batch(
    p: &Pipeline,
    batch_id: &str,
    records: Option<BatchRecords>,
    cancel: &CancellationToken,
) -> Map<String, Value> {
    let mut fields = Map::new();
    let Some(records) = records else {
        return fields;
    };
    let mut records = std::mem::take(&mut *records.lock().unwrap_or_else(|e| e.into_inner()));
    records.sort_by_key(|(i, _)| *i);
    let records = records.into_iter().map(|(_, r)| r).collect();
    match p
        .hooks
        .post_tool_batch(
            batch_id.to_string(),
            records,
            mode_name(p.mode),
            cancel.clone(),
        )
        .await
    {
        Ok(result) => {
            if !result.feedback.is_empty() {
                fields.insert("hook_feedback".into(), json!(result.feedback));
            }
            if let Some(reason) = result.stop {
                fields.insert("stop_reason".into(), json!(reason));
            }
        }
        Err(fault) => {
            fields.insert("hook_feedback".into(), json!([fault.to_string()]));
        }
    }
    fields
}

/// A lone call (a `tool_use`: a batch of one) gets a batch link of its own when PostToolBatch
/// hooks are configured, so that it leaves its record as a batch's calls do.
pub(super) fn lone_batch(p: &Pipeline) -> Option<BatchLink> {
    batch_records(p).map(|records| BatchLink {
        stop: Arc::new(AtomicBool::new(false)),
        index: 0,
        records: Some(records),
    })
}

/// Runs a lone call's PostToolBatch hooks once it has finished, before its result is written
/// (there is no `batch_end`): their feedback goes beside the result's content, as a PostToolUse
/// hook's does, and a stop is told to the client as a `stop` event. A cancelled call runs none.
pub(super) async fn end_lone_call(
    p: Arc<Pipeline>,
    id: Arc<str>,
    link: Option<BatchLink>,
    mut result: ToolResult,
    slot: ResultSlot,
    cancel: CancellationToken,
) {
    if let Some(link) = link.filter(|_| result.outcome != Outcome::Cancelled) {
        end_lone_batch(&p, &id, link, &mut result, &cancel).await;
    }
    slot.emit(result);
}

/// [`end_lone_call`]'s hooks.
async fn end_lone_batch(
    p: &Pipeline,
    id: &str,
    link: BatchLink,
    result: &mut ToolResult,
    cancel: &CancellationToken,
) {
    let mut fields = end_batch(p, id, link.records, cancel).await;
    if let Some(Value::Array(feedback)) = fields.remove("hook_feedback") {
        for note in feedback.iter().filter_map(Value::as_str) {
            result.content.push_str("\n\n");
            result.content.push_str(note);
        }
    }
    if let Some(reason) = fields.remove("stop_reason") {
        p.emitter.send(ServerMessage::event(
            "stop",
            json!({"tool_use_id": id, "reason": reason}),
        ));
    }
}
