//! What toolrt tells the sandbox's helper to enforce (`--policy`, as JSON), in one definition
//! that both binaries compile: toolrt itself (`toolrt sandbox-exec`, the fallback) and the small
//! `toolrt-sandbox-exec` (src/bin), which includes this file and `exec`/`holder`/`seccomp` by
//! path without linking the runtime. So these files use only std, serde, nix, landlock, caps
//! and seccompiler; nothing from the rest of toolrt.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The port toolrt's proxy has inside every sandbox's network namespace (each namespace has its
/// own loopback, so it never clashes with anything outside).
pub(crate) const PROXY_PORT: u16 = 3128;

/// What the helper is told to enforce (`--policy`, as JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ExecPolicy {
    /// Folders (or files) writable below: the workspace, the session's TMPDIR, allowWrite.
    pub(crate) write: Vec<PathBuf>,
    /// Paths made read-only, inside what is writable.
    pub(crate) deny_write: Vec<PathBuf>,
    /// Names inside the writable roots that later run code outside the sandbox (`.git`,
    /// `.claude`, `.mcp.json`, shell start-up files, …): made read-only like `deny_write`.
    #[serde(default)]
    pub(crate) pinned: Vec<PathBuf>,
    /// Paths hidden behind an unreadable stand-in.
    pub(crate) deny_read: Vec<PathBuf>,
    /// Paths inside `deny_read` ones that stay readable (and a `deny_read` path itself).
    #[serde(default)]
    pub(crate) allow_read: Vec<PathBuf>,
    /// The empty, unreadable file mounted over a denied file.
    pub(crate) stand_in_file: PathBuf,
    /// The empty, unreadable folder mounted over a denied folder.
    pub(crate) stand_in_dir: PathBuf,
    /// The holder's relay target: toolrt's proxy socket.
    #[serde(default)]
    pub(crate) proxy_socket: Option<PathBuf>,
    /// The namespaces a command joins: the session's holder.
    #[serde(default)]
    pub(crate) join: Option<Join>,
    /// `sandbox.network.allowAllUnixSockets`: no seccomp filter. Absent (a policy from an
    /// older toolrt): false, Unix sockets are refused.
    #[serde(default)]
    pub(crate) allow_all_unix_sockets: bool,
    /// `sandbox.network.allowLocalBinding`: TCP `bind` allowed. Absent: false, refused where
    /// Landlock can refuse it.
    #[serde(default)]
    pub(crate) allow_local_binding: bool,
}

/// The session's namespace holder: its pid, and the inodes of its user, mount and network
/// namespaces (checked before joining, so a recycled pid is never joined).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Join {
    pub(crate) pid: u32,
    pub(crate) user: u64,
    pub(crate) mnt: u64,
    pub(crate) net: u64,
}

/// What one run of the helper does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Restrict itself, then exec the command.
    Exec,
    /// Restrict itself, then print what is enforced instead of running a command.
    Probe,
    /// Be the session's namespace holder (`holder::hold`).
    Hold,
}

impl ExecPolicy {
    /// Reads `--policy`.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| format!("unreadable --policy: {e}"))
    }
}
