//! `toolrt explain` decides permission for any call it can, without a session: state checks
//! (read-before-edit, task ids) are reported as made at run time, and its words agree with its
//! verdict.

mod support;

use support::*;

/// Runs `toolrt explain <args>` in the sandbox's project and returns (exit code, stdout, stderr).
fn explain(sb: &Sandbox, args: &[&str]) -> (i32, String, String) {
    cli(sb, "explain", args)
}

#[test]
fn an_edit_or_write_of_an_existing_file_is_decided_in_every_mode() {
    let sb = Sandbox::new();
    sb.write("f.txt", "hello\n");
    let edit = r#"{"file_path": "f.txt", "old_string": "hello", "new_string": "bye"}"#;
    let write = r#"{"file_path": "f.txt", "content": "new"}"#;
    for (mode, code, decision) in [
        ("default", 3, "decision: ask"),
        ("acceptEdits", 0, "decision: allow"),
        ("plan", 3, "decision: ask"),
        ("dontAsk", 1, "decision: deny"),
        ("bypassPermissions", 0, "decision: allow"),
    ] {
        for (tool, input) in [("Edit", edit), ("Write", write)] {
            let (status, out, err) = explain(&sb, &["--permission-mode", mode, tool, input]);
            assert_eq!(status, code, "{tool} in {mode}: {out}{err}");
            assert!(out.contains(decision), "{tool} in {mode}: {out}");
            assert!(!out.contains("validation_error"), "{out}");
            assert!(
                out.contains("checked at run time, not here")
                    && out.contains("has not been read in this session"),
                "{tool} in {mode}: {out}"
            );
        }
    }
}

#[test]
fn task_tools_are_decided_and_their_task_id_is_checked_at_run_time() {
    let sb = Sandbox::new();
    for tool in ["TaskOutput", "TaskStop"] {
        let (status, out, err) = explain(&sb, &[tool, r#"{"task_id": "bg-7"}"#]);
        assert_eq!(status, 0, "{tool}: {out}{err}");
        assert!(out.contains("decision: allow\ndecided by: a built-in default"));
        assert!(
            out.contains("checked at run time") && out.contains("bg-7"),
            "{out}"
        );
    }
    // A deny rule still decides.
    let (status, out, _) = explain(
        &sb,
        &[
            "--disallowed-tools",
            "TaskStop",
            "TaskStop",
            r#"{"task_id": "bg-7"}"#,
        ],
    );
    // A bare-name deny removes the tool: it does not exist, so there is nothing to decide.
    assert_eq!(status, 2, "{out}");
    assert!(out.starts_with("unavailable: "), "{out}");
}

#[test]
fn a_call_that_passes_its_checks_has_no_run_time_line() {
    let sb = Sandbox::new();
    let (status, out, _) = explain(
        &sb,
        &[
            "--permission-mode",
            "acceptEdits",
            "Write",
            r#"{"file_path": "new.txt", "content": "x"}"#,
        ],
    );
    assert_eq!(status, 0, "{out}");
    assert!(!out.contains("run time"), "{out}");
}

#[test]
fn the_words_agree_with_the_verdict() {
    let sb = Sandbox::new();
    let (status, out, _) = explain(
        &sb,
        &[
            "--permission-mode",
            "bypassPermissions",
            "Bash",
            r#"{"command": "rm -f x && ls"}"#,
        ],
    );
    assert_eq!(status, 0);
    assert!(
        out.contains(
            "1. rm -f x: allow (the permission mode bypassPermissions, although no rule allows it)"
        ),
        "{out}"
    );
    assert!(!out.contains("allow (no rule allows it)"), "{out}");

    let (status, out, _) = explain(
        &sb,
        &[
            "--permission-mode",
            "plan",
            "Bash",
            r#"{"command": "touch a && ls"}"#,
        ],
    );
    assert_eq!(status, 3, "plan mode asks before a change");
    assert!(
        out.contains("decided by: the permission mode plan, which auto-allows only reads"),
        "{out}"
    );
    assert!(
        out.contains("1. touch a: ask (the permission mode plan, which auto-allows only reads)"),
        "{out}"
    );

    let (status, out, _) = explain(
        &sb,
        &[
            "--permission-mode",
            "dontAsk",
            "Bash",
            r#"{"command": "touch a"}"#,
        ],
    );
    assert_eq!(status, 1);
    assert!(
        out.contains("decided by: no rule allows it, so it would need approval, and the permission mode dontAsk denies whatever needs approval"),
        "{out}"
    );
    for line in out.lines() {
        assert!(
            !(line.contains(": deny (") && line.ends_with("(no rule allows it)")),
            "a deny explained only by 'no rule allows it': {out}"
        );
    }
}

#[test]
fn what_never_reaches_the_decision_exits_2() {
    let sb = Sandbox::new();
    let (status, out, _) = explain(&sb, &["Nope", "{}"]);
    assert_eq!(status, 2);
    assert!(
        out.starts_with("unavailable: No such tool available: Nope"),
        "{out}"
    );
    let (status, out, _) = explain(&sb, &["Read", r#"{"file_path": 3}"#]);
    assert_eq!(status, 2);
    assert!(out.starts_with("schema_error: "), "{out}");
    let (status, _, err) = explain(&sb, &["Read", "{not json"]);
    assert_eq!(status, 2);
    assert!(err.contains("not valid JSON"), "{err}");
}
