//! Which MCP servers to start, from the shapes users already have: `mcpServers` in settings
//! files, `--mcp-config FILE` (the `.mcp.json` shape `{"mcpServers": {…}}`), and the project's
//! own `.mcp.json`, whose servers need an approval (docs/SEMANTICS.md, "MCP servers").
//!
//! Parsing checks types and names the file and key; `${VAR}` expansion happens in [`expand`],
//! once the server is known to be started, so an unapproved server's unset variables are no
//! error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::protocol::json_type;
use crate::settings::Settings;

mod vars;
pub(crate) use vars::{Launch, expand};

/// An MCP configuration problem: the file, the key and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {key}: {message}")]
pub struct McpConfigError {
    /// The file the server came from.
    pub file: String,
    /// The key path, e.g. `mcpServers.github.headers.Authorization`.
    pub key: String,
    /// What was wrong.
    pub message: String,
}

/// Where a server's configuration came from; later sources win for a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Scope {
    /// The project's `.mcp.json` (needs approval).
    Project,
    /// A settings file's `mcpServers`.
    Settings,
    /// A `--mcp-config` file.
    Flag,
}

/// How toolrt talks to a server (values not yet expanded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Transport {
    /// A child process speaking JSON-RPC on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it (on top of a minimal base).
        env: Vec<(String, String)>,
        /// Its working directory (relative to toolrt's); toolrt's by default.
        cwd: Option<String>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: Vec<(String, String)>,
    },
    /// A transport toolrt does not speak (`sse`, `ws`): reported as failed, never started.
    Unsupported {
        /// The `type` given.
        kind: String,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerConfig {
    /// Its name, as configured.
    pub name: String,
    /// The file it came from.
    pub file: PathBuf,
    /// Which kind of file.
    pub scope: Scope,
    /// How to reach it.
    pub transport: Transport,
    /// `timeout` (ms): this server's tool-call limit, overriding `MCP_TOOL_TIMEOUT`.
    pub call_timeout: Option<Duration>,
}

/// Whether a server may be started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Approval {
    /// Started.
    Approved,
    /// A project server nobody approved: reported as `needs-approval`, not started.
    Pending,
    /// A project server listed in `disabledMcpjsonServers`: reported as `disabled`.
    Rejected,
}

/// A server and whether it may start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Planned {
    /// The server.
    pub config: ServerConfig,
    /// Its approval.
    pub approval: Approval,
}

/// What the MCP part of a runtime's configuration says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpOptions {
    /// `--mcp-config` files, in order.
    pub config_files: Vec<PathBuf>,
    /// `--strict-mcp-config`: only the servers of `config_files`.
    pub strict: bool,
}

/// Every server to report, sorted by name, and warnings (keys ignored).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The servers, by name.
    pub servers: Vec<Planned>,
    /// Settings that were ignored, one line each.
    pub warnings: Vec<String>,
}

/// Reads the servers of the settings files, the `--mcp-config` files and `<cwd>/.mcp.json`.
pub(crate) fn plan(
    settings: &Settings,
    options: &McpOptions,
    cwd: &Path,
) -> Result<Plan, McpConfigError> {
    let mut warnings = Vec::new();
    let mut by_name: BTreeMap<String, ServerConfig> = BTreeMap::new();
    if !options.strict {
        let project = cwd.join(".mcp.json");
        if project.is_file() {
            let root = read_json_file(&project)?;
            for config in servers_of_file(&project, &root, Scope::Project, &mut warnings)? {
                by_name.insert(config.name.clone(), config);
            }
        }
        for (file, servers) in settings.sections("mcpServers") {
            for config in servers_of(file, "mcpServers", servers, Scope::Settings, &mut warnings)? {
                by_name.insert(config.name.clone(), config);
            }
        }
    }
    for file in &options.config_files {
        let file = std::path::absolute(file).unwrap_or_else(|_| file.clone());
        let root = read_json_file(&file)?;
        for config in servers_of_file(&file, &root, Scope::Flag, &mut warnings)? {
            by_name.insert(config.name.clone(), config);
        }
    }
    let approvals = Approvals::read(settings, cwd, &mut warnings)?;
    let servers = by_name
        .into_values()
        .map(|config| {
            let approval = if config.scope == Scope::Project {
                approvals.of(&config.name)
            } else {
                Approval::Approved
            };
            Planned { config, approval }
        })
        .collect();
    Ok(Plan { servers, warnings })
}

