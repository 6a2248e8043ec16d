//! Command-line interface: flags to [`Config`], thin over the library.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use toolrt::AskPolicy;
use toolrt::Mode;
use toolrt::Selection;
use toolrt::Settings;
use toolrt::{Config, OutputDir};

/// toolrt: executes AI agents' tool calls safely, in parallel, with one bounded result per call.
#[derive(Debug, Parser)]
#[command(name = "toolrt", version, about)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Speak the NDJSON protocol on stdin/stdout (docs/PROTOCOL.md).
    Serve(RuntimeArgs),
    /// Serve toolrt's tools as an MCP server over stdio, or streamable HTTP with --http
    /// (docs/MCP_SERVE.md): every tools/call walks the whole pipeline (rules, hooks, output
    /// budget).
    #[command(name = "mcp-serve")]
    McpServe {
        /// What an ask becomes when the MCP client cannot be asked (it declared no
        /// elicitation capability): deny | allow-read-only (allow tools that only read).
        #[arg(long = "ask", value_name = "POLICY", default_value = "deny", value_parser = parse_ask)]
        ask: toolrt::AskFallback,
        /// Streamable HTTP instead of stdio.
        #[command(flatten)]
        http: HttpArgs,
        /// Runtime flags, as for `serve`.
        #[command(flatten)]
        args: RuntimeArgs,
    },
    /// Process an NDJSON file exactly as `serve` would, then exit; asks are denied.
    Run {
        /// The NDJSON file (`-` for stdin).
        file: PathBuf,
        /// Runtime flags.
        #[command(flatten)]
        args: RuntimeArgs,
    },
    /// Print the permission decision for one call and what decided it, without running it.
    /// Checks that need a session (read-before-edit, task ids) are reported, not made.
    /// Exit status: 0 allow, 1 deny, 3 ask (2: bad flags, settings or input, unknown tool,
    /// schema error).
    Explain {
        /// The tool name (an alias resolves as in `serve`).
        tool: String,
        /// The input object, as JSON.
        input: String,
        /// Decide as a call of an agent of this type (repeat for nested agents, outermost
        /// first): its tools and rules narrowed from its parents', as `agent_start` would.
        #[arg(long = "agent-type", value_name = "TYPE")]
        agent_types: Vec<String>,
        /// Settings and permission flags, as for `serve`.
        #[command(flatten)]
        args: RuntimeArgs,
    },
    /// Print the tools a session with these flags would have (built-ins after --tools,
    /// aliases, MCP servers' tools) as one API's tool-definition list, JSON on stdout.
    Tools {
        /// Settings, tool selection, MCP flags and --format, as for `serve`.
        #[command(flatten)]
        args: RuntimeArgs,
    },
    /// Measure dispatch latency against its floors (docs/BENCH.md explains the figures).
    Bench(BenchArgs),
    /// Run a command inside the Bash sandbox, as the Bash tool does when `sandbox.enabled`:
    /// restrict this process as the policy says, then exec the command (`-- bash -c …`).
    /// Exit status 125 when the sandbox cannot be set up.
    #[command(name = "sandbox-exec")]
    SandboxExec {
        /// The policy, as JSON (toolrt writes it; docs/SEMANTICS.md, "Bash sandbox").
        #[arg(long)]
        policy: String,
        /// Set everything up, print what is enforced and exit, instead of running a command.
        #[arg(long)]
        probe: bool,
        /// Be the session's namespace holder: make the user and network namespaces commands
        /// join, relay the proxy port inside to toolrt's proxy, and stay until stdin closes.
        #[arg(long, hide = true)]
        hold: bool,
        /// The command and its arguments, after `--`.
        #[arg(last = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Run calls' execute steps for a coordinator (`serve --worker ADDR`) over ractor_cluster.
    /// The link is authenticated by the cookie, and encrypted with --tls-cert/--tls-key (without
    /// them: loopback or a trusted network only).
    Worker(WorkerArgs),
    /// Internal: the watchdog process toolrt starts for itself (see `toolrt::watchdog`).
    #[command(name = "__watchdog", hide = true)]
    Watchdog,
}

/// Flags of `toolrt bench`.
#[derive(Debug, Args, Clone)]
pub struct BenchArgs {
    /// Fewer calls per figure: seconds rather than most of a minute on two cores.
    #[arg(long)]
    pub quick: bool,
    /// Write every figure as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Draw the latency distributions (toolrt vs its floors) as an SVG to this file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Tiny sizes for tests of the command itself; the figures mean nothing.
    #[arg(long, hide = true)]
    pub smoke: bool,
    /// The MCP server for the MCP figure, as "PROGRAM ARGS…" (it must have an `echo` tool);
    /// default: server-everything as tests/fixtures/mcp/install installs it.
    #[arg(long, value_name = "COMMAND")]
    pub mcp_server: Option<String>,
    /// Also measure worker nodes: start N `toolrt worker`s on loopback (3 when N is left out)
    /// and compare a call on a worker with the same call run locally, and `sleep` calls'
    /// throughput on one worker with all N.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "3",
          value_parser = clap::value_parser!(u16).range(2..=64))]
    pub cluster: Option<u16>,
}

