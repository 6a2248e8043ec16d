//! `Edit`: replaces an exact string in a file, keeping its line endings and byte-order mark.

use super::limits;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::files::{FileState, number_line, refuse_dangling_link, target, worth_checking};
use super::{absolutize_field, bool_field, on_blocking_pool, patch, str_field};
use crate::call::Input;
use crate::session::Session;
use crate::tool::{Access, StateKey, Tool, ToolContext, ToolOutput, Verdict};

const BOM: &str = "\u{FEFF}";

/// The `Edit` tool.
#[derive(Debug)]
pub(crate) struct Edit {
    files: Arc<FileState>,
}

impl Edit {
    /// An Edit sharing the session's file state with Read and Write.
    pub(crate) fn new(files: Arc<FileState>) -> Self {
        Self { files }
    }
}

/// Why an edit could not be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EditError {
    /// `old_string` does not occur.
    NotFound,
    /// `old_string` occurs this many times (more than once) and `replace_all` is off.
    Ambiguous(usize),
}

/// A successful replacement.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Edited {
    /// The new text.
    pub text: String,
    /// How many occurrences were replaced.
    pub count: usize,
    /// Byte offset of the first replacement in the new text.
    pub first: usize,
    /// The replacement as written (after line-ending conversion).
    pub new: String,
}

/// Converts every line ending of `s` to CRLF.
fn to_crlf(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\n', "\r\n")
}

impl EditError {
    /// What the model is told, for the file at `path`.
    fn message(&self, path: &std::path::Path) -> String {
        match self {
            EditError::NotFound => format!(
                "old_string was not found in {}. It must match the file exactly, including \
                 whitespace and indentation; Read the file again and copy the exact text.",
                path.display()
            ),
            EditError::Ambiguous(n) => format!(
                "old_string occurs {n} times in {}, but must occur exactly once. Include more \
                 surrounding lines to make it unique, or set replace_all to true to change \
                 all {n}.",
                path.display()
            ),
        }
    }
}

/// Whether `old` can replace as asked in the file at `path` as it is now, for validation: an
/// old_string that is absent, or present more than once without `replace_all`, is refused
/// before the call runs (as the reference does). A file this cannot read as text is left to
/// the call, which explains it.
fn check_match(
    files: &FileState,
    path: &std::path::Path,
    old: &str,
    replace_all: bool,
    len: u64,
) -> Result<(), String> {
    if len > super::read::MAX_FILE_BYTES {
        return Ok(());
    }
    let _turn = files.large_read_turn(len);
    let Ok(whole) = std::fs::read(path).map(String::from_utf8) else {
        return Ok(());
    };
    let Ok(whole) = whole else { return Ok(()) };
    let text = whole.strip_prefix(BOM).unwrap_or(&whole);
    // Only the match is checked here; the replacement text does not matter for it.
    match count_matches(text, old, replace_all) {
        Ok(()) => Ok(()),
        Err(e) => Err(e.message(path)),
    }
}

/// Whether most lines of `text` end in CRLF.
fn crlf_file(text: &str) -> bool {
    let crlf_lines = text.matches("\r\n").count();
    let lf_lines = text.matches('\n').count();
    crlf_lines > 0 && crlf_lines * 2 >= lf_lines
}

/// What [`apply_edit`] would find for `old` in `text`, without making the new text.
fn count_matches(text: &str, old: &str, replace_all: bool) -> Result<(), EditError> {
    for (old, _) in candidates(text, old, "") {
        match text.matches(old.as_str()).count() {
            0 => {}
            1 => return Ok(()),
            _ if replace_all => return Ok(()),
            n => return Err(EditError::Ambiguous(n)),
        }
    }
    Err(EditError::NotFound)
}

