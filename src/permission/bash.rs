//! Shell analysis: a Bash command parsed once (with `brush-parser`) into the simple commands it
//! would run, each with the views deny, ask and allow rules match against.
//!
//! Everything here is conservative: whatever cannot be analysed is marked so that it is never
//! auto-allowed, while what can be analysed is still checked against deny and ask rules.

use brush_parser::ast;
use brush_parser::word::{ParameterExpr, TildeExpr, WordPiece, WordPieceWithSource};

/// Deepest nesting of substitutions and `sh -c` strings analysed; deeper is unanalysable.
const MAX_DEPTH: usize = 12;

/// One word of a simple command after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShellWord {
    /// The word without quotes and escapes; expansions appear as written (`$X`, `$(…)`).
    pub(crate) text: String,
    /// Holds an expansion whose value is unknown before running (`$X`, `$(…)`, `~user`).
    pub(crate) dynamic: bool,
}

impl ShellWord {
    fn plain(s: &str) -> ShellWord {
        ShellWord {
            text: s.to_string(),
            dynamic: false,
        }
    }
}

/// A file a subcommand reads or writes, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A static path (may be relative, start with `~`, or hold glob characters).
    Path(String),
    /// A path only known when the command runs.
    Dynamic,
}

/// One simple command the script would run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sub {
    /// The command as shown to humans (`toolrt explain`): words joined by spaces.
    pub(crate) display: String,
    /// Texts deny and ask rules are matched against: the command past every assignment, then
    /// with each wrapper peeled (`env`, `sudo`, `timeout`, …) and absolute programs as basenames.
    pub(crate) deny_views: Vec<String>,
    /// The text allow rules match: past safe assignments and strippable wrappers. `None` when an
    /// assignment that is not known to be safe precedes the command.
    pub(crate) allow_view: Option<String>,
    /// `find -exec/-delete` or an exec wrapper: a rule with a wildcard never allows it.
    pub(crate) prefix_forbidden: bool,
    /// In the read-only set (SEMANTICS.md §3.3), ignoring redirects.
    pub(crate) read_only: bool,
    /// A shell (`sh -c`, `eval`) whose script was analysed into its own subcommands, so this one
    /// needs no allow of its own.
    pub(crate) transparent: bool,
    /// Cannot be analysed: the program is an expansion, a script is dynamic, …
    pub(crate) opaque: bool,
    /// Redirect targets written (`>`, `>>`, `&>`, `>|`, `<>`); `/dev/null` is left out.
    pub(crate) writes: Vec<Target>,
    /// Files read: input redirects and path arguments of file readers (`cat`, `grep`, …).
    pub(crate) reads: Vec<Target>,
    /// Paths of an acceptEdits file command (`mkdir touch rm rmdir mv cp sed`), when the allow
    /// view is one.
    pub(crate) fs_paths: Option<Vec<Target>>,
    /// Operands of `rm`/`rmdir`, found even through wrappers.
    pub(crate) rm_targets: Vec<Target>,
    /// Operands of a command that writes or removes files (`cp`, `tee`, `rm`, `sed -i`, …), found
    /// through wrappers: checked against protected paths even when a rule allows the command.
    pub(crate) fs_writes: Vec<Target>,
    /// Reads whole directory trees (`grep -r`, `rg`): with Read deny rules it cannot be checked.
    pub(crate) recursive_read: bool,
    /// The program after every wrapper is peeled.
    pub(crate) core_program: String,
}

/// The analysis of one command string.
#[derive(Debug, Clone, Default)]
pub(crate) struct Analysis {
    /// Every simple command, in source order (nested ones after their parent).
    pub(crate) subs: Vec<Sub>,
    /// The command (or a script inside it) does not parse.
    pub(crate) parse_failed: bool,
    /// The script changes directory, so relative paths cannot be placed.
    pub(crate) cd_seen: bool,
}

impl Analysis {
    /// Whether anything in it cannot be analysed.
    pub(crate) fn unanalysable(&self) -> bool {
        self.parse_failed || self.subs.iter().any(|s| s.opaque)
    }
}

/// Parses and analyses a command.
pub(crate) fn analyse(command: &str) -> Analysis {
    let mut a = Analysis::default();
    script(command, 0, &mut a);
    a.cd_seen = a
        .subs
        .iter()
        .any(|s| matches!(s.core_program.as_str(), "cd" | "pushd" | "popd"));
    a
}

/// Whether a command may run concurrently with others: it parses, every subcommand is in the
/// read-only set (SEMANTICS.md §3.3) and nothing is redirected to a file other than `/dev/null`.
pub fn is_concurrency_safe(command: &str) -> bool {
    let a = analyse(command);
    !a.unanalysable()
        && !a.subs.is_empty()
        && a.subs
            .iter()
            .all(|s| (s.read_only || s.transparent) && s.writes.is_empty())
}

fn opaque_sub(a: &mut Analysis, why: &str) {
    a.subs.push(Sub {
        display: why.to_string(),
        opaque: true,
        ..Sub::default()
    });
}

