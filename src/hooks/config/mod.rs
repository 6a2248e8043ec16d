//! The `hooks` settings: parsing, validation and the matcher (docs/SEMANTICS.md §4.1).
//!
//! Everything here is pure: a settings value goes in, pre-indexed handlers (or an error naming
//! the file and key) come out. Regexes are compiled once, at load.

mod parse;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Map, Value};

use super::protocol::InProcessHook;
use parse::{ParseCtx, closest_event, expected, parse_handler};

/// The hook events toolrt fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// Before the permission decision; may allow, deny, ask, defer, rewrite the input or stop.
    PreToolUse,
    /// When the permission decision is *ask*, before the client is asked.
    PermissionRequest,
    /// After a call succeeded.
    PostToolUse,
    /// After a call failed (not on cancellation).
    PostToolUseFailure,
    /// Once per batch, after every call has finished.
    PostToolBatch,
    /// After the permission decision (a rule, the mode, dontAsk) denied a call.
    PermissionDenied,
    /// Once, when the runtime has started.
    SessionStart,
    /// Once, when the runtime shuts down.
    SessionEnd,
    /// When an agent scope starts (`agent_start`, or the `Agent` tool); the matcher matches
    /// the agent type.
    SubagentStart,
    /// When an agent scope ends; the matcher matches the agent type.
    SubagentStop,
}

impl HookEvent {
    /// Every event, in index order.
    pub const ALL: [HookEvent; 10] = [
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::PostToolBatch,
        HookEvent::PermissionDenied,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
    ];

    /// The name used in settings files, hook input (`hook_event_name`) and wire events.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::PostToolBatch => "PostToolBatch",
            HookEvent::PermissionDenied => "PermissionDenied",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
        }
    }

    /// The event with this settings name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether the event concerns one tool call (so matchers and `if` filters apply).
    pub fn is_tool_event(self) -> bool {
        !matches!(
            self,
            HookEvent::PostToolBatch
                | HookEvent::SessionStart
                | HookEvent::SessionEnd
                | HookEvent::SubagentStart
                | HookEvent::SubagentStop
        )
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Every hook event of the reference CLI. All of them load; toolrt fires the ones in
/// [`HookEvent`] and reports the others once as not applicable (they concern a conversation,
/// compaction, … which toolrt does not have).
pub(crate) const REFERENCE_EVENTS: &[&str] = &[
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PreModelSwitch",
    "PostModelSwitch",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "WorktreeCreate",
    "WorktreeRemove",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
    "DirectoryAdded",
    "MessageDisplay",
    "PreSkillShellCommand",
];

/// Which tool names a hook group applies to. PostToolBatch and the session events concern no
/// single tool, so their matchers (and `if` rules) are not consulted.
#[derive(Debug, Clone)]
pub(crate) enum Matcher {
    /// `""`, `"*"` or no matcher: every tool.
    All,
    /// Only letters, digits, `_`, `-`, spaces, `,` and `|`: exact, case-sensitive names.
    Names(Vec<String>),
    /// Anything else: an unanchored, case-sensitive regular expression.
    Regex(Pattern),
}

/// A matcher's regular expression: the `regex` crate's, or, for what it does not take
/// (look-around, backreferences — JavaScript regexes, which the reference CLI uses, have them),
/// `fancy-regex`'s with a bounded backtracking budget.
#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    Plain(regex::Regex),
    Fancy(fancy_regex::Regex),
}

/// The backtracking steps one fancy matcher may take on one tool name.
const FANCY_BACKTRACK_LIMIT: usize = 100_000;

impl Pattern {
    fn as_str(&self) -> &str {
        match self {
            Pattern::Plain(re) => re.as_str(),
            Pattern::Fancy(re) => re.as_str(),
        }
    }

    /// A pattern past its backtracking budget selects the tool: the hook then runs and judges
    /// the call itself, where skipping it would let a guard hook silently miss a call.
    fn is_match(&self, text: &str) -> bool {
        match self {
            Pattern::Plain(re) => re.is_match(text),
            Pattern::Fancy(re) => re.is_match(text).unwrap_or_else(|e| {
                tracing::warn!(pattern = re.as_str(), error = %e, "hook matcher gave up; the hook runs");
                true
            }),
        }
    }
}

