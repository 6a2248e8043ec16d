//! One shell word after quote removal, and what its expansions mean.
//!
//! A word is **exact** when its value is known before the command runs: only literal text
//! (plain, quoted, escaped, `$'…'` decoded) and a leading `~`. Unquoted glob characters leave it
//! exact but flagged ([`Word::glob`]): the shell replaces it with matching paths. Everything else
//! (parameter, command and arithmetic expansion, brace expansion, `~user`) makes it inexact, and
//! some expansions run code toolrt cannot see ([`Word::hidden`]): arithmetic on anything but
//! numbers (`$((x))` evaluates the *value* of `x`, which may hold `a[$(cmd)]`), indirection
//! `${!x}`, prompt expansion `${x@P}`, non-numeric array subscripts and substring offsets.

#[cfg(test)]
mod tests;

use brush_parser::word::{
    Parameter, ParameterExpr, ParameterTransformOp, TildeExpr, WordPiece, WordPieceWithSource,
};

/// A piece of a reading with unknown parts, for "could a rule match it".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// Known text.
    Lit(String),
    /// Any text at all (an expansion).
    Any,
}

/// One word after quote removal.
#[derive(Debug, Clone, Default)]
pub(crate) struct Word {
    /// The value without quotes; expansions appear as written (`$X`, `$(…)`).
    pub(crate) text: String,
    /// The value is known (see the module docs); a glob is still exact text.
    pub(crate) exact: bool,
    /// Unquoted `*`, `?`, `[…]` or an extglob: the shell expands it to file names.
    pub(crate) glob: bool,
    /// Unquoted brace expansion (`{a,b}`, `{1..3}`): one word becomes several.
    pub(crate) brace: bool,
    /// A process substitution (`<(…)`, `>(…)`): the value is a pipe's `/dev/fd` path.
    pub(crate) fd: bool,
    /// Why the value is not exact (the first reason).
    pub(crate) why: Option<String>,
    /// Code toolrt cannot see runs while the word is expanded.
    pub(crate) hidden: Option<String>,
    /// The text as literal parts and unknown parts (only when not exact or glob).
    pub(crate) parts: Vec<Part>,
    /// Per character of `text`: quoted or produced by an expansion (not subject to brace
    /// expansion). Only kept when the word may hold a brace expansion.
    pub(crate) quoted: Vec<bool>,
}

impl Word {
    /// A plain word (the fast path): literal, maybe a glob.
    pub(crate) fn plain(s: &str) -> Word {
        let glob = has_glob(s);
        Word {
            text: s.to_string(),
            exact: true,
            glob,
            parts: if glob { glob_parts(s) } else { Vec::new() },
            ..Word::default()
        }
    }

    /// Known exactly and no glob: the word is its text.
    pub(crate) fn literal(&self) -> bool {
        self.exact && !self.glob && !self.brace && !self.fd
    }

    /// The parts of this word for open matching (`Lit(text)` for a literal).
    pub(crate) fn open_parts(&self) -> Vec<Part> {
        if self.literal() || self.parts.is_empty() {
            vec![Part::Lit(self.text.clone())]
        } else {
            self.parts.clone()
        }
    }

    fn inexact(&mut self, why: &str) {
        self.exact = false;
        if self.why.is_none() {
            self.why = Some(why.to_string());
        }
    }

    fn hide(&mut self, why: &str) {
        self.inexact(why);
        if self.hidden.is_none() {
            self.hidden = Some(why.to_string());
        }
    }

    fn push_lit(&mut self, s: &str, quoted: bool) {
        self.text.push_str(s);
        for _ in s.chars() {
            self.quoted.push(quoted);
        }
        push_part(&mut self.parts, Part::Lit(s.to_string()));
    }

    fn push_any(&mut self, source: &str) {
        self.text.push_str(source);
        for _ in source.chars() {
            self.quoted.push(true);
        }
        push_part(&mut self.parts, Part::Any);
    }
}

