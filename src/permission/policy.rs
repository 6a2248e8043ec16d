//! The compiled policy and the decision order of docs/SEMANTICS.md §3.1.
//!
//! # Order
//! Per call: the PreToolUse hook verdict (a deny blocks in every mode), deny rules, ask rules,
//! a hook's ask, never-auto-approved checks (SEMANTICS.md §3.6), the mode, allow rules, built-in defaults, a
//! hook's allow, then ask. Deny beats ask beats allow whatever the rules' specificity; `dontAsk`
//! turns every ask into a deny.

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
pub struct DecisionRequest<'a> {
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

/// A configuration error: a rule or a settings value that is wrong. Display names the file and
/// key, e.g. `settings.json: permissions.allow[2]: unbalanced parentheses in rule "Bash(ls"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// A malformed rule.
    #[error("{origin}: {source}")]
    Rule {
        /// `file: permissions.allow[2]` or the command-line flag.
        origin: String,
        /// What is wrong with the rule.
        source: RuleError,
    },
    /// A settings value of the wrong type or an unknown value.
    #[error("{file}: {key}: {message}")]
    Settings {
        /// The settings file.
        file: String,
        /// The key path, e.g. `permissions.defaultMode`.
        key: String,
        /// What was wrong.
        message: String,
    },
}

#[derive(Debug, Clone)]
struct RuleInfo {
    text: String,
    source: String,
    kind: RuleKind,
}

#[derive(Debug)]
struct Pending {
    kind: RuleKind,
    rule: Rule,
    source: String,
    settings_dir: PathBuf,
    origin: String,
}

/// Collects settings and flags; [`PolicyBuilder::build`] compiles them once.
#[derive(Debug)]
pub struct PolicyBuilder {
    cwd: PathBuf,
    home: PathBuf,
    pending: Vec<Pending>,
    dirs: Vec<PathBuf>,
    default_mode: Option<Mode>,
    cli_mode: Option<Mode>,
    /// `permissions.disableBypassPermissionsMode: "disable"`, and the file that said so.
    bypass_disabled: Option<String>,
    warnings: Vec<String>,
    output_dir: Option<PathBuf>,
}

impl PolicyBuilder {
    /// A builder for a session rooted at `cwd` with home directory `home`.
    pub fn new(cwd: PathBuf, home: PathBuf) -> Self {
        let cwd = crate::paths::normalize(&cwd);
        let home = crate::paths::normalize(&home);
        PolicyBuilder {
            cwd,
            home,
            pending: Vec::new(),
            dirs: Vec::new(),
            default_mode: None,
            cli_mode: None,
            bypass_disabled: None,
            warnings: Vec::new(),
            output_dir: None,
        }
    }

