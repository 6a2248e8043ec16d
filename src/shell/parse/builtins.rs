//! What one command (past its wrappers) does: shell builtins that change how later commands
//! are read or run, shells and their scripts, `git`, `find` and the program tables.

use super::*;

impl Walker {
    /// The program itself, past every wrapper.
    pub(super) fn core(&mut self, cmd: &mut Command, words: &[Word], ctx: &Ctx) {
        let prog = basename(&words[0].text).to_string();
        let prog = prog.as_str();
        let args = &words[1..];
        match prog {
            "sh" | "bash" | "dash" | "ash" | "zsh" | "ksh" | "mksh" | "fish" | "csh" | "tcsh"
            | "yash" | "posh" => self.shell(cmd, prog, args, ctx),
            "eval" => self.eval(cmd, args, ctx),
            "source" | "." => self.source(cmd, prog, args, ctx),
            "trap" => self.trap(cmd, args, ctx),
            "cd" | "pushd" | "popd" => self.cd(cmd, prog, args, ctx),
            "shopt" | "set" | "hash" | "enable" => self.shell_state(cmd, prog, args, ctx),
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
                self.declaration(cmd, prog, args);
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
                self.names_variables(cmd, prog, args, ctx)
            }
            "git" => self.git(cmd, args, ctx),
            "find" => self.find(cmd, args, ctx),
            _ => self.table_program(cmd, prog, args, ctx),
        }
    }

    /// `eval`: its words are a script, analysed as if written in place.
    fn eval(&mut self, cmd: &mut Command, args: &[Word], ctx: &Ctx) {
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

    /// `source` / `.`: the file it reads can redefine later commands.
    fn source(&mut self, cmd: &mut Command, prog: &str, args: &[Word], ctx: &Ctx) {
        self.altered =
            Some("an earlier part sources a file, which can redefine later commands".into());
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

    /// `trap`: its action is a script run at an unknown later time.
    fn trap(&mut self, cmd: &mut Command, args: &[Word], ctx: &Ctx) {
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

    /// `cd`, `pushd`, `popd`: where later commands run.
    fn cd(&mut self, cmd: &mut Command, prog: &str, args: &[Word], ctx: &Ctx) {
        self.cd_seen = true;
        let out = programs::read_only("cd", args, &ctx.cwd).unwrap_or_default();
        let dir = match (prog, out.problems.is_empty()) {
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
            kind_if(ctx, prog == "cd" && cmd.unknown.is_empty(), Kind::ReadOnly),
        );
    }

    /// `shopt`, `set`, `hash`, `enable`: builtins that change how later commands are read or
    /// which program a name runs.
    fn shell_state(&mut self, cmd: &mut Command, prog: &str, args: &[Word], ctx: &Ctx) {
        match prog {
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
            _ => {
                cmd.hide("enable can load builtins from a library or replace them");
                self.poisoned = Some("an earlier enable changes what builtins do".into());
            }
        }
    }

    /// `read`, `unset`, `printf -v`, `test -v`, …: builtins that take variable names, whose array
    /// subscripts are evaluated as arithmetic.
    fn names_variables(&mut self, cmd: &mut Command, prog: &str, args: &[Word], ctx: &Ctx) {
        let subscripted = args
            .iter()
            .any(|w| w.text.contains('[') && w.text.contains(']') && !w.text.starts_with('-'));
        let names_args = match prog {
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
            .extend(programs::deny_effects(prog, args, &ctx.cwd));
    }

    /// `find`: its start points and expression, and the commands `-exec` and friends run.
    fn find(&mut self, cmd: &mut Command, args: &[Word], ctx: &Ctx) {
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
            kind_if(ctx, ok && out.not_read_only.is_none(), Kind::ReadOnly),
        );
        for run in out.runs {
            self.find_exec(run, ctx);
        }
    }

    /// Any other program: the read-only set, the acceptEdits file commands, or the generous
    /// reader and writer lists for deny rules.
    fn table_program(&mut self, cmd: &mut Command, prog: &str, args: &[Word], ctx: &Ctx) {
        if let Some(out) = programs::read_only(prog, args, &ctx.cwd) {
            self.read_only_program(cmd, prog, args, ctx, out);
        } else if let Some(out) = programs::file_edit(prog, args, &ctx.cwd) {
            file_edit_program(cmd, prog, args, ctx, out);
        } else {
            cmd.effects
                .extend(programs::deny_effects(prog, args, &ctx.cwd));
            if let Some(why) = programs::derived(prog, args, &ctx.cwd).unseen {
                // Like `find -exec`: a rule for the program is no rule for files it names
                // itself, which may be protected.
                cmd.prefix_forbidden = true;
                if ctx.on_chain {
                    cmd.not_read_only = Some(why);
                }
            }
            self.command_options(cmd, prog, args, ctx);
            if ctx.on_chain {
                cmd.kind = Kind::Other;
            }
        }
    }

    /// A program that runs a command given in an option (`rg --pre CMD`) or in its program
    /// text (`awk`): never allowed by a prefix rule; the command is matched by deny and ask
    /// rules as a script of its own.
    fn command_options(&mut self, cmd: &mut Command, prog: &str, args: &[Word], ctx: &Ctx) {
        self.runs_commands(cmd, programs::command_options(prog, args), ctx);
    }

    /// What [`programs::command_options`] found, on the command.
    pub(super) fn runs_commands(
        &mut self,
        cmd: &mut Command,
        out: programs::CommandOptions,
        ctx: &Ctx,
    ) {
        let Some(runs) = out.runs else {
            return;
        };
        cmd.prefix_forbidden = true;
        if ctx.on_chain {
            cmd.not_read_only = Some(runs);
        }
        if let Some(h) = out.hidden {
            cmd.hide(h);
        }
        self.walk_readings(out.readings, ctx);
    }

    /// Command lines a program may run (`sort --compress-program=PROG`, `tar -I CMD`), walked
    /// as scripts of their own for deny and ask rules.
    fn walk_readings(&mut self, readings: Vec<String>, ctx: &Ctx) {
        for text in readings {
            self.pending.push(Pending {
                text,
                child: true,
                later: false,
                origin: Origin::Reading,
                cwd: ctx.cwd.clone(),
            });
        }
    }

    /// A program of the read-only set.
    fn read_only_program(
        &mut self,
        cmd: &mut Command,
        prog: &str,
        args: &[Word],
        ctx: &Ctx,
        out: programs::Outcome,
    ) {
        let ok = out.problems.is_empty();
        if ctx.on_chain {
            for p in out.problems {
                cmd.not_understood(p);
            }
        }
        if let Some(h) = out.hidden {
            cmd.hide(h);
        }
        self.walk_readings(out.readings, ctx);
        if let Some(why) = &out.not_read_only
            && ctx.on_chain
        {
            cmd.not_read_only = Some(why.clone());
        }
        cmd.effects.extend(out.effects);
        if !ok {
            // Options toolrt does not know may name files: every value counts.
            cmd.effects
                .extend(programs::deny_effects(prog, args, &ctx.cwd));
        }
        set_kind(
            cmd,
            ctx,
            kind_if(ctx, ok && out.not_read_only.is_none(), Kind::ReadOnly),
        );
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
                } else if exported && let Some(why) = env_vars::hidden_by(name) {
                    // `x=…; export npm_config_script_shell`: the value set earlier now reaches
                    // every later program.
                    cmd.hide(why);
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
        let Some((i, command_mode, stdin_mode)) = shell_flags(cmd, prog, args) else {
            return;
        };
        if command_mode {
            self.shell_command_string(cmd, prog, bash_like, args.get(i), ctx);
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

    /// The script of `sh -c SCRIPT`.
    fn shell_command_string(
        &mut self,
        cmd: &mut Command,
        prog: &str,
        bash_like: bool,
        script: Option<&Word>,
        ctx: &Ctx,
    ) {
        match script {
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
    }

    fn git(&mut self, cmd: &mut Command, args: &[Word], ctx: &Ctx) {
        use super::super::git;
        let g = git::globals(args);
        if let Some(h) = &g.hidden {
            cmd.hide(h.clone());
        }
        // `-c remote.X.url=ext::CMD`, `-c url.ext::CMD.insteadOf=…`: a transport that runs a
        // command, in git's own escaping.
        if g.configs.iter().any(|c| c.text.contains("ext::")) {
            cmd.prefix_forbidden = true;
            cmd.hide("git -c names an ext:: remote, which runs a command");
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
        let runs = programs::git_command_options(&args[sub].text, &args[sub + 1..]);
        self.runs_commands(cmd, runs, ctx);
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
                // Other subcommands: every operand and option value may be a file it reads or
                // writes (`git archive -o F`, `git mv a F`, `git checkout-index --prefix=D`,
                // `git config -f F`, `git worktree add D`), `--output=F` a file it writes.
                let mut fx = programs::deny_effects("git", &args[sub..], &dirs);
                fx.writes.extend(fx.reads.iter().cloned());
                cmd.effects.extend(fx);
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

/// One of the acceptEdits file commands.
fn file_edit_program(
    cmd: &mut Command,
    prog: &str,
    args: &[Word],
    ctx: &Ctx,
    out: programs::Outcome,
) {
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
    if programs::derived(prog, args, &ctx.cwd).unseen.is_some() {
        // A backup name only known when it runs may be a protected path.
        cmd.prefix_forbidden = true;
    }
    if prog != "sed"
        || args
            .iter()
            .any(|w| w.text.starts_with("-i") || w.text.starts_with("--in-place"))
    {
        cmd.effects
            .extend(programs::deny_effects(prog, args, &ctx.cwd));
    }
}

/// `k` for a command on the path allow rules see whose every part is understood (`ok`), else
/// `Other`.
fn kind_if(ctx: &Ctx, ok: bool, k: Kind) -> Kind {
    if ok && ctx.on_chain { k } else { Kind::Other }
}

/// A shell's options before its script: where the script (or its file) is, and whether it is
/// `-c` or `-s`; `None` when an option changes how the script is read (said on `cmd`).
fn shell_flags(cmd: &mut Command, prog: &str, args: &[Word]) -> Option<(usize, bool, bool)> {
    let mut i = 0;
    let mut command_mode = false;
    let mut stdin_mode = false;
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        if !w.literal() {
            cmd.hide(format!("a {prog} option is only known when it runs"));
            return None;
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
                    return None;
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
                        return None;
                    }
                }
                'i' => {
                    cmd.hide("an interactive shell reads startup files and expands aliases");
                    return None;
                }
                other => {
                    cmd.hide(format!("{prog} -{other} changes how the script is read"));
                    return None;
                }
            }
        }
        i += 1;
    }
    Some((i, command_mode, stdin_mode))
}
