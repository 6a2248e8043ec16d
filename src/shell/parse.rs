//! The walk from command text to [`Command`]s: brush-parser (or the fast path for plain
//! words), then every simple command with its words, redirects, assignments, wrappers and the
//! scripts it runs (`sh -c`, `eval`, substitutions, `trap`, `find -exec`, `xargs`, …), keeping
//! track of the working directory (`cd`) and of changes that alter later commands (variables,
//! `source`, `shopt`).

use brush_parser::ast;

use super::programs::{self, target};
use super::word::{self, Nested, Part, Word};
use super::wrappers::{self, Inner};
use super::{Analysis, Command, Cwd, Effects, Endpoint, Kind, Origin, Target};

/// Deepest nesting of scripts inside scripts (`sh -c`, `$( )`, `eval`) analysed.
const MAX_DEPTH: usize = 12;

/// Deepest bracket nesting (`(`, `{`, `[`, quotes ignored) handed to brush-parser, whose PEG
/// parser recurses per level.
const MAX_NESTING: usize = 40;

/// Commands toolrt walks at most per command string (a loop of `sh -c` could multiply them).
const MAX_COMMANDS: usize = 2_000;

pub(crate) fn analyse(src: &str) -> Analysis {
    let mut w = Walker::default();
    w.script(src, 0);
    w.finish()
}

/// A script to analyse once the command that runs it is recorded.
struct Pending {
    text: String,
    /// It runs in a child process: its `cd` does not change ours.
    child: bool,
    /// It runs at an unknown later time (`trap`).
    later: bool,
    origin: Origin,
    cwd: Cwd,
}

/// What a command's stdin is, for shells that read their script from it.
#[derive(Clone)]
enum Stdin {
    Inherited,
    Literal(String),
    Dynamic,
}

#[derive(Clone)]
struct Ctx {
    cwd: Cwd,
    /// Still on the path allow rules see (past strippable wrappers only).
    on_chain: bool,
    stdin: Stdin,
    /// Arguments from stdin (`xargs`), with the replacement string of `-I`.
    stdin_args: Option<Option<String>>,
    level: usize,
}

#[derive(Default)]
struct Walker {
    commands: Vec<Command>,
    parse_error: Option<String>,
    cwd: Cwd,
    /// Later commands are not understood: an earlier part changed their environment.
    altered: Option<String>,
    /// Later commands may run code toolrt cannot see (aliases, `shopt`).
    poisoned: Option<String>,
    depth: usize,
    origin: Origin,
    /// Commands that run at an unknown time (function bodies, traps).
    later: Vec<(usize, usize)>,
    cd_seen: bool,
    pending: Vec<Pending>,
    /// Hidden-code reasons found while expanding words of the current command.
    word_hidden: Vec<String>,
    /// Variables assigned while expanding words (`${X:=v}`).
    word_assigns: Vec<String>,
    /// Where the last command, a `cd`, went if it succeeded: what a `&&` after it runs in.
    cd_succeeded: Option<Cwd>,
}

impl Nested for Walker {
    fn substitution(&mut self, script: &str) {
        let saved = self.cwd.clone();
        self.script(script, self.depth + 1);
        self.cwd = saved;
        self.cd_succeeded = None;
    }

    fn assigns(&mut self, name: &str) {
        self.word_assigns.push(name.to_string());
    }
}

/// Variables known not to change what a command does; allow rules match past them.
pub(crate) fn safe_assignment(name: &str) -> bool {
    matches!(
        name,
        "NODE_ENV"
            | "RUST_LOG"
            | "RUST_BACKTRACE"
            | "LANG"
            | "LANGUAGE"
            | "TZ"
            | "NO_COLOR"
            | "FORCE_COLOR"
            | "TERM"
            | "COLUMNS"
            | "CI"
            | "PYTHONUNBUFFERED"
            | "PYTHONDONTWRITEBYTECODE"
    ) || name.starts_with("LC_")
}

/// A variable a later command cannot notice: a lower-case shell variable that is not
/// exported (bash's own variables and the ones programs read are upper-case).
fn inert(name: &str) -> bool {
    safe_assignment(name)
        || (name.chars().any(|c| c.is_ascii_lowercase())
            && !name.chars().any(|c| c.is_ascii_uppercase())
            && !matches!(
                name,
                "http_proxy" | "https_proxy" | "ftp_proxy" | "all_proxy" | "no_proxy"
            ))
}

fn join(words: &[Word]) -> String {
    let mut s = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&w.text);
    }
    s
}

pub(crate) fn basename(p: &str) -> &str {
    match p.rsplit_once('/') {
        Some((_, b)) if !b.is_empty() => b,
        _ => p,
    }
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => wrappers::is_name(name),
        None => false,
    }
}

const RESERVED: [&str; 22] = [
    "if", "then", "else", "elif", "fi", "for", "in", "do", "done", "while", "until", "case",
    "esac", "function", "select", "time", "coproc", "[[", "]]", "!", "{", "}",
];

/// Whether brush-parser should not be handed `src` (too deep for its recursion, or huge).
pub(crate) fn too_deep(src: &str) -> bool {
    let mut depth = 0usize;
    let mut max = 0usize;
    let mut ticks = 0usize;
    for b in src.bytes() {
        match b {
            b'(' | b'{' | b'[' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            b'`' => ticks += 1,
            _ => {}
        }
    }
    if max > MAX_NESTING || ticks > 2 * MAX_NESTING || src.len() > 1 << 20 {
        return true;
    }
    // Compound commands nest without brackets (`if … then if … then …`): bound their keywords.
    let keywords = src
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')'))
        .filter(|w| {
            matches!(
                *w,
                "if" | "then"
                    | "do"
                    | "case"
                    | "while"
                    | "until"
                    | "for"
                    | "select"
                    | "function"
                    | "coproc"
                    | "elif"
                    | "else"
            )
        })
        .count();
    keywords > 2 * MAX_NESTING
}

/// The common case without the full parser: simple commands of plain words (letters, digits
/// and `-_./=:,@+%^*?[]`) joined by `&&`, `||`, `|`, `|&`, `;` or `&`, with no quotes,
/// expansions, redirects, newlines or reserved words. In that subset the shell grammar is just
/// "words between operators"; anything else goes to the real parser.
/// One command of the fast path: its words, whether it runs in a subshell (a pipeline part or
/// a background job), and the operator before it.
type FastCommand<'a> = (Vec<Word>, bool, Option<&'a str>);

fn fast_script(src: &str) -> Option<Vec<FastCommand<'_>>> {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"-_./=:,@+%^*?".contains(&b);
    let bytes = src.as_bytes();
    let mut commands: Vec<Vec<Word>> = Vec::new();
    let mut ops: Vec<&str> = Vec::new();
    let mut current: Vec<Word> = Vec::new();
    let mut i = 0;
    let mut trailing_op = None;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b' ' {
            i += 1;
        } else if plain(b) {
            let start = i;
            while i < bytes.len() && plain(bytes[i]) {
                i += 1;
            }
            current.push(Word::plain(&src[start..i]));
            trailing_op = None;
        } else if b"&|;".contains(&b) {
            let start = i;
            while i < bytes.len() && b"&|;".contains(&bytes[i]) {
                i += 1;
            }
            let op = &src[start..i];
            if !matches!(op, "&&" | "||" | "|" | "|&" | ";" | "&") || current.is_empty() {
                return None;
            }
            if RESERVED.contains(&current[0].text.as_str()) {
                return None;
            }
            commands.push(std::mem::take(&mut current));
            ops.push(op);
            trailing_op = Some(op);
        } else {
            return None;
        }
    }
    match (current.is_empty(), trailing_op) {
        (false, _) => {
            if RESERVED.contains(&current[0].text.as_str()) {
                return None;
            }
            commands.push(current);
        }
        (true, Some(";" | "&")) => {}
        (true, _) => return None,
    }
    // Parts of a pipeline, and background jobs, run in subshells: their `cd` does not stay.
    let piped = |op: Option<&&str>| matches!(op.copied(), Some("|" | "|&"));
    Some(
        commands
            .into_iter()
            .enumerate()
            .map(|(i, words)| {
                let after = ops.get(i);
                let before = i.checked_sub(1).and_then(|k| ops.get(k));
                let sub = piped(after) || piped(before) || after.copied() == Some("&");
                (words, sub, before.copied())
            })
            .collect(),
    )
}

