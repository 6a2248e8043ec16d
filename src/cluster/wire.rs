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

/// The most bytes one [`Chunk`] of a kept output carries: a long output crosses the link as
/// many frames, each a short wait for the calls and heartbeats that share the link.
pub(crate) const CHUNK_BYTES: usize = 256 * 1024;

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
    /// The next part of an output the worker kept in a file ([`KeptOutput`]); an empty chunk
    /// means the end, and the worker deletes its file then.
    #[rpc]
    Fetch(Wire<FetchReq>, RpcReplyPort<Chunk>),
    /// The coordinator will not fetch the rest of a kept output: the worker deletes its file.
    Release(Wire<FetchReq>),
    /// A heartbeat: the worker answers with the same number.
    #[rpc]
    Ping(u64, RpcReplyPort<u64>),
}

/// The process group the coordinator's progress relay joins: `toolrt.progress.<its name>`, so
/// a worker serving several coordinators sends each call's progress to the right one.
pub(crate) fn progress_group(coordinator: &str) -> String {
    format!("toolrt.progress.{coordinator}")
}

/// A message to a coordinator's progress relay.
#[derive(RactorClusterMessage)]
pub(crate) enum RelayMsg {
    /// An update of a call running on the worker, for the client's `progress` event.
    Progress(Wire<ProgressNote>),
    /// A sandboxed command of a call running on the worker connects to a host its sandbox's
    /// settings neither allow nor deny: whether it may (asked as for a command run here).
    #[rpc]
    AskNetwork(Wire<NetworkNote>, RpcReplyPort<bool>),
}

/// A host a sandboxed command on a worker connects to.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct NetworkNote {
    /// The call's id.
    pub id: String,
    /// The host, as the command named it.
    pub host: String,
    /// The port.
    pub port: u16,
}

/// One progress update of a call.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ProgressNote {
    /// The call's id.
    pub id: String,
    /// The update, as the tool made it (the event's `data`).
    pub data: Value,
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
    /// Its Bash sandbox settings ([`crate::sandbox::Sandbox::for_workers`]), when it has a
    /// sandbox: the worker runs this coordinator's commands in one made from them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Value>,
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
    /// It checks a run's [`RunReq::expect`] before running it, so its answers about paths may
    /// be kept for later decisions (a worker that does not say so is asked every time).
    #[serde(default)]
    pub checks_expect: bool,
    /// The sandbox it set up for the coordinator's commands, when [`HelloReq::sandbox`] asked
    /// for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::NodeReport>,
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
    /// The coordinator's Read deny patterns, sent with a search's call only: Glob and Grep on
    /// the worker leave out what they cover.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_deny: Vec<String>,
    /// Each path the permission decision looked at, with what it resolved to on this worker
    /// then: the worker runs the call only if each still resolves the same way (else the
    /// decision, perhaps made on an answer kept from an earlier call, is about other files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect: Vec<(PathBuf, Vec<PathBuf>)>,
    /// The coordinator has a Bash sandbox, which the decision counted on: the worker runs the
    /// call only in a session with the sandbox it set up from the coordinator's settings.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sandbox: bool,
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
    /// The complete output, when the tool kept only part of it in `content` and the rest in a
    /// file on the worker (Bash's long output); the coordinator fetches it in chunks.
    #[serde(default)]
    pub full: Option<KeptOutput>,
    /// The call did not run: this path of [`RunReq::expect`] resolves differently now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<PathBuf>,
    /// The background task a `run_in_background` Bash started (its id): the coordinator places
    /// TaskOutput and TaskStop of it on this worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// A complete output a worker keeps in a file until its coordinator has fetched it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct KeptOutput {
    /// The worker's number for it (unique per coordinator).
    pub handle: u64,
    /// Where it is on the worker (what the tool's `response` names, to be replaced by the
    /// coordinator's copy).
    pub path: PathBuf,
    /// Its length in bytes.
    pub bytes: u64,
    /// Its length in characters.
    pub chars: u64,
    /// Its number of lines.
    pub lines: u64,
}

/// Which part of a kept output to send, or which one to let go.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct FetchReq {
    /// The coordinator's node name.
    pub coordinator: String,
    /// The output's handle ([`KeptOutput::handle`]).
    pub handle: u64,
    /// Where the chunk starts, in bytes.
    pub offset: u64,
}

/// Up to [`CHUNK_BYTES`] of a kept output (empty at its end), or why the worker cannot send
/// them. The bytes go raw, not as JSON: an output need not be UTF-8, and a chunk is large.
#[derive(Debug)]
pub(crate) struct Chunk(pub Result<Vec<u8>, String>);

impl BytesConvertable for Chunk {
    // The kind is the last byte, so neither side moves the bytes to add or take it.
    fn into_bytes(self) -> Vec<u8> {
        match self.0 {
            Ok(mut bytes) => {
                bytes.push(0);
                bytes
            }
            Err(why) => {
                let mut bytes = why.into_bytes();
                bytes.push(1);
                bytes
            }
        }
    }

    fn from_bytes(mut bytes: Vec<u8>) -> Self {
        match bytes.pop() {
            Some(0) => Self(Ok(bytes)),
            Some(1) => Self(Err(String::from_utf8_lossy(&bytes).into_owned())),
            _ => Self(Err("an unreadable chunk from the peer".into())),
        }
    }
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
            full: None,
            stale: None,
            task: None,
        }
    }

    /// The output this reply carries (without its complete output: that is fetched); an
    /// unknown status is a failure.
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
            sandbox: None,
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
            full: None,
            stale: None,
            task: None,
        };
        assert_eq!(odd.into_output().status, ToolStatus::Failed);
    }

    #[test]
    fn chunks_carry_any_bytes_or_an_error() {
        let bytes = vec![0xff, 0, 1, b'x'];
        let back = Chunk::from_bytes(Chunk(Ok(bytes.clone())).into_bytes());
        assert_eq!(back.0, Ok(bytes));
        assert_eq!(
            Chunk::from_bytes(Chunk(Ok(vec![])).into_bytes()).0,
            Ok(vec![])
        );
        let err = Chunk::from_bytes(Chunk(Err("gone".into())).into_bytes());
        assert_eq!(err.0, Err("gone".to_string()));
        for bad in [vec![], vec![b'a', 7]] {
            assert!(Chunk::from_bytes(bad).0.unwrap_err().contains("unreadable"));
        }
    }

    #[test]
    fn long_text_is_cut_at_a_character_boundary() {
        let text = "é".repeat(MAX_REPLY_TEXT / 2 + 1);
        let reply = RunReply::from_output(ToolOutput::success(text));
        assert!(reply.content.len() < MAX_REPLY_TEXT + 100);
        assert!(reply.content.ends_with("longer than 8 MiB]"));
    }
}
