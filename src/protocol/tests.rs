//! The wire protocol's parsing and serialising, table by table.

use std::sync::Arc;

use super::parse::{parse_any, plain_tool_use};
use super::*;

#[test]
fn the_tool_use_fast_path_agrees_with_the_general_parser() {
    let lines = [
        r#"{"type":"tool_use","id":"a","name":"Read","input":{"file_path":"x","z":1,"b":2}}"#,
        r#"  {"type":"tool_use","id":"a","name":"Read"}"#,
        r#"{"id":"a","name":"Read","type":"tool_use","input":null,"extra":[1,2]}"#,
        r#"{"type":"tool_use","id":"a","name":"Read","input":[1]}"#,
        r#"{"type":"tool_use","id":"","name":"Read"}"#,
        r#"{"type":"tool_use","id":"a","id":"b","name":"Read"}"#,
        r#"{"type":"tool_use","id":7,"name":"Read"}"#,
        r#"{"type":"tool_use","name":"Read"}"#,
        r#"{"type":"tool_us\u0065","id":"a","name":"Read"}"#,
        r#"{"type":"batch","id":"a","calls":[]}"#,
        r#"["tool_use","a","Read",{}]"#,
        r#"{"type":"tool_use","id":"a","name":"Read""#,
        r#"{"type":"tool_use","id":"a","name":"Read","agent_id":"x"}"#,
        r#"{"type":"tool_use","agent_id":"x","id":"a","name":"Read","input":{}}"#,
        r#"{"type":"tool_use","id":"a","name":"Read","agent_id":""}"#,
        r#"{"type":"tool_use","id":"a","name":"Read","agent_id":["x"]}"#,
    ];
    for line in lines {
        let general = parse_any(line);
        match plain_tool_use(line) {
            Some(call) => assert_eq!(Ok(ClientMessage::ToolUse(call)), general, "{line}"),
            None => assert_eq!(parse_line(line), general, "{line}"),
        }
    }
    // Key order inside the input survives the fast path.
    let Some(call) = plain_tool_use(lines[0]) else {
        panic!("the plain line takes the fast path")
    };
    let keys: Vec<&String> = call
        .input
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["file_path", "z", "b"]);
    assert!(plain_tool_use(lines[4]).is_none() && plain_tool_use(lines[5]).is_none());
    assert!(plain_tool_use(lines[10]).is_none());
}

use serde_json::json;

