//! One part of a command against the rules: what judging it finds (deny and ask rules on its
//! words and paths, what toolrt could not check) and what allows it.

use super::*;

/// What one part of a command comes to.
pub(super) struct Judged {
    pub(super) steps: Steps,
    /// Why it is not auto-allowed (for explanations).
    pub(super) why_not: Option<String>,
    /// Plan mode may run it: a read whose every part is understood.
    pub(super) read: bool,
}

impl Judged {
    /// The part's line in an explanation: how it shows, what it comes to and what decided.
    /// `reading`: the part only computes a value (plan mode may run it).
    pub(super) fn into_verdict(self, c: &Command, mode: Mode, reading: bool) -> SubcommandVerdict {
        let command = match (c.display.is_empty(), c.origin) {
            (true, _) => "(redirection)".to_string(),
            (false, Origin::Reading) => format!("(a value that may run) {}", c.display),
            (false, Origin::RunBy) => format!("(run by the part before) {}", c.display),
            (false, Origin::Script) => c.display.clone(),
        };
        let behavior = sub_behavior(&self.steps, mode, self.read || reading);
        let steps = self.steps;
        let decided_by = (steps.deny)
            .or(steps.ask)
            .or((steps.never).map(|(why, _)| DecidedBy::NeverAutoApproved { why }))
            .or(steps.allow)
            .unwrap_or(match self.why_not {
                Some(why) => DecidedBy::NotUnderstood { why },
                None => DecidedBy::NoRule,
            });
        SubcommandVerdict {
            command,
            behavior,
            decided_by,
        }
    }
}

/// What judging one part of a command finds on the way.
struct Findings {
    steps: Steps,
    /// Why it is not auto-allowed: the first reason found.
    why: Option<String>,
    /// Why deny and ask rules cannot be fully checked (the part then asks in every mode).
    uncertain: Option<String>,
    /// Its redirect targets (and network use) are allowed.
    redirects_ok: bool,
    /// Its reads are inside the workspace or allowed, for the read-only default.
    reads_ok: bool,
    /// Its paths are inside the workspace, for acceptEdits.
    edits_ok: bool,
    /// git's configuration runs nothing the agent could have written.
    git_ok: bool,
    /// It writes a file only known when it runs: a rule with a wildcard cannot allow it.
    unnamed_write: bool,
}

/// One of the conditions an allow needs, in [`Findings`].
#[derive(Clone, Copy)]
enum Gate {
    Redirects,
    Reads,
    Edits,
    Git,
}

impl Findings {
    fn new(c: &Command) -> Self {
        Self {
            steps: Steps::default(),
            why: c
                .hidden
                .clone()
                .or_else(|| c.unknown.first().cloned())
                .or_else(|| c.not_read_only.clone()),
            uncertain: None,
            redirects_ok: true,
            reads_ok: true,
            edits_ok: true,
            git_ok: true,
            unnamed_write: false,
        }
    }

    /// `gate` is not met, because of `why` (kept if it is the first reason).
    fn fail(&mut self, gate: Gate, why: String) {
        *match gate {
            Gate::Redirects => &mut self.redirects_ok,
            Gate::Reads => &mut self.reads_ok,
            Gate::Edits => &mut self.edits_ok,
            Gate::Git => &mut self.git_ok,
        } = false;
        if self.why.is_none() {
            self.why = Some(why);
        }
    }

    /// Deny and ask rules cannot be fully checked (the first reason is kept).
    fn uncertain(&mut self, why: impl FnOnce() -> String) {
        self.uncertain.get_or_insert_with(why);
    }
}

impl Policy {
    /// One part of a command against the rules: deny and ask rules on its words and on every
    /// path it touches, what toolrt could not check, then whether anything allows it.
    pub(super) fn judge(
        &self,
        c: &Command,
        mode: Mode,
        tool_allow: Option<&DecidedBy>,
        written_before: &[&Target],
        site: &Site<'_>,
    ) -> Judged {
        let mut f = Findings::new(c);
        self.judge_words(c, &mut f);
        let worktrees = self.judge_git(c, mode, written_before, &mut f, site);
        self.judge_reads(c, &worktrees, &mut f, site);
        self.judge_writes(c, mode, &worktrees, &mut f, site);
        self.judge_moves(c, &worktrees, &mut f, site);
        self.judge_network(c, &mut f);
        if let Some(u) = f.uncertain.take()
            && f.steps.never.as_ref().is_none_or(|(_, ok)| *ok)
        {
            f.steps.never = Some((u, false));
        }
        if c.effects.removes.iter().any(|t| self.critical(t, site)) {
            f.steps.never = Some((
                "rm/rmdir of a critical path (/, its children, home, the cwd or its parents) always needs approval"
                    .into(),
                false,
            ));
        }
        self.allowed(c, mode, tool_allow, f)
    }

