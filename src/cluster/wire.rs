//! What crosses between a coordinator and a worker node: ractor_cluster actor messages.
//!
//! The worker's one remote actor takes [`WorkerMsg`]; ractor_cluster carries each variant as a
//! serialized cast or call (its `RactorClusterMessage` derive), and each argument as bytes
//! through [`BytesConvertable`]. Our arguments are JSON inside those bytes ([`Wire`]): a peer's
//! bytes that do not read as the expected shape become an error value, never a panic.

use ractor::{BytesConvertable, RpcReplyPort};
use ractor_cluster::RactorClusterMessage;
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::call::Input;
use crate::tool::{ToolOutput, ToolStatus};

/// The process group (ractor `pg`) a worker's actor joins; a coordinator finds each worker's
/// actor there once its session is ready.
pub(crate) const WORKER_GROUP: &str = "toolrt.worker";

/// The most bytes of output text one reply carries (ractor_cluster refuses frames over 16 MiB
/// by default); a longer text is cut at a character boundary, saying so.
pub(crate) const MAX_REPLY_TEXT: usize = 8 * 1024 * 1024;

/// A message to a worker node's actor.
#[derive(RactorClusterMessage)]
pub(crate) enum WorkerMsg {
    /// Who the worker is and what it offers.
    #[rpc]
    Hello(Wire<HelloReq>, RpcReplyPort<Wire<HelloReply>>),
    /// Run one call's execute step; the reply is its output.
    #[rpc]
    Run(Wire<RunReq>, RpcReplyPort<Wire<RunReply>>),
    /// What a path resolves to through the worker's symlinks (for the coordinator's
    /// permission decision, which is about the worker's files).
    #[rpc]
    Resolve(Wire<ResolveReq>, RpcReplyPort<Wire<ResolveReply>>),
    /// Stop a running call (its process group is killed, as a local cancel would).
    Cancel(Wire<CancelReq>),
    /// A heartbeat: the worker answers with the same number.
    #[rpc]
    Ping(u64, RpcReplyPort<u64>),
}

/// A value carried as JSON bytes; `Err` when the bytes did not read as `T`.
#[derive(Debug)]
pub(crate) struct Wire<T>(pub Result<T, String>);

impl<T> Wire<T> {
    /// A value to send.
    pub(crate) fn of(value: T) -> Self {
        Self(Ok(value))
    }
}

impl<T: Serialize + DeserializeOwned> BytesConvertable for Wire<T> {
    fn into_bytes(self) -> Vec<u8> {
        // An `Err` is only ever made by reading; sending one says so to the peer.
        let body = self.0.map_err(|e| format!("unreadable message: {e}"));
        serde_json::to_vec(&body).unwrap_or_default()
    }

    fn from_bytes(bytes: Vec<u8>) -> Self {
        match serde_json::from_slice::<Result<T, String>>(&bytes) {
            Ok(body) => Self(body),
            Err(e) => Self(Err(format!("unreadable message from the peer: {e}"))),
        }
    }
}

/// A coordinator's greeting.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct HelloReq {
    /// The coordinator's node name (its calls are known by it on the worker).
    pub coordinator: String,
}

/// A worker's answer to [`HelloReq`].
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct HelloReply {
    /// The worker's name (`--name`, default its listen address).
    pub name: String,
    /// The tools it runs.
    pub tools: Vec<String>,
    /// Its workspace folder (`--cwd`, resolved): calls' relative paths resolve against it.
    pub root: PathBuf,
    /// Its home folder (`~` in a path).
    pub home: PathBuf,
}

/// A path to resolve on the worker.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ResolveReq {
    /// An absolute path (a relative one is refused: the coordinator makes it absolute against
    /// the worker's folder first).
    pub path: PathBuf,
}

/// What a [`ResolveReq`]'s path resolves to on the worker.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ResolveReply {
    /// The path itself first, then each path it reaches through symlinks.
    pub paths: Vec<PathBuf>,
}

