//! The hook runner: selects the hooks of an event for a call, runs them in parallel, emits
//! `hook_start`/`hook_end` (and `hook_message`), and merges their outputs in configuration order.
//!
//! # What counts as a failure
//! A hook that cannot start, times out, exits with a code other than 0 or 2, prints `{`… that is
//! not a JSON object, answers an HTTP status outside 2xx, or whose shell cannot parse its
//! command line (a syntax error makes `sh` exit 2 and say so on stderr, which is not the hook
//! asking to block; a script that ran and exited 2 always blocks). Its
//! `onFailure` decides: `continue` (the default) reports it on `hook_end` (`error`) and lets the
//! call go ahead; `block` treats it as exit code 2.

mod run;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::command::{self, CommandRun, CommandSpec};
use super::config::{
    CommandHook, Handler, HandlerKind, HookConfig, HookEvent, OnFailure, ShellKind,
};
use super::http::{self, HttpRun};
use super::merge::{
    self, Labelled, PermissionRequestResult, PostBatchResult, PostToolResult, PreToolUseResult, cut,
};
use super::protocol::{
    HookOutput, HookStatus, base_input, invalid_output, permission_denied_retry,
    session_start_context, system_message,
};
use run::Job;

/// The variable that may raise SessionEnd hooks' time budget, in milliseconds.
const SESSION_END_TIMEOUT_VAR: &str = "CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS";

/// SessionEnd hooks' time budget, as the reference CLI sets it: the longest of 1.5 s, the
/// longest `timeout` a SessionEnd hook gives (`given`; at most 60 s counts), and
/// `CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS` (a positive number of milliseconds; at most an
/// hour counts). Each hook runs for at most this (and at most its own `timeout`).
pub(crate) fn session_end_budget(
    given: impl Iterator<Item = Duration>,
    env: Option<&str>,
) -> Duration {
    let floor = Duration::from_millis(1_500);
    let hooks = given.max().unwrap_or_default().min(Duration::from_secs(60));
    let env = env
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(Duration::ZERO, |ms| {
            Duration::from_millis(ms).min(Duration::from_secs(3_600))
        });
    floor.max(hooks).max(env)
}

/// Hook output strings longer than this (in characters) are saved to a file.
pub(crate) const MAX_INLINE_CHARS: usize = 10_000;
/// How much of an externalized string stays inline as a preview.
const PREVIEW_CHARS: usize = 2_000;
/// `hook_start`/`hook_end` carry the command cut to this many characters.
const EVENT_COMMAND_CHARS: usize = 200;
/// A failure's diagnostic on `hook_end` is cut to this many characters.
const DIAGNOSTIC_CHARS: usize = 2_000;
/// Async hooks running at once; more wait for a turn.
const ASYNC_RUNNING: usize = 32;
/// Async hook runs started or waiting at once; past this a run is skipped (and reported), so a
/// flood of calls cannot pile up processes or memory behind a hook that never ends.
const ASYNC_LIMIT: usize = 256;

/// Where and as whom hooks run.
#[derive(Debug, Clone, Default)]
pub(crate) struct HookEnv {
    /// The directory hooks run in (and `cwd` in their input).
    pub cwd: PathBuf,
    /// `CLAUDE_PROJECT_DIR` and `TOOLRT_PROJECT_DIR`.
    pub project_dir: PathBuf,
    /// `session_id` in hook input and `CLAUDE_CODE_SESSION_ID`: one per server run unless the
    /// client names one.
    pub session_id: String,
    /// `transcript_path` in hook input (null when nobody gave one).
    pub transcript_path: Option<String>,
    /// Glob patterns of environment variable names removed from hook processes (`*_TOKEN`).
    pub env_scrub: Vec<String>,
    /// Variables set for hook processes (settings `env`), after the scrub.
    pub env: Vec<(String, String)>,
    /// Where hook output strings over 10,000 characters are written.
    pub output_dir: PathBuf,
}