/// An `&&`/`||` list being walked.
#[derive(Default)]
struct Chain {
    /// The directories before `&&` narrowed them, restored at `||` and at the end.
    wider: Option<Cwd>,
}

struct Assign {
    name: String,
    value: Word,
    display: String,
}

impl Walker {
    fn finish(mut self) -> Analysis {
        if self.cd_seen {
            let n = self.commands.len();
            for &(a, b) in &self.later {
                for c in &mut self.commands[a.min(n)..b.min(n)] {
                    unknown_cwd(c);
                }
            }
        }
        for c in &mut self.commands {
            if !c.understood() {
                c.allow_view = None;
            }
        }
        Analysis {
            commands: self.commands,
            parse_error: self.parse_error,
        }
    }

    fn opaque(&mut self, display: &str, why: &str) {
        let mut c = Command {
            display: display.to_string(),
            origin: self.origin,
            ..Command::default()
        };
        c.hide(why);
        self.commands.push(c);
    }

    fn script(&mut self, src: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.opaque("(nested too deeply)", "scripts nest too deeply to analyse");
            return;
        }
        if self.commands.len() > MAX_COMMANDS {
            self.opaque("(too many commands)", "the command is too large to analyse");
            return;
        }
        let saved_depth = std::mem::replace(&mut self.depth, depth);
        if let Some(commands) = fast_script(src) {
            let mut chain = Chain::default();
            for (words, subshell, before) in commands {
                match before {
                    Some("&&") => self.connect(&mut chain, true),
                    Some("||") => self.connect(&mut chain, false),
                    _ => self.end_chain(&mut chain),
                }
                let saved = subshell.then(|| self.cwd.clone());
                self.simple(Vec::new(), words, Vec::new());
                if let Some(s) = saved {
                    self.cwd = s;
                    self.cd_succeeded = None;
                }
            }
            self.end_chain(&mut chain);
        } else if too_deep(src) {
            self.fail("it nests too deeply to parse safely");
        } else {
            let parsed = std::panic::catch_unwind(|| {
                let opts = brush_parser::ParserOptions::default();
                brush_parser::Parser::new(std::io::BufReader::new(src.as_bytes()), &opts)
                    .parse_program()
            });
            match parsed {
                Ok(Ok(program)) => {
                    for list in &program.complete_commands {
                        self.compound_list(list);
                    }
                }
                Ok(Err(e)) => self.fail(&format!("it does not parse ({e})")),
                Err(_) => self.fail("it does not parse"),
            }
        }
        self.depth = saved_depth;
    }

    fn fail(&mut self, why: &str) {
        // A value that might be run as a command but does not parse cannot be run either.
        if self.origin == Origin::Reading {
            return;
        }
        if self.parse_error.is_none() {
            self.parse_error = Some(why.to_string());
        }
    }

    fn compound_list(&mut self, list: &ast::CompoundList) {
        for item in &list.0 {
            let background = matches!(item.1, ast::SeparatorOperator::Async);
            let saved = background.then(|| self.cwd.clone());
            self.and_or(&item.0);
            if let Some(s) = saved {
                self.cwd = s;
                self.cd_succeeded = None;
            }
        }
    }

    fn and_or(&mut self, list: &ast::AndOrList) {
        let mut chain = Chain::default();
        self.pipeline(&list.first);
        for next in &list.additional {
            let (p, and) = match next {
                ast::AndOr::And(p) => (p, true),
                ast::AndOr::Or(p) => (p, false),
            };
            self.connect(&mut chain, and);
            self.pipeline(p);
        }
        self.end_chain(&mut chain);
    }

    /// Before the next part of an `&&`/`||` list: after `cd dir &&` the next part runs in
    /// `dir` (it runs only if the cd succeeded); after `||` in either.
    fn connect(&mut self, chain: &mut Chain, and: bool) {
        let succeeded = self.cd_succeeded.take();
        if and {
            if let Some(exact) = succeeded {
                chain.wider = Some(match chain.wider.take() {
                    Some(w) => w.union(&self.cwd),
                    None => self.cwd.clone(),
                });
                self.cwd = exact;
            }
        } else if let Some(w) = chain.wider.take() {
            self.cwd = self.cwd.union(&w);
        }
    }

    fn end_chain(&mut self, chain: &mut Chain) {
        self.cd_succeeded = None;
        if let Some(w) = chain.wider.take() {
            self.cwd = self.cwd.union(&w);
        }
    }

    fn pipeline(&mut self, p: &ast::Pipeline) {
        let subshells = p.seq.len() > 1;
        for cmd in &p.seq {
            let saved = subshells.then(|| self.cwd.clone());
            self.command(cmd);
            if let Some(s) = saved {
                self.cwd = s;
                self.cd_succeeded = None;
            }
        }
    }

    fn command(&mut self, cmd: &ast::Command) {
        match cmd {
            ast::Command::Simple(sc) => self.simple_command(sc),
            ast::Command::Compound(c, redirects) => {
                self.compound(c);
                self.redirect_only(redirects.as_ref());
            }
            ast::Command::Function(f) => {
                let start = self.commands.len();
                let saved = self.cwd.clone();
                self.compound(&f.body.0);
                self.redirect_only(f.body.1.as_ref());
                self.later.push((start, self.commands.len()));
                // Called any number of times from now on: a cd inside makes cwd unknown.
                self.cwd = if self.cwd == saved {
                    saved
                } else {
                    Cwd::Unknown
                };
            }
            ast::Command::ExtendedTest(t, redirects) => {
                self.extended_test(&t.expr);
                self.redirect_only(redirects.as_ref());
            }
        }
    }

    /// Redirects on a compound command: a command with no program of its own.
    fn redirect_only(&mut self, redirects: Option<&ast::RedirectList>) {
        if let Some(list) = redirects {
            let items: Vec<&ast::IoRedirect> = list.0.iter().collect();
            self.simple(Vec::new(), Vec::new(), items);
        }
    }

    fn loop_body(&mut self, lists: &[&ast::CompoundList]) {
        let start = self.commands.len();
        let saved = self.cwd.clone();
        for l in lists {
            self.compound_list(l);
        }
        if self.cwd != saved {
            // The next round starts where this one ended: unknown after a cd in a loop.
            for c in &mut self.commands[start..] {
                unknown_cwd(c);
            }
            self.cwd = Cwd::Unknown;
        }
    }

    fn pseudo(&mut self, display: String, words: &[Word], patterns: &[Word]) -> Command {
        let mut c = Command {
            display,
            kind: Kind::ReadOnly,
            origin: self.origin,
            ..Command::default()
        };
        self.apply_state(&mut c);
        for w in words.iter().chain(patterns) {
            if let Some(h) = &w.hidden {
                c.hide(h.clone());
            }
        }
        for w in words {
            if !w.literal() {
                c.not_understood(format!(
                    "`{}` is only known when the command runs ({})",
                    w.text,
                    w.why.as_deref().unwrap_or("it expands to file names")
                ));
            }
        }
        for w in patterns {
            if !w.exact || w.brace {
                c.not_understood(format!(
                    "the pattern `{}` is only known when it runs",
                    w.text
                ));
            }
        }
        c
    }

    fn compound(&mut self, c: &ast::CompoundCommand) {
        match c {
            ast::CompoundCommand::BraceGroup(g) => self.compound_list(&g.list),
            ast::CompoundCommand::Subshell(s) => {
                let saved = self.cwd.clone();
                self.compound_list(&s.list);
                self.cwd = saved;
                self.cd_succeeded = None;
            }
            ast::CompoundCommand::ForClause(f) => {
                let values: Vec<Word> = f
                    .values
                    .iter()
                    .flatten()
                    .map(|w| self.word(&w.value))
                    .collect();
                let mut c = self.pseudo(
                    format!("for {} in {}", f.variable_name, join(&values)),
                    &values,
                    &[],
                );
                self.take_word_state(&mut c);
                if !inert(&f.variable_name) {
                    c.not_understood(format!(
                        "the loop sets {}, which can change what commands do",
                        f.variable_name
                    ));
                    self.altered = Some(format!(
                        "an earlier loop sets {}, which can change what later commands do",
                        f.variable_name
                    ));
                }
                self.commands.push(c);
                self.loop_body(&[&f.body.list]);
            }
            ast::CompoundCommand::CaseClause(cc) => {
                let value = self.word(&cc.value.value);
                let patterns: Vec<Word> = cc
                    .cases
                    .iter()
                    .flat_map(|i| i.patterns.iter())
                    .map(|p| self.word(&p.value))
                    .collect();
                let mut c = self.pseudo(
                    format!("case {} in …", value.text),
                    std::slice::from_ref(&value),
                    &patterns,
                );
                self.take_word_state(&mut c);
                self.commands.push(c);
                let saved = self.cwd.clone();
                let mut after = saved.clone();
                for item in &cc.cases {
                    if let Some(list) = &item.cmd {
                        self.cwd = saved.clone();
                        self.compound_list(list);
                        after = after.union(&self.cwd);
                    }
                }
                self.cwd = after;
            }
            ast::CompoundCommand::IfClause(i) => {
                self.compound_list(&i.condition);
                let saved = self.cwd.clone();
                self.compound_list(&i.then);
                let mut after = self.cwd.clone();
                for e in i.elses.iter().flatten() {
                    self.cwd = saved.clone();
                    if let Some(c) = &e.condition {
                        self.compound_list(c);
                    }
                    self.compound_list(&e.body);
                    after = after.union(&self.cwd);
                }
                self.cwd = after.union(&saved);
            }
            ast::CompoundCommand::WhileClause(w) | ast::CompoundCommand::UntilClause(w) => {
                self.loop_body(&[&w.0, &w.1.list]);
            }
            ast::CompoundCommand::Arithmetic(e) => {
                let mut c = self.pseudo(format!("(({}))", e.expr.value), &[], &[]);
                if !word::arithmetic_is_literal(&e.expr.value) {
                    c.hide("arithmetic evaluates variables, whose values may hold commands");
                }
                self.commands.push(c);
            }
            ast::CompoundCommand::ArithmeticForClause(f) => {
                let mut c = self.pseudo("for ((…))".into(), &[], &[]);
                let literal = [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                    .all(|e| word::arithmetic_is_literal(&e.value));
                if !literal {
                    c.hide("arithmetic evaluates variables, whose values may hold commands");
                }
                self.commands.push(c);
                self.loop_body(&[&f.body.list]);
            }
            ast::CompoundCommand::Coprocess(c) => {
                let saved = self.cwd.clone();
                self.command(&c.body);
                self.cwd = saved;
                self.cd_succeeded = None;
            }
        }
    }

    /// `[[ … ]]`: analysed, not skipped. Arithmetic comparisons evaluate their operands.
    fn extended_test(&mut self, e: &ast::ExtendedTestExpr) {
        let mut words = Vec::new();
        let mut c = self.pseudo("[[ … ]]".into(), &[], &[]);
        self.test_expr(e, &mut c, &mut words);
        self.take_word_state(&mut c);
        c.display = format!("[[ {e} ]]");
        self.commands.push(c);
    }

    fn test_expr(&mut self, e: &ast::ExtendedTestExpr, c: &mut Command, words: &mut Vec<Word>) {
        use ast::{BinaryPredicate as B, UnaryPredicate as U};
        match e {
            ast::ExtendedTestExpr::And(a, b) | ast::ExtendedTestExpr::Or(a, b) => {
                self.test_expr(a, c, words);
                self.test_expr(b, c, words);
            }
            ast::ExtendedTestExpr::Not(a) | ast::ExtendedTestExpr::Parenthesized(a) => {
                self.test_expr(a, c, words)
            }
            ast::ExtendedTestExpr::UnaryTest(pred, w) => {
                let w = self.word(&w.value);
                self.operand(&w, c);
                match pred {
                    U::ShellVariableIsSetAndAssigned | U::ShellVariableIsSetAndNameRef => {
                        if w.text.contains('[') {
                            c.hide("[[ -v ]] on an array element evaluates its subscript");
                        }
                    }
                    U::StringHasZeroLength
                    | U::StringHasNonZeroLength
                    | U::ShellOptionEnabled
                    | U::FdIsOpenTerminal => {}
                    _ => c.effects.lists.extend(target(&w, &self.cwd)),
                }
                words.push(w);
            }
            ast::ExtendedTestExpr::BinaryTest(pred, a, b) => {
                let a = self.word(&a.value);
                let b = self.word(&b.value);
                self.operand(&a, c);
                let pattern_rhs = matches!(
                    pred,
                    B::StringExactlyMatchesPattern
                        | B::StringDoesNotExactlyMatchPattern
                        | B::StringMatchesRegex
                );
                if pattern_rhs {
                    if !b.exact || b.brace {
                        c.not_understood(format!(
                            "the pattern `{}` is only known when it runs",
                            b.text
                        ));
                    }
                    if let Some(h) = &b.hidden {
                        c.hide(h.clone());
                    }
                } else {
                    self.operand(&b, c);
                }
                match pred {
                    B::ArithmeticEqualTo
                    | B::ArithmeticNotEqualTo
                    | B::ArithmeticLessThan
                    | B::ArithmeticLessThanOrEqualTo
                    | B::ArithmeticGreaterThan
                    | B::ArithmeticGreaterThanOrEqualTo => {
                        let numeric = |w: &Word| {
                            w.exact && word::arithmetic_is_literal(&w.text) && !w.text.is_empty()
                        };
                        if !numeric(&a) || !numeric(&b) {
                            c.hide(
                                "an arithmetic comparison in [[ ]] evaluates its operands, whose values may hold commands",
                            );
                        }
                    }
                    B::FilesReferToSameDeviceAndInodeNumbers
                    | B::LeftFileIsNewerOrExistsWhenRightDoesNot
                    | B::LeftFileIsOlderOrDoesNotExistWhenRightDoes => {
                        c.effects.lists.extend(target(&a, &self.cwd));
                        c.effects.lists.extend(target(&b, &self.cwd));
                    }
                    _ => {}
                }
                words.push(a);
                words.push(b);
            }
        }
    }

    fn operand(&self, w: &Word, c: &mut Command) {
        if let Some(h) = &w.hidden {
            c.hide(h.clone());
        }
        if !w.literal() {
            c.not_understood(format!(
                "`{}` is only known when the command runs ({})",
                w.text,
                w.why.as_deref().unwrap_or("it expands to file names")
            ));
        }
    }

    /// Analyses a word; hidden-code reasons and assignments are kept for the command it
    /// belongs to.
    fn word(&mut self, raw: &str) -> Word {
        let w = word::analyse(raw, self);
        if let Some(h) = &w.hidden {
            self.word_hidden.push(h.clone());
        }
        w
    }

    fn take_word_state(&mut self, c: &mut Command) {
        for h in std::mem::take(&mut self.word_hidden) {
            c.hide(h);
        }
        for n in std::mem::take(&mut self.word_assigns) {
            if !inert(&n) {
                c.not_understood(format!("it assigns {n}"));
                self.altered = Some(format!(
                    "an earlier part assigns {n}, which can change what later commands do"
                ));
            }
        }
    }

    fn apply_state(&self, c: &mut Command) {
        if let Some(p) = &self.poisoned {
            c.hide(p.clone());
        }
        if let Some(a) = &self.altered {
            c.not_understood(a.clone());
        }
    }

    fn simple_command(&mut self, sc: &ast::SimpleCommand) {
        let mut assigns = Vec::new();
        let mut words = Vec::new();
        let mut redirects = Vec::new();
        if let Some(prefix) = &sc.prefix {
            for it in &prefix.0 {
                self.item(it, true, &mut assigns, &mut words, &mut redirects);
            }
        }
        if let Some(w) = &sc.word_or_name {
            let w = self.word(&w.value);
            words.push(w);
        }
        if let Some(suffix) = &sc.suffix {
            for it in &suffix.0 {
                self.item(it, false, &mut assigns, &mut words, &mut redirects);
            }
        }
        self.simple(assigns, words, redirects);
    }

    fn item<'a>(
        &mut self,
        it: &'a ast::CommandPrefixOrSuffixItem,
        in_prefix: bool,
        assigns: &mut Vec<Assign>,
        words: &mut Vec<Word>,
        redirects: &mut Vec<&'a ast::IoRedirect>,
    ) {
        match it {
            ast::CommandPrefixOrSuffixItem::IoRedirect(r) => redirects.push(r),
            ast::CommandPrefixOrSuffixItem::Word(w) => {
                let w = self.word(&w.value);
                words.push(w);
            }
            ast::CommandPrefixOrSuffixItem::AssignmentWord(asg, w) => {
                if in_prefix && words.is_empty() {
                    let a = self.assignment(asg, &w.value);
                    assigns.push(a);
                } else {
                    let w = self.word(&w.value);
                    words.push(w);
                }
            }
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                let saved = self.cwd.clone();
                let d = self.depth;
                self.depth += 1;
                self.compound_list(&sub.list);
                self.depth = d;
                self.cwd = saved;
                self.cd_succeeded = None;
                words.push(Word {
                    text: "<(…)".into(),
                    exact: true,
                    fd: true,
                    ..Word::default()
                });
            }
        }
    }

    fn assignment(&mut self, asg: &ast::Assignment, raw: &str) -> Assign {
        let (name, subscript) = match &asg.name {
            ast::AssignmentName::VariableName(n) => (n.clone(), None),
            ast::AssignmentName::ArrayElementName(n, s) => (n.clone(), Some(s.clone())),
        };
        if let Some(s) = &subscript
            && !s.chars().all(|c| c.is_ascii_digit())
        {
            self.word_hidden
                .push("an array subscript is arithmetic, which evaluates variables".into());
        }
        let value = match &asg.value {
            ast::AssignmentValue::Scalar(v) => self.word(&v.value),
            ast::AssignmentValue::Array(items) => {
                let mut all = Word {
                    exact: false,
                    why: Some("an array".into()),
                    ..Word::default()
                };
                for (k, v) in items {
                    if let Some(k) = k {
                        let k = self.word(&k.value);
                        if !k.text.chars().all(|c| c.is_ascii_digit()) {
                            self.word_hidden.push(
                                "an array subscript is arithmetic, which evaluates variables"
                                    .into(),
                            );
                        }
                    }
                    let v = self.word(&v.value);
                    all.text.push_str(&v.text);
                    all.text.push(' ');
                }
                all
            }
        };
        Assign {
            name,
            value,
            display: raw.to_string(),
        }
    }

    /// One simple command: its assignments, words and redirects.
    fn simple(
        &mut self,
        mut assigns: Vec<Assign>,
        mut words: Vec<Word>,
        redirects: Vec<&ast::IoRedirect>,
    ) {
        let mut cmd = Command {
            origin: self.origin,
            ..Command::default()
        };
        self.cd_succeeded = None;
        self.apply_state(&mut cmd);
        let mut stdin = Stdin::Inherited;
        for r in redirects {
            self.redirect(r, &mut cmd, &mut stdin);
        }
        // The fast path cannot tell assignments from words; treat leading NAME=value words
        // alike either way.
        while words
            .first()
            .is_some_and(|w| w.literal() && is_assignment(&w.text))
        {
            let w = words.remove(0);
            let (n, v) = w.text.split_once('=').unwrap_or((&w.text, ""));
            assigns.push(Assign {
                name: n.to_string(),
                value: Word::plain(v),
                display: w.text.clone(),
            });
        }
        self.take_word_state(&mut cmd);
        #[cfg(test)]
        {
            cmd.words = words.iter().map(|w| w.text.clone()).collect();
        }
        let bare = words.is_empty();
        let mut display = String::new();
        for part in assigns
            .iter()
            .map(|a| a.display.as_str())
            .chain(words.iter().map(|w| w.text.as_str()))
        {
            if !display.is_empty() {
                display.push(' ');
            }
            display.push_str(part);
        }
        cmd.display = display;
        for a in &assigns {
            self.assignment_effects(&a.name, &a.value, bare, &mut cmd);
        }
        if bare {
            // Only assignments and/or redirects.
            cmd.kind = if assigns
                .iter()
                .all(|a| safe_assignment(&a.name) || inert(&a.name))
            {
                Kind::ReadOnly
            } else {
                Kind::Other
            };
            cmd.allow_view = Some(cmd.display.clone());
            if !assigns.is_empty() {
                cmd.deny_views.push(cmd.display.clone());
            }
            self.commands.push(cmd);
            return;
        }
        if !words[0].literal() {
            cmd.hide(format!(
                "the program `{}` is only known when the command runs",
                words[0].text
            ));
        }
        let ctx = Ctx {
            cwd: self.cwd.clone(),
            on_chain: true,
            stdin,
            stdin_args: None,
            level: 0,
        };
        self.readings(&mut cmd, &words, &ctx);
        // Brace expansion turns words into several: its result is one more reading.
        if words.iter().any(|w| w.brace) {
            let expanded: Vec<Word> = words
                .iter()
                .flat_map(|w| {
                    if w.brace {
                        word::expand_braces(&w.text, &w.quoted, 64)
                            .into_iter()
                            .map(|t| Word::plain(&t))
                            .collect()
                    } else {
                        vec![w.clone()]
                    }
                })
                .collect();
            if !expanded.is_empty() {
                let ctx = Ctx {
                    on_chain: false,
                    ..ctx
                };
                self.readings(&mut cmd, &expanded, &ctx);
            }
        }
        self.commands.push(cmd);
        self.run_pending();
    }

    fn run_pending(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for p in pending {
            let saved_cwd = self.cwd.clone();
            let saved_origin = self.origin;
            self.origin = if saved_origin == Origin::Reading {
                Origin::Reading
            } else {
                p.origin
            };
            self.cwd = p.cwd.clone();
            let start = self.commands.len();
            self.script(&p.text, self.depth + 1);
            if p.later {
                self.later.push((start, self.commands.len()));
            }
            self.origin = saved_origin;
            if p.child || p.later {
                self.cwd = saved_cwd;
                self.cd_succeeded = None;
            } else if p.cwd != saved_cwd {
                // `eval` ran in our shell: its cd counts, from where it was.
                self.cwd = saved_cwd.union(&self.cwd);
            }
        }
    }

    fn assignment_effects(&mut self, name: &str, value: &Word, bare: bool, cmd: &mut Command) {
        if let Some(h) = &value.hidden {
            cmd.hide(h.clone());
        }
        if safe_assignment(name) {
            return;
        }
        if bare && inert(name) {
            return;
        }
        cmd.not_understood(format!("it sets {name}, which can change what commands do"));
        if bare {
            self.altered = Some(format!(
                "an earlier part sets {name}, which can change what later commands do"
            ));
        }
        self.value_as_command(name, value, cmd);
    }

    /// A variable's value may be run as a command (`GIT_PAGER`, `PAGER`, `BASH_ENV`, …): deny
    /// and ask rules see it as one.
    fn value_as_command(&mut self, name: &str, value: &Word, cmd: &mut Command) {
        if value.exact {
            if !value.text.trim().is_empty() {
                self.pending.push(Pending {
                    text: value.text.clone(),
                    child: true,
                    later: false,
                    origin: Origin::Reading,
                    cwd: self.cwd.clone(),
                });
            }
        } else if !inert(name) {
            cmd.hide(format!(
                "{name} gets a value only known when it runs, and programs may run it as a command"
            ));
        }
    }

    fn redirect(&mut self, r: &ast::IoRedirect, cmd: &mut Command, stdin: &mut Stdin) {
        match r {
            ast::IoRedirect::File(_, kind, t) => {
                let w = match t {
                    ast::IoFileRedirectTarget::Filename(w)
                    | ast::IoFileRedirectTarget::Duplicate(w) => self.word(&w.value),
                    ast::IoFileRedirectTarget::Fd(_) => return,
                    ast::IoFileRedirectTarget::ProcessSubstitution(_, s) => {
                        let saved = self.cwd.clone();
                        let d = self.depth;
                        self.depth += 1;
                        self.compound_list(&s.list);
                        self.depth = d;
                        self.cwd = saved;
                        self.cd_succeeded = None;
                        if matches!(kind, ast::IoFileRedirectKind::Read) {
                            *stdin = Stdin::Dynamic;
                        }
                        return;
                    }
                };
                let dup = matches!(t, ast::IoFileRedirectTarget::Duplicate(_))
                    || matches!(
                        kind,
                        ast::IoFileRedirectKind::DuplicateInput
                            | ast::IoFileRedirectKind::DuplicateOutput
                    );
                if dup
                    && w.literal()
                    && (w.text == "-"
                        || w.text
                            .trim_end_matches('-')
                            .chars()
                            .all(|c| c.is_ascii_digit()))
                {
                    return;
                }
                let (read, write) = match kind {
                    ast::IoFileRedirectKind::Read | ast::IoFileRedirectKind::DuplicateInput => {
                        (true, false)
                    }
                    ast::IoFileRedirectKind::ReadAndWrite => (true, true),
                    _ => (false, true),
                };
                if read {
                    *stdin = Stdin::Dynamic;
                }
                self.redirect_target(&w, read, write, cmd);
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                let w = self.word(&w.value);
                self.redirect_target(&w, false, true, cmd);
            }
            ast::IoRedirect::HereString(_, w) => {
                let w = self.word(&w.value);
                // A here-string is not split or globbed: only expansions make it unknown.
                if !w.exact {
                    cmd.not_understood(format!(
                        "the here-string `{}` is only known when it runs",
                        w.text
                    ));
                    *stdin = Stdin::Dynamic;
                } else {
                    *stdin = Stdin::Literal(w.text.clone());
                }
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    let w = word::heredoc(&doc.doc.value, self);
                    if let Some(h) = &w.hidden {
                        cmd.hide(h.clone());
                    }
                    if !w.exact {
                        cmd.not_understood("the here-document holds expansions");
                        *stdin = Stdin::Dynamic;
                    } else {
                        *stdin = Stdin::Literal(w.text);
                    }
                } else {
                    *stdin = Stdin::Literal(doc.doc.value.clone());
                }
            }
        }
    }

    fn redirect_target(&mut self, w: &Word, read: bool, write: bool, cmd: &mut Command) {
        if w.fd || (w.literal() && super::paths::not_a_file(&w.text)) {
            return;
        }
        if w.exact && !w.brace && !w.glob {
            if let Some((proto, host, port)) = super::paths::network(&w.text) {
                network(cmd, Some(host), proto, port);
                return;
            }
        } else if w.text.starts_with("/dev/tcp/") || w.text.starts_with("/dev/udp/") {
            let proto = if w.text.starts_with("/dev/tcp/") {
                "tcp"
            } else {
                "udp"
            };
            network(cmd, None, proto, String::new());
            return;
        } else {
            // Any path at all, `/dev/tcp/…` included.
            cmd.effects.network_unknown = true;
            cmd.not_understood(format!(
                "the redirect target `{}` is only known when it runs",
                w.text
            ));
        }
        if w.glob {
            cmd.not_understood(format!("the redirect target `{}` is a glob", w.text));
        }
        let t = Target {
            path: w.text.clone(),
            exact: w.exact && !w.brace && !w.glob,
            glob: false,
            cwd: self.cwd.clone(),
            repo_top: false,
        };
        if read {
            cmd.effects.reads.push(t.clone());
        }
        if write {
            cmd.effects.redirects.push(t);
        }
    }

    /// Deny views, effects and nested scripts of `words` as run in `ctx`, through every
    /// wrapper.
    fn readings(&mut self, cmd: &mut Command, words: &[Word], ctx: &Ctx) {
        if ctx.level > 8 {
            cmd.hide("wrappers nest too deeply to analyse");
            return;
        }
        if words.is_empty() {
            return;
        }
        let view = push_views(cmd, words);
        let prog = basename(&words[0].text).to_string();
        if !words[0].literal() {
            cmd.hide(format!(
                "the program `{}` is only known when the command runs",
                words[0].text
            ));
            return;
        }
        let args = &words[1..];
        if let Some(peeled) = wrappers::peel(&prog, args, &ctx.cwd) {
            self.wrapper(cmd, words, ctx, peeled);
            return;
        }
        if ctx.on_chain {
            cmd.allow_view = Some(view);
            cmd.program.clone_from(&prog);
        } else if cmd.program.is_empty() {
            cmd.program.clone_from(&prog);
        }
        let Some(replace) = &ctx.stdin_args else {
            self.core(cmd, words, ctx);
            return;
        };
        let mut words = words.to_vec();
        {
            match replace {
                None => {
                    // `xargs cmd` appends arguments read from stdin: allow rules must cover
                    // any trailing words, and the effects count an unknown operand.
                    if ctx.on_chain {
                        cmd.allow_view = Some(format!("{} (stdin)", join(&words)));
                    }
                    let mut fx_words = words.clone();
                    fx_words.push(Word {
                        text: "(stdin)".into(),
                        exact: false,
                        why: Some("xargs reads it from stdin".into()),
                        parts: vec![Part::Any],
                        ..Word::default()
                    });
                    let prog = basename(&fx_words[0].text).to_string();
                    cmd.effects
                        .extend(table_effects(&prog, &fx_words[1..], &ctx.cwd));
                }
                Some(r) => {
                    for w in words.iter_mut() {
                        if w.text.contains(r.as_str()) {
                            w.exact = false;
                            w.why = Some("xargs puts input lines there".into());
                            w.parts = vec![Part::Any];
                        }
                    }
                    if words[0].text.contains(r.as_str()) {
                        cmd.hide("xargs -I puts input into the program name");
                    }
                }
            }
        }
        self.core(cmd, &words, ctx);
    }

    fn wrapper(&mut self, cmd: &mut Command, words: &[Word], ctx: &Ctx, peeled: wrappers::Peeled) {
        let prog = basename(&words[0].text).to_string();
        cmd.prefix_forbidden |= peeled.prefix_forbidden;
        for p in &peeled.problems {
            cmd.not_understood(p.clone());
        }
        cmd.effects.reads.extend(peeled.reads.iter().cloned());
        cmd.effects.writes.extend(peeled.writes.iter().cloned());
        let single = peeled.inner.len() == 1;
        let strip = ctx.on_chain && peeled.strippable && peeled.problems.is_empty() && single;
        if ctx.on_chain && !strip {
            cmd.allow_view = Some(join(words));
            cmd.program = prog.clone();
        }
        let mut inner_cwd = ctx.cwd.clone();
        match &peeled.chdir {
            Some(Some(d)) => inner_cwd = inner_cwd.after_cd(d),
            Some(None) => inner_cwd = Cwd::Unknown,
            None => {}
        }
        for (name, value) in &peeled.env {
            if let Some(h) = &value.hidden {
                cmd.hide(h.clone());
            }
            if !safe_assignment(name) {
                cmd.not_understood(format!("{prog} sets {name} for the command it runs"));
                self.value_as_command(name, value, cmd);
            }
        }
        let stdin_args = peeled.stdin_args.clone().or_else(|| ctx.stdin_args.clone());
        for (k, inner) in peeled.inner.iter().enumerate() {
            let child = Ctx {
                cwd: inner_cwd.clone(),
                on_chain: strip && k == 0,
                stdin: ctx.stdin.clone(),
                stdin_args: stdin_args.clone(),
                level: ctx.level + 1,
            };
            match inner {
                Inner::At(i) => self.readings(cmd, &words[1 + i..], &child),
                Inner::Split(built, rest) => {
                    let mut all = built.clone();
                    all.extend_from_slice(words.get(1 + rest..).unwrap_or(&[]));
                    self.readings(cmd, &all, &child);
                }
                Inner::Script(s) => {
                    if let Some(r) = stdin_args.as_ref().and_then(|r| r.as_ref())
                        && s.contains(r.as_str())
                    {
                        cmd.hide("xargs -I puts input into a script");
                    }
                    self.pending.push(Pending {
                        text: s.clone(),
                        child: true,
                        later: false,
                        origin: if k == 0 {
                            Origin::Script
                        } else {
                            Origin::Reading
                        },
                        cwd: inner_cwd.clone(),
                    });
                }
                Inner::ScriptUnknown => {
                    cmd.hide(format!("{prog} runs a script only known when it runs"));
                }
                Inner::Nothing => {
                    if child.on_chain {
                        cmd.allow_view = Some(join(words));
                        cmd.program = prog.clone();
                    }
                }
            }
        }
    }

    /// The program itself, past every wrapper.
    fn core(&mut self, cmd: &mut Command, words: &[Word], ctx: &Ctx) {
        let prog = basename(&words[0].text).to_string();
        let args = &words[1..];
        let kind_if = |ok: bool, k: Kind| if ok && ctx.on_chain { k } else { Kind::Other };
        match prog.as_str() {
            "sh" | "bash" | "dash" | "ash" | "zsh" | "ksh" | "mksh" | "fish" | "csh" | "tcsh"
            | "yash" | "posh" => self.shell(cmd, &prog, args, ctx),
            "eval" => {
                if args.iter().all(Word::literal) {
                    if !args.is_empty() {
                        self.pending.push(Pending {
                            text: join(args),
                            child: false,
                            later: false,
                            origin: self.origin,
                            cwd: ctx.cwd.clone(),
                        });
                    }
                    set_kind(cmd, ctx, Kind::Transparent);
                } else {
                    cmd.hide("eval runs a string only known when it runs");
                }
            }
            "source" | "." => {
                self.altered = Some(
                    "an earlier part sources a file, which can redefine later commands".into(),
                );
                match args.first() {
                    None => cmd.not_understood("source needs a file"),
                    Some(f) => {
                        if f.fd || !f.literal() || reads_stdin(&f.text) {
                            cmd.hide(format!(
                                "{prog} reads commands from `{}`, which toolrt cannot see",
                                f.text
                            ));
                            if let Stdin::Literal(s) = &ctx.stdin {
                                self.pending.push(Pending {
                                    text: s.clone(),
                                    child: false,
                                    later: false,
                                    origin: Origin::Reading,
                                    cwd: ctx.cwd.clone(),
                                });
                            }
                        } else {
                            cmd.effects.reads.extend(target(f, &ctx.cwd));
                        }
                    }
                }
            }
            "trap" => {
                // trap [-lp] [[ACTION] SIGNAL...]: `--` ends the options; a lone argument (or
                // `-`) resets a signal.
                let mut rest = args;
                while let Some(w) = rest.first()
                    && matches!(w.text.as_str(), "-p" | "-l" | "-P" | "-lp" | "-pl")
                {
                    rest = &rest[1..];
                }
                if rest.first().is_some_and(|w| w.text == "--") {
                    rest = &rest[1..];
                }
                let script = rest.first().filter(|w| rest.len() >= 2 && w.text != "-");
                match script {
                    Some(w) if w.literal() => {
                        if !w.text.is_empty() {
                            self.pending.push(Pending {
                                text: w.text.clone(),
                                child: false,
                                later: true,
                                origin: self.origin,
                                cwd: ctx.cwd.clone(),
                            });
                        }
                        set_kind(cmd, ctx, Kind::Transparent);
                    }
                    _ if rest.first().is_some_and(|w| !w.literal()) => {
                        cmd.hide("trap runs a string only known when it runs")
                    }
                    _ => {}
                }
            }
            "cd" | "pushd" | "popd" => {
                self.cd_seen = true;
                let out = programs::read_only("cd", args, &ctx.cwd).unwrap_or_default();
                let dir = match (prog.as_str(), out.problems.is_empty()) {
                    ("cd", true) => out.effects.lists.first().map(|t| t.path.clone()),
                    ("pushd", _) => args
                        .iter()
                        .find(|w| !w.text.starts_with(['-', '+']))
                        .filter(|w| w.literal())
                        .map(|w| w.text.clone()),
                    _ => None,
                };
                for p in &out.problems {
                    cmd.not_understood(p.clone());
                }
                cmd.effects.extend(out.effects);
                let succeeded = match &dir {
                    Some(d) => self.cwd.after_cd_succeeded(d),
                    None => Cwd::Unknown,
                };
                self.cwd = match dir {
                    Some(d) => self.cwd.after_cd(&d),
                    None => Cwd::Unknown,
                };
                self.cd_succeeded = Some(succeeded);
                set_kind(
                    cmd,
                    ctx,
                    kind_if(prog == "cd" && cmd.unknown.is_empty(), Kind::ReadOnly),
                );
            }
            "shopt" => {
                if args.iter().any(|w| matches!(w.text.as_str(), "-s" | "-u")) {
                    self.poisoned = Some(
                        "an earlier shopt changes how later commands are read (aliases, extglob, globbing)"
                            .into(),
                    );
                }
            }
            "set" => {
                let ok = args.iter().all(|w| {
                    let t = w.text.as_str();
                    w.literal()
                        && (t == "--"
                            || matches!(
                                t,
                                "-o" | "+o"
                                    | "pipefail"
                                    | "errexit"
                                    | "nounset"
                                    | "xtrace"
                                    | "noclobber"
                                    | "verbose"
                            )
                            || (t.len() > 1
                                && t.starts_with(['-', '+'])
                                && t[1..].chars().all(|c| "euxvoC".contains(c))))
                });
                if ok {
                    set_kind(cmd, ctx, Kind::ReadOnly);
                } else if !args.is_empty() {
                    self.poisoned =
                        Some("an earlier `set` changes how later commands are read or run".into());
                }
            }
            "hash" => {
                if args
                    .iter()
                    .any(|w| w.text.starts_with('-') && w.text.contains('p'))
                {
                    self.poisoned =
                        Some("an earlier hash -p changes which program a name runs".into());
                }
            }
            "enable" => {
                cmd.hide("enable can load builtins from a library or replace them");
                self.poisoned = Some("an earlier enable changes what builtins do".into());
            }
            "bind" | "fc" | "complete" | "compgen" => {
                cmd.hide(format!("{prog} can run commands toolrt cannot see"));
            }
            "mapfile" | "readarray" => {
                if args
                    .iter()
                    .any(|w| w.text.starts_with('-') && w.text.contains('C'))
                {
                    cmd.hide(format!("{prog} -C runs a callback toolrt cannot see"));
                }
            }
            "alias" | "unalias" => {}
            "declare" | "typeset" | "local" | "readonly" | "export" => {
                self.declaration(cmd, &prog, args);
            }
            "let" => {
                if !args
                    .iter()
                    .all(|w| w.exact && word::arithmetic_is_literal(&w.text))
                {
                    cmd.hide("let evaluates arithmetic, which evaluates variables");
                }
            }
            "read" | "unset" | "getopts" | "wait" | "printf" | "test" | "[" => {
                let subscripted = args.iter().any(|w| {
                    w.text.contains('[') && w.text.contains(']') && !w.text.starts_with('-')
                });
                let names_args = match prog.as_str() {
                    "printf" => args.first().is_some_and(|w| w.text == "-v"),
                    "test" | "[" => args.iter().any(|w| w.text == "-v" || w.text == "-R"),
                    _ => true,
                };
                if subscripted && names_args {
                    cmd.hide(format!(
                        "{prog} on an array element evaluates its subscript as arithmetic"
                    ));
                }
                if prog == "read" {
                    for w in args.iter().filter(|w| !w.text.starts_with('-')) {
                        if !inert(&w.text) {
                            self.altered = Some(format!(
                                "an earlier read sets {}, which can change what later commands do",
                                w.text
                            ));
                        }
                    }
                }
                cmd.effects
                    .extend(programs::deny_effects(&prog, args, &ctx.cwd));
            }
            "git" => self.git(cmd, args, ctx),
            "find" => {
                let out = programs::find(args, &ctx.cwd);
                let ok = out.problems.is_empty();
                if ctx.on_chain {
                    for p in &out.problems {
                        cmd.not_understood(p.clone());
                    }
                }
                if out.runs.iter().len() > 0 || out.not_read_only.is_some() {
                    cmd.prefix_forbidden = true;
                }
                cmd.effects.extend(out.effects);
                set_kind(
                    cmd,
                    ctx,
                    kind_if(ok && out.not_read_only.is_none(), Kind::ReadOnly),
                );
                for run in out.runs {
                    self.find_exec(run, ctx);
                }
            }
            _ => {
                if let Some(out) = programs::read_only(&prog, args, &ctx.cwd) {
                    let ok = out.problems.is_empty();
                    if ctx.on_chain {
                        for p in out.problems {
                            cmd.not_understood(p);
                        }
                    }
                    if let Some(h) = out.hidden {
                        cmd.hide(h);
                    }
                    for text in out.readings {
                        self.pending.push(Pending {
                            text,
                            child: true,
                            later: false,
                            origin: Origin::Reading,
                            cwd: ctx.cwd.clone(),
                        });
                    }
                    if let Some(why) = &out.not_read_only
                        && ctx.on_chain
                    {
                        cmd.not_read_only = Some(why.clone());
                    }
                    cmd.effects.extend(out.effects);
                    if !ok {
                        // Options toolrt does not know may name files: every value counts.
                        cmd.effects
                            .extend(programs::deny_effects(&prog, args, &ctx.cwd));
                    }
                    set_kind(
                        cmd,
                        ctx,
                        kind_if(ok && out.not_read_only.is_none(), Kind::ReadOnly),
                    );
                } else if let Some(out) = programs::file_edit(&prog, args, &ctx.cwd) {
                    let ok = out.problems.is_empty();
                    if let Some(h) = &out.hidden {
                        cmd.hide(h.clone());
                    }
                    if ctx.on_chain && ok {
                        set_kind(cmd, ctx, Kind::FileEdit);
                    } else if ctx.on_chain {
                        // Not an acceptEdits command with these options; an allow rule may
                        // still cover it, so it is not marked "not understood".
                        cmd.kind = Kind::Other;
                    }
                    if prog == "sed" && !ok {
                        for p in &out.problems {
                            if p.contains("runs") || p.contains("writes") || p.contains("reads") {
                                cmd.not_understood(p.clone());
                            }
                        }
                    }
                    cmd.effects.extend(out.effects);
                    if prog != "sed"
                        || args
                            .iter()
                            .any(|w| w.text.starts_with("-i") || w.text.starts_with("--in-place"))
                    {
                        cmd.effects
                            .extend(programs::deny_effects(&prog, args, &ctx.cwd));
                    }
                } else {
                    cmd.effects
                        .extend(programs::deny_effects(&prog, args, &ctx.cwd));
                    if ctx.on_chain {
                        cmd.kind = Kind::Other;
                    }
                }
            }
        }
    }

    fn declaration(&mut self, cmd: &mut Command, prog: &str, args: &[Word]) {
        for w in args {
            let t = w.text.as_str();
            if t.starts_with(['-', '+']) && t.len() > 1 {
                if !t[1..].chars().all(|c| "xrgpfF".contains(c)) {
                    cmd.hide(format!(
                        "{prog} {t} changes how values are evaluated (arithmetic, references, arrays)"
                    ));
                }
                continue;
            }
            let (name, value) = match t.split_once('=') {
                Some((n, v)) => (n.trim_end_matches('+'), Some(v)),
                None => (t, None),
            };
            if name.contains('[') {
                cmd.hide(format!(
                    "{prog} on an array element evaluates its subscript"
                ));
                continue;
            }
            let exported = prog == "export" || args.iter().any(|a| a.text == "-x");
            if !safe_assignment(name) && (exported || !inert(name)) {
                cmd.not_understood(format!(
                    "{prog} sets {name}, which can change what commands do"
                ));
                self.altered = Some(format!(
                    "an earlier part sets {name}, which can change what later commands do"
                ));
                if let Some(v) = value {
                    let v = Word {
                        text: v.to_string(),
                        ..w.clone()
                    };
                    self.value_as_command(name, &v, cmd);
                }
            }
        }
    }

    fn shell(&mut self, cmd: &mut Command, prog: &str, args: &[Word], ctx: &Ctx) {
        let bash_like = matches!(prog, "sh" | "bash" | "dash" | "ash");
        self.shell_options(cmd, prog, bash_like, args, ctx);
        if cmd.hidden.is_some() {
            // Whatever toolrt could not follow, every literal argument that could be the
            // script is still matched against deny and ask rules.
            for w in args
                .iter()
                .filter(|w| w.literal() && !w.text.starts_with('-'))
            {
                self.pending.push(Pending {
                    text: w.text.clone(),
                    child: true,
                    later: false,
                    origin: Origin::Reading,
                    cwd: ctx.cwd.clone(),
                });
            }
        }
    }

    fn shell_options(
        &mut self,
        cmd: &mut Command,
        prog: &str,
        bash_like: bool,
        args: &[Word],
        ctx: &Ctx,
    ) {
        let mut i = 0;
        let mut command_mode = false;
        let mut stdin_mode = false;
        while i < args.len() {
            let w = &args[i];
            let t = w.text.as_str();
            if !w.literal() {
                cmd.hide(format!("a {prog} option is only known when it runs"));
                return;
            }
            if t == "--" || t == "-" {
                i += 1;
                break;
            }
            if let Some(long) = t.strip_prefix("--") {
                match long {
                    "login" | "noprofile" | "norc" | "restricted" | "verbose" | "noediting"
                    | "help" | "version" | "dump-strings" | "dump-po-strings" | "pretty-print" => {}
                    "rcfile" | "init-file" => i += 1,
                    _ => {
                        cmd.hide(format!("{prog} --{long} changes how the script is read"));
                        return;
                    }
                }
                i += 1;
                continue;
            }
            if !(t.starts_with('-') || t.starts_with('+')) {
                break;
            }
            for c in t[1..].chars() {
                match c {
                    'c' => command_mode = true,
                    's' => stdin_mode = true,
                    'e' | 'u' | 'x' | 'v' | 'n' | 'l' | 'r' | 'p' | 'h' | 'C' | 'E' | 'T' => {}
                    'o' => {
                        i += 1;
                        let ok = args.get(i).is_some_and(|v| {
                            matches!(
                                v.text.as_str(),
                                "errexit"
                                    | "nounset"
                                    | "pipefail"
                                    | "xtrace"
                                    | "verbose"
                                    | "noclobber"
                                    | "errtrace"
                                    | "functrace"
                            )
                        });
                        if !ok {
                            cmd.hide(format!("{prog} -o changes how the script runs"));
                            return;
                        }
                    }
                    'i' => {
                        cmd.hide("an interactive shell reads startup files and expands aliases");
                        return;
                    }
                    other => {
                        cmd.hide(format!("{prog} -{other} changes how the script is read"));
                        return;
                    }
                }
            }
            i += 1;
        }
        if command_mode {
            match args.get(i) {
                None if ctx.stdin_args.is_some() => {
                    cmd.hide(format!("xargs hands {prog} -c its script from stdin"));
                }
                None => cmd.not_understood(format!("{prog} -c has no command string")),
                Some(s) if !bash_like => {
                    cmd.hide(format!(
                        "{prog} -c: {prog} syntax is not bash's, so toolrt cannot read `{}`",
                        s.text
                    ));
                }
                Some(s) if s.literal() => {
                    if let Some(r) = ctx.stdin_args.as_ref().and_then(|r| r.as_ref())
                        && s.text.contains(r.as_str())
                    {
                        cmd.hide("xargs -I puts input into a script");
                    }
                    self.pending.push(Pending {
                        text: s.text.clone(),
                        child: true,
                        later: false,
                        origin: self.origin,
                        cwd: ctx.cwd.clone(),
                    });
                    set_kind(cmd, ctx, Kind::Transparent);
                }
                Some(s) => cmd.hide(format!(
                    "the script of {prog} -c is only known when it runs (`{}`)",
                    s.text
                )),
            }
            return;
        }
        if stdin_mode || i >= args.len() {
            cmd.hide(format!(
                "{prog} reads its script from stdin, which toolrt cannot see"
            ));
            if let Stdin::Literal(s) = &ctx.stdin
                && bash_like
            {
                self.pending.push(Pending {
                    text: s.clone(),
                    child: true,
                    later: false,
                    origin: Origin::Reading,
                    cwd: ctx.cwd.clone(),
                });
            }
            return;
        }
        let f = &args[i];
        if f.fd || !f.literal() || reads_stdin(&f.text) {
            cmd.hide(format!(
                "{prog} reads its script from `{}`, which toolrt cannot see",
                f.text
            ));
        } else {
            cmd.effects.reads.extend(target(f, &ctx.cwd));
        }
    }

    fn git(&mut self, cmd: &mut Command, args: &[Word], ctx: &Ctx) {
        use super::git;
        let g = git::globals(args);
        if let Some(h) = &g.hidden {
            cmd.hide(h.clone());
        }
        let (view, scripts) = git::normalised(args, &g);
        if let Some(v) = view
            && !cmd.deny_views.contains(&v)
        {
            cmd.deny_views.push(v);
        }
        for s in scripts {
            self.pending.push(Pending {
                text: s,
                child: true,
                later: false,
                origin: Origin::Reading,
                cwd: ctx.cwd.clone(),
            });
        }
        let dirs = git::run_dirs(&ctx.cwd, &g.chdirs);
        for p in &g.problems {
            cmd.not_understood(p.clone());
        }
        let Some(sub) = g.sub else {
            if g.prints_only && g.problems.is_empty() {
                set_kind(cmd, ctx, Kind::ReadOnly);
            }
            return;
        };
        for d in &g.chdirs {
            cmd.effects.lists.extend(target(d, &ctx.cwd));
        }
        match git::read_only(&args[sub].text, &args[sub + 1..], &dirs) {
            Some(ro) => {
                let ok = ro.problems.is_empty() && g.problems.is_empty() && g.hidden.is_none();
                if !ro.problems.is_empty() {
                    // An option toolrt does not know may name a file it reads or writes.
                    cmd.effects
                        .extend(programs::deny_effects("git", &args[sub..], &dirs));
                }
                for p in ro.problems {
                    cmd.not_understood(p);
                }
                cmd.effects.extend(ro.effects);
                cmd.git = Some(git::run(dirs, ro.shows_content));
                set_kind(cmd, ctx, if ok { Kind::ReadOnly } else { Kind::Other });
            }
            None => {
                if ctx.on_chain {
                    cmd.kind = Kind::Other;
                }
                // Other subcommands: every operand may be a file it reads, `--output=F` a
                // file it writes.
                cmd.effects
                    .extend(programs::deny_effects("git", &args[sub..], &dirs));
            }
        }
    }

    /// A command `find -exec` runs for found files: `{}` stands for paths below the start
    /// points.
    fn find_exec(&mut self, run: programs::Runs, ctx: &Ctx) {
        let start = self.commands.len();
        let saved = self.cwd.clone();
        self.cwd = if run.cwd_unknown {
            Cwd::Unknown
        } else {
            ctx.cwd.clone()
        };
        let words: Vec<Word> = run
            .words
            .iter()
            .map(|w| {
                if w.text.contains("{}") {
                    Word {
                        text: w.text.replace("{}", FOUND),
                        exact: false,
                        why: Some("find puts found paths there".into()),
                        parts: vec![Part::Any],
                        ..w.clone()
                    }
                } else {
                    w.clone()
                }
            })
            .collect();
        if words.is_empty() {
            self.cwd = saved;
            self.cd_succeeded = None;
            return;
        }
        let saved_origin = self.origin;
        if self.origin == Origin::Script {
            self.origin = Origin::RunBy;
        }
        self.simple(Vec::new(), words, Vec::new());
        self.origin = saved_origin;
        self.cwd = saved;
        self.cd_succeeded = None;
        for c in &mut self.commands[start..] {
            for v in c.deny_views.iter_mut() {
                *v = v.replace(FOUND, "{}");
            }
            c.display = c.display.replace(FOUND, "{}");
            found_targets(&mut c.effects, &run.found_under, run.unfiltered);
        }
    }
}