fn script(src: &str, depth: usize, a: &mut Analysis) {
    if depth > MAX_DEPTH {
        opaque_sub(a, "(nested too deeply)");
        return;
    }
    if let Some(commands) = fast_script(src) {
        for words in commands {
            simple(Vec::new(), words, Vec::new(), depth, a);
        }
        return;
    }
    if too_deep(src) {
        // brush-parser recurses per nesting level: refuse before it can overflow the stack (an
        // abort, which `catch_unwind` cannot stop).
        a.parse_failed = true;
        return;
    }
    let parsed = std::panic::catch_unwind(|| {
        let opts = brush_parser::ParserOptions::default();
        brush_parser::Parser::new(std::io::BufReader::new(src.as_bytes()), &opts).parse_program()
    });
    match parsed {
        Ok(Ok(program)) => {
            for list in &program.complete_commands {
                compound_list(list, depth, a);
            }
        }
        _ => a.parse_failed = true,
    }
}

/// The common case without the full parser: simple commands of plain words (letters, digits and
/// `-_./=:,@+%^*?[]`) joined by `&&`, `||`, `|`, `|&`, `;` or `&`, with no quotes, expansions,
/// redirects, newlines or reserved words. In that subset the shell grammar is just "words
/// between operators"; anything else (or anything odd, like an empty command) goes to the real
/// parser, which also reports the syntax errors.
fn fast_script(src: &str) -> Option<Vec<Vec<ShellWord>>> {
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"-_./=:,@+%^*?[]".contains(&b);
    let bytes = src.as_bytes();
    let mut commands: Vec<Vec<ShellWord>> = Vec::new();
    let mut current: Vec<ShellWord> = Vec::new();
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
            current.push(ShellWord::plain(&src[start..i]));
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
    Some(commands)
}

/// Deepest bracket nesting (`(`, `{`, `[`, quotes ignored) and most backticks handed to the parser.
const MAX_NESTING: usize = 40;

fn too_deep(src: &str) -> bool {
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

const RESERVED: [&str; 22] = [
    "if", "then", "else", "elif", "fi", "for", "in", "do", "done", "while", "until", "case",
    "esac", "function", "select", "time", "coproc", "[[", "]]", "!", "{", "}",
];

fn compound_list(list: &ast::CompoundList, depth: usize, a: &mut Analysis) {
    for item in &list.0 {
        for (_, pipeline) in item.0.iter() {
            for cmd in &pipeline.seq {
                command(cmd, depth, a);
            }
        }
    }
}

fn command(cmd: &ast::Command, depth: usize, a: &mut Analysis) {
    match cmd {
        ast::Command::Simple(sc) => simple_command(sc, depth, a),
        ast::Command::Compound(c, redirects) => {
            compound(c, depth, a);
            redirect_sub(redirects.as_ref(), depth, a);
        }
        ast::Command::Function(f) => {
            compound(&f.body.0, depth, a);
            redirect_sub(f.body.1.as_ref(), depth, a);
        }
        ast::Command::ExtendedTest(t, redirects) => {
            test_expr(&t.expr, depth, a);
            redirect_sub(redirects.as_ref(), depth, a);
        }
    }
}

/// Redirects on a compound command become a subcommand with no program of its own.
fn redirect_sub(redirects: Option<&ast::RedirectList>, depth: usize, a: &mut Analysis) {
    if let Some(list) = redirects {
        let items: Vec<&ast::IoRedirect> = list.0.iter().collect();
        simple(Vec::new(), Vec::new(), items, depth, a);
    }
}

fn compound(c: &ast::CompoundCommand, depth: usize, a: &mut Analysis) {
    match c {
        ast::CompoundCommand::BraceGroup(g) => compound_list(&g.list, depth, a),
        ast::CompoundCommand::Subshell(s) => compound_list(&s.list, depth, a),
        ast::CompoundCommand::ForClause(f) => {
            for w in f.values.iter().flatten() {
                word(&w.value, depth, a);
            }
            compound_list(&f.body.list, depth, a);
        }
        ast::CompoundCommand::CaseClause(c) => {
            word(&c.value.value, depth, a);
            for item in &c.cases {
                for p in &item.patterns {
                    word(&p.value, depth, a);
                }
                if let Some(list) = &item.cmd {
                    compound_list(list, depth, a);
                }
            }
        }
        ast::CompoundCommand::IfClause(i) => {
            compound_list(&i.condition, depth, a);
            compound_list(&i.then, depth, a);
            for e in i.elses.iter().flatten() {
                if let Some(c) = &e.condition {
                    compound_list(c, depth, a);
                }
                compound_list(&e.body, depth, a);
            }
        }
        ast::CompoundCommand::WhileClause(w) | ast::CompoundCommand::UntilClause(w) => {
            compound_list(&w.0, depth, a);
            compound_list(&w.1.list, depth, a);
        }
        ast::CompoundCommand::Arithmetic(e) => arithmetic(&e.expr.value, a),
        ast::CompoundCommand::ArithmeticForClause(f) => {
            for e in [&f.initializer, &f.condition, &f.updater]
                .into_iter()
                .flatten()
            {
                arithmetic(&e.value, a);
            }
            compound_list(&f.body.list, depth, a);
        }
        ast::CompoundCommand::Coprocess(c) => command(&c.body, depth, a),
    }
}

/// Arithmetic runs nothing unless it holds a substitution, which we do not analyse there.
fn arithmetic(expr: &str, a: &mut Analysis) {
    if expr.contains("$(") || expr.contains('`') {
        opaque_sub(a, "(substitution inside arithmetic)");
    }
}

fn test_expr(e: &ast::ExtendedTestExpr, depth: usize, a: &mut Analysis) {
    match e {
        ast::ExtendedTestExpr::And(x, y) | ast::ExtendedTestExpr::Or(x, y) => {
            test_expr(x, depth, a);
            test_expr(y, depth, a);
        }
        ast::ExtendedTestExpr::Not(x) | ast::ExtendedTestExpr::Parenthesized(x) => {
            test_expr(x, depth, a)
        }
        ast::ExtendedTestExpr::UnaryTest(_, w) => {
            word(&w.value, depth, a);
        }
        ast::ExtendedTestExpr::BinaryTest(_, w1, w2) => {
            word(&w1.value, depth, a);
            word(&w2.value, depth, a);
        }
    }
}

fn simple_command(sc: &ast::SimpleCommand, depth: usize, a: &mut Analysis) {
    let mut assigns = Vec::new();
    let mut words = Vec::new();
    let mut redirects = Vec::new();
    let mut item = |it: &ast::CommandPrefixOrSuffixItem,
                    in_prefix: bool,
                    words: &mut Vec<ShellWord>,
                    a: &mut Analysis| match it {
        ast::CommandPrefixOrSuffixItem::IoRedirect(r) => redirects.push(r.clone()),
        ast::CommandPrefixOrSuffixItem::Word(w) => words.push(word(&w.value, depth, a)),
        ast::CommandPrefixOrSuffixItem::AssignmentWord(asg, w) => {
            match &asg.value {
                ast::AssignmentValue::Scalar(v) => {
                    word(&v.value, depth, a);
                }
                ast::AssignmentValue::Array(items) => {
                    for (k, v) in items {
                        if let Some(k) = k {
                            word(&k.value, depth, a);
                        }
                        word(&v.value, depth, a);
                    }
                }
            }
            let name = match &asg.name {
                ast::AssignmentName::VariableName(n) => n.clone(),
                ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
            };
            if in_prefix {
                assigns.push((name, w.value.clone()));
            } else {
                words.push(ShellWord {
                    text: w.value.clone(),
                    dynamic: w.value.contains('$') || w.value.contains('`'),
                });
            }
        }
        ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
            compound_list(&sub.list, depth + 1, a);
            words.push(ShellWord {
                text: "<(…)".into(),
                dynamic: true,
            });
        }
    };
    if let Some(prefix) = &sc.prefix {
        for it in &prefix.0 {
            item(it, true, &mut words, a);
        }
    }
    if let Some(w) = &sc.word_or_name {
        words.push(word(&w.value, depth, a));
    }
    if let Some(suffix) = &sc.suffix {
        for it in &suffix.0 {
            item(it, false, &mut words, a);
        }
    }
    let refs: Vec<&ast::IoRedirect> = redirects.iter().collect();
    simple(assigns, words, refs, depth, a);
}