/// Decides `if` filters at run time; the permission engine implements it (a compound Bash
/// command matches if any subcommand matches).
pub(crate) trait IfFilter: Send + Sync {
    /// Whether `call` matches the permission rule `rule`.
    fn matches(&self, rule: &str, call: &ToolHookCall<'_>) -> bool;
}

/// The call a tool event's hooks are about.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolHookCall<'a> {
    /// Canonical tool name (after alias resolution).
    pub tool_name: &'a str,
    /// What the tool says permission rules need to know about it (for `if` filters).
    pub access: crate::tool::Access<'a>,
    /// The input as hooks see it (file paths absolute).
    pub tool_input: &'a Map<String, Value>,
    /// The call id.
    pub tool_use_id: &'a str,
    /// The session's current permission mode.
    pub permission_mode: &'a str,
    /// The agent the call belongs to (`agent_id`, `agent_type`), for a call in an agent scope.
    pub agent: Option<(&'a str, &'a str)>,
}

/// The agent a SubagentStart or SubagentStop event is about.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SubagentFacts<'a> {
    /// Its id.
    pub agent_id: &'a str,
    /// Its type (what the hooks' matchers match).
    pub agent_type: &'a str,
    /// The call that opened it (an `Agent` call), for the wire events.
    pub tool_use_id: Option<&'a str>,
    /// Its final answer, when toolrt knows it (SubagentStop's `last_assistant_message`).
    pub last_assistant_message: Option<&'a str>,
}

/// One finished call of a batch, for PostToolBatch input.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BatchCallRecord {
    /// Canonical tool name.
    pub tool_name: String,
    /// The input the call ran with.
    pub tool_input: Value,
    /// The call id.
    pub tool_use_id: String,
    /// What the call produced (as given to PostToolUse).
    pub tool_response: Value,
}

/// Runs hooks; `Send + Sync`, shared through an `Arc` by every call of a session.
pub(crate) struct HookRunner {
    shared: Arc<Shared>,
}

/// What every run, in the foreground or in the background, needs.
struct Shared {
    config: Arc<HookConfig>,
    env: HookEnv,
    cwd_text: String,
    filter: Arc<dyn IfFilter>,
    events: Arc<dyn Fn(Value) + Send + Sync>,
    env_remove: Vec<OsString>,
    /// The shell of `shell: "bash"`, resolved once from `$SHELL`.
    shell: PathBuf,
    /// `session_id` and `transcript_path`, which a client may set after start.
    ids: RwLock<(Arc<str>, Option<Arc<str>>)>,
    externalized: AtomicU64,
    /// Whether a shell-form command has a syntax error, by command (checked on its first
    /// exit 2 only).
    syntax: Mutex<HashMap<(PathBuf, String), bool>>,
    /// Async hook runs, so shutdown can wait for them.
    background: TaskTracker,
    /// Cancels async hook runs still going at shutdown, after their grace.
    background_cancel: CancellationToken,
    background_turns: Arc<tokio::sync::Semaphore>,
    background_count: AtomicUsize,
}

impl std::fmt::Debug for HookRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRunner")
            .field("env", &self.shared.env)
            .finish_non_exhaustive()
    }
}

/// The call or batch a hook run belongs to, for wire events.
#[derive(Clone, Default)]
struct Subject {
    tool_use_id: Option<Arc<str>>,
    batch: Option<Arc<str>>,
}

impl HookRunner {
    /// A runner for `config`. `events` receives complete wire objects (`{"type":"event",…}`).
    pub(crate) fn new(
        config: Arc<HookConfig>,
        env: HookEnv,
        filter: Arc<dyn IfFilter>,
        events: Arc<dyn Fn(Value) + Send + Sync>,
    ) -> Self {
        let env_remove = crate::process::scrubbed_names(&env.env_scrub);
        let shell = command::user_shell(std::env::var_os("SHELL").as_deref());
        let ids = (
            Arc::<str>::from(env.session_id.as_str()),
            env.transcript_path.as_deref().map(Arc::<str>::from),
        );
        Self {
            shared: Arc::new(Shared {
                config,
                cwd_text: env.cwd.to_string_lossy().into_owned(),
                env,
                filter,
                events,
                env_remove,
                shell,
                ids: RwLock::new(ids),
                externalized: AtomicU64::new(0),
                syntax: Mutex::new(HashMap::new()),
                background: TaskTracker::new(),
                background_cancel: CancellationToken::new(),
                background_turns: Arc::new(tokio::sync::Semaphore::new(ASYNC_RUNNING)),
                background_count: AtomicUsize::new(0),
            }),
        }
    }

