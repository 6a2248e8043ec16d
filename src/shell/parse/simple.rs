//! One simple command: its assignments, redirects and words, the wrappers it runs through, and
//! the scripts it leaves to analyse.

use super::*;

impl Walker {
    pub(super) fn simple_command(&mut self, sc: &ast::SimpleCommand) {
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
    pub(super) fn simple(
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
    pub(super) fn value_as_command(&mut self, name: &str, value: &Word, cmd: &mut Command) {
        if let Some(why) = env_vars::hidden_by(name) {
            // Not a script: options or configuration, in a syntax of their own, that may name
            // a command (`TAR_OPTIONS='--to-command=…'`, `LESSOPEN='|…'`).
            cmd.hide(why);
            return;
        }
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
        if w.fd || (w.literal() && super::super::paths::not_a_file(&w.text)) {
            return;
        }
        if w.exact && !w.brace && !w.glob {
            if let Some((proto, host, port)) = super::super::paths::network(&w.text) {
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
                    if prog != "echo" {
                        self.stdin_arguments(cmd, &prog, &fx_words[1..], ctx);
                    }
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

    /// `xargs PROG …` without `-I`: stdin may hold any number of words, options among them
    /// (`grep -r x /`, `sort -o FILE`, `find -exec …`), not only the one operand the program
    /// tables count. So the command is never read-only, reads (and for `sort` writes) a file
    /// only known when it runs, and a program that can run a command from its options is
    /// handled as if one were there: never allowed by a prefix rule, code toolrt cannot see.
    fn stdin_arguments(&mut self, cmd: &mut Command, prog: &str, args: &[Word], ctx: &Ctx) {
        let unknown = || crate::shell::Target {
            path: "(stdin)".into(),
            exact: false,
            glob: false,
            cwd: ctx.cwd.clone(),
            repo_top: false,
        };
        if !cmd
            .effects
            .reads
            .iter()
            .any(|t| !t.exact && t.path == "(stdin)")
        {
            cmd.effects.reads.push(unknown());
        }
        if prog == "sort" {
            cmd.effects.redirects.push(unknown());
        }
        if ctx.on_chain {
            cmd.not_read_only = Some(format!(
                "`(stdin)` is only known when it runs: xargs hands {prog} words from stdin, which may be options or files"
            ));
        }
        match prog {
            // `find -exec`, `git -c core.pager=…`, `sort --compress-program=…`.
            // Options from stdin may make it name what it writes itself (`-N`, `-r`).
            p if programs::derives_names(p) => cmd.prefix_forbidden = true,
            "find" | "git" | "sort" => {
                cmd.prefix_forbidden = true;
                cmd.hide(format!(
                    "xargs may hand {prog} options from stdin that run commands"
                ));
            }
            _ => self.runs_commands(cmd, programs::command_options(prog, args), ctx),
        }
    }

    fn wrapper(&mut self, cmd: &mut Command, words: &[Word], ctx: &Ctx, peeled: wrappers::Peeled) {
        let prog = basename(&words[0].text).to_string();
        cmd.prefix_forbidden |= peeled.prefix_forbidden;
        for p in &peeled.problems {
            cmd.not_understood(p.clone());
        }
        cmd.effects.reads.extend(peeled.reads.iter().cloned());
        if peeled.strippable {
            // A wrapper that allow rules look past (`time -o FILE ls` under `Bash(ls *)`): no
            // rule covers the file it writes, which is checked as a redirect's target is.
            cmd.effects.redirects.extend(peeled.writes.iter().cloned());
        } else {
            cmd.effects.writes.extend(peeled.writes.iter().cloned());
        }
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
        // Under `xargs` without `-I`, a runner given no command of its own (`xargs env`,
        // `xargs timeout 5`, `xargs xargs`) runs the words from stdin as one.
        let no_command = peeled.inner.iter().all(|i| matches!(i, Inner::Nothing))
            || (prog == "xargs"
                && peeled.inner.iter().any(|i| {
                    matches!(i, Inner::Split(built, rest)
                        if *rest == words.len() - 1 && built.len() == 1 && built[0].text == "echo")
                }));
        if matches!(ctx.stdin_args, Some(None)) && no_command {
            cmd.hide(format!("xargs hands {prog} its command from stdin"));
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
}