/// Quote removal for one word; substitutions inside it are analysed as scripts of their own.
fn word(raw: &str, depth: usize, a: &mut Analysis) -> ShellWord {
    let opts = brush_parser::ParserOptions::default();
    let pieces = match std::panic::catch_unwind(|| brush_parser::word::parse(raw, &opts)) {
        Ok(Ok(p)) => p,
        _ => {
            opaque_sub(a, "(unparseable word)");
            return ShellWord {
                text: raw.to_string(),
                dynamic: true,
            };
        }
    };
    let mut out = ShellWord {
        text: String::new(),
        dynamic: false,
    };
    pieces_into(&pieces, raw, depth, a, &mut out);
    out
}

fn pieces_into(
    pieces: &[WordPieceWithSource],
    raw: &str,
    depth: usize,
    a: &mut Analysis,
    out: &mut ShellWord,
) {
    let source = |p: &WordPieceWithSource| {
        raw.get(p.start_index..p.end_index)
            .unwrap_or("$…")
            .to_string()
    };
    for p in pieces {
        match &p.piece {
            WordPiece::Text(s) | WordPiece::SingleQuotedText(s) => out.text.push_str(s),
            WordPiece::AnsiCQuotedText(s) => {
                // `$'\x72m'` is `rm`: escapes here are not decoded, so treat them as unknown.
                if s.contains('\\') {
                    out.dynamic = true;
                }
                out.text.push_str(s);
            }
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                pieces_into(inner, raw, depth, a, out);
            }
            WordPiece::EscapeSequence(s) => {
                let rest = s.strip_prefix('\\').unwrap_or(s);
                if rest != "\n" {
                    out.text.push_str(rest);
                }
            }
            WordPiece::TildeExpansion(t) => {
                out.text.push('~');
                if !matches!(t, TildeExpr::Home) {
                    out.dynamic = true;
                }
            }
            WordPiece::ParameterExpansion(pe) => {
                out.dynamic = true;
                let text = source(p);
                parameter_expr(pe, a);
                out.text.push_str(&text);
            }
            WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
                out.dynamic = true;
                script(s, depth + 1, a);
                out.text.push_str(&source(p));
            }
            WordPiece::ArithmeticExpression(e) => {
                out.dynamic = true;
                arithmetic(&e.value, a);
                out.text.push_str(&source(p));
            }
        }
    }
}