/// The ways `old` (with its `new`) may stand in `text`, tried in order: converted to CRLF in a
/// CRLF file, as written, and then with straight quotes standing for the file's curly ones (the
/// new text taking their style). Empty ones are left out.
fn candidates(text: &str, old: &str, new: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::with_capacity(3);
    if crlf_file(text) {
        out.push((to_crlf(old), to_crlf(new)));
    }
    out.push((old.to_string(), new.to_string()));
    let quoted: Vec<(String, String)> = out
        .iter()
        .filter_map(|(o, n)| {
            let actual = super::quotes::actual_text(text, o)?;
            let new = super::quotes::keep_quote_style(&actual, n);
            Some((actual, new))
        })
        .collect();
    out.extend(quoted);
    out.retain(|(o, _)| !o.is_empty());
    out
}

/// Replaces `old` by `new` in `text`: exactly one occurrence unless `replace_all`. In a file
/// whose lines end in CRLF, `old` and `new` written with LF are converted to CRLF first, so the
/// file keeps its line endings; if the converted `old` is absent, it is matched as given; if
/// that is absent too, straight quotes in it match the file's curly ones ([`candidates`]).
pub(crate) fn apply_edit(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Edited, EditError> {
    for (old, new) in candidates(text, old, new) {
        let count = text.matches(old.as_str()).count();
        if count == 0 {
            continue;
        }
        if count > 1 && !replace_all {
            return Err(EditError::Ambiguous(count));
        }
        let first = text.find(old.as_str()).unwrap_or(0);
        let text = if replace_all {
            text.replace(old.as_str(), &new)
        } else {
            text.replacen(old.as_str(), &new, 1)
        };
        return Ok(Edited {
            text,
            count: if replace_all { count } else { 1 },
            first,
            new,
        });
    }
    Err(EditError::NotFound)
}

/// Lines around the first change, numbered as Read numbers them.
fn snippet(text: &str, first: usize, new: &str) -> String {
    let line = text[..first.min(text.len())].matches('\n').count() + 1;
    let from = line.saturating_sub(3).max(1);
    let to = line + new.matches('\n').count() + 3;
    let mut out = String::new();
    for (i, l) in text.lines().enumerate().skip(from - 1).take(to + 1 - from) {
        number_line(&mut out, i + 1, l);
    }
    out
}

#[async_trait]
impl Tool for Edit {
    fn access(&self) -> Access<'_> {
        Access::file("file_path", false)
    }

    fn name(&self) -> &str {
        "Edit"
    }

    fn description(&self) -> &str {
        "Replaces `old_string` with `new_string` in a file. `old_string` must match the file \
         exactly (whitespace and indentation included; copy it from Read output without the \
         line-number prefix) and occur exactly once, unless `replace_all` is true. Read the file \
         first in this session. Line endings (LF/CRLF) and a UTF-8 byte-order mark are kept. An \
         empty `old_string` creates a new file with `new_string` as its content."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "maxLength": limits::PATH_CHARS, "description": "The file to change (absolute, or relative to the working directory)"},
                "old_string": {"type": "string", "maxLength": limits::CONTENT_CHARS, "description": "The exact text to replace"},
                "new_string": {"type": "string", "maxLength": limits::CONTENT_CHARS, "description": "The text to put instead"},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)"}
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }

    fn normalize(&self, input: &mut Input, session: &Session) {
        absolutize_field(input, "file_path", session);
    }

    fn validate(&self, input: &Input, session: &Session, state: StateKey) -> Verdict {
        let old = str_field(input, "old_string").unwrap_or_default();
        let new = str_field(input, "new_string").unwrap_or_default();
        let (same, creates) = (old == new, old.is_empty());
        let old = old.to_string();
        let replace_all = bool_field(input, "replace_all", false);
        let path = target(input, session);
        let (files, guard) = (self.files.clone(), session.guard.clone());
        Verdict::Later(Box::pin(on_blocking_pool(move || {
            if !worth_checking(&path, &*guard) {
                return Ok(());
            }
            // A change of the file running now is not seen half done.
            let _file = files.lock_path(&path);
            if same {
                return Err(
                    "old_string and new_string are the same, so there is nothing to change. \
                     Give the text to replace and the different text to put instead."
                        .to_string(),
                );
            }
            match std::fs::metadata(&path) {
                Err(_) if creates => refuse_dangling_link(&path),
                Err(_) => Err(format!(
                    "File does not exist: {}. Check the path (Glob can find it), or create the \
                     file with Write.",
                    path.display()
                )),
                Ok(m) if m.is_dir() => Err(format!(
                    "{} is a directory; give the path of a file to edit",
                    path.display()
                )),
                Ok(m) if !m.is_file() => {
                    Err(super::file_bytes::FileError::NotRegular(path).to_string())
                }
                Ok(m) if creates && m.len() > 0 => Err(format!(
                    "old_string is empty but {} is not: give the exact text to replace, or use \
                     Write to replace the whole file.",
                    path.display()
                )),
                Ok(m) => {
                    files.check_fresh(state, &path)?;
                    check_match(&files, &path, &old, replace_all, m.len())
                }
            }
        })))
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        super::file_call(&self.files, input, ctx, edit_file).await
    }
}