fn push_part(parts: &mut Vec<Part>, p: Part) {
    match (parts.last_mut(), p) {
        (Some(Part::Lit(a)), Part::Lit(b)) => a.push_str(&b),
        (Some(Part::Any), Part::Any) => {}
        (_, p) => parts.push(p),
    }
}

/// Unquoted glob characters: `*`, `?`, or `[` with a later `]`.
pub(crate) fn has_glob(s: &str) -> bool {
    s.contains(['*', '?']) || s.find('[').is_some_and(|i| s[i + 1..].contains(']'))
}

fn glob_parts(s: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']') {
            push_part(&mut parts, Part::Any);
        } else {
            push_part(&mut parts, Part::Lit(c.to_string()));
        }
    }
    parts
}

/// What a word's analysis hands back to the walker: scripts to analyse (command substitutions)
/// and variables assigned while expanding (`${X:=v}`).
pub(crate) trait Nested {
    /// Analyse `script` as commands of their own (a command substitution, in a subshell).
    fn substitution(&mut self, script: &str);
    /// `${NAME:=value}` assigns `NAME`.
    fn assigns(&mut self, name: &str);
}

/// Quote removal and expansion analysis of one word as brush-parser tokenised it.
pub(crate) fn analyse(raw: &str, nested: &mut dyn Nested) -> Word {
    let opts = brush_parser::ParserOptions::default();
    let pieces = match std::panic::catch_unwind(|| brush_parser::word::parse(raw, &opts)) {
        Ok(Ok(p)) => p,
        _ => {
            let mut w = Word {
                text: raw.to_string(),
                parts: vec![Part::Any],
                ..Word::default()
            };
            w.hide("a word cannot be parsed");
            return w;
        }
    };
    let mut w = Word {
        exact: true,
        ..Word::default()
    };
    pieces_into(&pieces, raw, false, nested, &mut w);
    finish(&mut w);
    w
}

/// The value of a here-document body that undergoes expansion (or a here-string).
pub(crate) fn heredoc(body: &str, nested: &mut dyn Nested) -> Word {
    let opts = brush_parser::ParserOptions::default();
    match std::panic::catch_unwind(|| brush_parser::word::parse_heredoc(body, &opts)) {
        Ok(Ok(pieces)) => {
            let mut w = Word {
                exact: true,
                ..Word::default()
            };
            pieces_into(&pieces, body, true, nested, &mut w);
            w
        }
        _ => {
            let mut w = Word {
                text: body.to_string(),
                ..Word::default()
            };
            w.hide("a here-document cannot be parsed");
            w
        }
    }
}

fn finish(w: &mut Word) {
    if brace_in(&w.text, &w.quoted) {
        w.brace = true;
        w.inexact("brace expansion turns it into several words");
    }
    if !w.brace {
        w.quoted.clear();
    }
    if w.literal() {
        w.parts.clear();
    }
}