/// Values inside `${X:-…}` and friends may hold substitutions of their own.
fn parameter_expr(pe: &ParameterExpr, a: &mut Analysis) {
    let text = format!("{pe:?}");
    if text.contains("$(") || text.contains('`') || text.contains("<(") || text.contains(">(") {
        // The value strings sit in a dozen variants; rather than miss one, refuse to guess.
        opaque_sub(a, "(substitution inside a parameter expansion)");
    }
}

/// Variables known not to change what a command does.
fn safe_assignment(name: &str) -> bool {
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

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

fn join(words: &[ShellWord]) -> String {
    let mut s = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&w.text);
    }
    s
}

/// Builds the subcommand for one simple command and any scripts it runs (`sh -c`, `eval`, …).
fn simple(
    assigns: Vec<(String, String)>,
    mut words: Vec<ShellWord>,
    redirects: Vec<&ast::IoRedirect>,
    depth: usize,
    a: &mut Analysis,
) {
    let mut sub = Sub::default();
    for r in redirects {
        redirect(r, depth, a, &mut sub);
    }
    // The fast path cannot tell assignments from words; the parser can. Treat leading
    // NAME=value words the same either way.
    let mut assigns = assigns;
    while words
        .first()
        .is_some_and(|w| !w.dynamic && is_assignment(&w.text))
    {
        let w = words.remove(0);
        let (n, v) = w.text.split_once('=').unwrap_or((&w.text, ""));
        assigns.push((n.to_string(), v.to_string()));
    }
    let assign_text: Vec<String> = assigns.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let all_safe = assigns.iter().all(|(n, _)| safe_assignment(n));
    let mut display = assign_text.join(" ");
    if !words.is_empty() {
        if !display.is_empty() {
            display.push(' ');
        }
        display.push_str(&join(&words));
    }
    sub.display = display;

    if words.is_empty() {
        // Only assignments and/or redirects. A bare assignment of an unknown variable (PATH,
        // LD_PRELOAD, …) changes later commands, so it needs a rule.
        sub.read_only = all_safe;
        if !all_safe {
            sub.allow_view = Some(sub.display.clone());
            sub.deny_views.push(sub.display.clone());
        }
        a.subs.push(sub);
        return;
    }
    let name = &words[0].text;
    let globbed = name.contains(['*', '?', '{'])
        || (name.contains('[') && name.contains(']') && name.len() > 2);
    if words[0].dynamic || globbed {
        // The program is only known after expansion (`$X`, `$(…)`, `r*`, `{rm,-rf,x}`).
        sub.opaque = true;
        a.subs.push(sub);
        return;
    }

    // Deny views: peel every wrapper.
    let mut nested: Vec<String> = Vec::new();
    let mut opaque = false;
    let mut view: &[ShellWord] = &words;
    let mut core: &[ShellWord] = &words;
    for _ in 0..10 {
        if view.is_empty() {
            break;
        }
        push_view(&mut sub.deny_views, view);
        core = view;
        let prog = basename(&view[0].text);
        if let Some(s) = shell_script(prog, &view[1..]) {
            match s {
                Some(text) => nested.push(text),
                None => opaque = true,
            }
            break;
        }
        if prog == "find" {
            for cmd in find_execs(&view[1..]) {
                nested_words(cmd, &mut nested);
            }
        }
        match peel_for_deny(prog, &view[1..]) {
            Some(rest) => view = rest,
            None => break,
        }
        if prog == "watch" && !view.is_empty() {
            // watch hands its arguments to `sh -c`.
            nested.push(join(view));
        }
    }
    sub.core_program = core
        .first()
        .map(|w| basename(&w.text).to_string())
        .unwrap_or_default();
    // A shell reading its script from stdin, or sourcing a substitution, runs code we never see.
    let core_args = core.get(1..).unwrap_or(&[]);
    let is_shell = matches!(
        sub.core_program.as_str(),
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "ash" | "fish"
    );
    if is_shell
        && shell_script(&sub.core_program, core_args).is_none()
        && core_args.iter().all(|w| w.text.starts_with('-'))
    {
        opaque = true;
    }
    if matches!(sub.core_program.as_str(), "source" | ".")
        && core_args.first().is_some_and(|w| w.dynamic)
    {
        opaque = true;
    }

    // Allow view: only past safe assignments and the strippable wrappers.
    let mut allow: &[ShellWord] = &words;
    while let Some(rest) = allow
        .first()
        .and_then(|w| peel_for_allow(&w.text, &allow[1..]))
    {
        allow = rest;
    }
    if !allow.is_empty() {
        let prog = allow[0].text.as_str();
        sub.prefix_forbidden = matches!(prog, "watch" | "setsid" | "ionice" | "flock")
            || (prog == "find" && find_writes(&allow[1..]));
        if all_safe {
            sub.allow_view = Some(join(allow));
            sub.read_only = read_only(allow);
        }
        if shell_script(prog, &allow[1..]).is_some() {
            sub.transparent = all_safe && !opaque;
        }
        if matches!(
            prog,
            "mkdir" | "touch" | "rm" | "rmdir" | "mv" | "cp" | "sed"
        ) {
            sub.fs_paths = Some(operands(prog, &allow[1..]));
        }
    }
    if is_file_reader(&sub.core_program) {
        sub.reads.extend(operands(&sub.core_program, &core[1..]));
    }
    if matches!(
        sub.core_program.as_str(),
        "mkdir"
            | "touch"
            | "rm"
            | "rmdir"
            | "mv"
            | "cp"
            | "sed"
            | "tee"
            | "ln"
            | "install"
            | "chmod"
            | "chown"
            | "truncate"
            | "dd"
            | "rsync"
            | "unlink"
    ) {
        let in_place = core[1..]
            .iter()
            .any(|w| w.text.starts_with("-i") || w.text.starts_with("--in-place"));
        if sub.core_program != "sed" || in_place {
            sub.fs_writes = operands(&sub.core_program, &core[1..]);
        }
        if sub.core_program == "dd" {
            sub.fs_writes = core[1..]
                .iter()
                .filter_map(|w| w.text.strip_prefix("of="))
                .map(|p| Target::Path(p.to_string()))
                .collect();
        }
    }
    sub.recursive_read = match sub.core_program.as_str() {
        "grep" | "egrep" | "fgrep" => core[1..].iter().any(|w| {
            let t = w.text.as_str();
            t == "--recursive"
                || t == "--dereference-recursive"
                || t.starts_with("--directories")
                || (t.starts_with('-') && !t.starts_with("--") && t.contains(['r', 'R']))
        }),
        "rg" | "ag" | "ack" => true,
        _ => false,
    };
    if matches!(sub.core_program.as_str(), "rm" | "rmdir") {
        sub.rm_targets = operands("rm", &core[1..]);
    }
    sub.opaque = opaque;
    a.subs.push(sub);
    for text in nested {
        script(&text, depth + 1, a);
    }
}

