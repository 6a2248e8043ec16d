//! The compiled policy and the decision order of docs/SEMANTICS.md §3.1.
//!
//! # Order
//! Per call: the PreToolUse hook verdict (a deny blocks in every mode), deny rules, ask rules,
//! a hook's ask, never-auto-approved checks (SEMANTICS.md §3.6), the mode, allow rules, built-in defaults, a
//! hook's allow, then ask. Deny beats ask beats allow whatever the rules' specificity; `dontAsk`
//! turns every ask into a deny.

mod builder;

pub(crate) use builder::PolicyBuilder;
pub use builder::PolicyError;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use globset::Candidate;
use serde_json::{Map, Value};

use super::decision::{Behavior, DecidedBy, Decision, HookVerdict, Mode, RuleKind};
use super::domain::{DomainPattern, host_of};
use super::path_rule::{
    Anchors, PathSet, candidates, glob_patterns, inside, is_git_layout_write, is_protected,
    names_own_descriptor,
};
use super::pattern::BashPattern;
use super::rule::{EDIT_TOOLS, READ_TOOLS, Rule, RuleError};
use crate::paths::absolutize;
use crate::tool::{Access, Subject};

/// One call to decide.
#[derive(Debug, Clone)]
pub(crate) struct DecisionRequest<'a> {
    /// Canonical tool name (after alias resolution).
    pub tool: &'a str,
    /// What the tool says rules need to know about it ([`crate::tool::Tool::access`]).
    pub access: Access<'a>,
    /// The input object, after coercion.
    pub input: &'a Map<String, Value>,
    /// The session's current mode.
    pub mode: Mode,
    /// The combined PreToolUse hook verdict, if any hook gave one.
    pub hook: Option<HookVerdict>,
}

/// A call's paths as the worker node that will act on them sees them: that node's workspace,
/// and what each path resolves to there (the files, and their symlinks, are on that node).
#[derive(Debug, Clone)]
pub(crate) struct Located {
    /// The node's name, for explanations.
    pub node: std::sync::Arc<str>,
    /// The node's workspace folder: for the call it is the workspace, as the cwd is here.
    pub root: PathBuf,
    /// The home folder there (`~` in a command).
    pub home: PathBuf,
    /// The call's absolute paths (a path tool's path, a command's
    /// [`crate::permission::paths_named_by`]), each with every path it resolves to through
    /// symlinks on that node, itself first. A path missing here is one toolrt cannot place.
    pub named: Vec<(PathBuf, Vec<PathBuf>)>,
    /// The session's Bash sandbox as it holds for commands run on the node (None: the session
    /// has no sandbox).
    pub sandbox: Option<std::sync::Arc<dyn crate::session::ShellSandbox>>,
}

impl Located {
    /// What `path` resolves to on the node, itself first; None if the node was not asked or
    /// could not say.
    pub(crate) fn resolved(&self, path: &Path) -> Option<&[PathBuf]> {
        (self.named.iter())
            .find(|(p, _)| p == path)
            .map(|(_, r)| r.as_slice())
    }
}

#[derive(Debug, Clone)]
struct RuleInfo {
    text: String,
    source: String,
    kind: RuleKind,
}

/// One compiled rule list (allow, ask or deny), indexed by tool.
#[derive(Debug, Default)]
pub(super) struct List {
    /// Rules without a specifier, by tool name (first one wins for reporting).
    pub(super) tool_level: HashMap<String, usize>,
    /// MCP rules with `*` in the name.
    mcp_globs: Vec<(globset::GlobMatcher, usize)>,
    /// Bash rules whose first word is literal, by that word.
    pub(super) bash_by_prog: HashMap<String, Vec<(BashPattern, usize)>>,
    /// Other Bash rules (`*` in the first word).
    pub(super) bash_general: Vec<(BashPattern, usize)>,
    pub(super) read_paths: PathSet,
    pub(super) edit_paths: PathSet,
    pub(super) domains: Vec<(DomainPattern, usize)>,
    agents: Vec<(String, usize)>,
    /// Deny and ask rules with a specifier toolrt cannot interpret (`Skill(x)`), by tool name:
    /// they apply to every call of that tool. Allow rules of that kind grant nothing.
    by_name: HashMap<String, usize>,
}

