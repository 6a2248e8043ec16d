//! Where a call's execute step runs: here, or on another node. With worker nodes the
//! supervisor asks a [`Placement`] (the cluster's) for a node before the permission decision,
//! so that the decision is about that node's files; the call then runs on the node it was
//! given, through its [`Lease`].

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use crate::call::Input;
use crate::tool::{ToolContext, ToolOutput};

/// A remote run: how it ends, whatever becomes of the node (a lost node is a `failed` output
/// naming it).
pub(crate) type RemoteRun = Pin<Box<dyn Future<Output = RemoteEnd> + Send>>;

/// How a remote run ends.
pub(crate) enum RemoteEnd {
    /// With the tool's output (or one saying why it could not run there).
    Ran(ToolOutput),
    /// Without running: this path, which the permission decision looked at, resolves
    /// differently on the node now, so the decision must be made again.
    Stale(PathBuf),
    /// Without running: the node was lost before the call could be sent to it (why, in words).
    NotSent(String),
}

/// What the node is told besides the tool and its input.
pub(crate) struct RunTerms {
    /// The tool walks folders, leaving out what the session's Read deny rules hide, so the
    /// node must be told them.
    pub searches: bool,
    /// Each path the decision looked at and what the node said it resolves to
    /// ([`Lease::resolve`]): the node runs the call only if each still resolves so.
    pub expect: Vec<(PathBuf, Vec<PathBuf>)>,
}

/// What a path resolves to on a node: the path itself first, then each path it reaches through
/// symlinks there; or why the node could not say.
pub(crate) type Resolving = Pin<Box<dyn Future<Output = Result<Vec<PathBuf>, String>> + Send>>;

/// A node chosen for one call. The call counts toward the node's load from the choice (its
/// permission decision included) until the lease is dropped or its run ends.
pub(crate) trait Lease: Send + Sync {
    /// The node's name, for the result.
    fn node(&self) -> &Arc<str>;
    /// The node's workspace folder: the call's relative paths resolve against it.
    fn root(&self) -> &Path;
    /// The home folder on the node (`~` in a path).
    fn home(&self) -> &Path;
    /// Asks the node what the absolute `path` resolves to through its symlinks.
    fn resolve(&self, path: PathBuf) -> Resolving;
    /// What the node answered for `path` when last asked on this link, if it was. Only an
    /// *allow* may rest on it: the node checks it again before it runs the call ([`RunTerms`]),
    /// but a call denied or asked about never reaches the node.
    fn kept(&self, path: &Path) -> Option<Vec<PathBuf>>;
    /// The session's Bash sandbox as it holds for commands run on the node (None: the
    /// session has no sandbox).
    fn sandbox(&self) -> Option<Arc<dyn crate::session::ShellSandbox>> {
        None
    }
    /// Runs the call's execute step on the node.
    fn run(
        self: Box<Self>,
        tool: &str,
        input: Input,
        ctx: ToolContext,
        terms: RunTerms,
    ) -> RemoteRun;
}

/// Chooses the node for a call's execute step.
pub(crate) trait Placement: Send + Sync {
    /// A node for a call of tool `tool` (its registry name) with `input`, on the node named
    /// `on` (a worker's name or address: the call's agent runs there) or else any (a call
    /// about a background task goes where the task runs); when none can take it now, the
    /// words for the model.
    fn place(&self, tool: &str, input: &Input, on: Option<&str>) -> Result<Box<dyn Lease>, String>;
}
