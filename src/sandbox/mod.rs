//! The Bash sandbox: a boundary the kernel holds for every sandboxed Bash command, its children
//! and background tasks, whatever the command analysis understood.
//!
//! # Layout
//! - `config`: the `sandbox` settings and the path rules of `permissions`, merged
//!   ([`config::SandboxSettings`]).
//! - `exec`: `toolrt sandbox-exec`, the helper that restricts itself (user, mount and network
//!   namespaces, read-only and hidden paths, Landlock, no capabilities, no Unix sockets) and
//!   then runs the command; `seccomp`, its filter that refuses Unix sockets.
//!
//! [`Sandbox`] is built once at start-up: it makes the session's `TMPDIR`, checks with one run
//! of the helper (`--probe`) that the boundary can be set up here, and answers the tools and the
//! permission engine through [`ShellSandbox`]: the same command gets the same answer in both.

pub(crate) mod config;
pub(crate) mod exec;
pub(crate) mod holder;
pub(crate) mod mounts;
mod nodes;
pub(crate) mod policy;
pub(crate) mod proxy;
pub(crate) mod seccomp;

pub(crate) use nodes::{NodeReport, Refusing};

pub(crate) use policy::{ExecPolicy, Join};

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::permission::BashPattern;
use crate::session::{SandboxTicket, SandboxedCall, ShellLaunch, ShellPlan, ShellSandbox};
use crate::settings::{Settings, SettingsError};
use config::SandboxSettings;

/// `toolrt sandbox-exec`: the helper's work done by the toolrt binary itself, for where
/// `toolrt-sandbox-exec` is not installed beside it. Restricts this process as `policy` (JSON)
/// says, then execs `command`; with `probe`, prints what is enforced instead; with `hold`, is
/// the session's namespace holder. Must be called before any thread exists.
pub fn sandbox_exec(
    policy: &str,
    probe: bool,
    hold: bool,
    command: &[OsString],
) -> std::process::ExitCode {
    let mode = match (hold, probe) {
        (true, _) => policy::Mode::Hold,
        (false, true) => policy::Mode::Probe,
        (false, false) => policy::Mode::Exec,
    };
    exec::run(policy, mode, command)
}

/// Whether the boundary could be set up, found once at start-up.
#[derive(Debug)]
enum State {
    /// It can: how to start a command inside, and what the probe reported.
    Ready {
        launch: Arc<ShellLaunch>,
        report: String,
        running: Box<Running>,
    },
    /// It cannot, and why.
    Unavailable(String),
}