impl List {
    fn add(&mut self, rule: &Rule, idx: usize, anchors: &Anchors<'_>, is_allow: bool) {
        let tool = rule.tool();
        let Some(spec) = rule.specifier() else {
            if tool.contains('*') {
                if let Ok(g) = globset::GlobBuilder::new(tool).build() {
                    self.mcp_globs.push((g.compile_matcher(), idx));
                }
            } else {
                self.tool_level.entry(tool.to_string()).or_insert(idx);
            }
            return;
        };
        match tool {
            "Bash" => {
                let p = BashPattern::compile(spec);
                match p.first_word() {
                    Some(w) => self
                        .bash_by_prog
                        .entry(w.to_string())
                        .or_default()
                        .push((p, idx)),
                    None => self.bash_general.push((p, idx)),
                }
            }
            t if READ_TOOLS.contains(&t) => self
                .read_paths
                .add(glob_patterns(spec, anchors, is_allow), idx),
            t if EDIT_TOOLS.contains(&t) => self
                .edit_paths
                .add(glob_patterns(spec, anchors, is_allow), idx),
            "WebFetch" => {
                let host = spec.strip_prefix("domain:").unwrap_or(spec);
                self.domains.push((DomainPattern::compile(host), idx));
            }
            "Agent" | "Task" => self.agents.push((spec.to_string(), idx)),
            // Failing closed both ways: such a deny or ask covers the whole tool, such an allow
            // never approves a call it cannot check.
            t if !is_allow && !t.starts_with("mcp__") => {
                self.by_name.entry(t.to_string()).or_insert(idx);
            }
            _ => {}
        }
    }

    fn build(&mut self) -> Result<(), (usize, String)> {
        self.read_paths.build()?;
        self.edit_paths.build()
    }

    /// A rule without specifier covering `tool`: its own name, the head of its family
    /// ([`family`]: `Read` for every read-only path tool, `Edit` for every other path tool…),
    /// `Agent`/`Task` for each other, an MCP server or glob.
    pub(super) fn tool_rule(&self, tool: &str, family: Option<&str>) -> Option<usize> {
        if let Some(&i) = self.tool_level.get(tool) {
            return Some(i);
        }
        if let Some(&i) = self.by_name.get(tool) {
            return Some(i);
        }
        if let Some(&i) = family.and_then(|f| self.tool_level.get(f)) {
            return Some(i);
        }
        // `Task` is the former name of `Agent`: a rule of either name covers both.
        let other = match family.unwrap_or(tool) {
            "Agent" => Some("Task"),
            "Task" => Some("Agent"),
            _ => None,
        };
        if let Some(&i) = other.and_then(|f| self.tool_level.get(f)) {
            return Some(i);
        }
        if let Some(rest) = tool.strip_prefix("mcp__") {
            if let Some((server, _)) = rest.split_once("__")
                && let Some(&i) = self.tool_level.get(&format!("mcp__{server}"))
            {
                return Some(i);
            }
            return self
                .mcp_globs
                .iter()
                .find(|(g, _)| g.is_match(tool))
                .map(|&(_, i)| i);
        }
        None
    }

    /// The first Bash rule matching `text`; `no_wildcards` skips prefix rules.
    pub(super) fn bash_rule(&self, text: &str, no_wildcards: bool) -> Option<usize> {
        let first = text.split(' ').next().unwrap_or("");
        let bucket = self
            .bash_by_prog
            .get(first)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        bucket
            .iter()
            .chain(self.bash_general.iter())
            .find(|(p, _)| !(no_wildcards && p.has_wildcard()) && p.matches(text))
            .map(|&(_, i)| i)
    }

    pub(super) fn has_bash_rules(&self) -> bool {
        !self.bash_by_prog.is_empty() || !self.bash_general.is_empty()
    }
}

/// Where the engine stands after the rule steps, before the mode and defaults.
#[derive(Debug, Default)]
pub(super) struct Steps {
    pub(super) deny: Option<DecidedBy>,
    pub(super) ask: Option<DecidedBy>,
    /// SEMANTICS.md §3.6: why, and whether bypass may still allow it.
    pub(super) never: Option<(String, bool)>,
    /// Plan mode allows it (a read).
    pub(super) plan_allows: bool,
    /// Plan mode asks for it (it modifies).
    pub(super) plan_denies: bool,
    /// The mode itself allows it (acceptEdits inside the workspace).
    pub(super) mode_allows: bool,
    pub(super) allow: Option<DecidedBy>,
    pub(super) fallback: Option<DecidedBy>,
    /// The path tool's path and what it resolved to, as judged ([`Decision::paths`]).
    pub(super) paths: Option<Vec<PathBuf>>,
}

