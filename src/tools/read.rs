//! `Read`: a text file as numbered lines (`cat -n` style), a window at a time.

use super::limits;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::files::{FileState, number_line};
use super::{absolutize_field, str_field, u64_field};
use crate::call::Input;
use crate::session::Session;
use crate::tool::{Access, Tool, ToolContext, ToolOutput};

/// Lines returned when no `limit` is given.
pub(crate) const DEFAULT_LINES: usize = 2_000;
/// What Read adds after the lines of a file that is not valid UTF-8.
const LOSSY_NOTE: &str =
    "\n[This file is not valid UTF-8; bytes that are not were shown as \u{FFFD}.]";
/// Files larger than this are refused whole; Grep or Bash can look at parts.
pub(crate) const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// The bytes of the regular file `path`, at most [`MAX_FILE_BYTES`]; the text on error is for
/// the model. Blocking: called on the blocking pool.
fn read_bounded(path: &Path, decided: Option<&[PathBuf]>) -> Result<Vec<u8>, String> {
    match super::file_bytes::read_regular_as_decided(path, MAX_FILE_BYTES, decided) {
        Ok(bytes) => Ok(bytes),
        Err(super::file_bytes::FileError::TooLarge { .. }) => Err(format!(
            "{} is larger than {MAX_FILE_BYTES} bytes, too large for Read. Use Grep to find the \
             lines you need, or Bash (head, tail, sed -n) to look at parts of it.",
            path.display()
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// The `Read` tool.
#[derive(Debug)]
pub(crate) struct Read {
    files: Arc<FileState>,
}

impl Read {
    /// A Read sharing the session's file state with Write and Edit.
    pub(crate) fn new(files: Arc<FileState>) -> Self {
        Self { files }
    }
}

#[async_trait]
impl Tool for Read {
    fn access(&self) -> Access<'_> {
        Access::file("file_path", true)
    }

    fn name(&self) -> &str {
        "Read"
    }

    fn description(&self) -> &str {
        "Reads a text file and returns its lines numbered like `cat -n` (line number, tab, line). \
         `offset` is the first line (1-based) and `limit` the number of lines. Without a limit at \
         most 2000 lines are returned, and at most as many characters as Read's output budget \
         (50000 by default); a note at the end says how to read on. Lines over 2000 characters \
         are cut. A relative path is taken from the working directory."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "maxLength": limits::PATH_CHARS, "description": "The file to read (absolute, or relative to the working directory)"},
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
        super::file_call(&self.files, input, ctx, read_file).await
    }
}

/// Reads the window of a file a Read call asks for (file-system work: on the blocking pool).
fn read_file(files: &FileState, input: &Input, ctx: &ToolContext) -> ToolOutput {
    let path = crate::paths::absolutize(
        str_field(input, "file_path").unwrap_or_default(),
        &ctx.session.cwd,
        &ctx.session.home,
    );
    let offset = u64_field(input, "offset").map(|v| v as usize);
    let limit = u64_field(input, "limit").map(|v| v as usize);
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(what) = super::files::dangling_link(&path) {
                return ToolOutput::failed(format!("{what}: there is nothing to read."));
            }
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
    if !meta.is_file() {
        return ToolOutput::failed(super::file_bytes::FileError::NotRegular(path).to_string());
    }
    if meta.len() > MAX_FILE_BYTES {
        return ToolOutput::failed(format!(
            "{} is {} bytes, too large for Read. Use Grep to find the lines you need, or Bash \
             (head, tail, sed -n) to look at parts of it.",
            path.display(),
            meta.len()
        ));
    }
    // What is recorded as read is what was read: no change of the file comes in between.
    let _file = files.lock_stated(&path, Some(&meta));
    let _turn = files.large_read_turn(meta.len());
    // Checked again on the open file: the path may have changed since.
    let bytes = match read_bounded(&path, ctx.decided_paths.as_deref()) {
        Ok(b) => b,
        Err(e) => return ToolOutput::failed(e),
    };
    if bytes.is_empty() {
        files.record(ctx.state, &path, &bytes);
        let window = Rendered {
            text: String::new(),
            start: offset.unwrap_or(1).max(1),
            lines: 0,
            total: 0,
            capped: false,
        };
        return ToolOutput::success(format!("{} exists but is empty (0 bytes).", path.display()))
            .with_response(ctx.hook_response.then(|| response(&path, "", &window)));
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
    // Read keeps within its own output budget, so what it returns is never cut or moved to
    // a file by the budget stage (reading that file back would hit the same limit).
    let budget = ctx.output_chars;
    let note = if text.lossy { LOSSY_NOTE } else { "" };
    match render_window(&text.text, offset, limit, budget, note) {
        Ok(out) => {
            files.record(ctx.state, &path, &bytes);
            let response = ctx.hook_response.then(|| response(&path, &text.text, &out));
            ToolOutput::success(out.text).with_response(response)
        }
        Err(e) => ToolOutput::failed(e),
    }
}

/// The shape of the reference CLI's `FileReadOutput` (its `text` variant), as a PostToolUse
/// hook receives it: the lines shown, without their numbers (cut as the model saw them),
/// where they start, and how many lines the file has.
fn response(path: &Path, text: &str, window: &Rendered) -> Value {
    let mut content = window
        .text
        .lines()
        .take(window.lines)
        .map(|l| l.split_once('\t').map_or(l, |(_, line)| line))
        .collect::<Vec<_>>()
        .join("\n");
    if window.lines > 0 && window.start + window.lines > window.total && text.ends_with('\n') {
        content.push('\n');
    }
    let mut file = json!({
        "filePath": path.to_string_lossy(),
        "content": content,
        "numLines": window.lines,
        "startLine": window.start,
        "totalLines": window.total,
    });
    if window.capped {
        file["truncatedByTokenCap"] = Value::Bool(true);
    }
    json!({"type": "text", "file": file})
}

/// A rendered window of a file.
#[derive(Debug, PartialEq)]
pub(crate) struct Rendered {
    /// What the model sees.
    pub text: String,
    /// The first line shown (1-based).
    pub start: usize,
    /// How many lines are shown.
    pub lines: usize,
    /// How many lines the file has.
    pub total: usize,
    /// Whether a read without a `limit` stopped before the end of the file.
    pub capped: bool,
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

/// Numbers lines `offset..offset+limit` (1-based) of `text` and ends the text with `note`, in
/// at most `max_chars` characters, note included.
///
/// With a `limit`, the window is returned whole, or, when it is longer than `max_chars`, refused
/// with the `limit` that fits from the same offset (that window is then returned whole). Without
/// one, at most [`DEFAULT_LINES`] lines are returned, and when the file goes on past them (or
/// past `max_chars`) a notice saying where to read on follows them — notice included, the text
/// stays within `max_chars`.
#[cfg(test)]
pub(crate) fn render(
    text: &str,
    offset: Option<usize>,
    limit: Option<usize>,
    max_chars: usize,
    note: &str,
) -> Result<String, String> {
    render_window(text, offset, limit, max_chars, note).map(|r| r.text)
}

/// [`render`], saying which lines were shown.
pub(crate) fn render_window(
    text: &str,
    offset: Option<usize>,
    limit: Option<usize>,
    max_chars: usize,
    note: &str,
) -> Result<Rendered, String> {
    let room = max_chars.saturating_sub(note.chars().count());
    let start = offset.unwrap_or(1).max(1);
    let total = text.lines().count();
    if start > total {
        return Ok(Rendered {
            text: format!(
                "[The file has {total} lines; offset {start} is past its end. Use an offset of at most {total}.]"
            ),
            start,
            lines: 0,
            total,
            capped: false,
        });
    }
    let end = (start - 1)
        .saturating_add(limit.unwrap_or(DEFAULT_LINES).max(1))
        .min(total);
    // Render the window, remembering where each line ends (bytes, and characters so far); stop
    // once past the room, as nothing later can be shown.
    let mut out = String::new();
    let mut ends: Vec<(usize, usize)> = Vec::new();
    let mut chars = 0usize;
    for (i, line) in text
        .lines()
        .enumerate()
        .skip(start - 1)
        .take(end + 1 - start)
    {
        let before = out.len();
        number_line(&mut out, i + 1, line);
        chars += out[before..].chars().count();
        ends.push((out.len(), chars));
        if chars > room {
            break;
        }
    }
    let whole = ends.len() == end + 1 - start && chars <= room;
    let fitting = |room: usize| ends.iter().take_while(|(_, c)| *c <= room).count();
    let too_long = || {
        format!(
            "line {start} alone comes to more than the {max_chars} characters one Read returns. \
             Use Grep to find the part you need, or Bash (e.g. `sed -n '{start}p' FILE | cut -c1-1000`)."
        )
    };
    if limit.is_some() && !whole {
        let fit = fitting(room);
        if fit == 0 {
            return Err(too_long());
        }
        return Err(format!(
            "lines {start}–{end} come to more than {max_chars} characters, more than one Read \
             returns. Ask for fewer lines (limit={fit} fits from offset {start}) or use Grep to \
             find the part you need."
        ));
    }
    if limit.is_none() && !(whole && end == total) {
        let notice = |last: usize| {
            format!(
                "\n[Showing lines {start}–{last} of {total}: one Read returns at most \
                 {DEFAULT_LINES} lines and {max_chars} characters. Read on with offset={} (and a \
                 limit), or use Grep to find what you need.]",
                last + 1
            )
        };
        // Room for the longest notice this file can need.
        let shown = fitting(room.saturating_sub(notice(total).chars().count()));
        if shown == 0 {
            // Not even the notice and a line fit (a tiny `limits.per_tool.Read`): a window
            // without a notice may.
            return Err(match fitting(room) {
                0 => too_long(),
                fit => format!(
                    "one Read returns at most {max_chars} characters, too few for these lines \
                     and a note on where to read on. Ask for fewer lines (limit={fit} fits from \
                     offset {start}) or use Grep to find the part you need."
                ),
            });
        }
        out.truncate(ends[shown - 1].0);
        out.push_str(&notice(start - 1 + shown));
        out.push_str(note);
        return Ok(Rendered {
            text: out,
            start,
            lines: shown,
            total,
            capped: true,
        });
    }
    out.push_str(note);
    Ok(Rendered {
        text: out,
        start,
        lines: end + 1 - start,
        total,
        capped: false,
    })
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
    use crate::tools::files::MAX_LINE_CHARS;

    const BUDGET: usize = 50_000;

    #[test]
    fn numbering_and_windows() {
        let text = "a\nb\r\nc\n";
        assert_eq!(
            render(text, None, None, BUDGET, "").unwrap(),
            "     1\ta\n     2\tb\n     3\tc\n"
        );
        assert_eq!(
            render(text, Some(2), Some(1), BUDGET, "").unwrap(),
            "     2\tb\n"
        );
        assert_eq!(
            render(text, Some(0), Some(5), BUDGET, "").unwrap(),
            "     1\ta\n     2\tb\n     3\tc\n"
        );
        assert!(
            render(text, Some(9), None, BUDGET, "")
                .unwrap()
                .contains("past its end")
        );
    }

    #[test]
    fn long_line_cut() {
        let line = "x".repeat(2500);
        let out = render(&line, None, None, BUDGET, "").unwrap();
        assert!(out.contains("[line cut: 2500 characters in all]"));
        assert_eq!(out.matches('x').count(), MAX_LINE_CHARS);
    }

    /// The first line number after the text's notice, if it has one.
    fn read_on(out: &str) -> Option<usize> {
        let at = out.find("Read on with offset=")? + "Read on with offset=".len();
        out[at..].split(' ').next()?.parse().ok()
    }

    #[test]
    fn stopping_early_says_where_to_read_on_within_the_budget() {
        let short: String = (1..=2500).map(|i| format!("{i}\n")).collect();
        let wide: String = (1..=200)
            .map(|i| format!("{i} {}\n", "y".repeat(997)))
            .collect();
        // (text, offset, budget, last line shown, next offset)
        for (text, offset, budget, last, next) in [
            (&short, None, BUDGET, 2000, Some(2001)),
            (&short, Some(400), BUDGET, 2399, Some(2400)),
            (&short, Some(2001), BUDGET, 2500, None),
            (&wide, None, BUDGET, 49, Some(50)),
            (&wide, Some(190), BUDGET, 200, None),
            (&wide, None, 10_000, 9, Some(10)),
        ] {
            let out = render(text, offset, None, budget, "").unwrap();
            assert!(out.chars().count() <= budget, "{offset:?} {budget}");
            assert!(
                out.contains(&format!("{last:>6}\t")),
                "{offset:?} {budget}: {last}"
            );
            assert!(
                !out.contains(&format!("{:>6}\t", last + 1)),
                "{offset:?} {budget}"
            );
            assert_eq!(read_on(&out), next, "{offset:?} {budget}");
        }
    }

    #[test]
    fn a_limit_over_the_budget_names_a_limit_that_fits() {
        let wide: String = (1..=200)
            .map(|i| format!("{i} {}\n", "y".repeat(997)))
            .collect();
        for (offset, budget) in [(1, BUDGET), (30, BUDGET), (5, 3_000), (100, 20_000)] {
            let err = render(&wide, Some(offset), Some(200), budget, "").unwrap_err();
            let at = err.find("limit=").unwrap() + "limit=".len();
            let fit: usize = err[at..].split(' ').next().unwrap().parse().unwrap();
            assert!(err.contains(&format!("from offset {offset}")), "{err}");
            let out = render(&wide, Some(offset), Some(fit), budget, "").unwrap();
            assert!(out.chars().count() <= budget);
            assert!(render(&wide, Some(offset), Some(fit + 1), budget, "").is_err());
        }
        // Lines fit, but not with a notice after them: a limit that fits is named.
        let err = render(&wide, None, None, 1_100, "").unwrap_err();
        assert!(err.contains("limit=1 fits from offset 1"), "{err}");
        // Not even one line fits.
        let err = render(&wide, Some(3), Some(1), 500, "").unwrap_err();
        assert!(err.contains("line 3 alone"), "{err}");
        assert!(
            render(&wide, Some(3), None, 500, "")
                .unwrap_err()
                .contains("line 3 alone")
        );
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
