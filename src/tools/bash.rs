//! `Bash` {command, timeout?, description?, run_in_background?}: `bash -c` in its own process
//! group in the working directory.

use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use crate::call::Input;
use crate::session::Session;
use crate::tool::{BudgetClass, Tool, ToolContext, ToolOutput, ToolStatus};

use super::str_field;

/// Default timeout in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Longest allowed timeout in milliseconds.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// The Bash tool.
#[derive(Debug, Default)]
pub struct Bash;

#[async_trait]
impl Tool for Bash {
    fn name(&self) -> &str {
        "Bash"
    }

    fn description(&self) -> &str {
        "Runs a bash command in the working directory and returns its output. The timeout is in milliseconds (default 120000, at most 600000)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command to run"},
                "timeout": {"type": "integer", "minimum": 0, "description": "Timeout in milliseconds (default 120000, clamped to 600000)"},
                "description": {"type": "string", "description": "What the command does, in a few words"},
                "run_in_background": {"type": "boolean", "description": "Run the command in the background"}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, input: &Input) -> bool {
        crate::permission::bash::is_concurrency_safe(str_field(input, "command"))
    }

    fn budget_class(&self) -> BudgetClass {
        BudgetClass::Shell
    }

    fn validate(&self, input: &Input, _session: &Session) -> Result<(), String> {
        if input.get("run_in_background").and_then(Value::as_bool) == Some(true) {
            return Err("run_in_background is not supported by this build of toolrt yet; run the command in the foreground".into());
        }
        if str_field(input, "command").trim().is_empty() {
            return Err("command is empty; give the command to run".into());
        }
        Ok(())
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        let command = str_field(&input, "command");
        let timeout_ms = input
            .get("timeout")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_TIMEOUT_MS)
            .min(MAX_TIMEOUT_MS);
        let mut cmd = tokio::process::Command::new("bash");
        cmd.arg("-c")
            .arg(command)
            .current_dir(&ctx.session.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => return ToolOutput::failed(format!("Could not start bash: {e}")),
        };
        let pgid = child.id();
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let read_out = async {
            let mut buf = Vec::new();
            if let Some(s) = stdout.as_mut() {
                let _ = s.read_to_end(&mut buf).await;
            }
            buf
        };
        let read_err = async {
            let mut buf = Vec::new();
            if let Some(s) = stderr.as_mut() {
                let _ = s.read_to_end(&mut buf).await;
            }
            buf
        };
        let work = async { tokio::join!(child.wait(), read_out, read_err) };
        tokio::pin!(work);
        let (status, out, err) = tokio::select! {
            biased;
            r = &mut work => (Some(r.0), r.1, r.2),
            _ = ctx.cancel.cancelled() => {
                kill_group(pgid);
                return ToolOutput { status: ToolStatus::Cancelled, content: "The command was cancelled; its process group was killed.".into(), full_output: None };
            }
            _ = tokio::time::sleep(Duration::from_millis(timeout_ms)) => {
                kill_group(pgid);
                (None, Vec::new(), Vec::new())
            }
        };
        let mut text = String::from_utf8_lossy(&out).into_owned();
        if !err.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&String::from_utf8_lossy(&err));
        }
        match status {
            None => ToolOutput {
                status: ToolStatus::TimedOut,
                content: format!(
                    "Command timed out after {timeout_ms} ms; its process group was killed.\n{text}"
                ),
                full_output: None,
            },
            Some(Ok(s)) if s.success() => ToolOutput::success(text),
            Some(Ok(s)) => {
                let code = s
                    .code()
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "none (killed by a signal)".into());
                ToolOutput::failed(format!("Command failed with exit code {code}\n{text}"))
            }
            Some(Err(e)) => ToolOutput::failed(format!("Could not wait for the command: {e}")),
        }
    }
}

/// Kills a whole process group.
pub fn kill_group(pgid: Option<u32>) {
    if let Some(pid) = pgid {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}
