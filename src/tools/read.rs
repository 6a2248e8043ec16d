//! `Read`: a text file as numbered lines (`cat -n` style), a window at a time.

use std::path::Path;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{absolutize_field, str_field, u64_field};
use crate::call::Input;
use crate::session::Session;
use crate::tool::{Tool, ToolContext, ToolOutput};

/// Lines returned when no `limit` is given.
pub const DEFAULT_LINES: usize = 2_000;
/// Longer lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 2_000;
/// At most this many characters per Read (≈ 25,000 tokens).
pub const MAX_CHARS: usize = 100_000;
/// Files larger than this are refused whole; Grep or Bash can look at parts.
const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// The `Read` tool.
#[derive(Debug, Default)]
pub struct Read;

#[async_trait]
impl Tool for Read {
    fn name(&self) -> &str {
        "Read"
    }

    fn description(&self) -> &str {
        "Reads a text file and returns its lines numbered like `cat -n` (line number, tab, line). \
         `offset` is the first line (1-based) and `limit` the number of lines; without them at \
         most 2000 lines and 100000 characters are returned, with a note saying how to read on. \
         Lines over 2000 characters are cut. A relative path is taken from the working \
         directory."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "The file to read (absolute, or relative to the working directory)"},
                "offset": {"type": "integer", "minimum": 0, "description": "First line to return, 1-based"},
                "limit": {"type": "integer", "minimum": 1, "description": "How many lines to return"}
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

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        let path = crate::paths::absolutize(
            str_field(&input, "file_path").unwrap_or_default(),
            &ctx.session.cwd,
            &ctx.session.home,
        );
        let offset = u64_field(&input, "offset").map(|v| v as usize);
        let limit = u64_field(&input, "limit").map(|v| v as usize);
        let meta = match tokio::fs::metadata(&path).await {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return ToolOutput::failed(missing_file_message(&path, &ctx.session.cwd));
            }
            Err(e) => return ToolOutput::failed(format!("cannot read {}: {e}", path.display())),
        };
        if meta.is_dir() {
            return ToolOutput::failed(format!(
                "{} is a directory, not a file. Use Glob (e.g. pattern \"*\" with this path) or \
                 Bash `ls {}` to list it.",
                path.display(),
                path.display()
            ));
        }
        if meta.len() > MAX_FILE_BYTES {
            return ToolOutput::failed(format!(
                "{} is {} bytes, too large for Read. Use Grep to find the lines you need, or Bash \
                 (head, tail, sed -n) to look at parts of it.",
                path.display(),
                meta.len()
            ));
        }
        let bytes = match tokio::fs::read(&path).await {
            Ok(b) => b,
            Err(e) => return ToolOutput::failed(format!("cannot read {}: {e}", path.display())),
        };
        if bytes.is_empty() {
            ctx.session.tools.read_state.record(&path, &bytes);
            return ToolOutput::success(format!(
                "{} exists but is empty (0 bytes).",
                path.display()
            ));
        }
        let text = match decode_text(&bytes) {
            Some(t) => t,
            None => {
                return ToolOutput::failed(format!(
                    "{} is a binary file ({} bytes); Read shows text files only. Use Bash (e.g. \
                     `file`, `xxd | head`) to inspect it.",
                    path.display(),
                    bytes.len()
                ));
            }
        };
        match render(&text.text, offset, limit) {
            Ok(mut out) => {
                ctx.session.tools.read_state.record(&path, &bytes);
                if text.lossy {
                    out.push_str(
                        "\n[This file is not valid UTF-8; bytes that are not were shown as \u{FFFD}.]",
                    );
                }
                ToolOutput::success(out)
            }
            Err(e) => ToolOutput::failed(e),
        }
    }
}

/// A decoded text file.
#[derive(Debug, PartialEq)]
pub(crate) struct Text {
    /// The text, without a UTF-8 byte-order mark.
    pub text: String,
    /// Whether invalid UTF-8 was replaced.
    pub lossy: bool,
}

/// Decodes a file as text, or `None` when it looks binary: a NUL byte in its first 8 KiB, or (for
/// non-UTF-8 files) more than 10% undecodable or control characters at its start.
pub(crate) fn decode_text(bytes: &[u8]) -> Option<Text> {
    let probe = &bytes[..bytes.len().min(8192)];
    if probe.contains(&0) {
        return None;
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => Some(Text {
            text: s.to_string(),
            lossy: false,
        }),
        Err(_) => {
            let text = String::from_utf8_lossy(bytes).into_owned();
            let sample: Vec<char> = text.chars().take(8192).collect();
            let bad = sample
                .iter()
                .filter(|c| {
                    **c == '\u{FFFD}'
                        || (c.is_control() && !matches!(c, '\t' | '\n' | '\r' | '\x0c' | '\x1b'))
                })
                .count();
            (bad * 10 <= sample.len()).then_some(Text { text, lossy: true })
        }
    }
}