impl Matcher {
    /// Parses a matcher string as docs/SEMANTICS.md §4.1 says; the error is the regex compiler's.
    pub(crate) fn parse(raw: &str) -> Result<Self, String> {
        if raw.is_empty() || raw == "*" {
            return Ok(Matcher::All);
        }
        let plain = raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' ' | ',' | '|'));
        if plain {
            let names: Vec<String> = raw
                .split(['|', ','])
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_owned)
                .collect();
            // A matcher made only of separators names nothing; it must not silently match all.
            return Ok(Matcher::Names(names));
        }
        let plain_error = match regex::RegexBuilder::new(raw)
            // Bounded so a hostile pattern cannot take the memory of the runtime.
            .size_limit(1 << 20)
            .build()
        {
            Ok(re) => return Ok(Matcher::Regex(Pattern::Plain(re))),
            Err(e) => one_line_regex_error(&e),
        };
        fancy_regex::RegexBuilder::new(raw)
            .backtrack_limit(FANCY_BACKTRACK_LIMIT)
            .delegate_size_limit(1 << 20)
            .build()
            .map(|re| Matcher::Regex(Pattern::Fancy(re)))
            // The `regex` crate's message is the clearer one for a pattern neither takes.
            .map_err(|_| plain_error)
    }

    /// Whether this matcher selects the tool named `tool` (a canonical name), or one of its
    /// former names in the reference CLI: `Task` selects `Agent`. As in the reference, a regex
    /// selects a tool by a former name only when it spells that name as a whole word (so `^T`
    /// or `TaskStop|TaskOutput` does not select `Agent`; `^Task$` does).
    pub(crate) fn matches(&self, tool: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(names) => names
                .iter()
                .any(|n| n == tool || former_names(tool).any(|f| f == n)),
            Matcher::Regex(re) => {
                re.is_match(tool)
                    || former_names(tool).any(|f| mentions_word(re.as_str(), f) && re.is_match(f))
            }
        }
    }
}

/// The reference CLI's former names of tools toolrt has (former → current): a hook matcher (and a
/// permission rule) naming the former name still selects the tool.
const FORMER_NAMES: &[(&str, &str)] = &[
    ("Task", "Agent"),
    ("KillShell", "TaskStop"),
    ("KillBash", "TaskStop"),
];

/// The former names of the tool `tool`.
fn former_names(tool: &str) -> impl Iterator<Item = &'static str> + '_ {
    FORMER_NAMES
        .iter()
        .filter(move |(_, now)| *now == tool)
        .map(|(former, _)| *former)
}

/// Whether `pattern` contains `word` with no identifier character on either side (a `\b` before
/// it counts as a boundary).
fn mentions_word(pattern: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    pattern.match_indices(word).any(|(i, _)| {
        let pre = &pattern[..i];
        let before_ok = !pre.chars().next_back().is_some_and(ident)
            || pre.ends_with("\\b")
            || pre.ends_with("\\B");
        let after = pattern[i + word.len()..].chars().next();
        before_ok && !after.is_some_and(ident)
    })
}

/// The regex crate's syntax errors span several lines (pattern, caret, message); settings errors
/// are one line, so keep the message line only.
fn one_line_regex_error(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    last.trim().trim_start_matches("error: ").to_owned()
}

/// The shell a shell-form command hook runs through (`shell`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShellKind {
    /// `bash` (the default): the user's `$SHELL` when it is bash, zsh or sh, else `/bin/sh`.
    Bash,
    /// `powershell`: `pwsh -NoProfile -Command`.
    PowerShell,
}

/// A `type: "command"` hook.
#[derive(Debug, PartialEq)]
pub(crate) struct CommandHook {
    /// The shell command, or (exec form) the program.
    pub(crate) command: String,
    /// Exec form: the program's arguments; no shell runs.
    pub(crate) args: Option<Vec<String>>,
    /// The shell of the shell form.
    pub(crate) shell: ShellKind,
}

