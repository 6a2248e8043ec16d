//! What a decision says, and the words the model and humans get for it.

use std::fmt;
use std::str::FromStr;

/// A permission mode (SEMANTICS.md §3.1), with its wire name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Ask for anything not allowed by a rule or a built-in default.
    #[default]
    Default,
    /// Also allow file edits inside the workspace.
    AcceptEdits,
    /// Allow only reads.
    Plan,
    /// Turn every ask into a deny.
    DontAsk,
    /// Allow everything except what is never auto-approved (SEMANTICS.md §3.6).
    BypassPermissions,
}

impl Mode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::DontAsk => "dontAsk",
            Mode::BypassPermissions => "bypassPermissions",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name that is not one of the five.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown permission mode {0:?} (expected default, acceptEdits, plan, dontAsk or bypassPermissions)"
)]
pub struct UnknownMode(pub String);

impl FromStr for Mode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "default" => Mode::Default,
            "acceptEdits" => Mode::AcceptEdits,
            "plan" => Mode::Plan,
            "dontAsk" => Mode::DontAsk,
            "bypassPermissions" => Mode::BypassPermissions,
            other => return Err(UnknownMode(other.to_string())),
        })
    }
}

/// A PreToolUse hook's verdict (SEMANTICS.md §3.1 step 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookVerdict {
    /// Skip the final prompt; never lifts a deny or ask rule.
    Allow,
    /// Force a prompt.
    Ask,
    /// Block, in every mode.
    Deny {
        /// Shown to the model.
        reason: String,
    },
}

/// The three answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Behavior {
    /// Run it.
    Allow,
    /// Refuse it (outcome `denied`).
    Deny,
    /// Ask the PermissionRequest hooks, then the client.
    Ask,
}

impl Behavior {
    /// `allow`, `deny` or `ask`.
    pub fn as_str(self) -> &'static str {
        match self {
            Behavior::Allow => "allow",
            Behavior::Deny => "deny",
            Behavior::Ask => "ask",
        }
    }
}

/// Which rule list a rule came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuleKind {
    /// `permissions.allow` / `--allowed-tools`.
    Allow,
    /// `permissions.ask`.
    Ask,
    /// `permissions.deny` / `--disallowed-tools`.
    Deny,
}

impl RuleKind {
    fn as_str(self) -> &'static str {
        match self {
            RuleKind::Allow => "allow",
            RuleKind::Ask => "ask",
            RuleKind::Deny => "deny",
        }
    }
}

/// What decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecidedBy {
    /// A PreToolUse hook verdict.
    Hook {
        /// The hook's reason, for a deny.
        reason: Option<String>,
    },
    /// A permission rule.
    Rule {
        /// The rule text as written.
        text: String,
        /// The settings file holding it, or `command line`.
        source: String,
        /// The list it is in.
        kind: RuleKind,
    },
    /// The permission mode.
    Mode(Mode),
    /// A built-in default: a workspace read, the read-only Bash set, a tool needing no permission.
    Default,
    /// SEMANTICS.md §3.6: protected paths and critical `rm` targets.
    NeverAutoApproved {
        /// What made it so, without echoing the input.
        why: String,
    },
    /// The command cannot be parsed or holds constructs that cannot be analysed safely.
    Unparseable,
    /// Part of the command is outside what toolrt auto-allows: not fully understood, or a path
    /// outside the workspace, or git configuration that could run code.
    NotUnderstood {
        /// Exactly why (shown by `toolrt explain`, not to the model: it may quote the command).
        why: String,
    },
    /// Nothing else allowed it, and the command runs in the sandbox
    /// (`sandbox.autoAllowBashIfSandboxed`).
    Sandbox,
    /// Nothing allowed it.
    NoRule,
    /// An updated input passed the re-check of deny and ask rules.
    Rechecked,
}

