//! `Write`: creates or replaces a file (parents created), after a checkpoint of its prior state.

use super::limits;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::files::{FileState, prior_text, refuse_dangling_link, target, worth_checking};
use super::{absolutize_field, on_blocking_pool, patch, str_field};
use crate::call::Input;
use crate::session::Session;
use crate::tool::{Access, StateKey, Tool, ToolContext, ToolOutput, Verdict};

/// The `Write` tool.
#[derive(Debug)]
pub(crate) struct Write {
    files: Arc<FileState>,
}

impl Write {
    /// A Write sharing the session's file state with Read and Edit.
    pub(crate) fn new(files: Arc<FileState>) -> Self {
        Self { files }
    }
}

#[async_trait]
impl Tool for Write {
    fn access(&self) -> Access<'_> {
        Access::file("file_path", false)
    }

    fn name(&self) -> &str {
        "Write"
    }

    fn description(&self) -> &str {
        "Writes a file, replacing it if it exists and creating missing parent folders. To \
         overwrite an existing file, Read it first in this session (a change made since the \
         read is refused so no update is lost). Prefer Edit for changes to part of a file."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "maxLength": limits::PATH_CHARS, "description": "The file to write (absolute, or relative to the working directory)"},
                "content": {"type": "string", "maxLength": limits::CONTENT_CHARS, "description": "The complete new content"}
            },
            "required": ["file_path", "content"],
            "additionalProperties": false
        })
    }

    fn normalize(&self, input: &mut Input, session: &Session) {
        absolutize_field(input, "file_path", session);
    }

    fn validate(&self, input: &Input, session: &Session, state: StateKey) -> Verdict {
        let path = target(input, session);
        let (files, guard) = (self.files.clone(), session.guard.clone());
        Verdict::Later(Box::pin(on_blocking_pool(move || {
            if !worth_checking(&path, &*guard) {
                return Ok(());
            }
            // A change of the file running now is not seen half done.
            let _file = files.lock_path(&path);
            match std::fs::metadata(&path) {
                Ok(m) if m.is_dir() => Err(format!(
                    "{} is a directory; give the path of a file to write",
                    path.display()
                )),
                Ok(m) if !m.is_file() => {
                    Err(super::file_bytes::FileError::NotRegular(path).to_string())
                }
                Ok(_) => files.check_fresh(state, &path),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => refuse_dangling_link(&path),
                // A folder on the way that is a file, a name too long, a loop of links: the
                // path itself cannot be written.
                Err(e) => Err(format!("cannot write {}: {e}", path.display())),
            }
        })))
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        super::file_call(&self.files, input, ctx, write_file).await
    }
}

/// Writes the file a Write call names (file-system work: on the blocking pool).
fn write_file(files: &FileState, input: &Input, ctx: &ToolContext) -> ToolOutput {
    let path = target(input, &ctx.session);
    let content = str_field(input, "content").unwrap_or_default();
    // The check and the write as one step for this file: no other change slips in between.
    let _file = files.lock_path(&path);
    let existed = path.exists();
    // Checked again here: another call may have changed the file since validation.
    let fresh = if existed {
        files.check_fresh(ctx.state, &path)
    } else {
        refuse_dangling_link(&path)
    };
    if let Err(e) = fresh {
        return ToolOutput::failed(e);
    }
    // What the file held, for the hooks' description of the change.
    let original = if ctx.hook_response && existed {
        prior_text(&path)
    } else {
        None
    };
    if let Err(e) = files.commit(
        ctx.state,
        &ctx.tool_use_id,
        &path,
        content.as_bytes(),
        &ctx.session.output_dir,
        ctx.decided_paths.as_deref(),
    ) {
        return ToolOutput::failed(e);
    }
    let response = ctx
        .hook_response
        .then(|| response(&path, existed, content, original.as_deref()));
    let lines = content.lines().count();
    let verb = if existed { "Updated" } else { "Created" };
    ToolOutput::success(format!(
        "{verb} {} ({lines} lines, {} bytes).",
        path.display(),
        content.len()
    ))
    .with_response(response)
}

/// The shape of the reference CLI's `FileWriteOutput`, as a PostToolUse hook receives it.
fn response(path: &Path, existed: bool, content: &str, original: Option<&str>) -> Value {
    json!({
        "type": if existed { "update" } else { "create" },
        "filePath": path.to_string_lossy(),
        "content": content,
        "structuredPatch": match original {
            Some(old) => patch::structured_patch(old, content),
            None => json!([]),
        },
        "originalFile": patch::original_file(original),
        "userModified": false,
    })
}