/// A `type: "http"` hook: the input JSON is POSTed to `url`.
#[derive(Debug, PartialEq)]
pub(crate) struct HttpHook {
    /// Where to POST.
    pub(crate) url: String,
    /// Extra headers; `$VAR` / `${VAR}` in values are filled in for names in `allowed_env_vars`.
    pub(crate) headers: Vec<(String, String)>,
    /// The variables header values may use.
    pub(crate) allowed_env_vars: Vec<String>,
}

/// What a handler runs.
#[derive(Clone)]
pub(crate) enum HandlerKind {
    /// A command, through a shell or (exec form) directly.
    Command(Arc<CommandHook>),
    /// An HTTP endpoint.
    Http(Arc<HttpHook>),
    /// A Rust function registered by a library user.
    InProcess(Arc<dyn InProcessHook>),
}

impl fmt::Debug for HandlerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerKind::Command(c) => f.debug_tuple("Command").field(c).finish(),
            HandlerKind::Http(h) => f.debug_tuple("Http").field(&h.url).finish(),
            HandlerKind::InProcess(_) => f.write_str("InProcess"),
        }
    }
}

/// What a hook's failure does (`onFailure`): it could not start, timed out, exited with a code
/// other than 0 or 2, printed invalid JSON, or its shell could not parse the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum OnFailure {
    /// The failure is reported (an event) and the action goes ahead.
    #[default]
    Continue,
    /// The failure counts as exit code 2: the call (or permission request) is blocked.
    Block,
}

/// The plugin a hook came from (`--plugin-dir`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    /// The plugin's name (its manifest's `name`, else its directory's name).
    pub name: String,
    /// `CLAUDE_PLUGIN_ROOT`: the plugin's directory, absolute.
    pub root: PathBuf,
    /// `CLAUDE_PLUGIN_DATA`: a directory of its own for data that outlives a session.
    pub data: PathBuf,
}

/// One configured hook of one event.
#[derive(Debug, Clone)]
pub(crate) struct Handler {
    /// Which tools it applies to (shared by the handlers of one matcher group).
    pub(crate) matcher: Arc<Matcher>,
    /// The optional `if` permission rule.
    pub(crate) if_rule: Option<Arc<str>>,
    /// What to run.
    pub(crate) kind: HandlerKind,
    /// How long it may run.
    pub(crate) timeout: Duration,
    /// Whether `timeout` was given (a SessionEnd hook's time budget counts only given ones).
    pub(crate) timeout_given: bool,
    /// What wire events and hook-named texts call it: the command, the URL, or
    /// `in-process hook #n`.
    pub(crate) label: Arc<str>,
    /// What a failure does.
    pub(crate) on_failure: OnFailure,
    /// `async`: runs in the background; the call never waits for it.
    pub(crate) is_async: bool,
    /// `once`: set once the hook has been started; it never runs again this session.
    pub(crate) once: Option<Arc<AtomicBool>>,
    /// `statusMessage`, carried on `hook_start`.
    pub(crate) status_message: Option<Arc<str>>,
    /// The plugin it belongs to, if any.
    pub(crate) plugin: Option<Arc<PluginInfo>>,
}

impl Handler {
    /// Whether this hook may run now; a `once` hook claims its only run here.
    pub(crate) fn claim(&self) -> bool {
        match &self.once {
            None => true,
            Some(done) => !done.swap(true, Ordering::SeqCst),
        }
    }
}

/// The default `timeout` of a hook, in seconds.
pub(crate) const DEFAULT_TIMEOUT_SECS: u64 = 600;

/// A `hooks` configuration error: which file, which key, what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: {key}: {message}")]
pub struct HookConfigError {
    /// The settings file (or `register_fn` for in-process hooks).
    pub source_name: String,
    /// The key path, e.g. `hooks.PreToolUse[0].matcher`.
    pub key: String,
    /// What was wrong.
    pub message: String,
}

