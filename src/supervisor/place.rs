//! The `place` step: with worker nodes, the node a call will run on is chosen before its
//! permission decision, so that the decision is about that node's files. A relative path is
//! made absolute against the node's workspace (and the tool there is given that same path),
//! what it resolves to through symlinks is asked of the node, and the decision then looks at
//! those paths, with the node's folder as the workspace. The call later runs on that node.

use std::sync::Arc;

use serde_json::Value;

use super::{Call, Pipeline};
use crate::call::{Outcome, Rejection};
use crate::execute::Lease;
use crate::paths::absolutize;
use crate::permission::Located;
use crate::tool::Subject;
use crate::validate::Prepared;

/// The node a call is placed on, and its path as that node resolves it.
pub(super) struct OnNode {
    /// The chosen node, until the call runs there.
    pub lease: Box<dyn Lease>,
    /// The call's path on the node (None: the tool acts on no path).
    pub at: Option<Arc<Located>>,
}

/// Chooses the node for a call whose tool runs on worker nodes, and locates its path there;
/// no node able to take it fails the call (it never falls back to running here).
pub(super) async fn place(
    p: &Pipeline,
    c: &mut Call<'_>,
    prepared: &mut Prepared,
) -> Result<(), Rejection> {
    let Some(placement) = &p.placement else {
        return Ok(());
    };
    if prepared.entry.tool.awaits_io_only() {
        return Ok(());
    }
    let lease = (placement.place(&prepared.entry.name))
        .map_err(|why| Rejection::new(Outcome::Failed, why))?;
    c.node = Some(Box::new(OnNode { lease, at: None }));
    locate(c, prepared).await
}

/// Locates the call's path on its node: again whenever its input changed (an input approved
/// with changes after an ask).
pub(super) async fn locate(c: &mut Call<'_>, prepared: &mut Prepared) -> Result<(), Rejection> {
    let Some(node) = c.node.as_deref_mut() else {
        return Ok(());
    };
    node.at = None;
    let Subject::Path {
        field, default_cwd, ..
    } = prepared.entry.tool.access().subject
    else {
        return Ok(());
    };
    let root = node.lease.root().to_path_buf();
    let path = match prepared.input.get_mut(field) {
        Some(Value::String(raw)) if !raw.is_empty() => {
            let path = absolutize(raw, &root, node.lease.home());
            // The tool on the node acts on the very path the decision is about.
            *raw = path.to_string_lossy().into_owned();
            path
        }
        _ if default_cwd => root.clone(),
        // No path (the schema requires one where the tool needs it): nothing to locate.
        _ => return Ok(()),
    };
    let paths =
        (node.lease.resolve(path).await).map_err(|why| Rejection::new(Outcome::Failed, why))?;
    node.at = Some(Arc::new(Located { root, paths }));
    c.check_cancelled()
}