/// What a ready sandbox keeps running: the namespace holder (killed with its group when this
/// is dropped; its stdin closes too) and the proxy.
#[derive(Debug)]
struct Running {
    proxy: Arc<proxy::Proxy>,
    serving: tokio::task::JoinHandle<()>,
    _holder: Option<(tokio::process::Child, crate::process::Group)>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

/// The session's sandbox (`sandbox.enabled`).
#[derive(Debug)]
pub(crate) struct Sandbox {
    settings: SandboxSettings,
    excluded: Vec<BashPattern>,
    state: State,
    /// The settings it was made from (each file's `sandbox` and `permissions`), for worker
    /// nodes, which set up the same sandbox for this session's commands they run.
    sources: Value,
    /// Who answers `Network(host)` asks, once attached.
    asker: Asker,
    /// The session's TMPDIR and the stand-ins, removed with the sandbox.
    _dir: Option<tempfile::TempDir>,
}

/// Who answers a sandbox's `Network(host)` asks, once attached.
#[derive(Default)]
struct Asker(std::sync::OnceLock<proxy::NetworkAsker>);

impl std::fmt::Debug for Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "Asker(set)"
        } else {
            "Asker(none)"
        })
    }
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
        let sources = Value::Array(
            (settings.files.iter())
                .filter_map(|file| {
                    let pick = |key: &str| file.root.get(key).cloned().unwrap_or(Value::Null);
                    let (sandbox, permissions) = (pick("sandbox"), pick("permissions"));
                    (!sandbox.is_null() || !permissions.is_null()).then(|| {
                        json!({"path": file.path, "sandbox": sandbox, "permissions": permissions})
                    })
                })
                .collect(),
        );
        let warnings = config.warnings.clone();
        let (state, dir) = match prepare(&config, cwd) {
            Ok((policy, helper, dir)) => (
                boundary(&config, policy, helper, dir.path()).await,
                Some(dir),
            ),
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
            sources,
            asker: Asker::default(),
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

    /// Attaches who answers the proxy's `Network(host)` asks (the supervisor's ask path, or
    /// on a worker node its coordinator's), for this node's proxy and for asks from the
    /// proxies of worker nodes ([`Sandbox::ask_network`]).
    pub(crate) fn set_network_asker(&self, asker: proxy::NetworkAsker) {
        if let State::Ready { running, .. } = &self.state {
            running.proxy.set_asker(asker.clone());
        }
        let _ = self.asker.0.set(asker);
    }

    /// Asks whoever answers this session's `Network(host)` asks about a host that a command
    /// on a worker node connects to; nobody yet is a refusal.
    pub(crate) fn ask_network(
        &self,
        ask: proxy::NetworkAsk,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>> {
        match self.asker.0.get() {
            Some(asker) => asker(ask),
            None => Box::pin(async { false }),
        }
    }

    /// The `sandbox` start-up event's fields: whether it is in force, with which Landlock ABI,
    /// or why not and what Bash does instead.
    pub(crate) fn event(&self) -> Value {
        match &self.state {
            State::Ready { report, .. } => json!({"status": "ready", "enforcement": report}),
            State::Unavailable(why) => self.unavailable_event(why),
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

    /// How `command` runs where the sandbox is `ready` (with what that node needs to enter
    /// it) or cannot start (why): one answer for this node's commands and for a worker's.
    fn runs<T>(
        &self,
        ready: Result<T, &str>,
        command: &str,
        unsandboxed_requested: bool,
    ) -> Runs<T> {
        if self.outside(command, unsandboxed_requested) {
            return Runs::Outside;
        }
        match ready {
            Ok(enter) => Runs::Inside(enter),
            Err(why) if self.settings.fail_if_unavailable => Runs::Refused(format!(
                "Bash is refused: the sandbox is required (sandbox.failIfUnavailable) and \
                 cannot start: {why}"
            )),
            Err(_) => Runs::Outside,
        }
    }

    /// Whether a command no rule allows is allowed for running sandboxed where the sandbox
    /// is `ready` or not.
    fn auto_allows_where(
        &self,
        ready: Result<(), &str>,
        command: &str,
        unsandboxed_requested: bool,
    ) -> bool {
        self.settings.auto_allow
            && self.settings.unenforced.is_empty()
            && matches!(
                self.runs(ready, command, unsandboxed_requested),
                Runs::Inside(())
            )
    }

    fn unavailable_event(&self, why: &str) -> Value {
        json!({
            "status": "unavailable",
            "reason": why,
            "bash": if self.settings.fail_if_unavailable { "refused" } else { "unsandboxed" },
        })
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
        let domains = |v: &[String]| {
            if v.is_empty() {
                "none".into()
            } else {
                v.join(", ")
            }
        };
        format!(
            "writes only in the workspace, $TMPDIR and allowWrite ({}); denyWrite: {}; \
             denyRead: {}; network only through toolrt's proxy: allowedDomains: {}; \
             deniedDomains: {}; other hosts asked about",
            list(&self.settings.allow_write),
            list(&self.settings.deny_write),
            list(&self.settings.deny_read),
            domains(&self.settings.allowed_domains),
            domains(&self.settings.denied_domains),
        )
    }
}

impl ShellSandbox for Sandbox {
    fn plan(&self, command: &str, unsandboxed_requested: bool) -> ShellPlan {
        let ready = match &self.state {
            State::Ready { launch, .. } => Ok(launch),
            State::Unavailable(why) => Err(why.as_str()),
        };
        match self.runs(ready, command, unsandboxed_requested) {
            Runs::Inside(launch) => ShellPlan::Sandboxed(launch.clone()),
            Runs::Outside => ShellPlan::Direct,
            Runs::Refused(why) => ShellPlan::Refused(why),
        }
    }

    fn auto_allows(&self, command: &str, unsandboxed_requested: bool) -> bool {
        let ready = match &self.state {
            State::Ready { .. } => Ok(()),
            State::Unavailable(why) => Err(why.as_str()),
        };
        self.auto_allows_where(ready, command, unsandboxed_requested)
    }

    fn enter(&self, launch: Arc<ShellLaunch>, tool_use_id: &str) -> SandboxedCall {
        let State::Ready { running, .. } = &self.state else {
            return SandboxedCall {
                launch,
                ticket: None,
            };
        };
        let proxy = running.proxy.clone();
        let (name, credentials, state) = proxy.register(tool_use_id);
        let mut own = (*launch).clone();
        own.env
            .retain(|(k, _)| !k.to_ascii_lowercase().ends_with("_proxy"));
        own.env.extend(proxy_env(Some(&credentials)));
        SandboxedCall {
            launch: Arc::new(own),
            ticket: Some(Box::new(Ticket { proxy, name, state })),
        }
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

/// How a command runs, whatever node it runs on.
enum Runs<T> {
    /// In the sandbox, entered with `T`.
    Inside(T),
    /// Without it (excluded, asked to, or no sandbox and none required).
    Outside,
    /// Not at all, and why.
    Refused(String),
}

/// One Bash call in the sandbox as the proxy knows it; dropping it ends the call there (an
/// ask still waiting is refused).
struct Ticket {
    proxy: Arc<proxy::Proxy>,
    name: String,
    state: Arc<proxy::CallState>,
}

impl SandboxTicket for Ticket {
    fn refusals(&self) -> Vec<String> {
        self.state.refusals()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.proxy.unregister(&self.name);
    }
}

/// The proxy variables a sandboxed command gets; `user` (`name:secret`) names its call to the
/// proxy.
fn proxy_env(user: Option<&str>) -> Vec<(String, String)> {
    let port = policy::PROXY_PORT;
    let url = match user {
        Some(user) => format!("http://{user}@127.0.0.1:{port}"),
        None => format!("http://127.0.0.1:{port}"),
    };
    let mut env: Vec<(String, String)> = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ]
    .iter()
    .map(|k| (k.to_string(), url.clone()))
    .collect();
    for k in ["NO_PROXY", "no_proxy"] {
        env.push((k.to_string(), "localhost,127.0.0.1,::1".to_string()));
    }
    env
}

/// The start of the name of a sandbox's folder in the system's temporary folder.
const SANDBOX_DIR_PREFIX: &str = "toolrt-sandbox-";

/// Makes the session's sandbox folder (TMPDIR and the stand-ins); returns the policy without
/// its holder yet, and the helper.
fn prepare(
    config: &SandboxSettings,
    cwd: &Path,
) -> Result<(ExecPolicy, Helper, tempfile::TempDir), String> {
    use std::os::unix::fs::PermissionsExt;
    let helper = Helper::find()?;
    // Named after this process, so that a toolrt started later deletes the folder of one that
    // was killed outright (its holder and commands die with it; the folder stays).
    let tmp = std::env::temp_dir();
    crate::paths::sweep_dead_owners(&tmp, SANDBOX_DIR_PREFIX);
    let dir = tempfile::Builder::new()
        .prefix(&format!("{SANDBOX_DIR_PREFIX}{}-", std::process::id()))
        .tempdir_in(&tmp)
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
    let mut write = vec![cwd.to_path_buf(), tmp];
    write.extend(config.allow_write.iter().cloned());
    // The session's TMPDIR goes with the session: nothing later loads from it.
    let roots: Vec<&Path> = std::iter::once(cwd)
        .chain(config.allow_write.iter().map(|p| p.as_path()))
        .collect();
    let pinned = pin(cwd, &roots)?;
    let policy = ExecPolicy {
        write,
        pinned,
        deny_write: config.deny_write.clone(),
        deny_read: config.deny_read.clone(),
        allow_read: config.allow_read.clone(),
        stand_in_file,
        stand_in_dir,
        proxy_socket: Some(dir.path().join("proxy.sock")),
        join: None,
        allow_all_unix_sockets: config.allow_all_unix_sockets,
        allow_local_binding: config.allow_local_binding,
    };
    Ok((policy, helper, dir))
}

/// Folders and files that configure what later runs outside the sandbox (the protected names
/// of docs/SEMANTICS.md §3.6, and direnv's `.envrc`): read-only inside it, in every writable
/// root, so a sandboxed command cannot plant code for a later unsandboxed run.
const PINNED: &[&str] = &[
    ".git",
    ".claude",
    ".mcp.json",
    ".vscode",
    ".idea",
    ".husky",
    ".cargo",
    ".devcontainer",
    ".gitconfig",
    ".gitmodules",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".profile",
    ".npmrc",
    ".envrc",
];

/// Names that must exist to be held read-only (a mount needs something to cover), made in the
/// workspace when absent: an empty `.claude` folder and a `.mcp.json` with no servers.
const PLACEHOLDERS: &[(&str, Option<&str>)] = &[
    (".claude", None),
    (".mcp.json", Some("{\"mcpServers\": {}}\n")),
];

/// The [`PINNED`] names of every writable root folder, after making the workspace's
/// [`PLACEHOLDERS`]. A symbolic link at `.git`, `.claude` or `.mcp.json` is refused: the mount
/// would hold its target, and the link itself could be replaced.
fn pin(cwd: &Path, roots: &[&Path]) -> Result<Vec<PathBuf>, String> {
    for (name, text) in PLACEHOLDERS {
        let path = cwd.join(name);
        if path.symlink_metadata().is_ok() {
            continue;
        }
        let made = match text {
            None => std::fs::create_dir(&path),
            Some(text) => std::fs::write(&path, text),
        };
        made.map_err(|e| format!("cannot create {} to hold it read-only: {e}", path.display()))?;
    }
    let mut pinned = Vec::new();
    for root in roots.iter().filter(|r| r.is_dir()) {
        for name in PINNED {
            let path = root.join(name);
            let link = path.symlink_metadata().is_ok_and(|m| m.is_symlink());
            if link && [".git", ".claude", ".mcp.json"].contains(name) {
                return Err(format!(
                    "{} is a symbolic link, which the sandbox cannot hold read-only",
                    path.display()
                ));
            }
            pinned.push(path);
        }
    }
    Ok(pinned)
}

/// Starts the proxy and the namespace holder, then probes a command's whole set-up once.
async fn boundary(
    config: &SandboxSettings,
    mut policy: ExecPolicy,
    helper: Helper,
    dir: &Path,
) -> State {
    let proxy = Arc::new(proxy::Proxy::new(
        &config.allowed_domains,
        &config.denied_domains,
    ));
    let socket = policy.proxy_socket.clone().unwrap_or_default();
    let listener = match proxy::listen(&socket) {
        Ok(listener) => listener,
        Err(e) => {
            return State::Unavailable(format!("cannot listen on {}: {e}", socket.display()));
        }
    };
    let mut running = Running {
        serving: tokio::spawn(proxy.clone().serve(listener)),
        proxy,
        _holder: None,
    };
    let (holder, join) = match start_holder(&helper, &policy).await {
        Ok(started) => started,
        Err(why) => return State::Unavailable(why),
    };
    running._holder = Some(holder);
    policy.join = Some(join);
    let text = match serde_json::to_string(&policy) {
        Ok(text) => text,
        Err(e) => return State::Unavailable(e.to_string()),
    };
    let mut env = vec![(
        "TMPDIR".to_string(),
        dir.join("tmp").to_string_lossy().into_owned(),
    )];
    env.extend(proxy_env(None));
    let mut args = helper.prefix.clone();
    args.extend(["--policy".into(), OsString::from(text)]);
    let launch = ShellLaunch {
        program: helper.program,
        args,
        env,
    };
    probe(launch, running).await
}

/// Starts `sandbox-exec --hold` and waits for its `ready`; returns it (in its own process
/// group) and the namespaces commands join.
async fn start_holder(
    helper: &Helper,
    policy: &ExecPolicy,
) -> Result<((tokio::process::Child, crate::process::Group), Join), String> {
    use std::os::unix::fs::MetadataExt;
    use tokio::io::AsyncBufReadExt;
    let text = serde_json::to_string(policy).map_err(|e| e.to_string())?;
    let program = &helper.program;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(&helper.prefix)
        .args(["--hold", "--policy", &text])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let no_env: [(&str, &str); 0] = [];
    let (mut child, group) = crate::process::spawn(cmd, &[], no_env, "sandbox holder")
        .await
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    let stdout = child.stdout.take().ok_or("the holder has no stdout")?;
    let mut line = String::new();
    let mut reader = tokio::io::BufReader::new(stdout);
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        reader.read_line(&mut line),
    )
    .await;
    let line = line.trim();
    match read {
        Ok(Ok(_)) if line == "ready" => {}
        Ok(_) if !line.is_empty() => {
            return Err(line.trim_start_matches("toolrt sandbox-exec: ").to_string());
        }
        Ok(_) => return Err("the namespace holder exited without a word".into()),
        Err(_) => return Err("the namespace holder was not ready within 10 s".into()),
    }
    let pid = child.id().ok_or("the namespace holder exited")?;
    let inode = |kind: &str| {
        std::fs::metadata(format!("/proc/{pid}/ns/{kind}"))
            .map(|m| m.ino())
            .map_err(|e| format!("cannot read the holder's {kind} namespace: {e}"))
    };
    let join = Join {
        pid,
        user: inode("user")?,
        mnt: inode("mnt")?,
        net: inode("net")?,
    };
    Ok(((child, group), join))
}

/// The small binary that sets each sandboxed command up, installed beside toolrt.
const HELPER_NAME: &str = "toolrt-sandbox-exec";

/// The program that sets a sandboxed command up, and the arguments before `--policy`.
#[derive(Debug)]
struct Helper {
    program: PathBuf,
    prefix: Vec<OsString>,
}

impl Helper {
    /// `toolrt-sandbox-exec` beside the toolrt binary (the running program, or the one
    /// `TOOLRT_SANDBOX_EXEC` names: a library embedder's program is not toolrt), or the
    /// variable naming that helper itself. Without it, the toolrt binary's own `sandbox-exec`:
    /// the same code, but one more exec of the whole runtime per command (a few ms).
    fn find() -> Result<Self, String> {
        let toolrt = match std::env::var_os("TOOLRT_SANDBOX_EXEC").filter(|p| !p.is_empty()) {
            Some(path) => PathBuf::from(path),
            None => {
                let exe = std::env::current_exe()
                    .map_err(|e| format!("cannot find the toolrt binary: {e}"))?;
                let is_toolrt = exe
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("toolrt"));
                if !is_toolrt {
                    return Err(format!(
                        "{} is not the toolrt binary, which runs sandboxed commands; set \
                         TOOLRT_SANDBOX_EXEC to its path",
                        exe.display()
                    ));
                }
                exe
            }
        };
        let own = if toolrt.file_name().is_some_and(|n| n == HELPER_NAME) {
            toolrt.clone()
        } else {
            toolrt.with_file_name(HELPER_NAME)
        };
        if own.is_file() {
            tracing::debug!("sandbox: commands are set up by {}", own.display());
            return Ok(Helper {
                program: own,
                prefix: Vec::new(),
            });
        }
        tracing::debug!(
            "sandbox: {} is absent; commands are set up by `{} sandbox-exec` (slower: one more \
             exec of the whole runtime each)",
            own.display(),
            toolrt.display()
        );
        Ok(Helper {
            program: toolrt,
            prefix: vec!["sandbox-exec".into()],
        })
    }
}

/// Runs the helper once with `--probe`: it sets up the whole boundary, then reports instead of
/// running a command.
async fn probe(launch: ShellLaunch, running: Running) -> State {
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
            running: Box::new(running),
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
