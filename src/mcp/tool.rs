//! An MCP server's tool as a toolrt tool: named `mcp__<server>__<tool>`, the server's input
//! schema checked by the schema stage like any tool's, concurrency-safe only when the server
//! marks it read-only, budgeted as MCP output.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::server::{McpServer, RemoteTool};
use crate::call::Input;
use crate::tool::{BudgetClass, Hints, Tool, ToolContext, ToolOutput};

/// One tool of one MCP server.
pub(crate) struct McpTool {
    name: String,
    remote: RemoteTool,
    server: Arc<McpServer>,
}

impl McpTool {
    /// The tool `remote` of `server`, under its registry name.
    pub(crate) fn new(server: Arc<McpServer>, remote: RemoteTool) -> Self {
        Self {
            name: super::names::tool_name(server.name(), &remote.name),
            remote,
            server,
        }
    }
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool").field("name", &self.name).finish()
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.remote.description
    }

    fn input_schema(&self) -> Value {
        self.remote.input_schema.clone()
    }

    /// Only what the server marks `readOnlyHint: true`: any other hint, or none, may change
    /// something.
    fn is_concurrency_safe(&self, _input: &Input) -> bool {
        self.remote.hints.read_only == Some(true)
    }

    /// The server's own annotations, passed on as they are.
    fn hints(&self) -> Hints {
        self.remote.hints
    }

    /// It awaits the server: no hop to the execute stage.
    fn awaits_io_only(&self) -> bool {
        true
    }

    fn budget_class(&self) -> BudgetClass {
        BudgetClass::Mcp
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        self.server
            .call_tool(&self.remote.name, input, &ctx, self.server.call_timeout())
            .await
    }
}