impl DecidedBy {
    fn describe(&self) -> String {
        match self {
            DecidedBy::Hook { reason: Some(r) } => format!("a PreToolUse hook ({r})"),
            DecidedBy::Hook { reason: None } => "a PreToolUse hook".into(),
            DecidedBy::Rule { text, source, kind } => {
                let place = if source == "command line" {
                    "on the command line".to_string()
                } else {
                    format!("in {source}")
                };
                format!("the {} rule `{text}` {place}", kind.as_str())
            }
            DecidedBy::Mode(m) => format!("the permission mode {m}"),
            DecidedBy::Default => "a built-in default".into(),
            DecidedBy::NeverAutoApproved { why } => format!("a safety check: {why}"),
            DecidedBy::Unparseable => "the command could not be analysed safely".into(),
            DecidedBy::NotUnderstood { .. } => {
                "a part toolrt does not auto-allow (it cannot check it fully)".into()
            }
            DecidedBy::Sandbox => {
                "the sandbox: it runs sandboxed and no deny or ask rule matches".into()
            }
            DecidedBy::NoRule => "no rule allows it".into(),
            DecidedBy::Rechecked => "the re-check of the updated input".into(),
        }
    }
}

/// The verdict on one parsed subcommand of a Bash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubcommandVerdict {
    /// The subcommand (quotes removed, wrappers kept) as it would run.
    pub command: String,
    /// Its own verdict.
    pub behavior: Behavior,
    /// What decided it.
    pub decided_by: DecidedBy,
}

/// The answer for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Allow, deny or ask.
    pub behavior: Behavior,
    /// What decided.
    pub decided_by: DecidedBy,
    /// For Bash: every parsed subcommand with its own verdict.
    pub subcommands: Vec<SubcommandVerdict>,
    /// The mode the call was decided in (dontAsk explains why an ask became a deny).
    pub mode: Mode,
    /// For a call in an agent scope: which level of the scope's chain decided (the session's
    /// rules, or an agent type's), in words; `None` for a call outside any scope.
    pub level: Option<std::sync::Arc<str>>,
    /// For Bash with a sandbox configured: how the command would run (sandboxed, under which
    /// policy, or unsandboxed and why).
    pub sandbox: Option<std::sync::Arc<str>>,
    /// For a path tool: its path and each path it resolved to when decided. The tool must find
    /// the file it opens among them, or a symlink swapped since would take it elsewhere.
    pub(crate) paths: Option<std::sync::Arc<[std::path::PathBuf]>>,
}

impl Decision {
    pub(crate) fn new(behavior: Behavior, decided_by: DecidedBy, mode: Mode) -> Decision {
        Decision {
            behavior,
            decided_by,
            subcommands: Vec::new(),
            mode,
            level: None,
            sandbox: None,
            paths: None,
        }
    }

    /// Model-facing text for a deny or ask: what was denied and why (the rule and its file, the
    /// mode, or that it would need approval). Never echoes the input, which may hold secrets.
    pub fn message(&self, tool: &str) -> String {
        let words = self.words(tool);
        match &self.level {
            // A scoped call: say whose rules decided, so the model knows which agent lacks it.
            Some(level) if self.behavior != Behavior::Allow => {
                format!("{words} (decided at {level})")
            }
            _ => words,
        }
    }

    fn words(&self, tool: &str) -> String {
        match (self.behavior, &self.decided_by) {
            (Behavior::Allow, _) => format!("{tool} is allowed by {}", self.decided_by.describe()),
            (Behavior::Deny, DecidedBy::Hook { reason }) => match reason {
                Some(r) => format!("a PreToolUse hook blocked this {tool} call: {r}"),
                None => format!("a PreToolUse hook blocked this {tool} call"),
            },
            (
                Behavior::Deny,
                by @ DecidedBy::Rule {
                    kind: RuleKind::Deny,
                    ..
                },
            ) => {
                format!("permission to use {tool} was denied by {}", by.describe())
            }
            (Behavior::Ask, DecidedBy::Mode(Mode::Plan)) => {
                format!(
                    "{tool} would need approval: plan mode auto-allows only reads; present the plan instead of making changes"
                )
            }
            (Behavior::Deny, by) if self.mode == Mode::DontAsk => format!(
                "{tool} would need approval ({}), and the permission mode dontAsk denies anything that needs approval",
                by.describe()
            ),
            (Behavior::Deny, by) => format!("{tool} was denied by {}", by.describe()),
            (Behavior::Ask, DecidedBy::NoRule) => {
                format!("{tool} would need approval: no rule allows it")
            }
            (Behavior::Ask, by) => {
                format!("{tool} would need approval because of {}", by.describe())
            }
        }
    }

    /// What decided, in words that agree with the verdict (the rule and its file, the mode, a
    /// default), for logs and `toolrt explain`.
    pub fn reason(&self) -> String {
        reason(self.behavior, &self.decided_by, self.mode)
    }

