//! `TaskStop`: kills a background task's whole process group.

use super::limits;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::background::{TaskStatus, Tasks, find_task};
use crate::call::Input;
use crate::session::Session;
use crate::tool::{Access, StateKey, Tool, ToolContext, ToolOutput, Verdict};

/// The `TaskStop` tool.
#[derive(Debug)]
pub(crate) struct TaskStop {
    tasks: Arc<Tasks>,
}

impl TaskStop {
    /// A TaskStop over the session's background tasks (each caller sees its own and
    /// those of the scopes below it).
    pub(crate) fn new(tasks: Arc<Tasks>) -> Self {
        Self { tasks }
    }
}

#[async_trait]
impl Tool for TaskStop {
    fn access(&self) -> Access<'_> {
        Access::by_name(true)
    }

    fn name(&self) -> &str {
        "TaskStop"
    }

    fn description(&self) -> &str {
        "Stops a background task started by Bash with `run_in_background`: kills the command \
         and every process it started. Its output file stays."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task_id": {"type": "string", "maxLength": limits::NAME_CHARS, "description": "The id Bash returned"}
            },
            "required": ["task_id"],
            "additionalProperties": false
        })
    }

    fn validate(&self, input: &Input, _session: &Session, state: StateKey) -> Verdict {
        Verdict::Now(find_task(input, &self.tasks, state).map(|_| ()))
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        let (id, task) = match find_task(&input, &self.tasks, ctx.state) {
            Ok(found) => found,
            Err(unknown) => return ToolOutput::failed(unknown),
        };
        let before = task.status();
        let message = if before != TaskStatus::Running {
            format!(
                "Task {id} had already ended: {before}. Output file: {}",
                task.output_path.display()
            )
        } else {
            task.kill();
            // SIGKILL is immediate; the wait only covers the runner noticing it.
            let status = tokio::time::timeout(Duration::from_secs(5), task.finished())
                .await
                .unwrap_or(TaskStatus::Killed);
            format!(
                "Stopped task {id} ({}); status: {status}. Output file: {}",
                task.command,
                task.output_path.display()
            )
        };
        // The shape of the reference CLI's `TaskStopOutput`; every task toolrt has is a
        // background command, which the reference calls `local_bash`.
        let response = ctx.hook_response.then(|| {
            json!({
                "message": message,
                "task_id": id,
                "task_type": "local_bash",
                "command": task.command,
            })
        });
        ToolOutput::success(message).with_response(response)
    }
}