    /// Deny and ask Bash rules on the command's words, and whether a rule could match values
    /// only known when it runs.
    fn judge_words(&self, c: &Command, f: &mut Findings) {
        let j = &mut f.steps;
        if self.deny.has_bash_rules() {
            j.deny = c
                .deny_views
                .iter()
                .find_map(|v| self.deny.bash_rule(v, false))
                .map(|i| self.by(i));
        }
        if self.ask.has_bash_rules() {
            j.ask = c
                .deny_views
                .iter()
                .find_map(|v| self.ask.bash_rule(v, false))
                .map(|i| self.by(i));
        }
        if self.flags.bash_rules && j.deny.is_none() && !c.open_views.is_empty() {
            let could = |l: &crate::permission::policy::List| {
                l.bash_by_prog
                    .values()
                    .flatten()
                    .chain(l.bash_general.iter())
                    .any(|(p, _)| c.open_views.iter().any(|v| p.may_match(v)))
            };
            if could(&self.deny) || could(&self.ask) {
                f.uncertain = Some(
                    "a deny or ask rule could match it, depending on values only known when it runs"
                        .into(),
                );
            }
        }
        if let Some(h) = &c.hidden
            && self.has_restrictions()
        {
            f.uncertain = Some(format!("{h}, so deny and ask rules cannot be checked"));
        }
    }

    /// git: where it runs, and whether its configuration runs anything the agent wrote; the
    /// work trees it runs in (empty when not checked).
    fn judge_git(
        &self,
        c: &Command,
        mode: Mode,
        written_before: &[&Target],
        f: &mut Findings,
        site: &Site<'_>,
    ) -> Vec<PathBuf> {
        let mut worktrees: Vec<PathBuf> = Vec::new();
        let Some(g) = &c.git else {
            return worktrees;
        };
        let read_rules = self.flags.read_rules;
        // Also with rules to protect: code git would run from a configuration the agent
        // wrote is code no rule can be checked against.
        let restrictions = self.has_restrictions();
        let needs_check = c.kind == Kind::ReadOnly
            || restrictions
            || (read_rules && (g.shows_content || c.effects.reads.iter().any(|t| t.repo_top)));
        if needs_check {
            match self.git_check(&g.dirs, mode, site) {
                Ok((w, files)) => {
                    worktrees = w;
                    if c.kind == Kind::ReadOnly
                        && written_before
                            .iter()
                            .any(|t| self.may_touch_git(t, &worktrees, &files, site))
                    {
                        f.fail(
                            Gate::Git,
                            "an earlier part of the command writes a file that can change what git runs"
                                .into(),
                        );
                    }
                }
                Err(w) => {
                    if restrictions {
                        f.uncertain(|| format!("{w}, so deny and ask rules cannot be checked"));
                    }
                    f.fail(Gate::Git, w)
                }
            }
        }
        if g.shows_content && read_rules {
            let roots: Vec<PathBuf> = if worktrees.is_empty() {
                site.dirs(&g.dirs)
            } else {
                worktrees.clone()
            };
            if roots.is_empty() {
                f.uncertain(|| {
                    "git shows file contents from a repository toolrt cannot place".into()
                });
            }
            for r in &roots {
                if self
                    .deny
                    .read_paths
                    .first_under(r)
                    .or_else(|| self.ask.read_paths.first_under(r))
                    .is_some()
                {
                    f.uncertain(|| {
                        format!(
                            "git shows file contents from {}, where a Read deny or ask rule could apply",
                            r.display()
                        )
                    });
                    f.fail(
                        Gate::Reads,
                        "git shows file contents a Read rule could cover".into(),
                    );
                }
            }
        }
        worktrees
    }

    /// The files it reads, the directories it lists and the trees it reads: deny and ask Read
    /// rules, and whether each is inside the workspace.
    fn judge_reads(&self, c: &Command, worktrees: &[PathBuf], f: &mut Findings, site: &Site<'_>) {
        let read_rules = self.flags.read_rules;
        for t in &c.effects.reads {
            match self.resolve(t, worktrees, site) {
                Resolved::Paths(cands) => {
                    let any = |set: &PathSet| cands.iter().find_map(|p| set.first_match(p));
                    if f.steps.deny.is_none() {
                        f.steps.deny = any(&self.deny.read_paths).map(|i| self.by(i));
                    }
                    if f.steps.ask.is_none() {
                        f.steps.ask = any(&self.ask.read_paths).map(|i| self.by(i));
                    }
                    if !self.readable(&cands, site) {
                        f.fail(
                            Gate::Reads,
                            format!("it reads {} outside the workspace", t.path),
                        );
                    }
                    if !site.in_workspace(&cands) {
                        f.edits_ok = false;
                    }
                }
                Resolved::Nothing => {}
                Resolved::Unknown(w) => {
                    if read_rules {
                        f.uncertain(|| format!("it reads a file a Read rule may cover, but {w}"));
                    }
                    f.edits_ok = false;
                    f.fail(Gate::Reads, w);
                }
            }
        }
        for t in &c.effects.lists {
            match self.resolve(t, worktrees, site) {
                Resolved::Paths(cands) => {
                    if !self.readable(&cands, site) {
                        f.fail(
                            Gate::Reads,
                            format!("it looks at {} outside the workspace", t.path),
                        );
                    }
                    if !site.in_workspace(&cands) {
                        f.edits_ok = false;
                    }
                }
                Resolved::Nothing => {}
                Resolved::Unknown(w) => {
                    f.edits_ok = false;
                    f.fail(Gate::Reads, w);
                }
            }
        }
        for t in &c.effects.trees {
            self.judge_tree(t, worktrees, f, site);
        }
    }