fn push_view(views: &mut Vec<String>, words: &[ShellWord]) {
    let text = join(words);
    if !views.contains(&text) {
        views.push(text);
    }
    // `/bin/rm x` and `./rm x` are matched as `rm x` too.
    if words[0].text.contains('/') {
        let mut w = words.to_vec();
        w[0].text = basename(&words[0].text).to_string();
        let text = join(&w);
        if !views.contains(&text) {
            views.push(text);
        }
    }
}

fn basename(p: &str) -> &str {
    match p.rsplit_once('/') {
        Some((_, b)) if !b.is_empty() => b,
        _ => p,
    }
}

/// For `sh -c`, `bash -c`, `zsh -c`, `eval`, `env -S`, `flock … -c`, `trap`: `Some(Some(script))`
/// when the script is static, `Some(None)` when it is not known, `None` for other commands.
fn shell_script(prog: &str, args: &[ShellWord]) -> Option<Option<String>> {
    let static_join = |ws: &[ShellWord]| {
        if ws.iter().any(|w| w.dynamic) {
            None
        } else {
            Some(join(ws))
        }
    };
    match prog {
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "ash" | "fish" => {
            let mut i = 0;
            while i < args.len() {
                let w = &args[i].text;
                if w == "--" || !w.starts_with(['-', '+']) {
                    return None;
                }
                if w == "-o" || w == "+o" || w == "-O" || w == "+O" {
                    i += 2;
                    continue;
                }
                if !w.starts_with("--") && w.contains('c') {
                    return Some(
                        args.get(i + 1)
                            .filter(|s| !s.dynamic)
                            .map(|s| s.text.clone()),
                    );
                }
                i += 1;
            }
            None
        }
        "eval" => Some(static_join(args)),
        // `env -S 'cmd args'` splits its string and runs it.
        "env" => {
            let i = args
                .iter()
                .position(|w| w.text == "-S" || w.text == "--split-string")?;
            Some(
                args.get(i + 1)
                    .filter(|w| !w.dynamic)
                    .map(|w| w.text.clone()),
            )
        }
        "trap" => args.first().map(|w| {
            if w.dynamic {
                None
            } else {
                Some(w.text.clone())
            }
        }),
        _ => None,
    }
}

/// Commands run by `find -exec/-execdir/-ok/-okdir … ;`.
fn find_execs(args: &[ShellWord]) -> Vec<&[ShellWord]> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if matches!(
            args[i].text.as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        ) {
            let start = i + 1;
            let mut end = start;
            while end < args.len() && !matches!(args[end].text.as_str(), ";" | "+") {
                end += 1;
            }
            out.push(&args[start..end]);
            i = end;
        }
        i += 1;
    }
    out
}

