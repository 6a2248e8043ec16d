//! Bash commands against the rules: the shell analysis ([`crate::shell`]) judged part by part.
//!
//! Every part is matched against deny and ask rules on every reading toolrt found (through
//! wrappers, quoting, variable values that may run, unknown wrapper options); where part of a
//! command is only known when it runs and a rule could match some value of it, or where code
//! runs that toolrt cannot see, the command asks in every mode (deny in `dontAsk`). A part is
//! allowed only if it is understood and its paths pass: reads inside the workspace (or allowed
//! by a Read or Edit rule), writes allowed by an Edit rule or acceptEdits inside the workspace,
//! and for git, a configuration that runs nothing the agent could have written.

use std::path::{Path, PathBuf};

use crate::paths::absolutize;
use crate::shell::gitconfig::{self, Check};
use crate::shell::paths::{self, Named};
use crate::shell::{self, Command, Cwd, Kind, Origin, Target};

use super::decision::{DecidedBy, Mode, SubcommandVerdict};
use super::path_rule::{PathSet, candidates, inside, is_git_layout_write, is_protected};
use super::policy::{Policy, Steps, sub_behavior};

/// A target's paths, resolved against the working directories it may be relative to.
enum Resolved {
    /// Absolute paths with every symlink resolution (the lexical path first).
    Paths(Vec<PathBuf>),
    /// Names no file (`/dev/null`, the command's own file descriptors).
    Nothing,
    /// Cannot be placed before the command runs, and why.
    Unknown(String),
}

/// What one part of a command comes to.
struct Judged {
    steps: Steps,
    /// Why it is not auto-allowed (for explanations).
    why_not: Option<String>,
    /// Plan mode may run it: a read whose every part is understood.
    read: bool,
}

/// Which kinds of deny and ask rules exist, worked out once when the policy is built.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RuleFlags {
    /// Any deny or ask rule could apply to a Bash command.
    restrictions: bool,
    /// Deny or ask rules on paths (Read, Edit).
    path_rules: bool,
    /// Deny or ask rules on reads.
    read_rules: bool,
    /// Deny or ask rules on WebFetch.
    network_rules: bool,
    /// Deny or ask Bash rules with a specifier.
    bash_rules: bool,
}

/// A Bash decision's cached git configuration check for one directory: valid while the
/// watched directories report no change and nothing had to be read again.
#[derive(Debug, Default)]
pub(super) struct GitChecks {
    by_dir: std::sync::Mutex<std::collections::HashMap<PathBuf, (u64, std::sync::Arc<Check>)>>,
}

impl Policy {
    /// Works out the [`RuleFlags`] once the rule lists are built.
    pub(super) fn rule_flags(&self) -> RuleFlags {
        let path_rules = !(self.deny.read_paths.is_empty()
            && self.deny.edit_paths.is_empty()
            && self.ask.read_paths.is_empty()
            && self.ask.edit_paths.is_empty());
        let network_rules = !self.deny.domains.is_empty()
            || !self.ask.domains.is_empty()
            || self.deny.tool_rule("WebFetch", None).is_some()
            || self.ask.tool_rule("WebFetch", None).is_some();
        let bash_rules = self.deny.has_bash_rules() || self.ask.has_bash_rules();
        RuleFlags {
            restrictions: bash_rules
                || self.deny.tool_rule("Bash", None).is_some()
                || self.ask.tool_rule("Bash", None).is_some()
                || path_rules
                || network_rules,
            path_rules,
            read_rules: !self.deny.read_paths.is_empty() || !self.ask.read_paths.is_empty(),
            network_rules,
            bash_rules,
        }
    }

