//! Batches keep request order for side effects and emit `batch_start` / `batch_end`.

mod support;

use serde_json::json;
use support::*;

#[test]
fn write_then_read_in_one_batch_sees_the_write() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[json!({"type": "batch", "id": "b1", "calls": [
            {"id": "w", "name": "Write", "input": {"file_path": "notes/n.txt", "content": "written by w\n"}},
            {"id": "r", "name": "Read", "input": {"file_path": "notes/n.txt"}},
            {"id": "w2", "name": "Write", "input": {"file_path": "notes/n.txt", "content": "second\n"}},
            {"id": "r2", "name": "Read", "input": {"file_path": "notes/n.txt"}}
        ]})],
    );
    assert!(done.status.success());
    assert!(
        done.result("r")["content"]
            .as_str()
            .unwrap()
            .contains("written by w")
    );
    assert!(
        done.result("r2")["content"]
            .as_str()
            .unwrap()
            .contains("second")
    );
    let start = done.events("batch_start");
    assert_eq!(start.len(), 1);
    assert_eq!(start[0]["ids"], json!(["w", "r", "w2", "r2"]));
    let end = done.events("batch_end");
    assert_eq!(end[0]["batch"], "b1");
    assert_eq!(end[0]["ids"], json!(["w", "r", "w2", "r2"]));
    // batch_end comes after every result of the batch.
    let pos =
        |pred: &dyn Fn(&serde_json::Value) -> bool| done.messages.iter().position(pred).unwrap();
    let end_at = pos(&|v| v["event"] == "batch_end");
    for id in ["w", "r", "w2", "r2"] {
        assert!(pos(&|v| is_result(v, id)) < end_at);
    }
}

#[test]
fn one_failure_does_not_cancel_its_siblings() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[json!({"type": "batch", "id": "b", "calls": [
            {"id": "bad", "name": "Bash", "input": {"command": "exit 3"}},
            {"id": "nope", "name": "Nope", "input": {}},
            {"id": "schema", "name": "Read", "input": {}},
            {"id": "good", "name": "Bash", "input": {"command": "echo fine"}}
        ]})],
    );
    assert_eq!(done.result("bad")["outcome"], "failed");
    assert!(
        done.result("bad")["content"]
            .as_str()
            .unwrap()
            .contains("exit code 3")
    );
    assert_eq!(done.result("nope")["outcome"], "unavailable");
    assert_eq!(done.result("schema")["outcome"], "schema_error");
    assert_eq!(done.result("good")["outcome"], "success");
}

#[test]
fn empty_batch_starts_and_ends() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &[],
        &[json!({"type": "batch", "id": "e", "calls": []})],
    );
    assert_eq!(done.events("batch_start").len(), 1);
    assert_eq!(done.events("batch_end")[0]["ids"], json!([]));
}

/// The position of `id`'s result among the messages.
fn result_at(done: &Finished, id: &str) -> usize {
    done.messages
        .iter()
        .position(|v| is_result(v, id))
        .unwrap_or_else(|| panic!("no result for {id}: {:#?}", done.messages))
}

fn content<'a>(done: &'a Finished, id: &str) -> &'a str {
    done.result(id)["content"].as_str().unwrap_or("")
}

fn assert_success(done: &Finished, ids: &[&str]) {
    for id in ids {
        assert_eq!(
            done.result(id)["outcome"],
            "success",
            "{id}: {}",
            done.result(id)
        );
    }
}

