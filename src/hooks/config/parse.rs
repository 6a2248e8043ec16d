//! One hook handler entry of the `hooks` settings: its type, its keys, and the errors and
//! warnings that name them.

use super::*;

/// Where a handler entry is, for its errors and warnings.
pub(super) struct ParseCtx<'a> {
    /// `None` for a reference event toolrt does not fire (checked, never run).
    pub(super) event: Option<HookEvent>,
    pub(super) matcher: &'a Arc<Matcher>,
    pub(super) check_if: &'a dyn Fn(&str) -> Result<(), String>,
    pub(super) source: &'a str,
    pub(super) hkey: &'a str,
    pub(super) plugin: Option<&'a Arc<PluginInfo>>,
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
pub(super) fn parse_handler(
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
    let Some((kind, label, own_keys)) = parse_kind(ctx, obj, &err, warnings)? else {
        return Ok(None);
    };
    let timeout = parse_timeout_key(obj, &err)?;
    let if_rule = parse_if(ctx, obj, &err)?;
    let on_failure = parse_on_failure(obj, &err)?;
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
        timeout_given: !matches!(obj.get("timeout"), None | Some(Value::Null)),
        label: label.into(),
        on_failure,
        is_async,
        once,
        status_message,
        plugin: ctx.plugin.cloned(),
    }))
}

/// A handler's type and what comes with it: the hook, its label and the keys of its own.
type Kind = (HandlerKind, String, &'static [&'static str]);

/// The handler's `type` and the keys of that type; `None` for a type toolrt does not run (with a
/// warning).
fn parse_kind(
    ctx: &ParseCtx<'_>,
    obj: &Map<String, Value>,
    err: KeyErr<'_>,
    warnings: &mut Vec<String>,
) -> Result<Option<Kind>, (String, String)> {
    let (hkey, source) = (ctx.hkey, ctx.source);
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
    let kind = match kind_name {
        "command" => {
            let (hook, label) = parse_command(obj, err)?;
            let own: &[&str] = &["command", "args", "shell", "async", "asyncRewake"];
            Some((HandlerKind::Command(Arc::new(hook)), label, own))
        }
        "http" => {
            let hook = parse_http(obj, err)?;
            let label = hook.url.clone();
            let own: &[&str] = &["url", "headers", "allowedEnvVars"];
            Some((HandlerKind::Http(Arc::new(hook)), label, own))
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
            None
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
    Ok(kind)
}

/// `timeout`, in seconds.
fn parse_timeout_key(
    obj: &Map<String, Value>,
    err: KeyErr<'_>,
) -> Result<Duration, (String, String)> {
    Ok(match obj.get("timeout") {
        None | Some(Value::Null) => Duration::from_secs(DEFAULT_TIMEOUT_SECS),
        Some(Value::Number(n)) => parse_timeout(n).map_err(|m| err("timeout", m))?,
        Some(other) => {
            return Err(err(
                "timeout",
                expected("a positive number of seconds", other),
            ));
        }
    })
}

/// `if`: a permission rule, on tool events only.
fn parse_if(
    ctx: &ParseCtx<'_>,
    obj: &Map<String, Value>,
    err: KeyErr<'_>,
) -> Result<Option<Arc<str>>, (String, String)> {
    Ok(match obj.get("if") {
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
    })
}

/// `onFailure`: `continue` or `block`.
fn parse_on_failure(
    obj: &Map<String, Value>,
    err: KeyErr<'_>,
) -> Result<OnFailure, (String, String)> {
    Ok(match obj.get("onFailure") {
        None | Some(Value::Null) => OnFailure::Continue,
        Some(Value::String(s)) if s == "continue" => OnFailure::Continue,
        Some(Value::String(s)) if s == "block" => OnFailure::Block,
        Some(other) => {
            return Err(err(
                "onFailure",
                format!("expected \"continue\" or \"block\", got {}", show(other)),
            ));
        }
    })
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
pub(super) fn closest_event(name: &str) -> Option<&'static str> {
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
        other => crate::quote::kind_of(other).to_owned(),
    }
}

pub(super) fn expected(what: &str, got: &Value) -> String {
    format!("expected {what}, got {}", crate::quote::kind_of(got))
}
