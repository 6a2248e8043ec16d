//! `Read` {file_path, offset?, limit?}: a text file with numbered lines (`cat -n` style).

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::call::Input;
use crate::session::Session;
use crate::tool::{Tool, ToolContext, ToolOutput};

use super::{absolutize_field, str_field};

/// Lines returned when no limit is given.
pub const DEFAULT_LIMIT: usize = 2000;
/// Longer lines are cut.
pub const MAX_LINE_CHARS: usize = 2000;

/// The Read tool.
#[derive(Debug, Default)]
pub struct Read;

#[async_trait]
impl Tool for Read {
    fn name(&self) -> &str {
        "Read"
    }

    fn description(&self) -> &str {
        "Reads a text file and returns its lines numbered from 1. Use offset and limit (1-based line numbers) to read part of a long file."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The path of the file to read (absolute, or relative to the working directory)"},
                "offset": {"type": "integer", "minimum": 1, "description": "The line number to start reading from (1-based)"},
                "limit": {"type": "integer", "minimum": 1, "description": "The number of lines to read"}
            },
            "required": ["file_path"],
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, _input: &Input) -> bool {
        true
    }

    fn normalize(&self, input: &mut Input, session: &Session) {
        absolutize_field(input, "file_path", session);
    }

    async fn call(&self, input: Input, _ctx: ToolContext) -> ToolOutput {
        let path = std::path::PathBuf::from(str_field(&input, "file_path"));
        let offset = input
            .get("offset")
            .and_then(Value::as_u64)
            .unwrap_or(1)
            .max(1) as usize;
        let limit = input
            .get("limit")
            .and_then(Value::as_u64)
            .map(|l| l as usize)
            .unwrap_or(DEFAULT_LIMIT);
        match tokio::fs::metadata(&path).await {
            Ok(m) if m.is_dir() => {
                return ToolOutput::failed(format!(
                    "{} is a directory, not a file. Use Glob, or Bash with ls, to list its contents.",
                    path.display()
                ));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return ToolOutput::failed(format!("File does not exist: {}", path.display()));
            }
            Err(e) => return ToolOutput::failed(format!("Could not read {}: {e}", path.display())),
        }
        let bytes = match tokio::fs::read(&path).await {
            Ok(b) => b,
            Err(e) => return ToolOutput::failed(format!("Could not read {}: {e}", path.display())),
        };
        if bytes.is_empty() {
            return ToolOutput::success(format!(
                "The file {} exists but is empty.",
                path.display()
            ));
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            return ToolOutput::failed(format!(
                "{} is a binary file (not UTF-8 text); it cannot be read as text.",
                path.display()
            ));
        };
        ToolOutput::success(number_lines(text, offset, limit))
    }
}

/// Numbers lines `offset..offset+limit` (1-based) like `cat -n`.
pub fn number_lines(text: &str, offset: usize, limit: usize) -> String {
    let mut out = String::new();
    let total = text.lines().count();
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        let line = if line.chars().count() > MAX_LINE_CHARS {
            let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
            format!("{cut}... [line cut at {MAX_LINE_CHARS} characters]")
        } else {
            line.to_string()
        };
        out.push_str(&format!("{:>6}\t{}\n", i + 1, line));
    }
    if offset > total {
        return format!("The file has {total} lines; offset {offset} is past its end.");
    }
    let shown_end = (offset - 1 + limit).min(total);
    if shown_end < total {
        out.push_str(&format!(
            "\n[Showing lines {offset}-{shown_end} of {total}. Use offset={} to read on.]\n",
            shown_end + 1
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_and_windows() {
        assert_eq!(number_lines("a\nb\n", 1, 10), "     1\ta\n     2\tb\n");
        assert_eq!(
            number_lines("a\nb\nc", 2, 1),
            "     2\tb\n\n[Showing lines 2-2 of 3. Use offset=3 to read on.]\n"
        );
        assert!(number_lines("a", 5, 1).contains("past its end"));
        let long = "x".repeat(MAX_LINE_CHARS + 5);
        assert!(number_lines(&long, 1, 1).contains("[line cut at 2000 characters]"));
    }
}
