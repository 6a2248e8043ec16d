//! Permission rules through `toolrt serve`, one fixture per rule family and mode (docs/SEMANTICS.md
//! §1–3): what runs, what is denied, what asks (every ask answered with deny), and proof on the
//! file system that nothing denied ran.

mod support;

#[path = "common/serve.rs"]
mod serve;

use serde_json::json;
use serve::*;

#[test]
fn bash_allow_ask_deny_and_read_only_set() {
    let fx = Fixture::new();
    fx.write("notes.txt", "hello\n");
    let s = fx.settings(json!({
        "allow": ["Bash(touch allowed*)"],
        "ask": ["Bash(mkdir *)"],
        "deny": ["Bash(touch denied*)"],
    }));
    let run = fx.run(
        &s,
        &[],
        &[
            bash("allow", "touch allowed1"),
            bash("deny", "touch denied1"),
            bash("deny_compound", "echo hi && touch denied2"),
            bash("ask", "mkdir asked"),
            bash("readonly", "ls && pwd && cat notes.txt | wc -l"),
            bash("norule", "cp notes.txt copy.txt"),
            bash("unparseable", "echo 'unterminated"),
        ],
        "deny",
    );
    assert_eq!(run.outcome("allow"), "success", "{}", run.content("allow"));
    assert!(fx.path("allowed1").exists());
    for id in ["deny", "deny_compound"] {
        assert_eq!(run.outcome(id), "denied");
        assert!(!run.asked(id), "a deny rule does not ask");
        let c = run.content(id);
        assert!(c.contains("Bash(touch denied*)"), "names the rule: {c}");
        assert!(c.contains("settings.json"), "names the file: {c}");
        assert!(
            !c.contains("denied1") && !c.contains("denied2"),
            "never echoes the command: {c}"
        );
    }
    assert!(!fx.path("denied1").exists() && !fx.path("denied2").exists());
    assert!(run.asked("ask"));
    assert_eq!(run.outcome("ask"), "denied");
    assert!(!fx.path("asked").exists());
    assert_eq!(run.outcome("readonly"), "success");
    assert!(!run.asked("readonly"), "the read-only set needs no rule");
    assert!(run.asked("norule"));
    assert_eq!(run.outcome("norule"), "denied");
    assert!(!fx.path("copy.txt").exists());
    assert!(
        run.asked("unparseable"),
        "unparseable is never auto-allowed"
    );
    assert_eq!(run.outcome("unparseable"), "denied");
}

#[test]
fn bash_specifier_forms() {
    let fx = Fixture::new();
    let s = fx.settings(json!({
        "allow": ["Bash(touch exact)", "Bash(touch pre *)", "Bash(touch colon:*)", "Bash(touch mid * end)"],
    }));
    let run = fx.run(
        &s,
        &[],
        &[
            bash("exact", "touch exact"),
            bash("exact_more", "touch exact more1"),
            bash("space_star", "touch pre a1"),
            bash("colon", "touch colon b1"),
            bash("colon_glued", "touch colon:unit"),
            bash("mid", "touch mid x1 end"),
            bash("wrapped", "timeout 10 touch pre c1"),
            bash("unsafe_env", "LD_PRELOAD=x touch pre d1"),
            bash("safe_env", "LANG=C touch pre e1"),
        ],
        "deny",
    );
    for (id, file) in [
        ("exact", "exact"),
        ("space_star", "a1"),
        ("colon", "b1"),
        ("mid", "x1"),
        ("wrapped", "c1"),
        ("safe_env", "e1"),
    ] {
        assert_eq!(run.outcome(id), "success", "{id}: {}", run.content(id));
        assert!(fx.path(file).exists(), "{id}");
    }
    for (id, file) in [
        ("exact_more", "more1"),
        ("colon_glued", "colon:unit"),
        ("unsafe_env", "d1"),
    ] {
        assert_eq!(run.outcome(id), "denied", "{id}");
        assert!(run.asked(id), "{id}");
        assert!(!fx.path(file).exists(), "{id}");
    }
}