    /// A directory tree it reads: any Read deny or ask rule below it applies.
    fn judge_tree(&self, t: &Target, worktrees: &[PathBuf], f: &mut Findings, site: &Site<'_>) {
        match self.resolve(t, worktrees, site) {
            Resolved::Paths(dirs) => {
                let any = |set: &PathSet| dirs.iter().find_map(|p| set.first_match(p));
                if f.steps.deny.is_none() {
                    f.steps.deny = any(&self.deny.read_paths).map(|i| self.by(i));
                }
                if f.steps.ask.is_none() {
                    f.steps.ask = any(&self.ask.read_paths).map(|i| self.by(i));
                }
                for d in &dirs {
                    if self.deny.read_paths.first_under(d).is_some()
                        || self.ask.read_paths.first_under(d).is_some()
                    {
                        f.uncertain(|| {
                            format!(
                                "it reads every file below {}, where a Read deny or ask rule could apply",
                                t.path
                            )
                        });
                        f.fail(Gate::Reads, format!("it reads every file below {}", t.path));
                    }
                }
                if !self.readable(&dirs, site) {
                    f.fail(
                        Gate::Reads,
                        format!("it reads {} outside the workspace", t.path),
                    );
                }
                if !site.in_workspace(&dirs) {
                    f.edits_ok = false;
                }
            }
            Resolved::Nothing => {}
            Resolved::Unknown(w) => {
                if self.flags.read_rules {
                    f.uncertain(|| {
                        format!("it reads a directory tree a Read rule may cover, but {w}")
                    });
                }
                f.edits_ok = false;
                f.fail(Gate::Reads, w);
            }
        }
    }

    /// The files it writes and its redirect targets: deny and ask Edit rules (and Read deny
    /// rules), protected paths, and what allows each write.
    fn judge_writes(
        &self,
        c: &Command,
        mode: Mode,
        worktrees: &[PathBuf],
        f: &mut Findings,
        site: &Site<'_>,
    ) {
        for (t, redirect) in c
            .effects
            .writes
            .iter()
            .map(|t| (t, false))
            .chain(c.effects.redirects.iter().map(|t| (t, true)))
        {
            match self.resolve(t, worktrees, site) {
                Resolved::Paths(cands) => {
                    let j = &mut f.steps;
                    let any = |set: &PathSet| cands.iter().find_map(|p| set.first_match(p));
                    if j.deny.is_none() {
                        j.deny = any(&self.deny.edit_paths)
                            .or_else(|| any(&self.deny.read_paths))
                            .map(|i| self.by(i));
                    }
                    if j.ask.is_none() {
                        j.ask = any(&self.ask.edit_paths).map(|i| self.by(i));
                    }
                    if cands
                        .iter()
                        .any(|p| is_protected(p) || is_git_layout_write(p))
                        && j.never.is_none()
                    {
                        j.never = Some((
                            "it writes to a protected path (.git, .claude, shell profiles, a git directory, …)"
                                .into(),
                            true,
                        ));
                    }
                    let by_rule = cands
                        .iter()
                        .all(|p| self.allow.edit_paths.first_match(p).is_some());
                    let in_ws = site.in_workspace(&cands);
                    let by_mode = mode == Mode::AcceptEdits && in_ws;
                    if redirect && !(by_rule || by_mode) {
                        f.fail(Gate::Redirects, format!("it writes {}", t.path));
                    }
                    if !redirect {
                        f.reads_ok = false;
                        if !in_ws {
                            f.fail(
                                Gate::Edits,
                                format!("it writes {} outside the workspace", t.path),
                            );
                        }
                    }
                }
                Resolved::Nothing => {}
                Resolved::Unknown(w) => {
                    if self.flags.path_rules {
                        f.uncertain(|| format!("it writes a file an Edit rule may cover, but {w}"));
                    }
                    // It may be a protected path (`cp a "$HOME/.bashrc"`): a prefix rule
                    // (`Bash(cp *)`) does not see where it goes, so only an exact rule allows it.
                    f.unnamed_write = true;
                    f.edits_ok = false;
                    f.reads_ok = false;
                    if redirect {
                        f.fail(Gate::Redirects, w);
                    } else if f.why.is_none() {
                        f.why = Some(w);
                    }
                }
            }
        }
    }

