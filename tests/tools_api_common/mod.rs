//! Helpers for the library-level tool tests: a real `Session` on temp dirs, and a call helper
//! that runs normalize → validate → call as the pipeline does.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolrt::{Guard, ProgressSink, Session, StateKey, Tool, ToolContext, ToolOutput, ToolState};

// The /proc checks are shared with the binary-level tests; nothing else of that harness is.
#[path = "../support/procfs.rs"]
mod procfs;
#[allow(unused_imports)] // not every test file that includes this module uses both
pub(crate) use procfs::{process_gone, status_kib};

/// A working dir and an output dir that live as long as the value, a session rooted there and
/// the built-in tools' state.
pub(crate) struct Env {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) session: Arc<Session>,
    pub(crate) state: ToolState,
}

impl Env {
    pub(crate) fn cwd(&self) -> PathBuf {
        self.dir.path().join("work")
    }
    pub(crate) fn out(&self) -> PathBuf {
        self.dir.path().join("out")
    }
}

pub(crate) fn env_with(configure: impl FnOnce(&mut Session)) -> Env {
    env_configured(configure, |out| {
        ToolState::new(true, out.join("checkpoints"))
    })
}

/// An environment whose tools' state `state` makes from the output folder.
pub(crate) fn env_with_state(state: impl FnOnce(&Path) -> ToolState) -> Env {
    env_configured(|_| {}, state)
}

fn env_configured(
    configure: impl FnOnce(&mut Session),
    state: impl FnOnce(&Path) -> ToolState,
) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("work");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut session = Session::new(cwd, out.clone());
    configure(&mut session);
    Env {
        dir,
        session: Arc::new(session),
        state: state(&out),
    }
}

pub(crate) fn env() -> Env {
    env_with(|_| {})
}

/// The built-in tool `name`, with state of its own (for what does not depend on the session).
pub(crate) fn tool(name: &str) -> Arc<dyn Tool> {
    tool_of(&ToolState::default(), name)
}

/// The built-in tool `name` holding `state`.
pub(crate) fn tool_of(state: &ToolState, name: &str) -> Arc<dyn Tool> {
    state
        .tools()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

pub(crate) fn ctx(
    session: &Arc<Session>,
    id: &str,
    cancel: CancellationToken,
    progress: ProgressSink,
) -> ToolContext {
    ToolContext {
        tool_use_id: Arc::from(id),
        cancel,
        progress,
        session: session.clone(),
        agent: None,
        state: StateKey::SESSION,
        hook_response: false,
        decided_paths: None,
        output_chars: 50_000,
    }
}

/// Runs `name` as the pipeline would (normalize, validate, call); `Err` is a validation error.
pub(crate) async fn call(
    e: &Env,
    name: &str,
    id: &str,
    input: Value,
) -> Result<ToolOutput, String> {
    call_with(
        &e.session,
        &e.state,
        name,
        id,
        input,
        CancellationToken::new(),
        ProgressSink::discard(),
    )
    .await
}

pub(crate) async fn call_with(
    session: &Arc<Session>,
    state: &ToolState,
    name: &str,
    id: &str,
    input: Value,
    cancel: CancellationToken,
    progress: ProgressSink,
) -> Result<ToolOutput, String> {
    let tool = tool_of(state, name);
    let Value::Object(mut input) = input else {
        panic!("input must be an object")
    };
    tool.normalize(&mut input, session);
    tool.validate(&input, session, StateKey::SESSION)
        .decided()
        .await?;
    Ok(tool.call(input, ctx(session, id, cancel, progress)).await)
}

/// A guard that denies reads of paths containing `secret` and fetches of hosts containing
/// `denied`.
#[derive(Debug)]
pub(crate) struct TestGuard;

impl Guard for TestGuard {
    fn read_denied(&self, path: &Path) -> bool {
        path.to_string_lossy().contains("secret")
    }
    fn write_denied(&self, path: &Path) -> bool {
        self.read_denied(path)
    }
    fn fetch_allowed(&self, url: &str) -> bool {
        !url.contains("denied")
    }
}

/// Polls until `pid` is gone, for at most 3 s (SIGKILL delivery is asynchronous).
pub(crate) async fn wait_gone(pid: u32) -> bool {
    for _ in 0..300 {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    false
}