    /// A multi-line explanation for `toolrt explain`: the decision, what decided and its file,
    /// and the verdict on every subcommand.
    pub fn explain(&self) -> String {
        let mut out = format!("decision: {}\n", self.behavior.as_str());
        out.push_str(&format!(
            "decided by: {}\n",
            reason(self.behavior, &self.decided_by, self.mode)
        ));
        if let DecidedBy::NotUnderstood { why } = &self.decided_by {
            out.push_str(&format!("why: {why}\n"));
        }
        if let Some(level) = &self.level {
            out.push_str(&format!("level: {level}\n"));
        }
        out.push_str(&format!("mode: {}\n", self.mode));
        if let Some(sandbox) = &self.sandbox {
            out.push_str(&format!("sandbox: {sandbox}\n"));
        }
        if !self.subcommands.is_empty() {
            out.push_str("subcommands:\n");
            for (i, s) in self.subcommands.iter().enumerate() {
                let by = match &s.decided_by {
                    DecidedBy::NotUnderstood { why } if s.behavior != Behavior::Allow => {
                        format!("not auto-allowed: {why}")
                    }
                    other => reason(s.behavior, other, self.mode),
                };
                out.push_str(&format!(
                    "  {}. {}: {} ({by})\n",
                    i + 1,
                    s.command,
                    s.behavior.as_str(),
                ));
            }
        }
        out
    }
}

/// Why a verdict is what it is, in words that agree with the verdict: where the mode turned
/// "no rule allows it" into an allow (bypass), an ask (plan) or a deny (dontAsk), the mode is
/// named.
fn reason(behavior: Behavior, by: &DecidedBy, mode: Mode) -> String {
    let unsettled = matches!(
        by,
        DecidedBy::NoRule | DecidedBy::Unparseable | DecidedBy::NotUnderstood { .. }
    );
    match (behavior, mode) {
        (Behavior::Allow, _) if unsettled => {
            format!("the permission mode {mode}, although {}", by.describe())
        }
        (Behavior::Ask, Mode::Plan) if unsettled || *by == DecidedBy::Mode(Mode::Plan) => {
            "the permission mode plan, which auto-allows only reads".into()
        }
        (Behavior::Deny, Mode::DontAsk)
            if !matches!(
                by,
                DecidedBy::Rule {
                    kind: RuleKind::Deny,
                    ..
                } | DecidedBy::Hook { .. }
            ) =>
        {
            format!(
                "{}, so it would need approval, and the permission mode dontAsk denies whatever needs approval",
                by.describe()
            )
        }
        _ => by.describe(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_agree_with_their_verdict() {
        let rule = |kind| DecidedBy::Rule {
            text: "Bash(rm *)".into(),
            source: "command line".into(),
            kind,
        };
        for (behavior, by, mode, want) in [
            (
                Behavior::Allow,
                DecidedBy::NoRule,
                Mode::BypassPermissions,
                "the permission mode bypassPermissions, although no rule allows it",
            ),
            (
                Behavior::Allow,
                DecidedBy::Unparseable,
                Mode::BypassPermissions,
                "the permission mode bypassPermissions, although the command could not be analysed safely",
            ),
            (
                Behavior::Ask,
                DecidedBy::NoRule,
                Mode::Plan,
                "the permission mode plan, which auto-allows only reads",
            ),
            (
                Behavior::Ask,
                DecidedBy::Mode(Mode::Plan),
                Mode::Plan,
                "the permission mode plan, which auto-allows only reads",
            ),
            (
                Behavior::Deny,
                DecidedBy::NoRule,
                Mode::DontAsk,
                "no rule allows it, so it would need approval, and the permission mode dontAsk denies whatever needs approval",
            ),
            (
                Behavior::Deny,
                rule(RuleKind::Deny),
                Mode::DontAsk,
                "the deny rule `Bash(rm *)` on the command line",
            ),
            (
                Behavior::Ask,
                DecidedBy::NoRule,
                Mode::Default,
                "no rule allows it",
            ),
            (
                Behavior::Allow,
                rule(RuleKind::Allow),
                Mode::Default,
                "the allow rule `Bash(rm *)` on the command line",
            ),
        ] {
            assert_eq!(
                reason(behavior, &by, mode),
                want,
                "{behavior:?} {by:?} {mode}"
            );
        }
    }
}