/// Parsed `hooks` configuration, merged across settings files, plugins and in-process
/// registrations.
///
/// Handlers are indexed per event in configuration order (files in the order added, entries in
/// file order, then in-process hooks in registration order); that order decides which
/// `updatedInput` wins when several hooks rewrite a call.
#[derive(Debug, Default)]
pub(crate) struct HookConfig {
    handlers: [Vec<Handler>; HookEvent::ALL.len()],
    warnings: Vec<String>,
    /// Reference events toolrt does not fire, with the files that configure them.
    not_applicable: BTreeMap<String, Vec<String>>,
    in_process_count: usize,
}

impl HookConfig {
    /// An empty configuration: no hooks.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds the value of the `hooks` key of one settings file. `check_if` validates an `if` rule
    /// (the permission engine's parser) and returns its error message on a malformed rule.
    ///
    /// On error nothing of this file is added.
    pub(crate) fn add_settings_file(
        &mut self,
        file: &Path,
        hooks: &Value,
        check_if: &dyn Fn(&str) -> Result<(), String>,
    ) -> Result<(), HookConfigError> {
        self.add_file(file, hooks, check_if, None)
    }

    /// Adds the hooks of a plugin (its `hooks/hooks.json`, the value of its `hooks` key): they
    /// run with `CLAUDE_PLUGIN_ROOT` and `CLAUDE_PLUGIN_DATA` set to the plugin's own
    /// directories.
    pub(crate) fn add_plugin_file(
        &mut self,
        file: &Path,
        hooks: &Value,
        check_if: &dyn Fn(&str) -> Result<(), String>,
        plugin: PluginInfo,
    ) -> Result<(), HookConfigError> {
        self.add_file(file, hooks, check_if, Some(Arc::new(plugin)))
    }

    fn add_file(
        &mut self,
        file: &Path,
        hooks: &Value,
        check_if: &dyn Fn(&str) -> Result<(), String>,
        plugin: Option<Arc<PluginInfo>>,
    ) -> Result<(), HookConfigError> {
        let source = file.display().to_string();
        let err = |key: String, message: String| HookConfigError {
            source_name: source.clone(),
            key,
            message,
        };
        let Some(events) = hooks.as_object() else {
            return Err(err("hooks".into(), expected("an object", hooks)));
        };
        let mut added: Vec<(HookEvent, Handler)> = Vec::new();
        let mut warnings = Vec::new();
        let mut not_applicable = Vec::new();
        for (name, groups) in events {
            let key = format!("hooks.{name}");
            let event = match HookEvent::from_name(name) {
                Some(e) => Some(e),
                None if REFERENCE_EVENTS.contains(&name.as_str()) => None,
                None => {
                    let hint = match closest_event(name) {
                        Some(e) => format!("did you mean {e:?}?"),
                        None => "not an event of the reference CLI; docs/SEMANTICS.md lists them"
                            .to_owned(),
                    };
                    return Err(err(key, format!("unknown hook event {name:?} ({hint})")));
                }
            };
            let Some(groups) = groups.as_array() else {
                return Err(err(key, expected("an array of matcher groups", groups)));
            };
            // The shape of every entry is checked even for events toolrt does not fire, so a
            // broken file is reported whatever it configures.
            let mut parsed = Vec::new();
            for (gi, group) in groups.iter().enumerate() {
                let gkey = format!("{key}[{gi}]");
                let Some(group) = group.as_object() else {
                    return Err(err(gkey, expected("an object", group)));
                };
                let matcher = match group.get("matcher") {
                    None | Some(Value::Null) => Matcher::All,
                    // As in the reference CLI, a matcher nobody can compile selects no tool;
                    // the file still loads, with a warning naming it.
                    Some(Value::String(m)) => Matcher::parse(m).unwrap_or_else(|e| {
                        warnings.push(format!(
                            "{source}: {gkey}.matcher: invalid regex {m:?}: {e}; \
                             this group's hooks never run"
                        ));
                        Matcher::Names(Vec::new())
                    }),
                    Some(other) => {
                        return Err(err(format!("{gkey}.matcher"), expected("a string", other)));
                    }
                };
                let matcher = Arc::new(matcher);
                for k in group
                    .keys()
                    .filter(|k| !matches!(k.as_str(), "matcher" | "hooks"))
                {
                    warnings.push(format!("{source}: {gkey}.{k}: unknown key ignored"));
                }
                let list = match group.get("hooks") {
                    Some(Value::Array(list)) => list,
                    None => return Err(err(format!("{gkey}.hooks"), "missing".into())),
                    Some(other) => {
                        return Err(err(format!("{gkey}.hooks"), expected("an array", other)));
                    }
                };
                for (hi, handler) in list.iter().enumerate() {
                    let hkey = format!("{gkey}.hooks[{hi}]");
                    let ctx = ParseCtx {
                        event,
                        matcher: &matcher,
                        check_if,
                        source: &source,
                        hkey: &hkey,
                        plugin: plugin.as_ref(),
                    };
                    let h =
                        parse_handler(&ctx, handler, &mut warnings).map_err(|(k, m)| err(k, m))?;
                    if let (Some(event), Some(h)) = (event, h) {
                        parsed.push((event, h));
                    }
                }
            }
            match event {
                Some(_) => added.extend(parsed),
                None => not_applicable.push(name.clone()),
            }
        }
        // The runtime prints them, each once (or refuses them with --strict-settings).
        self.warnings.extend(warnings);
        for name in not_applicable {
            let files = self.not_applicable.entry(name).or_default();
            if !files.contains(&source) {
                files.push(source.clone());
            }
        }
        for (event, h) in added {
            self.handlers[event.index()].push(h);
        }
        Ok(())
    }