    /// Rule steps for a command of the shell tool `tool`: every part judged on its own, then
    /// combined (any deny denies, any ask asks, allow needs all).
    pub(super) fn bash_steps(
        &self,
        tool: &str,
        text: &str,
        mode: Mode,
    ) -> (Steps, Vec<SubcommandVerdict>) {
        let a = shell::analyse(text);
        let family = Some("Bash");
        let mut s = Steps {
            deny: self.deny.tool_rule(tool, family).map(|i| self.by(i)),
            ask: self.ask.tool_rule(tool, family).map(|i| self.by(i)),
            ..Steps::default()
        };
        let tool_allow = self.allow.tool_rule(tool, family).map(|i| self.by(i));
        let mut all_allowed = a.parse_error.is_none() && !a.commands.is_empty();
        let mut all_read = all_allowed;
        let mut first_allow: Option<DecidedBy> = None;
        let mut first_why: Option<String> = None;
        let mut verdicts = Vec::with_capacity(a.commands.len() + 1);
        // Files earlier parts write: a read-only git after them must not rely on a configuration
        // check they could make stale.
        let mut written: Vec<&Target> = Vec::new();
        for c in &a.commands {
            let j = self.judge(c, mode, tool_allow.as_ref(), &written);
            if c.origin != Origin::Reading {
                written.extend(c.effects.writes.iter().chain(c.effects.redirects.iter()));
            }
            if s.deny.is_none() {
                s.deny = j.steps.deny.clone();
            }
            if s.ask.is_none() {
                s.ask = j.steps.ask.clone();
            }
            // Keep the strongest never-auto-approved reason: one bypass cannot lift wins.
            if let Some(n) = j.steps.never.clone()
                && s.never.as_ref().is_none_or(|(_, ok)| *ok)
            {
                s.never = Some(n);
            }
            let reading = c.origin != Origin::Script;
            if !reading {
                all_read &= j.read;
                match &j.steps.allow {
                    Some(by) => {
                        if first_allow.is_none()
                            || matches!(by, DecidedBy::Rule { .. })
                                && !matches!(first_allow, Some(DecidedBy::Rule { .. }))
                        {
                            first_allow = Some(by.clone());
                        }
                    }
                    None => all_allowed = false,
                }
                if first_why.is_none() && j.steps.allow.is_none() {
                    first_why = j.why_not.clone();
                }
            }
            let command = match (c.display.is_empty(), c.origin) {
                (true, _) => "(redirection)".to_string(),
                (false, Origin::Reading) => format!("(a value that may run) {}", c.display),
                (false, Origin::RunBy) => format!("(run by the part before) {}", c.display),
                (false, Origin::Script) => c.display.clone(),
            };
            let behavior = sub_behavior(&j.steps, mode, j.read || reading);
            let decided_by = j
                .steps
                .deny
                .or(j.steps.ask)
                .or(j
                    .steps
                    .never
                    .map(|(why, _)| DecidedBy::NeverAutoApproved { why }))
                .or(j.steps.allow)
                .unwrap_or(match j.why_not {
                    Some(why) => DecidedBy::NotUnderstood { why },
                    None => DecidedBy::NoRule,
                });
            verdicts.push(SubcommandVerdict {
                command,
                behavior,
                decided_by,
            });
        }
        if let Some(err) = &a.parse_error {
            let why = format!("the command cannot be parsed: {err}");
            if self.has_restrictions() && s.never.as_ref().is_none_or(|(_, ok)| *ok) {
                s.never = Some((
                    "the command cannot be parsed, so deny and ask rules cannot be checked".into(),
                    false,
                ));
            }
            verdicts.push(SubcommandVerdict {
                command: "(unparseable)".into(),
                behavior: if mode == Mode::DontAsk {
                    super::decision::Behavior::Deny
                } else {
                    super::decision::Behavior::Ask
                },
                decided_by: DecidedBy::NotUnderstood { why: why.clone() },
            });
            first_why = Some(why);
        }
        s.plan_allows = all_read;
        s.plan_denies = !all_read;
        if all_allowed {
            s.allow = first_allow.or(tool_allow);
        }
        s.fallback = Some(match first_why {
            Some(why) => DecidedBy::NotUnderstood { why },
            None => DecidedBy::NoRule,
        });
        (s, verdicts)
    }

    /// Whether any deny or ask rule could apply to a Bash command.
    pub(super) fn has_restrictions(&self) -> bool {
        self.flags.restrictions
    }