/// The permission policy of one session: immutable, shared, built once at start-up.
#[derive(Debug)]
pub(crate) struct Policy {
    mode: Mode,
    notices: Vec<String>,
    pub(super) cwd: PathBuf,
    pub(super) home: PathBuf,
    workspace: Vec<PathBuf>,
    /// Workspace directories, lexical and with symlinks resolved.
    pub(super) roots: Vec<PathBuf>,
    rules: Vec<RuleInfo>,
    pub(super) allow: List,
    pub(super) ask: List,
    pub(super) deny: List,
    /// toolrt's output folder, lexical and resolved (reads need no rule) …
    pub(super) output_roots: Vec<PathBuf>,
    /// … except in and above its `checkpoints` folder.
    pub(super) checkpoint_roots: Vec<PathBuf>,
    /// The environment git runs with, for the configuration check of read-only git commands.
    pub(super) git_env: crate::shell::gitconfig::GitEnv,
    /// Which kinds of deny and ask rules exist.
    pub(super) flags: super::bash::RuleFlags,
    /// Git configuration checks already made.
    pub(super) git_checks: super::bash::GitChecks,
    /// The Bash sandbox, when enabled.
    sandbox: Option<std::sync::Arc<dyn crate::session::ShellSandbox>>,
}

impl Policy {
    /// The mode a session starts in: the flag, else the last `defaultMode`, else `default`.
    pub(crate) fn starting_mode(&self) -> Mode {
        self.mode
    }

    /// Notices for stderr about what the policy does differently from what was asked (a bypass
    /// mode that settings disable). Unlike [`PolicyBuilder::warnings`], nothing here is a
    /// setting toolrt ignores.
    pub(crate) fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The cwd and `additionalDirectories`, resolved.
    pub(crate) fn workspace(&self) -> &[PathBuf] {
        &self.workspace
    }

    /// Whether a bare-name deny rule removes `tool` from the effective registry.
    pub(crate) fn removes_tool(&self, tool: &str) -> bool {
        let alias = match tool {
            "Agent" => Some("Task"),
            "Task" => Some("Agent"),
            _ => None,
        };
        self.deny.tool_level.contains_key(tool)
            || alias.is_some_and(|a| self.deny.tool_level.contains_key(a))
            || (tool.starts_with("mcp__") && self.deny.tool_rule(tool, None).is_some())
    }

    /// Parses one rule (hooks' `if` filter).
    pub(crate) fn parse_rule(text: &str) -> Result<Rule, RuleError> {
        Rule::parse(text)
    }

    pub(super) fn by(&self, i: usize) -> DecidedBy {
        let r = &self.rules[i];
        DecidedBy::Rule {
            text: r.text.clone(),
            source: r.source.clone(),
            kind: r.kind,
        }
    }

    /// Decides one call, in the order of docs/SEMANTICS.md §3.1.
    pub(crate) fn decide(&self, req: &DecisionRequest<'_>) -> Decision {
        self.decide_at(req, None)
    }

    /// [`Policy::decide`] for a call that acts on a worker node's files (`at`), or here.
    pub(crate) fn decide_at(&self, req: &DecisionRequest<'_>, at: Option<&Located>) -> Decision {
        let mode = req.mode;
        if let Some(HookVerdict::Deny { reason }) = &req.hook {
            return Decision::new(
                Behavior::Deny,
                DecidedBy::Hook {
                    reason: Some(reason.clone()),
                },
                mode,
            );
        }
        if let Subject::Command { field } = req.access.subject {
            let cmd = req.input.get(field).and_then(Value::as_str).unwrap_or("");
            let (mut steps, subs) = self.bash_steps(req.tool, cmd, mode, at);
            let unsandboxed =
                req.input.get(crate::session::UNSANDBOXED_FIELD) == Some(&Value::Bool(true));
            // A command placed on a worker node runs in the sandbox that node set up from this
            // session's settings: its answer, not this node's. A policy that knows no sandbox
            // (an agent type's own rules) knows none on a node either.
            let sandbox = self.sandbox.as_ref().and_then(|here| match at {
                Some(a) => a.sandbox.as_ref(),
                None => Some(here),
            });
            if let Some(sandbox) = sandbox {
                // Deny and ask rules, the never-auto-approved checks and plan mode still come
                // first (`resolve`); only what nothing else allowed is allowed for running sandboxed.
                if steps.allow.is_none() && sandbox.auto_allows(cmd, unsandboxed) {
                    steps.allow = Some(DecidedBy::Sandbox);
                }
            }
            let mut d = resolve(steps, mode, req.hook.as_ref());
            d.subcommands = subs;
            d.sandbox = sandbox.map(|s| std::sync::Arc::from(s.describe(cmd, unsandboxed)));
            return d;
        }
        let mut steps = self.steps(req.tool, req.access, req.input, mode, at);
        let paths = steps.paths.take();
        let mut d = resolve(steps, mode, req.hook.as_ref());
        d.paths = paths.map(std::sync::Arc::from);
        d
    }