#[test]
fn read_then_edit_in_one_batch_sees_the_read() {
    let sb = Sandbox::new();
    sb.write("f.txt", "alpha\nbeta\n");
    let done = run_lines(
        &sb,
        &["--permission-mode", "acceptEdits"],
        &[json!({"type": "batch", "id": "b", "calls": [
            {"id": "r1", "name": "Read", "input": {"file_path": "f.txt"}},
            {"id": "e", "name": "Edit", "input": {"file_path": "f.txt", "old_string": "beta", "new_string": "gamma"}},
            {"id": "r2", "name": "Read", "input": {"file_path": "f.txt"}}
        ]})],
    );
    assert_success(&done, &["r1", "e", "r2"]);
    assert!(content(&done, "r1").contains("beta"));
    assert!(content(&done, "r2").contains("gamma"));
    assert!(!content(&done, "r2").contains("beta"));
    // The Edit is exclusive: its result comes after the Read before it and before the one after.
    assert!(result_at(&done, "r1") < result_at(&done, "e"));
    assert!(result_at(&done, "e") < result_at(&done, "r2"));
    assert_eq!(
        std::fs::read_to_string(sb.path("f.txt")).unwrap(),
        "alpha\ngamma\n"
    );
}

#[test]
fn write_then_edit_then_read_a_new_file() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &["--permission-mode", "acceptEdits"],
        &[json!({"type": "batch", "id": "b", "calls": [
            {"id": "w", "name": "Write", "input": {"file_path": "new/n.txt", "content": "one\ntwo\n"}},
            {"id": "e", "name": "Edit", "input": {"file_path": "new/n.txt", "old_string": "two", "new_string": "three"}},
            {"id": "r", "name": "Read", "input": {"file_path": "new/n.txt"}}
        ]})],
    );
    assert_success(&done, &["w", "e", "r"]);
    assert!(content(&done, "r").contains("three"));
    assert!(result_at(&done, "w") < result_at(&done, "e"));
    assert!(result_at(&done, "e") < result_at(&done, "r"));
}

#[test]
fn two_edits_in_one_batch_after_an_earlier_read() {
    let sb = Sandbox::new();
    sb.write("f.txt", "v1\n");
    let mut server = sb.serve(&["--permission-mode", "acceptEdits"]);
    server.tool_use("r", "Read", json!({"file_path": "f.txt"}));
    assert_eq!(server.result("r")["outcome"], "success");
    // The second Edit's old_string exists only after the first Edit: its match count must be
    // taken at its turn.
    server.send(json!({"type": "batch", "id": "b", "calls": [
        {"id": "e1", "name": "Edit", "input": {"file_path": "f.txt", "old_string": "v1", "new_string": "v2"}},
        {"id": "e2", "name": "Edit", "input": {"file_path": "f.txt", "old_string": "v2", "new_string": "v3"}}
    ]}));
    let done = server.finish();
    assert_success(&done, &["e1", "e2"]);
    assert!(result_at(&done, "e1") < result_at(&done, "e2"));
    assert_eq!(std::fs::read_to_string(sb.path("f.txt")).unwrap(), "v3\n");
}

#[test]
fn write_then_bash_cat_sees_the_file() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &["--permission-mode", "acceptEdits"],
        &[json!({"type": "batch", "id": "b", "calls": [
            {"id": "w", "name": "Write", "input": {"file_path": "a.txt", "content": "made by w\n"}},
            {"id": "cat", "name": "Bash", "input": {"command": "cat a.txt"}}
        ]})],
    );
    assert_success(&done, &["w", "cat"]);
    assert_eq!(content(&done, "cat"), "made by w\n");
    assert!(result_at(&done, "w") < result_at(&done, "cat"));
}

