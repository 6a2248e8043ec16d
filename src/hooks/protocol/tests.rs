//! The hook protocol's pure functions, table by table.

use super::*;
use serde_json::json;

/// (exit code, stdout, stderr, status, JSON kept)
type ExitRow<'a> = (
    i32,
    &'a str,
    &'a str,
    HookStatus,
    Option<Map<String, Value>>,
);
/// (exit code, stdout, stderr, permission, reason)
type PreRow<'a> = (
    i32,
    String,
    &'a str,
    Option<HookPermission>,
    Option<&'a str>,
);

fn obj(v: Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

#[test]
fn exit_code_table() {
    // (exit code, stdout, stderr, status, json kept)
    let allow = r#"{"decision":"approve"}"#;
    let rows: Vec<ExitRow<'_>> = vec![
        // Exit 0: stdout starting with `{` (after whitespace) is JSON…
        (
            0,
            allow,
            "",
            HookStatus::Success,
            obj(json!({"decision": "approve"})),
        ),
        (
            0,
            "  \n{\"a\":1}\n",
            "",
            HookStatus::Success,
            obj(json!({"a": 1})),
        ),
        // …anything else is ignored.
        (0, "all good\n{\"a\":1}", "", HookStatus::Success, None),
        (0, "", "", HookStatus::Success, None),
        (0, "[1,2]", "", HookStatus::Success, None),
        // Starts with `{` but is not JSON: a non-blocking error, no decision.
        (0, "{not json", "", HookStatus::Error, None),
        // Exit 2: blocking, JSON kept for its `reason`.
        (2, "", "no rm -rf", HookStatus::Blocking, None),
        (
            2,
            r#"{"reason":"r"}"#,
            "e",
            HookStatus::Blocking,
            obj(json!({"reason": "r"})),
        ),
        // Other exits: non-blocking error, unless stdout is valid JSON, which then decides.
        (1, "", "oops", HookStatus::Error, None),
        (127, "", "sh: 1: nope: not found", HookStatus::Error, None),
        (
            1,
            allow,
            "",
            HookStatus::Error,
            obj(json!({"decision": "approve"})),
        ),
        (3, "garbage", "", HookStatus::Error, None),
    ];
    for (code, stdout, stderr, status, json) in rows {
        let out = HookOutput::from_exit(code, stdout, stderr.to_owned());
        assert_eq!(out.status, status, "exit {code} stdout {stdout:?}");
        assert_eq!(out.json, json, "exit {code} stdout {stdout:?}");
    }
    let sig = HookOutput::from_signal(9, String::new());
    assert_eq!(sig.status, HookStatus::Error);
    assert_eq!(sig.json, None);
    assert!(sig.stderr.contains("signal 9"));
}

fn pre(code: i32, stdout: &str, stderr: &str) -> PreVerdict {
    pre_tool_use_verdict(&HookOutput::from_exit(code, stdout, stderr.to_owned()))
}

