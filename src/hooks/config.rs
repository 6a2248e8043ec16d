//! The `hooks` settings: parsing, validation and the matcher (docs/SEMANTICS.md §4.1).
//!
//! Everything here is pure: a settings value goes in, pre-indexed handlers (or an error naming
//! the file and key) come out. Regexes are compiled once, at load.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

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
}

impl HookEvent {
    /// Every event, in index order.
    pub const ALL: [HookEvent; 5] = [
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::PostToolBatch,
    ];

    /// The name used in settings files, hook input (`hook_event_name`) and wire events.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::PostToolBatch => "PostToolBatch",
        }
    }

    /// The event with this settings name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether the event concerns one tool call (so matchers and `if` filters apply).
    pub fn is_tool_event(self) -> bool {
        !matches!(self, HookEvent::PostToolBatch)
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

/// Events of the reference CLI that toolrt never fires. Settings files written for it may hold
/// them; they load with a warning instead of failing, because nothing toolrt does depends on them.
const FOREIGN_EVENTS: &[&str] = &[
    "SessionStart",
    "SessionEnd",
    "UserPromptSubmit",
    "Notification",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
];

/// Which tool names a hook group applies to. PostToolBatch concerns no single tool, so its
/// matchers (and `if` rules) are not consulted: every PostToolBatch hook runs for every batch.
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

/// What a handler runs.
#[derive(Clone)]
pub(crate) enum HandlerKind {
    /// A shell command, run with `sh -c`.
    Command(Arc<str>),
    /// A Rust function registered by a library user.
    InProcess(Arc<dyn InProcessHook>),
}

impl fmt::Debug for HandlerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerKind::Command(c) => f.debug_tuple("Command").field(c).finish(),
            HandlerKind::InProcess(_) => f.write_str("InProcess"),
        }
    }
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
    /// What wire events and hook-named texts call it: the command, or `in-process hook #n`.
    pub(crate) label: Arc<str>,
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

/// Parsed `hooks` configuration, merged across settings files and in-process registrations.
///
/// Handlers are indexed per event in configuration order (files in the order added, entries in
/// file order, then in-process hooks in registration order); that order decides which
/// `updatedInput` wins when several hooks rewrite a call.
#[derive(Debug, Default)]
pub struct HookConfig {
    handlers: [Vec<Handler>; 5],
    warnings: Vec<String>,
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
        for (name, groups) in events {
            let key = format!("hooks.{name}");
            let event = match HookEvent::from_name(name) {
                Some(e) => e,
                None if FOREIGN_EVENTS.contains(&name.as_str()) => {
                    warnings.push(format!(
                        "{source}: {key}: event not fired by toolrt, its hooks are ignored"
                    ));
                    continue;
                }
                None => {
                    let known: Vec<&str> = HookEvent::ALL.iter().map(|e| e.as_str()).collect();
                    return Err(err(
                        key,
                        format!(
                            "unknown hook event {name:?} (expected one of {})",
                            known.join(", ")
                        ),
                    ));
                }
            };
            let Some(groups) = groups.as_array() else {
                return Err(err(key, expected("an array of matcher groups", groups)));
            };
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
                    let h = parse_handler(
                        event,
                        handler,
                        &matcher,
                        check_if,
                        &mut warnings,
                        &source,
                        &hkey,
                    )
                    .map_err(|(k, m)| err(k, m))?;
                    added.push((event, h));
                }
            }
        }
        // The runtime prints them, each once (or refuses them with --strict-settings).
        self.warnings.extend(warnings);
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

    /// Warnings collected while loading (ignored keys, events toolrt does not fire), one line
    /// each, already naming file and key; the caller prints them on stderr.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The handlers of `event`, in configuration order.
    pub(crate) fn handlers(&self, event: HookEvent) -> &[Handler] {
        &self.handlers[event.index()]
    }
}

fn parse_handler(
    event: HookEvent,
    handler: &Value,
    matcher: &Arc<Matcher>,
    check_if: &dyn Fn(&str) -> Result<(), String>,
    warnings: &mut Vec<String>,
    source: &str,
    hkey: &str,
) -> Result<Handler, (String, String)> {
    let err = |k: &str, m: String| (format!("{hkey}.{k}"), m);
    let Some(obj) = handler.as_object() else {
        return Err((hkey.to_owned(), expected("an object", handler)));
    };
    match obj.get("type") {
        Some(Value::String(t)) if t == "command" => {}
        Some(Value::String(t)) => {
            // Skipping a policy hook would silently drop enforcement, so this is an error.
            return Err(err(
                "type",
                format!("unsupported hook type {t:?} (toolrt runs \"command\" hooks)"),
            ));
        }
        Some(other) => return Err(err("type", expected("a string", other))),
        None => return Err(err("type", "missing (expected \"command\")".into())),
    }
    let command = match obj.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => c.as_str(),
        Some(Value::String(_)) => return Err(err("command", "must not be empty".into())),
        Some(other) => return Err(err("command", expected("a string", other))),
        None => return Err(err("command", "missing".into())),
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
            if !event.is_tool_event() {
                return Err(err(
                    "if",
                    format!("only tool events take an `if` rule, not {event}"),
                ));
            }
            check_if(rule).map_err(|m| err("if", format!("invalid rule {rule:?}: {m}")))?;
            Some(Arc::<str>::from(rule.as_str()))
        }
        Some(other) => return Err(err("if", expected("a permission rule string", other))),
    };
    for k in obj
        .keys()
        .filter(|k| !matches!(k.as_str(), "type" | "command" | "timeout" | "if"))
    {
        warnings.push(format!("{source}: {hkey}.{k}: unknown key ignored"));
    }
    Ok(Handler {
        matcher: Arc::clone(matcher),
        if_rule,
        kind: HandlerKind::Command(command.into()),
        timeout,
        label: command.into(),
    })
}

fn parse_timeout(n: &serde_json::Number) -> Result<Duration, String> {
    let secs = n.as_f64().unwrap_or(f64::NAN);
    if secs.is_nan() || secs <= 0.0 {
        return Err(format!("must be a positive number of seconds, got {n}"));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| format!("too large: {n}"))
}

fn expected(what: &str, got: &Value) -> String {
    let kind = match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    format!("expected {what}, got {kind}")
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
                "settings.json: hooks.PreTooluse: unknown hook event \"PreTooluse\" (expected one of PreToolUse, PermissionRequest, PostToolUse, PostToolUseFailure, PostToolBatch)",
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
                "settings.json: hooks.PreToolUse[0].hooks[0].type: missing (expected \"command\")",
            ),
            (
                h(json!({"type": "prompt"})),
                "settings.json: hooks.PreToolUse[0].hooks[0].type: unsupported hook type \"prompt\" (toolrt runs \"command\" hooks)",
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
    fn foreign_events_and_unknown_keys_warn() {
        let mut c = HookConfig::new();
        let hooks = json!({
            "Stop": [{"hooks": [{"type": "prompt", "prompt": "x"}]}],
            "PreToolUse": [{"matcher": "Bash", "extra": 1,
                            "hooks": [{"type": "command", "command": "x", "async": true}]}]
        });
        c.add_settings_file(Path::new("s.json"), &hooks, &no_if)
            .unwrap();
        assert_eq!(
            c.warnings(),
            [
                "s.json: hooks.Stop: event not fired by toolrt, its hooks are ignored",
                "s.json: hooks.PreToolUse[0].extra: unknown key ignored",
                "s.json: hooks.PreToolUse[0].hooks[0].async: unknown key ignored",
            ]
        );
        assert_eq!(c.handlers(HookEvent::PreToolUse).len(), 1);
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
