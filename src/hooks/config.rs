//! The `hooks` settings: parsing, validation and the matcher (docs/SEMANTICS.md §4.1).
//!
//! Everything here is pure: a settings value goes in, pre-indexed handlers (or an error naming
//! the file and key) come out. Regexes are compiled once, at load.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Map, Value};

use super::protocol::InProcessHook;

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
}

impl HookEvent {
    /// Every event, in index order.
    pub const ALL: [HookEvent; 8] = [
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::PostToolBatch,
        HookEvent::PermissionDenied,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
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
            HookEvent::PostToolBatch | HookEvent::SessionStart | HookEvent::SessionEnd
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
/// subagents, compaction, … which toolrt does not have).
pub const REFERENCE_EVENTS: &[&str] = &[
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
pub enum Matcher {
    /// `""`, `"*"` or no matcher: every tool.
    All,
    /// Only letters, digits, `_`, `-`, spaces, `,` and `|`: exact, case-sensitive names.
    Names(Vec<String>),
    /// Anything else: an unanchored, case-sensitive regular expression.
    Regex(regex::Regex),
}

impl Matcher {
    /// Parses a matcher string as docs/SEMANTICS.md §4.1 says; the error is the regex compiler's.
    pub fn parse(raw: &str) -> Result<Self, String> {
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
        regex::RegexBuilder::new(raw)
            // Bounded so a hostile pattern cannot take the memory of the runtime.
            .size_limit(1 << 20)
            .build()
            .map(Matcher::Regex)
            .map_err(|e| one_line_regex_error(&e))
    }

    /// Whether this matcher selects the tool named `tool`.
    pub fn matches(&self, tool: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(names) => names.iter().any(|n| n == tool),
            Matcher::Regex(re) => re.is_match(tool),
        }
    }
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
pub const DEFAULT_TIMEOUT_SECS: u64 = 600;

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
pub struct HookConfig {
    handlers: [Vec<Handler>; 8],
    warnings: Vec<String>,
    /// Reference events toolrt does not fire, with the files that configure them.
    not_applicable: BTreeMap<String, Vec<String>>,
    in_process_count: usize,
}

impl HookConfig {
    /// An empty configuration: no hooks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the value of the `hooks` key of one settings file. `check_if` validates an `if` rule
    /// (the permission engine's parser) and returns its error message on a malformed rule.
    ///
    /// On error nothing of this file is added.
    pub fn add_settings_file(
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
    pub fn add_plugin_file(
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
                    Some(Value::String(m)) => Matcher::parse(m).map_err(|e| {
                        err(
                            format!("{gkey}.matcher"),
                            format!("invalid regex {m:?}: {e}"),
                        )
                    })?,
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
    pub fn register_fn(
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
    pub fn is_empty(&self) -> bool {
        self.handlers.iter().all(Vec::is_empty)
    }

    /// Whether any hook is configured for `event`; lets the pipeline skip the hook stage.
    pub fn has(&self, event: HookEvent) -> bool {
        !self.handlers[event.index()].is_empty()
    }

    /// Warnings collected while loading (ignored keys, hook types toolrt does not run), one line
    /// each, already naming file and key; then one line naming every configured event toolrt
    /// does not fire. The caller prints them on stderr.
    pub fn warnings(&self) -> Vec<String> {
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

/// Where a handler entry is, for its errors and warnings.
struct ParseCtx<'a> {
    /// `None` for a reference event toolrt does not fire (checked, never run).
    event: Option<HookEvent>,
    matcher: &'a Arc<Matcher>,
    check_if: &'a dyn Fn(&str) -> Result<(), String>,
    source: &'a str,
    hkey: &'a str,
    plugin: Option<&'a Arc<PluginInfo>>,
}

/// Keys every hook type takes.
const COMMON_KEYS: &[&str] = &[
    "type",
    "timeout",
    "if",
    "onFailure",
    "statusMessage",
    "once",
];

/// Parses one handler entry; `Ok(None)` for a hook type toolrt does not run (with a warning).
fn parse_handler(
    ctx: &ParseCtx<'_>,
    handler: &Value,
    warnings: &mut Vec<String>,
) -> Result<Option<Handler>, (String, String)> {
    let hkey = ctx.hkey;
    let source = ctx.source;
    let err = |k: &str, m: String| (format!("{hkey}.{k}"), m);
    let Some(obj) = handler.as_object() else {
        return Err((hkey.to_owned(), expected("an object", handler)));
    };
    let kind_name = match obj.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(other) => return Err(err("type", expected("a string", other))),
        None => {
            return Err(err(
                "type",
                "missing (expected \"command\" or \"http\")".into(),
            ));
        }
    };
    let (kind, label, own_keys): (HandlerKind, String, &[&str]) = match kind_name {
        "command" => {
            let (hook, label) = parse_command(obj, &err)?;
            (
                HandlerKind::Command(Arc::new(hook)),
                label,
                &["command", "args", "shell", "async", "asyncRewake"],
            )
        }
        "http" => {
            let hook = parse_http(obj, &err)?;
            let label = hook.url.clone();
            (
                HandlerKind::Http(Arc::new(hook)),
                label,
                &["url", "headers", "allowedEnvVars"],
            )
        }
        "prompt" | "agent" | "mcp_tool" => {
            // These need a model or an MCP client, which toolrt does not have: the settings
            // still load, and the user is told this hook will not run (on an event toolrt does
            // not fire the event's own warning says so already).
            if ctx.event.is_some() {
                warnings.push(format!(
                    "{source}: {hkey}.type: {kind_name:?} hooks are not run by toolrt; this hook is ignored"
                ));
            }
            return Ok(None);
        }
        other => {
            return Err(err(
                "type",
                format!(
                    "unknown hook type {other:?} (expected \"command\", \"http\", \"prompt\", \"agent\" or \"mcp_tool\")"
                ),
            ));
        }
    };
    let timeout = match obj.get("timeout") {
        None | Some(Value::Null) => Duration::from_secs(DEFAULT_TIMEOUT_SECS),
        Some(Value::Number(n)) => parse_timeout(n).map_err(|m| err("timeout", m))?,
        Some(other) => {
            return Err(err(
                "timeout",
                expected("a positive number of seconds", other),
            ));
        }
    };
    let if_rule = match obj.get("if") {
        None | Some(Value::Null) => None,
        Some(Value::String(rule)) => {
            if let Some(event) = ctx.event
                && !event.is_tool_event()
            {
                return Err(err(
                    "if",
                    format!("only tool events take an `if` rule, not {event}"),
                ));
            }
            (ctx.check_if)(rule).map_err(|m| err("if", format!("invalid rule {rule:?}: {m}")))?;
            Some(Arc::<str>::from(rule.as_str()))
        }
        Some(other) => return Err(err("if", expected("a permission rule string", other))),
    };
    let on_failure = match obj.get("onFailure") {
        None | Some(Value::Null) => OnFailure::Continue,
        Some(Value::String(s)) if s == "continue" => OnFailure::Continue,
        Some(Value::String(s)) if s == "block" => OnFailure::Block,
        Some(other) => {
            return Err(err(
                "onFailure",
                format!("expected \"continue\" or \"block\", got {}", show(other)),
            ));
        }
    };
    let flag = |key: &str| -> Result<bool, (String, String)> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(err(key, expected("true or false", other))),
        }
    };
    let rewake = flag("asyncRewake")?;
    let is_async = flag("async")? || rewake;
    if rewake {
        warnings.push(format!(
            "{source}: {hkey}.asyncRewake: there is no model for toolrt to wake; the hook runs as an async hook"
        ));
    }
    let once = flag("once")?.then(|| Arc::new(AtomicBool::new(false)));
    let status_message = match obj.get("statusMessage") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(Arc::<str>::from(s.as_str())),
        Some(other) => return Err(err("statusMessage", expected("a string", other))),
    };
    for k in obj
        .keys()
        .filter(|k| !COMMON_KEYS.contains(&k.as_str()) && !own_keys.contains(&k.as_str()))
    {
        warnings.push(format!("{source}: {hkey}.{k}: unknown key ignored"));
    }
    if is_async && on_failure == OnFailure::Block {
        warnings.push(format!(
            "{source}: {hkey}.onFailure: an async hook cannot block anything; \"block\" is ignored"
        ));
    }
    Ok(Some(Handler {
        matcher: Arc::clone(ctx.matcher),
        if_rule,
        kind,
        timeout,
        label: label.into(),
        on_failure,
        is_async,
        once,
        status_message,
        plugin: ctx.plugin.cloned(),
    }))
}

type KeyErr<'a> = &'a dyn Fn(&str, String) -> (String, String);

fn parse_command(
    obj: &Map<String, Value>,
    err: KeyErr<'_>,
) -> Result<(CommandHook, String), (String, String)> {
    let command = match obj.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
        Some(Value::String(_)) => return Err(err("command", "must not be empty".into())),
        Some(other) => return Err(err("command", expected("a string", other))),
        None => return Err(err("command", "missing".into())),
    };
    if command.contains('\0') {
        return Err(err("command", "must not hold a NUL character".into()));
    }
    let args = match obj.get("args") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => {
            let mut args = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) if !s.contains('\0') => args.push(s.clone()),
                    Value::String(_) => {
                        return Err(err(
                            &format!("args[{i}]"),
                            "must not hold a NUL character".into(),
                        ));
                    }
                    other => return Err(err(&format!("args[{i}]"), expected("a string", other))),
                }
            }
            Some(args)
        }
        Some(other) => return Err(err("args", expected("an array of strings", other))),
    };
    let shell = match obj.get("shell") {
        None | Some(Value::Null) => ShellKind::Bash,
        Some(Value::String(s)) if s == "bash" => ShellKind::Bash,
        Some(Value::String(s)) if s == "powershell" => ShellKind::PowerShell,
        Some(other) => {
            return Err(err(
                "shell",
                format!("expected \"bash\" or \"powershell\", got {}", show(other)),
            ));
        }
    };
    // The label names the hook in events and texts: the command line as written.
    let label = match &args {
        None => command.clone(),
        Some(args) => std::iter::once(command.as_str())
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
    };
    Ok((
        CommandHook {
            command,
            args,
            shell,
        },
        label,
    ))
}

