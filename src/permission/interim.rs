//! The first permission decision: tool-level rules and three modes. The permission-engine issue
//! replaces this file with the full COMPAT.md §2 engine behind the same API.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde_json::{Map, Value};

/// Permission modes (COMPAT.md §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Reads in the workspace run; everything else asks.
    Default,
    /// File edits in the workspace run too.
    AcceptEdits,
    /// Only reads.
    Plan,
    /// Asks become denials.
    DontAsk,
    /// Everything runs, except what deny and ask rules say.
    BypassPermissions,
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "default" => Mode::Default,
            "acceptEdits" => Mode::AcceptEdits,
            "plan" => Mode::Plan,
            "dontAsk" => Mode::DontAsk,
            "bypassPermissions" => Mode::BypassPermissions,
            other => {
                return Err(format!(
                    "unknown permission mode {other:?} (expected default, acceptEdits, plan, dontAsk or bypassPermissions)"
                ));
            }
        })
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "acceptEdits",
            Mode::Plan => "plan",
            Mode::DontAsk => "dontAsk",
            Mode::BypassPermissions => "bypassPermissions",
        })
    }
}

/// The three answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behavior {
    /// Run it.
    Allow,
    /// Refuse it.
    Deny,
    /// Ask the client.
    Ask,
}

/// A PreToolUse hook's permission verdict, as the engine takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookVerdict {
    /// Skip the prompt (never lifts a deny or ask rule).
    Allow,
    /// Force a prompt.
    Ask,
    /// Block.
    Deny {
        /// Why.
        reason: String,
    },
}

/// What decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecidedBy {
    /// A hook.
    Hook,
    /// A rule, with its source file (None: the command line).
    Rule {
        /// The rule text.
        text: String,
        /// Where it came from.
        source: Option<PathBuf>,
    },
    /// The mode.
    Mode(Mode),
    /// A built-in default.
    Default,
    /// Nothing allowed it.
    NoRule,
}

/// The decision for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Allow, deny or ask.
    pub behavior: Behavior,
    /// What decided.
    pub decided_by: DecidedBy,
}

impl Decision {
    /// Model-facing words for a deny or ask (never echoes the input).
    pub fn message(&self, tool: &str) -> String {
        match &self.decided_by {
            DecidedBy::Hook => format!("Permission to use {tool} was denied by a hook"),
            DecidedBy::Rule { text, source } => format!(
                "Permission to use {tool} was denied by the rule {text} (from {})",
                source
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "the command line".into())
            ),
            DecidedBy::Mode(m) => {
                format!("Permission to use {tool} was denied: not allowed in {m} mode")
            }
            DecidedBy::Default | DecidedBy::NoRule => format!(
                "Permission to use {tool} was denied: this call would need approval and no allow rule covers it"
            ),
        }
    }
}

/// A decision request.
#[derive(Debug)]
pub struct DecisionRequest<'a> {
    /// Canonical tool name.
    pub tool: &'a str,
    /// The input.
    pub input: &'a Map<String, Value>,
    /// The mode in force.
    pub mode: Mode,
    /// The PreToolUse hooks' verdict, if any.
    pub hook: Option<HookVerdict>,
}

/// A problem with the permission configuration.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PolicyError(pub String);

/// One rule as written (interim: only its tool name is matched).
#[derive(Debug, Clone)]
pub struct ToolRule {
    tool: String,
    text: String,
    source: Option<PathBuf>,
}

/// Collects rules and mode from settings files and flags.
#[derive(Debug)]
pub struct PolicyBuilder {
    cwd: PathBuf,
    allow: Vec<ToolRule>,
    ask: Vec<ToolRule>,
    deny: Vec<ToolRule>,
    dirs: Vec<PathBuf>,
    file_mode: Option<Mode>,
    cli_mode: Option<Mode>,
}

impl PolicyBuilder {
    /// A builder for a session rooted at `cwd`.
    pub fn new(cwd: PathBuf, _home: PathBuf) -> Self {
        Self {
            dirs: vec![cwd.clone()],
            cwd,
            allow: vec![],
            ask: vec![],
            deny: vec![],
            file_mode: None,
            cli_mode: None,
        }
    }

