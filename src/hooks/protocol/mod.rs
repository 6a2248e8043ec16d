//! The hook protocol: what a hook reads on stdin (docs/SEMANTICS.md §4.3) and how its exit code and
//! stdout are read (§4.4). Pure functions only.

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::config::HookEvent;

/// How one hook run ended; also the `outcome` of its `hook_end` wire event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookStatus {
    /// Exit 0 (or an in-process hook that returned normally).
    Success,
    /// Exit 2: a blocking error.
    Blocking,
    /// Any other exit, a signal, a hook that could not start, or unparsable output: non-blocking.
    Error,
    /// The hook ran past its timeout and was killed; it gives no decision.
    Timeout,
    /// The call was cancelled while the hook ran; it gives no decision.
    Cancelled,
}

impl HookStatus {
    /// The wire name (`hook_end.outcome`).
    pub fn as_str(self) -> &'static str {
        match self {
            HookStatus::Success => "success",
            HookStatus::Blocking => "blocking",
            HookStatus::Error => "error",
            HookStatus::Timeout => "timeout",
            HookStatus::Cancelled => "cancelled",
        }
    }
}

/// What one hook produced, read the same way for command and in-process hooks: a status (the
/// meaning of the exit code), the JSON object it printed, and its stderr text.
#[derive(Debug, Clone, PartialEq)]
pub struct HookOutput {
    /// How the run ended.
    pub status: HookStatus,
    /// The JSON object on stdout, when there was one that counts (see [`HookOutput::from_exit`]).
    pub json: Option<Map<String, Value>>,
    /// stderr (the block reason of an exit 2 without a JSON `reason`).
    pub stderr: String,
}

impl HookOutput {
    /// A successful run with nothing to say.
    pub fn none() -> Self {
        Self {
            status: HookStatus::Success,
            json: None,
            stderr: String::new(),
        }
    }

    /// A successful run that printed this JSON; a non-object value counts as no output.
    pub fn json(value: Value) -> Self {
        Self {
            status: HookStatus::Success,
            json: match value {
                Value::Object(m) => Some(m),
                _ => None,
            },
            stderr: String::new(),
        }
    }

    /// A blocking run (exit 2) with this reason.
    pub fn block(reason: impl Into<String>) -> Self {
        Self {
            status: HookStatus::Blocking,
            json: None,
            stderr: reason.into(),
        }
    }

    /// A non-blocking error.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            status: HookStatus::Error,
            json: None,
            stderr: message.into(),
        }
    }

    /// A run that gave no decision because it timed out or was cancelled.
    pub(crate) fn without_decision(status: HookStatus) -> Self {
        Self {
            status,
            json: None,
            stderr: String::new(),
        }
    }

    /// Reads a command hook that exited with `code`: 0 → JSON if stdout starts with `{`, else
    /// nothing; 2 → blocking (a JSON `reason` is kept); anything else → non-blocking error,
    /// unless stdout is a valid JSON object, which then decides.
    pub fn from_exit(code: i32, stdout: &str, stderr: String) -> Self {
        let trimmed = stdout.trim_start();
        let parsed = if trimmed.starts_with('{') {
            serde_json::from_str::<Value>(trimmed)
                .ok()
                .and_then(|v| match v {
                    Value::Object(m) => Some(m),
                    _ => None,
                })
        } else {
            None
        };
        match code {
            0 => match parsed {
                Some(json) => Self {
                    status: HookStatus::Success,
                    json: Some(json),
                    stderr,
                },
                None if trimmed.starts_with('{') => Self {
                    status: HookStatus::Error,
                    json: None,
                    stderr: join_note(
                        stderr,
                        "hook stdout starts with `{` but is not a JSON object",
                    ),
                },
                None => Self {
                    status: HookStatus::Success,
                    json: None,
                    stderr,
                },
            },
            2 => Self {
                status: HookStatus::Blocking,
                json: parsed,
                stderr,
            },
            _ => Self {
                status: HookStatus::Error,
                json: parsed,
                stderr,
            },
        }
    }

    /// Reads a command hook killed by `signal`: a non-blocking error whose output is not trusted
    /// (it was cut off mid-run).
    pub fn from_signal(signal: i32, stderr: String) -> Self {
        Self {
            status: HookStatus::Error,
            json: None,
            stderr: join_note(stderr, &format!("hook killed by signal {signal}")),
        }
    }
}

fn join_note(mut text: String, note: &str) -> String {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(note);
    text
}

/// A hook written in Rust, registered with [`super::HookConfig::register_fn`]. It gets the same
/// input JSON a command hook reads on stdin and returns what a command hook's exit code and
/// stdout would mean.
#[async_trait]
pub trait InProcessHook: Send + Sync {
    /// Runs the hook.
    async fn run(&self, input: Value) -> HookOutput;
}

