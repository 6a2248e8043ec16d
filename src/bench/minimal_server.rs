//! The minimal rmcp server the `mcp_serve` figure measures against: one tool, `noop`, answering
//! an empty success; or, with `same_answer`, the answer toolrt gives a no-op call (its text), to
//! tell what the client pays for reading toolrt's answer. It imports nothing of the
//! crate, so examples/mcp_serve_calls.rs includes this same file to count instructions.

use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};

/// The server; `same_answer` answers as toolrt answers a no-op instead of with an empty success.
#[derive(Clone, Debug, Default)]
pub(crate) struct MinimalServer {
    pub(crate) same_answer: bool,
}

impl ServerHandler for MinimalServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::default())
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.same_answer {
            return Ok(CallToolResult::success(Vec::new()).into());
        }
        Ok(CallToolResult::success(vec![ContentBlock::text("ok")]).into())
    }
}