    /// Adds the value of the `permissions` key of one settings file. Rule lists pool across
    /// files; for `defaultMode` the later file wins.
    pub fn add_settings_file(
        &mut self,
        file: &Path,
        permissions: &Value,
    ) -> Result<(), PolicyError> {
        let fname = file.display().to_string();
        let err = |key: &str, message: &str| PolicyError::Settings {
            file: fname.clone(),
            key: key.to_string(),
            message: message.to_string(),
        };
        let Some(obj) = permissions.as_object() else {
            return Err(err("permissions", "expected an object"));
        };
        let abs_file = absolutize(&file.to_string_lossy(), &self.cwd, &self.home);
        let settings_dir = abs_file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("/"));
        for (key, value) in obj {
            let kpath = format!("permissions.{key}");
            match key.as_str() {
                "allow" | "ask" | "deny" => {
                    let kind = match key.as_str() {
                        "allow" => RuleKind::Allow,
                        "ask" => RuleKind::Ask,
                        _ => RuleKind::Deny,
                    };
                    let Some(items) = value.as_array() else {
                        return Err(err(&kpath, "expected an array of rule strings"));
                    };
                    for (i, item) in items.iter().enumerate() {
                        let ipath = format!("{kpath}[{i}]");
                        let Some(text) = item.as_str() else {
                            return Err(err(&ipath, "expected a string"));
                        };
                        // `// …` entries are comments: the reference CLI accepts them, and the
                        // other rules of the list still apply.
                        if text.trim_start().starts_with("//") {
                            continue;
                        }
                        let origin = format!("{fname}: {ipath}");
                        self.push(kind, text, fname.clone(), settings_dir.clone(), origin)?;
                    }
                }
                "additionalDirectories" => {
                    let Some(items) = value.as_array() else {
                        return Err(err(&kpath, "expected an array of directory strings"));
                    };
                    for (i, item) in items.iter().enumerate() {
                        let Some(d) = item.as_str() else {
                            return Err(err(&format!("{kpath}[{i}]"), "expected a string"));
                        };
                        self.add_directory(d);
                    }
                }
                "defaultMode" => {
                    let Some(m) = value.as_str() else {
                        return Err(err(&kpath, "expected a string"));
                    };
                    self.default_mode =
                        Some(m.parse::<Mode>().map_err(|e| err(&kpath, &e.to_string()))?);
                }
                "disableBypassPermissionsMode" => match value.as_str() {
                    Some("disable") => self.bypass_disabled = Some(fname.clone()),
                    _ => return Err(err(&kpath, "expected \"disable\"")),
                },
                // Unknown keys are reported once, with a likely key, by `settings`.
                _ => {}
            }
        }
        Ok(())
    }

    /// Adds `--allowed-tools` rules (several may be separated by commas or spaces outside
    /// parentheses).
    pub fn add_cli_allow(&mut self, rules: &str) -> Result<(), PolicyError> {
        self.add_cli(RuleKind::Allow, rules, "--allowed-tools")
    }

    /// Adds `--disallowed-tools` rules.
    pub fn add_cli_deny(&mut self, rules: &str) -> Result<(), PolicyError> {
        self.add_cli(RuleKind::Deny, rules, "--disallowed-tools")
    }

    /// Adds ask rules from the command line (no reference flag; for library users and tests).
    pub fn add_cli_ask(&mut self, rules: &str) -> Result<(), PolicyError> {
        self.add_cli(RuleKind::Ask, rules, "ask rules")
    }

    fn add_cli(&mut self, kind: RuleKind, rules: &str, flag: &str) -> Result<(), PolicyError> {
        let texts = super::rule::split_rule_list(rules);
        if texts.is_empty() {
            // A flag that holds no rule is the same error as `""` in a settings file.
            let cwd = self.cwd.clone();
            return self.push(kind, "", "command line".into(), cwd, flag.to_string());
        }
        for text in texts {
            let cwd = self.cwd.clone();
            self.push(kind, text, "command line".into(), cwd, flag.to_string())?;
        }
        Ok(())
    }

    /// `--permission-mode`: wins over every `defaultMode`.
    pub fn set_cli_mode(&mut self, mode: Mode) {
        self.cli_mode = Some(mode);
    }

    /// Adds a workspace directory (`~` is home, relative is against the cwd).
    pub fn add_directory(&mut self, dir: &str) {
        self.dirs.push(absolutize(dir, &self.cwd, &self.home));
    }

    /// toolrt's own output folder for this session: Read, Glob and Grep inside it need no rule
    /// (deny and ask rules still apply), except in its `checkpoints` folder, which holds prior
    /// contents of changed files.
    pub fn add_output_dir(&mut self, dir: &Path) {
        self.output_dir = Some(crate::paths::normalize(dir));
    }

    /// Warnings collected so far (rules toolrt can only partly honour), for stderr.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The starting mode: the flag, else the last `defaultMode`, else `default`; bypass taken
    /// away (with a notice) when a settings file disables it.
    fn starting_mode(&self, notices: &mut Vec<String>) -> Mode {
        let mode = self.cli_mode.or(self.default_mode).unwrap_or_default();
        match &self.bypass_disabled {
            Some(file) if mode == Mode::BypassPermissions => {
                notices.push(format!(
                    "{file}: permissions.disableBypassPermissionsMode: bypassPermissions is \
                     disabled; running in default mode (calls that need approval ask)"
                ));
                Mode::Default
            }
            _ => mode,
        }
    }

    fn push(
        &mut self,
        kind: RuleKind,
        text: &str,
        source: String,
        settings_dir: PathBuf,
        origin: String,
    ) -> Result<(), PolicyError> {
        let rule = Rule::parse(text).map_err(|source| PolicyError::Rule {
            origin: origin.clone(),
            source,
        })?;
        let tool = rule.tool();
        if kind == RuleKind::Allow && tool.contains('*') {
            let ok = tool
                .strip_prefix("mcp__")
                .and_then(|r| r.split_once("__"))
                .is_some_and(|(server, _)| !server.is_empty() && !server.contains('*'));
            if !ok {
                return Err(PolicyError::Rule {
                    origin,
                    source: RuleError::McpAllowGlob(text.to_string()),
                });
            }
        }
        if kind == RuleKind::Allow && !rule.specifier_is_checked() {
            self.warnings.push(format!(
                "{origin}: toolrt cannot check the specifier of {text:?}, so this allow rule \
                 approves nothing (deny and ask rules of this kind cover every {} call)",
                rule.tool()
            ));
        }
        self.pending.push(Pending {
            kind,
            rule,
            source,
            settings_dir,
            origin,
        });
        Ok(())
    }

    /// Compiles every rule once and indexes them by tool.
    pub fn build(self) -> Result<Policy, PolicyError> {
        let mut notices = Vec::new();
        let mode = self.starting_mode(&mut notices);
        let mut rules = Vec::with_capacity(self.pending.len());
        let mut lists = [List::default(), List::default(), List::default()];
        let mut origins = Vec::new();
        for p in &self.pending {
            let idx = rules.len();
            rules.push(RuleInfo {
                text: p.rule.to_string(),
                source: p.source.clone(),
                kind: p.kind,
            });
            origins.push(p.origin.clone());
            let list = &mut lists[p.kind as usize];
            let anchors = Anchors {
                settings_dir: &p.settings_dir,
                cwd: &self.cwd,
                home: &self.home,
            };
            list.add(&p.rule, idx, &anchors, p.kind == RuleKind::Allow);
        }
        for list in &mut lists {
            list.build().map_err(|(idx, why)| PolicyError::Rule {
                origin: origins[idx].clone(),
                source: RuleError::InvalidSpecifier {
                    rule: rules[idx].text.clone(),
                    why,
                },
            })?;
        }
        let [allow, ask, deny] = lists;
        let mut workspace = vec![self.cwd.clone()];
        workspace.extend(self.dirs.iter().cloned());
        let mut roots = workspace.clone();
        for w in &workspace {
            if let Ok(c) = std::fs::canonicalize(w)
                && !roots.contains(&c)
            {
                roots.push(c);
            }
        }
        let (output_roots, checkpoint_roots) = match &self.output_dir {
            Some(dir) => (candidates(dir), candidates(&dir.join("checkpoints"))),
            None => (Vec::new(), Vec::new()),
        };
        let git_env = crate::shell::gitconfig::GitEnv::from_process(&self.home);
        let mut policy = Policy {
            output_roots,
            checkpoint_roots,
            mode,
            notices,
            cwd: self.cwd,
            home: self.home,
            workspace,
            roots,
            rules,
            allow,
            ask,
            deny,
            git_env,
            flags: Default::default(),
            git_checks: Default::default(),
        };
        policy.flags = policy.rule_flags();
        Ok(policy)
    }
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
}