fn nested_words(cmd: &[ShellWord], nested: &mut Vec<String>) {
    if !cmd.is_empty() {
        // Re-quote each word so the nested parse sees the same words.
        let text: Vec<String> = cmd.iter().map(|w| quote(&w.text)).collect();
        nested.push(text.join(" "));
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn find_writes(args: &[ShellWord]) -> bool {
    args.iter().any(|w| {
        matches!(
            w.text.as_str(),
            "-exec"
                | "-execdir"
                | "-ok"
                | "-okdir"
                | "-delete"
                | "-fprint"
                | "-fprint0"
                | "-fprintf"
                | "-fls"
        )
    })
}

/// Skips options of a wrapper; `with_value` lists options whose value is the next word.
fn skip_options<'a>(args: &'a [ShellWord], with_value: &[&str]) -> &'a [ShellWord] {
    let mut i = 0;
    while i < args.len() {
        let w = args[i].text.as_str();
        if w == "--" {
            return &args[i + 1..];
        }
        if !w.starts_with('-') || w == "-" {
            break;
        }
        i += if with_value.contains(&w) { 2 } else { 1 };
    }
    args.get(i..).unwrap_or(&[])
}

/// Peels one wrapper for deny and ask rules, which look through everything that runs a command.
fn peel_for_deny<'a>(prog: &str, args: &'a [ShellWord]) -> Option<&'a [ShellWord]> {
    let rest = match prog {
        "timeout" => {
            let r = skip_options(args, &["-k", "-s", "--kill-after", "--signal"]);
            r.get(1..).unwrap_or(&[])
        }
        "time" => skip_options(args, &["-f", "-o", "--format", "--output"]),
        "nice" => skip_options(args, &["-n", "--adjustment"]),
        "nohup" | "builtin" | "noglob" | "exec" => skip_options(args, &["-a"]),
        "stdbuf" => skip_options(args, &["-i", "-o", "-e"]),
        "command" => {
            if args
                .first()
                .is_some_and(|w| w.text == "-v" || w.text == "-V")
            {
                return None;
            }
            skip_options(args, &[])
        }
        "xargs" => skip_options(
            args,
            &[
                "-I",
                "-i",
                "-n",
                "-P",
                "-L",
                "-l",
                "-d",
                "-E",
                "-e",
                "-s",
                "-a",
                "--max-args",
                "--max-procs",
                "--delimiter",
                "--arg-file",
            ],
        ),
        "env" => {
            let mut r = skip_options(
                args,
                &["-u", "-C", "-S", "--unset", "--chdir", "--split-string"],
            );
            while r.first().is_some_and(|w| is_assignment(&w.text)) {
                r = &r[1..];
            }
            r
        }
        "sudo" | "doas" => skip_options(
            args,
            &[
                "-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-c",
            ],
        ),
        "watch" => skip_options(
            args,
            &["-n", "-d", "--interval", "--differences", "-q", "--equexit"],
        ),
        "setsid" | "busybox" => skip_options(args, &[]),
        "ionice" => skip_options(
            args,
            &["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"],
        ),
        "flock" => {
            let r = skip_options(args, &["-w", "-E", "--timeout", "--conflict-exit-code"]);
            // flock [options] FILE COMMAND…
            r.get(1..).unwrap_or(&[])
        }
        _ => return None,
    };
    Some(rest)
}

/// Peels one wrapper for allow rules: only those that do not change what runs.
fn peel_for_allow<'a>(prog: &str, args: &'a [ShellWord]) -> Option<&'a [ShellWord]> {
    let rest = match prog {
        "timeout" => {
            let r = skip_options(args, &["-k", "-s", "--kill-after", "--signal"]);
            r.get(1..)?
        }
        // `time -o FILE` writes a file: only `-p` is harmless.
        "time" => {
            let r = skip_options(args, &[]);
            let skipped = &args[..args.len() - r.len()];
            if !skipped.iter().all(|w| w.text == "-p" || w.text == "--") {
                return None;
            }
            r
        }
        "nice" => {
            if args.first().is_some_and(|w| w.text == "-n") {
                args.get(2..)?
            } else if args
                .first()
                .is_some_and(|w| w.text.starts_with('-') && w.text[1..].parse::<i32>().is_ok())
            {
                &args[1..]
            } else {
                args
            }
        }
        "nohup" | "builtin" | "noglob" => args,
        "stdbuf" => skip_options(args, &["-i", "-o", "-e"]),
        "command" => match args.first().map(|w| w.text.as_str()) {
            Some("-v") | Some("-V") => return None,
            Some("-p") => &args[1..],
            _ => args,
        },
        "xargs" => {
            if args.first().is_some_and(|w| w.text.starts_with('-')) {
                return None;
            }
            args
        }
        _ => return None,
    };
    if rest.is_empty() || rest[0].dynamic {
        return None;
    }
    Some(rest)
}

/// The read-only set of docs/SEMANTICS.md §3.3, exactly.
fn read_only(words: &[ShellWord]) -> bool {
    let Some(first) = words.first() else {
        return false;
    };
    let args = &words[1..];
    match first.text.as_str() {
        "ls" | "cat" | "echo" | "pwd" | "head" | "tail" | "grep" | "wc" | "which" | "diff"
        | "stat" | "du" | "cd" => true,
        "find" => !find_writes(args),
        "git" => git_read_only(args),
        _ => false,
    }
}