#[test]
fn a_long_mixed_batch_keeps_every_dependency() {
    let sb = Sandbox::new();
    sb.write("chain.txt", "start\n");
    // Each step: a command changes the file behind toolrt's back (so any earlier Read is stale),
    // a few safe calls look at it (a Read, a Grep, a Glob, a read-only Bash), and an Edit needs
    // both that Read (read-before-edit, freshness) and the command's line (its match count).
    let steps = 12;
    let mut calls = Vec::new();
    for i in 1..=steps {
        calls.push(json!({"id": format!("a{i}"), "name": "Bash", "input": {"command": format!("echo line{i} >> chain.txt")}}));
        calls.push(
            json!({"id": format!("r{i}"), "name": "Read", "input": {"file_path": "chain.txt"}}),
        );
        calls.push(json!({"id": format!("g{i}"), "name": "Grep", "input": {"pattern": format!("line{i}$"), "output_mode": "content"}}));
        calls.push(json!({"id": format!("l{i}"), "name": "Glob", "input": {"pattern": "*.txt"}}));
        calls.push(
            json!({"id": format!("c{i}"), "name": "Bash", "input": {"command": "cat chain.txt"}}),
        );
        calls.push(json!({"id": format!("e{i}"), "name": "Edit", "input": {"file_path": "chain.txt", "old_string": format!("line{i}\n"), "new_string": format!("edited{i}\n")}}));
    }
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[json!({"type": "batch", "id": "long", "calls": calls})],
    );
    assert!(done.status.success());
    let mut expected = String::from("start\n");
    for i in 1..=steps {
        let line = format!("line{i}");
        for safe in ["r", "g", "c"] {
            let id = format!("{safe}{i}");
            assert_success(&done, &[&id]);
            assert!(
                content(&done, &id).contains(&line),
                "{id} must see {line}: {}",
                content(&done, &id)
            );
        }
        assert_success(
            &done,
            &[&format!("a{i}"), &format!("l{i}"), &format!("e{i}")],
        );
        // The command is answered before the step's safe calls, they before the Edit, and the
        // Edit before the next step's command.
        let (a, e) = (
            result_at(&done, &format!("a{i}")),
            result_at(&done, &format!("e{i}")),
        );
        for safe in ["r", "g", "l", "c"] {
            let at = result_at(&done, &format!("{safe}{i}"));
            assert!(a < at && at < e, "{safe}{i} out of order");
        }
        if i < steps {
            assert!(e < result_at(&done, &format!("a{}", i + 1)));
        }
        expected.push_str(&format!("edited{i}\n"));
    }
    assert_eq!(
        std::fs::read_to_string(sb.path("chain.txt")).unwrap(),
        expected
    );
}

#[test]
fn a_refused_call_is_answered_at_its_turn() {
    let sb = Sandbox::new();
    // The Bash command is not read-only, so it runs alone; the calls after it, refused before
    // they could run, are still answered only after it.
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[json!({"type": "batch", "id": "b", "calls": [
            {"id": "slow", "name": "Bash", "input": {"command": "sleep 0.3; echo done > s.txt"}},
            {"id": "nope", "name": "Nope", "input": {}},
            {"id": "schema", "name": "Read", "input": {"file_path": 7}},
            {"id": "edit", "name": "Edit", "input": {"file_path": "s.txt", "old_string": "x", "new_string": "y"}}
        ]})],
    );
    assert_eq!(done.result("nope")["outcome"], "unavailable");
    assert_eq!(done.result("schema")["outcome"], "schema_error");
    // Validated at its turn: the file exists by then, but was never read.
    assert_eq!(done.result("edit")["outcome"], "validation_error");
    assert!(content(&done, "edit").contains("has not been read"));
    let slow = result_at(&done, "slow");
    for id in ["nope", "schema", "edit"] {
        assert!(slow < result_at(&done, id), "{id} answered before slow");
    }
}

#[test]
fn a_permission_decision_sees_a_link_made_by_an_earlier_call() {
    let sb = Sandbox::new();
    let secret = sb.dir.path().join("secret.txt");
    std::fs::write(&secret, "top secret\n").unwrap();
    // The link is inside the workspace but points outside it: reading it needs approval, and
    // nobody can approve in `run`-like mode. Decided before the link existed, the Read would
    // have been allowed as a workspace read.
    let done = run_lines(
        &sb,
        &[
            "--allowed-tools",
            "Bash(ln *)",
            "--permission-prompt",
            "none",
        ],
        &[json!({"type": "batch", "id": "b", "calls": [
            {"id": "ln", "name": "Bash", "input": {"command": format!("ln -s {} link.txt", secret.display())}},
            {"id": "r", "name": "Read", "input": {"file_path": "link.txt"}}
        ]})],
    );
    assert_success(&done, &["ln"]);
    assert_eq!(
        done.result("r")["outcome"],
        "denied",
        "{}",
        done.result("r")
    );
    assert!(!content(&done, "r").contains("top secret"));
}

