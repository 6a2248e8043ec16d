//! The Bash sandboxes a worker sets up for coordinators whose settings have one: one per
//! coordinator, made at its hello from its settings, in a session of its own that the
//! coordinator's calls run in; its network asks go back through the coordinator's relay.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use ractor::ActorRef;

use super::wire::{NetworkNote, RelayMsg, Wire, progress_group};
use crate::session::Session;

/// More coordinators than this with a sandbox at once and the next one's commands are refused
/// (each sandbox keeps a namespace holder process and a proxy).
const SANDBOXES_KEPT: usize = 64;

/// The sessions with a Bash sandbox that the worker set up for coordinators that have one,
/// by coordinator (with the settings each was made from).
#[derive(Default)]
pub(super) struct Sandboxed(Mutex<HashMap<String, SandboxedSession>>);

/// A coordinator's sandboxed session: the settings it was made from, and what it is.
struct SandboxedSession {
    settings: serde_json::Value,
    session: Arc<Session>,
    report: crate::sandbox::NodeReport,
}

impl Sandboxed {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, SandboxedSession>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn session(&self, coordinator: &str) -> Option<Arc<Session>> {
        self.table().get(coordinator).map(|s| s.session.clone())
    }

    /// Sets up `coordinator`'s sandbox from its `settings` (kept if they are the ones it has),
    /// in a session of its own made from `base`; what it is, for the hello's reply.
    pub(super) async fn set_up(
        &self,
        coordinator: &str,
        settings: serde_json::Value,
        base: &Session,
    ) -> crate::sandbox::NodeReport {
        {
            let table = self.table();
            if let Some(same) = table.get(coordinator).filter(|k| k.settings == settings) {
                return same.report.clone();
            }
            if table.len() >= SANDBOXES_KEPT && !table.contains_key(coordinator) {
                // Not kept: its calls find no sandbox here and are refused.
                return crate::sandbox::NodeReport::refusing(format!(
                    "this worker node keeps sandboxes for {SANDBOXES_KEPT} coordinators already"
                ));
            }
        }
        let home = crate::paths::home_dir();
        let made = crate::sandbox::Sandbox::for_coordinator(&settings, &base.cwd, &home).await;
        let (sandbox, report): (Arc<dyn crate::session::ShellSandbox>, _) = match made {
            Ok(Some(sandbox)) => {
                sandbox.set_network_asker(ask_through_relay(coordinator));
                let report = sandbox.node_report();
                (sandbox, report)
            }
            Ok(None) => refusing("the coordinator's settings do not enable it".into()),
            Err(why) => refusing(why),
        };
        let session = Arc::new(Session {
            sandbox: Some(sandbox),
            ..base.clone()
        });
        let kept = SandboxedSession {
            settings,
            session,
            report: report.clone(),
        };
        self.table().insert(coordinator.to_string(), kept);
        report
    }

    /// Forgets `coordinator`'s sandbox; it ends when the last call using it does.
    pub(super) fn detach(&self, coordinator: &str) {
        self.table().remove(coordinator);
    }
}

/// A sandbox that refuses every command, and the report saying why.
fn refusing(
    why: String,
) -> (
    Arc<dyn crate::session::ShellSandbox>,
    crate::sandbox::NodeReport,
) {
    let report = crate::sandbox::NodeReport::refusing(why.clone());
    (Arc::new(crate::sandbox::Refusing(why)), report)
}

/// How the sandbox of `coordinator`'s commands asks about a host its settings neither allow
/// nor deny: through the coordinator's relay, which asks as for a command run there (no relay,
/// a lost link or the call's end: refused).
fn ask_through_relay(coordinator: &str) -> crate::sandbox::proxy::NetworkAsker {
    let group = progress_group(coordinator);
    Arc::new(move |ask| {
        let relay =
            (ractor::pg::get_members(&group).into_iter().next()).map(ActorRef::<RelayMsg>::from);
        Box::pin(async move {
            let Some(relay) = relay else {
                return false;
            };
            let note = NetworkNote {
                id: ask.tool_use_id,
                host: ask.host,
                port: ask.port,
            };
            let asked = relay.call(|port| RelayMsg::AskNetwork(Wire::of(note), port), None);
            tokio::select! {
                answer = asked => matches!(answer, Ok(ractor::rpc::CallResult::Success(true))),
                _ = ask.cancel.cancelled() => false,
            }
        })
    })
}
