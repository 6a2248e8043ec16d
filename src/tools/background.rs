//! Background Bash tasks: started by `Bash` with `run_in_background`, read by `TaskOutput`,
//! stopped by `TaskStop`, all killed at shutdown.
//!
//! A task belongs to the caller that started it: the session (a call without an agent) or one
//! agent scope. TaskOutput and TaskStop of a caller see only the tasks of that caller and of
//! the scopes below it (the session sees every task): another scope's task id is answered as
//! an id no task has. When a scope ends, the tasks it started are killed
//! ([`Tasks::close_scope`], called for each scope an end ends).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_util::sync::CancellationToken;

use super::capture::{Capture, Counters};
use super::shell_run::{Ending, run_captured, spawn_shell};
use super::str_field;
use crate::call::Input;
use crate::process::kill_group;
use crate::session::Session;
use crate::tool::StateKey;

/// Background tasks running at once. One more is refused (its call is `failed`): each holds a
/// process group and its output capture, so a client must not start them without end.
pub(crate) const MAX_RUNNING: usize = 64;

/// Finished tasks remembered for TaskOutput; past it the oldest are forgotten (their output
/// files stay where they are).
pub(crate) const MAX_FINISHED: usize = 1024;

/// Where a background task is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TaskStatus {
    /// Still running.
    Running,
    /// Exited by itself with this code (`None`: killed by a signal from outside).
    Completed(Option<i32>),
    /// Stopped by TaskStop or shutdown.
    Killed,
    /// toolrt lost track of it.
    Failed(String),
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskStatus::Running => f.write_str("running"),
            TaskStatus::Completed(Some(code)) => write!(f, "completed (exit code {code})"),
            TaskStatus::Completed(None) => f.write_str("completed (killed by a signal)"),
            TaskStatus::Killed => f.write_str("killed"),
            TaskStatus::Failed(err) => write!(f, "failed ({err})"),
        }
    }
}

/// One background task.
#[derive(Debug)]
pub(crate) struct Task {
    /// Its id (`bg-1`, `bg-2`, …; on a worker node `bg-<node>-1`, …).
    pub id: String,
    /// The command it runs.
    pub command: String,
    /// The file its output goes to, whole.
    pub output_path: PathBuf,
    pgid: Option<u32>,
    cancel: CancellationToken,
    status: watch::Sender<TaskStatus>,
    /// Running totals of its output.
    pub counters: Arc<Counters>,
    /// The caller that started it, then the scopes above that one, innermost first (empty:
    /// the session's own task).
    owners: Vec<StateKey>,
}

impl Task {
    /// Its current status.
    pub(crate) fn status(&self) -> TaskStatus {
        self.status.borrow().clone()
    }

    /// Waits until it is no longer running.
    pub(crate) async fn finished(&self) -> TaskStatus {
        let mut rx = self.status.subscribe();
        match rx.wait_for(|s| *s != TaskStatus::Running).await {
            Ok(s) => s.clone(),
            Err(_) => self.status(),
        }
    }

    /// Whether a call made as `caller` may see it: the session sees every task, a scope the
    /// tasks it started and those of the scopes below it.
    pub(crate) fn visible_to(&self, caller: StateKey) -> bool {
        caller.is_session() || self.owners.contains(&caller)
    }

    /// Kills its process group if it is still running; the runner then marks it killed.
    pub(crate) fn kill(&self) {
        if *self.status.borrow() == TaskStatus::Running {
            self.cancel.cancel();
            // Kill right here too: at shutdown the runtime may never poll the runner again.
            if let Some(pgid) = self.pgid {
                kill_group(pgid);
            }
        }
    }
}

/// The background tasks of one session. Dropping it kills every task still running.
#[derive(Debug)]
pub(crate) struct Tasks {
    tasks: Mutex<BTreeMap<String, Arc<Task>>>,
    next: AtomicU64,
    /// What every id starts with, before its number.
    prefix: String,
    /// One permit per task starting or running, held until it ends: a start takes one before
    /// it spawns (an await), so concurrent starts cannot pass [`MAX_RUNNING`] and no lock is
    /// held across the spawn.
    running: Arc<Semaphore>,
    /// The parent of every open agent scope (the session for a top-level one), so a task
    /// records every scope above the one that started it.
    parents: Mutex<HashMap<StateKey, StateKey>>,
}

impl Default for Tasks {
    fn default() -> Self {
        Self::with_prefix("bg-".into())
    }
}