fn read_json_file(path: &Path) -> Result<Value, McpConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| McpConfigError {
        file: path.display().to_string(),
        key: "(file)".into(),
        message: format!("cannot read MCP configuration: {e}"),
    })?;
    serde_json::from_str(&text).map_err(|e| McpConfigError {
        file: path.display().to_string(),
        key: "(file)".into(),
        message: format!("not valid JSON: {e}"),
    })
}

/// The servers of a `.mcp.json`-shaped file: `{"mcpServers": {…}}`.
fn servers_of_file(
    file: &Path,
    root: &Value,
    scope: Scope,
    warnings: &mut Vec<String>,
) -> Result<Vec<ServerConfig>, McpConfigError> {
    let servers = root
        .as_object()
        .and_then(|o| o.get("mcpServers"))
        .ok_or_else(|| McpConfigError {
            file: file.display().to_string(),
            key: "(top level)".into(),
            message: format!(
                "expected an object with \"mcpServers\" (the .mcp.json shape), got {}",
                describe(root)
            ),
        })?;
    servers_of(file, "mcpServers", servers, scope, warnings)
}

fn describe(v: &Value) -> String {
    match v {
        Value::Object(o) => format!("an object with keys {:?}", o.keys().collect::<Vec<_>>()),
        other => json_type(other).to_string(),
    }
}

fn servers_of(
    file: &Path,
    key: &str,
    servers: &Value,
    scope: Scope,
    warnings: &mut Vec<String>,
) -> Result<Vec<ServerConfig>, McpConfigError> {
    let err = |key: String, message: String| McpConfigError {
        file: file.display().to_string(),
        key,
        message,
    };
    let Value::Object(map) = servers else {
        return Err(err(
            key.into(),
            format!(
                "expected an object of server name → server, got {}",
                json_type(servers)
            ),
        ));
    };
    let mut out = Vec::new();
    for (name, server) in map {
        let at = format!("{key}.{name}");
        if name.is_empty() {
            return Err(err(at, "a server name cannot be empty".into()));
        }
        let Value::Object(fields) = server else {
            return Err(err(
                at,
                format!("expected an object, got {}", json_type(server)),
            ));
        };
        let transport = transport_of(&at, fields, &err)?;
        let call_timeout = match fields.get("timeout") {
            None => None,
            Some(v) => match v.as_u64() {
                Some(ms) if ms > 0 => Some(Duration::from_millis(ms)),
                _ => {
                    return Err(err(
                        format!("{at}.timeout"),
                        format!(
                            "expected a positive integer (milliseconds), got {}",
                            json_type(v)
                        ),
                    ));
                }
            },
        };
        for k in fields.keys() {
            if !KNOWN_SERVER_KEYS.contains(&k.as_str()) {
                warnings.push(format!(
                    "{}: {at}.{k}: toolrt does not read this MCP server key; ignored",
                    file.display()
                ));
            }
        }
        out.push(ServerConfig {
            name: name.clone(),
            file: file.to_path_buf(),
            scope,
            transport,
            call_timeout,
        });
    }
    Ok(out)
}

const KNOWN_SERVER_KEYS: &[&str] = &[
    "type", "command", "args", "env", "cwd", "url", "headers", "timeout",
];

