//! A remote call's complete output, brought to the coordinator.
//!
//! A tool that keeps only the start and end of a long output in its text (Bash) keeps the whole
//! of it in a file; on a worker that file is on the worker, where the client cannot read it.
//! The coordinator fetches it in chunks of at most [`CHUNK_BYTES`](super::wire::CHUNK_BYTES),
//! one at a time, into a file of its own output folder, so the result's output file is on the
//! client's side as for a local call, memory holds one chunk per call whatever the output's
//! size, and other calls' messages and heartbeats interleave with the chunks on the link.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ractor::rpc::CallResult;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use super::place::Live;
use super::wire::{Chunk, FetchReq, KeptOutput, Wire, WorkerMsg};
use crate::tool::{FullOutput, ToolOutput};

/// How long a worker gets to send one chunk.
const CHUNK_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a kept output is copied to: the coordinator's output folder and a name for the file.
pub(super) struct CopyTo {
    pub dir: PathBuf,
    pub name: String,
}

/// Gives `out` its complete output `kept` from worker node `node`: copied into `to`, the copy
/// becomes its full output, and what the tool's response said of the worker's file it says of
/// the copy. When the copy fails (the node is lost, the call is cancelled, a write fails) the
/// output keeps its text, says first why the rest is missing, and the worker lets its file go.
pub(super) async fn attach_full_output(
    out: &mut ToolOutput,
    kept: KeptOutput,
    node: &str,
    live: &Live,
    coordinator: &str,
    to: CopyTo,
    cancel: &CancellationToken,
) {
    let path = match copy(&kept, live, coordinator, &to, cancel).await {
        Ok(path) => path,
        Err(why) => {
            let release = FetchReq {
                coordinator: coordinator.to_string(),
                handle: kept.handle,
                offset: 0,
            };
            let _ = live.actor.cast(WorkerMsg::Release(Wire::of(release)));
            // First, so that a preview of a long output shows it too.
            out.content.insert_str(
                0,
                &format!(
                    "(The complete output, {} bytes, could not be brought from worker node \
                     {node}: {why}. Below are its start and end only.)\n\n",
                    kept.bytes
                ),
            );
            if let Some(response) = &mut out.response {
                replace_path(response, &kept.path, None);
            }
            return;
        }
    };
    if let Some(response) = &mut out.response {
        replace_path(response, &kept.path, Some(&path));
    }
    out.full_output = Some(FullOutput {
        path,
        chars: kept.chars,
        lines: kept.lines,
    });
}

/// Copies `kept` chunk by chunk into a new file in `to`; its path. A partial copy is deleted.
async fn copy(
    kept: &KeptOutput,
    live: &Live,
    coordinator: &str,
    to: &CopyTo,
    cancel: &CancellationToken,
) -> Result<PathBuf, String> {
    let (file, path) = create(to)
        .await
        .map_err(|e| format!("cannot create a file for it in {}: {e}", to.dir.display()))?;
    if let Err(why) = fill(file, kept, live, coordinator, cancel).await {
        let _ = tokio::fs::remove_file(&path).await;
        return Err(why);
    }
    Ok(path)
}

/// A new private file in `to.dir` named after `to.name`.
async fn create(to: &CopyTo) -> std::io::Result<(tokio::fs::File, PathBuf)> {
    let (dir, name) = (to.dir.clone(), to.name.clone());
    let (file, path) =
        tokio::task::spawn_blocking(move || crate::paths::create_kept_log(&dir, &name))
            .await
            .map_err(std::io::Error::other)??;
    Ok((tokio::fs::File::from_std(file), path))
}

/// Why a copy stopped when the node's link went.
const LINK_LOST: &str = "its link was lost";

/// Fetches every chunk of `kept` into `file`; why not, when it cannot.
async fn fill(
    mut file: tokio::fs::File,
    kept: &KeptOutput,
    live: &Live,
    coordinator: &str,
    cancel: &CancellationToken,
) -> Result<(), String> {
    let mut offset = 0u64;
    loop {
        let req = FetchReq {
            coordinator: coordinator.to_string(),
            handle: kept.handle,
            offset,
        };
        let ask = (live.actor).call(
            |port| WorkerMsg::Fetch(Wire::of(req), port),
            Some(CHUNK_TIMEOUT),
        );
        let bytes = tokio::select! {
            biased;
            _ = live.lost.cancelled() => return Err(LINK_LOST.into()),
            _ = cancel.cancelled() => {
                return Err("the call was cancelled before all of it was copied".into());
            }
            reply = ask => match reply {
                Ok(CallResult::Success(Chunk(Ok(bytes)))) => bytes,
                Ok(CallResult::Success(Chunk(Err(why)))) => return Err(why),
                Ok(CallResult::Timeout) => {
                    return Err("the worker node sent no chunk in time".into());
                }
                Ok(CallResult::SenderError) | Err(_) => return Err(LINK_LOST.into()),
            },
        };
        if bytes.is_empty() {
            break;
        }
        offset += bytes.len() as u64;
        if offset > kept.bytes {
            return Err(format!(
                "the worker node sent more than the {} bytes it announced",
                kept.bytes
            ));
        }
        file.write_all(&bytes)
            .await
            .map_err(|e| format!("writing the copy failed: {e}"))?;
    }
    if offset != kept.bytes {
        return Err(format!(
            "the worker node sent {offset} of the {} bytes it announced",
            kept.bytes
        ));
    }
    file.flush()
        .await
        .map_err(|e| format!("writing the copy failed: {e}"))
}

/// In a tool's `response`, each top-level string naming the worker's file `from` names `to`
/// instead, or goes when there is no copy.
fn replace_path(response: &mut Value, from: &Path, to: Option<&Path>) {
    let Some(fields) = response.as_object_mut() else {
        return;
    };
    let from = from.to_string_lossy();
    fields.retain(|_, v| to.is_some() || v.as_str() != Some(&from));
    if let Some(to) = to {
        for v in fields.values_mut() {
            if v.as_str() == Some(&from) {
                *v = Value::from(to.to_string_lossy().into_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_workers_file_is_named_as_the_copy_or_not_at_all() {
        let from = Path::new("/w/out.log");
        let response = json!({"stdout": "x", "persistedOutputPath": "/w/out.log", "n": 1});
        let mut copied = response.clone();
        replace_path(&mut copied, from, Some(Path::new("/c/copy.log")));
        assert_eq!(copied["persistedOutputPath"], "/c/copy.log");
        assert_eq!(
            (copied["stdout"].clone(), copied["n"].clone()),
            (json!("x"), json!(1))
        );
        let mut lost = response;
        replace_path(&mut lost, from, None);
        assert_eq!(lost, json!({"stdout": "x", "n": 1}));
        let mut text = json!("/w/out.log");
        replace_path(&mut text, from, None);
        assert_eq!(text, "/w/out.log");
    }
}
