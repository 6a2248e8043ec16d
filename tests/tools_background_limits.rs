//! Background tasks are bounded: at most 64 run at once (one more is `failed`, naming TaskStop),
//! and at most 1,024 finished ones are remembered (the oldest are forgotten first).

mod support;

use serde_json::json;
use support::*;

fn background(server: &mut Server, id: &str, command: &str) -> serde_json::Value {
    server.tool_use(
        id,
        "Bash",
        json!({"command": command, "run_in_background": true}),
    );
    server.result(id)
}

#[test]
fn a_sixty_fifth_running_task_is_refused_until_one_stops() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    for i in 0..64 {
        let r = background(&mut server, &format!("b{i}"), "sleep 60");
        assert_eq!(r["outcome"], "success", "{r}");
    }
    let r = background(&mut server, "over", "sleep 60");
    assert_eq!(r["outcome"], "failed", "{r}");
    let text = r["content"].as_str().unwrap();
    assert!(
        text.contains("64 background tasks are already running") && text.contains("TaskStop"),
        "{text}"
    );
    server.tool_use("stop", "TaskStop", json!({"task_id": "bg-1"}));
    assert_eq!(server.result("stop")["outcome"], "success");
    let r = background(&mut server, "again", "sleep 60");
    assert_eq!(r["outcome"], "success", "{r}");
    // Every one of them dies with toolrt.
    server.finish();
}

#[test]
fn the_oldest_finished_tasks_are_forgotten_past_1024() {
    let sb = Sandbox::new();
    let mut server = sb.serve(&["--permission-mode", "bypassPermissions"]);
    // Each ends at once; a TaskOutput that waits for it keeps fewer than 64 running.
    for i in 1..=1026 {
        let r = background(&mut server, &format!("b{i}"), "true");
        assert_eq!(r["outcome"], "success", "{r}");
        let id = format!("o{i}");
        server.tool_use(&id, "TaskOutput", json!({"task_id": format!("bg-{i}")}));
        assert_eq!(server.result(&id)["outcome"], "success");
    }
    // Starting bg-1026 made room by forgetting the oldest finished tasks: bg-1 and bg-2.
    for (id, task, outcome) in [
        ("t1", "bg-1", "validation_error"),
        ("t2", "bg-2", "validation_error"),
        ("t3", "bg-3", "success"),
        ("t1026", "bg-1026", "success"),
    ] {
        server.tool_use(id, "TaskOutput", json!({"task_id": task, "block": false}));
        let r = server.result(id);
        assert_eq!(r["outcome"], outcome, "{task}: {r}");
    }
    server.finish();
}
