//! `Write` {file_path, content}: writes a file, creating parent folders.

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::call::Input;
use crate::session::Session;
use crate::tool::{Tool, ToolContext, ToolOutput};

use super::{absolutize_field, str_field};

/// The Write tool.
#[derive(Debug, Default)]
pub struct Write;

#[async_trait]
impl Tool for Write {
    fn name(&self) -> &str {
        "Write"
    }

    fn description(&self) -> &str {
        "Writes a file to the local filesystem, replacing it if it exists and creating parent folders as needed."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The path of the file to write (absolute, or relative to the working directory)"},
                "content": {"type": "string", "description": "The content to write"}
            },
            "required": ["file_path", "content"],
            "additionalProperties": false
        })
    }

    fn normalize(&self, input: &mut Input, session: &Session) {
        absolutize_field(input, "file_path", session);
    }

    async fn call(&self, input: Input, _ctx: ToolContext) -> ToolOutput {
        let path = std::path::PathBuf::from(str_field(&input, "file_path"));
        let content = str_field(&input, "content").to_string();
        let existed = tokio::fs::try_exists(&path).await.unwrap_or(false);
        if let Some(parent) = path.parent() {
            if let Err(e) = tokio::fs::create_dir_all(parent).await {
                return ToolOutput::failed(format!(
                    "Could not create the folder {}: {e}",
                    parent.display()
                ));
            }
        }
        match tokio::fs::write(&path, content.as_bytes()).await {
            Ok(()) if existed => ToolOutput::success(format!(
                "The file {} has been updated ({} bytes).",
                path.display(),
                content.len()
            )),
            Ok(()) => ToolOutput::success(format!(
                "File created successfully at: {} ({} bytes).",
                path.display(),
                content.len()
            )),
            Err(e) => ToolOutput::failed(format!("Could not write {}: {e}", path.display())),
        }
    }
}
