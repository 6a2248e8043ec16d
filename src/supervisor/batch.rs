//! What a call of a multi-call batch shares with its batch: its turn ([`Gate`]), the batch's
//! stop flag and the records PostToolBatch hooks are given ([`BatchLink`]), and the
//! PostToolBatch hook call itself, made when the batch runner has seen every call finish.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tokio::sync::oneshot;

use super::{Pipeline, mode_name};
use crate::hooks::{BatchCallRecord, HookEvent};

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
        .post_tool_batch(batch_id.to_string(), records, mode_name(p.mode))
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
