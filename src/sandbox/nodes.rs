//! The sandbox across worker nodes: the settings a coordinator sends, the sandbox a worker sets
//! up from them, what it reports back, and how the coordinator's permission engine sees a
//! command placed on that worker ([`OnNode`]), with the same answer the worker's sandbox gives.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::{Runs, Sandbox, State};
use crate::session::{ShellPlan, ShellSandbox};
use crate::settings::Settings;

impl Sandbox {
    /// The settings a worker node sets the same sandbox up from (each settings file's
    /// `sandbox` and `permissions`, with its path: paths are anchored there as here).
    pub(crate) fn for_workers(&self) -> Value {
        self.sources.clone()
    }

    /// The sandbox a worker node sets up for a coordinator's commands, from the coordinator's
    /// [`Sandbox::for_workers`]; paths relative to the workspace or `~` are the node's. None
    /// when those settings do not enable it.
    pub(crate) async fn for_coordinator(
        sources: &Value,
        cwd: &Path,
        home: &Path,
    ) -> Result<Option<Arc<Sandbox>>, String> {
        let files: Vec<SourceFile> = serde_json::from_value(sources.clone())
            .map_err(|e| format!("unreadable sandbox settings from the coordinator: {e}"))?;
        let mut settings = Settings::default();
        for file in files {
            let mut root = serde_json::Map::new();
            for (key, value) in [("sandbox", file.sandbox), ("permissions", file.permissions)] {
                if !value.is_null() {
                    root.insert(key.into(), value);
                }
            }
            settings.files.push(crate::settings::SettingsFile {
                path: file.path,
                root,
            });
        }
        let started = Self::start(&settings, cwd, home)
            .await
            .map_err(|e| e.to_string())?;
        Ok(started.sandbox)
    }

    /// What this sandbox is, for the coordinator whose settings it was made from.
    pub(crate) fn node_report(&self) -> NodeReport {
        NodeReport {
            ready: match &self.state {
                State::Ready { report, .. } => Ok(report.clone()),
                State::Unavailable(why) => Err(why.clone()),
            },
            policy: self.policy_words(),
            refuses_all: false,
        }
    }

    /// The `node` event's `sandbox` fields for a worker node that set the sandbox up as
    /// `report` says (None: it did not), in the shape of this node's `sandbox` event.
    pub(crate) fn node_event(&self, report: Option<&NodeReport>) -> Value {
        match report.map(|r| &r.ready) {
            Some(Ok(enforcement)) => json!({"status": "ready", "enforcement": enforcement}),
            Some(Err(why)) if report.is_some_and(|r| r.refuses_all) => {
                json!({"status": "unavailable", "reason": why, "bash": "refused"})
            }
            Some(Err(why)) => self.unavailable_event(why),
            None => self.unavailable_event("the worker node did not set the sandbox up"),
        }
    }

    /// This sandbox's settings as they hold on worker node `node`, which set the sandbox up
    /// as `report` says (None: it did not), for deciding about commands placed there.
    pub(crate) fn on_node(
        self: &Arc<Self>,
        node: &str,
        report: Option<NodeReport>,
    ) -> Arc<dyn ShellSandbox> {
        let report = report.unwrap_or_else(|| NodeReport {
            ready: Err(format!("worker node {node} did not set the sandbox up")),
            policy: String::new(),
            refuses_all: false,
        });
        Arc::new(OnNode {
            here: self.clone(),
            node: node.to_string(),
            report,
        })
    }
}

/// A sandbox that could not be set up on a worker node for a coordinator that has one: every
/// command is refused there, with why (running one unsandboxed could run what was allowed for
/// being sandboxed).
#[derive(Debug)]
pub(crate) struct Refusing(pub(crate) String);

impl Refusing {
    fn words(&self) -> String {
        format!(
            "Bash is refused: this worker node could not set up the coordinator's sandbox: {}",
            self.0
        )
    }
}

impl ShellSandbox for Refusing {
    fn plan(&self, _: &str, _: bool) -> ShellPlan {
        ShellPlan::Refused(self.words())
    }

    fn auto_allows(&self, _: &str, _: bool) -> bool {
        false
    }

    fn describe(&self, _: &str, _: bool) -> String {
        self.words()
    }
}

/// One settings file's part in [`Sandbox::for_workers`].
#[derive(serde::Deserialize)]
struct SourceFile {
    path: PathBuf,
    #[serde(default)]
    sandbox: Value,
    #[serde(default)]
    permissions: Value,
}

/// What a worker node made of a coordinator's sandbox settings.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct NodeReport {
    /// What is enforced there, or why the sandbox cannot start there.
    pub(crate) ready: Result<String, String>,
    /// Its policy in words, with the node's paths.
    pub(crate) policy: String,
    /// It could not take the settings at all ([`Refusing`]): every command is refused there.
    #[serde(default)]
    pub(crate) refuses_all: bool,
}

impl NodeReport {
    /// A worker's report that it refuses every command of the coordinator, and why.
    pub(crate) fn refusing(why: String) -> Self {
        Self {
            ready: Err(why),
            policy: String::new(),
            refuses_all: true,
        }
    }
}

/// The coordinator's sandbox settings as they hold for commands placed on one worker node:
/// what the permission engine asks about such a command. The node runs it in a sandbox of its
/// own made from the same settings, so both come to the same answer.
#[derive(Debug)]
struct OnNode {
    here: Arc<Sandbox>,
    node: String,
    report: NodeReport,
}

impl OnNode {
    /// The worker refuses every command: it could not take the settings.
    fn refusing(&self) -> Option<Refusing> {
        match &self.report.ready {
            Err(why) if self.report.refuses_all => Some(Refusing(why.clone())),
            _ => None,
        }
    }
}

