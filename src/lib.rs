//! toolrt executes AI agents' tool calls. The model is one line:
//!
//! **every accepted call yields exactly one result.**
//!
//! A call walks one pipeline, in this order (written down once, in [`supervisor`]):
//! resolve → alias → registry → coerce → schema → validate → PreToolUse hooks → permission
//! (ask → permission_request → back to the decision) → execute → PostToolUse /
//! PostToolUseFailure hooks → output budget → one `tool_result`.
//!
//! # Layout
//! - [`call`]: a call, a result, the outcome values.
//! - [`tool`]: the `Tool` trait and what a running tool gets.
//! - [`protocol`]: the NDJSON wire messages and line parsing.
//! - [`settings`]: settings files, merged, with errors naming file and key.
//! - [`registry`]: which tools exist: selection and aliases (not permission).
//! - [`validate`]: the validate stage: resolve, coerce, schema, the tool's own checks.
//! - [`hooks`]: the hook stage.
//! - [`permission`]: the permission stage: allow / deny / ask.
//! - `shell`: shell analysis: what a Bash command runs, reads and writes, and whether every
//!   part of it is understood (used by the permission stage and the Bash tool).
//! - `execute`: the execute stage: runs tools on their own tasks, catches panics.
//! - [`budget`]: the output-budget stage: truncation and externalized outputs.
//! - [`supervisor`]: the per-call supervisor (a task of its own), the only owner of the stage
//!   order.
//! - [`dispatch`]: admission, batches, cancellation.
//! - [`scope`]: agent scopes (`agent_start` / `agent_end`): each agent's tools, rules and mode,
//!   narrowed from its parent's once when it starts, and its cancellation.
//! - [`inflight`]: the calls in flight and each one's result slot (the one-result guarantee).
//! - [`slots`]: execution slots (`--max-in-flight`), shared round-robin across scopes.
//! - [`runtime`]: assembling all of it from a [`runtime::Config`].
//! - [`server`]: the `serve` / `run` loops over stdin and stdout.
//! - [`emit`]: the single writer of stdout.
//! - [`formats`]: the model APIs' shapes (Anthropic, OpenAI Chat, OpenAI Responses): tool
//!   definitions out, calls in, results out; used by the server and the runtime only.
//! - `memory`: giving memory back to the system once a burst of calls is over.
//! - [`tools`]: the built-in tools, one file each.
//! - [`mcp`]: MCP servers (through the official SDK `rmcp`) and their tools.
//! - [`client_tools`]: tools the orchestrator defines and runs (`register_tools`, `execute`),
//!   or a library user's async functions.
//! - `deadlines`: many calls' time limits kept by one task (MCP connections, client tools).
//! - [`session`], `paths`, `stage`: shared session state, path normalisation, stage plumbing.
//! - [`process`]: every process toolrt starts (Bash, background tasks, hooks): own process
//!   group, environment, kill; its `watchdog` kills every group toolrt started if toolrt dies,
//!   even by SIGKILL.
//! - `bench`: `toolrt bench`, dispatch latency against its floors (docs/BENCH.md). It exists
//!   only with the `cli` feature (on by default), which the `toolrt` binary needs (its command
//!   line, `cli`, is the binary's own module); a library user turns default features off and
//!   compiles neither them nor their dependencies (clap, plotters, tracing-subscriber).

#[cfg(feature = "cli")]
pub mod bench;
pub mod budget;
pub mod call;
pub mod client_tools;
pub(crate) mod deadlines;
pub mod dispatch;
pub mod emit;
pub(crate) mod execute;
pub mod formats;
pub mod hooks;
pub mod inflight;
pub mod mcp;
pub(crate) mod memory;
pub(crate) mod paths;
pub mod permission;
pub mod process;
pub mod protocol;
pub mod registry;
pub mod runtime;
pub mod scope;
pub mod server;
pub mod session;
pub mod settings;
pub(crate) mod shell;
pub mod slots;
pub(crate) mod stage;
pub mod supervisor;
pub mod tool;
pub mod tools;
pub mod validate;

// The public API: what an embedder uses, named at the crate root (ARCHITECTURE.md, "Public
// API"). Tests, benchmarks and examples outside src/ use these names only, not module paths
// (tests/architecture_layers.rs checks it, with a list of the files not there yet).

// Starting and driving a runtime.
pub use dispatch::{Dispatcher, Full, Unplaced};
pub use emit::Outbox;
pub use registry::{GroupChange, Selection};
pub use runtime::{Config, OutputDir, Runtime, StartError};
pub use settings::{Settings, SettingsError};
pub use supervisor::AskPolicy;
// What goes in and comes out: the wire messages as values.
pub use call::{Input, Outcome, ToolCall, ToolResult};
pub use protocol::{
    AgentStart, CancelTarget, ClientMessage, ClientToolSpec, ExecuteContent, ExecuteResult,
    LineError, PermissionResponse, ServerMessage, parse_line,
};
// Permission.
pub use permission::Mode;
// Writing a tool.
pub use process::scrubbed_names;
pub use session::{Guard, Session};
pub use tool::{
    Access, BudgetClass, ProgressSink, StateKey, Subject, Tool, ToolContext, ToolOutput, ToolStatus,
};
// The built-in tools, usable without a runtime: their shared state (rewind, background tasks)
// and the tools themselves (`ToolState::tools`); Noop measures dispatch.
pub use tools::noop::Noop;
pub use tools::{DEFAULT_TOOLS, RewindError, ToolState};
// Tools the orchestrator runs, and MCP servers.
pub use client_tools::RegisterError;
pub use mcp::{ServerStatus as McpServerStatus, Status as McpStatus};
// In-process hooks.
pub use hooks::{HookEvent, HookOutput, HookPermission, InProcessHook};