/// A PreToolUse permission decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookPermission {
    /// Skip the prompt (never lifts a deny or ask rule).
    Allow,
    /// Ask, as an ask rule would.
    Ask,
    /// Nothing runs; the call's outcome is `deferred`.
    Defer,
    /// Block the call.
    Deny,
}

impl HookPermission {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "allow" => Some(Self::Allow),
            "ask" => Some(Self::Ask),
            "defer" => Some(Self::Defer),
            "deny" => Some(Self::Deny),
            _ => None,
        }
    }
}

/// What one hook said on PreToolUse.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PreVerdict {
    pub(crate) permission: Option<HookPermission>,
    pub(crate) reason: Option<String>,
    pub(crate) updated_input: Option<Map<String, Value>>,
    pub(crate) additional_context: Option<String>,
    pub(crate) stop: Option<String>,
}

/// What one hook said on PermissionRequest.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PermissionVerdict {
    /// `Some(true)` allow, `Some(false)` deny.
    pub(crate) allow: Option<bool>,
    pub(crate) updated_input: Option<Map<String, Value>>,
    pub(crate) message: Option<String>,
    pub(crate) stop: Option<String>,
}

/// What one hook said after a call (PostToolUse, PostToolUseFailure) or a batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PostVerdict {
    /// Unlabelled texts for the model, in the order the hook gave them.
    pub(crate) feedback: Vec<String>,
    pub(crate) updated_output: Option<String>,
    pub(crate) stop: Option<String>,
}

/// `continue: false` → the stop reason (a default when `stopReason` is missing).
fn stop_of(json: &Map<String, Value>, event: HookEvent) -> Option<String> {
    if json.get("continue") != Some(&Value::Bool(false)) {
        return None;
    }
    Some(match json.get("stopReason") {
        Some(Value::String(r)) if !r.is_empty() => r.clone(),
        _ => format!("a {event} hook stopped processing"),
    })
}

/// Why a hook's JSON output is invalid for `event`, as the reference CLI judges it: a
/// `hookSpecificOutput` must name the event it answers in `hookEventName`. Such an output counts
/// as a failure and decides nothing (not even its other fields).
pub(crate) fn invalid_output(json: &Map<String, Value>, event: HookEvent) -> Option<String> {
    let spec = json.get("hookSpecificOutput")?;
    let Some(spec) = spec.as_object() else {
        return Some(format!(
            "invalid output ignored: hookSpecificOutput is not an object (it must name the \
             hook event, \"hookEventName\": \"{event}\")"
        ));
    };
    match spec.get("hookEventName") {
        Some(Value::String(name)) if name == event.as_str() => None,
        Some(Value::String(name)) => Some(format!(
            "invalid output ignored: hookSpecificOutput.hookEventName is {name:?}, but the hook \
             ran for {event}"
        )),
        Some(_) | None => Some(format!(
            "invalid output ignored: hookSpecificOutput has no hookEventName (it must be \
             \"{event}\")"
        )),
    }
}

/// `hookSpecificOutput`, unless it names another event (the runner has already turned such an
/// output into a failure; in-crate callers may still pass one).
fn specific(json: &Map<String, Value>, event: HookEvent) -> Option<&Map<String, Value>> {
    let spec = json.get("hookSpecificOutput")?.as_object()?;
    match spec.get("hookEventName") {
        Some(Value::String(name)) if name != event.as_str() => None,
        _ => Some(spec),
    }
}