/// What the program tables say a command touches (read-only, file edit, or the generous
/// reader and writer lists).
fn table_effects(prog: &str, args: &[Word], cwd: &Cwd) -> Effects {
    if prog == "find" {
        return programs::find(args, cwd).effects;
    }
    if let Some(o) = programs::read_only(prog, args, cwd) {
        return o.effects;
    }
    let mut fx = programs::file_edit(prog, args, cwd)
        .map(|o| o.effects)
        .unwrap_or_default();
    fx.extend(programs::deny_effects(prog, args, cwd));
    fx
}

/// Stands for a path `find` found, inside words of the command it runs.
const FOUND: &str = "\u{0}found";

fn found_targets(fx: &mut Effects, under: &[Target], unfiltered: bool) {
    let is_found = |t: &Target| t.path.contains(FOUND);
    if fx.reads.iter().any(is_found) {
        fx.reads.retain(|t| !is_found(t));
        fx.trees.extend(under.iter().cloned());
    }
    if fx.removes.iter().any(is_found) {
        fx.removes.retain(|t| !is_found(t));
        let mut extra = Effects::default();
        programs::removes_found(under, unfiltered, &mut extra);
        fx.removes.extend(extra.removes);
    }
    if fx.writes.iter().any(is_found) {
        fx.writes.retain(|t| !is_found(t));
        for u in under {
            fx.write_trees_push(u.clone());
        }
    }
    for t in fx.lists.iter_mut().chain(fx.trees.iter_mut()) {
        if is_found(t) {
            t.exact = false;
        }
    }
}

