//! toolrt executes AI agents' tool calls. The model is one line:
//!
//! **every accepted call yields exactly one result.**
//!
//! A call walks one pipeline, in this order (written down once, in `supervisor`):
//! resolve → alias → registry → coerce → schema → validate → PreToolUse hooks → permission
//! (ask → permission_request → back to the decision) → execute → PostToolUse /
//! PostToolUseFailure hooks → output budget → one `tool_result`.
//!
//! # Public API
//!
//! Everything an embedder uses is named at the crate root; start with [`Runtime`] (its
//! documentation has a complete example: a tool of your own, a call, its result). The modules
//! below are private (only `bench` is public, with the `cli` feature): they are listed to find
//! one's way in the source.
//!
//! # Layout
//! - `call`: a call, a result, the outcome values.
//! - `tool`: the `Tool` trait and what a running tool gets.
//! - `protocol`: the NDJSON wire messages and line parsing.
//! - `settings`: settings files, merged, with errors naming file and key.
//! - `registry`: which tools exist: selection and aliases (not permission).
//! - `validate`: the validate stage: resolve, coerce, schema, the tool's own checks.
//! - `hooks`: the hook stage.
//! - `permission`: the permission stage: allow / deny / ask.
//! - `shell`: shell analysis: what a Bash command runs, reads and writes, and whether every
//!   part of it is understood (used by the permission stage and the Bash tool).
//! - `execute`: the execute stage: runs tools on their own tasks, catches panics.
//! - `budget`: the output-budget stage: truncation and externalized outputs.
//! - `supervisor`: the per-call supervisor (a task of its own), the only owner of the stage
//!   order.
//! - `dispatch`: admission, batches, cancellation.
//! - `scope`: agent scopes (`agent_start` / `agent_end`): each agent's tools, rules and mode,
//!   narrowed from its parent's once when it starts, and its cancellation.
//! - `inflight`: the calls in flight and each one's result slot (the one-result guarantee).
//! - `slots`: execution slots (`--max-in-flight`), shared round-robin across scopes.
//! - `runtime`: assembling all of it from a [`Config`].
//! - `server`: the `serve` / `run` loops over stdin and stdout.
//! - `mcp_serve`: `toolrt mcp-serve`, the runtime as an MCP server (rmcp's): tools/list,
//!   tools/call through the whole pipeline, asks as elicitations, progress, cancellation.
//! - `emit`: the single writer of stdout.
//! - `formats`: the model APIs' shapes (Anthropic, OpenAI Chat, OpenAI Responses): tool
//!   definitions out, calls in, results out; used by the server and the runtime only.
//! - `memory`: giving memory back to the system once a burst of calls is over.
//! - `otel`: OpenTelemetry spans of calls (GenAI conventions), exported over OTLP/HTTP by a
//!   task of its own (the `otel` feature, on in the binary).
//! - `tools`: the built-in tools, one file each.
//! - `mcp`: MCP servers (through the official SDK `rmcp`) and their tools.
//! - `client_tools`: tools the orchestrator defines and runs (`register_tools`, `execute`),
//!   or a library user's async functions.
//! - `client_waits`: how many calls wait for an answer only the client can give; the server's
//!   reader keeps reading while any does.
//! - `deadlines`: many calls' time limits kept by one task (MCP connections, client tools).
//! - `session`, `paths`, `stage`: shared session state, path normalisation, stage plumbing.
//! - `process`: every process toolrt starts (Bash, background tasks, hooks): own process
//!   group, environment, kill; its `watchdog` kills every group toolrt started if toolrt dies,
//!   even by SIGKILL.
//! - `sandbox`: the Bash sandbox: its settings, and its helper (`toolrt-sandbox-exec`, a small
//!   binary of its own, or `toolrt sandbox-exec`), which restricts itself (namespaces, mounts,
//!   Landlock, no capabilities) and then runs the command.
//! - `bench`: `toolrt bench`, dispatch latency against its floors (docs/BENCH.md). It exists
//!   only with the `cli` feature (on by default), which the `toolrt` binary needs (its command
//!   line, `cli`, is the binary's own module); a library user turns default features off and
//!   compiles neither them nor their dependencies (clap, plotters, tracing-subscriber).

#[cfg(feature = "cli")]
pub mod bench;
mod budget;
mod call;
mod client_tools;
mod client_waits;
mod cluster;
mod deadlines;
mod dispatch;
mod emit;
mod execute;
mod formats;
mod hooks;
mod http_client;
mod inflight;
mod input_shape;
mod mcp;
mod mcp_serve;
mod memory;
mod otel;
mod paths;
mod permission;
mod process;
mod protocol;
mod quote;
mod registry;
mod runtime;
mod sandbox;
mod scope;
mod server;
mod session;
mod settings;
mod shell;
mod slots;
mod stage;
mod supervisor;
mod tool;
mod tools;
mod validate;