#[test]
fn agent_id_is_read_on_tool_use_and_batch_and_refused_with_the_field_named() {
    let agent = |line: &str| match parse_line(line) {
        Ok(ClientMessage::ToolUse(c)) => Ok(vec![c.agent_id]),
        Ok(ClientMessage::Batch { calls, .. }) => {
            Ok(calls.into_iter().map(|c| c.agent_id).collect())
        }
        Ok(m) => panic!("{m:?}"),
        Err(e) => Err(e.to_string()),
    };
    let a = Some(Arc::<str>::from("a-1"));
    let long = "x".repeat(MAX_ID_BYTES + 1);
    for (line, want) in [
            (r#"{"type":"tool_use","id":"c","name":"X"}"#.to_string(), Ok(vec![None])),
            (r#"{"type":"tool_use","id":"c","name":"X","agent_id":"a-1"}"#.into(), Ok(vec![a.clone()])),
            (r#"{"agent_id":"a-1","type":"tool_use","id":"c","name":"X","extra":1}"#.into(), Ok(vec![a.clone()])),
            (r#"{"type":"batch","id":"b","agent_id":"a-1","calls":[{"id":"1","name":"X"},{"id":"2","name":"X","agent_id":"a-1"}]}"#.into(), Ok(vec![a.clone(), a.clone()])),
            (r#"{"type":"batch","id":"b","calls":[{"id":"1","name":"X"}]}"#.into(), Ok(vec![None])),
            (r#"{"type":"tool_use","id":"c","name":"X","agent_id":""}"#.into(), Err("tool_use: field `agent_id`: must not be empty")),
            (r#"{"type":"tool_use","id":"c","name":"X","agent_id":null}"#.into(), Err("tool_use: field `agent_id`: expected a string, got null")),
            (r#"{"type":"tool_use","id":"c","name":"X","agent_id":7}"#.into(), Err("tool_use: field `agent_id`: expected a string, got integer")),
            (r#"{"type":"tool_use","id":"c","name":"X","agent_id":"a\nb"}"#.into(), Err("tool_use: field `agent_id`: must not contain control characters")),
            (format!(r#"{{"type":"tool_use","id":"c","name":"X","agent_id":"{long}"}}"#), Err("tool_use: field `agent_id`: longer than 256 bytes (got 257)")),
            (format!(r#"{{"type":"batch","id":"b","agent_id":"{long}","calls":[]}}"#), Err("batch: field `agent_id`: longer than 256 bytes (got 257)")),
            (r#"{"type":"batch","id":"b","agent_id":"a-1","calls":[{"id":"1","name":"X","agent_id":"a-2"}]}"#.into(), Err("batch: field `calls[0].agent_id`: differs from the batch's")),
            (r#"{"type":"batch","id":"b","calls":[{"id":"1","name":"X"},{"id":"2","name":"X","agent_id":"a-2"}]}"#.into(), Err("batch: field `calls[1].agent_id`: differs from the batch's")),
            (r#"{"type":"batch","id":"b","calls":[{"id":"1","name":"X","agent_id":""}]}"#.into(), Err("batch: field `calls[0].agent_id`: must not be empty")),
        ] {
            match (agent(&line), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{line}"),
                (Err(got), Err(want)) => assert!(got.starts_with(want), "{line}: {got}"),
                (got, want) => panic!("{line}: got {got:?}, want {want:?}"),
            }
        }
    // The fast path reads the common line with an agent; what it cannot take, it leaves to
    // the general parser.
    let call = plain_tool_use(r#"{"type":"tool_use","id":"c","name":"X","agent_id":"a-1"}"#);
    assert_eq!(call.and_then(|c| c.agent_id), a);
    for line in [
        r#"{"type":"tool_use","id":"c","name":"X","agent_id":null}"#,
        r#"{"type":"tool_use","id":"c","name":"X","agent_id":""}"#,
        r#"{"type":"tool_use","id":"c","name":"X","agent_id":"a","agent_id":"b"}"#,
    ] {
        assert!(plain_tool_use(line).is_none(), "{line}");
    }
}

#[test]
fn a_result_echoes_its_agent_only_when_there_is_one() {
    let mut r = ToolResult::new("x", crate::call::Outcome::Success, "ok");
    let v: Value = serde_json::from_slice(&ServerMessage::ToolResult(r.clone()).to_line()).unwrap();
    assert!(v.get("agent_id").is_none(), "{v}");
    r.agent_id = Some("a-1".into());
    let v: Value = serde_json::from_slice(&ServerMessage::ToolResult(r).to_line()).unwrap();
    assert_eq!(v["agent_id"], "a-1");
}

#[test]
fn parses_every_message_type() {
    assert_eq!(
        parse_line(r#"{"type":"tool_use","id":"a","name":"Read","input":{"file_path":"x"}}"#)
            .unwrap(),
        ClientMessage::ToolUse(ToolCall::new("a", "Read", json!({"file_path":"x"})))
    );
    match parse_line(r#"{"type":"batch","id":"b","calls":[{"id":"1","name":"X"}]}"#).unwrap() {
        ClientMessage::Batch { id, calls } => {
            assert_eq!(id, "b");
            assert_eq!(calls[0].input, json!({}));
        }
        m => panic!("{m:?}"),
    }
    assert_eq!(
        parse_line(r#"{"type":"cancel","id":"a"}"#).unwrap(),
        ClientMessage::Cancel(CancelTarget::Call("a".into()))
    );
    assert_eq!(
        parse_line(r#"{"type":"cancel","batch":"b"}"#).unwrap(),
        ClientMessage::Cancel(CancelTarget::Batch("b".into()))
    );
    assert_eq!(
        parse_line(r#"{"type":"shutdown"}"#).unwrap(),
        ClientMessage::Shutdown
    );
    assert_eq!(
        parse_line(r#"{"type":"hello"}"#).unwrap(),
        ClientMessage::Hello { client: None }
    );
    assert_eq!(
        parse_line(r#"{"type":"hello","client":"orch/2"}"#).unwrap(),
        ClientMessage::Hello {
            client: Some("orch/2".into())
        }
    );
    assert_eq!(
        parse_line(r#"{"type":"rewind","to":"a"}"#).unwrap(),
        ClientMessage::Rewind { to: "a".into() }
    );
    assert_eq!(
        parse_line(r#"{"type":"session","session_id":"s-1","transcript_path":"/t.jsonl"}"#)
            .unwrap(),
        ClientMessage::Session {
            session_id: Some("s-1".into()),
            transcript_path: Some("/t.jsonl".into())
        }
    );
    assert_eq!(
        parse_line(r#"{"type":"session","transcript_path":"/t"}"#).unwrap(),
        ClientMessage::Session {
            session_id: None,
            transcript_path: Some("/t".into())
        }
    );
    for bad in [
        r#"{"type":"session"}"#,
        r#"{"type":"session","session_id":3}"#,
        r#"{"type":"session","session_id":""}"#,
    ] {
        assert!(parse_line(bad).is_err(), "{bad}");
    }
    assert_eq!(
        parse_line(r#"{"type":"rewind","to":"a"}"#).unwrap(),
        ClientMessage::Rewind { to: "a".into() }
    );
    match parse_line(r#"{"type":"permission_response","request_id":"r","behavior":"allow","updated_input":{"a":1}}"#).unwrap() {
            ClientMessage::PermissionResponse(r) => {
                assert!(r.allow);
                assert_eq!(r.updated_input.unwrap()["a"], 1);
            }
            m => panic!("{m:?}"),
        }
}

#[test]
fn errors_name_the_field() {
    for (line, needle) in [
        ("not json", "invalid JSON"),
        ("[1]", "expected a JSON object, got array"),
        (r#"{"id":"a"}"#, "missing field `type`"),
        (r#"{"type":"nope"}"#, "unknown message type \"nope\""),
        (
            r#"{"type":"tool_use","name":"Bash"}"#,
            "field `id`: missing",
        ),
        (
            r#"{"type":"tool_use","id":7,"name":"Bash"}"#,
            "field `id`: expected a string, got integer",
        ),
        (
            r#"{"type":"tool_use","id":"","name":"Bash"}"#,
            "field `id`: must not be empty",
        ),
        (
            r#"{"type":"batch","id":"b","calls":[{"id":"1"}]}"#,
            "field `calls[0].name`",
        ),
        (r#"{"type":"batch","id":"b"}"#, "field `calls`: missing"),
        (r#"{"type":"cancel"}"#, "field `id`: missing"),
        (
            r#"{"type":"permission_response","request_id":"r","behavior":"maybe"}"#,
            "field `behavior`",
        ),
        (
            r#"{"type":"hello","client":3}"#,
            "hello: field `client`: expected a string, got integer",
        ),
    ] {
        let err = parse_line(line).unwrap_err().to_string();
        assert!(err.contains(needle), "{line}: {err}");
    }
}

#[test]
fn a_repeated_key_anywhere_refuses_the_line_and_names_the_key() {
    for (line, needle) in [
        (
            r#"{"type":"tool_use","id":"a","name":"Bash","input":{"command":"ls","command":"rm -rf ~"}}"#,
            "duplicate key `command` in `input`",
        ),
        (
            r#"{"type":"tool_use","id":"a","name":"Bash","input":{"command":"ls"},"x":1,"x":2}"#,
            "duplicate key `x`",
        ),
        (
            r#"{"type":"tool_use","id":"a","id":"b","name":"Bash"}"#,
            "duplicate key `id`",
        ),
        (
            r#"{"type":"batch","id":"b","calls":[{"id":"1","name":"Bash","input":{"a":{"b":1,"b":2}}}]}"#,
            "duplicate key `b` in `calls[0].input.a`",
        ),
        (
            r#"{"type":"permission_response","request_id":"r","behavior":"allow","updated_input":{"command":"a","command":"b"}}"#,
            "duplicate key `command` in `updated_input`",
        ),
    ] {
        assert!(plain_tool_use(line).is_none(), "{line}");
        let err = parse_line(line).unwrap_err();
        assert!(matches!(err, LineError::Refused(_)), "{line}: {err:?}");
        assert!(err.to_string().contains(needle), "{line}: {err}");
    }
}

#[test]
fn ids_and_names_past_their_limit_are_refused_without_quoting_them() {
    let long = "x".repeat(MAX_ID_BYTES + 1);
    let ok = "y".repeat(MAX_ID_BYTES);
    for (line, field) in [
        (
            format!(r#"{{"type":"tool_use","id":"{long}","name":"Bash"}}"#),
            "`id`",
        ),
        (
            format!(r#"{{"type":"tool_use","id":"a","name":"{long}"}}"#),
            "`name`",
        ),
        (
            format!(r#"{{"type":"batch","id":"{long}","calls":[]}}"#),
            "`id`",
        ),
        (
            format!(r#"{{"type":"batch","id":"b","calls":[{{"id":"{long}","name":"X"}}]}}"#),
            "`calls[0].id`",
        ),
        (format!(r#"{{"type":"cancel","id":"{long}"}}"#), "`id`"),
        (format!(r#"{{"type":"rewind","to":"{long}"}}"#), "`to`"),
    ] {
        let err = parse_line(&line).unwrap_err().to_string();
        assert!(
            err.contains(field) && err.contains("longer than 256 bytes"),
            "{err}"
        );
        assert!(!err.contains(&long), "the error quotes the value");
    }
    let line = format!(r#"{{"type":"tool_use","id":"{ok}","name":"Bash"}}"#);
    assert!(matches!(parse_line(&line), Ok(ClientMessage::ToolUse(_))));
}

#[test]
fn server_messages_are_one_object_per_line() {
    let line = ServerMessage::event("batch_start", json!({"batch":"b","ids":["1"]})).to_line();
    let v: Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(
        v,
        json!({"type":"event","event":"batch_start","batch":"b","ids":["1"]})
    );
    assert_eq!(*line.last().unwrap(), b'\n');
    let r = ServerMessage::ToolResult(ToolResult::new("x", crate::call::Outcome::Denied, "no"));
    let v: Value = serde_json::from_slice(&r.to_line()).unwrap();
    assert_eq!(
        v,
        json!({"type":"tool_result","tool_use_id":"x","content":"no","is_error":true,"outcome":"denied"})
    );
}

#[test]
fn client_text_an_error_quotes_is_cut() {
    let long = "k".repeat(1 << 20);
    let cut = format!("\"{}\"… ({} bytes)", "k".repeat(100), long.len());
    for line in [
        format!(r#"{{"type":"{long}"}}"#),
        format!(r#"{{"type":"list_tools","format":"{long}"}}"#),
    ] {
        let err = parse_line(&line).unwrap_err().to_string();
        assert!(err.contains(&cut), "{}", &err[..err.len().min(500)]);
        assert!(err.len() < 1000, "{} bytes: {}", err.len(), &err[..500]);
    }
    // Short text is still quoted whole.
    let err = parse_line(r#"{"type":"list_tools","format":"openai"}"#).unwrap_err();
    assert!(
        err.to_string().contains("unknown format \"openai\""),
        "{err}"
    );
    let err = parse_line(r#"{"type":"hi"}"#).unwrap_err();
    assert!(
        err.to_string().contains("unknown message type \"hi\""),
        "{err}"
    );
}