fn pieces_into(
    pieces: &[WordPieceWithSource],
    raw: &str,
    in_quotes: bool,
    nested: &mut dyn Nested,
    w: &mut Word,
) {
    let source = |p: &WordPieceWithSource| raw.get(p.start_index..p.end_index).unwrap_or("$…");
    for p in pieces {
        match &p.piece {
            WordPiece::Text(s) => {
                if in_quotes {
                    w.push_lit(s, true);
                } else {
                    text_unquoted(s, w);
                }
            }
            WordPiece::SingleQuotedText(s) => w.push_lit(s, true),
            WordPiece::AnsiCQuotedText(s) => match decode_ansi_c(s) {
                Some(d) => w.push_lit(&d, true),
                None => {
                    w.push_lit(s, true);
                    w.inexact("a $'…' string holds a NUL byte");
                }
            },
            WordPiece::DoubleQuotedSequence(inner) => {
                if let Some(v) = quoted_heredoc_cat(inner, nested) {
                    w.push_lit(&v, true);
                } else {
                    pieces_into(inner, raw, true, nested, w);
                }
            }
            WordPiece::GettextDoubleQuotedSequence(inner) => {
                pieces_into(inner, raw, true, nested, w);
                w.inexact("a $\"…\" string may be translated");
            }
            WordPiece::EscapeSequence(s) => {
                let rest = s.strip_prefix('\\').unwrap_or(s);
                if rest != "\n" {
                    w.push_lit(rest, true);
                }
            }
            WordPiece::TildeExpansion(t) => match t {
                TildeExpr::Home => w.push_lit("~", true),
                _ => {
                    w.push_any(source(p));
                    w.inexact("a ~ expansion other than the home directory");
                }
            },
            WordPiece::ParameterExpansion(pe) => {
                parameter(pe, nested, w);
                w.push_any(source(p));
                w.inexact("it holds a parameter expansion");
            }
            WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
                nested.substitution(s);
                w.push_any(source(p));
                w.inexact("it holds a command substitution");
            }
            WordPiece::ArithmeticExpression(e) => {
                if !arithmetic_is_literal(&e.value) {
                    w.hide("arithmetic evaluates variables, whose values may hold commands");
                }
                w.push_any(source(p));
                w.inexact("it holds an arithmetic expansion");
            }
        }
    }
}

fn text_unquoted(s: &str, w: &mut Word) {
    if has_glob(s) || extglob(s) {
        w.glob = true;
        for c in s.chars() {
            let mut b = [0u8; 4];
            if matches!(c, '*' | '?' | '[' | ']') {
                w.text.push(c);
                w.quoted.push(false);
                push_part(&mut w.parts, Part::Any);
            } else {
                w.push_lit(c.encode_utf8(&mut b), false);
            }
        }
    } else {
        w.push_lit(s, false);
    }
}

fn extglob(s: &str) -> bool {
    let b = s.as_bytes();
    b.windows(2)
        .any(|p| p[1] == b'(' && matches!(p[0], b'?' | b'*' | b'+' | b'@' | b'!'))
}

/// `"$(cat <<'EOF' … EOF)"`: the output of `cat` with a literal here-document is that text,
/// without its trailing newlines. The common way to pass a multi-line message stays exact.
fn quoted_heredoc_cat(inner: &[WordPieceWithSource], nested: &mut dyn Nested) -> Option<String> {
    let [only] = inner else { return None };
    let WordPiece::CommandSubstitution(script) = &only.piece else {
        return None;
    };
    let value = heredoc_cat_value(script)?;
    // It still runs: analyse it like any substitution (a read-only `cat`).
    nested.substitution(script);
    Some(value)
}

fn heredoc_cat_value(script: &str) -> Option<String> {
    use brush_parser::ast;
    let trimmed = script.trim_start();
    if !trimmed.starts_with("cat") || super::parse::too_deep(script) {
        return None;
    }
    let opts = brush_parser::ParserOptions::default();
    let program = std::panic::catch_unwind(|| {
        brush_parser::Parser::new(std::io::BufReader::new(script.as_bytes()), &opts).parse_program()
    })
    .ok()?
    .ok()?;
    let [list] = program.complete_commands.as_slice() else {
        return None;
    };
    let [item] = list.0.as_slice() else {
        return None;
    };
    if !item.0.additional.is_empty() || item.0.first.seq.len() != 1 || item.0.first.bang {
        return None;
    }
    let ast::Command::Simple(sc) = &item.0.first.seq[0] else {
        return None;
    };
    if sc.prefix.is_some() || sc.word_or_name.as_ref()?.value != "cat" {
        return None;
    }
    let suffix = sc.suffix.as_ref()?;
    let [ast::CommandPrefixOrSuffixItem::IoRedirect(ast::IoRedirect::HereDocument(None, doc))] =
        suffix.0.as_slice()
    else {
        return None;
    };
    let body = &doc.doc.value;
    if doc.requires_expansion && body.contains(['$', '`', '\\']) {
        return None;
    }
    Some(body.trim_end_matches('\n').to_string())
}

