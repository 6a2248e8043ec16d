//! Attempts to get around deny rules, protected paths and critical `rm` targets through
//! `toolrt serve`. Every attempt must come back `denied` (an ask is answered with deny), and the
//! file system is checked afterwards to prove nothing ran: each attempt would delete its own
//! `victim_*` file or create its own `made_*` file.

#[path = "common/attempts.rs"]
mod attempts;
mod support;

#[path = "common/serve.rs"]
mod serve;

use attempts::*;
use serde_json::json;
use serve::*;

fn victim(i: usize) -> String {
    format!("victim_{i}")
}
fn marker(i: usize) -> String {
    format!("made_{i}")
}

fn assert_all_denied(run: &Run, ids: &[(String, String)]) {
    let mut bad = Vec::new();
    for (id, what) in ids {
        let outcome = run.outcome(id);
        if outcome != "denied" {
            bad.push(format!(
                "{id} ({what:?}): outcome {outcome}: {}",
                run.content(id)
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "attempts that were not denied:\n{}\nstderr:\n{}",
        bad.join("\n"),
        run.stderr
    );
}

#[test]
fn bash_bypass_attempts_in_default_mode_are_denied_and_nothing_runs() {
    let fx = Fixture::new();
    fx.write(".env", "SECRET=hunter2\n");
    let s = fx.settings(json!({
        "deny": ["Bash(rm *)", "Bash(touch *)", "Read(.env)"],
    }));
    let mut calls = Vec::new();
    let mut ids = Vec::new();
    for (i, template) in DEFAULT_MODE_ATTEMPTS.iter().enumerate() {
        fx.write(&victim(i), "keep\n");
        let cmd = template
            .replace("{v}", &victim(i))
            .replace("{m}", &marker(i));
        let id = format!("d{i}");
        calls.push(bash(&id, &cmd));
        ids.push((id, cmd));
    }
    // Secrets stay secret, whatever reader or path spelling is used.
    for (j, cmd) in SECRET_READ_ATTEMPTS.iter().enumerate() {
        let id = format!("r{j}");
        calls.push(bash(&id, cmd));
        ids.push((id, cmd.to_string()));
    }
    let run = fx.run(&s, &[], &calls, "deny");
    assert_all_denied(&run, &ids);
    for (i, _) in DEFAULT_MODE_ATTEMPTS.iter().enumerate() {
        assert!(
            fx.path(&victim(i)).exists(),
            "attempt {i} deleted its victim: {:?}",
            DEFAULT_MODE_ATTEMPTS[i]
        );
        assert!(
            !fx.path(&marker(i)).exists(),
            "attempt {i} created its marker: {:?}",
            DEFAULT_MODE_ATTEMPTS[i]
        );
    }
    for (id, _) in ids.iter().filter(|(id, _)| id.starts_with('r')) {
        assert!(
            !run.content(id).contains("hunter2"),
            "{id} leaked the secret"
        );
    }
}

#[test]
fn protected_path_attempts_in_accept_edits_are_denied_and_nothing_is_written() {
    let fx = Fixture::new();
    for d in [".git", ".vscode", ".claude", ".husky", ".idea", "sub"] {
        std::fs::create_dir_all(fx.path(d)).unwrap();
    }
    fx.write(".git/config", "[core]\n");
    fx.write(".bashrc", "orig\n");
    fx.write("victim_keep", "keep\n");
    std::os::unix::fs::symlink(fx.path(".git"), fx.path("gitlink")).unwrap();
    std::os::unix::fs::symlink(fx.path(".git/config"), fx.path("cfglink")).unwrap();
    std::os::unix::fs::symlink(fx.path(".bashrc"), fx.path("rclink")).unwrap();
    std::os::unix::fs::symlink(fx.path(".git/made_dangling"), fx.path("danglink")).unwrap();
    let s = fx.settings(json!({ "allow": ["Edit", "Write", "Bash(tee *)", "Bash(cd *)"] }));

    let mut calls = Vec::new();
    let mut ids = Vec::new();
    for (i, template) in ACCEPT_EDITS_ATTEMPTS.iter().enumerate() {
        let cmd = template.replace("{m}", &marker(i));
        let id = format!("a{i}");
        calls.push(bash(&id, &cmd));
        ids.push((id, cmd));
    }
    for (k, cmd) in PROTECTED_EXTRA_BASH.iter().enumerate() {
        let id = format!("x{k}");
        calls.push(bash(&id, cmd));
        ids.push((id, cmd.to_string()));
    }
    for (k, template) in PROTECTED_WRITE_PATHS.iter().enumerate() {
        let path = template
            .replace("{cwd}", &fx.cwd.display().to_string())
            .replace("{home}", &fx.home.display().to_string());
        let id = format!("w{k}");
        let input = json!({ "file_path": path, "content": "x" });
        ids.push((id.clone(), input.to_string()));
        calls.push(call(&id, "Write", input));
    }
    let run = fx.run(&s, &["--permission-mode", "acceptEdits"], &calls, "deny");
    // A Write over an existing file that was never read may be refused earlier, as a
    // validation_error (docs/TOOLS.md, read-before-edit); that too proves nothing was written.
    let existing: Vec<String> = ids
        .iter()
        .filter(|(id, input)| {
            id.starts_with('w')
                && serde_json::from_str::<serde_json::Value>(input)
                    .ok()
                    .and_then(|v| v["file_path"].as_str().map(String::from))
                    .is_some_and(|p| std::fs::symlink_metadata(p).is_ok())
        })
        .map(|(id, _)| id.clone())
        .collect();
    let strict: Vec<(String, String)> = ids
        .iter()
        .filter(|(id, _)| !existing.contains(id))
        .cloned()
        .collect();
    assert_all_denied(&run, &strict);
    for id in &existing {
        let o = run.outcome(id);
        assert!(o == "denied" || o == "validation_error", "{id}: {o}");
    }
    for (i, _) in ACCEPT_EDITS_ATTEMPTS.iter().enumerate() {
        for dir in ["", ".git/", ".vscode/", ".claude/", ".husky/", ".idea/"] {
            assert!(
                !fx.path(&format!("{dir}{}", marker(i))).exists(),
                "attempt {i} wrote {dir}{}",
                marker(i)
            );
        }
        assert!(
            !fx.home.join(marker(i)).exists() && !fx.root.join(marker(i)).exists(),
            "attempt {i} wrote outside"
        );
    }
    assert_eq!(
        std::fs::read_to_string(fx.path(".git/config")).unwrap(),
        "[core]\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.path(".bashrc")).unwrap(),
        "orig\n"
    );
    assert!(fx.path("victim_keep").exists());
    for rel in [
        ".git/made_w0",
        ".vscode/made_w2",
        ".git/made_w3",
        ".git/made_w4",
        ".mcp.json",
        ".gitmodules",
        ".cargo",
        ".devcontainer",
    ] {
        assert!(!fx.path(rel).exists(), "{rel} was written");
    }
    assert!(!fx.path(".claude/settings.json").exists());
    assert!(
        !fx.path(".git/made_dangling").exists(),
        "written through a dangling symlink"
    );
    assert!(!fx.home.join(".zshrc").exists() && !fx.home.join(".profile").exists());
}

#[test]
fn critical_rm_asks_even_in_bypass_and_deny_rules_still_hold() {
    let fx = Fixture::new();
    fx.write("keep.txt", "keep\n");
    fx.write("sub/keep.txt", "keep\n");
    std::fs::write(fx.home.join("home_keep"), "keep\n").unwrap();
    let s = fx.settings(json!({ "deny": ["Bash(touch *)", "Edit(locked.txt)"] }));
    let mut calls = Vec::new();
    let mut ids = Vec::new();
    for (i, cmd) in BYPASS_MODE_ATTEMPTS.iter().enumerate() {
        let id = format!("b{i}");
        calls.push(bash(&id, cmd));
        ids.push((id, cmd.to_string()));
    }
    let run = fx.run(
        &s,
        &["--permission-mode", "bypassPermissions"],
        &calls,
        "deny",
    );
    assert_all_denied(&run, &ids);
    assert!(fx.path("keep.txt").exists() && fx.path("sub/keep.txt").exists());
    assert!(fx.home.join("home_keep").exists());
    assert!(!fx.path("made_b0").exists() && !fx.path("made_b1").exists());
    assert!(!fx.path("locked.txt").exists());
}