fn parse_http(obj: &Map<String, Value>, err: KeyErr<'_>) -> Result<HttpHook, (String, String)> {
    let url = match obj.get("url") {
        Some(Value::String(u)) => u.clone(),
        Some(other) => return Err(err("url", expected("a string", other))),
        None => return Err(err("url", "missing".into())),
    };
    match reqwest::Url::parse(&url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {}
        Ok(u) => {
            return Err(err(
                "url",
                format!("expected an http or https URL, got scheme {:?}", u.scheme()),
            ));
        }
        Err(e) => return Err(err("url", format!("invalid URL {url:?}: {e}"))),
    }
    let headers = match obj.get("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Object(map)) => {
            let mut out = Vec::with_capacity(map.len());
            for (name, value) in map {
                let Value::String(v) = value else {
                    return Err(err(&format!("headers.{name}"), expected("a string", value)));
                };
                if reqwest::header::HeaderName::from_bytes(name.trim().as_bytes()).is_err() {
                    return Err(err(
                        &format!("headers.{name}"),
                        "not a valid header name".into(),
                    ));
                }
                out.push((name.trim().to_owned(), v.clone()));
            }
            out
        }
        Some(other) => return Err(err("headers", expected("an object", other))),
    };
    let allowed_env_vars = match obj.get("allowedEnvVars") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let Value::String(s) = item else {
                    return Err(err(
                        &format!("allowedEnvVars[{i}]"),
                        expected("a string", item),
                    ));
                };
                out.push(s.clone());
            }
            out
        }
        Some(other) => {
            return Err(err(
                "allowedEnvVars",
                expected("an array of variable names", other),
            ));
        }
    };
    Ok(HttpHook {
        url,
        headers,
        allowed_env_vars,
    })
}

