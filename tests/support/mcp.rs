//! The real MCP servers the MCP tests start (tests/fixtures/mcp): installed on first use by
//! `tests/fixtures/mcp/install` (which `.ci/run` also runs), never skipped.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Sandbox, Server};

/// The fixtures folder, with its servers installed (once per test process; a file lock keeps
/// two test processes from installing at once). Panics, naming the fix, if it cannot.
pub(crate) fn fixtures() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp");
        let status = std::process::Command::new("flock")
            .arg(dir.join(".install.lock"))
            .arg(dir.join("install"))
            .status()
            .expect("cannot run flock");
        assert!(
            status.success(),
            "installing the MCP test servers failed ({status}); run tests/fixtures/mcp/install to see why (it needs node, npm and python3 with access to their registries)"
        );
        dir
    })
}

/// `@modelcontextprotocol/server-everything` over stdio.
pub(crate) fn everything() -> Value {
    json!({"command": fixtures().join("node_modules/.bin/mcp-server-everything"), "args": ["stdio"]})
}

/// The Python `probe_server.py` (official `mcp` package) over stdio, with `env`.
pub(crate) fn probe(env: Value) -> Value {
    json!({
        "command": fixtures().join(".venv/bin/python"),
        "args": [fixtures().join("probe_server.py")],
        "env": env
    })
}

/// The hand-written `raw_server.py` in `mode` (normal, mute, ignore-eof, noise).
pub(crate) fn raw(mode: &str) -> Value {
    json!({
        "command": fixtures().join(".venv/bin/python"),
        "args": [fixtures().join("raw_server.py"), mode]
    })
}

/// Writes `{"mcpServers": servers}` into the sandbox and returns its path.
pub(crate) fn config_file(sandbox: &Sandbox, servers: Value) -> PathBuf {
    let path = sandbox.dir.path().join("mcp.json");
    std::fs::write(&path, json!({"mcpServers": servers}).to_string()).unwrap();
    path
}

/// `toolrt serve --mcp-config <servers> args…`.
pub(crate) fn serve(sandbox: &Sandbox, servers: Value, args: &[&str]) -> Server {
    let file = config_file(sandbox, servers);
    let mut all = vec!["--mcp-config", file.to_str().unwrap()];
    all.extend_from_slice(args);
    sandbox.serve(&all)
}

/// toolrt in `bypassPermissions` mode with the one probe server, once it is connected.
pub(crate) fn serve_probe(sandbox: &Sandbox) -> Server {
    let mut server = serve(
        sandbox,
        json!({"probe": probe(json!({}))}),
        &["--permission-mode", "bypassPermissions"],
    );
    status_event(&mut server, "probe", "connected");
    server
}

/// The `mcp_server` event of `server` with `status`.
pub(crate) fn status_event(server: &mut Server, name: &str, status: &str) -> Value {
    server.wait_for(
        &format!("mcp_server {name} {status}"),
        Duration::from_secs(60),
        |v| v["event"] == "mcp_server" && v["server"] == name && v["status"] == status,
    )
}