#[test]
fn a_pretooluse_hook_runs_at_its_turn_and_sees_an_earlier_write() {
    let sb = Sandbox::new();
    // The hook blocks the call unless the file the Write makes is there, and records what it saw.
    let settings = sb.write(
        "s.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": "cat made.txt > hook-saw.txt || { echo 'made.txt is missing' >&2; exit 2; }"}]}]}})
        .to_string(),
    );
    let done = run_lines(
        &sb,
        &[
            "--permission-mode",
            "bypassPermissions",
            "--settings",
            settings.to_str().unwrap(),
        ],
        &[json!({"type": "batch", "id": "b", "calls": [
            {"id": "w", "name": "Write", "input": {"file_path": "made.txt", "content": "from the write\n"}},
            {"id": "sh", "name": "Bash", "input": {"command": "echo ran"}}
        ]})],
    );
    assert_success(&done, &["w", "sh"]);
    assert_eq!(
        std::fs::read_to_string(sb.path("hook-saw.txt")).unwrap(),
        "from the write\n"
    );
    // The hook ran after the Write had finished: its events come after the Write's result.
    let hook_start = done
        .messages
        .iter()
        .position(|v| v["event"] == "hook_start" && v["tool_use_id"] == "sh")
        .expect("the hook ran");
    assert!(result_at(&done, "w") < hook_start);
}

#[test]
fn a_task_id_is_checked_at_its_turn() {
    let sb = Sandbox::new();
    // The command is not read-only, so the TaskOutput after it waits for it; the task id it
    // names exists only once the command has started its task.
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[json!({"type": "batch", "id": "b", "calls": [
            {"id": "bg", "name": "Bash", "input": {"command": "touch started; echo from-the-task", "run_in_background": true}},
            {"id": "out", "name": "TaskOutput", "input": {"task_id": "bg-1", "block": true, "timeout": 20000}},
            {"id": "stop", "name": "TaskStop", "input": {"task_id": "bg-1"}}
        ]})],
    );
    assert_success(&done, &["bg", "out", "stop"]);
    assert!(
        content(&done, "bg").contains("bg-1"),
        "{}",
        content(&done, "bg")
    );
    assert!(
        content(&done, "out").contains("from-the-task"),
        "{}",
        content(&done, "out")
    );
    // TaskStop found the task too (ended by then).
    assert!(
        content(&done, "stop").contains("Task bg-1 had already ended"),
        "{}",
        content(&done, "stop")
    );
}

#[test]
fn a_permission_decision_sees_a_path_made_by_an_earlier_write() {
    let sb = Sandbox::new();
    // In the default mode an Edit rule allows Writes, except to what makes or configures a git
    // directory: `config` beside a `HEAD` is one, `config` alone is not. Nobody can approve, so
    // what would need approval is denied.
    let args = ["--allowed-tools", "Edit", "--permission-prompt", "none"];
    let done = run_lines(
        &sb,
        &args,
        &[json!({"type": "batch", "id": "b", "calls": [
            {"id": "head", "name": "Write", "input": {"file_path": "repo/HEAD", "content": "ref: refs/heads/main\n"}},
            {"id": "config", "name": "Write", "input": {"file_path": "repo/config", "content": "[core]\n\tfsmonitor = touch pwned\n"}},
            {"id": "alone", "name": "Write", "input": {"file_path": "other/config", "content": "[core]\n"}}
        ]})],
    );
    assert_success(&done, &["head", "alone"]);
    assert_eq!(
        done.result("config")["outcome"],
        "denied",
        "{}",
        done.result("config")
    );
    assert!(
        content(&done, "config").contains("protected paths"),
        "{}",
        content(&done, "config")
    );
    assert!(!sb.path("repo/config").exists());
    assert!(sb.path("other/config").exists());
}