    /// The configuration this runner uses.
    pub(crate) fn config(&self) -> &HookConfig {
        &self.shared.config
    }

    /// Sets the `session_id` and/or `transcript_path` later hooks see (a client's `session`
    /// message). `None` leaves a value as it is.
    pub(crate) fn set_session(&self, session_id: Option<String>, transcript_path: Option<String>) {
        let mut ids = self.shared.ids.write().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = session_id {
            ids.0 = id.into();
        }
        if let Some(path) = transcript_path {
            ids.1 = Some(path.into());
        }
    }

    /// Runs the PreToolUse hooks of `call` and merges them (deny > defer > ask > allow).
    pub(crate) async fn pre_tool_use(
        &self,
        call: &ToolHookCall<'_>,
        cancel: &CancellationToken,
    ) -> PreToolUseResult {
        self.tool_event(
            HookEvent::PreToolUse,
            call,
            true,
            |_| {},
            cancel,
            |outputs, shorten| merge::merge_pre_tool_use(outputs, shorten),
        )
        .await
    }

    /// Runs the PermissionRequest hooks of `call` (its decision was *ask*).
    pub(crate) async fn permission_request(
        &self,
        call: &ToolHookCall<'_>,
        cancel: &CancellationToken,
    ) -> PermissionRequestResult {
        self.tool_event(
            HookEvent::PermissionRequest,
            call,
            false,
            |_| {},
            cancel,
            |outputs, shorten| merge::merge_permission_request(outputs, shorten),
        )
        .await
    }

    /// Runs the PostToolUse hooks of a call that succeeded.
    pub(crate) async fn post_tool_use(
        &self,
        call: &ToolHookCall<'_>,
        tool_response: &Value,
        duration_ms: u64,
        cancel: &CancellationToken,
    ) -> PostToolResult {
        let event = HookEvent::PostToolUse;
        let extra = |input: &mut Map<String, Value>| {
            input.insert("tool_response".into(), tool_response.clone());
            input.insert("duration_ms".into(), duration_ms.into());
        };
        self.tool_event(event, call, true, extra, cancel, |outputs, shorten| {
            merge::merge_post(event, outputs, shorten)
        })
        .await
    }

    /// Runs the PostToolUseFailure hooks of a call that failed (not one that was cancelled).
    pub(crate) async fn post_tool_use_failure(
        &self,
        call: &ToolHookCall<'_>,
        error: &str,
        is_interrupt: bool,
        duration_ms: u64,
        cancel: &CancellationToken,
    ) -> PostToolResult {
        let event = HookEvent::PostToolUseFailure;
        let extra = |input: &mut Map<String, Value>| {
            input.insert("error".into(), error.into());
            input.insert("is_interrupt".into(), is_interrupt.into());
            input.insert("duration_ms".into(), duration_ms.into());
        };
        let mut result = self
            .tool_event(event, call, true, extra, cancel, |outputs, shorten| {
                merge::merge_post(event, outputs, shorten)
            })
            .await;
        // PostToolUseFailure cannot replace what the model sees.
        result.updated_output = None;
        result
    }

    /// Runs the PermissionDenied hooks of a call the permission decision denied; true when a
    /// hook says the call may be retried (`hookSpecificOutput.retry`).
    pub(crate) async fn permission_denied(
        &self,
        call: &ToolHookCall<'_>,
        reason: &str,
        cancel: &CancellationToken,
    ) -> bool {
        let extra = |input: &mut Map<String, Value>| {
            input.insert("reason".into(), reason.into());
        };
        self.tool_event(
            HookEvent::PermissionDenied,
            call,
            true,
            extra,
            cancel,
            |outputs, _| outputs.iter().any(|(_, out)| permission_denied_retry(out)),
        )
        .await
    }