impl From<BenchArgs> for toolrt::bench::Options {
    fn from(args: BenchArgs) -> Self {
        Self {
            quick: args.quick,
            smoke: args.smoke,
            json: args.json,
            plot: args.plot,
            mcp_server: args.mcp_server,
            cluster: args.cluster.map(usize::from),
        }
    }
}

/// `toolrt mcp-serve --http`: where to listen and how requests authenticate.
#[derive(Debug, Args)]
pub(crate) struct HttpArgs {
    /// Serve MCP over streamable HTTP at IP:PORT (endpoint /mcp) instead of stdio; a loopback
    /// address unless --http-allow-remote. Port 0 picks one; the address is printed on stderr.
    #[arg(long = "http", value_name = "ADDR")]
    pub addr: Option<std::net::SocketAddr>,
    /// The bearer token every request must carry, read from this file (its first line);
    /// default: the TOOLRT_MCP_TOKEN environment variable.
    #[arg(long = "http-token-file", value_name = "FILE", requires = "addr")]
    pub token_file: Option<PathBuf>,
    /// Accept requests without a token (anyone who can connect may run tools).
    #[arg(
        long = "http-no-auth",
        requires = "addr",
        conflicts_with = "token_file"
    )]
    pub no_auth: bool,
    /// Allow an address that is not loopback.
    #[arg(long = "http-allow-remote", requires = "addr")]
    pub allow_remote: bool,
}

/// The environment variable `--http` reads its token from when no file is given.
const TOKEN_ENV: &str = "TOOLRT_MCP_TOKEN";

impl HttpArgs {
    /// The HTTP options, `None` for stdio; Err says why they cannot be used.
    pub(crate) fn options(self) -> Result<Option<toolrt::McpHttpOptions>, String> {
        let Some(addr) = self.addr else {
            return Ok(None);
        };
        let token = if self.no_auth {
            None
        } else if let Some(file) = &self.token_file {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("--http-token-file {}: {e}", file.display()))?;
            Some(text.lines().next().unwrap_or_default().trim().to_string())
        } else {
            match std::env::var(TOKEN_ENV) {
                Ok(t) => Some(t.trim().to_string()),
                Err(_) => {
                    return Err(format!(
                        "--http needs a token: --http-token-file FILE or {TOKEN_ENV} (or --http-no-auth to serve without one)"
                    ));
                }
            }
        };
        if token.as_deref().is_some_and(str::is_empty) {
            return Err("the --http token is empty".into());
        }
        Ok(Some(toolrt::McpHttpOptions {
            addr,
            token,
            allow_remote: self.allow_remote,
        }))
    }
}

/// Flags of `toolrt worker`.
#[derive(Debug, Args, Clone)]
pub(crate) struct WorkerArgs {
    /// Where to listen for coordinators (`host:port`).
    #[arg(long, value_name = "ADDR")]
    pub listen: std::net::SocketAddr,
    /// The file holding the cookie shared with the coordinator.
    #[arg(long = "cookie-file", value_name = "FILE")]
    pub cookie_file: PathBuf,
    /// The workspace its calls act on (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Its name in results and `node` events (default: the listen address).
    #[arg(long, value_name = "NAME", value_parser = non_empty)]
    pub name: Option<String>,
    /// The tools it offers, a comma list (default: Bash,Read,Write,Edit,Glob,Grep,WebFetch).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Listen on an address other than loopback without TLS (the link is then not encrypted).
    #[arg(long = "insecure-network")]
    pub insecure_network: bool,
    /// The worker's TLS certificate chain (PEM; with --tls-key): coordinators then reach it
    /// only over TLS, and it may listen on any address.
    #[arg(long = "tls-cert", value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long = "tls-key", value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Ask each coordinator for a certificate of its own, signed by a CA of this PEM file
    /// (serve --tls-cert): one without is refused before the cookie is asked for.
    #[arg(long = "tls-client-ca", value_name = "FILE", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,
    /// How long calls of a coordinator whose link closed keep running before their process
    /// groups are killed, in milliseconds.
    #[arg(long = "orphan-grace-ms", value_name = "MS", default_value_t = 5000)]
    pub orphan_grace_ms: u64,
}

