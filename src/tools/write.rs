//! `Write`: creates or replaces a file (parents created), after a checkpoint of its prior state.

use super::limits;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{absolutize_field, patch, str_field};
use crate::call::Input;
use crate::session::Session;
use crate::tool::{Access, Subject, Tool, ToolContext, ToolOutput};

/// The `Write` tool.
#[derive(Debug, Default)]
pub struct Write;

/// The absolute path of a file tool's `file_path`.
pub(crate) fn target(input: &Input, session: &Session) -> PathBuf {
    crate::paths::absolutize(
        str_field(input, "file_path").unwrap_or_default(),
        &session.cwd,
        &session.home,
    )
}

/// The target Write and Edit validation looks at, or None when a rule denies writing it: the
/// permission stage then denies the call, and a validation message would send the model to
/// read the file first.
pub(crate) fn target_to_check(input: &Input, session: &Session) -> Option<PathBuf> {
    let path = target(input, session);
    (!session.guard.write_denied(&path)).then_some(path)
}

/// The read-before-change rule shared by Write and Edit, for a file that exists.
pub(crate) fn check_fresh(path: &Path, session: &Session) -> Result<(), String> {
    if session.tools.require_read_before_edit {
        session.tools.read_state.check(path)
    } else {
        Ok(())
    }
}

/// Saves the checkpoint, writes `bytes`, and records the result as read. The text on error is
/// for the model.
pub(crate) async fn commit(path: &Path, bytes: &[u8], ctx: &ToolContext) -> Result<(), String> {
    let session = &ctx.session;
    let fallback = session.output_dir.join("checkpoints");
    session
        .tools
        .checkpoints
        .save(&ctx.tool_use_id, path, &fallback)
        .map_err(|e| {
            format!(
                "could not save a checkpoint of {} before changing it ({e}); the file was not changed",
                path.display()
            )
        })?;
    if let Some(parent) = path.parent() {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| format!("could not create the folder {}: {e}", parent.display()))?;
    }
    tokio::fs::write(path, bytes)
        .await
        .map_err(|e| format!("could not write {}: {e}", path.display()))?;
    session.tools.read_state.record(path, bytes);
    Ok(())
}

#[async_trait]
impl Tool for Write {
    fn access(&self) -> Access<'_> {
        Access {
            subject: Subject::Path {
                field: "file_path",
                read_only: false,
                default_cwd: false,
            },
            allowed_by_default: false,
        }
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

    fn validate(&self, input: &Input, session: &Session) -> Result<(), String> {
        let Some(path) = target_to_check(input, session) else {
            return Ok(());
        };
        match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => Err(format!(
                "{} is a directory; give the path of a file to write",
                path.display()
            )),
            Ok(m) if !m.is_file() => {
                Err(super::file_bytes::FileError::NotRegular(path).to_string())
            }
            Ok(_) => check_fresh(&path, session),
            Err(_) => Ok(()),
        }
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        let path = target(&input, &ctx.session);
        let content = str_field(&input, "content").unwrap_or_default();
        let existed = tokio::fs::try_exists(&path).await.unwrap_or(false);
        // Checked again here: another call may have changed the file since validation.
        if existed && let Err(e) = check_fresh(&path, &ctx.session) {
            return ToolOutput::failed(e);
        }
        // What the file held, for the hooks' description of the change.
        let original = if ctx.hook_response && existed {
            prior_text(&path).await
        } else {
            None
        };
        if let Err(e) = commit(&path, content.as_bytes(), &ctx).await {
            return ToolOutput::failed(e);
        }
        let response = ctx.hook_response.then(|| {
            json!({
                "type": if existed { "update" } else { "create" },
                "filePath": path.to_string_lossy(),
                "content": content,
                "structuredPatch": match &original {
                    Some(old) => patch::structured_patch(old, content),
                    None => json!([]),
                },
                "originalFile": patch::original_file(original.as_deref()),
                "userModified": false,
            })
        });
        let lines = content.lines().count();
        ToolOutput::success(if existed {
            format!(
                "Updated {} ({lines} lines, {} bytes).",
                path.display(),
                content.len()
            )
        } else {
            format!(
                "Created {} ({lines} lines, {} bytes).",
                path.display(),
                content.len()
            )
        })
        .with_response(response)
    }
}

/// A file's text before a change, for hooks: `None` when it cannot be read or is larger than
/// a diff is made of (the response then says `originalFile: null`, as the reference does).
pub(crate) async fn prior_text(path: &Path) -> Option<String> {
    let path = path.to_path_buf();
    let bytes = tokio::task::spawn_blocking(move || {
        super::file_bytes::read_regular(&path, patch::MAX_DIFF_BYTES as u64)
    })
    .await
    .ok()?
    .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}
