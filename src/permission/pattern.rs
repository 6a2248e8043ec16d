//! Bash command patterns: exact, `*` anywhere, space-star word boundary, trailing `:*`.

/// One piece of a compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Lit(String),
    /// `*`: any run of characters, spaces included.
    Star,
    /// ` *`: nothing at all, or a space followed by any run (so `ls *` matches `ls` but not `lsof`).
    SpaceStar,
}

/// A compiled Bash specifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BashPattern {
    segs: Vec<Seg>,
}

impl BashPattern {
    /// Compiles a specifier. A trailing `:*` is a trailing ` *`; elsewhere `:` is literal. `\*` is
    /// a literal star.
    pub(crate) fn compile(spec: &str) -> BashPattern {
        let (body, trailing) = match spec.strip_suffix(":*") {
            Some(b) if !b.ends_with('\\') => (b, true),
            _ => (spec, false),
        };
        let mut segs = Vec::new();
        let mut lit = String::new();
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&'*') => {
                    lit.push('*');
                    chars.next();
                }
                ' ' if chars.peek() == Some(&'*') => {
                    chars.next();
                    flush(&mut lit, &mut segs);
                    segs.push(Seg::SpaceStar);
                }
                '*' => {
                    flush(&mut lit, &mut segs);
                    segs.push(Seg::Star);
                }
                c => lit.push(c),
            }
        }
        flush(&mut lit, &mut segs);
        if trailing {
            segs.push(Seg::SpaceStar);
        }
        BashPattern { segs }
    }

    /// Whether the pattern has any wildcard (a "prefix rule" in the spec's terms).
    pub(crate) fn has_wildcard(&self) -> bool {
        self.segs.iter().any(|s| !matches!(s, Seg::Lit(_)))
    }

    /// The program name this pattern can only match, when its first word is literal; used to
    /// index rules by program.
    pub(crate) fn first_word(&self) -> Option<&str> {
        let Some(Seg::Lit(first)) = self.segs.first() else {
            return None;
        };
        match first.split_once(' ') {
            Some((w, _)) => Some(w),
            // `ls *` is indexable by `ls`; `ls*` (a star glued to the word) is not.
            None if matches!(self.segs.get(1), None | Some(Seg::SpaceStar)) => Some(first),
            None => None,
        }
    }

    /// Whether `text` (a subcommand's words joined by single spaces) matches.
    pub(crate) fn matches(&self, text: &str) -> bool {
        match self.segs.as_slice() {
            [Seg::Lit(l)] => text == l,
            [Seg::Lit(l), Seg::SpaceStar] => text
                .strip_prefix(l.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(' ')),
            [Seg::Lit(l), Seg::Star] => text.starts_with(l.as_str()),
            segs => quick_reject(segs, text).is_none() && glob_match(segs, text),
        }
    }
}

/// One token of a text with unknown parts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TextTok {
    Char(char),
    Any,
}

/// One token of a pattern.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PatTok {
    Char(char),
    Star,
    SpaceStar,
}

impl BashPattern {
    /// Whether some value of the unknown parts (`Part::Any`, an expansion) makes `parts` match:
    /// a reading the rule could apply to. Searches the product of the two automata, so it is
    /// linear in text × pattern.
    pub(crate) fn may_match(&self, parts: &[crate::shell::Part]) -> bool {
        use crate::shell::Part;
        let mut text = Vec::new();
        for p in parts {
            match p {
                Part::Lit(s) => text.extend(s.chars().map(TextTok::Char)),
                Part::Any => {
                    if text.last() != Some(&TextTok::Any) {
                        text.push(TextTok::Any);
                    }
                }
            }
        }
        let mut pat = Vec::new();
        for s in &self.segs {
            match s {
                Seg::Lit(l) => pat.extend(l.chars().map(PatTok::Char)),
                Seg::Star => pat.push(PatTok::Star),
                Seg::SpaceStar => pat.push(PatTok::SpaceStar),
            }
        }
        let (n, m) = (text.len(), pat.len());
        // State: (i, j, inside) where inside means a SpaceStar at j has consumed its space.
        let idx = |i: usize, j: usize, inside: bool| (i * (m + 1) + j) * 2 + usize::from(inside);
        let mut seen = vec![false; (n + 1) * (m + 1) * 2];
        let mut stack = vec![(0usize, 0usize, false)];
        while let Some((i, j, inside)) = stack.pop() {
            let k = idx(i, j, inside);
            if seen[k] {
                continue;
            }
            seen[k] = true;
            if i == n && j == m {
                return true;
            }
            let mut push = |s: (usize, usize, bool)| {
                if !seen[idx(s.0, s.1, s.2)] {
                    stack.push(s);
                }
            };
            let pt = pat.get(j).copied();
            let star_like = matches!(pt, Some(PatTok::Star)) || (inside && pt.is_some());
            // Epsilon moves.
            if i < n && text[i] == TextTok::Any {
                push((i + 1, j, inside));
            }
            if star_like || matches!(pt, Some(PatTok::SpaceStar)) {
                push((i, j + 1, false));
            }
            // Moves consuming one character.
            match (text.get(i).copied(), pt) {
                (Some(TextTok::Char(a)), Some(PatTok::Char(b))) if a == b && !inside => {
                    push((i + 1, j + 1, false))
                }
                (Some(TextTok::Char(_)), Some(_)) if star_like => push((i + 1, j, inside)),
                (Some(TextTok::Char(' ')), Some(PatTok::SpaceStar)) => push((i + 1, j, true)),
                (Some(TextTok::Any), Some(PatTok::Char(_))) if !inside => push((i, j + 1, false)),
                (Some(TextTok::Any), Some(PatTok::SpaceStar)) if !inside => push((i, j, true)),
                _ => {}
            }
        }
        false
    }
}