/// The reference event `name` is most likely a misspelling of: the same letters in another case,
/// or at most two edits away.
fn closest_event(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    REFERENCE_EVENTS
        .iter()
        .map(|e| (edits(&lower, &e.to_ascii_lowercase()), *e))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, e)| e)
}

/// Levenshtein distance (names are short; the quadratic table is fine).
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

fn parse_timeout(n: &serde_json::Number) -> Result<Duration, String> {
    let secs = n.as_f64().unwrap_or(f64::NAN);
    if secs.is_nan() || secs <= 0.0 {
        return Err(format!("must be a positive number of seconds, got {n}"));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| format!("too large: {n}"))
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => kind_of(other).to_owned(),
    }
}

fn kind_of(got: &Value) -> &'static str {
    match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn expected(what: &str, got: &Value) -> String {
    format!("expected {what}, got {}", kind_of(got))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn no_if(_: &str) -> Result<(), String> {
        Ok(())
    }

    #[test]
    fn matcher_table() {
        // (matcher, tool, matches) — one row per statement of docs/SEMANTICS.md §4.1.
        let rows: &[(&str, &str, bool)] = &[
            // "", "*" match everything.
            ("", "Bash", true),
            ("", "mcp__memory__create", true),
            ("*", "Write", true),
            // Plain names: exact and case-sensitive.
            ("Bash", "Bash", true),
            ("Bash", "bash", false),
            ("Bash", "BashOutput", false),
            ("Bash", "MyBash", false),
            // Lists split on | or , with spaces trimmed.
            ("Edit|Write", "Write", true),
            ("Edit|Write", "Edit", true),
            ("Edit|Write", "Read", false),
            ("Edit, Write", "Write", true),
            ("Edit , Write|Read", "Read", true),
            ("Edit ,Write", "Edit ", false),
            ("my-tool_2", "my-tool_2", true),
            // Separators alone name nothing.
            ("|", "Bash", false),
            // mcp__memory is an exact name: it matches no tool of the server.
            ("mcp__memory", "mcp__memory__create_entities", false),
            // Anything else is an unanchored regex.
            ("mcp__memory__.*", "mcp__memory__create_entities", true),
            ("mcp__memory__.*", "mcp__github__get", false),
            ("Ba.h", "Bash", true),
            ("^Bash$", "Bash", true),
            ("^Bash$", "BashOutput", false),
            ("ash", "Bash", false), // plain name: exact
            ("as.", "Bash", true),  // regex: unanchored
            ("as.", "Write", false),
            ("Notebook.*", "NotebookEdit", true),
            ("(?i)bash", "Bash", true),
            ("[Bb]ash", "bash", true),
            ("Web(Fetch|Search)", "WebSearch", true),
            ("Web(Fetch|Search)", "webfetch", false),
        ];
        for &(m, tool, want) in rows {
            let matcher = Matcher::parse(m).unwrap();
            assert_eq!(matcher.matches(tool), want, "matcher {m:?} on {tool:?}");
        }
        assert!(matches!(Matcher::parse("").unwrap(), Matcher::All));
        assert!(matches!(Matcher::parse("*").unwrap(), Matcher::All));
        assert!(matches!(Matcher::parse("A|B").unwrap(), Matcher::Names(_)));
        assert!(matches!(Matcher::parse("A.B").unwrap(), Matcher::Regex(_)));
    }

    #[test]
    fn missing_or_null_matcher_matches_everything() {
        for group in [
            json!({"hooks": [{"type": "command", "command": "true"}]}),
            json!({"matcher": null, "hooks": [{"type": "command", "command": "true"}]}),
        ] {
            let mut c = HookConfig::new();
            c.add_settings_file(Path::new("s.json"), &json!({"PreToolUse": [group]}), &no_if)
                .unwrap();
            assert!(
                c.handlers(HookEvent::PreToolUse)[0]
                    .matcher
                    .matches("Anything")
            );
        }
    }

    #[test]
    fn parses_handlers_in_order_with_defaults() {
        let mut c = HookConfig::new();
        assert!(c.is_empty());
        let hooks = json!({
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "a", "timeout": 30, "if": "Bash(git *)"},
                    {"type": "command", "command": "b", "timeout": 0.5}
                ]},
                {"hooks": [{"type": "command", "command": "c"}]}
            ],
            "PostToolBatch": [{"hooks": [{"type": "command", "command": "d"}]}]
        });
        c.add_settings_file(Path::new("one.json"), &hooks, &no_if)
            .unwrap();
        c.add_settings_file(
            Path::new("two.json"),
            &json!({"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "e"}]}]}),
            &no_if,
        )
        .unwrap();
        let pre = c.handlers(HookEvent::PreToolUse);
        let labels: Vec<&str> = pre.iter().map(|h| &*h.label).collect();
        assert_eq!(labels, ["a", "b", "c", "e"]);
        assert_eq!(pre[0].timeout, Duration::from_secs(30));
        assert_eq!(pre[0].if_rule.as_deref(), Some("Bash(git *)"));
        assert_eq!(pre[1].timeout, Duration::from_millis(500));
        assert_eq!(pre[2].timeout, Duration::from_secs(600));
        assert!(c.has(HookEvent::PreToolUse));
        assert!(c.has(HookEvent::PostToolBatch));
        assert!(!c.has(HookEvent::PostToolUse));
        assert!(!c.has(HookEvent::PermissionRequest));
        assert!(!c.is_empty());
    }

    #[test]
    fn config_error_table() {
        let bad_if = |rule: &str| {
            if rule.contains('(') && !rule.ends_with(')') {
                Err("unclosed parenthesis".to_owned())
            } else {
                Ok(())
            }
        };
        let h = |extra: Value| {
            let mut base = json!({"type": "command", "command": "true"});
            for (k, v) in extra.as_object().unwrap() {
                base[k] = v.clone();
            }
            json!({"PreToolUse": [{"matcher": "Bash", "hooks": [base]}]})
        };
        let rows: Vec<(Value, &str)> = vec![
            (
                json!([]),
                "settings.json: hooks: expected an object, got an array",
            ),
            (
                json!({"PreToolUse": [{"matcher": "(", "hooks": []}]}),
                "settings.json: hooks.PreToolUse[0].matcher: invalid regex \"(\": unclosed group",
            ),
            (
                json!({"PreToolUse": [{"matcher": 3, "hooks": []}]}),
                "settings.json: hooks.PreToolUse[0].matcher: expected a string, got a number",
            ),
            (
                json!({"PreTooluse": []}),
                "settings.json: hooks.PreTooluse: unknown hook event \"PreTooluse\" (did you mean \"PreToolUse\"?)",
            ),
            (
                json!({"Nonsense": []}),
                "settings.json: hooks.Nonsense: unknown hook event \"Nonsense\" (not an event of the reference CLI; docs/SEMANTICS.md lists them)",
            ),
            (
                json!({"Stop": [{"hooks": [{"type": "command"}]}]}),
                "settings.json: hooks.Stop[0].hooks[0].command: missing",
            ),
            (
                json!({"PostToolUse": {}}),
                "settings.json: hooks.PostToolUse: expected an array of matcher groups, got an object",
            ),
            (
                json!({"PostToolUse": ["x"]}),
                "settings.json: hooks.PostToolUse[0]: expected an object, got a string",
            ),
            (
                json!({"PostToolUse": [{"matcher": "Bash"}]}),
                "settings.json: hooks.PostToolUse[0].hooks: missing",
            ),
            (
                json!({"PostToolUse": [{"hooks": {"type": "command"}}]}),
                "settings.json: hooks.PostToolUse[0].hooks: expected an array, got an object",
            ),
            (
                json!({"PreToolUse": [{"hooks": [[]]}]}),
                "settings.json: hooks.PreToolUse[0].hooks[0]: expected an object, got an array",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"command": "x"}]}]}),
                "settings.json: hooks.PreToolUse[0].hooks[0].type: missing (expected \"command\" or \"http\")",
            ),
            (
                h(json!({"type": "script"})),
                "settings.json: hooks.PreToolUse[0].hooks[0].type: unknown hook type \"script\" (expected \"command\", \"http\", \"prompt\", \"agent\" or \"mcp_tool\")",
            ),
            (
                h(json!({"onFailure": "stop"})),
                "settings.json: hooks.PreToolUse[0].hooks[0].onFailure: expected \"continue\" or \"block\", got \"stop\"",
            ),
            (
                h(json!({"shell": "fish"})),
                "settings.json: hooks.PreToolUse[0].hooks[0].shell: expected \"bash\" or \"powershell\", got \"fish\"",
            ),
            (
                h(json!({"args": "a b"})),
                "settings.json: hooks.PreToolUse[0].hooks[0].args: expected an array of strings, got a string",
            ),
            (
                h(json!({"args": ["a", 1]})),
                "settings.json: hooks.PreToolUse[0].hooks[0].args[1]: expected a string, got a number",
            ),
            (
                h(json!({"async": "yes"})),
                "settings.json: hooks.PreToolUse[0].hooks[0].async: expected true or false, got a string",
            ),
            (
                h(json!({"once": 1})),
                "settings.json: hooks.PreToolUse[0].hooks[0].once: expected true or false, got a number",
            ),
            (
                h(json!({"statusMessage": ["x"]})),
                "settings.json: hooks.PreToolUse[0].hooks[0].statusMessage: expected a string, got an array",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "http"}]}]}),
                "settings.json: hooks.PreToolUse[0].hooks[0].url: missing",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "http", "url": "ftp://x/"}]}]}),
                "settings.json: hooks.PreToolUse[0].hooks[0].url: expected an http or https URL, got scheme \"ftp\"",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "http", "url": "not a url"}]}]}),
                "settings.json: hooks.PreToolUse[0].hooks[0].url: invalid URL \"not a url\": relative URL without a base",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "http", "url": "http://x/", "headers": {"A": 1}}]}]}),
                "settings.json: hooks.PreToolUse[0].hooks[0].headers.A: expected a string, got a number",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "http", "url": "http://x/", "headers": {"bad header": "v"}}]}]}),
                "settings.json: hooks.PreToolUse[0].hooks[0].headers.bad header: not a valid header name",
            ),
            (
                json!({"PreToolUse": [{"hooks": [{"type": "http", "url": "http://x/", "allowedEnvVars": "TOKEN"}]}]}),
                "settings.json: hooks.PreToolUse[0].hooks[0].allowedEnvVars: expected an array of variable names, got a string",
            ),
            (
                h(json!({"type": 1})),
                "settings.json: hooks.PreToolUse[0].hooks[0].type: expected a string, got a number",
            ),
            (
                h(json!({"command": ["ls"]})),
                "settings.json: hooks.PreToolUse[0].hooks[0].command: expected a string, got an array",
            ),
            (
                h(json!({"command": "  "})),
                "settings.json: hooks.PreToolUse[0].hooks[0].command: must not be empty",
            ),
            (
                h(json!({"timeout": 0})),
                "settings.json: hooks.PreToolUse[0].hooks[0].timeout: must be a positive number of seconds, got 0",
            ),
            (
                h(json!({"timeout": -5})),
                "settings.json: hooks.PreToolUse[0].hooks[0].timeout: must be a positive number of seconds, got -5",
            ),
            (
                h(json!({"timeout": "30"})),
                "settings.json: hooks.PreToolUse[0].hooks[0].timeout: expected a positive number of seconds, got a string",
            ),
            (
                h(json!({"timeout": 1e300})),
                "settings.json: hooks.PreToolUse[0].hooks[0].timeout: too large: 1e+300",
            ),
            (
                h(json!({"if": "Bash(git *"})),
                "settings.json: hooks.PreToolUse[0].hooks[0].if: invalid rule \"Bash(git *\": unclosed parenthesis",
            ),
            (
                h(json!({"if": true})),
                "settings.json: hooks.PreToolUse[0].hooks[0].if: expected a permission rule string, got a boolean",
            ),
            (
                json!({"PostToolBatch": [{"hooks": [{"type": "command", "command": "x", "if": "Bash"}]}]}),
                "settings.json: hooks.PostToolBatch[0].hooks[0].if: only tool events take an `if` rule, not PostToolBatch",
            ),
        ];
        for (hooks, want) in rows {
            let mut c = HookConfig::new();
            let e = c
                .add_settings_file(Path::new("settings.json"), &hooks, &bad_if)
                .expect_err(want);
            assert_eq!(e.to_string(), want);
            // Nothing of a bad file is added.
            assert!(c.is_empty(), "{want}");
        }
    }

    #[test]
    fn every_reference_event_loads_and_the_unfired_are_reported_once() {
        let mut c = HookConfig::new();
        let group = json!([{"hooks": [{"type": "command", "command": "true"}]}]);
        let all: Map<String, Value> = REFERENCE_EVENTS
            .iter()
            .map(|e| ((*e).to_owned(), group.clone()))
            .collect();
        c.add_settings_file(Path::new("a.json"), &Value::Object(all.clone()), &no_if)
            .unwrap();
        c.add_settings_file(
            Path::new("b.json"),
            &json!({"Stop": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]}),
            &no_if,
        )
        .unwrap();
        for e in HookEvent::ALL {
            assert_eq!(c.handlers(e).len(), 1, "{e}");
        }
        let w = c.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with(
                "hooks for events that do not apply to toolrt are loaded but never run: "
            ) && w[0].contains("Stop (a.json, b.json)")
                && w[0].contains("Notification (a.json)")
                && !w[0].contains("PreToolUse"),
            "{}",
            w[0]
        );
        assert_eq!(REFERENCE_EVENTS.len(), 34);
    }

    #[test]
    fn hook_keys_and_types() {
        let mut c = HookConfig::new();
        let hooks = json!({
            "PreToolUse": [{"matcher": "Bash", "extra": 1, "hooks": [
                {"type": "command", "command": "x", "frob": true},
                {"type": "command", "command": "prog", "args": ["${CLAUDE_PROJECT_DIR}/a", "b"],
                 "shell": "bash", "onFailure": "block", "once": true, "statusMessage": "checking"},
                {"type": "command", "command": "y", "async": true, "onFailure": "block"},
                {"type": "command", "command": "z", "asyncRewake": true},
                {"type": "http", "url": "http://127.0.0.1:9/hook", "headers": {"Authorization": "Bearer $T"},
                 "allowedEnvVars": ["T"], "timeout": 5},
                {"type": "prompt", "prompt": "is this safe?"},
                {"type": "agent", "prompt": "check"},
                {"type": "mcp_tool", "server": "s", "tool": "t"}
            ]}]
        });
        c.add_settings_file(Path::new("s.json"), &hooks, &no_if)
            .unwrap();
        assert_eq!(
            c.warnings(),
            [
                "s.json: hooks.PreToolUse[0].extra: unknown key ignored",
                "s.json: hooks.PreToolUse[0].hooks[0].frob: unknown key ignored",
                "s.json: hooks.PreToolUse[0].hooks[2].onFailure: an async hook cannot block anything; \"block\" is ignored",
                "s.json: hooks.PreToolUse[0].hooks[3].asyncRewake: there is no model for toolrt to wake; the hook runs as an async hook",
                "s.json: hooks.PreToolUse[0].hooks[5].type: \"prompt\" hooks are not run by toolrt; this hook is ignored",
                "s.json: hooks.PreToolUse[0].hooks[6].type: \"agent\" hooks are not run by toolrt; this hook is ignored",
                "s.json: hooks.PreToolUse[0].hooks[7].type: \"mcp_tool\" hooks are not run by toolrt; this hook is ignored",
            ]
        );
        let h = c.handlers(HookEvent::PreToolUse);
        assert_eq!(h.len(), 5);
        assert_eq!(&*h[1].label, "prog ${CLAUDE_PROJECT_DIR}/a b");
        assert_eq!(h[1].on_failure, OnFailure::Block);
        assert_eq!(h[1].status_message.as_deref(), Some("checking"));
        assert!(h[1].claim() && !h[1].claim(), "once: one run only");
        assert!(h[0].claim() && h[0].claim());
        assert!(h[2].is_async && h[3].is_async && !h[0].is_async);
        match &h[4].kind {
            HandlerKind::Http(http) => {
                assert_eq!(http.url, "http://127.0.0.1:9/hook");
                assert_eq!(http.allowed_env_vars, ["T"]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(h[4].timeout, Duration::from_secs(5));
    }

    #[test]
    fn register_fn_errors() {
        struct Nop;
        #[async_trait::async_trait]
        impl InProcessHook for Nop {
            async fn run(&self, _input: Value) -> super::super::HookOutput {
                super::super::HookOutput::none()
            }
        }
        let mut c = HookConfig::new();
        let e = c
            .register_fn(
                HookEvent::PostToolUse,
                "[",
                Duration::from_secs(1),
                Arc::new(Nop),
            )
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("register_fn: PostToolUse.matcher: invalid regex \"[\": "),
            "{e}"
        );
        let e = c
            .register_fn(
                HookEvent::PostToolUse,
                "Bash",
                Duration::ZERO,
                Arc::new(Nop),
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "register_fn: PostToolUse.timeout: must be a positive duration"
        );
        c.register_fn(
            HookEvent::PostToolUse,
            "Bash",
            Duration::from_secs(1),
            Arc::new(Nop),
        )
        .unwrap();
        assert!(c.has(HookEvent::PostToolUse));
        assert_eq!(
            &*c.handlers(HookEvent::PostToolUse)[0].label,
            "in-process hook #1"
        );
    }

    #[test]
    fn event_names_round_trip() {
        for e in HookEvent::ALL {
            assert_eq!(HookEvent::from_name(e.as_str()), Some(e));
        }
        assert_eq!(HookEvent::from_name("pretooluse"), None);
    }
}