// The public API: what an embedder uses, named at the crate root (ARCHITECTURE.md, "Public
// API"). Tests, benchmarks and examples outside src/ use these names only, not module paths
// (tests/architecture_layers.rs checks it, with a list of the files not there yet).

// Starting and driving a runtime.
pub use dispatch::{Dispatcher, Full, Unplaced};
pub use emit::Outbox;
#[cfg(feature = "otel")]
pub use otel::{OtlpConfig, OtlpConfigError};
pub use registry::{GroupChange, Selection};
pub use runtime::{Config, OutputDir, Runtime, StartError};
// Worker nodes (`toolrt worker`, `serve --worker`).
pub use cluster::{
    ClusterConfig, TlsIdentity, TlsTrust, WORKER_TOOLS, WorkerOptions, read_workers_file,
    run_worker,
};
pub use settings::{Settings, SettingsError};
pub use supervisor::AskPolicy;
// What goes in and comes out: the wire messages as values.
pub use call::{Input, Outcome, ToolCall, ToolResult};
pub use protocol::{
    AgentStart, CancelTarget, ClientMessage, ClientToolSpec, EventBody, ExecuteContent,
    ExecuteResult, LineError, PermissionResponse, ServerMessage, parse_line,
};
// Permission, and explaining a decision without running anything (`toolrt explain`).
pub use call::Rejection;
pub use permission::{
    Behavior, DecidedBy, Decision, HookVerdict, Mode, RuleKind, SubcommandVerdict, UnknownMode,
};
pub use runtime::{Explained, explain, explain_as};
// The NDJSON server over any reader and writer (`toolrt serve` / `toolrt run`).
pub use server::{SignalState, serve, watch_signals};
// toolrt as an MCP server (`toolrt mcp-serve`): the same runtime behind MCP's tools/list and
// tools/call.
pub use mcp_serve::{
    AskFallback, HttpError as McpHttpError, HttpOptions as McpHttpOptions,
    HttpServer as McpHttpServer, McpServeOptions, Stop as McpStop, mcp_serve, mcp_serve_until,
};
// The model APIs' shapes: tool definitions out (`toolrt tools`), calls in, results out.
pub use formats::strict::drop_absent_nulls;
pub use formats::{
    Format, MAX_ID_BYTES, Note as ToolListNote, ShapeError, ToolDef, ToolList, Turn, UnknownFormat,
    outcomes, read_calls, results_body, tool_list,
};
pub use runtime::list_tools;
// What configures a runtime besides `Config`'s own fields, and why it may refuse to start.
pub use dispatch::DEFAULT_MAX_PARKED;
pub use hooks::plugin::PluginError;
pub use hooks::{HookConfigError, PluginInfo};
pub use mcp::config::{McpConfigError, McpOptions};
pub use permission::{PolicyError, RuleError};
pub use registry::RegistryError;
pub use scope::AgentsError;
pub use scope::ScopeError;
pub use settings::{Limits, SettingsFile};
pub use supervisor::{Stage, StageClock};
// Processes toolrt starts die with it, even if it is killed (`toolrt __watchdog`).
pub use process::watchdog;
// `toolrt sandbox-exec`: the Bash sandbox's helper restricts itself, then runs the command.
pub use sandbox::sandbox_exec;
// Writing a tool.
pub use process::scrubbed_names;
pub use session::{
    Guard, SandboxTicket, SandboxedCall, Session, ShellLaunch, ShellPlan, ShellSandbox,
    UNSANDBOXED_FIELD,
};
pub use tool::{
    Access, Attachments, BudgetClass, FullOutput, Hints, ProgressSink, ProgressTarget, StateKey,
    Subject, Tool, ToolContext, ToolOutput, ToolStatus, Verdict,
};
// The built-in tools, usable without a runtime: their shared state (rewind, background tasks)
// and the tools themselves (`ToolState::tools`); Noop measures dispatch.
pub use tools::noop::Noop;
pub use tools::{DEFAULT_TOOLS, RewindError, Rewound, ToolState};
// Tools the orchestrator runs, and MCP servers.
pub use client_tools::RegisterError;
pub use mcp::{ServerStatus as McpServerStatus, Status as McpStatus};
// In-process hooks.
pub use hooks::{HookEvent, HookOutput, HookPermission, HookStatus, InProcessHook};