fn transport_of(
    at: &str,
    fields: &Map<String, Value>,
    err: &dyn Fn(String, String) -> McpConfigError,
) -> Result<Transport, McpConfigError> {
    let string = |key: &str| -> Result<Option<String>, McpConfigError> {
        match fields.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(err(
                format!("{at}.{key}"),
                format!("expected a string, got {}", json_type(v)),
            )),
        }
    };
    let pairs = |key: &str| -> Result<Vec<(String, String)>, McpConfigError> {
        match fields.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    // Numbers and booleans are written as their text, as `env` in settings.
                    Value::Number(n) => Ok((k.clone(), n.to_string())),
                    Value::Bool(b) => Ok((k.clone(), b.to_string())),
                    other => Err(err(
                        format!("{at}.{key}.{k}"),
                        format!("expected a string, got {}", json_type(other)),
                    )),
                })
                .collect(),
            Some(v) => Err(err(
                format!("{at}.{key}"),
                format!("expected an object of name → value, got {}", json_type(v)),
            )),
        }
    };
    let kind = string("type")?.unwrap_or_else(|| "stdio".into());
    match kind.as_str() {
        "stdio" => {
            let command = string("command")?.ok_or_else(|| {
                err(
                    format!("{at}.command"),
                    "missing: a stdio server needs a command (or set \"type\": \"http\" and a url)"
                        .into(),
                )
            })?;
            if command.is_empty() {
                return Err(err(format!("{at}.command"), "cannot be empty".into()));
            }
            let args = match fields.get("args") {
                None => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| match v {
                        Value::String(s) => Ok(s.clone()),
                        other => Err(err(
                            format!("{at}.args[{i}]"),
                            format!("expected a string, got {}", json_type(other)),
                        )),
                    })
                    .collect::<Result<_, _>>()?,
                Some(v) => {
                    return Err(err(
                        format!("{at}.args"),
                        format!("expected an array of strings, got {}", json_type(v)),
                    ));
                }
            };
            let env = pairs("env")?;
            for (name, value) in &env {
                if name.is_empty() || name.contains(['=', '\0']) || value.contains('\0') {
                    return Err(err(
                        format!("{at}.env.{name}"),
                        "not a valid environment variable".into(),
                    ));
                }
            }
            Ok(Transport::Stdio {
                command,
                args,
                env,
                cwd: string("cwd")?,
            })
        }
        "http" | "streamable-http" => {
            let url = string("url")?.ok_or_else(|| {
                err(
                    format!("{at}.url"),
                    "missing: an http server needs a url".into(),
                )
            })?;
            Ok(Transport::Http {
                url,
                headers: pairs("headers")?,
            })
        }
        "sse" | "ws" | "sse-ide" | "ws-ide" => Ok(Transport::Unsupported { kind }),
        other => Err(err(
            format!("{at}.type"),
            format!("unknown transport {other:?} (expected \"stdio\" or \"http\")"),
        )),
    }
}

/// `enableAllProjectMcpServers`, `enabledMcpjsonServers`, `disabledMcpjsonServers`, read from
/// every settings file except the project's own shared one (`<cwd>/.claude/settings.json`): a
/// repository cannot approve its own servers.
#[derive(Debug, Default)]
struct Approvals {
    all: bool,
    enabled: Vec<String>,
    disabled: Vec<String>,
}

impl Approvals {
    fn read(
        settings: &Settings,
        cwd: &Path,
        warnings: &mut Vec<String>,
    ) -> Result<Self, McpConfigError> {
        let project_shared = cwd.join(".claude").join("settings.json");
        let mut approvals = Approvals::default();
        for file in &settings.files {
            let keys = [
                "enableAllProjectMcpServers",
                "enabledMcpjsonServers",
                "disabledMcpjsonServers",
            ];
            let present: Vec<&str> = keys
                .into_iter()
                .filter(|k| file.root.contains_key(*k))
                .collect();
            if present.is_empty() {
                continue;
            }
            if file.path == project_shared {
                warnings.push(format!(
                    "{}: {}: a project's shared settings cannot approve its own MCP servers; ignored (put approvals in user or local settings)",
                    file.path.display(),
                    present.join(", ")
                ));
                continue;
            }
            let err = |key: &str, v: &Value, expected: &str| McpConfigError {
                file: file.path.display().to_string(),
                key: key.to_string(),
                message: format!("{expected}, got {}", json_type(v)),
            };
            if let Some(v) = file.root.get("enableAllProjectMcpServers") {
                approvals.all = v.as_bool().ok_or_else(|| {
                    err("enableAllProjectMcpServers", v, "expected true or false")
                })?;
            }
            for (key, list) in [
                ("enabledMcpjsonServers", &mut approvals.enabled),
                ("disabledMcpjsonServers", &mut approvals.disabled),
            ] {
                if let Some(v) = file.root.get(key) {
                    let Some(items) = v.as_array() else {
                        return Err(err(key, v, "expected an array of server names"));
                    };
                    for (i, item) in items.iter().enumerate() {
                        let Some(name) = item.as_str() else {
                            return Err(err(&format!("{key}[{i}]"), item, "expected a string"));
                        };
                        list.push(name.to_string());
                    }
                }
            }
        }
        Ok(approvals)
    }