#[test]
fn path_rules_read_edit_and_workspace() {
    let fx = Fixture::new();
    fx.write(".env", "SECRET=hunter2\n");
    fx.write("src/lib.rs", "pub fn a() {}\n");
    fx.write("README.md", "readme\n");
    let outside = fx.root.join("outside.txt");
    std::fs::write(&outside, "outside\n").unwrap();
    let s = fx.settings(json!({
        "allow": ["Edit(src/**)"],
        "deny": ["Read(.env)"],
    }));
    let p = |r: &str| fx.path(r).display().to_string();
    let run = fx.run(
        &s,
        &[],
        &[
            call("read_ws", "Read", json!({"file_path": p("README.md")})),
            call("read_env", "Read", json!({"file_path": p(".env")})),
            call("read_env_rel", "Read", json!({"file_path": ".env"})),
            call(
                "read_outside",
                "Read",
                json!({"file_path": outside.display().to_string()}),
            ),
            call("cat_env", "Bash", json!({"command": "cat .env"})),
            call(
                "write_src",
                "Write",
                json!({"file_path": p("src/new.rs"), "content": "x"}),
            ),
            call(
                "write_root",
                "Write",
                json!({"file_path": p("new.txt"), "content": "x"}),
            ),
            call(
                "write_env",
                "Write",
                json!({"file_path": p("sub/.env"), "content": "x"}),
            ),
            call("grep_ws", "Grep", json!({"pattern": "readme"})),
        ],
        "deny",
    );
    assert_eq!(run.outcome("read_ws"), "success");
    assert!(!run.asked("read_ws"));
    for id in ["read_env", "read_env_rel", "cat_env"] {
        assert_eq!(run.outcome(id), "denied", "{id}");
        assert!(
            !run.content(id).contains("hunter2"),
            "{id} leaked the secret"
        );
    }
    assert!(run.asked("read_outside"), "reads outside the workspace ask");
    assert_eq!(run.outcome("read_outside"), "denied");
    assert_eq!(
        run.outcome("write_src"),
        "success",
        "{}",
        run.content("write_src")
    );
    assert!(fx.path("src/new.rs").exists());
    assert!(run.asked("write_root"));
    assert!(!fx.path("new.txt").exists());
    assert_eq!(
        run.outcome("write_env"),
        "denied",
        "a Read deny blocks writes"
    );
    assert!(!fx.path("sub/.env").exists());
    assert_eq!(run.outcome("grep_ws"), "success");
    assert!(!run.content("grep_ws").contains("hunter2"));
}

#[test]
fn modes() {
    let fx = Fixture::new();
    fx.write("a.txt", "a\n");
    std::fs::create_dir_all(fx.path(".git")).unwrap();
    let s = fx.settings(json!({ "deny": ["Bash(touch never*)"] }));
    let p = |r: &str| fx.path(r).display().to_string();

    // acceptEdits: edits and file commands inside the workspace, never protected paths
    let run = fx.run(
        &s,
        &["--permission-mode", "acceptEdits"],
        &[
            call(
                "edit_ws",
                "Write",
                json!({"file_path": p("ae.txt"), "content": "x"}),
            ),
            bash("mkdir_ws", "mkdir -p ae_dir"),
            call(
                "git",
                "Write",
                json!({"file_path": p(".git/hooks/post-checkout"), "content": "x"}),
            ),
            bash("redirect_git", "echo x > .git/ae_marker"),
            bash("outside", "touch ../ae_outside"),
            bash("deny", "touch never1"),
        ],
        "deny",
    );
    assert_eq!(run.outcome("edit_ws"), "success");
    assert_eq!(run.outcome("mkdir_ws"), "success");
    assert!(fx.path("ae_dir").is_dir());
    for id in ["git", "redirect_git", "outside"] {
        assert!(run.asked(id), "{id}");
        assert_eq!(run.outcome(id), "denied", "{id}");
    }
    assert!(!fx.path(".git/hooks/post-checkout").exists() && !fx.path(".git/ae_marker").exists());
    assert!(!fx.root.join("ae_outside").exists());
    assert_eq!(run.outcome("deny"), "denied");

    // plan: reads run; anything else asks (checked against the reference CLI)
    let run = fx.run(
        &s,
        &["--permission-mode", "plan"],
        &[
            call("read", "Read", json!({"file_path": p("a.txt")})),
            bash("ls", "ls"),
            call(
                "write",
                "Write",
                json!({"file_path": p("plan.txt"), "content": "x"}),
            ),
            bash("touch", "touch plan2"),
        ],
        "deny",
    );
    assert_eq!(run.outcome("read"), "success");
    assert_eq!(run.outcome("ls"), "success");
    for id in ["write", "touch"] {
        assert_eq!(run.outcome(id), "denied", "{id}");
        assert!(run.asked(id), "plan asks before a change: {id}");
    }
    assert!(!fx.path("plan.txt").exists() && !fx.path("plan2").exists());

    // dontAsk: an ask is a deny, without a permission_request
    let run = fx.run(
        &s,
        &["--permission-mode", "dontAsk"],
        &[bash("touch", "touch dontask1"), bash("pwd", "pwd")],
        "allow",
    );
    assert_eq!(run.outcome("touch"), "denied");
    assert!(!run.asked("touch"));
    assert!(!fx.path("dontask1").exists());
    assert_eq!(run.outcome("pwd"), "success");

    // bypassPermissions: everything but deny rules and critical rm
    let run = fx.run(
        &s,
        &["--permission-mode", "bypassPermissions"],
        &[
            bash("touch", "touch bypass1"),
            bash("deny", "touch never2"),
            bash("rm_cwd", "rm -rf ."),
        ],
        "deny",
    );
    assert_eq!(run.outcome("touch"), "success");
    assert!(fx.path("bypass1").exists());
    assert_eq!(run.outcome("deny"), "denied");
    assert!(!fx.path("never2").exists());
    assert!(run.asked("rm_cwd"), "critical rm asks even in bypass");
    assert_eq!(run.outcome("rm_cwd"), "denied");
    assert!(fx.path("a.txt").exists());

    // defaultMode from settings; the flag wins over it
    let s2 = fx.settings(json!({ "defaultMode": "plan" }));
    let run = fx.run(&s2, &[], &[bash("touch", "touch dm1")], "deny");
    assert!(run.asked("touch"), "plan mode from defaultMode asks");
    assert_eq!(run.outcome("touch"), "denied");
    let run = fx.run(
        &s2,
        &["--permission-mode", "bypassPermissions"],
        &[bash("touch", "touch dm2")],
        "deny",
    );
    assert_eq!(run.outcome("touch"), "success");
}

