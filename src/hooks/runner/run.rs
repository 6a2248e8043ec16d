//! One hook run: a command, an HTTP request or an in-process hook, in the foreground or as an
//! async hook on a task of its own, with its wire events, `onFailure` and output limits.

use super::*;

/// One hook run.
pub(super) struct Job<'a> {
    pub(super) event: HookEvent,
    pub(super) handler: Handler,
    pub(super) timeout: Duration,
    pub(super) input: &'a Value,
    pub(super) bytes: Arc<[u8]>,
    pub(super) subject: Subject,
}

/// What a run produced, before `onFailure` is applied.
struct Ran {
    output: HookOutput,
    exit_code: Option<i32>,
    dropped: u64,
    /// Why this run counts as a failure, if it does.
    failure: Option<String>,
    /// stdout (or the HTTP body), reported on `hook_end` of async hooks.
    stdout: String,
}

impl Ran {
    fn quiet(output: HookOutput) -> Self {
        Self {
            output,
            exit_code: None,
            dropped: 0,
            failure: None,
            stdout: String::new(),
        }
    }

    fn failed(output: HookOutput, why: String) -> Self {
        Self {
            failure: Some(why),
            ..Self::quiet(output)
        }
    }
}

impl Shared {
    /// Starts an async hook on a task of its own; the call does not wait for it. Its
    /// `hook_end` carries its output.
    pub(super) fn spawn_background(this: &Arc<Shared>, job: Job<'_>) {
        let count = this.background_count.fetch_add(1, Ordering::SeqCst);
        if count >= ASYNC_LIMIT || this.background.is_closed() {
            this.background_count.fetch_sub(1, Ordering::SeqCst);
            let mut end = this.start_event(&job);
            end["event"] = "hook_end".into();
            end["outcome"] = "error".into();
            end["error"] = format!(
                "not run: {ASYNC_LIMIT} async hooks are already running or waiting, or the session is ending"
            )
            .into();
            (this.events)(end);
            return;
        }
        let shared = Arc::clone(this);
        let input = job.input.clone();
        let Job {
            event,
            handler,
            timeout,
            bytes,
            subject,
            ..
        } = job;
        this.background.spawn(async move {
            let turns = Arc::clone(&shared.background_turns);
            let cancel = shared.background_cancel.clone();
            let turn = tokio::select! {
                biased;
                _ = cancel.cancelled() => None,
                t = turns.acquire_owned() => t.ok(),
            };
            if turn.is_some() {
                let job = Job {
                    event,
                    handler,
                    timeout,
                    input: &input,
                    bytes,
                    subject,
                };
                shared.execute(job, &cancel).await;
            }
            shared.background_count.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// `hook_start` for a job (also the base of its `hook_end`).
    fn start_event(&self, job: &Job<'_>) -> Value {
        let h = &job.handler;
        let mut e = json!({
            "type": "event",
            "event": "hook_start",
            "hook_event": job.event.as_str(),
            "tool_use_id": job.subject.tool_use_id.as_deref(),
            "command": cut(&h.label, EVENT_COMMAND_CHARS),
        });
        if let Some(batch) = &job.subject.batch {
            e["batch"] = (**batch).into();
        }
        if h.is_async {
            e["async"] = true.into();
        }
        if let Some(plugin) = &h.plugin {
            e["plugin"] = plugin.name.clone().into();
        }
        e
    }

    /// Runs one hook: `hook_start`, the run, `onFailure`, `hook_message`, `hook_end`.
    pub(super) async fn execute(&self, job: Job<'_>, cancel: &CancellationToken) -> HookOutput {
        let h = &job.handler;
        let mut start = self.start_event(&job);
        let mut end = start.clone();
        if let Some(msg) = &h.status_message {
            start["status_message"] = (**msg).into();
        }
        (self.events)(start);
        tracing::debug!(
            hook_event = job.event.as_str(),
            tool_use_id = job.subject.tool_use_id.as_deref(),
            command = %cut(&h.label, EVENT_COMMAND_CHARS),
            "hook started"
        );
        let started = Instant::now();
        let ran = match &h.kind {
            HandlerKind::Command(c) => self.run_command(&job, c, cancel).await,
            HandlerKind::Http(hook) => {
                let headers = http::headers(hook, &|name| self.env_value(name));
                let run =
                    http::run(&hook.url, &headers, job.bytes.to_vec(), job.timeout, cancel).await;
                read_http_run(run, job.timeout)
            }
            HandlerKind::InProcess(f) => {
                let run = std::panic::AssertUnwindSafe(f.run(job.input.clone())).catch_unwind();
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => Ran::quiet(HookOutput::without_decision(HookStatus::Cancelled)),
                    r = tokio::time::timeout(job.timeout, run) => match r {
                        Ok(Ok(out)) => Ran::quiet(out),
                        Ok(Err(_)) => {
                            Ran::failed(HookOutput::error("in-process hook panicked"), "in-process hook panicked".into())
                        }
                        Err(_) => Ran::failed(
                            HookOutput::without_decision(HookStatus::Timeout),
                            timed_out(job.timeout),
                        ),
                    },
                }
            }
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let Ran {
            mut output,
            exit_code,
            dropped,
            mut failure,
            stdout,
        } = ran;
        // Output the reference CLI rejects decides nothing; an exit 2 still blocks.
        if output.status != HookStatus::Blocking
            && let Some(why) = (output.json.as_ref()).and_then(|j| invalid_output(j, job.event))
        {
            output.json = None;
            output.status = HookStatus::Error;
            failure = Some(match failure {
                Some(f) => format!("{f}; {why}"),
                None => why,
            });
        }
        if let Some(why) = &failure {
            tracing::warn!(
                hook_event = job.event.as_str(),
                command = cut(&h.label, EVENT_COMMAND_CHARS),
                error = cut(why, 500),
                "hook failed"
            );
            if h.on_failure == OnFailure::Block && !h.is_async {
                output = blocked_by_failure(job.event, why);
            }
        }
        if let Some(msg) = system_message(&output) {
            self.message(
                job.event,
                job.subject.tool_use_id.as_deref(),
                self.shorten(msg),
            );
        }
        tracing::debug!(
            hook_event = job.event.as_str(),
            tool_use_id = job.subject.tool_use_id.as_deref(),
            exit_code,
            duration_ms,
            outcome = output.status.as_str(),
            "hook finished"
        );
        end["event"] = "hook_end".into();
        end["exit_code"] = exit_code.into();
        end["duration_ms"] = duration_ms.into();
        end["outcome"] = output.status.as_str().into();
        if let Some(why) = failure {
            end["error"] = cut(&why, DIAGNOSTIC_CHARS).into();
        }
        if dropped > 0 {
            end["dropped_bytes"] = dropped.into();
        }
        if h.is_async {
            // Nobody waits for an async hook's answer; its output is reported here instead.
            end["stdout"] = cut(&stdout, PREVIEW_CHARS).into();
            end["stderr"] = cut(&output.stderr, PREVIEW_CHARS).into();
        }
        (self.events)(end);
        output
    }

    /// An `event` `hook_message`: a hook's words for the client (`systemMessage`, a
    /// SessionStart hook's context).
    pub(super) fn message(&self, event: HookEvent, tool_use_id: Option<&str>, message: String) {
        (self.events)(json!({
            "type": "event",
            "event": "hook_message",
            "hook_event": event.as_str(),
            "tool_use_id": tool_use_id,
            "message": message,
        }));
    }

    /// A variable as hook processes would see it: the settings' `env` first, then toolrt's
    /// own environment (minus the scrubbed names).
    pub(super) fn env_value(&self, name: &str) -> Option<String> {
        if let Some((_, v)) = self.env.env.iter().rev().find(|(k, _)| k == name) {
            return Some(v.clone());
        }
        if self.env_remove.iter().any(|n| n == name) {
            return None;
        }
        std::env::var(name).ok()
    }

    /// Variables set for one command hook: the settings' `env`, then toolrt's own.
    fn env_set(&self, h: &Handler) -> Vec<(OsString, OsString)> {
        let session_id = self.ids.read().unwrap_or_else(|e| e.into_inner()).0.clone();
        let project = self.env.project_dir.as_os_str();
        let mut set: Vec<(OsString, OsString)> = self
            .env
            .env
            .iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        set.push(("CLAUDE_PROJECT_DIR".into(), project.into()));
        set.push(("TOOLRT_PROJECT_DIR".into(), project.into()));
        set.push(("CLAUDE_CODE_SESSION_ID".into(), (*session_id).into()));
        if let Some(p) = &h.plugin {
            set.push(("CLAUDE_PLUGIN_ROOT".into(), p.root.as_os_str().into()));
            set.push(("CLAUDE_PLUGIN_DATA".into(), p.data.as_os_str().into()));
        }
        set
    }

    async fn run_command(
        &self,
        job: &Job<'_>,
        hook: &CommandHook,
        cancel: &CancellationToken,
    ) -> Ran {
        let h = &job.handler;
        if let Some(p) = &h.plugin {
            // The plugin's data directory exists before its hooks run (best effort: a hook
            // that needs it reports its own error). File work: on the blocking pool.
            let data = p.data.clone();
            let _ = tokio::task::spawn_blocking(move || std::fs::create_dir_all(data)).await;
        }
        let (program, args): (OsString, Vec<OsString>) = match (&hook.args, hook.shell) {
            (Some(args), _) => (
                self.substitute(&hook.command, h).into(),
                args.iter().map(|a| self.substitute(a, h).into()).collect(),
            ),
            (None, ShellKind::Bash) => (
                self.shell.clone().into_os_string(),
                vec!["-c".into(), hook.command.clone().into()],
            ),
            (None, ShellKind::PowerShell) => (
                "pwsh".into(),
                vec![
                    "-NoProfile".into(),
                    "-Command".into(),
                    hook.command.clone().into(),
                ],
            ),
        };
        let env_set = self.env_set(h);
        let run = command::run(CommandSpec {
            program: &program,
            args: &args,
            label: &h.label,
            cwd: &self.env.cwd,
            env_remove: &self.env_remove,
            env_set: &env_set,
            stdin: &job.bytes,
            timeout: job.timeout,
            cancel,
        })
        .await;
        match run {
            CommandRun::Exited {
                code,
                stdout,
                stderr,
                dropped,
            } => {
                let mut ran = Ran {
                    output: HookOutput::from_exit(code, &stdout, stderr),
                    exit_code: Some(code),
                    dropped,
                    failure: None,
                    stdout,
                };
                let shell_form = hook.args.is_none() && hook.shell == ShellKind::Bash;
                match code {
                    0 if ran.output.status == HookStatus::Error => {
                        ran.failure =
                            Some("printed `{` on stdout but not a valid JSON object".into());
                    }
                    0 => {}
                    2 if shell_form
                        && command::shell_reported_syntax_error(
                            &self.shell,
                            &ran.output.stderr,
                        )
                        && self.syntax_error(&hook.command).await =>
                    {
                        // The shell itself refused the command line (its own report on stderr,
                        // and `-n` agrees): that exit 2 is the shell's, not a block. Any other
                        // exit 2 — a script that ran, whatever its text — blocks.
                        ran.failure = Some(format!(
                            "{} could not parse the hook command: {}",
                            self.shell.display(),
                            ran.output.stderr.trim()
                        ));
                        ran.output = HookOutput::error(std::mem::take(&mut ran.output.stderr));
                    }
                    2 => {}
                    _ => {
                        ran.failure =
                            Some(with_stderr(format!("exit code {code}"), &ran.output.stderr));
                    }
                }
                ran
            }
            CommandRun::Signalled {
                signal,
                stderr,
                dropped,
            } => {
                let output = HookOutput::from_signal(signal, stderr);
                let why = with_stderr(format!("killed by signal {signal}"), &output.stderr);
                Ran {
                    dropped,
                    ..Ran::failed(output, why)
                }
            }
            CommandRun::SpawnFailed(msg) => Ran::failed(HookOutput::error(msg.clone()), msg),
            CommandRun::TimedOut => Ran::failed(
                HookOutput::without_decision(HookStatus::Timeout),
                timed_out(job.timeout),
            ),
            CommandRun::Cancelled => {
                Ran::quiet(HookOutput::without_decision(HookStatus::Cancelled))
            }
        }
    }

    /// Whether the shell cannot parse `command` (cached per command: hook commands are few and
    /// fixed).
    async fn syntax_error(&self, command: &str) -> bool {
        let key = (self.shell.clone(), command.to_owned());
        if let Some(&known) = self
            .syntax
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return known;
        }
        let bad = command::has_syntax_error(&self.shell, command, &self.env.cwd).await;
        self.syntax
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, bad);
        bad
    }

    /// `${CLAUDE_PROJECT_DIR}`, `${CLAUDE_PLUGIN_ROOT}`, `${CLAUDE_PLUGIN_DATA}` replaced in one
    /// exec-form element, as plain text (no shell ever sees it).
    fn substitute(&self, text: &str, h: &Handler) -> String {
        let mut out = text.replace(
            "${CLAUDE_PROJECT_DIR}",
            &self.env.project_dir.to_string_lossy(),
        );
        if let Some(p) = &h.plugin {
            out = out
                .replace("${CLAUDE_PLUGIN_ROOT}", &p.root.to_string_lossy())
                .replace("${CLAUDE_PLUGIN_DATA}", &p.data.to_string_lossy());
        }
        out
    }

    /// Replaces a hook-supplied string over [`MAX_INLINE_CHARS`] by the path of a file holding
    /// it and a preview.
    pub(super) fn shorten(&self, text: String) -> String {
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

/// What `onFailure: block` makes of a failed run: exit code 2 (on PermissionRequest, where
/// exit 2 means nothing, a deny).
fn blocked_by_failure(event: HookEvent, why: &str) -> HookOutput {
    let reason = format!("the hook failed ({why}) and its onFailure is \"block\"");
    if event == HookEvent::PermissionRequest {
        return HookOutput::json(json!({"hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": reason},
        }}));
    }
    HookOutput::block(reason)
}

fn timed_out(timeout: Duration) -> String {
    format!("timed out after {} s", timeout.as_secs_f64())
}

fn with_stderr(what: String, stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        what
    } else {
        format!("{what}: {stderr}")
    }
}

fn read_http_run(run: HttpRun, timeout: Duration) -> Ran {
    match run {
        HttpRun::Answered {
            status,
            body,
            dropped,
        } => {
            let mut ran = Ran {
                output: HookOutput::from_exit(0, &body, String::new()),
                exit_code: None,
                dropped,
                failure: None,
                stdout: body,
            };
            if !(200..300).contains(&status) {
                let body = ran.stdout.trim();
                ran.failure = Some(if body.is_empty() {
                    format!("HTTP status {status}")
                } else {
                    format!("HTTP status {status}: {}", cut(body, 500))
                });
                ran.output = HookOutput::error(String::new());
            } else if ran.output.status == HookStatus::Error {
                ran.failure =
                    Some("the response body starts with `{` but is not a JSON object".into());
            }
            ran
        }
        HttpRun::Failed(e) => Ran::failed(HookOutput::error(e.clone()), e),
        HttpRun::TimedOut => Ran::failed(
            HookOutput::without_decision(HookStatus::Timeout),
            timed_out(timeout),
        ),
        HttpRun::Cancelled => Ran::quiet(HookOutput::without_decision(HookStatus::Cancelled)),
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
