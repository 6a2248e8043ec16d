//! The built-in tools, one file each.

pub mod bash;
pub mod noop;
pub mod read;
pub mod write;

use std::sync::Arc;

use serde_json::Value;

use crate::call::Input;
use crate::session::Session;
use crate::tool::Tool;

/// Per-session state of the built-in tools (read-state tracking, checkpoints, background tasks).
#[derive(Debug, Default)]
pub struct ToolState {}

impl ToolState {
    /// Ends whatever the tools left running (nothing yet: background tasks come with the tools
    /// issue).
    pub fn shutdown(&self) {}
}

/// The names `--tools default` selects.
pub const DEFAULT_TOOLS: &[&str] = &["Bash", "Read", "Write"];

/// Every built-in tool.
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(bash::Bash),
        Arc::new(read::Read),
        Arc::new(write::Write),
    ]
}

/// A string field of an input that the schema has already checked (empty if absent).
pub(crate) fn str_field<'a>(input: &'a Input, key: &str) -> &'a str {
    input.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Makes a path field absolute and normal (relative to the cwd, `~` to home).
pub(crate) fn absolutize_field(input: &mut Input, key: &str, session: &Session) {
    if let Some(Value::String(raw)) = input.get(key) {
        if raw.is_empty() {
            return;
        }
        let abs = crate::paths::absolutize(raw, &session.cwd, &session.home);
        input.insert(
            key.to_string(),
            Value::from(abs.to_string_lossy().into_owned()),
        );
    }
}
