//! Background Bash tasks on worker nodes: started on one, read and stopped there by id, each
//! coordinator's own, and killed once their coordinator is gone.

mod cluster_support;
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use cluster_support::*;
use serde_json::{Value, json};
use support::*;

/// The task id a background start's result names.
fn task_id(r: &Value) -> String {
    let text = r["content"].as_str().unwrap();
    let rest = text
        .split("task id ")
        .nth(1)
        .unwrap_or_else(|| panic!("no task id in {r}"));
    rest.trim_end_matches(|c: char| c != '.' && !c.is_alphanumeric())
        .split('.')
        .next()
        .unwrap()
        .to_string()
}

fn pid_in(file: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(file)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "{} never written",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// TaskOutput of `task` (ids `<id>-1`, `<id>-2`, …) until its output holds `want` (5 s at
/// most); the last result.
fn read_until(server: &mut Server, id: &str, task: &str, want: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    for attempt in 1.. {
        let call = format!("{id}-{attempt}");
        server.tool_use(
            &call,
            "TaskOutput",
            json!({"task_id": task, "block": false}),
        );
        let r = server.result(&call);
        assert_eq!(r["outcome"], "success", "{r}");
        if r["content"].as_str().unwrap().contains(want) || Instant::now() > deadline {
            assert!(r["content"].as_str().unwrap().contains(want), "{r}");
            return r;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    unreachable!()
}

fn gone_within(pid: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        // A zombie has no cmdline; a process gone has no entry at all.
        let alive = std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| !c.is_empty());
        if !alive {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn background_tasks_run_are_read_and_stopped_on_their_own_worker() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let workers = workers(&sb, &cookie, 2);
    let mut server = coordinator(
        &sb,
        &cookie,
        &workers,
        &["--permission-mode", "bypassPermissions"],
    );

    // Two starts, one at a time: idle workers take turns, so each runs one.
    let mut started = Vec::new();
    for n in 0..2 {
        let id = format!("start{n}");
        server.tool_use(
            &id,
            "Bash",
            json!({"command": format!("echo $$ > pid{n}; echo task-{n} in $(pwd); sleep 30"), "run_in_background": true}),
        );
        let r = server.result(&id);
        assert_eq!(r["outcome"], "success", "{r}");
        let node = r["node"].as_str().expect("run on a worker").to_string();
        let task = task_id(&r);
        assert!(
            task.starts_with(&format!("bg-{node}-")),
            "{task} names {node}"
        );
        started.push((n, node, task));
    }
    assert_ne!(
        started[0].1, started[1].1,
        "one task on each worker: {started:?}"
    );

    for (n, node, task) in &started {
        let cwd =
            std::fs::canonicalize(&workers.iter().find(|w| &w.name == node).unwrap().cwd).unwrap();
        let pid_file = cwd.join(format!("pid{n}"));
        let pid = pid_in(&pid_file);
        // Output reaches the task's file within a flush period (200 ms).
        let want = format!("task-{n} in {}", cwd.display());
        let r = read_until(&mut server, &format!("out{n}"), task, &want);
        assert_eq!(&r["node"], node, "read where it runs: {r}");
        assert!(r["content"].as_str().unwrap().contains("running"), "{r}");

        let id = format!("stop{n}");
        server.tool_use(&id, "TaskStop", json!({"task_id": task}));
        let r = server.result(&id);
        assert_eq!(r["outcome"], "success", "{r}");
        assert_eq!(&r["node"], node, "{r}");
        assert!(
            gone_within(pid, Duration::from_secs(5)),
            "task {task} (pid {pid}) still runs after TaskStop"
        );
    }

    server.tool_use("nope", "TaskOutput", json!({"task_id": "bg-w1-99"}));
    let r = server.result("nope");
    assert_eq!(r["outcome"], "failed", "{r}");
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .contains("No background task with id \"bg-w1-99\""),
        "{r}"
    );
    server.finish();
}

#[test]
fn each_coordinator_sees_only_its_own_tasks_which_die_when_it_is_gone() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let w = Worker::start_at(
        "w1",
        &cookie,
        &sb.dir.path().join("w1"),
        &free_addr(),
        &["--orphan-grace-ms", "300"],
    );
    let workers = vec![w];
    let cwd = std::fs::canonicalize(&workers[0].cwd).unwrap();
    let mut first = coordinator(
        &sb,
        &cookie,
        &workers,
        &["--permission-mode", "bypassPermissions"],
    );
    let mut second = coordinator(
        &sb,
        &cookie,
        &workers,
        &["--permission-mode", "bypassPermissions"],
    );
    first.tool_use(
        "a",
        "Bash",
        json!({"command": "echo $$ > pid-first; echo first-output; sleep 30", "run_in_background": true}),
    );
    let a = first.result("a");
    assert_eq!(a["outcome"], "success", "{a}");
    let task_a = task_id(&a);
    let pid_a = pid_in(&cwd.join("pid-first"));

    // The second coordinator's first task gets the same id, on its own tasks.
    second.tool_use(
        "b",
        "Bash",
        json!({"command": "echo $$ > pid-second; echo second-output; sleep 30", "run_in_background": true}),
    );
    let b = second.result("b");
    assert_eq!(b["outcome"], "success", "{b}");
    assert_eq!(task_id(&b), task_a, "ids count per coordinator");
    let pid_b = pid_in(&cwd.join("pid-second"));
    let r = read_until(&mut second, "read", &task_a, "second-output");
    assert!(
        !r["content"].as_str().unwrap().contains("first-output"),
        "{r}"
    );

    // The first coordinator goes away: its task dies after the worker's grace period, the
    // second coordinator's keeps running.
    first.finish();
    assert!(
        gone_within(pid_a, Duration::from_secs(10)),
        "the gone coordinator's task (pid {pid_a}) still runs"
    );
    assert!(!gone_within(pid_b, Duration::from_millis(500)));
    second.tool_use("stop", "TaskStop", json!({"task_id": task_a}));
    assert_eq!(second.result("stop")["outcome"], "success");
    assert!(gone_within(pid_b, Duration::from_secs(5)));
    second.finish();
}