fn reads_stdin(path: &str) -> bool {
    path == "/dev/stdin"
        || path.starts_with("/dev/fd/")
        || (path.starts_with("/proc/") && path.contains("/fd/"))
}

fn set_kind(cmd: &mut Command, ctx: &Ctx, kind: Kind) {
    if ctx.on_chain {
        cmd.kind = kind;
    }
}

fn network(cmd: &mut Command, host: Option<String>, proto: &'static str, port: String) {
    cmd.not_understood("it opens a network connection through a /dev/tcp or /dev/udp redirect");
    match &host {
        Some(h) => {
            // Deny and ask rules on network programs hold for the shell's own connections.
            for view in [
                format!("curl {h}"),
                format!("curl http://{h}:{port}/"),
                format!("curl https://{h}:{port}/"),
                format!("wget {h}"),
                format!("wget http://{h}:{port}/"),
                format!("nc {h} {port}"),
                format!("ncat {h} {port}"),
                format!("telnet {h} {port}"),
                format!("socat - {}:{h}:{port}", proto.to_ascii_uppercase()),
            ] {
                cmd.deny_views.push(view);
            }
        }
        None => cmd.hide("a /dev/tcp redirect goes to a host only known when it runs"),
    }
    cmd.effects.network.push(Endpoint { host, proto, port });
}