    /// One part of a command against the rules.
    fn judge(
        &self,
        c: &Command,
        mode: Mode,
        tool_allow: Option<&DecidedBy>,
        written_before: &[&Target],
    ) -> Judged {
        let mut j = Steps::default();
        let mut why: Option<String> = c
            .hidden
            .clone()
            .or_else(|| c.unknown.first().cloned())
            .or_else(|| c.not_read_only.clone());
        let mut uncertain: Option<String> = None;
        let bash_rules = self.flags.bash_rules;
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
        if bash_rules && j.deny.is_none() && !c.open_views.is_empty() {
            let could = |l: &super::policy::List| {
                l.bash_by_prog
                    .values()
                    .flatten()
                    .chain(l.bash_general.iter())
                    .any(|(p, _)| c.open_views.iter().any(|v| p.may_match(v)))
            };
            if could(&self.deny) || could(&self.ask) {
                uncertain = Some(
                    "a deny or ask rule could match it, depending on values only known when it runs"
                        .into(),
                );
            }
        }
        if let Some(h) = &c.hidden
            && self.has_restrictions()
        {
            uncertain = Some(format!("{h}, so deny and ask rules cannot be checked"));
        }

        // Every allow needs the redirect targets allowed; the read-only default also needs its
        // paths inside the workspace (and git's configuration checked); acceptEdits needs the
        // file command's paths inside the workspace.
        let mut redirects_ok = true;
        let mut reads_ok = true;
        let mut edits_ok = true;
        let note = |w: String, flag: &mut bool, why: &mut Option<String>| {
            *flag = false;
            if why.is_none() {
                *why = Some(w);
            }
        };
        let read_rules = self.flags.read_rules;
        let path_rules = self.flags.path_rules;

        // git: where it runs, and whether its configuration runs anything the agent wrote.
        let mut git_ok = true;
        let mut worktrees: Vec<PathBuf> = Vec::new();
        if let Some(g) = &c.git {
            // Also with rules to protect: code git would run from a configuration the agent
            // wrote is code no rule can be checked against.
            let restrictions = self.has_restrictions();
            let needs_check = c.kind == Kind::ReadOnly
                || restrictions
                || (read_rules && (g.shows_content || c.effects.reads.iter().any(|t| t.repo_top)));
            if needs_check {
                match self.git_check(&g.dirs) {
                    Ok((w, files)) => {
                        worktrees = w;
                        if c.kind == Kind::ReadOnly
                            && written_before
                                .iter()
                                .any(|t| self.may_touch_git(t, &worktrees, &files))
                        {
                            note(
                                "an earlier part of the command writes a file that can change what git runs"
                                    .into(),
                                &mut git_ok,
                                &mut why,
                            );
                        }
                    }
                    Err(w) => {
                        if restrictions {
                            uncertain.get_or_insert_with(|| {
                                format!("{w}, so deny and ask rules cannot be checked")
                            });
                        }
                        note(w, &mut git_ok, &mut why)
                    }
                }
            }
            if g.shows_content && read_rules {
                let roots: Vec<PathBuf> = if worktrees.is_empty() {
                    self.dirs_of(&g.dirs)
                } else {
                    worktrees.clone()
                };
                if roots.is_empty() {
                    uncertain.get_or_insert_with(|| {
                        "git shows file contents from a repository toolrt cannot place".into()
                    });
                }
                for r in &roots {
                    if let Some(i) = self
                        .deny
                        .read_paths
                        .first_under(r)
                        .or_else(|| self.ask.read_paths.first_under(r))
                    {
                        let _ = i;
                        uncertain.get_or_insert_with(|| {
                            format!(
                                "git shows file contents from {}, where a Read deny or ask rule could apply",
                                r.display()
                            )
                        });
                        note(
                            "git shows file contents a Read rule could cover".into(),
                            &mut reads_ok,
                            &mut why,
                        );
                    }
                }
            }
        }

        for t in &c.effects.reads {
            match self.resolve(t, &worktrees) {
                Resolved::Paths(cands) => {
                    let any = |set: &PathSet| cands.iter().find_map(|p| set.first_match(p));
                    if j.deny.is_none() {
                        j.deny = any(&self.deny.read_paths).map(|i| self.by(i));
                    }
                    if j.ask.is_none() {
                        j.ask = any(&self.ask.read_paths).map(|i| self.by(i));
                    }
                    if !self.readable(&cands) {
                        note(
                            format!("it reads {} outside the workspace", t.path),
                            &mut reads_ok,
                            &mut why,
                        );
                    }
                    if !self.in_workspace(&cands) {
                        edits_ok = false;
                    }
                }
                Resolved::Nothing => {}
                Resolved::Unknown(w) => {
                    if read_rules {
                        uncertain.get_or_insert_with(|| {
                            format!("it reads a file a Read rule may cover, but {w}")
                        });
                    }
                    edits_ok = false;
                    note(w, &mut reads_ok, &mut why);
                }
            }
        }
        for t in &c.effects.lists {
            match self.resolve(t, &worktrees) {
                Resolved::Paths(cands) => {
                    if !self.readable(&cands) {
                        note(
                            format!("it looks at {} outside the workspace", t.path),
                            &mut reads_ok,
                            &mut why,
                        );
                    }
                    if !self.in_workspace(&cands) {
                        edits_ok = false;
                    }
                }
                Resolved::Nothing => {}
                Resolved::Unknown(w) => {
                    edits_ok = false;
                    note(w, &mut reads_ok, &mut why);
                }
            }
        }
        for t in &c.effects.trees {
            match self.resolve(t, &worktrees) {
                Resolved::Paths(dirs) => {
                    let any = |set: &PathSet| dirs.iter().find_map(|p| set.first_match(p));
                    if j.deny.is_none() {
                        j.deny = any(&self.deny.read_paths).map(|i| self.by(i));
                    }
                    if j.ask.is_none() {
                        j.ask = any(&self.ask.read_paths).map(|i| self.by(i));
                    }
                    for d in &dirs {
                        if self.deny.read_paths.first_under(d).is_some()
                            || self.ask.read_paths.first_under(d).is_some()
                        {
                            uncertain.get_or_insert_with(|| {
                                format!(
                                    "it reads every file below {}, where a Read deny or ask rule could apply",
                                    t.path
                                )
                            });
                            note(
                                format!("it reads every file below {}", t.path),
                                &mut reads_ok,
                                &mut why,
                            );
                        }
                    }
                    if !self.readable(&dirs) {
                        note(
                            format!("it reads {} outside the workspace", t.path),
                            &mut reads_ok,
                            &mut why,
                        );
                    }
                    if !self.in_workspace(&dirs) {
                        edits_ok = false;
                    }
                }
                Resolved::Nothing => {}
                Resolved::Unknown(w) => {
                    if read_rules {
                        uncertain.get_or_insert_with(|| {
                            format!("it reads a directory tree a Read rule may cover, but {w}")
                        });
                    }
                    edits_ok = false;
                    note(w, &mut reads_ok, &mut why);
                }
            }
        }
        for (t, redirect) in c
            .effects
            .writes
            .iter()
            .map(|t| (t, false))
            .chain(c.effects.redirects.iter().map(|t| (t, true)))
        {
            match self.resolve(t, &worktrees) {
                Resolved::Paths(cands) => {
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
                    let in_ws = self.in_workspace(&cands);
                    let by_mode = mode == Mode::AcceptEdits && in_ws;
                    if redirect && !(by_rule || by_mode) {
                        note(format!("it writes {}", t.path), &mut redirects_ok, &mut why);
                    }
                    if !redirect {
                        reads_ok = false;
                        if !in_ws {
                            note(
                                format!("it writes {} outside the workspace", t.path),
                                &mut edits_ok,
                                &mut why,
                            );
                        }
                    }
                }
                Resolved::Nothing => {}
                Resolved::Unknown(w) => {
                    if path_rules {
                        uncertain.get_or_insert_with(|| {
                            format!("it writes a file an Edit rule may cover, but {w}")
                        });
                    }
                    edits_ok = false;
                    reads_ok = false;
                    if redirect {
                        note(w, &mut redirects_ok, &mut why);
                    } else if why.is_none() {
                        why = Some(w);
                    }
                }
            }
        }
        for e in &c.effects.network {
            note(
                "it opens a network connection".into(),
                &mut redirects_ok,
                &mut why,
            );
            if let Some(host) = &e.host {
                let host = host.trim_end_matches('.').to_ascii_lowercase();
                let find = |l: &super::policy::List| {
                    l.tool_rule("WebFetch", None).or_else(|| {
                        l.domains
                            .iter()
                            .find(|(p, _)| p.matches(&host))
                            .map(|&(_, i)| i)
                    })
                };
                if j.deny.is_none() {
                    j.deny = find(&self.deny).map(|i| self.by(i));
                }
                if j.ask.is_none() {
                    j.ask = find(&self.ask).map(|i| self.by(i));
                }
            }
        }
        if c.effects.network_unknown && self.flags.network_rules {
            uncertain.get_or_insert_with(|| {
                "a redirect may open a network connection to a host only known when it runs".into()
            });
        }
        if let Some(u) = uncertain
            && j.never.as_ref().is_none_or(|(_, ok)| *ok)
        {
            j.never = Some((u, false));
        }
        if c.effects.removes.iter().any(|t| self.critical(t)) {
            j.never = Some((
                "rm/rmdir of a critical path (/, its children, home, the cwd or its parents) always needs approval"
                    .into(),
                false,
            ));
        }

        let understood = c.understood();
        let plain = c.effects.writes.is_empty()
            && c.effects.redirects.is_empty()
            && c.effects.removes.is_empty()
            && c.effects.network.is_empty();
        let read = understood
            && git_ok
            && redirects_ok
            && plain
            && matches!(c.kind, Kind::ReadOnly | Kind::Transparent);
        if c.origin != Origin::Script {
            j.allow = Some(DecidedBy::Default);
            return Judged {
                steps: j,
                why_not: None,
                read: true,
            };
        }
        let command_ok = if !redirects_ok {
            None
        } else if c.kind == Kind::Transparent && c.hidden.is_none() {
            Some(DecidedBy::Default)
        } else if let Some(by) = tool_allow.filter(|_| c.hidden.is_none()) {
            Some(by.clone())
        } else if !understood {
            None
        } else if let Some(i) = c
            .allow_view
            .as_deref()
            .and_then(|v| self.allow.bash_rule(v, c.prefix_forbidden))
        {
            Some(self.by(i))
        } else if c.kind == Kind::ReadOnly && git_ok && reads_ok {
            Some(DecidedBy::Default)
        } else if c.kind == Kind::FileEdit && mode == Mode::AcceptEdits && edits_ok {
            Some(DecidedBy::Mode(Mode::AcceptEdits))
        } else {
            None
        };
        j.allow = command_ok;
        if j.allow.is_some() {
            why = None;
        }
        Judged {
            steps: j,
            why_not: why,
            read,
        }
    }

