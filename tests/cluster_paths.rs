//! Worker nodes: a call's paths are those of the worker it runs on. A relative path resolves
//! against the worker's folder, the permission decision (on the coordinator) is about that
//! path, and symlinks are resolved by the worker, where the file is.

mod cluster_support;
mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use cluster_support::*;
use serde_json::json;
use support::*;

/// One worker `w1` (its folder resolved) and a coordinator with `args`.
fn one_worker(sb: &Sandbox, args: &[&str]) -> (Worker, PathBuf, Server) {
    let cookie = cookie(sb, "cookie", "s3cret");
    let mut workers = workers(sb, &cookie, 1);
    let root = std::fs::canonicalize(&workers[0].cwd).unwrap();
    let server = coordinator(sb, &cookie, &workers, args);
    (workers.remove(0), root, server)
}

/// A deny rule on `dir`'s files, by absolute path (`//` anchors a rule at the root).
fn deny_edits_under(dir: &Path) -> String {
    format!("Edit(/{}/**)", dir.display())
}

#[test]
fn a_relative_write_lands_in_the_workers_folder_which_is_its_workspace() {
    let sb = Sandbox::new();
    // acceptEdits allows edits inside the workspace only: the worker's folder is the call's.
    let (_w, root, mut server) = one_worker(&sb, &["--permission-mode", "acceptEdits"]);
    server.tool_use(
        "w",
        "Write",
        json!({"file_path": "x.txt", "content": "on w1\n"}),
    );
    let w = server.result("w");
    assert_eq!(
        (w["outcome"].as_str(), w["node"].as_str()),
        (Some("success"), Some("w1")),
        "{w}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("x.txt")).unwrap(),
        "on w1\n"
    );
    assert!(
        !sb.cwd.join("x.txt").exists(),
        "written into the coordinator's folder"
    );
    server.tool_use("r", "Read", json!({"file_path": "./x.txt"}));
    let r = server.result("r");
    assert_eq!(r["outcome"], "success", "{r}");
    assert!(r["content"].as_str().unwrap().contains("on w1"), "{r}");
    // The coordinator's own folder is not the workspace of a call on the worker: asked.
    let outside = sb.cwd.join("y.txt").display().to_string();
    server.tool_use(
        "o",
        "Write",
        json!({"file_path": outside, "content": "no\n"}),
    );
    let ask = server.wait_for("the ask for o", Duration::from_secs(30), |v| {
        v["type"] == "permission_request" && v["tool_use_id"] == "o"
    });
    assert!(
        ask["reason"]
            .as_str()
            .unwrap()
            .contains("no rule allows it"),
        "{ask}"
    );
    server.finish();
    assert!(!sb.cwd.join("y.txt").exists());
}

#[test]
fn a_deny_rule_on_a_workers_path_holds_for_a_relative_path() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let workers = workers(&sb, &cookie, 1);
    let root = std::fs::canonicalize(&workers[0].cwd).unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    let deny = deny_edits_under(&root.join("secret"));
    let args = [
        "--permission-mode",
        "bypassPermissions",
        "--disallowed-tools",
        &deny,
    ];
    let mut server = coordinator(&sb, &cookie, &workers, &args);
    for (id, path) in [("a", "secret/a.txt"), ("b", "./sub/../secret/b.txt")] {
        server.tool_use(id, "Write", json!({"file_path": path, "content": "x\n"}));
        let r = server.result(id);
        assert_eq!(r["outcome"], "denied", "{path}: {r}");
        assert!(r.get("node").is_none(), "a denied call ran nowhere: {r}");
    }
    // Beside the denied folder the same relative form is allowed, and runs on the worker.
    server.tool_use(
        "ok",
        "Write",
        json!({"file_path": "open.txt", "content": "x\n"}),
    );
    assert_eq!(server.result("ok")["outcome"], "success");
    server.finish();
    assert!(!root.join("secret/a.txt").exists() && !root.join("secret/b.txt").exists());
    assert!(root.join("open.txt").exists());
}

