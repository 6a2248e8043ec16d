//! The `place` step: with worker nodes, the node a call will run on is chosen before its
//! permission decision, so that the decision is about that node's files. A relative path is
//! made absolute against the node's workspace (and the tool there is given that same path),
//! what it resolves to through symlinks is asked of the node, and the decision then looks at
//! those paths, with the node's folder as the workspace. The call later runs on that node.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::{Call, Pipeline};
use crate::call::{Outcome, Rejection};
use crate::execute::Lease;
use crate::paths::absolutize;
use crate::permission::{Located, paths_named_by};
use crate::tool::Subject;
use crate::validate::Prepared;

/// The node a call is placed on, and its path as that node resolves it.
pub(super) struct OnNode {
    /// The chosen node, until the call runs there.
    pub lease: Box<dyn Lease>,
    /// The call's path on the node (None: the tool acts on no path).
    pub at: Option<Arc<Located>>,
    /// Some of `at` is the node's answer to an earlier call ([`Lease::kept`]): a decision
    /// other than *allow* is made again on fresh answers.
    pub kept: bool,
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
    let on = c.scope.as_ref().and_then(|s| s.node.as_deref());
    let lease = (placement.place(&prepared.entry.name, &prepared.input, on))
        .map_err(|why| Rejection::new(Outcome::Failed, why))?;
    c.node = Some(Box::new(OnNode {
        lease,
        at: None,
        kept: false,
    }));
    locate(c, prepared, Answers::Kept).await
}

/// The most paths of one command that its node is asked to resolve; a command naming more asks.
const MAX_COMMAND_PATHS: usize = 64;

/// Which answers of the node about paths a decision may use.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Answers {
    /// Those it gave earlier calls on this link, where there are any.
    Kept,
    /// Only new ones.
    Fresh,
}

/// Locates the call's paths on its node: again whenever its input changed (an input approved
/// with changes after an ask), and on fresh answers when a decision on kept ones did not allow
/// the call.
pub(super) async fn locate(
    c: &mut Call<'_>,
    prepared: &mut Prepared,
    answers: Answers,
) -> Result<(), Rejection> {
    let Some(node) = c.node.as_deref_mut() else {
        return Ok(());
    };
    node.at = None;
    node.kept = false;
    let lease = &node.lease;
    let mut kept = false;
    let mut kept_answer = |path: &Path| {
        let paths = (answers == Answers::Kept)
            .then(|| lease.kept(path))
            .flatten();
        kept |= paths.is_some();
        paths
    };
    let root = node.lease.root().to_path_buf();
    let home = node.lease.home().to_path_buf();
    let name = node.lease.node().clone();
    // Only a command runs in the sandbox; a path tool's decision never asks it.
    let subject = prepared.entry.tool.access().subject;
    let sandbox = matches!(subject, Subject::Command { .. })
        .then(|| node.lease.sandbox())
        .flatten();
    let at = |named| {
        Some(Arc::new(Located {
            node: name.clone(),
            root: root.clone(),
            home: home.clone(),
            named,
            sandbox: sandbox.clone(),
        }))
    };
    match subject {
        Subject::Path {
            field, default_cwd, ..
        } => {
            let path = match prepared.input.get_mut(field) {
                Some(Value::String(raw)) if !raw.is_empty() => {
                    let path = absolutize(raw, &root, &home);
                    // The tool on the node acts on the very path the decision is about.
                    *raw = path.to_string_lossy().into_owned();
                    path
                }
                _ if default_cwd => root.clone(),
                // No path (the schema requires one where the tool needs it): nothing to locate.
                _ => return Ok(()),
            };
            let paths = match kept_answer(&path) {
                Some(paths) => paths,
                None => (lease.resolve(path.clone()).await)
                    .map_err(|why| Rejection::new(Outcome::Failed, why))?,
            };
            node.at = at(vec![(path, paths)]);
        }
        Subject::Command { field } => {
            // The decision judges the command's paths against the node's folder and what they
            // resolve to there; a path the node cannot resolve is left out, and the command
            // then asks (the decision cannot place it).
            let command = prepared.input.get(field).and_then(Value::as_str);
            let wanted = paths_named_by(command.unwrap_or(""), &root, &home, MAX_COMMAND_PATHS);
            let mut named = Vec::with_capacity(wanted.len());
            let mut unknown = Vec::new();
            for path in wanted {
                match kept_answer(&path) {
                    Some(paths) => named.push((path, paths)),
                    None => unknown.push(path),
                }
            }
            let asks = unknown.iter().map(|path| lease.resolve(path.clone()));
            let answers = futures::future::join_all(asks).await;
            named.extend(
                (unknown.into_iter().zip(answers))
                    .filter_map(|(path, answer)| Some((path, answer.ok()?))),
            );
            node.at = at(named);
        }
        // Judged by name, host or agent type: the same on every node.
        Subject::Name | Subject::Url { .. } | Subject::Subagent { .. } => {}
    }
    node.kept = kept;
    c.check_cancelled()
}
