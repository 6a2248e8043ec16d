//! `TaskOutput`: the status and output of a background task, optionally waiting for it to end.

use super::limits;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::background::{TaskStatus, Tasks, find_task, read_windows};
use super::{bool_field, u64_field};
use crate::call::Input;
use crate::session::Session;
use crate::tool::{Access, FullOutput, StateKey, Tool, ToolContext, ToolOutput, Verdict};

/// Default wait when `block` is true, in milliseconds.
const DEFAULT_WAIT_MS: u64 = 30_000;
/// Longest wait a call may ask for, in milliseconds.
const MAX_WAIT_MS: u64 = 600_000;
/// Bytes shown from the start and from the end of a long output.
const WINDOW_BYTES: u64 = 30_000;

/// The `TaskOutput` tool.
#[derive(Debug)]
pub(crate) struct TaskOutput {
    tasks: Arc<Tasks>,
}

impl TaskOutput {
    /// A TaskOutput over the session's background tasks (each caller sees its own and
    /// those of the scopes below it).
    pub(crate) fn new(tasks: Arc<Tasks>) -> Self {
        Self { tasks }
    }
}

#[async_trait]
impl Tool for TaskOutput {
    fn access(&self) -> Access<'_> {
        Access::by_name(true)
    }

    fn name(&self) -> &str {
        "TaskOutput"
    }

    fn description(&self) -> &str {
        "Returns the status (running, completed with its exit code, killed) and the output of a \
         background task started by Bash with `run_in_background`. With `block` (default true) it \
         waits until the task ends or `timeout` milliseconds pass (default 30000)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "maxLength": limits::NAME_CHARS, "description": "The id Bash returned"},
                "block": {"type": "boolean", "description": "Wait for the task to finish (default true)"},
                "timeout": {"type": "integer", "description": "How long to wait, in milliseconds (default 30000, max 600000)"}
            },
            "required": ["task_id"],
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, _input: &Input) -> bool {
        true
    }

    fn validate(&self, input: &Input, _session: &Session, state: StateKey) -> Verdict {
        Verdict::Now(find_task(input, &self.tasks, state).map(|_| ()))
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        let (id, task) = match find_task(&input, &self.tasks, ctx.state) {
            Ok(found) => found,
            Err(unknown) => return ToolOutput::failed(unknown),
        };
        let mut status = task.status();
        let block = bool_field(&input, "block", true);
        if block && status == TaskStatus::Running {
            let wait = u64_field(&input, "timeout")
                .unwrap_or(DEFAULT_WAIT_MS)
                .min(MAX_WAIT_MS);
            tokio::select! {
                s = task.finished() => status = s,
                _ = tokio::time::sleep(Duration::from_millis(wait)) => status = task.status(),
                _ = ctx.cancel.cancelled() => {
                    return ToolOutput::cancelled(format!(
                        "stopped waiting for task {id}; the task itself keeps running"
                    ));
                }
            }
        }
        let (text, cut) = match read_windows(&task.output_path, WINDOW_BYTES, WINDOW_BYTES).await {
            Ok(r) => r,
            Err(err) => (format!("(could not read the output file: {err})"), false),
        };
        let chars = task.counters.chars.load(Ordering::Relaxed);
        let lines = task.counters.lines();
        let response = ctx
            .hook_response
            .then(|| response(id, &task.command, &status, block, &text));
        let content = format!(
            "task_id: {id}\nstatus: {status}\ncommand: {}\noutput_file: {}\noutput ({lines} lines, {chars} characters{}):\n{text}",
            task.command,
            task.output_path.display(),
            if status == TaskStatus::Running {
                " so far"
            } else {
                ""
            }
        );
        ToolOutput {
            full_output: cut.then(|| FullOutput {
                path: task.output_path.clone(),
                chars,
                lines,
            }),
            ..ToolOutput::success(content).with_response(response)
        }
    }
}

/// What hooks are told of a TaskOutput call. The reference CLI publishes no output type for a
/// tool of this name, so this is toolrt's own shape (docs/SEMANTICS.md §4.3):
/// `{retrieval_status, task: {task_id, task_type, status, description, output, exitCode}}`.
fn response(id: &str, command: &str, status: &TaskStatus, block: bool, output: &str) -> Value {
    let (state, exit_code) = match status {
        TaskStatus::Running => ("running", None),
        TaskStatus::Completed(code) => ("completed", *code),
        TaskStatus::Killed => ("killed", None),
        TaskStatus::Failed(_) => ("failed", None),
    };
    let retrieval = match (status, block) {
        (TaskStatus::Running, true) => "timeout",
        (TaskStatus::Running, false) => "not_ready",
        _ => "success",
    };
    json!({
        "retrieval_status": retrieval,
        "task": {
            "task_id": id,
            "task_type": "local_bash",
            "status": state,
            "description": command,
            "output": output,
            "exitCode": exit_code,
        },
    })
}
