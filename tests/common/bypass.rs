//! The project, rules and checks every bypass class starts from (`tests/permission_bypass_classes.rs`).
#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::process::Command;

use serde_json::json;

use super::serve::*;

pub const ALL: &[&str] = &[
    "default",
    "acceptEdits",
    "plan",
    "dontAsk",
    "bypassPermissions",
];

pub fn deny_rules() -> serde_json::Value {
    json!({
        "deny": [
            "Bash(rm *)", "Bash(touch *)", "Bash(curl *)", "Bash(git tag *)", "Read(.env)",
            "WebFetch(domain:127.0.0.1)"
        ]
    })
}

pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.email=t@t", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// The project every class starts from.
pub fn project() -> Fixture {
    let fx = Fixture::new();
    fx.write(".env", "SECRET=hunter2\n");
    fx.write("notes.txt", "alpha\nbeta\n");
    fx.write("notes2.txt", "alpha\ngamma\n");
    std::fs::create_dir_all(fx.path("sub")).unwrap();
    std::fs::create_dir_all(fx.root.join("outside")).unwrap();
    std::fs::write(fx.root.join("outside/secret.txt"), "TOPSECRET\n").unwrap();
    fx
}

/// A git repository in the project, with `.env` committed (so history holds the secret).
pub fn repo(fx: &Fixture) {
    git(&fx.cwd, &["init", "-q", "-b", "main"]);
    git(&fx.cwd, &["add", "-A"]);
    git(&fx.cwd, &["commit", "-qm", "init"]);
}

/// Sends every template in each mode and checks that nothing happened. `{m}` is the attempt's
/// marker name, `{v}` its victim (created before the run), `{root}` and `{cwd}` absolute paths.
pub fn must_hold(fx_for: &dyn Fn() -> Fixture, templates: &[&str], modes: &[&str]) {
    must_hold_under(fx_for, deny_rules(), templates, modes);
}

/// [`must_hold`] under the permission rules `rules`.
pub fn must_hold_under(
    fx_for: &dyn Fn() -> Fixture,
    rules: serde_json::Value,
    templates: &[&str],
    modes: &[&str],
) {
    for mode in modes {
        let fx = fx_for();
        let s = fx.settings(rules.clone());
        let mut calls = Vec::new();
        let mut ids = Vec::new();
        for (i, t) in templates.iter().enumerate() {
            let victim = format!("victim_{i}");
            fx.write(&victim, "keep\n");
            let cmd = t
                .replace("{m}", &format!("made_{i}"))
                .replace("{v}", &victim)
                .replace("{root}", &fx.root.display().to_string())
                .replace("{cwd}", &fx.cwd.display().to_string());
            let id = format!("c{i}");
            calls.push(bash(&id, &cmd));
            ids.push((id, cmd));
        }
        let run = fx.run(&s, &["--permission-mode", mode], &calls, "deny");
        let mut bad = Vec::new();
        for (i, (id, cmd)) in ids.iter().enumerate() {
            let outcome = run.outcome(id);
            if outcome != "denied" {
                bad.push(format!("{mode}: {cmd:?} -> {outcome}: {}", run.content(id)));
            }
            let marker = format!("made_{i}");
            for dir in [
                &fx.cwd,
                &fx.root,
                &fx.home,
                &fx.cwd.join("sub"),
                &fx.cwd.join(".git"),
            ] {
                if dir.join(&marker).exists() {
                    bad.push(format!(
                        "{mode}: {cmd:?} created {}",
                        dir.join(&marker).display()
                    ));
                }
            }
            let victim = format!("victim_{i}");
            if !fx.path(&victim).exists() {
                bad.push(format!("{mode}: {cmd:?} deleted or moved its victim"));
            }
            for dir in [&fx.root, &fx.home, &fx.cwd.join(".git")] {
                if dir.join(&victim).exists() {
                    bad.push(format!(
                        "{mode}: {cmd:?} copied its victim to {}",
                        dir.display()
                    ));
                }
            }
        }
        // Permission requests quote the command; results and events must not hold a secret.
        for line in run
            .lines
            .iter()
            .filter(|l| l["type"] != "permission_request")
        {
            let text = line.to_string();
            if text.contains("hunter2") || text.contains("TOPSECRET") {
                bad.push(format!("{mode}: a secret was printed: {text}"));
            }
        }
        assert!(bad.is_empty(), "{}\nstderr: {}", bad.join("\n"), run.stderr);
    }
}