impl WorkerArgs {
    /// The library's options.
    pub(crate) fn into_options(self) -> Result<toolrt::WorkerOptions, String> {
        let cwd = match self.cwd {
            Some(dir) => dir,
            None => std::env::current_dir()
                .map_err(|e| format!("cannot read the current directory: {e}"))?,
        };
        Ok(toolrt::WorkerOptions {
            listen: self.listen,
            cookie_file: self.cookie_file,
            cwd,
            name: self.name,
            tools: self.tools,
            insecure_network: self.insecure_network,
            tls: (self.tls_cert.zip(self.tls_key))
                .map(|(cert, key)| toolrt::TlsIdentity { cert, key }),
            tls_client_ca: self.tls_client_ca,
            orphan_grace: std::time::Duration::from_millis(self.orphan_grace_ms),
        })
    }
}

/// Worker nodes for `serve` (docs/PROTOCOL.md, "Worker nodes").
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct ClusterArgs {
    /// A worker node's address (`host:port`, repeatable): calls' execute steps run there.
    #[arg(long = "worker", value_name = "ADDR")]
    pub workers: Vec<String>,
    /// A file of worker addresses, one per line (`#` comments).
    #[arg(long = "workers", value_name = "FILE")]
    pub workers_file: Option<PathBuf>,
    /// The file holding the cookie shared with the workers (required with workers).
    #[arg(long = "cookie-file", value_name = "FILE")]
    pub cookie_file: Option<PathBuf>,
    /// Allow worker addresses other than loopback without TLS (the link is then not
    /// encrypted).
    #[arg(long = "insecure-network")]
    pub insecure_network: bool,
    /// Reach the workers over TLS, trusting the CA certificates of this PEM file: each worker
    /// must present a certificate they signed (toolrt worker --tls-cert).
    #[arg(long = "tls-ca", value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// The name a worker's certificate must hold (default: the IP address it is dialed at).
    #[arg(long = "tls-server-name", value_name = "NAME", requires = "tls_ca")]
    pub tls_server_name: Option<String>,
    /// This coordinator's own TLS certificate chain (PEM; with --tls-key and --tls-ca), for
    /// workers that ask for one (toolrt worker --tls-client-ca).
    #[arg(long = "tls-cert", value_name = "FILE", requires_all = ["tls_key", "tls_ca"])]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long = "tls-key", value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

impl ClusterArgs {
    /// The cluster configuration, if any worker is named.
    fn into_config(self) -> Result<Option<toolrt::ClusterConfig>, String> {
        let mut workers = self.workers;
        if let Some(file) = &self.workers_file {
            workers.extend(toolrt::read_workers_file(file)?);
        }
        match (workers.is_empty(), self.cookie_file) {
            (true, _) if self.tls_ca.is_some() => {
                Err("--tls-ca needs --worker or --workers".into())
            }
            (true, None) => Ok(None),
            (true, Some(_)) => Err("--cookie-file needs --worker or --workers".into()),
            (false, None) => Err("--worker and --workers need --cookie-file".into()),
            (false, Some(cookie_file)) => Ok(Some(toolrt::ClusterConfig {
                cookie_file,
                workers,
                insecure_network: self.insecure_network,
                tls: self.tls_ca.map(|ca| toolrt::TlsTrust {
                    ca,
                    server_name: self.tls_server_name,
                    client: (self.tls_cert.zip(self.tls_key))
                        .map(|(cert, key)| toolrt::TlsIdentity { cert, key }),
                }),
            })),
        }
    }
}

/// Flags shared by `serve` and `run`.
#[derive(Debug, Args, Clone)]
pub(crate) struct RuntimeArgs {
    /// A settings file (repeatable; later files win for scalars, lists pool).
    #[arg(long = "settings", value_name = "FILE")]
    pub settings: Vec<PathBuf>,
    /// Tool selection: "" for none, "default" for all built-ins, or a comma list.
    #[arg(long = "tools", value_name = "LIST", default_value = "default")]
    pub tools: String,
    /// A permission rule added to allow (repeatable).
    #[arg(long = "allowed-tools", alias = "allowedTools", value_name = "RULE")]
    pub allowed_tools: Vec<String>,
    /// A permission rule added to deny (repeatable).
    #[arg(
        long = "disallowed-tools",
        alias = "disallowedTools",
        value_name = "RULE"
    )]
    pub disallowed_tools: Vec<String>,
    /// default | acceptEdits | plan | bypassPermissions | dontAsk.
    #[arg(long = "permission-mode", value_name = "MODE", value_parser = parse_mode)]
    pub permission_mode: Option<Mode>,
    /// Working directory and workspace root (default: the current directory).
    #[arg(long = "cwd", value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Calls executing at once, across batches.
    #[arg(long = "max-in-flight", value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_in_flight: u32,
    /// Admitted calls allowed to wait beyond those executing.
    #[arg(long = "max-queued", value_name = "N", default_value_t = 4096)]
    pub max_queued: u32,
    /// Accepted calls allowed to wait for admission (also bounded to 64 MiB of input); past
    /// that toolrt stops reading, or refuses calls as busy while a call waits for an answer.
    #[arg(long = "max-parked", value_name = "N", default_value_t = toolrt::DEFAULT_MAX_PARKED as u32)]
    pub max_parked: u32,
    /// Concurrency-safe calls of one batch running at once.
    #[arg(long = "max-parallel", value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_parallel: u32,
    /// Where output files are written, kept after exit (default:
    /// $XDG_STATE_HOME/toolrt/sessions/<session id>, else ~/.local/state/toolrt/sessions/…).
    #[arg(long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Write output files to a fresh temporary folder deleted at exit; notices say so.
    #[arg(long = "temp-output-dir", conflicts_with = "output_dir")]
    pub temp_output_dir: bool,
    /// Make a settings key toolrt does not know or ignores an error (exit 2) instead of a warning.
    #[arg(long = "strict-settings")]
    pub strict_settings: bool,
    /// Who answers an ask: "client" (a permission_request) or "none" (deny).
    #[arg(long = "permission-prompt", value_name = "WHO", default_value = "client", value_parser = ["client", "none"])]
    pub permission_prompt: String,
    /// A plugin directory whose hooks/hooks.json to load (repeatable).
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dirs: Vec<PathBuf>,
    /// The session_id hooks see (default: a fresh id per run).
    #[arg(long = "session-id", value_name = "ID", value_parser = non_empty)]
    pub session_id: Option<String>,
    /// The transcript_path hooks see (default: null).
    #[arg(long = "transcript-path", value_name = "P", value_parser = non_empty)]
    pub transcript_path: Option<String>,
    /// An MCP configuration file in the .mcp.json shape, {"mcpServers": {...}} (repeatable).
    #[arg(long = "mcp-config", value_name = "FILE")]
    pub mcp_config: Vec<PathBuf>,
    /// Start only the MCP servers of --mcp-config files (not those of settings or .mcp.json).
    #[arg(long = "strict-mcp-config")]
    pub strict_mcp_config: bool,
    /// A model API whose messages this session reads as turns of calls, answering each in its
    /// shape: native | anthropic | openai-chat | openai-responses (docs/FORMATS.md).
    #[arg(long = "format", value_name = "FORMAT", default_value = "native", value_parser = parse_format)]
    pub format: toolrt::Format,
    /// Worker nodes.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