    /// Runs the SessionStart hooks (`source: "startup"`); their `additionalContext` goes to
    /// the client as `hook_message` events.
    pub(crate) async fn session_start(&self, permission_mode: &str) {
        self.session_event(
            HookEvent::SessionStart,
            permission_mode,
            "source",
            "startup",
        )
        .await;
    }

    /// Runs the SessionEnd hooks (`reason: "other"`), within [`session_end_budget`]; `cancel`
    /// (cancelling everything: SIGINT) stops them at once.
    pub(crate) async fn session_end(&self, permission_mode: &str, cancel: &CancellationToken) {
        let event = HookEvent::SessionEnd;
        let mut selected = self.select(event, None);
        if selected.is_empty() {
            return;
        }
        let given = selected
            .iter()
            .filter(|s| s.handler.timeout_given)
            .map(|s| s.handler.timeout);
        let env = self.shared.env_value(SESSION_END_TIMEOUT_VAR);
        let budget = session_end_budget(given, env.as_deref());
        for s in &mut selected {
            s.timeout = s.timeout.min(budget);
        }
        let mut input = self.base(permission_mode, event);
        input.insert("reason".into(), "other".into());
        self.run_all(event, &selected, input, Subject::default(), cancel)
            .await;
    }

    /// Runs SubagentStart or SubagentStop hooks whose matcher matches the agent's type, in the
    /// background: an agent's start or end never waits for them (nothing they answer can change
    /// it), and they are bounded as async hooks are. The input has the reference CLI's fields
    /// (the common ones, then `agent_id`, `agent_type`): SubagentStart without
    /// `permission_mode`, as the reference builds it; SubagentStop with `permission_mode`,
    /// `stop_hook_active` (false), `agent_transcript_path` (a string in the reference's type:
    /// `""`, as the reference sends when it keeps no transcript, and toolrt keeps none) and
    /// `session_crons` (`[]`: toolrt schedules nothing), and the reference's optional
    /// `last_assistant_message` when toolrt knows the agent's final answer (the `Agent` call's
    /// `execute_result`, or `agent_end`'s field). `background_tasks` is left out: toolrt's
    /// background tasks belong to the session, not to an agent.
    pub(crate) fn subagent_event(&self, event: HookEvent, agent: &SubagentFacts<'_>, mode: &str) {
        let selected: Vec<Selected<'_>> = self
            .shared
            .config
            .handlers(event)
            .iter()
            .filter(|h| h.matcher.matches(agent.agent_type) && h.claim())
            .map(|h| Selected {
                handler: h,
                timeout: h.timeout,
            })
            .collect();
        if selected.is_empty() {
            return;
        }
        let mut input = self.base(mode, event);
        input.insert("agent_id".into(), agent.agent_id.into());
        input.insert("agent_type".into(), agent.agent_type.into());
        if event == HookEvent::SubagentStop {
            input.insert("agent_transcript_path".into(), "".into());
            input.insert("stop_hook_active".into(), Value::Bool(false));
            input.insert("session_crons".into(), Value::Array(Vec::new()));
            if let Some(last) = agent.last_assistant_message {
                input.insert("last_assistant_message".into(), last.into());
            }
        } else {
            input.remove("permission_mode");
        }
        let input = Value::Object(input);
        let mut bytes = serde_json::to_vec(&input).unwrap_or_default();
        bytes.push(b'\n');
        let bytes: Arc<[u8]> = bytes.into();
        let subject = Subject {
            tool_use_id: agent.tool_use_id.map(Arc::from),
            batch: None,
        };
        for s in &selected {
            let job = s.job(event, &input, &bytes, &subject);
            Shared::spawn_background(&self.shared, job);
        }
    }

