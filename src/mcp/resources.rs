//! `ListMcpResourcesTool` and `ReadMcpResourceTool`: the MCP servers' resources, with the
//! reference CLI's names and input and output shapes. A binary resource is saved decoded into
//! the session's output folder and named by path (`blobSavedTo`), never inlined as base64.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use base64::Engine;
use rmcp::model::{ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};

use super::McpServers;
use super::server::McpServer;
use crate::call::Input;
use crate::tool::{BudgetClass, Tool, ToolContext, ToolOutput};

/// `ListMcpResourcesTool`: the resources of every server, or of one (`server`).
pub(crate) struct ListMcpResources {
    servers: Arc<McpServers>,
}

impl ListMcpResources {
    /// The tool over `servers`.
    pub(crate) fn new(servers: Arc<McpServers>) -> Self {
        Self { servers }
    }
}

/// `ReadMcpResourceTool`: one resource of one server.
pub(crate) struct ReadMcpResource {
    servers: Arc<McpServers>,
    seq: AtomicU64,
}

impl ReadMcpResource {
    /// The tool over `servers`.
    pub(crate) fn new(servers: Arc<McpServers>) -> Self {
        Self {
            servers,
            seq: AtomicU64::new(0),
        }
    }
}

fn pick<'a>(servers: &'a McpServers, name: &str) -> Result<&'a Arc<McpServer>, String> {
    servers.server(name).ok_or_else(|| {
        let known: Vec<&str> = servers.servers().iter().map(|s| s.name()).collect();
        format!(
            "no MCP server named {name:?} is running (servers: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        )
    })
}

#[async_trait]
impl Tool for ListMcpResources {
    fn name(&self) -> &str {
        "ListMcpResourcesTool"
    }

    fn description(&self) -> &str {
        "Lists the resources the MCP servers offer (uri, name, mimeType, description, server); give `server` to list one server's only."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"server": {"type": "string", "description": "Optional server name to filter resources by"}},
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, _input: &Input) -> bool {
        true
    }

    fn budget_class(&self) -> BudgetClass {
        BudgetClass::Mcp
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        let chosen: Vec<&Arc<McpServer>> = match input.get("server").and_then(Value::as_str) {
            Some(name) => match pick(&self.servers, name) {
                Ok(s) => vec![s],
                Err(e) => return ToolOutput::failed(e),
            },
            None => self.servers.servers(),
        };
        let mut listed = Vec::new();
        let mut errors = Vec::new();
        for server in chosen {
            let peer = match server.peer(&ctx.cancel).await {
                Ok(p) => p,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            let offers = peer
                .peer_info()
                .is_some_and(|info| info.capabilities.resources.is_some());
            if !offers {
                continue;
            }
            let resources = tokio::select! {
                r = peer.list_all_resources() => r,
                _ = ctx.cancel.cancelled() => return ToolOutput::cancelled("The call was cancelled."),
            };
            match resources {
                Ok(resources) => listed.extend(resources.into_iter().map(|r| {
                    let mut item = json!({"uri": r.uri, "name": r.name, "server": server.name()});
                    if let Some(m) = &r.mime_type {
                        item["mimeType"] = m.clone().into();
                    }
                    if let Some(d) = &r.description {
                        item["description"] = d.clone().into();
                    }
                    item
                })),
                Err(e) => errors.push(format!(
                    "MCP server {:?}: resources/list failed: {e}",
                    server.name()
                )),
            }
        }
        if listed.is_empty() && !errors.is_empty() {
            return ToolOutput::failed(errors.join("\n"));
        }
        let mut text = serde_json::to_string(&listed).unwrap_or_default();
        for e in errors {
            text.push('\n');
            text.push_str(&e);
        }
        ToolOutput::success(text)
    }
}

#[async_trait]
impl Tool for ReadMcpResource {
    fn name(&self) -> &str {
        "ReadMcpResourceTool"
    }

    fn description(&self) -> &str {
        "Reads one resource of an MCP server by its URI. Text comes back inline; binary content is saved to a file whose path is given (blobSavedTo)."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "server": {"type": "string", "description": "The MCP server name"},
                "uri": {"type": "string", "description": "The resource URI to read"}
            },
            "required": ["server", "uri"],
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, _input: &Input) -> bool {
        true
    }

    fn budget_class(&self) -> BudgetClass {
        BudgetClass::Mcp
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        let name = input.get("server").and_then(Value::as_str).unwrap_or("");
        let uri = input.get("uri").and_then(Value::as_str).unwrap_or("");
        let server = match pick(&self.servers, name) {
            Ok(s) => s,
            Err(e) => return ToolOutput::failed(e),
        };
        let peer = match server.peer(&ctx.cancel).await {
            Ok(p) => p,
            Err(e) => return ToolOutput::failed(e),
        };
        let read = tokio::select! {
            r = peer.read_resource(ReadResourceRequestParams::new(uri)) => r,
            _ = ctx.cancel.cancelled() => return ToolOutput::cancelled("The call was cancelled."),
        };
        let result = match read {
            Ok(r) => r,
            Err(e) => {
                return ToolOutput::failed(format!(
                    "MCP server {:?}: resources/read {uri:?} failed: {e}",
                    server.name()
                ));
            }
        };
        let mut contents = Vec::new();
        for item in result.contents {
            match item {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    ..
                } => contents.push(json!({"uri": uri, "mimeType": mime_type, "text": text})),
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => {
                    let n = self.seq.fetch_add(1, Ordering::Relaxed);
                    let saved = save_blob(&ctx, n, &blob).await;
                    match saved {
                        Ok(path) => contents
                            .push(json!({"uri": uri, "mimeType": mime_type, "blobSavedTo": path})),
                        Err(e) => {
                            return ToolOutput::failed(format!(
                                "resource {uri:?}: cannot save its binary content: {e}"
                            ));
                        }
                    }
                }
                // A kind of content a later protocol adds: kept as the server sent it.
                other => contents.push(serde_json::to_value(&other).unwrap_or(Value::Null)),
            }
        }
        ToolOutput::success(json!({"contents": contents}).to_string())
    }
}

/// Decodes a base64 blob into `<output dir>/mcp-resources/<session-unique name>`.
async fn save_blob(ctx: &ToolContext, n: u64, blob: &str) -> Result<String, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob.trim())
        .map_err(|e| format!("not valid base64: {e}"))?;
    let dir = ctx.session.output_dir.join("mcp-resources");
    let safe = crate::paths::file_safe(&ctx.tool_use_id);
    let path = dir.join(format!("{safe}-{n}.bin"));
    let target = path.clone();
    tokio::task::spawn_blocking(move || {
        crate::paths::create_private_dir(&dir)?;
        std::fs::write(&target, bytes)
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    Ok(path.display().to_string())
}
