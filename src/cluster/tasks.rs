//! Background Bash tasks on worker nodes, from both ends.
//!
//! On a worker ([`WorkerTasks`]), each coordinator has tasks of its own: a
//! `run_in_background` Bash, TaskOutput and TaskStop of that coordinator act only on them, and
//! their ids name the worker (`bg-<node>-N`). When a coordinator's link closes its tasks are
//! set aside at once (a coordinator that dials again starts afresh) and killed after the grace
//! period, as its running calls are.
//!
//! On the coordinator ([`TaskHomes`]), the worker's reply to a background start names the task,
//! and TaskOutput and TaskStop of that id are placed on the node that runs it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crate::call::Input;
use crate::tool::Tool;
use crate::tools::{Tasks, ToolState};

/// The tools that act on background tasks.
const TASK_TOOLS: [&str; 2] = ["TaskOutput", "TaskStop"];

/// Whether `tool` acts on a background task named in its input (so runs on the node that
/// holds that task).
pub(crate) fn reads_a_task(tool: &str) -> bool {
    TASK_TOOLS.contains(&tool)
}

/// Whether a call of `tool` with `input` starts a background task.
pub(crate) fn starts_a_task(tool: &str, input: &Input) -> bool {
    tool == "Bash" && input.get("run_in_background").and_then(|v| v.as_bool()) == Some(true)
}

/// Whether a call of `tool` with `input` starts or reads background tasks (so runs on the
/// coordinator's own tasks on a worker).
pub(crate) fn is_task_call(tool: &str, input: &Input) -> bool {
    reads_a_task(tool) || starts_a_task(tool, input)
}

/// Coordinators with background tasks on one worker at most; a new one's start is refused
/// beyond it (each holds up to 64 running tasks).
const MAX_COORDINATORS: usize = 64;

/// One coordinator's tasks on a worker and the tools over them.
struct Set {
    tasks: Arc<Tasks>,
    /// Bash, TaskOutput, TaskStop.
    tools: [Arc<dyn Tool>; 3],
}

impl Drop for Set {
    fn drop(&mut self) {
        self.tasks.kill_all();
    }
}

/// A worker's background tasks, by coordinator.
pub(super) struct WorkerTasks {
    /// The worker's name, in every task id.
    node: String,
    sets: Mutex<HashMap<String, Arc<Set>>>,
}

impl WorkerTasks {
    /// None yet, on the worker named `node`.
    pub(super) fn new(node: &str) -> Self {
        Self {
            node: node.to_string(),
            sets: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Set>>> {
        self.sets.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tool that runs `coordinator`'s call of `tool` on its own tasks; why not when this
    /// worker already holds tasks of too many coordinators.
    pub(super) fn tool(&self, coordinator: &str, tool: &str) -> Result<Arc<dyn Tool>, String> {
        let mut sets = self.lock();
        let set = match sets.get(coordinator) {
            Some(set) => set.clone(),
            None if sets.len() >= MAX_COORDINATORS => {
                return Err(format!(
                    "Worker node {} holds background tasks of {MAX_COORDINATORS} coordinators \
                     already; the call did not run.",
                    self.node
                ));
            }
            None => {
                let (tasks, tools) = ToolState::task_tools(&self.node);
                let set = Arc::new(Set { tasks, tools });
                sets.insert(coordinator.to_string(), set.clone());
                set
            }
        };
        let found = set.tools.iter().find(|t| t.name() == tool).cloned();
        found.ok_or_else(|| format!("{tool} does not act on background tasks"))
    }

    /// Sets `coordinator`'s tasks aside (its link closed): later calls of the same name start
    /// afresh, and dropping what this returns kills every task still running.
    pub(super) fn detach(&self, coordinator: &str) -> Option<impl Send + 'static> {
        self.lock().remove(coordinator)
    }
}

/// Task ids a coordinator remembers at most (FIFO); a worker keeps at most 64 running and 1,024
/// finished tasks per coordinator.
const MAX_HOMES: usize = 8_192;

/// On the coordinator: which worker node runs each background task started there.
#[derive(Default)]
pub(crate) struct TaskHomes {
    inner: Mutex<Homes>,
}

/// Task ids and their nodes, and the ids in the order they came (the oldest forgotten first).
#[derive(Default)]
struct Homes {
    node: HashMap<String, Arc<str>>,
    order: VecDeque<String>,
}

impl TaskHomes {
    fn lock(&self) -> std::sync::MutexGuard<'_, Homes> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Task `id` runs on `node`.
    pub(super) fn record(&self, id: String, node: Arc<str>) {
        let mut homes = self.lock();
        if homes.node.insert(id.clone(), node).is_none() {
            homes.order.push_back(id);
        }
        while homes.order.len() > MAX_HOMES {
            if let Some(old) = homes.order.pop_front() {
                homes.node.remove(&old);
            }
        }
    }

    /// The node that runs task `id`, if one was started here.
    pub(super) fn home(&self, id: &str) -> Option<Arc<str>> {
        self.lock().node.get(id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(v: serde_json::Value) -> Input {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn task_calls_are_told_apart() {
        assert!(is_task_call("TaskOutput", &input(json!({"task_id": "x"}))));
        assert!(is_task_call("TaskStop", &input(json!({}))));
        assert!(is_task_call(
            "Bash",
            &input(json!({"command": "sleep 9", "run_in_background": true}))
        ));
        assert!(!is_task_call(
            "Bash",
            &input(json!({"command": "ls", "run_in_background": false}))
        ));
        assert!(!is_task_call("Read", &input(json!({"file_path": "/x"}))));
    }

    #[test]
    fn each_coordinator_gets_tools_of_its_own_until_detached() {
        let tasks = WorkerTasks::new("w1");
        let a = tasks.tool("a", "TaskOutput").unwrap();
        let again = tasks.tool("a", "TaskOutput").unwrap();
        assert!(Arc::ptr_eq(&a, &again));
        let b = tasks.tool("b", "TaskOutput").unwrap();
        assert!(!Arc::ptr_eq(&a, &b), "another coordinator, other tasks");
        assert!(tasks.tool("a", "Read").is_err());
        assert!(tasks.detach("a").is_some());
        assert!(tasks.detach("a").is_none());
        let fresh = tasks.tool("a", "TaskOutput").unwrap();
        assert!(
            !Arc::ptr_eq(&a, &fresh),
            "a coordinator dialing again starts afresh"
        );
    }

    #[test]
    fn too_many_coordinators_are_refused_and_homes_stay_bounded() {
        let tasks = WorkerTasks::new("w1");
        for i in 0..MAX_COORDINATORS {
            tasks.tool(&format!("c{i}"), "Bash").unwrap();
        }
        let err = tasks.tool("one-more", "Bash").err().unwrap();
        assert!(err.contains("64 coordinators"), "{err}");

        let homes = TaskHomes::default();
        for i in 0..MAX_HOMES + 10 {
            homes.record(format!("bg-w1-{i}"), Arc::from("w1"));
        }
        assert!(homes.home("bg-w1-0").is_none(), "the oldest forgotten");
        assert_eq!(
            homes.home(&format!("bg-w1-{}", MAX_HOMES + 9)).as_deref(),
            Some("w1")
        );
        assert_eq!(homes.lock().node.len(), MAX_HOMES);
    }
}
