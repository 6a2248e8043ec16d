//! The Bash sandbox: a boundary the kernel holds for every sandboxed Bash command, its children
//! and background tasks, whatever the command analysis understood.
//!
//! # Layout
//! - `config`: the `sandbox` settings and the path rules of `permissions`, merged
//!   ([`config::SandboxSettings`]).
//! - `exec`: `toolrt sandbox-exec`, the helper that restricts itself (user, mount and network
//!   namespaces, read-only and hidden paths, Landlock, no capabilities) and then runs the command.
//!
//! [`Sandbox`] is built once at start-up: it makes the session's `TMPDIR`, checks with one run
//! of the helper (`--probe`) that the boundary can be set up here, and answers the tools and the
//! permission engine through [`ShellSandbox`]: the same command gets the same answer in both.

pub(crate) mod config;
pub(crate) mod exec;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::permission::BashPattern;
use crate::session::{ShellLaunch, ShellPlan, ShellSandbox};
use crate::settings::{Settings, SettingsError};
use config::SandboxSettings;

/// What `toolrt sandbox-exec` is told to enforce (`--policy`, as JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ExecPolicy {
    /// Folders (or files) writable below: the workspace, the session's TMPDIR, allowWrite.
    pub(crate) write: Vec<PathBuf>,
    /// Paths made read-only, inside what is writable.
    pub(crate) deny_write: Vec<PathBuf>,
    /// Paths hidden behind an unreadable stand-in.
    pub(crate) deny_read: Vec<PathBuf>,
    /// The empty, unreadable file mounted over a denied file.
    pub(crate) stand_in_file: PathBuf,
    /// The empty, unreadable folder mounted over a denied folder.
    pub(crate) stand_in_dir: PathBuf,
}

/// Whether the boundary could be set up, found once at start-up.
#[derive(Debug)]
enum State {
    /// It can: how to start a command inside, and what the probe reported.
    Ready {
        launch: Arc<ShellLaunch>,
        report: String,
    },
    /// It cannot, and why.
    Unavailable(String),
}

/// The session's sandbox (`sandbox.enabled`).
#[derive(Debug)]
pub(crate) struct Sandbox {
    settings: SandboxSettings,
    excluded: Vec<BashPattern>,
    state: State,
    /// The session's TMPDIR and the stand-ins, removed with the sandbox.
    _dir: Option<tempfile::TempDir>,
}

/// What start-up made of the `sandbox` settings.
#[derive(Debug, Default)]
pub(crate) struct Started {
    /// The sandbox, when enabled.
    pub(crate) sandbox: Option<Arc<Sandbox>>,
    /// Settings toolrt parses but does not enforce yet, rules it cannot use.
    pub(crate) warnings: Vec<String>,
}

impl Sandbox {
    /// Reads the settings and, when the sandbox is enabled, prepares and probes it.
    pub(crate) async fn start(
        settings: &Settings,
        cwd: &Path,
        home: &Path,
    ) -> Result<Started, SettingsError> {
        let config = SandboxSettings::load(settings, cwd, home)?;
        if !config.enabled {
            return Ok(Started::default());
        }
        let warnings = config.warnings.clone();
        let (state, dir) = match prepare(&config, cwd) {
            Ok((launch, dir)) => (probe(launch).await, Some(dir)),
            Err(why) => (State::Unavailable(why), None),
        };
        let excluded = config
            .excluded
            .iter()
            .flat_map(|p| {
                [
                    BashPattern::compile(p),
                    BashPattern::compile(&format!("{p} *")),
                ]
            })
            .collect();
        let sandbox = Sandbox {
            settings: config,
            excluded,
            state,
            _dir: dir,
        };
        if let State::Unavailable(why) = &sandbox.state {
            tracing::warn!("{}", sandbox.unavailable_words(why));
        }
        Ok(Started {
            sandbox: Some(Arc::new(sandbox)),
            warnings,
        })
    }

    /// The `sandbox` start-up event's fields: whether it is in force, with which Landlock ABI,
    /// or why not and what Bash does instead.
    pub(crate) fn event(&self) -> Value {
        match &self.state {
            State::Ready { report, .. } => json!({"status": "ready", "enforcement": report}),
            State::Unavailable(why) => json!({
                "status": "unavailable",
                "reason": why,
                "bash": if self.settings.fail_if_unavailable { "refused" } else { "unsandboxed" },
            }),
        }
    }

    fn unavailable_words(&self, why: &str) -> String {
        if self.settings.fail_if_unavailable {
            format!(
                "the Bash sandbox cannot start ({why}); sandbox.failIfUnavailable is set, so \
                 Bash commands are refused"
            )
        } else {
            format!(
                "the Bash sandbox cannot start ({why}); Bash commands run unsandboxed, through \
                 the normal permission flow"
            )
        }
    }

    /// Whether `command` is one of `excludedCommands` (any of its parts matching).
    fn excluded(&self, command: &str) -> bool {
        !self.excluded.is_empty()
            && crate::shell::analyse(command).commands.iter().any(|c| {
                c.deny_views
                    .iter()
                    .any(|v| self.excluded.iter().any(|p| p.matches(v)))
            })
    }

    /// Whether the command stays outside the sandbox by configuration or request.
    fn outside(&self, command: &str, unsandboxed_requested: bool) -> bool {
        (unsandboxed_requested && self.settings.allow_unsandboxed) || self.excluded(command)
    }

    fn policy_words(&self) -> String {
        let list = |v: &[PathBuf]| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        format!(
            "writes only in the workspace, $TMPDIR and allowWrite ({}); denyWrite: {}; \
             denyRead: {}; no network",
            list(&self.settings.allow_write),
            list(&self.settings.deny_write),
            list(&self.settings.deny_read),
        )
    }
}