#[test]
fn a_symlink_on_the_worker_into_a_denied_folder_is_denied() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let workers = workers(&sb, &cookie, 1);
    let root = std::fs::canonicalize(&workers[0].cwd).unwrap();
    let vault = std::fs::canonicalize(sb.dir.path()).unwrap().join("vault");
    std::fs::create_dir_all(&vault).unwrap();
    std::fs::write(vault.join("key"), "k\n").unwrap();
    // The link is in the worker's folder only: the coordinator's has no `link`.
    std::os::unix::fs::symlink(&vault, root.join("link")).unwrap();
    let deny_read = format!("Read(/{}/**)", vault.display());
    let deny_edit = deny_edits_under(&vault);
    let args = [
        "--permission-mode",
        "bypassPermissions",
        "--disallowed-tools",
        &deny_edit,
        "--disallowed-tools",
        &deny_read,
    ];
    let mut server = coordinator(&sb, &cookie, &workers, &args);
    server.tool_use(
        "w",
        "Write",
        json!({"file_path": "link/new.txt", "content": "x\n"}),
    );
    server.tool_use("r", "Read", json!({"file_path": "link/key"}));
    for id in ["w", "r"] {
        let r = server.result(id);
        assert_eq!(r["outcome"], "denied", "{id}: {r}");
    }
    server.finish();
    assert!(
        !vault.join("new.txt").exists(),
        "written through the worker's symlink"
    );
}

/// The coordinator keeps what a worker said a path resolves to and decides the next call on
/// that path without asking again; the worker checks it before it runs the call. A symlink
/// swapped in between must not let the call past a deny rule, and a harmless swap must not fail
/// the call.
#[test]
fn a_symlink_swapped_on_the_worker_after_an_allowed_call_is_judged_afresh() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let workers = workers(&sb, &cookie, 1);
    let root = std::fs::canonicalize(&workers[0].cwd).unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(root.join("plain.txt"), "plain words\n").unwrap();
    std::fs::write(root.join("other.txt"), "other words\n").unwrap();
    std::fs::write(root.join("secret/key.txt"), "SECRET KEY\n").unwrap();
    let link = root.join("link.txt");
    std::os::unix::fs::symlink(root.join("plain.txt"), &link).unwrap();
    let deny = format!("Read(/{}/secret/**)", root.display());
    let mut server = coordinator(&sb, &cookie, &workers, &["--disallowed-tools", &deny]);
    let read = |server: &mut Server, id: &str| {
        server.tool_use(id, "Read", json!({"file_path": "link.txt"}));
        server.result(id)
    };
    let first = read(&mut server, "first");
    assert_eq!(first["outcome"], "success", "{first}");
    assert!(first["content"].as_str().unwrap().contains("plain words"));
    // Into the denied folder: decided afresh, denied, nothing of the file shown.
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(root.join("secret/key.txt"), &link).unwrap();
    let swapped = read(&mut server, "swapped");
    assert_eq!(swapped["outcome"], "denied", "{swapped}");
    assert!(!swapped.to_string().contains("SECRET KEY"), "{swapped}");
    // To another allowed file: the call runs, on the new target.
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(root.join("other.txt"), &link).unwrap();
    let harmless = read(&mut server, "harmless");
    assert_eq!(harmless["outcome"], "success", "{harmless}");
    assert!(
        harmless["content"]
            .as_str()
            .unwrap()
            .contains("other words"),
        "{harmless}"
    );
    server.finish();
}

#[test]
fn a_bash_command_on_a_worker_is_judged_against_the_workers_files() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let workers = workers(&sb, &cookie, 1);
    let root = std::fs::canonicalize(&workers[0].cwd).unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(root.join("secret/s.txt"), "top secret\n").unwrap();
    std::fs::write(root.join("open.txt"), "open on w1\n").unwrap();
    let vault = std::fs::canonicalize(sb.dir.path()).unwrap().join("vault");
    std::fs::create_dir_all(&vault).unwrap();
    std::fs::write(vault.join("key"), "vault key\n").unwrap();
    // Only the worker's folder has `secret/` and `link`: the coordinator's has neither.
    std::os::unix::fs::symlink(&vault, root.join("link")).unwrap();
    let deny_secret = format!("Read(/{}/**)", root.join("secret").display());
    let deny_vault = format!("Read(/{}/**)", vault.display());
    let args = [
        "--permission-mode",
        "bypassPermissions",
        "--disallowed-tools",
        &deny_secret,
        "--disallowed-tools",
        &deny_vault,
    ];
    let mut server = coordinator(&sb, &cookie, &workers, &args);
    let denied = [
        ("rel", "cat secret/s.txt"),
        ("dots", "cat ./x/../secret/s.txt"),
        ("cd", "cd secret && cat s.txt"),
        ("link", "cat link/key"),
        ("redir", "wc -l < secret/s.txt"),
    ];
    for (id, command) in denied {
        server.tool_use(id, "Bash", json!({ "command": command }));
        let r = server.result(id);
        assert_eq!(r["outcome"], "denied", "{command}: {r}");
        assert!(
            !r.to_string().contains("top secret") && !r.to_string().contains("vault key"),
            "{command} read the file: {r}"
        );
    }
    server.tool_use("ok", "Bash", json!({"command": "cat open.txt"}));
    let r = server.result("ok");
    assert_eq!(
        (r["outcome"].as_str(), r["node"].as_str()),
        (Some("success"), Some("w1")),
        "{r}"
    );
    assert!(r.to_string().contains("open on w1"), "{r}");
    server.finish();
}

