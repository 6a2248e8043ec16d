//! How an error message shows text the client sent: never whole when it is long.
//!
//! An `error` line that quoted a field as given (an unknown `type`, a `format`, a schema's
//! `"type"`) would be as long as the field, and a client that does not read its output could
//! queue many such lines. Every message that shows client text goes through [`quoted`] (a value,
//! in quotes) or [`clipped`] (a message of someone else's, such as a schema compiler's, that may
//! hold such a value): a long text is cut and says how long it was.

use std::borrow::Cow;

/// Most characters of one client-sent text an error message shows.
pub(crate) const MAX_QUOTE_CHARS: usize = 100;

/// Most characters kept of a message [`clipped`]: its start and its end.
const CLIP_HEAD_CHARS: usize = 200;
const CLIP_TAIL_CHARS: usize = 100;

/// The byte index after the first `max` characters of `s`, or None if `s` is not longer.
fn after_chars(s: &str, max: usize) -> Option<usize> {
    s.char_indices().nth(max).map(|(i, _)| i)
}

/// `text` as an error message quotes it: in quotes (escaped as Rust's `{:?}` does) when at most
/// [`MAX_QUOTE_CHARS`] characters, else its first [`MAX_QUOTE_CHARS`] in quotes followed by
/// `… (N bytes)`, N its whole length.
pub(crate) fn quoted(text: &str) -> String {
    match after_chars(text, MAX_QUOTE_CHARS) {
        None => format!("{text:?}"),
        Some(cut) => format!("{:?}… ({} bytes)", &text[..cut], text.len()),
    }
}

/// A message that may hold long client text (another library's words about it): as it is when
/// short, else its first 200 and last 100 characters around `…[N bytes cut]…`.
pub(crate) fn clipped(message: &str) -> Cow<'_, str> {
    let Some(head) = after_chars(message, CLIP_HEAD_CHARS + CLIP_TAIL_CHARS) else {
        return Cow::Borrowed(message);
    };
    let head = after_chars(message, CLIP_HEAD_CHARS).unwrap_or(head);
    let tail = message
        .char_indices()
        .rev()
        .nth(CLIP_TAIL_CHARS - 1)
        .map_or(message.len(), |(i, _)| i);
    Cow::Owned(format!(
        "{}…[{} bytes cut]…{}",
        &message[..head],
        tail - head,
        &message[tail..]
    ))
}

/// What kind of JSON value `v` is, as an error message names it ("a string", "null", …).
pub(crate) fn kind_of(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_quoted_whole() {
        assert_eq!(quoted("read_file"), "\"read_file\"");
        assert_eq!(quoted(""), "\"\"");
        assert_eq!(quoted("a\"b\n"), r#""a\"b\n""#);
        let exact = "x".repeat(MAX_QUOTE_CHARS);
        assert_eq!(quoted(&exact), format!("\"{exact}\""));
    }

    #[test]
    fn long_text_is_cut_and_says_how_long_it_was() {
        let long = "k".repeat(30_000_000);
        let q = quoted(&long);
        assert_eq!(
            q,
            format!("\"{}\"… (30000000 bytes)", "k".repeat(MAX_QUOTE_CHARS))
        );
        // Whole characters only: multi-byte text is cut between characters, counted in bytes.
        let wide = "é".repeat(MAX_QUOTE_CHARS + 1);
        let q = quoted(&wide);
        assert!(
            q.starts_with(&format!("\"{}\"…", "é".repeat(MAX_QUOTE_CHARS))),
            "{q}"
        );
        assert!(q.ends_with(&format!("({} bytes)", wide.len())), "{q}");
        // Escapes may lengthen the quote, never past a few bytes per character kept.
        let controls = "\u{1}".repeat(1 << 20);
        assert!(quoted(&controls).len() < MAX_QUOTE_CHARS * 8 + 32);
    }

    #[test]
    fn long_messages_keep_their_start_and_end() {
        assert!(matches!(clipped("short"), Cow::Borrowed("short")));
        let exact = "y".repeat(CLIP_HEAD_CHARS + CLIP_TAIL_CHARS);
        assert_eq!(clipped(&exact), exact.as_str());
        let message = format!(
            "{:?} is not valid under any of the schemas listed in the 'anyOf' keyword",
            "z".repeat(1 << 20)
        );
        let c = clipped(&message);
        assert!(c.starts_with("\"zzz"), "{c}");
        assert!(
            c.ends_with("is not valid under any of the schemas listed in the 'anyOf' keyword"),
            "{c}"
        );
        let cut = message.len() - CLIP_HEAD_CHARS - CLIP_TAIL_CHARS;
        assert!(c.contains(&format!("…[{cut} bytes cut]…")), "{c}");
        assert!(c.chars().count() < CLIP_HEAD_CHARS + CLIP_TAIL_CHARS + 40);
        let wide = "é".repeat(1000);
        let c = clipped(&wide);
        assert!(c.starts_with(&"é".repeat(CLIP_HEAD_CHARS)), "{c}");
        assert!(c.ends_with(&"é".repeat(CLIP_TAIL_CHARS)), "{c}");
    }
}
