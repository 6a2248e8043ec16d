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
    let mut child = command(cwd, out, &[], args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start toolrt mcp-serve");
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

/// `toolrt mcp-serve first… --cwd <cwd> --output-dir <out> args…` run in `cwd` with $HOME
/// the cwd's parent, killed when dropped.
fn command(cwd: &Path, out: &Path, first: &[&str], args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolrt"));
    cmd.arg("mcp-serve")
        .args(first)
        .arg("--cwd")
        .arg(cwd)
        .arg("--output-dir")
        .arg(out)
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd.parent().unwrap())
        .kill_on_drop(true);
    cmd
}

/// Starts a cancellable `tools/call` of Bash running `command`.
pub(crate) async fn start_bash(
    c: &Connected,
    command: &str,
) -> rmcp::service::RequestHandle<RoleClient> {
    let request = rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
        call("Bash", json!({"command": command})),
    ));
    c.service
        .peer()
        .send_cancellable_request(request, rmcp::service::PeerRequestOptions::no_options())
        .await
        .unwrap()
}

/// Flags that guard Read, Write and Bash (everything allowed but): a deny rule on
/// `written.txt` and a PreToolUse hook blocking every Bash command that names `blocked`.
pub(crate) fn guarded_flags(sb: &crate::support::Sandbox) -> Vec<String> {
    let settings = sb.settings_file(&json!({
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": "if grep -q blocked; then echo 'blocked by the test hook' >&2; exit 2; fi"}]}]}
    }));
    [
        "--settings",
        &settings,
        "--tools",
        "Read,Write,Bash",
        "--permission-mode",
        "bypassPermissions",
        "--disallowed-tools",
        "Edit(written.txt)",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Under [`guarded_flags`]: a Write to `written.txt` is denied and writes nothing, and a Bash
/// command naming `blocked` is blocked by the hook and does not run.
pub(crate) async fn deny_and_hook_hold(
    client: &rmcp::service::Peer<RoleClient>,
    sb: &crate::support::Sandbox,
) {
    let target = sb.path("written.txt");
    let w = client
        .call_tool(call("Write", json!({"file_path": target, "content": "x"})))
        .await
        .unwrap();
    assert_eq!(
        (w.is_error, outcome(&w).as_str()),
        (Some(true), "denied"),
        "{w:?}"
    );
    assert!(!target.exists(), "a denied Write wrote its file");
    let marker = sb.path("ran.txt");
    let command = format!("touch {} # blocked", marker.display());
    let b = client
        .call_tool(call("Bash", json!({"command": command})))
        .await
        .unwrap();
    assert_eq!(b.is_error, Some(true), "{b:?}");
    assert!(text(&b).contains("blocked by the test hook"), "{b:?}");
    assert!(!marker.exists(), "a blocked Bash call ran");
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

/// A result's toolrt outcome: its `_meta` names it, except a plain success, which has none and
/// says `isError: false`.
pub(crate) fn outcome(result: &CallToolResult) -> String {
    let v = serde_json::to_value(result).unwrap();
    match v["_meta"]["toolrt/outcome"].as_str() {
        Some(outcome) => outcome.to_string(),
        None if v["isError"] == false => "success".to_string(),
        None => String::new(),
    }
}

impl Connected {
    /// Sends `signal` to toolrt.
    pub(crate) fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.child.id().unwrap() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
    }

    /// Closes the client's side and waits for toolrt to exit; its exit status.
    pub(crate) async fn finish(mut self) -> std::process::ExitStatus {
        let _ = self.service.cancel().await;
        self.child.wait().await.unwrap()
    }
}

/// A running `toolrt mcp-serve --http 127.0.0.1:0 …` and the URL of its endpoint.
pub(crate) struct HttpServe {
    pub child: tokio::process::Child,
    pub url: String,
}

/// Starts `toolrt mcp-serve --http 127.0.0.1:0 --cwd <cwd> --output-dir <out> args…` ($HOME
/// the cwd's parent) and reads the address it listens on from its stderr (the rest of which
/// goes on to the test's stderr).
pub(crate) async fn start_http(cwd: &Path, out: &Path, args: &[&str]) -> HttpServe {
    start_http_with_env(cwd, out, args, &[]).await
}

/// [`start_http`] with variables added to toolrt's environment.
pub(crate) async fn start_http_with_env(
    cwd: &Path,
    out: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> HttpServe {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut child = command(cwd, out, &["--http", "127.0.0.1:0"], args)
        .env_remove("TOOLRT_MCP_TOKEN")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolrt mcp-serve --http");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("toolrt mcp-serve --http exited before listening");
        eprintln!("{line}");
        if let Some(rest) = line.strip_prefix("toolrt mcp-serve: listening on ") {
            break rest.trim().to_string();
        }
    };
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("{line}");
        }
    });
    HttpServe { child, url }
}

/// An rmcp client connected to `url` over streamable HTTP, with `token` as its bearer token.
pub(crate) async fn connect_http(
    url: &str,
    token: Option<&str>,
) -> Result<RunningService<RoleClient, TestClient>, rmcp::service::ClientInitializeError> {
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::with_client(http_client(), config);
    TestClient::new(None).0.serve(transport).await
}

impl HttpServe {
    /// Sends `signal` to toolrt.
    pub(crate) fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.child.id().unwrap() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
    }
}

/// A plain HTTP client (reqwest, as toolrt builds it: rustls with the ring provider).
pub(crate) fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}