    async fn session_event(&self, event: HookEvent, mode: &str, key: &str, value: &str) {
        let selected = self.select(event, None);
        if selected.is_empty() {
            return;
        }
        let mut input = self.base(mode, event);
        input.insert(key.into(), value.into());
        // Nothing cancels a session event but its hooks' timeouts.
        let never = CancellationToken::new();
        let outputs = self
            .run_all(event, &selected, input, Subject::default(), &never)
            .await;
        if event == HookEvent::SessionStart {
            for out in &outputs {
                if let Some(ctx) = session_start_context(out) {
                    self.shared.message(event, None, self.shared.shorten(ctx));
                }
            }
        }
    }

    /// Waits for async hooks still running, at most `grace` (or until `cancel`: SIGINT), then
    /// kills the rest. Called once at shutdown.
    pub(crate) async fn drain_background(&self, grace: Duration, cancel: &CancellationToken) {
        let bg = &self.shared.background;
        bg.close();
        let waited = tokio::select! {
            r = tokio::time::timeout(grace, bg.wait()) => r.is_ok(),
            _ = cancel.cancelled() => false,
        };
        if !waited {
            self.shared.background_cancel.cancel();
            bg.wait().await;
        }
    }

    /// The fields every event's input starts with, with the current session ids.
    fn base(&self, mode: &str, event: HookEvent) -> Map<String, Value> {
        let ids = self.shared.ids.read().unwrap_or_else(|e| e.into_inner());
        base_input(&ids.0, ids.1.as_deref(), &self.shared.cwd_text, mode, event)
    }

    /// The shared course of a tool event: select the matching hooks (nothing to do: the
    /// default result at once), build the input (`extra` adds the event's own fields), run
    /// them all, and merge their outputs in configuration order.
    async fn tool_event<R: Default>(
        &self,
        event: HookEvent,
        call: &ToolHookCall<'_>,
        with_id: bool,
        extra: impl FnOnce(&mut Map<String, Value>),
        cancel: &CancellationToken,
        merge: impl FnOnce(&[Labelled<'_>], &mut dyn FnMut(String) -> String) -> R,
    ) -> R {
        let selected = self.select(event, Some(call));
        if selected.is_empty() {
            return R::default();
        }
        let mut input = self.base(call.permission_mode, event);
        add_tool(&mut input, call, with_id);
        extra(&mut input);
        let subject = Subject {
            tool_use_id: Some(call.tool_use_id.into()),
            batch: None,
        };
        let outputs = self.run_all(event, &selected, input, subject, cancel).await;
        let labelled = labelled(&selected, &outputs);
        merge(&labelled, &mut |s| self.shared.shorten(s))
    }

    /// Runs the PostToolBatch hooks once a batch has finished; the feedback goes into the
    /// `batch_end` event (`hook_feedback`).
    pub(crate) async fn post_tool_batch(
        &self,
        batch_id: &str,
        calls: &[BatchCallRecord],
        permission_mode: &str,
        cancel: &CancellationToken,
    ) -> PostBatchResult {
        let event = HookEvent::PostToolBatch;
        let selected = self.select(event, None);
        if selected.is_empty() {
            return PostBatchResult::default();
        }
        let mut input = self.base(permission_mode, event);
        let tool_calls: Vec<Value> = calls
            .iter()
            .map(|c| {
                json!({
                    "tool_name": c.tool_name,
                    "tool_input": c.tool_input,
                    "tool_use_id": c.tool_use_id,
                    "tool_response": c.tool_response,
                })
            })
            .collect();
        input.insert("tool_calls".into(), Value::Array(tool_calls));
        let subject = Subject {
            tool_use_id: None,
            batch: Some(batch_id.into()),
        };
        // The batch is over: only cancelling everything (SIGINT) stops its hooks early.
        let outputs = self.run_all(event, &selected, input, subject, cancel).await;
        let labelled = labelled(&selected, &outputs);
        let post = merge::merge_post(event, &labelled, &mut |s| self.shared.shorten(s));
        PostBatchResult {
            feedback: post.feedback,
            stop: post.stop,
        }
    }

    /// The handlers of `event` that apply to this call, in configuration order, identical
    /// hooks once (at the position of their last occurrence, with the longest timeout).
    /// Allocates nothing when no handler matches.
    fn select(&self, event: HookEvent, tool: Option<&ToolHookCall<'_>>) -> Vec<Selected<'_>> {
        let mut out: Vec<Selected<'_>> = Vec::new();
        for h in self.shared.config.handlers(event) {
            if let Some(call) = tool {
                if !h.matcher.matches(call.tool_name) {
                    continue;
                }
                if let Some(rule) = &h.if_rule
                    && !self.shared.filter.matches(rule, call)
                {
                    continue;
                }
            }
            let mut timeout = h.timeout;
            if let Some(i) = out.iter().position(|s| same_hook(s.handler, h)) {
                timeout = timeout.max(out.remove(i).timeout);
            }
            out.push(Selected {
                handler: h,
                timeout,
            });
        }
        // A `once` hook claims its single run only when it is really about to run.
        out.retain(|s| s.handler.claim());
        out
    }

    /// Runs every selected hook at once and returns their outputs in `selected` order (an
    /// async hook's output is "nothing": it reports on its own).
    async fn run_all(
        &self,
        event: HookEvent,
        selected: &[Selected<'_>],
        input: Map<String, Value>,
        subject: Subject,
        cancel: &CancellationToken,
    ) -> Vec<HookOutput> {
        let input = Value::Object(input);
        let needs_bytes = selected
            .iter()
            .any(|s| !matches!(s.handler.kind, HandlerKind::InProcess(_)));
        // Serialised once for every command and HTTP hook of the event; a trailing newline for
        // hooks that read one line.
        let bytes: Arc<[u8]> = if needs_bytes {
            let mut b = serde_json::to_vec(&input).unwrap_or_default();
            b.push(b'\n');
            b.into()
        } else {
            Arc::from(Vec::new())
        };
        let runs = selected.iter().map(|s| {
            let job = s.job(event, &input, &bytes, &subject);
            if s.handler.is_async {
                Shared::spawn_background(&self.shared, job);
                futures::future::ready(HookOutput::none()).boxed()
            } else {
                self.shared.execute(job, cancel).boxed()
            }
        });
        futures::future::join_all(runs).await
    }
}

#[derive(Clone, Copy)]
struct Selected<'a> {
    handler: &'a Handler,
    timeout: Duration,
}

impl Selected<'_> {
    /// One run of this hook with this input.
    fn job<'i>(
        &self,
        event: HookEvent,
        input: &'i Value,
        bytes: &Arc<[u8]>,
        subject: &Subject,
    ) -> Job<'i> {
        Job {
            event,
            handler: self.handler.clone(),
            timeout: self.timeout,
            input,
            bytes: Arc::clone(bytes),
            subject: subject.clone(),
        }
    }
}

