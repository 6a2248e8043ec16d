//! The hook runner: selects the hooks of an event for a call, runs them in parallel, emits
//! `hook_start`/`hook_end`, and merges their outputs in configuration order.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::FutureExt;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::command::{self, CommandRun, CommandSpec};
use super::config::{Handler, HandlerKind, HookConfig, HookEvent};
use super::merge::{
    self, Labelled, PermissionRequestResult, PostBatchResult, PostToolResult, PreToolUseResult, cut,
};
use super::protocol::{HookOutput, HookStatus, base_input};

/// Hook output strings longer than this (in characters) are saved to a file.
pub const MAX_INLINE_CHARS: usize = 10_000;
/// How much of an externalized string stays inline as a preview.
const PREVIEW_CHARS: usize = 2_000;
/// `hook_start`/`hook_end` carry the command cut to this many characters.
const EVENT_COMMAND_CHARS: usize = 200;

/// Where and as whom hooks run.
#[derive(Debug, Clone)]
pub struct HookEnv {
    /// The directory hooks run in (and `cwd` in their input).
    pub cwd: PathBuf,
    /// `CLAUDE_PROJECT_DIR` and `TOOLRT_PROJECT_DIR`.
    pub project_dir: PathBuf,
    /// `session_id` in hook input: one per server run.
    pub session_id: String,
    /// Glob patterns of environment variable names removed from hook processes (`*_TOKEN`).
    pub env_scrub: Vec<String>,
    /// Where hook output strings over 10,000 characters are written.
    pub output_dir: PathBuf,
}

/// Decides `if` filters at run time; the permission engine implements it (a compound Bash
/// command matches if any subcommand matches).
pub trait IfFilter: Send + Sync {
    /// Whether the call (`tool`, `input`) matches the permission rule `rule`.
    fn matches(&self, rule: &str, tool: &str, input: &Map<String, Value>) -> bool;
}

/// The call a tool event's hooks are about.
#[derive(Debug, Clone, Copy)]
pub struct ToolHookCall<'a> {
    /// Canonical tool name (after alias resolution).
    pub tool_name: &'a str,
    /// The input as hooks see it (file paths absolute).
    pub tool_input: &'a Map<String, Value>,
    /// The call id.
    pub tool_use_id: &'a str,
    /// The session's current permission mode.
    pub permission_mode: &'a str,
}

/// One finished call of a batch, for PostToolBatch input.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchCallRecord {
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
pub struct HookRunner {
    config: Arc<HookConfig>,
    env: HookEnv,
    cwd_text: String,
    filter: Arc<dyn IfFilter>,
    events: Arc<dyn Fn(Value) + Send + Sync>,
    env_remove: Vec<OsString>,
    externalized: AtomicU64,
}

impl std::fmt::Debug for HookRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRunner")
            .field("env", &self.env)
            .finish_non_exhaustive()
    }
}

/// The call or batch a hook run belongs to, for wire events.
#[derive(Clone, Copy)]
struct Subject<'a> {
    tool_use_id: Option<&'a str>,
    batch: Option<&'a str>,
}

impl HookRunner {
    /// A runner for `config`. `events` receives complete wire objects (`{"type":"event",…}`).
    pub fn new(
        config: Arc<HookConfig>,
        env: HookEnv,
        filter: Arc<dyn IfFilter>,
        events: Arc<dyn Fn(Value) + Send + Sync>,
    ) -> Self {
        let env_remove = command::scrubbed_names(&env.env_scrub);
        Self {
            config,
            cwd_text: env.cwd.to_string_lossy().into_owned(),
            env,
            filter,
            events,
            env_remove,
            externalized: AtomicU64::new(0),
        }
    }

    /// The configuration this runner uses.
    pub fn config(&self) -> &HookConfig {
        &self.config
    }