    /// Checks an input rewritten by the client or a PermissionRequest hook again against deny and
    /// ask rules and the never-auto-approved checks; `Allow` if none applies.
    pub(crate) fn recheck_updated(
        &self,
        tool: &str,
        access: Access<'_>,
        input: &Map<String, Value>,
        mode: Mode,
    ) -> Decision {
        self.recheck_updated_at(tool, access, input, mode, None)
    }

    /// [`Policy::recheck_updated`] for a call that acts on a worker node's files (`at`), or here.
    pub(crate) fn recheck_updated_at(
        &self,
        tool: &str,
        access: Access<'_>,
        input: &Map<String, Value>,
        mode: Mode,
        at: Option<&Located>,
    ) -> Decision {
        let (mut steps, subs) = if let Subject::Command { field } = access.subject {
            let cmd = input.get(field).and_then(Value::as_str).unwrap_or("");
            self.bash_steps(tool, cmd, mode, at)
        } else {
            (self.steps(tool, access, input, mode, at), Vec::new())
        };
        let paths = steps.paths.take();
        let mut d = if let Some(by) = steps.deny {
            Decision::new(Behavior::Deny, by, mode)
        } else if let Some(by) = steps.ask {
            ask_or_deny(by, mode)
        } else if let Some((why, _)) = steps
            .never
            .filter(|(_, bypass_ok)| !(*bypass_ok && mode == Mode::BypassPermissions))
        {
            ask_or_deny(DecidedBy::NeverAutoApproved { why }, mode)
        } else {
            Decision::new(Behavior::Allow, DecidedBy::Rechecked, mode)
        };
        d.subcommands = subs;
        d.paths = paths.map(std::sync::Arc::from);
        d
    }

    /// Whether `rule` matches this call (hooks' `if`). For Bash, a compound command matches if
    /// any subcommand matches, through wrappers and quoting as deny rules do.
    pub(crate) fn rule_matches(
        &self,
        rule: &Rule,
        tool: &str,
        access: Access<'_>,
        input: &Map<String, Value>,
    ) -> bool {
        let rt = rule.tool();
        let anchors = Anchors {
            settings_dir: &self.cwd,
            cwd: &self.cwd,
            home: &self.home,
        };
        let head = family(access);
        let name_ok = rt == tool
            || head == Some(rt)
            || (matches!(rt, "Agent" | "Task") && matches!(head.unwrap_or(tool), "Agent" | "Task"))
            || (rt.starts_with("mcp__") && {
                let mut l = List::default();
                l.add(rule, 0, &anchors, false);
                l.tool_rule(tool, None).is_some()
            });
        if !name_ok {
            return false;
        }
        let Some(spec) = rule.specifier() else {
            return true;
        };
        let text = |field: &str| input.get(field).and_then(Value::as_str);
        match (rt, access.subject) {
            ("Bash", Subject::Command { field }) => {
                let p = BashPattern::compile(spec);
                crate::shell::analyse(text(field).unwrap_or(""))
                    .commands
                    .iter()
                    .any(|s| s.deny_views.iter().any(|v| p.matches(v)))
            }
            ("WebFetch", Subject::Url { field }) => {
                let pat = DomainPattern::compile(spec.strip_prefix("domain:").unwrap_or(spec));
                text(field)
                    .and_then(host_of)
                    .is_some_and(|h| pat.matches(&h))
            }
            ("Agent" | "Task", Subject::Subagent { field }) => text(field) == Some(spec),
            (t, Subject::Path { .. }) if READ_TOOLS.contains(&t) || EDIT_TOOLS.contains(&t) => {
                let Some(path) = self.input_path(access, input, None) else {
                    return false;
                };
                let mut set = PathSet::default();
                set.add(glob_patterns(spec, &anchors, false), 0);
                if set.build().is_err() {
                    return false;
                }
                candidates(&path)
                    .iter()
                    .any(|c| set.first_match(c).is_some())
            }
            // A specifier toolrt cannot interpret for this tool: the rule is about the tool,
            // by name.
            _ => true,
        }
    }