/// Applies the change an Edit call asks for (file-system work: on the blocking pool).
fn edit_file(files: &FileState, input: &Input, ctx: &ToolContext) -> ToolOutput {
    let path = target(input, &ctx.session);
    let old = str_field(input, "old_string").unwrap_or_default();
    let new = str_field(input, "new_string").unwrap_or_default();
    let replace_all = bool_field(input, "replace_all", false);
    let describe = ctx.hook_response;
    let change = Change {
        path: &path,
        old,
        new,
        replace_all,
    };
    // Reading, the check and the write as one step for this file: no other change slips in
    // between (a second Edit of the file waits, then sees this one's result).
    let meta = std::fs::metadata(&path).ok();
    let _file = files.lock_stated(&path, meta.as_ref());
    let size = meta.map_or(0, |m| m.len());
    let _turn = files.large_read_turn(size);
    // Regular files only, bounded as Read is: the path may have changed since validation.
    let decided = ctx.decided_paths.as_deref();
    let bytes = match super::file_bytes::read_regular_as_decided(
        &path,
        super::read::MAX_FILE_BYTES,
        decided,
    ) {
        Ok(b) => Some(b),
        Err(super::file_bytes::FileError::NotFound(_)) => None,
        Err(e) => return ToolOutput::failed(e.to_string()),
    };
    let commit = |bytes: &[u8]| {
        let dir = &ctx.session.output_dir;
        files.commit(ctx.state, &ctx.tool_use_id, &path, bytes, dir, decided)
    };
    let Some(bytes) = bytes else {
        if !old.is_empty() {
            return ToolOutput::failed(format!("File does not exist: {}.", path.display()));
        }
        if let Err(e) = refuse_dangling_link(&path) {
            return ToolOutput::failed(e);
        }
        return match commit(new.as_bytes()) {
            Ok(()) => ToolOutput::success(format!("Created {}.", path.display()))
                .with_response(describe.then(|| change.response("", new))),
            Err(e) => ToolOutput::failed(e),
        };
    };
    // Checked again here: another call may have changed the file since validation.
    if let Err(e) = files.check_fresh(ctx.state, &path) {
        return ToolOutput::failed(e);
    }
    let Ok(whole) = String::from_utf8(bytes) else {
        return ToolOutput::failed(format!(
            "{} is not valid UTF-8 text, so Edit cannot change it safely. Use Write to \
             replace it whole, or Bash for byte-level changes.",
            path.display()
        ));
    };
    let (bom, text) = match whole.strip_prefix(BOM) {
        Some(rest) => (BOM, rest),
        None => ("", whole.as_str()),
    };
    if old.is_empty() {
        // Only reachable for an empty existing file (validation refuses the rest).
        if !text.is_empty() {
            return ToolOutput::failed(format!(
                "old_string is empty but {} is not: give the exact text to replace.",
                path.display()
            ));
        }
        let out = format!("{bom}{new}");
        return match commit(out.as_bytes()) {
            Ok(()) => ToolOutput::success(format!("Updated {}.", path.display()))
                .with_response(describe.then(|| change.response(&whole, &out))),
            Err(e) => ToolOutput::failed(e),
        };
    }
    let edited = match apply_edit(text, old, new, replace_all) {
        Ok(e) => e,
        Err(e) => return ToolOutput::failed(e.message(&path)),
    };
    let out = format!("{bom}{}", edited.text);
    if let Err(e) = commit(out.as_bytes()) {
        return ToolOutput::failed(e);
    }
    let what = if edited.count == 1 {
        "1 occurrence".to_string()
    } else {
        format!("{} occurrences", edited.count)
    };
    ToolOutput::success(format!(
        "Updated {} ({what} replaced). The changed region now reads:\n{}",
        path.display(),
        snippet(&edited.text, edited.first, &edited.new)
    ))
    .with_response(describe.then(|| change.response(&whole, &out)))
}