/// Cheap necessary conditions, checked before the general matcher so that a long list of
/// rules sharing a first word costs a few comparisons each: a literal first piece must be a
/// prefix, a literal last piece a suffix, and every literal must occur somewhere.
fn quick_reject(segs: &[Seg], text: &str) -> Option<()> {
    if let Some(Seg::Lit(l)) = segs.first()
        && !text.starts_with(l.as_str())
    {
        return Some(());
    }
    if let Some(Seg::Lit(l)) = segs.last()
        && !text.ends_with(l.as_str())
    {
        return Some(());
    }
    for s in segs {
        if let Seg::Lit(l) = s
            && !text.contains(l.as_str())
        {
            return Some(());
        }
    }
    None
}

fn flush(lit: &mut String, segs: &mut Vec<Seg>) {
    if !lit.is_empty() {
        segs.push(Seg::Lit(std::mem::take(lit)));
    }
}

/// General matcher: dynamic programming over text positions, linear in pattern × text, so no
/// pattern can make it blow up.
fn glob_match(segs: &[Seg], text: &str) -> bool {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let mut cur = vec![false; n + 1];
    cur[0] = true;
    let mut next = vec![false; n + 1];
    for seg in segs {
        next.iter_mut().for_each(|x| *x = false);
        match seg {
            Seg::Lit(l) => {
                for i in 0..=n {
                    if cur[i] && bytes[i..].starts_with(l.as_bytes()) {
                        next[i + l.len()] = true;
                    }
                }
            }
            Seg::Star => {
                let mut any = false;
                for j in 0..=n {
                    any |= cur[j];
                    next[j] = any;
                }
            }
            Seg::SpaceStar => {
                let mut started = false;
                for j in 0..=n {
                    next[j] = cur[j] || started;
                    if j < n && cur[j] && bytes[j] == b' ' {
                        started = true;
                    }
                }
            }
        }
        std::mem::swap(&mut cur, &mut next);
    }
    // Only positions on char boundaries can be reached through literals, so this is sound for
    // UTF-8 text.
    cur[n]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_table() {
        for (pat, text, want) in [
            ("npm run build", "npm run build", true),
            ("npm run build", "npm run build --x", false),
            ("git * main", "git push origin main", true),
            ("git * main", "git main", true),
            ("git * main", "git push origin mainx", false),
            ("ls *", "ls", true),
            ("ls *", "ls -la", true),
            ("ls *", "lsof", false),
            ("ls*", "lsof", true),
            ("npm run test:*", "npm run test", true),
            ("npm run test:*", "npm run test --watch", true),
            ("npm run test:*", "npm run testx", false),
            ("npm run test:*", "npm run test:unit", false),
            ("git:* push", "git:x push", true),
            ("git:* push", "git push", false),
            ("*", "anything at all", true),
            ("* --force", "git push --force", true),
            ("echo \\*", "echo *", true),
            ("echo \\*", "echo x", false),
            ("rm -rf *", "rm -rf /", true),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbY", false),
        ] {
            assert_eq!(
                BashPattern::compile(pat).matches(text),
                want,
                "{pat:?} vs {text:?}"
            );
        }
    }

    #[test]
    fn may_match_table() {
        use crate::shell::Part::{Any, Lit};
        let t = |s: &str| Lit(s.to_string());
        for (pat, parts, want) in [
            ("rm *", vec![Any, t(" x")], true),
            ("git push *", vec![t("git "), Any, t(" origin")], true),
            ("git push *", vec![t("git status "), Any], false),
            ("npm test", vec![t("npm "), Any], true),
            ("npm test", vec![t("npx "), Any], false),
            ("ls *", vec![t("ls"), Any], true),
            ("ls *", vec![t("lsof "), Any], false),
            ("curl * evil.com", vec![t("curl "), Any], true),
            ("a*b", vec![t("a"), Any, t("c")], false),
            ("a*b", vec![t("a"), Any], true),
            ("rm -rf *", vec![t("rm -r"), Any], true),
        ] {
            assert_eq!(
                BashPattern::compile(pat).may_match(&parts),
                want,
                "{pat:?} vs {parts:?}"
            );
        }
        // A literal text may-matches exactly when it matches.
        for (pat, text) in [
            ("ls *", "ls -la"),
            ("ls *", "lsof"),
            ("git * main", "git push origin main"),
        ] {
            let p = BashPattern::compile(pat);
            assert_eq!(p.may_match(&[t(text)]), p.matches(text), "{pat} {text}");
        }
    }

    #[test]
    fn first_word_table() {
        for (pat, want) in [
            ("git log *", Some("git")),
            ("ls *", Some("ls")),
            ("ls", Some("ls")),
            ("npm run test:*", Some("npm")),
            ("ls*", None),
            ("* x", None),
        ] {
            assert_eq!(BashPattern::compile(pat).first_word(), want, "{pat}");
        }
    }
}