    /// The paths it renames: a Read or Edit deny or ask rule on a file below one would no
    /// longer cover that file under its new name, so such a rule makes the command ask.
    fn judge_moves(&self, c: &Command, worktrees: &[PathBuf], f: &mut Findings, site: &Site<'_>) {
        for t in &c.effects.moves {
            // Unknown paths are judged as writes already.
            let Resolved::Paths(dirs) = self.resolve(t, worktrees, site) else {
                continue;
            };
            let below = |d: &PathBuf| {
                [
                    &self.deny.read_paths,
                    &self.ask.read_paths,
                    &self.deny.edit_paths,
                    &self.ask.edit_paths,
                ]
                .iter()
                .any(|set| set.first_under(d).is_some())
            };
            // A file's own rules are checked as a write; only a directory has files below.
            let dir = |d: &&PathBuf| site.node.is_some() || d.is_dir();
            if dirs.iter().filter(dir).any(below) {
                f.uncertain(|| {
                    format!(
                        "it renames {}, below which a Read or Edit deny or ask rule applies",
                        t.path
                    )
                });
                f.fail(
                    Gate::Edits,
                    format!("it renames {}, which a rule covers", t.path),
                );
            }
        }
    }

    /// Network connections it opens: never without approval; deny and ask WebFetch rules on
    /// the host.
    fn judge_network(&self, c: &Command, f: &mut Findings) {
        for e in &c.effects.network {
            f.fail(Gate::Redirects, "it opens a network connection".into());
            if let Some(host) = &e.host {
                let host = host.trim_end_matches('.').to_ascii_lowercase();
                let find = |l: &crate::permission::policy::List| {
                    l.tool_rule("WebFetch", None).or_else(|| {
                        l.domains
                            .iter()
                            .find(|(p, _)| p.matches(&host))
                            .map(|&(_, i)| i)
                    })
                };
                if f.steps.deny.is_none() {
                    f.steps.deny = find(&self.deny).map(|i| self.by(i));
                }
                if f.steps.ask.is_none() {
                    f.steps.ask = find(&self.ask).map(|i| self.by(i));
                }
            }
        }
        if c.effects.network_unknown && self.flags.network_rules {
            f.uncertain(|| {
                "a redirect may open a network connection to a host only known when it runs".into()
            });
        }
    }

    /// What allows the part, given what was found: every allow needs the redirect targets
    /// allowed; the read-only default also needs its paths inside the workspace (and git's
    /// configuration checked); acceptEdits needs the file command's paths inside the workspace.
    fn allowed(
        &self,
        c: &Command,
        mode: Mode,
        tool_allow: Option<&DecidedBy>,
        mut f: Findings,
    ) -> Judged {
        let understood = c.understood();
        let plain = c.effects.writes.is_empty()
            && c.effects.redirects.is_empty()
            && c.effects.removes.is_empty()
            && c.effects.network.is_empty();
        let read = understood
            && f.git_ok
            && f.redirects_ok
            && plain
            && matches!(c.kind, Kind::ReadOnly | Kind::Transparent);
        if c.origin != Origin::Script {
            f.steps.allow = Some(DecidedBy::Default);
            return Judged {
                steps: f.steps,
                why_not: None,
                read: true,
            };
        }
        let command_ok = if !f.redirects_ok {
            None
        } else if c.kind == Kind::Transparent && c.hidden.is_none() {
            Some(DecidedBy::Default)
        } else if let Some(by) = tool_allow.filter(|_| c.hidden.is_none()) {
            Some(by.clone())
        } else if !understood {
            None
        } else if let Some(i) = c.allow_view.as_deref().and_then(|v| {
            self.allow
                .bash_rule(v, c.prefix_forbidden || f.unnamed_write)
        }) {
            Some(self.by(i))
        } else if c.kind == Kind::ReadOnly && f.git_ok && f.reads_ok {
            Some(DecidedBy::Default)
        } else if c.kind == Kind::FileEdit && mode == Mode::AcceptEdits && f.edits_ok {
            Some(DecidedBy::Mode(Mode::AcceptEdits))
        } else {
            None
        };
        f.steps.allow = command_ok;
        if f.steps.allow.is_some() {
            f.why = None;
        }
        Judged {
            steps: f.steps,
            why_not: f.why,
            read,
        }
    }
}