#[test]
fn a_read_only_bash_command_on_a_worker_is_allowed_only_inside_its_folder() {
    let sb = Sandbox::new();
    let (_w, root, mut server) = one_worker(&sb, &[]);
    std::fs::write(root.join("open.txt"), "open on w1\n").unwrap();
    let elsewhere = std::fs::canonicalize(sb.dir.path())
        .unwrap()
        .join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("e.txt"), "e\n").unwrap();
    // A link in the worker's folder that leads out of it.
    std::os::unix::fs::symlink(&elsewhere, root.join("out")).unwrap();
    // Inside the worker's folder, a read-only command needs no rule.
    server.tool_use("in", "Bash", json!({"command": "cat open.txt"}));
    let r = server.result("in");
    assert_eq!(r["outcome"], "success", "{r}");
    // Out of it through the worker's own symlink, or by a glob toolrt does not expand on a
    // worker: asked, never allowed by default.
    for (id, command) in [("out", "cat out/e.txt"), ("glob", "cat o*.txt")] {
        server.tool_use(id, "Bash", json!({ "command": command }));
        let ask = server.wait_for(&format!("the ask for {id}"), Duration::from_secs(30), |v| {
            v["type"] == "permission_request" && v["tool_use_id"] == id
        });
        assert_eq!(ask["tool_name"], "Bash", "{ask}");
    }
    server.finish();
}

#[test]
fn glob_and_grep_on_a_worker_leave_out_what_the_coordinators_read_deny_rules_cover() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let workers = workers(&sb, &cookie, 1);
    let root = std::fs::canonicalize(&workers[0].cwd).unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::fs::write(root.join("open.rs"), "needle\n").unwrap();
    std::fs::write(root.join("secret/key.rs"), "needle\n").unwrap();
    // A link in the open part of the folder into the denied one: judged where it points.
    std::os::unix::fs::symlink(root.join("secret/key.rs"), root.join("alias.rs")).unwrap();
    let deny = format!("Read(/{}/secret/**)", root.display());
    let args = ["--disallowed-tools", &deny];
    let mut server = coordinator(&sb, &cookie, &workers, &args);
    server.tool_use("g", "Glob", json!({"pattern": "**/*.rs"}));
    server.tool_use("r", "Grep", json!({"pattern": "needle"}));
    for id in ["g", "r"] {
        let r = server.result(id);
        assert_eq!(
            (r["outcome"].as_str(), r["node"].as_str()),
            (Some("success"), Some("w1")),
            "{r}"
        );
        let content = r["content"].as_str().unwrap();
        assert!(content.contains("open.rs"), "{id}: {content}");
        assert!(
            !content.contains("key.rs") && !content.contains("alias.rs"),
            "{id} shows a denied file: {content}"
        );
    }
    // Without the rule the worker's search sees all three (the rule, not the search, hid them).
    let mut open = coordinator(&sb, &cookie, &workers, &[]);
    open.tool_use("g", "Glob", json!({"pattern": "**/*.rs"}));
    let all = open.result("g");
    let content = all["content"].as_str().unwrap();
    for name in ["open.rs", "secret/key.rs", "alias.rs"] {
        assert!(content.contains(name), "{name}: {content}");
    }
    // The worker keeps what it built for each coordinator apart: the first one's rule still holds.
    server.tool_use("again", "Grep", json!({"pattern": "needle"}));
    let again = server.result("again");
    let content = again["content"].as_str().unwrap();
    assert!(
        content.contains("open.rs") && !content.contains("key.rs"),
        "{content}"
    );
}
