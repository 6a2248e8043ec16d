//! Hooks: users' own commands (and library users' Rust functions) that see each call before and
//! after it runs and may block, rewrite, ask, defer, stop or comment (docs/SEMANTICS.md §4).
//!
//! The pipeline calls one [`HookRunner`] method per event; each selects the matching hooks
//! (pre-indexed per event, so an event with no hooks costs nothing), runs them all in parallel,
//! and merges their outputs in configuration order into one result type.
//!
//! # Layout
//! - `config`: the `hooks` settings, the matcher, [`HookConfig`] and its errors.
//! - `protocol`: hook input fields and how one hook's exit code and stdout are read.
//! - `merge`: combining several hooks' outputs into the per-event result types.
//! - `command`: spawning one command hook: own process group, bounded capture, kill on timeout;
//!   which shell runs it, and whether that shell could parse it.
//! - `http`: POSTing one `http` hook's input and reading its answer.
//! - [`plugin`]: `--plugin-dir` plugins and their hooks files.
//! - `runner`: [`HookRunner`], wire events, `onFailure`, async hooks, the 10,000-character
//!   externalization.
//! - `stage`: the hook stage actor and its typed handle [`Hooks`], which the supervisor calls.

mod command;
mod config;
mod http;
mod merge;
pub(crate) mod plugin;
mod protocol;
mod runner;
pub(crate) mod stage;

pub(crate) use config::HookConfig;
pub use config::{HookConfigError, HookEvent, PluginInfo};
pub(crate) use merge::{
    PermissionRequestDecision, PermissionRequestResult, PostBatchResult, PostToolResult,
    PreToolUseResult,
};
pub use protocol::{HookOutput, HookPermission, HookStatus, InProcessHook};
pub(crate) use runner::{
    BatchCallRecord, HookEnv, HookRunner, IfFilter, SubagentFacts, ToolHookCall,
};
pub(crate) use stage::Hooks;