/// Adds the deny and ask views of `words`; returns the plain one.
fn push_views(cmd: &mut Command, words: &[Word]) -> String {
    let text = join(words);
    if !cmd.deny_views.contains(&text) {
        cmd.deny_views.push(text.clone());
    }
    // `/bin/rm x` and `./rm x` are matched as `rm x` too.
    if words[0].text.contains('/') {
        let mut w = words.to_vec();
        w[0].text = basename(&words[0].text).to_string();
        let text = join(&w);
        if !cmd.deny_views.contains(&text) {
            cmd.deny_views.push(text);
        }
    }
    if !words.iter().all(Word::literal) {
        let mut parts = Vec::new();
        for (i, w) in words.iter().enumerate() {
            if i > 0 {
                parts.push(Part::Lit(" ".into()));
            }
            parts.extend(w.open_parts());
        }
        cmd.open_views.push(parts);
    }
    text
}

fn unknown_cwd(c: &mut Command) {
    let fx = &mut c.effects;
    for t in fx
        .reads
        .iter_mut()
        .chain(fx.lists.iter_mut())
        .chain(fx.trees.iter_mut())
        .chain(fx.writes.iter_mut())
        .chain(fx.redirects.iter_mut())
        .chain(fx.removes.iter_mut())
    {
        if !t.path.starts_with('/') && !t.path.starts_with('~') {
            t.cwd = Cwd::Unknown;
        }
    }
    if let Some(g) = &mut c.git {
        g.dirs = Cwd::Unknown;
    }
}