fn git_read_only(args: &[ShellWord]) -> bool {
    let mut i = 0;
    // Global options (`-C`, `-c core.pager=…`) can redirect or run anything: only --no-pager.
    while args.get(i).is_some_and(|w| w.text == "--no-pager") {
        i += 1;
    }
    let Some(sub) = args.get(i) else { return false };
    let rest = &args[i + 1..];
    let writes_file = rest.iter().any(|w| {
        w.text.starts_with("--output")
            || w.text.starts_with("-O")
            || w.text.starts_with("--open-files-in-pager")
    });
    if writes_file {
        return false;
    }
    match sub.text.as_str() {
        "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "ls-tree" | "blame"
        | "shortlog" | "describe" | "cat-file" | "grep" => true,
        "branch" => rest.iter().all(|w| {
            matches!(
                w.text.as_str(),
                "-a" | "-r"
                    | "-v"
                    | "-vv"
                    | "-l"
                    | "--list"
                    | "--all"
                    | "--remotes"
                    | "--show-current"
                    | "--verbose"
                    | "--no-color"
                    | "--color"
            )
        }),
        "remote" => rest.iter().all(|w| w.text == "-v" || w.text == "--verbose"),
        _ => false,
    }
}

/// Programs whose path operands are file reads (for Read deny rules). Deny-only, so generous.
const FILE_READERS: &[&str] = &[
    "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "sed", "awk", "gawk",
    "nl", "tac", "od", "xxd", "hexdump", "strings", "base64", "diff", "sort", "cut", "cmp", "comm",
    "paste", "uniq", "wc", "source", ".", "cp", "mv", "ln", "install", "rsync", "scp", "tar",
    "zip", "gzip", "bzip2", "xz", "openssl", "gpg", "curl", "wget",
];

fn is_file_reader(prog: &str) -> bool {
    FILE_READERS.contains(&prog)
}

/// Operands (non-option words) of a command; the script/pattern of `sed`, `grep`, `rg`, `awk`
/// is skipped unless given with `-e`/`-f`.
fn operands(prog: &str, args: &[ShellWord]) -> Vec<Target> {
    let first_is_program = match prog {
        "grep" | "egrep" | "fgrep" | "rg" => !args.iter().any(|w| {
            w.text.starts_with("-e")
                || w.text.starts_with("-f")
                || w.text.starts_with("--regexp")
                || w.text.starts_with("--file")
        }),
        "sed" => !args.iter().any(|w| {
            w.text.starts_with("-e")
                || w.text.starts_with("-f")
                || w.text.starts_with("--expression")
                || w.text.starts_with("--file")
        }),
        "awk" | "gawk" => !args.iter().any(|w| w.text.starts_with("-f")),
        _ => false,
    };
    let mut skipped_program = !first_is_program;
    let mut out = Vec::new();
    let mut only_operands = false;
    for w in args {
        if !only_operands && w.text == "--" {
            only_operands = true;
            continue;
        }
        if !only_operands && w.text.starts_with('-') && w.text.len() > 1 && !w.dynamic {
            continue;
        }
        if !skipped_program {
            skipped_program = true;
            continue;
        }
        out.push(if w.dynamic {
            Target::Dynamic
        } else {
            Target::Path(w.text.clone())
        });
    }
    out
}

fn redirect(r: &ast::IoRedirect, depth: usize, a: &mut Analysis, sub: &mut Sub) {
    let target = |w: &ast::Word, a: &mut Analysis| {
        let w = word(&w.value, depth, a);
        if w.dynamic {
            Target::Dynamic
        } else {
            Target::Path(w.text)
        }
    };
    match r {
        ast::IoRedirect::File(_, kind, t) => match t {
            ast::IoFileRedirectTarget::Filename(w) => {
                let t = target(w, a);
                match kind {
                    ast::IoFileRedirectKind::Read => sub.reads.push(t),
                    ast::IoFileRedirectKind::DuplicateInput
                    | ast::IoFileRedirectKind::DuplicateOutput => {
                        if !matches!(&t, Target::Path(p) if p == "-" || p.chars().all(|c| c.is_ascii_digit()))
                        {
                            push_write(sub, t);
                        }
                    }
                    _ => push_write(sub, t),
                }
            }
            ast::IoFileRedirectTarget::Fd(_) => {}
            ast::IoFileRedirectTarget::Duplicate(w) => {
                let t = target(w, a);
                if !matches!(&t, Target::Path(p) if p == "-" || p.chars().all(|c| c.is_ascii_digit()))
                {
                    push_write(sub, t);
                }
            }
            ast::IoFileRedirectTarget::ProcessSubstitution(_, s) => {
                compound_list(&s.list, depth + 1, a)
            }
        },
        ast::IoRedirect::OutputAndError(w, _) => {
            let t = target(w, a);
            push_write(sub, t);
        }
        ast::IoRedirect::HereString(_, w) => {
            word(&w.value, depth, a);
        }
        ast::IoRedirect::HereDocument(_, doc) => {
            if doc.requires_expansion {
                let opts = brush_parser::ParserOptions::default();
                match std::panic::catch_unwind(|| {
                    brush_parser::word::parse_heredoc(&doc.doc.value, &opts)
                }) {
                    Ok(Ok(pieces)) => {
                        let mut sink = ShellWord::plain("");
                        pieces_into(&pieces, &doc.doc.value, depth, a, &mut sink);
                    }
                    _ => opaque_sub(a, "(unparseable here-document)"),
                }
            }
        }
    }
}

