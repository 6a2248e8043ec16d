//! Bash commands against the rules: the shell analysis ([`crate::shell`]) judged part by part.
//!
//! Every part is matched against deny and ask rules on every reading toolrt found (through
//! wrappers, quoting, variable values that may run, unknown wrapper options); where part of a
//! command is only known when it runs and a rule could match some value of it, or where code
//! runs that toolrt cannot see, the command asks in every mode (deny in `dontAsk`). A part is
//! allowed only if it is understood and its paths pass: reads inside the workspace (or allowed
//! by a Read or Edit rule), writes allowed by an Edit rule or acceptEdits inside the workspace,
//! and for git, a configuration that runs nothing the agent could have written.

mod judge;
mod places;

use std::path::{Path, PathBuf};

use crate::paths::absolutize;
use crate::shell::gitconfig::{self, Check};
use crate::shell::paths::{self, Named};
use crate::shell::{self, Command, Cwd, Kind, Origin, Target};

use super::decision::{DecidedBy, Mode, SubcommandVerdict};
use super::path_rule::{PathSet, candidates, inside, is_git_layout_write, is_protected};
use super::policy::{Located, Policy, Steps, sub_behavior};
use places::Resolved;
pub(crate) use places::paths_named_by;

/// Where a command's paths are judged: here (the session's folder, this file system), or on
/// the worker node it is placed on (that node's folder, and only the paths the node resolved:
/// anything else, a glob or git's configuration there, toolrt cannot check, and asks).
pub(super) struct Site<'a> {
    /// The folder a command starts in.
    cwd: &'a Path,
    /// `~`.
    home: &'a Path,
    /// The workspace, lexical and resolved.
    roots: &'a [PathBuf],
    /// The worker node's view, for a command placed on one.
    node: Option<&'a Located>,
}

impl Site<'_> {
    /// Every candidate inside the workspace.
    fn in_workspace(&self, cands: &[PathBuf]) -> bool {
        cands.iter().all(|c| inside(c, self.roots))
    }
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

/// A directory, and whether protected files count as trusted there (not in
/// bypassPermissions).
type GitCheckKey = (PathBuf, bool);

/// A Bash decision's cached git configuration check for one directory: valid while the
/// watched directories report no change and nothing had to be read again.
#[derive(Debug, Default)]
pub(super) struct GitChecks {
    /// The check of each key, with the watch generation it was made at.
    by_dir: std::sync::Mutex<std::collections::HashMap<GitCheckKey, (u64, std::sync::Arc<Check>)>>,
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
        at: Option<&Located>,
    ) -> (Steps, Vec<SubcommandVerdict>) {
        let a = shell::analyse(text);
        let site = match at {
            Some(node) => Site {
                cwd: &node.root,
                home: &node.home,
                roots: std::slice::from_ref(&node.root),
                node: Some(node),
            },
            None => Site {
                cwd: &self.cwd,
                home: &self.home,
                roots: &self.roots,
                node: None,
            },
        };
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
            let j = self.judge(c, mode, tool_allow.as_ref(), &written, &site);
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
            verdicts.push(j.into_verdict(c, mode, reading));
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
}
