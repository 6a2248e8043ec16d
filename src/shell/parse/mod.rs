//! The walk from command text to [`Command`]s: brush-parser (or the fast path for plain
//! words), then every simple command with its words, redirects, assignments, wrappers and the
//! scripts it runs (`sh -c`, `eval`, substitutions, `trap`, `find -exec`, `xargs`, …), keeping
//! track of the working directory (`cd`) and of changes that alter later commands (variables,
//! `source`, `shopt`).

mod builtins;
mod compound;
mod env_vars;
mod simple;

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
        || (env_vars::hidden_by(name).is_none()
            && name.chars().any(|c| c.is_ascii_lowercase())
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
