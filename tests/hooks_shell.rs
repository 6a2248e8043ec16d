//! Which program a command hook runs through: the `shell` key (`bash`, the default, is the
//! user's `$SHELL` when that is bash, zsh or sh, else `/bin/sh`), the exec form (`command` +
//! `args`, no shell, `${CLAUDE_PROJECT_DIR}` substituted per element), and a shell that cannot
//! parse the hook's command (a failure, not a block, unless `onFailure: block`).

mod hooks_support;
mod support;

use std::os::unix::fs::PermissionsExt;

use hooks_support::*;
use serde_json::json;

/// A hook written for bash (`[[ ]]`, `${x:0:1}`, `$'…'`) records what it saw.
const BASH_ONLY: &str =
    r#"x=abc; if [[ $x == a* ]]; then printf '%s %s' "${x:0:1}" "$0" > "$OUT"; fi"#;

#[test]
fn bash_only_syntax_runs_under_the_default_shell_when_shell_is_bash() {
    let fx = Fixture::new();
    let out = fx.hooks.path().join("seen.txt");
    let out_s = out.to_string_lossy().into_owned();
    fx.settings(json!({"hooks": {"PreToolUse": [group("Bash", &[BASH_ONLY])]}}));
    let run = fx
        .serve_with(
            "bypassPermissions",
            &[],
            &[("SHELL", "/bin/bash"), ("OUT", &out_s)],
        )
        .run(&[bash("a1", "echo hi")]);
    assert_eq!(run.outcome("a1"), "success");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "a /bin/bash");
    assert_eq!(run.hook_ends("PreToolUse")[0]["outcome"], "success");
}

#[test]
fn a_shell_that_is_not_bash_zsh_or_sh_falls_back_to_bin_sh() {
    let fx = Fixture::new();
    let out = fx.hooks.path().join("seen.txt");
    let out_s = out.to_string_lossy().into_owned();
    let hook = r#"printf '%s' "$0" > "$OUT""#;
    fx.settings(json!({"hooks": {"PreToolUse": [group("Bash", &[hook])]}}));
    for shell in ["/usr/bin/fish", "", "bash"] {
        let run = fx
            .serve_with(
                "bypassPermissions",
                &[],
                &[("SHELL", shell), ("OUT", &out_s)],
            )
            .run(&[bash("a1", "echo hi")]);
        assert_eq!(run.outcome("a1"), "success");
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "/bin/sh",
            "{shell:?}"
        );
    }
}

#[test]
fn a_syntax_error_of_the_shell_is_a_reported_failure_not_a_block() {
    let fx = Fixture::new();
    // Under /bin/sh (dash) `[[` is fine but this is not; both shells exit 2 on it.
    let broken = "if then fi";
    fx.settings(json!({"hooks": {"PreToolUse": [group("Bash", &[broken])]}}));
    let run = fx
        .serve_with("bypassPermissions", &[], &[("SHELL", "/bin/bash")])
        .run(&[bash("a1", "echo ran")]);
    assert_eq!(run.outcome("a1"), "success", "{:#?}", run.lines);
    assert_eq!(
        run.content("a1").trim(),
        "ran",
        "nothing of the hook reaches the model"
    );
    let end = run.hook_ends("PreToolUse")[0];
    assert_eq!(end["outcome"], "error");
    assert_eq!(end["exit_code"], 2);
    let error = end["error"].as_str().unwrap();
    assert!(
        error.contains("could not parse the hook command"),
        "{error}"
    );
    assert!(error.contains("syntax error"), "{error}");

    // A script is run, not pre-checked: one whose text its shell cannot parse exited 2 from a
    // run that started, and that blocks, as the reference CLI reads it.
    let script = fx.hooks.path().join("broken.sh");
    std::fs::write(&script, "#!/bin/sh\nif then\n").unwrap();
    std::fs::set_permissions(&script, PermissionsExt::from_mode(0o755)).unwrap();
    let cmd = script.to_string_lossy().into_owned();
    fx.settings(json!({"hooks": {"PreToolUse": [group("Bash", &[&cmd])]}}));
    let run = fx.serve("bypassPermissions").run(&[bash("a2", "echo ran")]);
    assert_eq!(run.outcome("a2"), "denied", "{:#?}", run.lines);
    assert_eq!(run.hook_ends("PreToolUse")[0]["outcome"], "blocking");

    // A hook that means to block still does.
    let blocker = fx.stderr_hook("not allowed", 2);
    fx.settings(json!({"hooks": {"PreToolUse": [group("Bash", &[&blocker])]}}));
    let run = fx.serve("bypassPermissions").run(&[bash("a3", "echo ran")]);
    assert_eq!(run.outcome("a3"), "denied");
    assert!(run.content("a3").contains("not allowed"));
}