impl Tasks {
    /// No tasks yet; their ids will be `bg-<name>-1`, `bg-<name>-2`, … (a worker node's, so
    /// that a coordinator with several workers can tell where each task runs).
    pub(crate) fn named(name: &str) -> Self {
        Self::with_prefix(format!("bg-{name}-"))
    }

    fn with_prefix(prefix: String) -> Self {
        Self {
            tasks: Mutex::default(),
            next: AtomicU64::default(),
            prefix,
            running: Arc::new(Semaphore::new(MAX_RUNNING)),
            parents: Mutex::default(),
        }
    }

    /// The task with this id, if `caller` may see it.
    pub(crate) fn get(&self, id: &str, caller: StateKey) -> Option<Arc<Task>> {
        self.lock()
            .get(id)
            .filter(|t| t.visible_to(caller))
            .cloned()
    }

    /// The ids of every task `caller` may see, for error messages.
    pub(crate) fn ids(&self, caller: StateKey) -> Vec<String> {
        self.lock()
            .values()
            .filter(|t| t.visible_to(caller))
            .map(|t| t.id.clone())
            .collect()
    }

    /// An agent scope started under `parent` ([`StateKey::SESSION`] for a top-level one).
    pub(crate) fn open_scope(&self, scope: StateKey, parent: StateKey) {
        if !scope.is_session() {
            self.lock_parents().insert(scope, parent);
        }
    }

    /// An agent scope ended: every task it started that is still running is killed (its whole
    /// process group). The tasks of the scopes below it are killed by their own ends, which
    /// come with it. The session's tasks are never killed here.
    pub(crate) fn close_scope(&self, scope: StateKey) {
        if scope.is_session() {
            return;
        }
        self.lock_parents().remove(&scope);
        for task in self.lock().values() {
            if task.owners.first() == Some(&scope) {
                task.kill();
            }
        }
    }

    /// `caller` and every open scope above it, innermost first (empty for the session).
    fn lineage(&self, caller: StateKey) -> Vec<StateKey> {
        let parents = self.lock_parents();
        let mut owners = Vec::new();
        let mut at = caller;
        while !at.is_session() && !owners.contains(&at) {
            owners.push(at);
            at = parents.get(&at).copied().unwrap_or(StateKey::SESSION);
        }
        owners
    }