impl ShellSandbox for OnNode {
    fn plan(&self, command: &str, unsandboxed_requested: bool) -> ShellPlan {
        if let Some(refusing) = self.refusing() {
            return ShellPlan::Refused(refusing.words());
        }
        let ready = self.report.ready.as_ref().map_err(String::as_str);
        match self.here.runs(ready, command, unsandboxed_requested) {
            // Never started here: only the node can enter its sandbox.
            Runs::Inside(_) => ShellPlan::Refused(format!(
                "this command runs in the sandbox of worker node {}, not on this node",
                self.node
            )),
            Runs::Outside => ShellPlan::Direct,
            Runs::Refused(why) => ShellPlan::Refused(why),
        }
    }

    fn auto_allows(&self, command: &str, unsandboxed_requested: bool) -> bool {
        let ready = self
            .report
            .ready
            .as_ref()
            .map(|_| ())
            .map_err(String::as_str);
        (self.here).auto_allows_where(ready, command, unsandboxed_requested)
    }

    fn describe(&self, command: &str, unsandboxed_requested: bool) -> String {
        if let Some(refusing) = self.refusing() {
            return format!("on worker node {}: {}", self.node, refusing.words());
        }
        let ready = self.report.ready.as_ref().map_err(String::as_str);
        let how = match self.here.runs(ready, command, unsandboxed_requested) {
            Runs::Inside(report) => format!("runs sandboxed ({report}): {}", self.report.policy),
            Runs::Refused(why) => why,
            Runs::Outside if self.here.excluded(command) => {
                "runs unsandboxed: it is in sandbox.excludedCommands".into()
            }
            Runs::Outside if unsandboxed_requested => {
                "runs unsandboxed: the call sets dangerouslyDisableSandbox".into()
            }
            Runs::Outside => match &self.report.ready {
                Err(why) => format!("runs unsandboxed: the sandbox cannot start there ({why})"),
                Ok(_) => "runs unsandboxed".into(),
            },
        };
        format!("on worker node {}: {how}", self.node)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Asker;
    use super::super::config::SandboxSettings;
    use super::*;
    use crate::permission::BashPattern;

    /// A sandbox of `settings` that cannot start on this node (it does not matter here).
    fn here(settings: SandboxSettings) -> Arc<Sandbox> {
        let excluded = (settings.excluded.iter())
            .map(|p| BashPattern::compile(p))
            .collect();
        Arc::new(Sandbox {
            settings,
            excluded,
            state: State::Unavailable("not here".into()),
            sources: Value::Null,
            asker: Asker::default(),
            _dir: None,
        })
    }

    fn report(ready: Result<&str, &str>) -> Option<NodeReport> {
        Some(NodeReport {
            ready: ready.map(str::to_string).map_err(str::to_string),
            policy: "writes only in /n/ws".into(),
            refuses_all: false,
        })
    }

    #[test]
    fn a_node_whose_sandbox_is_ready_auto_allows_what_runs_in_it_and_only_that() {
        let settings = SandboxSettings {
            excluded: vec!["docker".into()],
            ..SandboxSettings::new()
        };
        let node = here(settings).on_node("w1", report(Ok("Landlock ABI 5")));
        assert!(node.auto_allows("make", false));
        // Never started on this node: only the worker can enter its sandbox.
        assert!(matches!(node.plan("make", false), ShellPlan::Refused(_)));
        assert_eq!(
            node.describe("make", false),
            "on worker node w1: runs sandboxed (Landlock ABI 5): writes only in /n/ws"
        );
        for (command, unsandboxed) in [("docker", false), ("make", true)] {
            assert!(!node.auto_allows(command, unsandboxed), "{command}");
            assert!(matches!(node.plan(command, unsandboxed), ShellPlan::Direct));
        }
        // A deny rule the kernel cannot hold: nothing is allowed for running sandboxed.
        let unenforced = SandboxSettings {
            unenforced: vec!["Read(*.pem)".into()],
            ..SandboxSettings::new()
        };
        let node = here(unenforced).on_node("w1", report(Ok("Landlock ABI 5")));
        assert!(!node.auto_allows("make", false));
    }

    #[test]
    fn a_node_without_the_sandbox_runs_commands_unsandboxed_or_refuses_them_as_configured() {
        for report in [report(Err("no user namespaces")), None] {
            let node = here(SandboxSettings::new()).on_node("w1", report.clone());
            assert!(!node.auto_allows("make", false));
            assert!(matches!(node.plan("make", false), ShellPlan::Direct));
            let required = SandboxSettings {
                fail_if_unavailable: true,
                ..SandboxSettings::new()
            };
            let node = here(required).on_node("w1", report);
            assert!(!node.auto_allows("make", false));
            assert!(matches!(node.plan("make", false), ShellPlan::Refused(_)));
            assert!(
                node.describe("make", false)
                    .starts_with("on worker node w1: Bash is refused")
            );
        }
        let node = here(SandboxSettings::new()).on_node(
            "w1",
            Some(NodeReport::refusing("the settings were unreadable".into())),
        );
        assert!(!node.auto_allows("docker", true));
        assert!(
            matches!(node.plan("docker", true), ShellPlan::Refused(w) if w.contains("unreadable"))
        );
        let event =
            here(SandboxSettings::new()).node_event(Some(&NodeReport::refusing("x".into())));
        assert_eq!(event["bash"], "refused", "{event}");
        let refusing = Refusing("the settings were unreadable".into());
        assert!(!refusing.auto_allows("make", true));
        assert!(
            matches!(refusing.plan("docker", true), ShellPlan::Refused(w) if w.contains("unreadable"))
        );
    }
}