/// A guard script that `bash -n` rejects (extglob is only on once `shopt` has run; a syntax error
/// after the `exit 2` it reaches) still blocks: its real exit status decides.
#[test]
fn a_script_that_exits_2_blocks_whatever_bash_n_thinks_of_its_text() {
    let fx = Fixture::new();
    let script = fx.hooks.path().join("guard.sh");
    std::fs::write(
        &script,
        "#!/bin/bash\nshopt -s extglob\ncmd=$(cat)\ncase \"$cmd\" in\n  *rm\\ *) echo \"Blocked: rm\" >&2; exit 2 ;;\n  @(curl|wget)\\ *) echo net >&2 ;;\nesac\nexit 0\nif then\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(fx.cwd().join("keep.txt"), "keep").unwrap();
    let cmd = script.to_string_lossy().into_owned();
    fx.settings(json!({"hooks": {"PreToolUse": [group("Bash", &[&cmd])]}}));
    let run = fx
        .serve_with("bypassPermissions", &[], &[("SHELL", "/bin/bash")])
        .run(&[bash("a1", "rm keep.txt")]);
    assert_eq!(run.outcome("a1"), "denied", "{:#?}", run.lines);
    assert!(
        run.content("a1").contains("Blocked: rm"),
        "{}",
        run.content("a1")
    );
    assert!(fx.cwd().join("keep.txt").exists());
    assert_eq!(run.hook_ends("PreToolUse")[0]["outcome"], "blocking");

    // An inline command that exits 2 before the line its shell cannot parse ran: a block too.
    fx.settings(
        json!({"hooks": {"PreToolUse": [group("Bash", &["echo no >&2; exit 2\nif then fi"])]}}),
    );
    let run = fx
        .serve_with("bypassPermissions", &[], &[("SHELL", "/bin/bash")])
        .run(&[bash("a2", "rm keep.txt")]);
    assert_eq!(run.outcome("a2"), "denied", "{:#?}", run.lines);
    assert!(fx.cwd().join("keep.txt").exists());
}

#[test]
fn on_failure_block_turns_a_syntax_error_into_a_block() {
    let fx = Fixture::new();
    fx.settings(
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "if then fi", "onFailure": "block"}
        ]}]}}),
    );
    let marker = fx.cwd().join("ran");
    let run = fx
        .serve("bypassPermissions")
        .run(&[bash("a1", "touch ran")]);
    assert_eq!(run.outcome("a1"), "denied");
    let content = run.content("a1");
    assert!(content.contains("onFailure is \"block\""), "{content}");
    assert!(content.contains("could not parse"), "{content}");
    assert!(!marker.exists());
    assert_eq!(run.hook_ends("PreToolUse")[0]["outcome"], "blocking");
}

#[test]
fn exec_form_runs_the_program_with_substituted_arguments_and_no_shell() {
    let fx = Fixture::new();
    let out = fx.hooks.path().join("argv.json");
    let prog = fx.hooks.path().join("argv.py");
    std::fs::write(
        &prog,
        format!(
            "import json, sys\njson.dump(sys.argv[1:], open({:?}, 'w'))\n",
            out.to_string_lossy()
        ),
    )
    .unwrap();
    fx.settings(json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{
        "type": "command",
        "command": "python3",
        "args": [prog.to_string_lossy(), "${CLAUDE_PROJECT_DIR}/src", "a b; rm -rf /", "$HOME", "`id`"]
    }]}]}}));
    let run = fx.serve("bypassPermissions").run(&[bash("a1", "echo hi")]);
    assert_eq!(run.outcome("a1"), "success");
    let argv: Vec<String> = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let root = std::fs::canonicalize(fx.cwd()).unwrap();
    assert_eq!(
        argv,
        [
            format!("{}/src", root.display()),
            "a b; rm -rf /".into(),
            "$HOME".into(),
            "`id`".into(),
        ]
    );
    // The label names the program and its arguments.
    let start = &run.events("hook_start")[0];
    assert!(
        start["command"].as_str().unwrap().starts_with("python3 "),
        "{start}"
    );

    // An exec-form program that does not exist is a failure: the call goes ahead.
    fx.settings(
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{
            "type": "command", "command": "/no/such/program", "args": []
        }]}]}}),
    );
    let run = fx.serve("bypassPermissions").run(&[bash("a2", "echo hi")]);
    assert_eq!(run.outcome("a2"), "success");
    let end = run.hook_ends("PreToolUse")[0];
    assert_eq!(end["outcome"], "error");
    assert!(
        end["error"].as_str().unwrap().contains("/no/such/program"),
        "{end}"
    );
}