#[test]
fn cli_flags_and_pooling() {
    let fx = Fixture::new();
    let s = fx.settings(json!({ "allow": ["Bash(touch *)"] }));
    let run = fx.run(
        &s,
        &[
            "--disallowed-tools",
            "Bash(touch cli_denied*)",
            "--allowed-tools",
            "Bash(mkdir *) Read",
        ],
        &[
            bash("denied", "touch cli_denied1"),
            bash("allowed", "touch ok1"),
            bash("mkdir", "mkdir cli_dir"),
        ],
        "deny",
    );
    assert_eq!(run.outcome("denied"), "denied");
    assert!(
        run.content("denied").contains("command line"),
        "{}",
        run.content("denied")
    );
    assert!(!fx.path("cli_denied1").exists());
    assert_eq!(run.outcome("allowed"), "success");
    assert_eq!(run.outcome("mkdir"), "success");
}

#[test]
fn webfetch_domains_and_bare_deny() {
    let fx = Fixture::new();
    let s = fx.settings(json!({ "deny": ["WebFetch(domain:*.invalid)", "Bash"] }));
    let run = fx.run(
        &s,
        &[],
        &[
            call(
                "fetch",
                "WebFetch",
                json!({"url": "https://a.b.example.invalid/x", "prompt": "p"}),
            ),
            bash("bash", "touch bare1"),
        ],
        "deny",
    );
    assert_eq!(run.outcome("fetch"), "denied");
    assert!(run.content("fetch").contains("WebFetch(domain:*.invalid)"));
    // A bare-name deny removes the tool: it is unavailable (or denied), and never runs.
    assert!(
        ["unavailable", "denied"].contains(&run.outcome("bash").as_str()),
        "{}",
        run.outcome("bash")
    );
    assert!(!fx.path("bare1").exists());
}

#[test]
fn malformed_rule_is_exit_2_naming_file_and_key() {
    let fx = Fixture::new();
    let s = fx.settings(json!({ "allow": ["Read", "Bash(ls"] }));
    let (code, stderr) = serve_status(&fx.cwd, &["--settings", s.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("settings.json"), "{stderr}");
    assert!(stderr.contains("permissions.allow[1]"), "{stderr}");
    assert!(stderr.contains("unbalanced parentheses"), "{stderr}");
    let (code, stderr) = serve_status(&fx.cwd, &["--allowed-tools", "Bash(ls"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("unbalanced parentheses"), "{stderr}");
}
