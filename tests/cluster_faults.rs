//! Worker nodes that fail: killed mid-batch, restarted, or holding the wrong cookie.

mod cluster_support;
mod support;

use std::time::{Duration, Instant};

use cluster_support::*;
use serde_json::json;
use support::*;

#[test]
fn a_worker_killed_mid_batch_fails_its_calls_naming_it_and_serves_again_after_a_restart() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let mut workers = workers(&sb, &cookie, 3);
    let mut server = coordinator(
        &sb,
        &cookie,
        &workers,
        &["--permission-mode", "bypassPermissions"],
    );
    // Each call says where it runs, then waits on a file that only appears at the end: every
    // call is running (on its node) when w2 is killed.
    let gate = sb.dir.path().join("gate");
    let started = sb.dir.path().join("started");
    std::fs::create_dir_all(&started).unwrap();
    let calls: Vec<_> = (0..9)
        .map(|i| {
            let cmd = format!(
                "touch {}/c{i}; while [ ! -e {} ]; do sleep 0.02; done; echo done-{i}",
                started.display(),
                gate.display()
            );
            json!({"id": format!("c{i}"), "name": "Bash", "input": {"command": cmd}})
        })
        .collect();
    let mut ids = Vec::new();
    for call in calls {
        ids.push(call["id"].as_str().unwrap().to_string());
        server.send(
            json!({"type": "tool_use", "id": call["id"], "name": "Bash", "input": call["input"]}),
        );
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_dir(&started).unwrap().count() < 9 {
        assert!(Instant::now() < deadline, "the calls did not all start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let killed_at = Instant::now();
    workers[1].kill9();
    wait_node(&mut server, "w2", "lost", Duration::from_secs(10));
    let detected = killed_at.elapsed();
    std::fs::write(&gate, "").unwrap();
    let mut lost = 0;
    for id in &ids {
        let r = server.result(id);
        assert!(r["node"].is_string(), "{r}");
        if r["node"] == "w2" {
            assert_eq!(r["outcome"], "failed", "{r}");
            assert!(
                r["content"]
                    .as_str()
                    .unwrap()
                    .contains("Worker node w2 was lost"),
                "{r}"
            );
            lost += 1;
        } else {
            assert_eq!(r["outcome"], "success", "{r}");
        }
    }
    assert!(lost > 0, "w2 ran none of the calls");
    // A closed connection is noticed at once, well within the stated heartbeat bound (3 s).
    assert!(detected < Duration::from_secs(3), "lost after {detected:?}");

    // Restarted at the same address, it rejoins and runs calls again.
    let (name, addr, cwd) = (
        workers[1].name.clone(),
        workers[1].addr.clone(),
        workers[1].cwd.clone(),
    );
    workers[1] = Worker::start_at(&name, &cookie, &cwd, &addr, &[]);
    wait_node(&mut server, "w2", "rejoined", Duration::from_secs(20));
    let mut on_w2 = false;
    for i in 0..6 {
        let id = format!("again{i}");
        server.tool_use(&id, "Bash", json!({"command": "echo again"}));
        let r = server.result(&id);
        assert_eq!(r["outcome"], "success", "{r}");
        on_w2 |= r["node"] == "w2";
    }
    assert!(on_w2, "the restarted worker ran none of six calls");
    let done = server.finish();
    for id in &ids {
        assert_eq!(done.results(id).len(), 1, "{id} answered more than once");
    }
}

#[test]
fn a_wrong_cookie_is_refused_at_connect_with_a_clear_error() {
    let sb = Sandbox::new();
    let right = cookie(&sb, "right", "s3cret");
    let wrong = cookie(&sb, "wrong", "guess");
    let worker = Worker::start("w1", &right, &sb.dir.path().join("w1"));
    let server = sb.serve(&[
        "--cookie-file",
        wrong.to_str().unwrap(),
        "--worker",
        &worker.addr,
    ]);
    let done = server.finish();
    assert_eq!(done.status.code(), Some(2), "{}", done.stderr);
    assert!(
        done.stderr.contains("cookie does not match"),
        "{}",
        done.stderr
    );
    assert!(done.stderr.contains(&worker.addr), "{}", done.stderr);
}

#[test]
fn a_worker_address_off_loopback_needs_insecure_network() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let server = sb.serve(&[
        "--cookie-file",
        cookie.to_str().unwrap(),
        "--worker",
        "192.0.2.1:7000",
    ]);
    let done = server.finish();
    assert_eq!(done.status.code(), Some(2), "{}", done.stderr);
    assert!(
        done.stderr.contains("--insecure-network"),
        "{}",
        done.stderr
    );
}

#[test]
fn a_worker_kills_the_process_groups_of_a_coordinator_that_is_gone() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let dir = sb.dir.path().join("w1");
    let workers = [Worker::start_at(
        "w1",
        &cookie,
        &dir,
        &free_addr(),
        &["--orphan-grace-ms", "200"],
    )];
    let mut server = coordinator(
        &sb,
        &cookie,
        &workers,
        &["--permission-mode", "bypassPermissions"],
    );
    let pid_file = sb.dir.path().join("child");
    let cmd = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
    server.tool_use("long", "Bash", json!({"command": cmd}));
    let pid = read_pid(&pid_file);
    // SIGKILL: the coordinator's own watchdog knows nothing of the worker's processes.
    server.child.kill().unwrap();
    let _ = server.child.wait();
    assert!(
        wait_gone_within(pid, Duration::from_secs(10)),
        "the command outlived its coordinator on the worker"
    );
}