#[test]
fn pre_tool_use_table() {
    use HookPermission::*;
    let hso = |fields: Value| {
        let mut spec = json!({"hookEventName": "PreToolUse"});
        for (k, v) in fields.as_object().unwrap() {
            spec[k] = v.clone();
        }
        json!({ "hookSpecificOutput": spec }).to_string()
    };
    // (code, stdout, stderr, permission, reason)
    let rows: Vec<PreRow<'_>> = vec![
        (0, hso(json!({"permissionDecision": "allow"})), "", Some(Allow), None),
        (0, hso(json!({"permissionDecision": "ask"})), "", Some(Ask), None),
        (0, hso(json!({"permissionDecision": "defer"})), "", Some(Defer), None),
        (
            0,
            hso(json!({"permissionDecision": "deny", "permissionDecisionReason": "no"})),
            "",
            Some(Deny),
            Some("no"),
        ),
        (0, hso(json!({"permissionDecision": "maybe"})), "", None, None),
        // Legacy top-level decision.
        (0, json!({"decision": "approve"}).to_string(), "", Some(Allow), None),
        (0, json!({"decision": "block", "reason": "legacy"}).to_string(), "", Some(Deny), Some("legacy")),
        // hookSpecificOutput wins over legacy.
        (
            0,
            json!({"decision": "block", "hookSpecificOutput": {"permissionDecision": "allow"}}).to_string(),
            "",
            Some(Allow),
            None,
        ),
        // Another event's hookSpecificOutput is not read.
        (
            0,
            json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "permissionDecision": "deny"}}).to_string(),
            "",
            None,
            None,
        ),
        // Exit 2 blocks with stderr…
        (2, String::new(), "dangerous\n", Some(Deny), Some("dangerous")),
        // …or the JSON reason; a JSON allow cannot override it.
        (
            2,
            json!({"reason": "json says", "hookSpecificOutput": {"permissionDecision": "allow"}}).to_string(),
            "stderr",
            Some(Deny),
            Some("json says"),
        ),
        (2, hso(json!({"permissionDecision": "allow"})), "stderr wins", Some(Deny), Some("stderr wins")),
        (2, String::new(), "", Some(Deny), Some("blocked by hook (exit code 2)")),
        // Other exits: non-blocking, unless JSON decides.
        (1, String::new(), "crash", None, None),
        (1, hso(json!({"permissionDecision": "deny"})), "", Some(Deny), None),
        // Exit 0 with non-JSON stdout: nothing.
        (0, "deny".into(), "", None, None),
    ];
    for (code, stdout, stderr, permission, reason) in rows {
        let v = pre(code, &stdout, stderr);
        assert_eq!(v.permission, permission, "exit {code} {stdout}");
        assert_eq!(v.reason.as_deref(), reason, "exit {code} {stdout}");
    }
}