impl ShellSandbox for Sandbox {
    fn plan(&self, command: &str, unsandboxed_requested: bool) -> ShellPlan {
        if self.outside(command, unsandboxed_requested) {
            return ShellPlan::Direct;
        }
        match &self.state {
            State::Ready { launch, .. } => ShellPlan::Sandboxed(launch.clone()),
            State::Unavailable(why) if self.settings.fail_if_unavailable => {
                ShellPlan::Refused(format!(
                    "Bash is refused: the sandbox is required (sandbox.failIfUnavailable) and \
                     cannot start: {why}"
                ))
            }
            State::Unavailable(_) => ShellPlan::Direct,
        }
    }

    fn auto_allows(&self, command: &str, unsandboxed_requested: bool) -> bool {
        self.settings.auto_allow
            && self.settings.unenforced.is_empty()
            && matches!(
                self.plan(command, unsandboxed_requested),
                ShellPlan::Sandboxed(_)
            )
    }

    fn describe(&self, command: &str, unsandboxed_requested: bool) -> String {
        match self.plan(command, unsandboxed_requested) {
            ShellPlan::Sandboxed(_) => {
                let report = match &self.state {
                    State::Ready { report, .. } => report.as_str(),
                    State::Unavailable(_) => "",
                };
                format!("runs sandboxed ({report}): {}", self.policy_words())
            }
            ShellPlan::Refused(why) => why,
            ShellPlan::Direct if self.excluded(command) => {
                "runs unsandboxed: it is in sandbox.excludedCommands".into()
            }
            ShellPlan::Direct if unsandboxed_requested => {
                "runs unsandboxed: the call sets dangerouslyDisableSandbox".into()
            }
            ShellPlan::Direct => match &self.state {
                State::Unavailable(why) => {
                    format!("runs unsandboxed: the sandbox cannot start ({why})")
                }
                State::Ready { .. } => "runs unsandboxed".into(),
            },
        }
    }
}

/// Makes the session's sandbox folder (TMPDIR and the stand-ins) and the helper's command line.
fn prepare(
    config: &SandboxSettings,
    cwd: &Path,
) -> Result<(ShellLaunch, tempfile::TempDir), String> {
    use std::os::unix::fs::PermissionsExt;
    let program = helper()?;
    let dir = tempfile::Builder::new()
        .prefix("toolrt-sandbox-")
        .tempdir()
        .map_err(|e| format!("cannot create the sandbox's folder: {e}"))?;
    let tmp = dir.path().join("tmp");
    let stand_in_file = dir.path().join("denied");
    let stand_in_dir = dir.path().join("denied-dir");
    let made = std::fs::create_dir(&tmp)
        .and_then(|()| std::fs::write(&stand_in_file, b""))
        .and_then(|()| std::fs::create_dir(&stand_in_dir))
        .and_then(|()| {
            let none = std::fs::Permissions::from_mode(0o000);
            std::fs::set_permissions(&stand_in_file, none.clone())?;
            std::fs::set_permissions(&stand_in_dir, none)
        });
    made.map_err(|e| format!("cannot prepare the sandbox's folder: {e}"))?;
    let mut write = vec![cwd.to_path_buf(), tmp.clone()];
    write.extend(config.allow_write.iter().cloned());
    let policy = ExecPolicy {
        write,
        deny_write: config.deny_write.clone(),
        deny_read: config.deny_read.clone(),
        stand_in_file,
        stand_in_dir,
    };
    let text = serde_json::to_string(&policy).map_err(|e| e.to_string())?;
    let launch = ShellLaunch {
        program,
        args: vec![
            "sandbox-exec".into(),
            "--policy".into(),
            OsString::from(text),
        ],
        env: vec![("TMPDIR".into(), tmp.to_string_lossy().into_owned())],
    };
    Ok((launch, dir))
}

/// The helper: `TOOLRT_SANDBOX_EXEC`, else this program when it is toolrt (a library embedder
/// names the toolrt binary with the variable).
fn helper() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("TOOLRT_SANDBOX_EXEC").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the toolrt binary: {e}"))?;
    let is_toolrt = exe
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("toolrt"));
    if is_toolrt {
        Ok(exe)
    } else {
        Err(format!(
            "{} is not the toolrt binary, which runs sandboxed commands; set TOOLRT_SANDBOX_EXEC \
             to its path",
            exe.display()
        ))
    }
}

/// Runs the helper once with `--probe`: it sets up the whole boundary, then reports instead of
/// running a command.
async fn probe(launch: ShellLaunch) -> State {
    let mut cmd = tokio::process::Command::new(&launch.program);
    cmd.args(&launch.args)
        .arg("--probe")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let spawned = crate::process::spawn(cmd, &[], launch.env.clone(), "sandbox-exec --probe").await;
    let (child, mut group) = match spawned {
        Ok(spawned) => spawned,
        Err(e) => {
            return State::Unavailable(format!("cannot start {}: {e}", launch.program.display()));
        }
    };
    let out =
        tokio::time::timeout(std::time::Duration::from_secs(10), child.wait_with_output()).await;
    group.kill();
    match out {
        Ok(Ok(out)) if out.status.success() => State::Ready {
            launch: Arc::new(launch),
            report: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        },
        Ok(Ok(out)) => {
            let err = String::from_utf8_lossy(&out.stderr);
            let err = err.trim().trim_start_matches("toolrt sandbox-exec: ");
            State::Unavailable(if err.is_empty() {
                format!("the probe exited with {}", out.status)
            } else {
                err.to_string()
            })
        }
        Ok(Err(e)) => State::Unavailable(format!("the probe failed: {e}")),
        Err(_) => State::Unavailable("the probe did not finish within 10 s".into()),
    }
}