    /// The absolute, normalised path a path tool acts on (a search's folder defaults to the
    /// cwd, or to the workspace of the worker node the call runs on).
    fn input_path(
        &self,
        access: Access<'_>,
        input: &Map<String, Value>,
        at: Option<&Located>,
    ) -> Option<PathBuf> {
        let Subject::Path {
            field, default_cwd, ..
        } = access.subject
        else {
            return None;
        };
        match input.get(field).and_then(Value::as_str) {
            Some(p) if !p.is_empty() => {
                let cwd = at.map_or(&self.cwd, |a| &a.root);
                Some(absolutize(p, cwd, &self.home))
            }
            _ if default_cwd => Some(at.map_or(&self.cwd, |a| &a.root).clone()),
            _ => None,
        }
    }

    pub(super) fn in_workspace(&self, cands: &[PathBuf]) -> bool {
        cands.iter().all(|c| inside(c, &self.roots))
    }

    /// Inside toolrt's own output folder, and neither in nor above its checkpoints.
    pub(super) fn in_output_dir(&self, cands: &[PathBuf]) -> bool {
        !self.output_roots.is_empty()
            && cands.iter().all(|c| {
                inside(c, &self.output_roots)
                    && !inside(c, &self.checkpoint_roots)
                    && !self.checkpoint_roots.iter().any(|cp| cp.starts_with(c))
            })
    }

    /// Rule steps for every tool but a shell's.
    fn steps(
        &self,
        tool: &str,
        access: Access<'_>,
        input: &Map<String, Value>,
        mode: Mode,
        at: Option<&Located>,
    ) -> Steps {
        let head = family(access);
        let mut s = Steps {
            deny: self.deny.tool_rule(tool, head).map(|i| self.by(i)),
            ask: self.ask.tool_rule(tool, head).map(|i| self.by(i)),
            allow: self.allow.tool_rule(tool, head).map(|i| self.by(i)),
            ..Steps::default()
        };
        if let Subject::Path { read_only, .. } = access.subject {
            self.path_steps(access, read_only, input, mode, &mut s, at);
            return s;
        }
        match access.subject {
            Subject::Url { field } => {
                if let Some(host) = input.get(field).and_then(Value::as_str).and_then(host_of) {
                    let find = |l: &List| {
                        l.domains
                            .iter()
                            .find(|(p, _)| p.matches(&host))
                            .map(|&(_, i)| i)
                    };
                    s.deny = s.deny.or_else(|| find(&self.deny).map(|i| self.by(i)));
                    s.ask = s.ask.or_else(|| find(&self.ask).map(|i| self.by(i)));
                    s.allow = s.allow.or_else(|| find(&self.allow).map(|i| self.by(i)));
                }
            }
            Subject::Subagent { field } => {
                if let Some(kind) = input.get(field).and_then(Value::as_str) {
                    let find = |l: &List| l.agents.iter().find(|(t, _)| t == kind).map(|&(_, i)| i);
                    s.deny = s.deny.or_else(|| find(&self.deny).map(|i| self.by(i)));
                    s.ask = s.ask.or_else(|| find(&self.ask).map(|i| self.by(i)));
                    s.allow = s.allow.or_else(|| find(&self.allow).map(|i| self.by(i)));
                }
            }
            Subject::Name | Subject::Path { .. } | Subject::Command { .. } => {}
        }
        if s.allow.is_none() && access.allowed_by_default {
            s.allow = Some(DecidedBy::Default);
        }
        s
    }