/// Checks a parameter expansion for code it runs, and analyses the words inside it.
fn parameter(pe: &ParameterExpr, nested: &mut dyn Nested, w: &mut Word) {
    let mut sub_word = |s: &Option<String>, w: &mut Word| {
        if let Some(s) = s {
            let inner = analyse(s, nested);
            if let Some(h) = inner.hidden {
                w.hide(&h);
            }
        }
    };
    let (param, indirect) = match pe {
        ParameterExpr::Parameter {
            parameter,
            indirect,
        }
        | ParameterExpr::ParameterLength {
            parameter,
            indirect,
        } => (Some(parameter), *indirect),
        ParameterExpr::UseDefaultValues {
            parameter,
            indirect,
            default_value: v,
            ..
        }
        | ParameterExpr::IndicateErrorIfNullOrUnset {
            parameter,
            indirect,
            error_message: v,
            ..
        }
        | ParameterExpr::UseAlternativeValue {
            parameter,
            indirect,
            alternative_value: v,
            ..
        } => {
            sub_word(v, w);
            (Some(parameter), *indirect)
        }
        ParameterExpr::AssignDefaultValues {
            parameter,
            indirect,
            default_value,
            ..
        } => {
            sub_word(default_value, w);
            if let Parameter::Named(n) = parameter {
                nested.assigns(n);
            } else {
                w.hide("${…:=…} assigns an array element");
            }
            (Some(parameter), *indirect)
        }
        ParameterExpr::RemoveSmallestSuffixPattern { .. }
        | ParameterExpr::RemoveLargestSuffixPattern { .. }
        | ParameterExpr::RemoveSmallestPrefixPattern { .. }
        | ParameterExpr::RemoveLargestPrefixPattern { .. }
        | ParameterExpr::UppercaseFirstChar { .. }
        | ParameterExpr::UppercasePattern { .. }
        | ParameterExpr::LowercaseFirstChar { .. }
        | ParameterExpr::LowercasePattern { .. } => {
            let (parameter, indirect, pattern) = pattern_operand(pe);
            sub_word(pattern, w);
            (parameter, indirect)
        }
        ParameterExpr::Substring {
            parameter,
            indirect,
            offset,
            length,
        } => {
            let lit = arithmetic_is_literal(&offset.value)
                && length
                    .as_ref()
                    .is_none_or(|l| arithmetic_is_literal(&l.value));
            if !lit {
                w.hide("a substring offset is arithmetic, which evaluates variables");
            }
            (Some(parameter), *indirect)
        }
        ParameterExpr::Transform {
            parameter,
            indirect,
            op,
        } => {
            if matches!(op, ParameterTransformOp::PromptExpand) {
                w.hide("${…@P} expands the value as a prompt, which runs the commands in it");
            }
            (Some(parameter), *indirect)
        }
        ParameterExpr::ReplaceSubstring {
            parameter,
            indirect,
            pattern,
            replacement,
            ..
        } => {
            sub_word(&Some(pattern.clone()), w);
            sub_word(replacement, w);
            (Some(parameter), *indirect)
        }
        ParameterExpr::VariableNames { .. } | ParameterExpr::MemberKeys { .. } => (None, false),
    };
    if indirect {
        w.hide("${!…} looks up a variable named by a value, which may evaluate a subscript");
    }
    if let Some(Parameter::NamedWithIndex { index, .. }) = param
        && !index.chars().all(|c| c.is_ascii_digit())
    {
        w.hide("an array subscript is arithmetic, which evaluates variables");
    }
}