    /// Directories of a working-directory set, absolute.
    fn dirs_of(&self, cwd: &Cwd) -> Vec<PathBuf> {
        if *cwd == Cwd::Session {
            return vec![self.cwd.clone()];
        }
        cwd.dirs()
            .iter()
            .map(|d| absolutize(d, &self.cwd, &self.home))
            .collect()
    }

    /// Whether writing `t` could change what git runs: a file git reads (`files`), a name that
    /// makes or configures a git directory, or a path only known when it runs.
    fn may_touch_git(&self, t: &Target, worktrees: &[PathBuf], files: &[PathBuf]) -> bool {
        const NAMES: [&str; 11] = [
            "HEAD",
            "config",
            "config.worktree",
            "commondir",
            "packed-refs",
            "objects",
            "refs",
            "hooks",
            ".git",
            ".gitconfig",
            ".gitattributes",
        ];
        match self.resolve(t, worktrees) {
            Resolved::Paths(cands) => cands.iter().any(|p| {
                files.iter().any(|f| f == p || f.starts_with(p))
                    || p.iter()
                        .any(|c| c.to_str().is_some_and(|c| NAMES.contains(&c)))
            }),
            Resolved::Nothing => false,
            Resolved::Unknown(_) => true,
        }
    }

    /// Runs the git configuration check for every directory git may start in; the work trees
    /// found and the files git reads, or why git could run code the agent wrote.
    fn git_check(&self, dirs: &Cwd) -> Result<(Vec<PathBuf>, Vec<PathBuf>), String> {
        let dirs = self.dirs_of(dirs);
        if dirs.is_empty() {
            return Err("git runs in a directory only known when it runs".into());
        }
        let trusted = |p: &Path| {
            is_protected(p)
                || !(inside(p, &self.roots) || self.allow.edit_paths.first_match(p).is_some())
        };
        let mut worktrees = Vec::new();
        let mut all_files = Vec::new();
        for d in dirs {
            match &*self.git_check_dir(&d, &trusted) {
                Check::Safe { worktree, files } => {
                    worktrees.extend(worktree.iter().cloned());
                    all_files.extend(files.iter().cloned());
                }
                Check::Unsafe(w) => return Err(w.clone()),
            }
        }
        Ok((worktrees, all_files))
    }