/// One call's execute step.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RunReq {
    /// The coordinator's node name.
    pub coordinator: String,
    /// The call's id (unique among the coordinator's calls in flight).
    pub id: String,
    /// The tool, by its registry name.
    pub tool: String,
    /// The input, validated and decided on the coordinator.
    pub input: Input,
    /// The call's output budget in characters, as the coordinator's budget stage has it.
    pub output_chars: u64,
    /// Whether PostToolUse hooks want the tool's `response`.
    pub hook_response: bool,
}

/// A call to stop.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CancelReq {
    /// The coordinator's node name.
    pub coordinator: String,
    /// The call's id.
    pub id: String,
}

/// A call's output, as the worker's tool gave it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RunReply {
    /// `success`, `failed`, `timed_out` or `cancelled`.
    pub status: String,
    /// The text (cut at [`MAX_REPLY_TEXT`] bytes).
    pub content: String,
    /// What hooks are told of the run, when asked for.
    pub response: Option<Value>,
}

impl RunReply {
    /// The reply carrying `out`.
    pub(crate) fn from_output(out: ToolOutput) -> Self {
        let status = match out.status {
            ToolStatus::Success => "success",
            ToolStatus::Failed => "failed",
            ToolStatus::TimedOut => "timed_out",
            ToolStatus::Cancelled => "cancelled",
        };
        let mut content = out.content;
        if content.len() > MAX_REPLY_TEXT {
            let mut end = MAX_REPLY_TEXT;
            while !content.is_char_boundary(end) {
                end -= 1;
            }
            content.truncate(end);
            content.push_str("\n[output cut by the worker node: longer than 8 MiB]");
        }
        Self {
            status: status.to_string(),
            content,
            response: out.response,
        }
    }

    /// The output this reply carries; an unknown status is a failure.
    pub(crate) fn into_output(self) -> ToolOutput {
        let out = match self.status.as_str() {
            "success" => ToolOutput::success(self.content),
            "timed_out" => ToolOutput::timed_out(self.content),
            "cancelled" => ToolOutput::cancelled(self.content),
            _ => ToolOutput::failed(self.content),
        };
        out.with_response(self.response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_values_round_trip_and_bad_bytes_become_errors() {
        let req = HelloReq {
            coordinator: "c".into(),
        };
        let back = Wire::<HelloReq>::from_bytes(Wire::of(req).into_bytes());
        assert_eq!(back.0.map(|r| r.coordinator).as_deref(), Ok("c"));
        let bad = Wire::<HelloReq>::from_bytes(b"not json".to_vec());
        assert!(bad.0.unwrap_err().contains("unreadable"));
        let wrong_shape = Wire::<HelloReq>::from_bytes(br#"{"Ok":{"x":1}}"#.to_vec());
        assert!(wrong_shape.0.is_err());
    }

    #[test]
    fn outputs_round_trip_by_status() {
        let cases = [
            (ToolOutput::success("a"), ToolStatus::Success),
            (ToolOutput::failed("b"), ToolStatus::Failed),
            (ToolOutput::timed_out("c"), ToolStatus::TimedOut),
            (ToolOutput::cancelled("d"), ToolStatus::Cancelled),
        ];
        for (out, status) in cases {
            let text = out.content.clone();
            let back = RunReply::from_output(out).into_output();
            assert_eq!((back.status, back.content), (status, text));
        }
        let odd = RunReply {
            status: "maybe".into(),
            content: "x".into(),
            response: None,
        };
        assert_eq!(odd.into_output().status, ToolStatus::Failed);
    }

    #[test]
    fn long_text_is_cut_at_a_character_boundary() {
        let text = "é".repeat(MAX_REPLY_TEXT / 2 + 1);
        let reply = RunReply::from_output(ToolOutput::success(text));
        assert!(reply.content.len() < MAX_REPLY_TEXT + 100);
        assert!(reply.content.ends_with("longer than 8 MiB]"));
    }
}
