//! The `Agent` tool (alias `Task`): delegating to a subagent is a tool call like any other.
//!
//! Its call walks the whole pipeline (schema, PreToolUse hooks, the caller's `Agent(<type>)`
//! rules); then, since only the orchestrator can run a model, it opens a child scope of the
//! caller's scope and has the orchestrator run the subagent through the client tools' exchange:
//! an `execute` carrying the new `agent_id`. The orchestrator sends the subagent's calls with
//! that `agent_id` and answers the `execute_result` with the subagent's final text. The scope
//! ends with the call, however it ends: its unfinished calls are cancelled.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{AGENT_TOOL_ID_PREFIX, ScopeError, ScopeTable, StartRequest, control};
use crate::call::Input;
use crate::client_tools::Exchange;
use crate::emit::Emitter;
use crate::hooks::{HookEvent, Hooks};
use crate::tool::{Access, Subject, Tool, ToolContext, ToolOutput, ToolStatus};

/// How long an `Agent` call waits for the orchestrator's answer: a subagent may work long, so
/// the longest a client tool may be given.
pub(crate) const AGENT_TIMEOUT: Duration =
    Duration::from_millis(crate::client_tools::MAX_TIMEOUT_MS);

/// The built-in `Agent` tool. It exists from start-up (so `--tools`, aliases and rules name it
/// as a built-in) and is connected to the runtime's scope table and exchange once they exist.
#[derive(Default)]
pub(crate) struct AgentTool {
    deps: OnceLock<Deps>,
    next: AtomicU64,
}

struct Deps {
    scopes: Arc<ScopeTable>,
    exchange: Arc<Exchange>,
    hooks: Hooks,
    emitter: Emitter,
}

impl std::fmt::Debug for AgentTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTool").finish_non_exhaustive()
    }
}

impl AgentTool {
    /// The tool, not yet connected.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Connects the tool to the runtime: where scopes live, how the orchestrator is asked, the
    /// hooks and the way out. Only the first call counts.
    pub(crate) fn connect(
        &self,
        scopes: Arc<ScopeTable>,
        exchange: Arc<Exchange>,
        hooks: Hooks,
        emitter: Emitter,
    ) {
        let _ = self.deps.set(Deps {
            scopes,
            exchange,
            hooks,
            emitter,
        });
    }

    /// A fresh agent id for the scope this call opens: never given twice in a session, and of
    /// a form a client's `agent_start` may not use (`scope::is_agent_tool_id`), so it can name
    /// no other scope, live or ended.
    fn next_id(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{AGENT_TOOL_ID_PREFIX}{n}")
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn name(&self) -> &str {
        "Agent"
    }

    fn description(&self) -> &str {
        "Starts a subagent of the given type on a task and returns its final answer. The \
         subagent can use only tools and permissions its type allows, within yours."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short (3-5 word) description of the task", "maxLength": 1000},
                "prompt": {"type": "string", "description": "The task for the subagent to perform", "maxLength": 1_000_000},
                "subagent_type": {"type": "string", "description": "The type of subagent to use", "minLength": 1, "maxLength": 256}
            },
            "required": ["description", "prompt", "subagent_type"],
            "additionalProperties": false
        })
    }

    /// Matched by `Agent(<type>)` rules. Delegating grants nothing (the subagent's rights only
    /// narrow the caller's, and each of its calls is decided on its own), so it needs no rule;
    /// deny and ask rules still apply.
    fn access(&self) -> Access<'_> {
        Access {
            subject: Subject::Subagent {
                field: "subagent_type",
            },
            allowed_by_default: true,
        }
    }

    /// Subagents of one turn work in parallel; each of their calls is ordered on its own.
    fn is_concurrency_safe(&self, _input: &Input) -> bool {
        true
    }

    fn awaits_io_only(&self) -> bool {
        true
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        let Some(d) = self.deps.get() else {
            return ToolOutput::failed("The Agent tool is not available in this runtime.");
        };
        let agent_type = input
            .get("subagent_type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut started = None;
        for _ in 0..8 {
            let req = StartRequest {
                agent_id: self.next_id(),
                agent_type: agent_type.clone(),
                parent: ctx.agent.as_deref().map(String::from),
                parent_tool_use_id: Some(ctx.tool_use_id.to_string()),
                node: None,
                decided: true,
            };
            match d.scopes.start(req, Some(&ctx.cancel)) {
                Err(ScopeError::Duplicate(_)) => continue,
                other => {
                    started = Some(other);
                    break;
                }
            }
        }
        let scope = match started {
            Some(Ok(scope)) => scope,
            Some(Err(e)) => {
                return ToolOutput::failed(format!("The subagent could not start: {e}"));
            }
            None => return ToolOutput::failed("The subagent could not start: no free agent id"),
        };
        d.emitter.send(control::started_event(&scope));
        control::fire(&d.hooks, HookEvent::SubagentStart, &scope, None);
        let mut sub = ctx.clone();
        sub.agent = Some(scope.id.clone());
        sub.state = scope.state_key();
        // The scope's token is a child of the call's: cancelling the call ends the wait.
        sub.cancel = scope.cancel.clone();
        let out = d
            .exchange
            .execute("Agent", input, &sub, AGENT_TIMEOUT)
            .await;
        // The scope ends with the call, whatever ended it. An answer is the subagent's final
        // text: SubagentStop hooks see it as `last_assistant_message`.
        let last = (out.status == ToolStatus::Success).then_some(out.content.as_str());
        control::close(&d.scopes, &d.emitter, &d.hooks, &scope, last);
        out
    }
}