/// The parameter and pattern of `${x%p}`, `${x#p}`, `${x^p}`, `${x,p}` and their doubles.
fn pattern_operand(pe: &ParameterExpr) -> (Option<&Parameter>, bool, &Option<String>) {
    match pe {
        ParameterExpr::RemoveSmallestSuffixPattern {
            parameter,
            indirect,
            pattern,
        }
        | ParameterExpr::RemoveLargestSuffixPattern {
            parameter,
            indirect,
            pattern,
        }
        | ParameterExpr::RemoveSmallestPrefixPattern {
            parameter,
            indirect,
            pattern,
        }
        | ParameterExpr::RemoveLargestPrefixPattern {
            parameter,
            indirect,
            pattern,
        }
        | ParameterExpr::UppercaseFirstChar {
            parameter,
            indirect,
            pattern,
        }
        | ParameterExpr::UppercasePattern {
            parameter,
            indirect,
            pattern,
        }
        | ParameterExpr::LowercaseFirstChar {
            parameter,
            indirect,
            pattern,
        }
        | ParameterExpr::LowercasePattern {
            parameter,
            indirect,
            pattern,
        } => (Some(parameter), *indirect, pattern),
        _ => (None, false, &None),
    }
}

/// Arithmetic made only of numbers and operators: evaluating it runs nothing.
pub(crate) fn arithmetic_is_literal(expr: &str) -> bool {
    expr.chars()
        .all(|c| c.is_ascii_digit() || c.is_ascii_whitespace() || "+-*/%()<>=!&|^~?:,".contains(c))
}

/// Decodes the inside of `$'…'` as bash does; `None` if it produces a NUL byte (bash cuts the
/// string there).
pub(crate) fn decode_ansi_c(s: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let num = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
                   radix: u32,
                   max: usize,
                   first: Option<char>| {
            let mut v: u32 = 0;
            let mut n = 0;
            if let Some(f) = first {
                v = f.to_digit(radix).unwrap_or(0);
                n = 1;
            }
            while n < max {
                match chars.peek().and_then(|c| c.to_digit(radix)) {
                    Some(d) => {
                        v = v.wrapping_mul(radix).wrapping_add(d);
                        chars.next();
                        n += 1;
                    }
                    None => break,
                }
            }
            (v, n)
        };
        let code: Option<u32> = match e {
            'a' => Some(7),
            'b' => Some(8),
            'e' | 'E' => Some(27),
            'f' => Some(12),
            'n' => Some(10),
            'r' => Some(13),
            't' => Some(9),
            'v' => Some(11),
            '\\' | '\'' | '"' | '?' => Some(e as u32),
            '0'..='7' => Some(num(&mut chars, 8, 3, Some(e)).0 & 0xff),
            'x' => {
                let (v, n) = num(&mut chars, 16, 2, None);
                if n == 0 {
                    out.push_str("\\x");
                    None
                } else {
                    Some(v)
                }
            }
            'u' | 'U' => {
                let (v, n) = num(&mut chars, 16, if e == 'u' { 4 } else { 8 }, None);
                if n == 0 {
                    out.push('\\');
                    out.push(e);
                    None
                } else {
                    Some(v)
                }
            }
            'c' => match chars.next() {
                Some(x) => Some((x as u32) & 0x1f),
                None => {
                    out.push_str("\\c");
                    None
                }
            },
            other => {
                out.push('\\');
                out.push(other);
                None
            }
        };
        if let Some(code) = code {
            if code == 0 {
                return None;
            }
            // Bytes above 0x7f from \x and octal escapes are raw bytes; a char of that value
            // stands in for them (the word is still exact for matching purposes).
            out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
        }
    }
    Some(out)
}

/// Whether the unquoted characters hold a brace expansion: `{` … `}` with a top-level `,`, or a
/// sequence `{a..b}`.
fn brace_in(text: &str, quoted: &[bool]) -> bool {
    if !text.contains('{') {
        return false;
    }
    !expand_braces(text, quoted, 2).is_empty_or_same(text)
}