fn same_hook(a: &Handler, b: &Handler) -> bool {
    let same_plugin = a.plugin.as_ref().map(|p| &p.root) == b.plugin.as_ref().map(|p| &p.root);
    same_plugin
        && a.is_async == b.is_async
        && match (&a.kind, &b.kind) {
            (HandlerKind::Command(x), HandlerKind::Command(y)) => x == y,
            (HandlerKind::Http(x), HandlerKind::Http(y)) => x == y,
            (HandlerKind::InProcess(x), HandlerKind::InProcess(y)) => Arc::ptr_eq(x, y),
            _ => false,
        }
}

fn add_tool(input: &mut Map<String, Value>, call: &ToolHookCall<'_>, with_id: bool) {
    input.insert("tool_name".into(), call.tool_name.into());
    input.insert("tool_input".into(), Value::Object(call.tool_input.clone()));
    if with_id {
        input.insert("tool_use_id".into(), call.tool_use_id.into());
    }
    if let Some((id, ty)) = call.agent {
        input.insert("agent_id".into(), id.into());
        input.insert("agent_type".into(), ty.into());
    }
}

fn labelled<'a>(
    selected: &'a [Selected<'_>],
    outputs: &'a [HookOutput],
) -> Vec<(&'a str, &'a HookOutput)> {
    selected
        .iter()
        .zip(outputs)
        .map(|(s, o)| (&*s.handler.label, o))
        .collect()
}

#[cfg(test)]
mod tests;
