//! The Bash sandbox's read-only mounts through `toolrt serve` (docs/SEMANTICS.md §11): a
//! sandboxed command cannot change the mode, times or extended attributes of a file outside the
//! writable roots (Landlock does not cover them; the read-only mounts do), and cannot create or
//! change, inside the workspace, what a later unsandboxed run loads: `.git`, `.claude`,
//! `.mcp.json` and the shell's start-up files. Each test checks the file system afterwards.

mod support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Finished, Server, Stderr, command};

const WAIT: Duration = Duration::from_secs(90);

/// Runs one session in `root/proj` with the sandbox on; every permission request denied.
fn run(root: &std::path::Path, calls: &[(&str, &str)]) -> Finished {
    let (cwd, home) = (root.join("proj"), root.join("home"));
    let file = root.join("settings.json");
    std::fs::write(&file, json!({"sandbox": {"enabled": true}}).to_string()).unwrap();
    let mut cmd = command();
    cmd.args(["serve", "--cwd"])
        .arg(&cwd)
        .arg("--output-dir")
        .arg(root.join("out"))
        .arg("--settings")
        .arg(&file)
        .current_dir(&cwd)
        .env("HOME", &home);
    let mut server = Server::spawn(cmd, Stderr::Capture);
    for (id, command) in calls {
        server.tool_use(id, "Bash", json!({ "command": command }));
        loop {
            let v = server.recv(WAIT).expect("a message before the timeout");
            if v["type"] == "permission_request" {
                server.send(json!({"type": "permission_response", "request_id": v["request_id"], "behavior": "deny"}));
            }
            if v["type"] == "tool_result" && v["tool_use_id"] == *id {
                break;
            }
        }
    }
    server.finish()
}

fn fixture() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    for d in ["proj", "home", "out"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    (tmp, root)
}

fn outcome(run: &Finished, id: &str) -> String {
    let r: &Value = run.result(id);
    format!("{} {}", r["outcome"], r["content"])
}

fn success(run: &Finished, id: &str) -> bool {
    run.result(id)["outcome"] == "success"
}

#[test]
fn attributes_outside_the_writable_roots_cannot_change() {
    let (_tmp, root) = fixture();
    let outside = root.join("outside.txt");
    std::fs::write(&outside, "x").unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::metadata(&outside).unwrap();
    let o = outside.display();
    let run = run(
        &root,
        &[
            ("chmod", &format!("chmod 4777 {o}")),
            ("touch", &format!("touch -d 2001-01-01 {o}")),
            (
                "xattr",
                &format!("python3 -c \"import os; os.setxattr('{o}','user.pwn',b'1')\""),
            ),
            (
                "inside",
                "printf 'echo ran\\n' > s.sh && chmod +x s.sh && ./s.sh && touch -d 2001-01-01 s.sh \
                 && echo x > /dev/null",
            ),
        ],
    );
    for id in ["chmod", "touch", "xattr"] {
        assert!(!success(&run, id), "{id}: {}", outcome(&run, id));
    }
    let after = std::fs::metadata(&outside).unwrap();
    assert_eq!(after.mode() & 0o7777, 0o644, "the mode changed");
    assert_eq!(after.mtime(), before.mtime(), "the times changed");
    let xattr = std::process::Command::new("python3")
        .args(["-c", "import os,sys; print(os.listxattr(sys.argv[1]))"])
        .arg(&outside)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&xattr.stdout).trim(), "[]");
    assert!(success(&run, "inside"), "{}", outcome(&run, "inside"));
    assert!(outcome(&run, "inside").contains("ran"));
    let script = std::fs::metadata(root.join("proj/s.sh")).unwrap();
    assert_eq!(script.mode() & 0o111, 0o111, "chmod +x inside works");
}

#[test]
fn what_later_runs_unsandboxed_cannot_be_planted() {
    let (_tmp, root) = fixture();
    let proj = root.join("proj");
    for d in [".git/hooks", "sub"] {
        std::fs::create_dir_all(proj.join(d)).unwrap();
    }
    std::fs::write(proj.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(proj.join(".bashrc"), "# mine\n").unwrap();
    let run = run(
        &root,
        &[
            ("settings", "echo '{}' > .claude/settings.json"),
            ("local", "echo '{}' > .claude/settings.local.json"),
            ("claude_mv", "mv .claude gone"),
            ("mcp", "echo '{\"mcpServers\":{\"x\":{}}}' > .mcp.json"),
            ("mcp_rm", "rm -f .mcp.json"),
            (
                "git_config",
                "printf '[core]\\nfsmonitor = touch /tmp/x\\n' >> .git/config",
            ),
            ("hook", "echo 'touch pwned' > .git/hooks/pre-commit"),
            ("git_mv", "mv .git .git-old"),
            ("bashrc", "echo 'touch pwned' >> .bashrc"),
            ("envrc", "echo 'touch pwned' > .envrc"),
            ("free", "echo ok > sub/free.txt && cat sub/free.txt"),
        ],
    );
    for id in [
        "settings",
        "local",
        "claude_mv",
        "mcp",
        "mcp_rm",
        "git_config",
        "hook",
        "git_mv",
        "bashrc",
    ] {
        assert!(!success(&run, id), "{id}: {}", outcome(&run, id));
    }
    assert!(success(&run, "free"), "{}", outcome(&run, "free"));
    // The placeholders toolrt made stay as made.
    assert!(proj.join(".claude").is_dir());
    assert_eq!(std::fs::read_dir(proj.join(".claude")).unwrap().count(), 0);
    let mcp = std::fs::read_to_string(proj.join(".mcp.json")).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&mcp).unwrap(),
        json!({"mcpServers": {}})
    );
    assert_eq!(
        std::fs::read_to_string(proj.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!proj.join(".git/hooks/pre-commit").exists());
    assert!(!proj.join(".git-old").exists() && !proj.join("gone").exists());
    assert_eq!(
        std::fs::read_to_string(proj.join(".bashrc")).unwrap(),
        "# mine\n"
    );
}