#[test]
fn pre_tool_use_fields() {
    let v = pre(
        0,
        &json!({"continue": false, "stopReason": "halt",
                "hookSpecificOutput": {"updatedInput": {"command": "ls"}, "additionalContext": "ctx"}})
        .to_string(),
        "",
    );
    assert_eq!(v.stop.as_deref(), Some("halt"));
    assert_eq!(v.updated_input, obj(json!({"command": "ls"})));
    assert_eq!(v.additional_context.as_deref(), Some("ctx"));
    // continue:false without a reason still stops; continue:true does not.
    assert!(pre(0, r#"{"continue":false}"#, "").stop.is_some());
    assert!(pre(0, r#"{"continue":true}"#, "").stop.is_none());
    // A non-object updatedInput is ignored.
    assert!(
        pre(0, r#"{"hookSpecificOutput":{"updatedInput":"x"}}"#, "")
            .updated_input
            .is_none()
    );
    // Timed-out and cancelled hooks give no decision.
    for s in [HookStatus::Timeout, HookStatus::Cancelled] {
        assert_eq!(
            pre_tool_use_verdict(&HookOutput::without_decision(s)),
            PreVerdict::default()
        );
    }
}

#[test]
fn permission_request_table() {
    let run = |code: i32, stdout: Value| {
        permission_request_verdict(&HookOutput::from_exit(
            code,
            &stdout.to_string(),
            "err".into(),
        ))
    };
    let allow = json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
        "decision": {"behavior": "allow", "updatedInput": {"command": "ls"}}}});
    let v = run(0, allow.clone());
    assert_eq!(v.allow, Some(true));
    assert_eq!(v.updated_input, obj(json!({"command": "ls"})));
    let v = run(
        0,
        json!({"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "m"}}}),
    );
    assert_eq!(v.allow, Some(false));
    assert_eq!(v.message.as_deref(), Some("m"));
    assert_eq!(
        run(
            0,
            json!({"hookSpecificOutput": {"decision": {"behavior": "x"}}})
        )
        .allow,
        None
    );
    // Exit 2 is ignored: no deny from stderr.
    let v = permission_request_verdict(&HookOutput::from_exit(2, "", "nope".into()));
    assert_eq!(v, PermissionVerdict::default());
    // …but valid JSON still decides, as on any non-zero exit.
    assert_eq!(run(2, allow).allow, Some(true));
    assert!(run(0, json!({"continue": false})).stop.is_some());
}

#[test]
fn post_table() {
    let post = |event, code: i32, stdout: &str, stderr: &str| {
        post_verdict(
            event,
            &HookOutput::from_exit(code, stdout, stderr.to_owned()),
        )
    };
    let e = HookEvent::PostToolUse;
    assert_eq!(post(e, 2, "", "lint failed\n").feedback, ["lint failed"]);
    assert_eq!(
        post(e, 0, r#"{"decision":"block","reason":"fix it"}"#, "").feedback,
        ["fix it"]
    );
    assert_eq!(
        post(
            e,
            0,
            r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"c"}}"#,
            ""
        )
        .feedback,
        ["c"]
    );
    assert_eq!(
        post(
            e,
            0,
            r#"{"hookSpecificOutput":{"updatedToolOutput":"new"}}"#,
            ""
        )
        .updated_output
        .as_deref(),
        Some("new")
    );
    assert_eq!(
        post(
            e,
            0,
            r#"{"hookSpecificOutput":{"updatedToolOutput":{"a":[1]}}}"#,
            ""
        )
        .updated_output
        .as_deref(),
        Some(r#"{"a":[1]}"#)
    );
    // Exit 1 stderr is not feedback (non-blocking error, shown to the user only).
    assert!(post(e, 1, "", "warn").feedback.is_empty());
    // Exit 2 with a JSON reason uses it, once.
    assert_eq!(
        post(e, 2, r#"{"decision":"block","reason":"r"}"#, "s").feedback,
        ["r"]
    );
    assert_eq!(
        post(e, 0, r#"{"continue":false,"stopReason":"enough"}"#, "")
            .stop
            .as_deref(),
        Some("enough")
    );

    let f = HookEvent::PostToolUseFailure;
    assert_eq!(post(f, 2, "", "hint").feedback, ["hint"]);
    assert_eq!(
        post(
            f,
            0,
            r#"{"hookSpecificOutput":{"additionalContext":"try again"}}"#,
            ""
        )
        .feedback,
        ["try again"]
    );
    // PostToolUseFailure: additionalContext only — no decision:block, no output rewrite.
    assert!(
        post(f, 0, r#"{"decision":"block","reason":"r"}"#, "")
            .feedback
            .is_empty()
    );
    assert!(
        post(
            f,
            0,
            r#"{"hookSpecificOutput":{"updatedToolOutput":"x"}}"#,
            ""
        )
        .updated_output
        .is_none()
    );
}

#[test]
fn hook_specific_output_must_name_its_event() {
    let ev = HookEvent::PreToolUse;
    let o = |v: Value| obj(v).unwrap();
    assert_eq!(invalid_output(&o(json!({"continue": true})), ev), None);
    assert_eq!(
        invalid_output(
            &o(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse"}})),
            ev
        ),
        None
    );
    let missing = invalid_output(
        &o(json!({"hookSpecificOutput": {"permissionDecision": "deny"}})),
        ev,
    )
    .unwrap();
    assert!(missing.contains("no hookEventName"), "{missing}");
    let other = invalid_output(
        &o(json!({"hookSpecificOutput": {"hookEventName": "PostToolUse"}})),
        ev,
    )
    .unwrap();
    assert!(other.contains("\"PostToolUse\""), "{other}");
    assert!(invalid_output(&o(json!({"hookSpecificOutput": 3})), ev).is_some());
}

#[test]
fn base_input_fields() {
    let m = base_input("s1", None, "/w", "default", HookEvent::PostToolUse);
    assert_eq!(
        Value::Object(m),
        json!({"session_id": "s1", "transcript_path": null, "cwd": "/w",
               "permission_mode": "default", "hook_event_name": "PostToolUse"})
    );
    let m = base_input(
        "s1",
        Some("/t.jsonl"),
        "/w",
        "plan",
        HookEvent::SessionStart,
    );
    assert_eq!(m["transcript_path"], json!("/t.jsonl"));
}

#[test]
fn other_events_outputs() {
    let out = |v: Value| HookOutput::json(v);
    assert_eq!(
        system_message(&out(json!({"systemMessage": "hi"}))).as_deref(),
        Some("hi")
    );
    assert_eq!(system_message(&out(json!({"systemMessage": ""}))), None);
    assert!(permission_denied_retry(&out(
        json!({"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": true}})
    )));
    assert!(!permission_denied_retry(&out(
        json!({"hookSpecificOutput": {"retry": "yes"}})
    )));
    assert_eq!(
        session_start_context(&out(
            json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "ctx"}})
        ))
        .as_deref(),
        Some("ctx")
    );
}