trait SameCheck {
    fn is_empty_or_same(&self, text: &str) -> bool;
}

impl SameCheck for Vec<String> {
    fn is_empty_or_same(&self, text: &str) -> bool {
        self.is_empty() || (self.len() == 1 && self[0] == text)
    }
}

/// Brace expansion of one word (quoted characters are not special), at most `limit` results.
pub(crate) fn expand_braces(text: &str, quoted: &[bool], limit: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let q = |i: usize| quoted.get(i).copied().unwrap_or(false);
    let mut out = Vec::new();
    expand_from(&chars, &q, limit, &mut out, 0);
    out
}

fn expand_from(
    chars: &[char],
    q: &dyn Fn(usize) -> bool,
    limit: usize,
    out: &mut Vec<String>,
    depth: usize,
) {
    if out.len() >= limit {
        return;
    }
    if depth > 8 {
        out.push(chars.iter().collect());
        return;
    }
    // Find the first brace group that expands.
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '{'
            && !q(i)
            && let Some((close, alts)) = group(chars, q, i)
        {
            let prefix: String = chars[..i].iter().collect();
            let suffix = &chars[close + 1..];
            for alt in alts {
                let mut next: Vec<char> = prefix.chars().collect();
                next.extend(alt.chars());
                let mut qs: Vec<bool> = (0..i).map(q).collect();
                qs.extend(alt.chars().map(|_| false));
                let base = next.len();
                next.extend_from_slice(suffix);
                qs.extend((close + 1..chars.len()).map(q));
                let _ = base;
                let qf = |k: usize| qs.get(k).copied().unwrap_or(false);
                expand_from(&next, &qf, limit, out, depth + 1);
                if out.len() >= limit {
                    return;
                }
            }
            return;
        }
        i += 1;
    }
    out.push(chars.iter().collect());
}

/// The alternatives of the brace group opening at `open`, with the index of its `}`.
fn group(chars: &[char], q: &dyn Fn(usize) -> bool, open: usize) -> Option<(usize, Vec<String>)> {
    let mut depth = 0;
    let mut commas = Vec::new();
    let mut close = None;
    for (k, &c) in chars.iter().enumerate().skip(open) {
        if q(k) {
            continue;
        }
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(k);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(k),
            _ => {}
        }
    }
    let close = close?;
    if !commas.is_empty() {
        let mut alts = Vec::new();
        let mut start = open + 1;
        for &c in commas.iter().chain(std::iter::once(&close)) {
            alts.push(chars[start..c].iter().collect());
            start = c + 1;
        }
        return Some((close, alts));
    }
    // A sequence: {a..z} or {1..10[..step]}.
    let inner: String = chars[open + 1..close].iter().collect();
    let parts: Vec<&str> = inner.split("..").collect();
    if parts.len() < 2 || parts.len() > 3 {
        return None;
    }
    if let (Ok(a), Ok(b)) = (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
        let step = parts
            .get(2)
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(1)
            .unsigned_abs()
            .max(1) as usize;
        let (lo, hi) = (a.min(b), a.max(b));
        let mut alts: Vec<String> = (lo..=hi)
            .step_by(step)
            .take(64)
            .map(|n| n.to_string())
            .collect();
        if a > b {
            alts.reverse();
        }
        return Some((close, alts));
    }
    let (ca, cb) = (
        parts[0].chars().collect::<Vec<_>>(),
        parts[1].chars().collect::<Vec<_>>(),
    );
    if let ([a], [b]) = (ca.as_slice(), cb.as_slice())
        && a.is_ascii_alphabetic()
        && b.is_ascii_alphabetic()
    {
        let (lo, hi) = ((*a).min(*b), (*a).max(*b));
        let mut alts: Vec<String> = (lo..=hi).map(|c| c.to_string()).collect();
        if a > b {
            alts.reverse();
        }
        return Some((close, alts));
    }
    None
}