fn push_write(sub: &mut Sub, t: Target) {
    if !matches!(&t, Target::Path(p) if p == "/dev/null") {
        sub.writes.push(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn displays(cmd: &str) -> Vec<String> {
        analyse(cmd)
            .subs
            .iter()
            .map(|s| s.display.clone())
            .collect()
    }

    #[test]
    fn splits_table() {
        for (cmd, want) in [
            ("ls -la", vec!["ls -la"]),
            (
                "a && b || c; d | e |& f & g",
                vec!["a", "b", "c", "d", "e", "f", "g"],
            ),
            ("a\nb", vec!["a", "b"]),
            ("(a; b)", vec!["a", "b"]),
            ("{ a; b; }", vec!["a", "b"]),
            (
                "if a; then b; elif c; then d; else e; fi",
                vec!["a", "b", "c", "d", "e"],
            ),
            ("for i in 1 2; do a; done", vec!["a"]),
            ("while a; do b; done", vec!["a", "b"]),
            ("case x in y) a;; esac", vec!["a"]),
            ("echo $(a x) `b y`", vec!["a x", "b y", "echo $(a x) `b y`"]),
            ("diff <(a) <(b)", vec!["a", "b", "diff <(…) <(…)"]),
            ("r''m \\rm 'rm' \"rm\"", vec!["rm rm rm rm"]),
            ("sh -c 'a; b'", vec!["sh -c a; b", "a", "b"]),
            ("eval 'a && b'", vec!["eval a && b", "a", "b"]),
            ("cat <<EOF\n$(a)\nEOF\n", vec!["a", "cat"]),
        ] {
            assert_eq!(displays(cmd), want, "{cmd:?}");
        }
    }

    #[test]
    fn views_table() {
        for (cmd, view) in [
            ("FOO=1 rm x", "rm x"),
            ("env -i A=1 rm x", "rm x"),
            ("sudo -u root rm x", "rm x"),
            ("timeout -s KILL 5 rm x", "rm x"),
            ("nice -n 5 rm x", "rm x"),
            ("/bin/rm x", "rm x"),
            ("xargs -0 rm", "rm"),
            ("watch -n 1 rm x", "rm x"),
            ("command rm x", "rm x"),
            ("stdbuf -oL rm x", "rm x"),
            ("nohup rm x", "rm x"),
        ] {
            let a = analyse(cmd);
            assert!(
                a.subs
                    .iter()
                    .any(|s| s.deny_views.iter().any(|v| v == view)),
                "{cmd:?}: {:?}",
                a.subs
            );
        }
    }

    #[test]
    fn allow_view_table() {
        for (cmd, want) in [
            ("timeout 5 npm test", Some("npm test")),
            ("NODE_ENV=test npm test", Some("npm test")),
            ("FOO=1 npm test", None),
            ("nice -n 5 npm test", Some("npm test")),
            ("xargs npm", Some("npm")),
            ("xargs -0 npm", Some("xargs -0 npm")),
            ("command time -o f npm", Some("time -o f npm")),
            ("env npm test", Some("env npm test")),
        ] {
            let a = analyse(cmd);
            assert_eq!(a.subs[0].allow_view.as_deref(), want, "{cmd:?}");
        }
    }

    /// Pathological nesting is refused before the recursive parser can overflow a small
    /// (tokio-worker-sized) stack; an overflow would abort the whole server.
    #[test]
    fn deep_nesting_does_not_overflow() {
        let h = std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(|| {
                let n = 5000;
                for cmd in [
                    format!("{}ls{}", "(".repeat(n), ")".repeat(n)),
                    format!("{}ls{}", "$(".repeat(n), ")".repeat(n)),
                    format!("{}ls{}", "{ ".repeat(n), "; }".repeat(n)),
                    format!("{}ls{}", "if true; then ".repeat(n), " fi;".repeat(n)),
                    format!("echo {}{}", "${x:-".repeat(n), "}".repeat(n)),
                    format!("echo {}x{}", "\"$(echo ".repeat(n), ")\"".repeat(n)),
                ] {
                    assert!(!is_concurrency_safe(&cmd));
                }
                assert!(is_concurrency_safe(&("ls && ".repeat(n) + "ls")));
            })
            .unwrap();
        assert!(h.join().is_ok());
    }

    #[test]
    fn concurrency_table() {
        for (cmd, want) in [
            ("ls -la", true),
            ("git status && git log --oneline", true),
            ("cat a | grep b | wc -l", true),
            ("ls > out.txt", false),
            ("ls 2>/dev/null", true),
            ("rm x", false),
            ("find . -name x", true),
            ("find . -delete", false),
            ("git branch -D x", false),
            ("git push", false),
            ("echo $(rm x)", false),
            ("$X", false),
            ("ls (", false),
            ("", false),
        ] {
            assert_eq!(is_concurrency_safe(cmd), want, "{cmd:?}");
        }
    }
}