    fn of(&self, server: &str) -> Approval {
        let listed = |list: &[String]| list.iter().any(|n| super::names::same_server(n, server));
        if listed(&self.disabled) {
            Approval::Rejected
        } else if self.all || listed(&self.enabled) {
            Approval::Approved
        } else {
            Approval::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::vars::tests::lookup;
    use super::*;
    use serde_json::json;

    fn parse(servers: Value) -> Result<(Vec<ServerConfig>, Vec<String>), String> {
        let mut warnings = Vec::new();
        servers_of(
            Path::new("/p/s.json"),
            "mcpServers",
            &servers,
            Scope::Settings,
            &mut warnings,
        )
        .map(|s| (s, warnings))
        .map_err(|e| e.to_string())
    }

    #[test]
    fn server_shapes_and_errors() {
        let (servers, warnings) = parse(json!({
            "a": {"command": "node", "args": ["x.js", "--y"], "env": {"K": "v", "N": 3}, "cwd": "sub"},
            "b": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${T}"}, "timeout": 5000},
            "c": {"type": "sse", "url": "http://x"},
            "d": {"command": "x", "oauth": {}}
        }))
        .unwrap();
        assert_eq!(
            servers[0].transport,
            Transport::Stdio {
                command: "node".into(),
                args: vec!["x.js".into(), "--y".into()],
                env: vec![("K".into(), "v".into()), ("N".into(), "3".into())],
                cwd: Some("sub".into()),
            }
        );
        assert_eq!(servers[1].call_timeout, Some(Duration::from_millis(5000)));
        assert!(matches!(&servers[2].transport, Transport::Unsupported { kind } if kind == "sse"));
        assert_eq!(
            warnings,
            ["/p/s.json: mcpServers.d.oauth: toolrt does not read this MCP server key; ignored"]
        );
        for (servers, needle) in [
            (
                json!([]),
                "mcpServers: expected an object of server name → server, got array",
            ),
            (
                json!({"a": 1}),
                "mcpServers.a: expected an object, got integer",
            ),
            (json!({"a": {}}), "mcpServers.a.command: missing"),
            (
                json!({"a": {"command": ""}}),
                "mcpServers.a.command: cannot be empty",
            ),
            (
                json!({"a": {"command": "x", "args": "y"}}),
                "mcpServers.a.args: expected an array of strings",
            ),
            (
                json!({"a": {"command": "x", "args": [1]}}),
                "mcpServers.a.args[0]: expected a string",
            ),
            (
                json!({"a": {"command": "x", "env": {"A": {}}}}),
                "mcpServers.a.env.A: expected a string",
            ),
            (
                json!({"a": {"command": "x", "env": {"A=B": "1"}}}),
                "mcpServers.a.env.A=B: not a valid",
            ),
            (json!({"a": {"type": "http"}}), "mcpServers.a.url: missing"),
            (
                json!({"a": {"type": "carrier-pigeon"}}),
                "mcpServers.a.type: unknown transport",
            ),
            (
                json!({"a": {"command": "x", "timeout": "5"}}),
                "mcpServers.a.timeout: expected a positive integer",
            ),
        ] {
            let err = parse(servers.clone()).unwrap_err();
            assert!(err.contains(needle), "{servers}: {err}");
        }
    }

    #[test]
    fn expand_names_server_and_field() {
        let (servers, _) = parse(json!({
            "gh": {"type": "http", "url": "https://h/${SET}", "headers": {"Authorization": "Bearer ${TOKEN}"}},
            "st": {"command": "${SET}", "args": ["${UNSET:-d}"], "env": {"K": "${EMPTY}"}}
        }))
        .unwrap();
        let err = expand(&servers[0], &lookup).unwrap_err().to_string();
        assert_eq!(
            err,
            "/p/s.json: mcpServers.gh.headers.Authorization: ${TOKEN} is not set and has no default (write ${TOKEN:-default} for one); server \"gh\" is not started"
        );
        let launch = expand(&servers[1], &lookup).unwrap();
        assert_eq!(
            launch.transport,
            Transport::Stdio {
                command: "value".into(),
                args: vec!["d".into()],
                env: vec![("K".into(), String::new())],
                cwd: None,
            }
        );
    }

    fn settings(files: &[(&str, Value)]) -> Settings {
        let mut s = Settings::default();
        for (path, v) in files {
            s.merge_text(Path::new(path), &v.to_string()).unwrap();
        }
        s
    }

    #[test]
    fn project_servers_need_approval() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::write(
            cwd.join(".mcp.json"),
            json!({"mcpServers": {
                "on": {"command": "a"}, "off": {"command": "b"}, "new": {"command": "c"},
                "my.srv": {"command": "d"}, "both": {"command": "e"}
            }})
            .to_string(),
        )
        .unwrap();
        let shared = cwd.join(".claude/settings.json");
        let s = settings(&[
            (
                "/home/u/.claude/settings.json",
                json!({"enabledMcpjsonServers": ["on", "my_srv", "both"], "disabledMcpjsonServers": ["off", "both"]}),
            ),
            (
                shared.to_str().unwrap(),
                json!({"enableAllProjectMcpServers": true}),
            ),
        ]);
        let plan = plan(&s, &McpOptions::default(), cwd).unwrap();
        let got: Vec<(&str, Approval)> = plan
            .servers
            .iter()
            .map(|p| (p.config.name.as_str(), p.approval))
            .collect();
        assert_eq!(
            got,
            [
                ("both", Approval::Rejected),
                ("my.srv", Approval::Approved),
                ("new", Approval::Pending),
                ("off", Approval::Rejected),
                ("on", Approval::Approved),
            ]
        );
        assert!(
            plan.warnings[0].contains("cannot approve its own MCP servers"),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn sources_override_by_name_and_strict_keeps_only_flag_files() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        let flag = cwd.join("flag.json");
        std::fs::write(
            &flag,
            json!({"mcpServers": {"x": {"command": "from-flag"}}}).to_string(),
        )
        .unwrap();
        let s = settings(&[(
            "/s.json",
            json!({"mcpServers": {"x": {"command": "from-settings"}, "y": {"command": "y"}}}),
        )]);
        let options = McpOptions {
            config_files: vec![flag.clone()],
            strict: false,
        };
        let names = |p: &Plan| -> Vec<(String, String)> {
            p.servers
                .iter()
                .map(|s| match &s.config.transport {
                    Transport::Stdio { command, .. } => (s.config.name.clone(), command.clone()),
                    _ => unreachable!(),
                })
                .collect()
        };
        let p = plan(&s, &options, cwd).unwrap();
        assert_eq!(
            names(&p),
            [("x".into(), "from-flag".into()), ("y".into(), "y".into())]
        );
        let strict = McpOptions {
            strict: true,
            ..options
        };
        let p = plan(&s, &strict, cwd).unwrap();
        assert_eq!(names(&p), [("x".to_string(), "from-flag".to_string())]);
        std::fs::write(&flag, "{\"servers\": {}}").unwrap();
        let err = plan(&s, &strict, cwd).unwrap_err().to_string();
        assert!(
            err.contains("expected an object with \"mcpServers\""),
            "{err}"
        );
    }
}