#[test]
fn a_call_whose_worker_is_lost_while_it_waits_for_an_answer_runs_nowhere_and_says_so() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let mut workers = workers(&sb, &cookie, 1);
    let marker = workers[0].cwd.join("ran");
    let mut server = coordinator(&sb, &cookie, &workers, &[]);
    // Placed on w1 before its decision, which asks: the call waits for the answer.
    let cmd = format!("touch {}", marker.display());
    server.tool_use("t", "Bash", json!({"command": cmd}));
    let ask = server.wait_for("the ask", Duration::from_secs(10), |v| {
        v["type"] == "permission_request" && v["tool_use_id"] == "t"
    });
    workers[0].kill9();
    wait_node(&mut server, "w1", "lost", Duration::from_secs(10));
    server.send(json!({"type": "permission_response", "request_id": ask["request_id"], "behavior": "allow"}));
    let t = server.result("t");
    assert_eq!(t["outcome"], "failed", "{t}");
    let text = t["content"].as_str().unwrap();
    assert!(
        text.contains("w1 was lost before the call was sent") && text.contains("nothing ran"),
        "{text}"
    );
    let done = server.finish();
    assert_eq!(done.results("t").len(), 1);
    assert!(!marker.exists());
}

#[test]
fn a_call_whose_worker_is_lost_before_it_is_sent_is_placed_on_another_and_decided_there() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let mut workers = workers(&sb, &cookie, 2);
    let mut server = coordinator(&sb, &cookie, &workers, &[]);
    // The first call goes to w1 (equal loads: the turn starts at the first node); its decision
    // asks, so it waits there, placed but not sent.
    server.tool_use("t", "Bash", json!({"command": "touch ran"}));
    let first = server.take_for("the ask", Duration::from_secs(10), |v| {
        v["type"] == "permission_request" && v["tool_use_id"] == "t"
    });
    workers[0].kill9();
    wait_node(&mut server, "w1", "lost", Duration::from_secs(10));
    server.send(json!({"type": "permission_response", "request_id": first["request_id"], "behavior": "allow"}));
    // Placed on w2, it is decided again about w2's files: a new ask.
    let second = server.take_for("the second ask", Duration::from_secs(10), |v| {
        v["type"] == "permission_request" && v["tool_use_id"] == "t"
    });
    assert_ne!(second["request_id"], first["request_id"]);
    server.send(json!({"type": "permission_response", "request_id": second["request_id"], "behavior": "allow"}));
    let t = server.result("t");
    assert_eq!(
        (t["outcome"].as_str(), t["node"].as_str()),
        (Some("success"), Some("w2")),
        "{t}"
    );
    let done = server.finish();
    assert_eq!(done.results("t").len(), 1);
    assert!(workers[1].cwd.join("ran").exists() && !workers[0].cwd.join("ran").exists());
}