fn non_empty(s: &str) -> Result<String, String> {
    if s.is_empty() {
        Err("must not be empty".into())
    } else {
        Ok(s.to_owned())
    }
}

fn parse_format(s: &str) -> Result<toolrt::Format, String> {
    s.parse().map_err(|e: toolrt::UnknownFormat| e.to_string())
}

fn parse_ask(s: &str) -> Result<toolrt::AskFallback, String> {
    s.parse()
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse().map_err(|e: toolrt::UnknownMode| e.to_string())
}

impl RuntimeArgs {
    /// Loads settings and builds the runtime config. Errors are for stderr, exit 2.
    pub(crate) fn into_config(self, ask: AskPolicy) -> Result<Config, String> {
        // Its warnings are printed (or refused, with --strict-settings) when the runtime starts.
        let settings = Settings::load(&self.settings).map_err(|e| e.to_string())?;
        let cwd = match self.cwd {
            Some(dir) => dir,
            None => std::env::current_dir()
                .map_err(|e| format!("cannot read the current directory: {e}"))?,
        };
        let mut config = Config::new(cwd);
        config.output_dir = match (self.output_dir, self.temp_output_dir) {
            (Some(dir), _) => OutputDir::At(dir),
            (None, true) => OutputDir::Temporary,
            (None, false) => OutputDir::Default,
        };
        config.settings = settings;
        config.selection = Selection::parse(&self.tools);
        config.allowed_tools = self.allowed_tools;
        config.disallowed_tools = self.disallowed_tools;
        config.permission_mode = self.permission_mode;
        config.strict_settings = self.strict_settings;
        config.max_in_flight = self.max_in_flight as usize;
        config.max_queued = self.max_queued as usize;
        config.max_parked = self.max_parked as usize;
        config.max_parallel = self.max_parallel as usize;
        config.plugin_dirs = self.plugin_dirs;
        config.session_id = self.session_id;
        config.transcript_path = self.transcript_path;
        config.mcp = toolrt::McpOptions {
            config_files: self.mcp_config,
            strict: self.strict_mcp_config,
        };
        config.format = self.format;
        config.cluster = self.cluster.into_config()?;
        config.otel = toolrt::OtlpConfig::from_env().map_err(|e| e.to_string())?;
        config.ask_policy = if self.permission_prompt == "none" {
            AskPolicy::Deny
        } else {
            ask
        };
        Ok(config)
    }
}
