//! An rmcp client (the official Rust SDK) driving the real `toolrt mcp-serve` binary over its
//! stdin and stdout, for the mcp_serve_* tests.
#![allow(dead_code)]

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService, ServiceExt};
use rmcp::{ClientHandler, ErrorData};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

/// What the test client does when toolrt asks (None: it declares no elicitation capability).
#[derive(Clone)]
pub(crate) struct TestClient {
    pub approve: Option<bool>,
    /// Every elicitation message toolrt sent.
    pub asked: Arc<Mutex<Vec<String>>>,
    /// Progress notifications, as they come.
    pub progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    /// One unit per `notifications/tools/list_changed`.
    pub list_changed: mpsc::UnboundedSender<()>,
}

/// What the test reads of a client's notifications.
pub(crate) struct Heard {
    pub progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    pub list_changed: mpsc::UnboundedReceiver<()>,
}

impl TestClient {
    pub(crate) fn new(approve: Option<bool>) -> (Self, Heard) {
        let (ptx, prx) = mpsc::unbounded_channel();
        let (ltx, lrx) = mpsc::unbounded_channel();
        (
            Self {
                approve,
                asked: Arc::default(),
                progress: ptx,
                list_changed: ltx,
            },
            Heard {
                progress: prx,
                list_changed: lrx,
            },
        )
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let caps = if self.approve.is_some() {
            json!({"elicitation": {}})
        } else {
            json!({})
        };
        serde_json::from_value(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": caps,
            "clientInfo": {"name": "toolrt-test", "version": "1"},
        }))
        .unwrap()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.asked.lock().unwrap().push(message.clone());
        }
        Ok(match self.approve {
            Some(true) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true}))
            }
            _ => ElicitResult::new(ElicitationAction::Decline),
        })
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.send(());
    }
}

/// A running `toolrt mcp-serve` and the rmcp client connected to it.
pub(crate) struct Connected {
    pub service: RunningService<RoleClient, TestClient>,
    pub child: tokio::process::Child,
    pub client: TestClient,
    pub heard: Heard,
}

/// Starts `toolrt mcp-serve --cwd <cwd> --output-dir <out> args…` ($HOME the cwd's parent)
/// and connects `client` to it.
pub(crate) async fn connect(
    cwd: &Path,
    out: &Path,
    args: &[&str],
    approve: Option<bool>,
) -> Connected {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolrt"));
    cmd.arg("mcp-serve")
        .arg("--cwd")
        .arg(cwd)
        .arg("--output-dir")
        .arg(out)
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd.parent().unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("start toolrt mcp-serve");
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let (client, heard) = TestClient::new(approve);
    let service = client
        .clone()
        .serve((stdout, stdin))
        .await
        .expect("initialize toolrt mcp-serve");
    Connected {
        service,
        child,
        client,
        heard,
    }
}

/// The arguments of a call.
pub(crate) fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("arguments must be an object: {other}"),
    }
}

/// A `tools/call` request.
pub(crate) fn call(name: &str, input: Value) -> CallToolRequestParams {
    CallToolRequestParams::new(name.to_string()).with_arguments(args(input))
}

/// The text of a result's first block.
pub(crate) fn text(result: &CallToolResult) -> String {
    let v = serde_json::to_value(&result.content).unwrap();
    v[0]["text"].as_str().unwrap_or_default().to_string()
}

/// A result's toolrt outcome (its `_meta`).
pub(crate) fn outcome(result: &CallToolResult) -> String {
    let v = serde_json::to_value(result).unwrap();
    v["_meta"]["toolrt/outcome"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

impl Connected {
    /// Closes the client's side and waits for toolrt to exit; its exit status.
    pub(crate) async fn finish(mut self) -> std::process::ExitStatus {
        let _ = self.service.cancel().await;
        self.child.wait().await.unwrap()
    }
}
