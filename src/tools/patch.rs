//! The change a Write or Edit made, as the reference CLI describes it to hooks: unified-diff
//! hunks `{oldStart, oldLines, newStart, newLines, lines}` (`structuredPatch`), each line
//! prefixed with ` `, `-` or `+`, three lines of context.

use serde_json::{Value, json};
use similar::{ChangeTag, TextDiff};

/// Files larger than this (either side, in bytes) are not diffed: the patch is empty and the
/// original is left out, as the reference does for content too large to include.
pub(crate) const MAX_DIFF_BYTES: usize = 1 << 20;

/// Lines of unchanged context around each change.
const CONTEXT: usize = 3;

/// The hunks turning `old` into `new`; empty when nothing changed or either side is over
/// [`MAX_DIFF_BYTES`].
pub(crate) fn structured_patch(old: &str, new: &str) -> Value {
    if old.len() > MAX_DIFF_BYTES || new.len() > MAX_DIFF_BYTES {
        return json!([]);
    }
    let diff = TextDiff::from_lines(old, new);
    let hunks: Vec<Value> = diff
        .grouped_ops(CONTEXT)
        .iter()
        .map(|group| {
            let (Some(first), Some(last)) = (group.first(), group.last()) else {
                return json!({});
            };
            let old_range = first.old_range().start..last.old_range().end;
            let new_range = first.new_range().start..last.new_range().end;
            let mut lines = Vec::new();
            for op in group {
                for change in diff.iter_changes(op) {
                    let sign = match change.tag() {
                        ChangeTag::Equal => ' ',
                        ChangeTag::Delete => '-',
                        ChangeTag::Insert => '+',
                    };
                    let text = change.value();
                    let text = text.strip_suffix('\n').unwrap_or(text);
                    let text = text.strip_suffix('\r').unwrap_or(text);
                    lines.push(Value::String(format!("{sign}{text}")));
                }
            }
            // 1-based, also for a side with no lines (an empty file), as the reference numbers
            // it (unlike `diff -u`, which names the line before).
            let start = |r: &std::ops::Range<usize>| r.start + 1;
            json!({
                "oldStart": start(&old_range),
                "oldLines": old_range.len(),
                "newStart": start(&new_range),
                "newLines": new_range.len(),
                "lines": lines,
            })
        })
        .collect();
    Value::Array(hunks)
}

/// `original` as a response field: the text, or null when there was none or it is too large.
pub(crate) fn original_file(original: Option<&str>) -> Value {
    match original {
        Some(text) if text.len() <= MAX_DIFF_BYTES => Value::String(text.to_owned()),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_as_the_reference_writes_them() {
        // The two patches the reference CLI produced for these changes.
        assert_eq!(
            structured_patch("one\ntwo\n", "one\nthree\n"),
            json!([{"oldStart": 1, "oldLines": 2, "newStart": 1, "newLines": 2,
                    "lines": [" one", "-two", "+three"]}])
        );
        assert_eq!(
            structured_patch("alpha\nbeta\ngamma\n", "alpha\nBETA\ngamma\n"),
            json!([{"oldStart": 1, "oldLines": 3, "newStart": 1, "newLines": 3,
                    "lines": [" alpha", "-beta", "+BETA", " gamma"]}])
        );
    }

    #[test]
    fn context_splits_far_apart_changes_and_edges() {
        let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let new: String = (1..=20)
            .map(|i| match i {
                2 => "two\n".to_string(),
                19 => "nineteen\n".to_string(),
                i => format!("{i}\n"),
            })
            .collect();
        let p = structured_patch(&old, &new);
        let hunks = p.as_array().unwrap();
        assert_eq!(hunks.len(), 2);
        assert_eq!(hunks[0]["oldStart"], 1);
        assert_eq!(hunks[0]["oldLines"], 5);
        assert_eq!(hunks[1]["oldStart"], 16);
        // Nothing changed: no hunks; an empty file gets everything added (the reference's
        // numbering: `oldStart` 1 for an empty original).
        assert_eq!(structured_patch("a\n", "a\n"), json!([]));
        assert_eq!(
            structured_patch("", "x\n"),
            json!([{"oldStart": 1, "oldLines": 0, "newStart": 1, "newLines": 1, "lines": ["+x"]}])
        );
        // CRLF lines come out without their line ending.
        assert_eq!(
            structured_patch("a\r\n", "b\r\n")[0]["lines"],
            json!(["-a", "+b"])
        );
    }

    #[test]
    fn too_large_is_left_out() {
        let big = "x\n".repeat(MAX_DIFF_BYTES);
        assert_eq!(structured_patch(&big, "y\n"), json!([]));
        assert_eq!(original_file(Some(&big)), Value::Null);
        assert_eq!(original_file(None), Value::Null);
        assert_eq!(original_file(Some("a")), json!("a"));
    }
}