    /// Adds one file's `permissions` object.
    pub fn add_settings_file(
        &mut self,
        file: &Path,
        permissions: &Value,
    ) -> Result<(), PolicyError> {
        let err = |key: &str, what: &str| {
            PolicyError(format!("{}: permissions.{key}: {what}", file.display()))
        };
        for (key, list) in [("allow", 0), ("ask", 1), ("deny", 2)] {
            let Some(v) = permissions.get(key) else {
                continue;
            };
            let Some(items) = v.as_array() else {
                return Err(err(key, "expected an array of rule strings"));
            };
            for (i, item) in items.iter().enumerate() {
                let Some(text) = item.as_str() else {
                    return Err(err(&format!("{key}[{i}]"), "expected a rule string"));
                };
                let rule = parse(text, Some(file)).map_err(|e| err(&format!("{key}[{i}]"), &e))?;
                [&mut self.allow, &mut self.ask, &mut self.deny][list].push(rule);
            }
        }
        if let Some(v) = permissions.get("additionalDirectories") {
            let Some(items) = v.as_array() else {
                return Err(err("additionalDirectories", "expected an array of paths"));
            };
            for item in items {
                let Some(p) = item.as_str() else {
                    return Err(err("additionalDirectories", "expected an array of paths"));
                };
                self.dirs.push(crate::paths::absolutize(
                    p,
                    &self.cwd,
                    &crate::paths::home_dir(),
                ));
            }
        }
        if let Some(v) = permissions.get("defaultMode") {
            let m = v
                .as_str()
                .ok_or_else(|| err("defaultMode", "expected a mode string"))?;
            self.file_mode = Some(m.parse().map_err(|e: String| err("defaultMode", &e))?);
        }
        Ok(())
    }

    /// `--allowed-tools`.
    pub fn add_cli_allow(&mut self, rule: &str) -> Result<(), PolicyError> {
        for r in split_cli(rule) {
            self.allow
                .push(parse(&r, None).map_err(|e| PolicyError(format!("--allowed-tools: {e}")))?);
        }
        Ok(())
    }

    /// `--disallowed-tools`.
    pub fn add_cli_deny(&mut self, rule: &str) -> Result<(), PolicyError> {
        for r in split_cli(rule) {
            self.deny.push(
                parse(&r, None).map_err(|e| PolicyError(format!("--disallowed-tools: {e}")))?,
            );
        }
        Ok(())
    }

    /// `--permission-mode`.
    pub fn set_cli_mode(&mut self, mode: Mode) {
        self.cli_mode = Some(mode);
    }

    /// The compiled policy.
    pub fn build(self) -> Result<Policy, PolicyError> {
        Ok(Policy {
            mode: self.cli_mode.or(self.file_mode).unwrap_or(Mode::Default),
            allow: self.allow,
            ask: self.ask,
            deny: self.deny,
            workspace: self.dirs,
        })
    }
}

