//! Curly quotes in a file against straight ones in Edit's `old_string`, as the reference
//! matches them: a model usually types `'` and `"` where the file has `’` or `“ ”`.

const LEFT_SINGLE: char = '\u{2018}';
const RIGHT_SINGLE: char = '\u{2019}';
const LEFT_DOUBLE: char = '\u{201C}';
const RIGHT_DOUBLE: char = '\u{201D}';

/// Each curly quote as its straight one (one character for one, so positions in characters
/// stay the same).
fn straight(c: char) -> char {
    match c {
        LEFT_SINGLE | RIGHT_SINGLE => '\'',
        LEFT_DOUBLE | RIGHT_DOUBLE => '"',
        c => c,
    }
}

/// The text in `text` that `old` stands for when quotes are compared straight: `None` when
/// `old` is there as written (nothing to translate) or not there either way.
pub(crate) fn actual_text(text: &str, old: &str) -> Option<String> {
    if old.is_empty() || text.contains(old) {
        return None;
    }
    let plain_text: String = text.chars().map(straight).collect();
    let plain_old: String = old.chars().map(straight).collect();
    let at = plain_text.find(&plain_old)?;
    let first = plain_text[..at].chars().count();
    let actual: String = text.chars().skip(first).take(old.chars().count()).collect();
    (actual != old).then_some(actual)
}

/// `new` with its straight quotes made curly as the matched text has them (`old` as typed,
/// `actual` as found): `"` opens after a start, white space or an opening bracket or dash and
/// closes elsewhere; `'` between two letters is an apostrophe (`’`).
pub(crate) fn keep_quote_style(actual: &str, new: &str) -> String {
    let doubles = actual.contains([LEFT_DOUBLE, RIGHT_DOUBLE]);
    let singles = actual.contains([LEFT_SINGLE, RIGHT_SINGLE]);
    let chars: Vec<char> = new.chars().collect();
    let opening = |i: usize| {
        i == 0
            || matches!(
                chars[i - 1],
                ' ' | '\t' | '\n' | '\r' | '(' | '[' | '{' | '\u{2014}' | '\u{2013}'
            )
    };
    let letter = |i: Option<usize>| {
        i.and_then(|i| chars.get(i))
            .is_some_and(|c| c.is_alphabetic())
    };
    (0..chars.len())
        .map(|i| match chars[i] {
            '"' if doubles => {
                if opening(i) {
                    LEFT_DOUBLE
                } else {
                    RIGHT_DOUBLE
                }
            }
            '\'' if singles => {
                if letter(i.checked_sub(1)) && letter(Some(i + 1)) {
                    RIGHT_SINGLE
                } else if opening(i) {
                    LEFT_SINGLE
                } else {
                    RIGHT_SINGLE
                }
            }
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn straight_quotes_find_curly_ones_and_the_new_text_follows_their_style() {
        assert_eq!(actual_text("it’s here", "it's"), Some("it’s".into()));
        assert_eq!(actual_text("say “hi” now", "\"hi\""), Some("“hi”".into()));
        assert_eq!(actual_text("it's here", "it's"), None, "found as written");
        assert_eq!(actual_text("nothing", "it's"), None);
        // Positions are in characters: multi-byte text before the match.
        assert_eq!(actual_text("é “a” b", "\"a\" b"), Some("“a” b".into()));
        assert_eq!(keep_quote_style("it’s", "that's it"), "that’s it");
        assert_eq!(keep_quote_style("“hi”", "say \"bye\""), "say “bye”");
        assert_eq!(keep_quote_style("plain", "it's \"x\""), "it's \"x\"");
        assert_eq!(keep_quote_style("‘a’", "'b' c"), "‘b’ c");
    }
}