    fn lock_parents(&self) -> std::sync::MutexGuard<'_, HashMap<StateKey, StateKey>> {
        self.parents.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Kills every task still running.
    pub(crate) fn kill_all(&self) {
        for task in self.lock().values() {
            task.kill();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Task>>> {
        // A panic while holding this lock leaves the map itself consistent; keep going.
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Room for one more task: a running permit, held until the task ends, with the oldest
    /// finished tasks past [`MAX_FINISHED`] forgotten; or, with [`MAX_RUNNING`] starting or
    /// running, why not (for the model).
    fn room(&self) -> Result<OwnedSemaphorePermit, String> {
        let permit = self.running.clone().try_acquire_owned().map_err(|_| {
            format!(
                "{MAX_RUNNING} background tasks are already running, the most toolrt runs at \
                 once. Stop one with TaskStop, or wait for one to finish (TaskOutput), then start \
                 this one again."
            )
        })?;
        let mut tasks = self.lock();
        let mut finished: Vec<(u64, String)> = tasks
            .values()
            .filter(|t| t.status() != TaskStatus::Running)
            .map(|t| (seq(&t.id), t.id.clone()))
            .collect();
        if finished.len() >= MAX_FINISHED {
            finished.sort_unstable();
            for (_, id) in &finished[..=finished.len() - MAX_FINISHED] {
                tasks.remove(id);
            }
        }
        Ok(permit)
    }
}

/// The number in a task id (`bg-12`, `bg-w1-12` → 12), for age order.
fn seq(id: &str) -> u64 {
    id.rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

impl Drop for Tasks {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// The task a TaskOutput or TaskStop input names, with its id, or the "unknown task" text
/// both tools give (naming the tasks there are). Only the tasks `caller` may see count: the
/// id of a task another scope started gets the very words an id no task has gets.
pub(crate) fn find_task<'a>(
    input: &'a Input,
    tasks: &Tasks,
    caller: StateKey,
) -> Result<(&'a str, Arc<Task>), String> {
    let id = str_field(input, "task_id").unwrap_or_default();
    if let Some(task) = tasks.get(id, caller) {
        return Ok((id, task));
    }
    let ids = tasks.ids(caller);
    Err(if ids.is_empty() {
        format!(
            "no background task with id {id:?}: none was started in this session (Bash with run_in_background starts one)"
        )
    } else {
        format!(
            "no background task with id {id:?}; the tasks are: {}",
            ids.join(", ")
        )
    })
}

/// Starts `command` in the background for `caller` and returns its task at once; the error is
/// text for the model. `cancel` is the call's token: for a call of an agent scope it is
/// cancelled when the scope ends, before the scope's tasks are killed, so a task whose start
/// raced with that end is killed here.
pub(crate) async fn start(
    tasks: &Tasks,
    command: &str,
    session: &Session,
    sandbox: Option<&crate::session::ShellLaunch>,
    caller: StateKey,
    cancel: &CancellationToken,
) -> Result<Arc<Task>, String> {
    let permit = tasks.room()?;
    let id = format!(
        "{}{}",
        tasks.prefix,
        tasks.next.fetch_add(1, Ordering::Relaxed) + 1
    );
    let capture = Capture::create(&session.output_dir, &format!("task-{id}"))
        .await
        .map_err(|err| {
            format!(
                "could not create the output file in {}: {err}",
                session.output_dir.display()
            )
        })?;
    let (child, group) = spawn_shell(command, session, sandbox)
        .await
        .map_err(|err| format!("could not start bash in {}: {err}", session.cwd.display()))?;
    let (status, _) = watch::channel(TaskStatus::Running);
    let task = Arc::new(Task {
        id: id.clone(),
        command: command.to_string(),
        output_path: capture.path().map(Path::to_path_buf).unwrap_or_default(),
        pgid: child.id(),
        cancel: CancellationToken::new(),
        status,
        counters: capture.counters(),
        owners: tasks.lineage(caller),
    });
    tasks.lock().insert(id, task.clone());
    if !caller.is_session() && cancel.is_cancelled() {
        // Its scope ended (or is ending) while it started: the end may have looked for the
        // scope's tasks before this one was in the table.
        task.kill();
    }
    let runner = task.clone();
    tokio::spawn(async move {
        let (ending, _captured) =
            run_captured(child, group, capture, None, runner.cancel.clone(), None).await;
        let status = match ending {
            Ending::Exited(exit) => TaskStatus::Completed(exit.code()),
            Ending::Cancelled | Ending::TimedOut => TaskStatus::Killed,
            Ending::Lost(err) => TaskStatus::Failed(err),
        };
        // Its place goes back before anyone waiting for its end can start another.
        drop(permit);
        runner.status.send_replace(status);
    });
    Ok(task)
}

/// Reads a task's output file as text: whole when it holds at most `head + tail` bytes, else the
/// first `head` and last `tail` bytes around a marker. Returns the text and whether it was cut.
pub(crate) async fn read_windows(
    path: &Path,
    head: u64,
    tail: u64,
) -> std::io::Result<(String, bool)> {
    use tokio::io::{AsyncReadExt, AsyncSeekExt};
    let mut file = tokio::fs::File::open(path).await?;
    let len = file.metadata().await?.len();
    if len <= head + tail {
        let mut bytes = Vec::with_capacity(len as usize);
        file.read_to_end(&mut bytes).await?;
        return Ok((String::from_utf8_lossy(&bytes).into_owned(), false));
    }
    let mut first = vec![0u8; head as usize];
    file.read_exact(&mut first).await?;
    file.seek(std::io::SeekFrom::Start(len - tail)).await?;
    let mut last = Vec::with_capacity(tail as usize);
    file.take(tail).read_to_end(&mut last).await?;
    let omitted = len - head - tail;
    Ok((
        format!(
            "{}\n\n[… {omitted} bytes omitted here; the output file has all of it …]\n\n{}",
            lossy_trimmed(&first, true),
            lossy_trimmed(&last, false)
        ),
        true,
    ))
}

/// Decodes a window cut out of a UTF-8 stream, dropping a character split by the cut.
fn lossy_trimmed(bytes: &[u8], cut_at_end: bool) -> String {
    let bytes = if cut_at_end {
        let mut end = bytes.len();
        while end > 0
            && end > bytes.len().saturating_sub(4)
            && std::str::from_utf8(&bytes[..end]).is_err()
        {
            end -= 1;
        }
        if std::str::from_utf8(&bytes[..end]).is_ok() {
            &bytes[..end]
        } else {
            bytes
        }
    } else {
        let mut start = 0;
        while start < bytes.len().min(4) && (bytes[start] & 0xC0) == 0x80 {
            start += 1;
        }
        &bytes[start..]
    };
    String::from_utf8_lossy(bytes).into_owned()
}