    /// Runs the PreToolUse hooks of `call` and merges them (deny > defer > ask > allow).
    pub async fn pre_tool_use(
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
    pub async fn permission_request(
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
    pub async fn post_tool_use(
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
    pub async fn post_tool_use_failure(
        &self,
        call: &ToolHookCall<'_>,
        error: &str,
        is_interrupt: bool,
        cancel: &CancellationToken,
    ) -> PostToolResult {
        let event = HookEvent::PostToolUseFailure;
        let extra = |input: &mut Map<String, Value>| {
            input.insert("error".into(), error.into());
            input.insert("is_interrupt".into(), is_interrupt.into());
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
        let selected = self.select(event, Some((call.tool_name, call.tool_input)));
        if selected.is_empty() {
            return R::default();
        }
        let mut input = base_input(
            &self.env.session_id,
            &self.cwd_text,
            call.permission_mode,
            event,
        );
        add_tool(&mut input, call, with_id);
        extra(&mut input);
        let outputs = self
            .run_all(event, &selected, input, subject(call), cancel)
            .await;
        let labelled = labelled(&selected, &outputs);
        merge(&labelled, &mut |s| self.shorten(s))
    }

    /// Runs the PostToolBatch hooks once a batch has finished; the feedback goes into the
    /// `batch_end` event (`hook_feedback`).
    pub async fn post_tool_batch(
        &self,
        batch_id: &str,
        calls: &[BatchCallRecord],
        permission_mode: &str,
    ) -> PostBatchResult {
        let event = HookEvent::PostToolBatch;
        let selected = self.select(event, None);
        if selected.is_empty() {
            return PostBatchResult::default();
        }
        let mut input = base_input(&self.env.session_id, &self.cwd_text, permission_mode, event);
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
            batch: Some(batch_id),
        };
        // The batch is over; nothing can cancel its hooks but their timeouts.
        let never = CancellationToken::new();
        let outputs = self.run_all(event, &selected, input, subject, &never).await;
        let labelled = labelled(&selected, &outputs);
        let post = merge::merge_post(event, &labelled, &mut |s| self.shorten(s));
        PostBatchResult {
            feedback: post.feedback,
            stop: post.stop,
        }
    }

    /// The handlers of `event` that apply to this call, in configuration order, identical
    /// commands once (at the position of their last occurrence, with the longest timeout).
    /// Allocates nothing when no handler matches.
    fn select(
        &self,
        event: HookEvent,
        tool: Option<(&str, &Map<String, Value>)>,
    ) -> Vec<Selected<'_>> {
        let mut out: Vec<Selected<'_>> = Vec::new();
        for h in self.config.handlers(event) {
            if let Some((name, input)) = tool {
                if !h.matcher.matches(name) {
                    continue;
                }
                if let Some(rule) = &h.if_rule
                    && !self.filter.matches(rule, name, input)
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
        out
    }

    /// Runs every selected hook at once and returns their outputs in `selected` order.
    async fn run_all(
        &self,
        event: HookEvent,
        selected: &[Selected<'_>],
        input: Map<String, Value>,
        subject: Subject<'_>,
        cancel: &CancellationToken,
    ) -> Vec<HookOutput> {
        let input = Value::Object(input);
        let needs_bytes = selected
            .iter()
            .any(|s| matches!(s.handler.kind, HandlerKind::Command(_)));
        // Serialised once for every command hook of the event; a trailing newline for hooks
        // that read one line.
        let bytes = if needs_bytes {
            let mut b = serde_json::to_vec(&input).unwrap_or_default();
            b.push(b'\n');
            b
        } else {
            Vec::new()
        };
        let runs = selected
            .iter()
            .map(|s| self.run_one(event, s, &input, &bytes, subject, cancel));
        futures::future::join_all(runs).await
    }

    async fn run_one(
        &self,
        event: HookEvent,
        selected: &Selected<'_>,
        input: &Value,
        bytes: &[u8],
        subject: Subject<'_>,
        cancel: &CancellationToken,
    ) -> HookOutput {
        let h = selected.handler;
        let mut start_event = json!({
            "type": "event",
            "event": "hook_start",
            "hook_event": event.as_str(),
            "tool_use_id": subject.tool_use_id,
            "command": cut(&h.label, EVENT_COMMAND_CHARS),
        });
        if let Some(batch) = subject.batch {
            start_event["batch"] = batch.into();
        }
        let mut end_event = start_event.clone();
        (self.events)(start_event);
        tracing::debug!(
            hook_event = event.as_str(),
            tool_use_id = subject.tool_use_id,
            command = %cut(&h.label, EVENT_COMMAND_CHARS),
            "hook started"
        );
        let started = Instant::now();
        let (output, exit_code, dropped) = match &h.kind {
            HandlerKind::Command(command) => {
                let run = command::run(CommandSpec {
                    command,
                    cwd: &self.env.cwd,
                    project_dir: &self.env.project_dir,
                    env_remove: &self.env_remove,
                    stdin: bytes,
                    timeout: selected.timeout,
                    cancel,
                })
                .await;
                read_command_run(run)
            }
            HandlerKind::InProcess(f) => {
                let run = std::panic::AssertUnwindSafe(f.run(input.clone())).catch_unwind();
                let out = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => HookOutput::without_decision(HookStatus::Cancelled),
                    r = tokio::time::timeout(selected.timeout, run) => match r {
                        Ok(Ok(out)) => out,
                        Ok(Err(_)) => HookOutput::error("in-process hook panicked"),
                        Err(_) => HookOutput::without_decision(HookStatus::Timeout),
                    },
                };
                (out, None, 0)
            }
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if matches!(output.status, HookStatus::Error | HookStatus::Timeout) {
            tracing::warn!(
                hook_event = event.as_str(),
                command = cut(&h.label, EVENT_COMMAND_CHARS),
                outcome = output.status.as_str(),
                stderr = cut(output.stderr.trim(), 500),
                "hook did not succeed; the call proceeds"
            );
        }
        tracing::debug!(
            hook_event = event.as_str(),
            tool_use_id = subject.tool_use_id,
            exit_code,
            duration_ms,
            outcome = output.status.as_str(),
            "hook finished"
        );
        end_event["event"] = "hook_end".into();
        end_event["exit_code"] = exit_code.into();
        end_event["duration_ms"] = duration_ms.into();
        end_event["outcome"] = output.status.as_str().into();
        if dropped > 0 {
            end_event["dropped_bytes"] = dropped.into();
        }
        (self.events)(end_event);
        output
    }

    /// Replaces a hook-supplied string over [`MAX_INLINE_CHARS`] by the path of a file holding it
    /// and a preview.
    fn shorten(&self, text: String) -> String {
        if text.len() <= MAX_INLINE_CHARS || text.chars().count() <= MAX_INLINE_CHARS {
            return text;
        }
        let total = text.chars().count();
        let n = self.externalized.fetch_add(1, Ordering::Relaxed);
        let name = format!(
            "hook-output-{}-{}-{n}.txt",
            std::process::id(),
            unique_stamp()
        );
        let path = self.env.output_dir.join(name);
        let preview = cut(&text, PREVIEW_CHARS);
        match write_file(&self.env.output_dir, &path, &text) {
            Ok(()) => format!(
                "[hook output of {total} characters saved to {}; preview follows]\n{preview}",
                path.display()
            ),
            Err(e) => format!(
                "[hook output of {total} characters cut to {PREVIEW_CHARS}; saving it failed: {e}]\n{preview}"
            ),
        }
    }
}

#[derive(Clone, Copy)]
struct Selected<'a> {
    handler: &'a Handler,
    timeout: Duration,
}

fn same_hook(a: &Handler, b: &Handler) -> bool {
    match (&a.kind, &b.kind) {
        (HandlerKind::Command(x), HandlerKind::Command(y)) => x == y,
        (HandlerKind::InProcess(x), HandlerKind::InProcess(y)) => Arc::ptr_eq(x, y),
        _ => false,
    }
}

fn subject<'a>(call: &ToolHookCall<'a>) -> Subject<'a> {
    Subject {
        tool_use_id: Some(call.tool_use_id),
        batch: None,
    }
}

fn add_tool(input: &mut Map<String, Value>, call: &ToolHookCall<'_>, with_id: bool) {
    input.insert("tool_name".into(), call.tool_name.into());
    input.insert("tool_input".into(), Value::Object(call.tool_input.clone()));
    if with_id {
        input.insert("tool_use_id".into(), call.tool_use_id.into());
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

/// (output, exit code for `hook_end`, dropped bytes)
fn read_command_run(run: CommandRun) -> (HookOutput, Option<i32>, u64) {
    match run {
        CommandRun::Exited {
            code,
            stdout,
            stderr,
            dropped,
        } => (
            HookOutput::from_exit(code, &stdout, stderr),
            Some(code),
            dropped,
        ),
        CommandRun::Signalled {
            signal,
            stderr,
            dropped,
        } => (HookOutput::from_signal(signal, stderr), None, dropped),
        // Fails open: a hook that cannot start is a non-blocking error.
        CommandRun::SpawnFailed(msg) => (HookOutput::error(msg), None, 0),
        CommandRun::TimedOut => (HookOutput::without_decision(HookStatus::Timeout), None, 0),
        CommandRun::Cancelled => (HookOutput::without_decision(HookStatus::Cancelled), None, 0),
    }
}

fn unique_stamp() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn write_file(dir: &Path, path: &Path, text: &str) -> std::io::Result<()> {
    crate::paths::create_private_dir(dir)?;
    std::fs::write(path, text)
}