/// What an Edit call asked for, to describe the change to hooks.
struct Change<'a> {
    path: &'a std::path::Path,
    old: &'a str,
    new: &'a str,
    replace_all: bool,
}

impl Change<'_> {
    /// The shape of the reference CLI's `FileEditOutput`, as a PostToolUse hook receives it.
    fn response(&self, original: &str, updated: &str) -> Value {
        json!({
            "filePath": self.path.to_string_lossy(),
            "oldString": self.old,
            "newString": self.new,
            "originalFile": patch::original_file(Some(original)),
            "structuredPatch": patch::structured_patch(original, updated),
            "userModified": false,
            "replaceAll": self.replace_all,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_table() {
        // (text, old, new, replace_all, expected)
        type Case = (
            &'static str,
            &'static str,
            &'static str,
            bool,
            Result<&'static str, EditError>,
        );
        let cases: &[Case] = &[
            ("a b c", "b", "x", false, Ok("a x c")),
            ("a b b", "b", "x", false, Err(EditError::Ambiguous(2))),
            ("a b b", "b", "x", true, Ok("a x x")),
            ("a b c", "z", "x", false, Err(EditError::NotFound)),
            (
                "one\r\ntwo\r\nthree\r\n",
                "one\ntwo",
                "1\n2",
                false,
                Ok("1\r\n2\r\nthree\r\n"),
            ),
            (
                "one\r\ntwo\r\n",
                "two",
                "2\n2b",
                false,
                Ok("one\r\n2\r\n2b\r\n"),
            ),
            ("one\ntwo\n", "one\ntwo", "x\ny", false, Ok("x\ny\n")),
            (
                "mixed\r\nlf\nlf\nlf\n",
                "lf\nlf",
                "z",
                false,
                Ok("mixed\r\nz\nlf\n"),
            ),
        ];
        for (text, old, new, all, want) in cases {
            // Validation's count finds what the edit finds.
            assert_eq!(
                count_matches(text, old, *all).err(),
                want.as_ref().err().cloned(),
                "{text:?} {old:?}"
            );
            let got = apply_edit(text, old, new, *all).map(|e| e.text);
            match want {
                Ok(w) => assert_eq!(got.as_deref(), Ok(*w), "{text:?} {old:?}"),
                Err(e) => assert_eq!(got.as_ref().err(), Some(e), "{text:?} {old:?}"),
            }
        }
    }

    #[test]
    fn snippet_shows_change() {
        let text = "1\n2\n3\n4\nNEW\n6\n7\n8\n9\n";
        let s = snippet(text, text.find("NEW").unwrap(), "NEW");
        assert!(s.starts_with("     2\t2\n"));
        assert!(s.contains("     5\tNEW\n"));
        assert!(s.ends_with("     8\t8\n"));
    }
}