/// The permission policy of one session: immutable, shared, built once at start-up.
#[derive(Debug)]
pub struct Policy {
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
}

impl Policy {
    /// The mode a session starts in: the flag, else the last `defaultMode`, else `default`.
    pub fn starting_mode(&self) -> Mode {
        self.mode
    }

    /// Notices for stderr about what the policy does differently from what was asked (a bypass
    /// mode that settings disable). Unlike [`PolicyBuilder::warnings`], nothing here is a
    /// setting toolrt ignores.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The cwd and `additionalDirectories`, resolved.
    pub fn workspace(&self) -> &[PathBuf] {
        &self.workspace
    }

    /// Whether a bare-name deny rule removes `tool` from the effective registry.
    pub fn removes_tool(&self, tool: &str) -> bool {
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
    pub fn parse_rule(text: &str) -> Result<Rule, RuleError> {
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
    pub fn decide(&self, req: &DecisionRequest<'_>) -> Decision {
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
            let (steps, subs) = self.bash_steps(req.tool, cmd, mode);
            let mut d = resolve(steps, mode, req.hook.as_ref());
            d.subcommands = subs;
            return d;
        }
        let steps = self.steps(req.tool, req.access, req.input, mode);
        resolve(steps, mode, req.hook.as_ref())
    }

    /// Checks an input rewritten by the client or a PermissionRequest hook again against deny and
    /// ask rules and the never-auto-approved checks; `Allow` if none applies.
    pub fn recheck_updated(
        &self,
        tool: &str,
        access: Access<'_>,
        input: &Map<String, Value>,
        mode: Mode,
    ) -> Decision {
        let (steps, subs) = if let Subject::Command { field } = access.subject {
            let cmd = input.get(field).and_then(Value::as_str).unwrap_or("");
            self.bash_steps(tool, cmd, mode)
        } else {
            (self.steps(tool, access, input, mode), Vec::new())
        };
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
        d
    }

    /// Whether `rule` matches this call (hooks' `if`). For Bash, a compound command matches if
    /// any subcommand matches, through wrappers and quoting as deny rules do.
    pub fn rule_matches(
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
                let Some(path) = self.input_path(access, input) else {
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
    /// cwd).
    fn input_path(&self, access: Access<'_>, input: &Map<String, Value>) -> Option<PathBuf> {
        let Subject::Path {
            field, default_cwd, ..
        } = access.subject
        else {
            return None;
        };
        match input.get(field).and_then(Value::as_str) {
            Some(p) if !p.is_empty() => Some(absolutize(p, &self.cwd, &self.home)),
            _ if default_cwd => Some(self.cwd.clone()),
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
    ) -> Steps {
        let head = family(access);
        let mut s = Steps {
            deny: self.deny.tool_rule(tool, head).map(|i| self.by(i)),
            ask: self.ask.tool_rule(tool, head).map(|i| self.by(i)),
            allow: self.allow.tool_rule(tool, head).map(|i| self.by(i)),
            ..Steps::default()
        };
        if let Subject::Path { read_only, .. } = access.subject {
            let is_read = read_only;
            let is_edit = !read_only;
            if is_read && s.allow.is_none() {
                // An Edit allow grants reads.
                s.allow = self.allow.tool_level.get("Edit").map(|&i| self.by(i));
            }
            s.plan_allows = is_read;
            s.plan_denies = is_edit;
            if let Some(path) = self.input_path(access, input) {
                let cands = candidates(&path);
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
                let in_ws = self.in_workspace(&cands);
                if is_read && s.allow.is_none() && (in_ws || self.in_output_dir(&cands)) {
                    s.allow = Some(DecidedBy::Default);
                }
                if cands.iter().any(|c| names_own_descriptor(c)) {
                    // `/dev/stdin`, `/dev/fd/1`, `/proc/self/fd/…` name toolrt's own
                    // descriptors: its protocol streams, not a file.
                    s.never = Some((
                        "the path names one of toolrt's own file descriptors or its terminal"
                            .into(),
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
            }
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
}