    /// One directory's check, from the cache while the file system has not changed there.
    fn git_check_dir(&self, dir: &Path, trusted: &dyn Fn(&Path) -> bool) -> std::sync::Arc<Check> {
        let generation = gitconfig::generation();
        if let Some(g) = generation
            && let Ok(cache) = self.git_checks.by_dir.lock()
            && let Some((at, check)) = cache.get(dir)
            && *at == g
        {
            return check.clone();
        }
        let (check, fresh_reads) = gitconfig::check_reporting(dir, &self.git_env, trusted);
        let check = std::sync::Arc::new(check);
        // A check that read an untrusted file must read it again next time.
        if let Some(g) = generation
            && !fresh_reads
            && let Ok(mut cache) = self.git_checks.by_dir.lock()
        {
            if cache.len() > 256 {
                cache.clear();
            }
            cache.insert(dir.to_path_buf(), (g, check.clone()));
        }
        check
    }

    /// Every candidate inside the workspace or toolrt's output folder, or allowed by a Read or
    /// Edit allow rule: what the Read tool reads without asking.
    fn readable(&self, cands: &[PathBuf]) -> bool {
        self.in_output_dir(cands)
            || cands.iter().all(|p| {
                inside(p, &self.roots)
                    || self.allow.read_paths.first_match(p).is_some()
                    || self.allow.edit_paths.first_match(p).is_some()
            })
    }