/// Formats one numbered line, cutting it at [`MAX_LINE_CHARS`].
pub(crate) fn number_line(out: &mut String, number: usize, line: &str) {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let count = line.chars().count();
    if count > MAX_LINE_CHARS {
        let cut = line
            .char_indices()
            .nth(MAX_LINE_CHARS)
            .map(|(i, _)| i)
            .unwrap_or(line.len());
        out.push_str(&format!(
            "{number:>6}\t{}… [line cut: {count} characters in all]\n",
            &line[..cut]
        ));
    } else {
        out.push_str(&format!("{number:>6}\t{line}\n"));
    }
}

/// Numbers lines `offset..offset+limit` (1-based) of `text`. Without offset and limit, at most
/// [`DEFAULT_LINES`] lines and [`MAX_CHARS`] characters are returned with a notice saying how to
/// read on; with either given, going over [`MAX_CHARS`] is an error saying how to ask for less.
pub(crate) fn render(
    text: &str,
    offset: Option<usize>,
    limit: Option<usize>,
) -> Result<String, String> {
    let explicit = offset.is_some() || limit.is_some();
    let start = offset.unwrap_or(1).max(1);
    let limit = limit.unwrap_or(DEFAULT_LINES).max(1);
    let total = text.lines().count();
    if start > total {
        return Ok(format!(
            "[The file has {total} lines; offset {start} is past its end. Use an offset of at most {total}.]"
        ));
    }
    let mut out = String::new();
    let mut chars = 0usize;
    let mut last = start - 1;
    for (i, line) in text.lines().enumerate().skip(start - 1).take(limit) {
        let before = out.len();
        number_line(&mut out, i + 1, line);
        let added = out[before..].chars().count();
        if chars + added > MAX_CHARS {
            out.truncate(before);
            if explicit {
                let fit = (i + 1 - start).max(1);
                return Err(format!(
                    "lines {start}–{} come to more than {MAX_CHARS} characters, more than one Read \
                     returns. Ask for fewer lines (limit={fit} fits from offset {start}) or use Grep \
                     to find the part you need.",
                    (start - 1).saturating_add(limit).min(total)
                ));
            }
            break;
        }
        chars += added;
        last = i + 1;
    }
    if !explicit && last < total {
        out.push_str(&format!(
            "\n[Showing lines {start}–{last} of {total}: one Read returns at most {DEFAULT_LINES} \
             lines and {MAX_CHARS} characters. Read on with offset={} (and a limit), or use Grep \
             to find what you need.]",
            last + 1
        ));
    }
    Ok(out)
}

/// The text for a missing file, with similarly named files in the same folder.
fn missing_file_message(path: &Path, cwd: &Path) -> String {
    let mut msg = format!("File does not exist: {}.", path.display());
    let Some(parent) = path.parent() else {
        return msg;
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        msg.push_str(&format!(
            " Its folder {} does not exist either.",
            parent.display()
        ));
        return msg;
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let stem = path
        .file_stem()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let mut similar: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            let n = p.file_name()?.to_string_lossy().to_lowercase();
            let s = p.file_stem()?.to_string_lossy().to_lowercase();
            (n == name || s == stem).then(|| p.display().to_string())
        })
        .take(5)
        .collect();
    similar.sort();
    if !similar.is_empty() {
        msg.push_str(&format!(" Did you mean: {}?", similar.join(", ")));
    }
    msg.push_str(&format!(" (The working directory is {}.)", cwd.display()));
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_and_windows() {
        let text = "a\nb\r\nc\n";
        assert_eq!(
            render(text, None, None).unwrap(),
            "     1\ta\n     2\tb\n     3\tc\n"
        );
        assert_eq!(render(text, Some(2), Some(1)).unwrap(), "     2\tb\n");
        assert_eq!(
            render(text, Some(0), Some(5)).unwrap(),
            "     1\ta\n     2\tb\n     3\tc\n"
        );
        assert!(
            render(text, Some(9), None)
                .unwrap()
                .contains("past its end")
        );
    }

    #[test]
    fn long_line_cut() {
        let line = "x".repeat(2500);
        let out = render(&line, None, None).unwrap();
        assert!(out.contains("[line cut: 2500 characters in all]"));
        assert_eq!(out.matches('x').count(), MAX_LINE_CHARS);
    }

    #[test]
    fn default_line_cap_and_char_cap() {
        let text: String = (1..=2500).map(|i| format!("{i}\n")).collect();
        let out = render(&text, None, None).unwrap();
        assert!(out.contains("  2000\t2000\n"));
        assert!(!out.contains("\t2001\n"));
        assert!(out.contains("Read on with offset=2001"));

        let wide: String = (0..200)
            .map(|_| format!("{}\n", "y".repeat(1000)))
            .collect();
        let out = render(&wide, None, None).unwrap();
        assert!(out.len() <= MAX_CHARS + 400);
        assert!(out.contains("Showing lines 1–"));
        let err = render(&wide, Some(1), Some(200)).unwrap_err();
        assert!(err.contains("limit="), "{err}");
    }

    #[test]
    fn binary_detection() {
        assert!(decode_text(b"abc\0def").is_none());
        assert!(decode_text(&[0xff, 0xfe, 0x01, 0x02, 0x03]).is_none());
        let t = decode_text(b"\xEF\xBB\xBFhi").unwrap();
        assert_eq!(t.text, "hi");
        let t = decode_text(b"caf\xe9 au lait, with enough plain text around it").unwrap();
        assert!(t.lossy);
    }
}