fn split_cli(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

fn parse(text: &str, source: Option<&Path>) -> Result<ToolRule, String> {
    let tool = match text.find('(') {
        Some(i) if text.ends_with(')') => &text[..i],
        Some(_) => return Err(format!("unbalanced parentheses in rule {text:?}")),
        None => text,
    };
    if tool.is_empty() {
        return Err(format!("empty tool name in rule {text:?}"));
    }
    Ok(ToolRule {
        tool: tool.to_string(),
        text: text.to_string(),
        source: source.map(Path::to_path_buf),
    })
}

/// A parsed rule (interim: matched by tool name only).
pub type Rule = ToolRule;

/// The compiled permission policy (interim: tool-level rules only).
#[derive(Debug)]
pub struct Policy {
    mode: Mode,
    allow: Vec<ToolRule>,
    ask: Vec<ToolRule>,
    deny: Vec<ToolRule>,
    workspace: Vec<PathBuf>,
}

impl Policy {
    /// The mode a session starts in.
    pub fn starting_mode(&self) -> Mode {
        self.mode
    }

    /// The workspace roots.
    pub fn workspace(&self) -> &[PathBuf] {
        &self.workspace
    }

    /// A bare-name deny removes the tool.
    pub fn removes_tool(&self, tool: &str) -> bool {
        self.deny.iter().any(|r| r.tool == tool && r.text == tool)
    }

    /// Decides one call.
    pub fn decide(&self, req: &DecisionRequest<'_>) -> Decision {
        let by_rule = |r: &ToolRule| DecidedBy::Rule {
            text: r.text.clone(),
            source: r.source.clone(),
        };
        if let Some(HookVerdict::Deny { .. }) = req.hook {
            return Decision {
                behavior: Behavior::Deny,
                decided_by: DecidedBy::Hook,
            };
        }
        if let Some(r) = self.deny.iter().find(|r| r.tool == req.tool) {
            return Decision {
                behavior: Behavior::Deny,
                decided_by: by_rule(r),
            };
        }
        if let Some(r) = self.ask.iter().find(|r| r.tool == req.tool) {
            return self.ask_or_deny(req.mode, by_rule(r));
        }
        if req.hook == Some(HookVerdict::Ask) {
            return self.ask_or_deny(req.mode, DecidedBy::Hook);
        }
        if req.mode == Mode::BypassPermissions {
            return Decision {
                behavior: Behavior::Allow,
                decided_by: DecidedBy::Mode(req.mode),
            };
        }
        if let Some(r) = self
            .allow
            .iter()
            .find(|r| r.tool == req.tool && r.text == req.tool)
        {
            return Decision {
                behavior: Behavior::Allow,
                decided_by: by_rule(r),
            };
        }
        if self.is_workspace_read(req.tool, req.input)
            || matches!(req.tool, "TaskOutput" | "TaskStop")
        {
            return Decision {
                behavior: Behavior::Allow,
                decided_by: DecidedBy::Default,
            };
        }
        if req.hook == Some(HookVerdict::Allow) {
            return Decision {
                behavior: Behavior::Allow,
                decided_by: DecidedBy::Hook,
            };
        }
        self.ask_or_deny(req.mode, DecidedBy::NoRule)
    }

    /// Parses one rule (hooks' `if` filters).
    pub fn parse_rule(text: &str) -> Result<Rule, String> {
        parse(text, None)
    }

    /// Whether a call matches a rule (interim: by tool name).
    pub fn rule_matches(&self, rule: &Rule, tool: &str, _input: &Map<String, Value>) -> bool {
        rule.tool == tool
    }

    /// Re-checks an updated input against deny and ask rules.
    pub fn recheck_updated(&self, tool: &str, _input: &Map<String, Value>, mode: Mode) -> Decision {
        if let Some(r) = self.deny.iter().find(|r| r.tool == tool) {
            return Decision {
                behavior: Behavior::Deny,
                decided_by: DecidedBy::Rule {
                    text: r.text.clone(),
                    source: r.source.clone(),
                },
            };
        }
        if let Some(r) = self.ask.iter().find(|r| r.tool == tool) {
            return self.ask_or_deny(
                mode,
                DecidedBy::Rule {
                    text: r.text.clone(),
                    source: r.source.clone(),
                },
            );
        }
        Decision {
            behavior: Behavior::Allow,
            decided_by: DecidedBy::NoRule,
        }
    }

    fn ask_or_deny(&self, mode: Mode, by: DecidedBy) -> Decision {
        let behavior = if mode == Mode::DontAsk {
            Behavior::Deny
        } else {
            Behavior::Ask
        };
        Decision {
            behavior,
            decided_by: by,
        }
    }

    fn is_workspace_read(&self, tool: &str, input: &Map<String, Value>) -> bool {
        let path = match tool {
            "Read" => input.get("file_path").and_then(Value::as_str),
            "Glob" | "Grep" => Some(input.get("path").and_then(Value::as_str).unwrap_or(".")),
            "Bash" => {
                let cmd = input.get("command").and_then(Value::as_str).unwrap_or("");
                return super::bash::is_concurrency_safe(cmd);
            }
            _ => None,
        };
        let Some(path) = path else { return false };
        let p = crate::paths::absolutize(path, &self.workspace[0], &crate::paths::home_dir());
        self.workspace.iter().any(|w| p.starts_with(w))
    }
}

impl crate::session::Guard for Policy {
    fn read_denied(&self, _path: &Path) -> bool {
        false
    }
    fn fetch_allowed(&self, _url: &str) -> bool {
        !self.deny.iter().any(|r| r.tool == "WebFetch")
    }
}