    /// Registers an in-process hook: `f` runs for `event` on tools selected by `matcher` (same
    /// semantics as in settings), under the same merge rules, with the given timeout.
    pub(crate) fn register_fn(
        &mut self,
        event: HookEvent,
        matcher: &str,
        timeout: Duration,
        f: Arc<dyn InProcessHook>,
    ) -> Result<(), HookConfigError> {
        let err = |key: &str, message: String| HookConfigError {
            source_name: "register_fn".into(),
            key: format!("{event}.{key}"),
            message,
        };
        let m = Matcher::parse(matcher)
            .map_err(|e| err("matcher", format!("invalid regex {matcher:?}: {e}")))?;
        if timeout.is_zero() {
            return Err(err("timeout", "must be a positive duration".into()));
        }
        self.in_process_count += 1;
        self.handlers[event.index()].push(Handler {
            matcher: Arc::new(m),
            if_rule: None,
            kind: HandlerKind::InProcess(f),
            timeout,
            timeout_given: true,
            label: format!("in-process hook #{}", self.in_process_count).into(),
            on_failure: OnFailure::Continue,
            is_async: false,
            once: None,
            status_message: None,
            plugin: None,
        });
        Ok(())
    }

    /// Whether no hook is configured for any event.
    pub(crate) fn is_empty(&self) -> bool {
        self.handlers.iter().all(Vec::is_empty)
    }

    /// Whether any hook is configured for `event`; lets the pipeline skip the hook stage.
    pub(crate) fn has(&self, event: HookEvent) -> bool {
        !self.handlers[event.index()].is_empty()
    }

    /// Warnings collected while loading (ignored keys, hook types toolrt does not run), one line
    /// each, already naming file and key; then one line naming every configured event toolrt
    /// does not fire. The caller prints them on stderr.
    pub(crate) fn warnings(&self) -> Vec<String> {
        let mut out = self.warnings.clone();
        if !self.not_applicable.is_empty() {
            let list: Vec<String> = self
                .not_applicable
                .iter()
                .map(|(event, files)| format!("{event} ({})", files.join(", ")))
                .collect();
            out.push(format!(
                "hooks for events that do not apply to toolrt are loaded but never run: {}",
                list.join("; ")
            ));
        }
        out
    }

    /// The handlers of `event`, in configuration order.
    pub(crate) fn handlers(&self, event: HookEvent) -> &[Handler] {
        &self.handlers[event.index()]
    }
}