    /// Rule steps on the path a path tool reads or writes: Read and Edit rules, the workspace,
    /// toolrt's own descriptors, protected paths, acceptEdits. For a call on a worker node
    /// (`at`) the path's resolutions are the node's, and its workspace is the node's folder.
    fn path_steps(
        &self,
        access: Access<'_>,
        read_only: bool,
        input: &Map<String, Value>,
        mode: Mode,
        s: &mut Steps,
        at: Option<&Located>,
    ) {
        let is_read = read_only;
        let is_edit = !read_only;
        if is_read && s.allow.is_none() {
            // An Edit allow grants reads.
            s.allow = self.allow.tool_level.get("Edit").map(|&i| self.by(i));
        }
        s.plan_allows = is_read;
        s.plan_denies = is_edit;
        if let Some(path) = self.input_path(access, input, at) {
            let cands = match at {
                Some(a) => match a.resolved(&path) {
                    // The node resolved the path the supervisor gave it, which is this one.
                    Some(r) => r.to_vec(),
                    // Not the path the node resolved: nothing to decide on but the path
                    // itself, and a path that is not known to be in the node's workspace.
                    None => vec![path.clone(), PathBuf::from("/proc/self")],
                },
                None => candidates(&path),
            };
            // Prepared once: every set below matches the same one or two paths.
            let prepared: Vec<(&PathBuf, Candidate<'_>)> =
                cands.iter().map(|p| (p, Candidate::new(p))).collect();
            let any = |set: &PathSet| {
                prepared
                    .iter()
                    .find_map(|(p, c)| set.first_match_candidate(p, c))
            };
            let all = |sets: &[&PathSet]| -> Option<usize> {
                let mut first = None;
                for (p, c) in &prepared {
                    let m = sets
                        .iter()
                        .find_map(|set| set.first_match_candidate(p, c))?;
                    first.get_or_insert(m);
                }
                first
            };
            if s.deny.is_none() {
                s.deny = any(&self.deny.read_paths)
                    .or_else(|| {
                        if is_edit {
                            any(&self.deny.edit_paths)
                        } else {
                            None
                        }
                    })
                    .map(|i| self.by(i));
            }
            if s.ask.is_none() {
                s.ask = if is_read {
                    any(&self.ask.read_paths)
                } else {
                    any(&self.ask.edit_paths)
                }
                .map(|i| self.by(i));
            }
            if s.allow.is_none() {
                s.allow = if is_read {
                    all(&[&self.allow.read_paths, &self.allow.edit_paths])
                } else {
                    all(&[&self.allow.edit_paths])
                }
                .map(|i| self.by(i));
            }
            // toolrt's own output folder is on this node, never on a worker.
            let (in_ws, in_output) = match at {
                Some(a) => (cands.iter().all(|c| c.starts_with(&a.root)), false),
                None => (self.in_workspace(&cands), self.in_output_dir(&cands)),
            };
            if is_read && s.allow.is_none() && (in_ws || in_output) {
                s.allow = Some(DecidedBy::Default);
            }
            if cands.iter().any(|c| names_own_descriptor(c)) {
                // `/dev/stdin`, `/dev/fd/1`, `/proc/self/fd/…` name toolrt's own
                // descriptors: its protocol streams, not a file.
                s.never = Some((
                    "the path names one of toolrt's own file descriptors or its terminal".into(),
                    false,
                ));
            }
            if is_edit {
                if cands
                    .iter()
                    .any(|c| is_protected(c) || is_git_layout_write(c))
                {
                    s.never = Some((
                        "writes to protected paths (.git, .claude, shell profiles, …) need approval".into(),
                        true,
                    ));
                }
                s.mode_allows = mode == Mode::AcceptEdits && in_ws;
            }
            s.paths = Some(cands);
        }
    }
}

/// The rule name whose rules govern a tool beside its own name, from what its calls act on:
/// `Read` for read-only path tools, `Edit` for other path tools, `Bash` for commands,
/// `WebFetch` for URLs, `Agent` for subagents.
pub(super) fn family(access: Access<'_>) -> Option<&'static str> {
    match access.subject {
        Subject::Path {
            read_only: true, ..
        } => Some("Read"),
        Subject::Path {
            read_only: false, ..
        } => Some("Edit"),
        Subject::Command { .. } => Some("Bash"),
        Subject::Url { .. } => Some("WebFetch"),
        Subject::Subagent { .. } => Some("Agent"),
        Subject::Name => None,
    }
}

pub(super) fn ask_or_deny(by: DecidedBy, mode: Mode) -> Decision {
    let b = if mode == Mode::DontAsk {
        Behavior::Deny
    } else {
        Behavior::Ask
    };
    Decision::new(b, by, mode)
}

pub(super) fn sub_behavior(j: &Steps, mode: Mode, read: bool) -> Behavior {
    let asked = if mode == Mode::DontAsk {
        Behavior::Deny
    } else {
        Behavior::Ask
    };
    if j.deny.is_some() {
        Behavior::Deny
    } else if j.ask.is_some() {
        asked
    } else if let Some((_, bypass_ok)) = &j.never {
        if *bypass_ok && mode == Mode::BypassPermissions {
            Behavior::Allow
        } else {
            asked
        }
    } else if mode == Mode::BypassPermissions {
        Behavior::Allow
    } else if mode == Mode::Plan && !read {
        // Plan mode auto-allows only reads; anything else asks (verified with the reference).
        asked
    } else if j.allow.is_some() {
        Behavior::Allow
    } else {
        asked
    }
}

/// Steps 2–7 of SEMANTICS.md §3.1 once the rules have spoken.
fn resolve(s: Steps, mode: Mode, hook: Option<&HookVerdict>) -> Decision {
    if let Some(by) = s.deny {
        return Decision::new(Behavior::Deny, by, mode);
    }
    if let Some(by) = s.ask {
        return ask_or_deny(by, mode);
    }
    if matches!(hook, Some(HookVerdict::Ask)) {
        // A hook's explicit ask reaches the client even in dontAsk (verified with the reference).
        return Decision::new(Behavior::Ask, DecidedBy::Hook { reason: None }, mode);
    }
    if let Some((why, bypass_ok)) = s.never
        && !(bypass_ok && mode == Mode::BypassPermissions)
    {
        return ask_or_deny(DecidedBy::NeverAutoApproved { why }, mode);
    }
    match mode {
        Mode::BypassPermissions => {
            return Decision::new(Behavior::Allow, DecidedBy::Mode(mode), mode);
        }
        Mode::Plan if s.plan_denies => {
            // A write in plan mode asks rather than being refused outright (as the reference).
            return Decision::new(Behavior::Ask, DecidedBy::Mode(mode), mode);
        }
        Mode::Plan if s.plan_allows && s.allow.is_none() => {
            return Decision::new(Behavior::Allow, DecidedBy::Mode(mode), mode);
        }
        _ => {}
    }
    if s.mode_allows {
        return Decision::new(Behavior::Allow, DecidedBy::Mode(mode), mode);
    }
    if let Some(by) = s.allow {
        return Decision::new(Behavior::Allow, by, mode);
    }
    if matches!(hook, Some(HookVerdict::Allow)) {
        return Decision::new(Behavior::Allow, DecidedBy::Hook { reason: None }, mode);
    }
    ask_or_deny(s.fallback.unwrap_or(DecidedBy::NoRule), mode)
}

impl crate::session::Guard for Policy {
    fn read_denied(&self, path: &Path) -> bool {
        if self.deny.read_paths.is_empty() {
            return false;
        }
        candidates(path)
            .iter()
            .any(|c| self.deny.read_paths.first_match(c).is_some())
    }

    fn write_denied(&self, path: &Path) -> bool {
        if self.deny.read_paths.is_empty() && self.deny.edit_paths.is_empty() {
            return false;
        }
        candidates(path).iter().any(|c| {
            self.deny.read_paths.first_match(c).is_some()
                || self.deny.edit_paths.first_match(c).is_some()
        })
    }

    fn fetch_allowed(&self, url: &str) -> bool {
        let Some(host) = host_of(url) else {
            return false;
        };
        let hit = |l: &List| {
            l.tool_rule("WebFetch", None).is_some()
                || l.domains.iter().any(|(p, _)| p.matches(&host))
        };
        // The session's mode is fixed, so a bypass session follows any hop that no deny or ask
        // rule covers, exactly as it would allow a WebFetch of that URL.
        !hit(&self.deny)
            && !hit(&self.ask)
            && (self.starting_mode() == Mode::BypassPermissions || hit(&self.allow))
    }

    fn read_deny_patterns(&self) -> Vec<String> {
        self.deny.read_paths.patterns().to_vec()
    }
}