fn str_field(map: &Map<String, Value>, key: &str) -> Option<String> {
    match map.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

fn obj_field(map: &Map<String, Value>, key: &str) -> Option<Map<String, Value>> {
    map.get(key).and_then(Value::as_object).cloned()
}

/// The text an exit-2 hook blocks with: the JSON `reason`, else stderr, else a plain note.
fn block_reason(out: &HookOutput) -> String {
    if let Some(r) = out.json.as_ref().and_then(|j| str_field(j, "reason")) {
        return r;
    }
    let err = out.stderr.trim();
    if err.is_empty() {
        "blocked by hook (exit code 2)".to_owned()
    } else {
        err.to_owned()
    }
}

/// Reads one hook's PreToolUse output.
pub(crate) fn pre_tool_use_verdict(out: &HookOutput) -> PreVerdict {
    let mut v = PreVerdict::default();
    if matches!(out.status, HookStatus::Timeout | HookStatus::Cancelled) {
        return v;
    }
    let event = HookEvent::PreToolUse;
    if let Some(json) = &out.json {
        v.stop = stop_of(json, event);
        if let Some(spec) = specific(json, event) {
            v.permission = spec
                .get("permissionDecision")
                .and_then(Value::as_str)
                .and_then(HookPermission::parse);
            v.reason = str_field(spec, "permissionDecisionReason");
            v.updated_input = obj_field(spec, "updatedInput");
            v.additional_context = str_field(spec, "additionalContext");
        }
        if v.permission.is_none() {
            // The legacy top-level form.
            v.permission = match json.get("decision").and_then(Value::as_str) {
                Some("approve") => Some(HookPermission::Allow),
                Some("block") => Some(HookPermission::Deny),
                _ => None,
            };
        }
        if v.reason.is_none() {
            v.reason = str_field(json, "reason");
        }
    }
    if out.status == HookStatus::Blocking {
        // Exit 2 blocks whatever the JSON says.
        v.permission = Some(HookPermission::Deny);
        v.reason = Some(block_reason(out));
        v.updated_input = None;
    }
    v
}

/// Reads one hook's PermissionRequest output; exit 2 means nothing special here.
pub(crate) fn permission_request_verdict(out: &HookOutput) -> PermissionVerdict {
    let mut v = PermissionVerdict::default();
    if matches!(out.status, HookStatus::Timeout | HookStatus::Cancelled) {
        return v;
    }
    let event = HookEvent::PermissionRequest;
    let Some(json) = &out.json else { return v };
    v.stop = stop_of(json, event);
    let Some(decision) = specific(json, event)
        .and_then(|s| s.get("decision"))
        .and_then(Value::as_object)
    else {
        return v;
    };
    match decision.get("behavior").and_then(Value::as_str) {
        Some("allow") => {
            v.allow = Some(true);
            v.updated_input = obj_field(decision, "updatedInput");
        }
        Some("deny") => {
            v.allow = Some(false);
            v.message = str_field(decision, "message");
        }
        _ => {}
    }
    v
}

/// Reads one hook's PostToolUse, PostToolUseFailure or PostToolBatch output.
pub(crate) fn post_verdict(event: HookEvent, out: &HookOutput) -> PostVerdict {
    let mut v = PostVerdict::default();
    if matches!(out.status, HookStatus::Timeout | HookStatus::Cancelled) {
        return v;
    }
    let failure = event == HookEvent::PostToolUseFailure;
    if out.status == HookStatus::Blocking {
        v.feedback.push(block_reason(out));
    }
    let Some(json) = &out.json else { return v };
    v.stop = stop_of(json, event);
    if !failure
        && out.status != HookStatus::Blocking
        && json.get("decision").and_then(Value::as_str) == Some("block")
    {
        v.feedback
            .push(str_field(json, "reason").unwrap_or_else(|| "blocked by hook".to_owned()));
    }
    if let Some(spec) = specific(json, event) {
        if let Some(ctx) = str_field(spec, "additionalContext") {
            v.feedback.push(ctx);
        }
        if event == HookEvent::PostToolUse {
            v.updated_output = match spec.get("updatedToolOutput") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => Some(other.to_string()),
            };
        }
    }
    v
}

/// A hook's `systemMessage`: for the client (an `event` `hook_message`), never the model.
pub(crate) fn system_message(out: &HookOutput) -> Option<String> {
    out.json
        .as_ref()
        .and_then(|j| str_field(j, "systemMessage"))
}

/// PermissionDenied: whether a hook said the call may be retried (`hookSpecificOutput.retry`).
pub(crate) fn permission_denied_retry(out: &HookOutput) -> bool {
    out.json
        .as_ref()
        .and_then(|j| specific(j, HookEvent::PermissionDenied))
        .and_then(|s| s.get("retry"))
        == Some(&Value::Bool(true))
}

/// SessionStart: the `additionalContext` a hook gave.
pub(crate) fn session_start_context(out: &HookOutput) -> Option<String> {
    out.json
        .as_ref()
        .and_then(|j| specific(j, HookEvent::SessionStart))
        .and_then(|s| str_field(s, "additionalContext"))
}

/// The fields every event's input starts with (docs/SEMANTICS.md §4.3).
pub(crate) fn base_input(
    session_id: &str,
    transcript_path: Option<&str>,
    cwd: &str,
    permission_mode: &str,
    event: HookEvent,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("session_id".into(), session_id.into());
    m.insert(
        "transcript_path".into(),
        transcript_path.map_or(Value::Null, Value::from),
    );
    m.insert("cwd".into(), cwd.into());
    m.insert("permission_mode".into(), permission_mode.into());
    m.insert("hook_event_name".into(), event.as_str().into());
    m
}

#[cfg(test)]
mod tests;