    fn resolve(&self, t: &Target, worktrees: &[PathBuf]) -> Resolved {
        if !t.exact {
            return Resolved::Unknown(format!("`{}` is only known when it runs", t.path));
        }
        let absolute = t.path.starts_with('/') || t.path == "~" || t.path.starts_with("~/");
        let bases: Vec<PathBuf> = if t.repo_top && !absolute {
            if !worktrees.is_empty() {
                worktrees.to_vec()
            } else {
                // The repository's top is some directory above the cwd: every one of them.
                let mut v = Vec::new();
                for d in self.dirs_of(&t.cwd) {
                    v.extend(d.ancestors().map(Path::to_path_buf));
                }
                v
            }
        } else {
            // Absolute paths need the command's cwd too: `/proc/self/cwd/…` is relative to it.
            let dirs = self.dirs_of(&t.cwd);
            if dirs.is_empty() && absolute && !names_cwd(&t.path) {
                vec![self.cwd.clone()]
            } else {
                dirs
            }
        };
        if bases.is_empty() {
            return Resolved::Unknown(format!(
                "`{}` is relative to a directory only known when it runs",
                t.path
            ));
        }
        let mut out: Vec<PathBuf> = Vec::new();
        for base in &bases {
            let abs = match paths::name(&t.path, base, &self.home) {
                Named::File(p) => p,
                Named::Device | Named::Fd => continue,
                Named::Net { .. } => absolutize(&t.path, base, &self.home),
                Named::Unknown(w) => return Resolved::Unknown(w),
            };
            if t.glob {
                match paths::expand_glob(&abs, 256) {
                    Some(found) => {
                        for f in found {
                            for c in candidates(&f) {
                                if !out.contains(&c) {
                                    out.push(c);
                                }
                            }
                        }
                    }
                    None => {
                        return Resolved::Unknown(format!(
                            "`{}` expands to too many paths to check",
                            t.path
                        ));
                    }
                }
            } else {
                for c in candidates(&abs) {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
            }
        }
        if out.is_empty() {
            Resolved::Nothing
        } else {
            Resolved::Paths(out)
        }
    }

    /// SEMANTICS.md §3.6 critical `rm` targets: `/`, its direct children, home, the cwd and its parents.
    /// Anything only known when the command runs counts as critical.
    fn critical(&self, t: &Target) -> bool {
        if !t.exact {
            return true;
        }
        let absolute = t.path.starts_with('/') || t.path == "~" || t.path.starts_with("~/");
        let mut bases = self.dirs_of(&t.cwd);
        if bases.is_empty() && absolute && !names_cwd(&t.path) {
            bases.push(self.cwd.clone());
        }
        if bases.is_empty() {
            return true;
        }
        bases.iter().any(|base| {
            let abs = match paths::name(&t.path, base, &self.home) {
                Named::File(p) => p,
                Named::Device | Named::Fd => return false,
                Named::Net { .. } => return false,
                Named::Unknown(_) => return true,
            };
            if t.glob {
                // The directory before the first glob segment, and whether that segment
                // matches (nearly) everything.
                let mut dir = PathBuf::from("/");
                let mut wide = false;
                for comp in abs.iter().skip(1) {
                    let s = comp.to_string_lossy();
                    if s.contains(['*', '?', '[']) {
                        wide = s.chars().all(|c| matches!(c, '*' | '.'));
                        break;
                    }
                    dir.push(comp);
                }
                return dir == Path::new("/")
                    || (wide && (dir == self.home || self.cwd.starts_with(&dir)));
            }
            candidates(&abs).iter().any(|c| {
                c == Path::new("/")
                    || c.parent() == Some(Path::new("/"))
                    || *c == self.home
                    || self.cwd.starts_with(c)
            })
        })
    }
}

/// Whether an absolute path goes through the running process's own cwd (`/proc/self/cwd`).
fn names_cwd(path: &str) -> bool {
    path.starts_with("/proc/")
}
