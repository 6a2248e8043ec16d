//! Where a call's execute step runs: here, or on another node. The supervisor asks a
//! [`Placement`] (the cluster's, when `--worker`s are configured) just before it executes; the
//! decisions before it (validation, hooks, permission) have all been taken here.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::call::Input;
use crate::tool::{ToolContext, ToolOutput};

/// A remote run: the output it ends with, whatever becomes of the node (a lost node is a
/// `failed` output naming it).
pub(crate) type RemoteRun = Pin<Box<dyn Future<Output = ToolOutput> + Send>>;

/// Where one call's execute step goes.
pub(crate) enum Placed {
    /// Run it in this process, as without a placement.
    Here(Input, ToolContext),
    /// Run it on the named node.
    There(Arc<str>, RemoteRun),
    /// It must run on a node and none can take it now: the words for the model.
    Nowhere(String),
}

/// Chooses the node for a call's execute step.
pub(crate) trait Placement: Send + Sync {
    /// The place for a call of tool `tool` (its registry name).
    fn place(&self, tool: &str, input: Input, ctx: ToolContext) -> Placed;
}
