//! Hook stage: PreToolUse, PermissionRequest, PostToolUse, PostToolUseFailure and PostToolBatch.
//!
//! Interim: no hooks can be configured yet, so every event passes through. The hooks issue
//! brings command hooks behind this same handle.

use serde_json::{Map, Value};

/// A PreToolUse permission verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookPermission {
    /// Skip the prompt.
    Allow,
    /// Force a prompt.
    Ask,
    /// Block.
    Deny,
    /// Defer: nothing runs.
    Defer,
}

/// An input rewritten by a hook.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdatedInput {
    /// The new input.
    pub input: Map<String, Value>,
    /// Which hook rewrote it.
    pub hook: String,
}

/// The merged result of the PreToolUse hooks of one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreToolUseResult {
    /// The merged permission verdict.
    pub permission: Option<HookPermission>,
    /// Why (for a deny: the model sees it).
    pub reason: Option<String>,
    /// A rewritten input.
    pub updated_input: Option<UpdatedInput>,
    /// Context to add beside the result.
    pub additional_context: Vec<String>,
    /// `continue: false`: the stop reason.
    pub stop: Option<String>,
}

/// The merged result of post-execution hooks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PostToolResult {
    /// Feedback to append to the result, labelled.
    pub feedback: Vec<String>,
    /// A replacement for the result content.
    pub updated_output: Option<String>,
    /// `continue: false`: the stop reason.
    pub stop: Option<String>,
}

/// Typed handle to the hook stage.
#[derive(Clone, Debug, Default)]
pub struct Hooks {}

impl Hooks {
    /// A stage with no hooks configured.
    pub fn none() -> Self {
        Self {}
    }

    /// Whether any PreToolUse hook is configured (lets the supervisor skip the hop).
    pub fn has_pre_tool_use(&self) -> bool {
        false
    }

    /// Whether any post-execution hook is configured.
    pub fn has_post_tool_use(&self) -> bool {
        false
    }

    /// Stops the stage.
    pub fn stop(&self) {}
}
