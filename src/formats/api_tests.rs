//! Calls in and results out, per API: table tests over real-shaped messages.

use serde_json::{Value, json};

use super::*;
use crate::call::Outcome;

/// A call as read: id, name, input.
type Read = (String, String, Value);

fn ids_names(turn: &Turn) -> Vec<Read> {
    turn.calls
        .iter()
        .map(|c| (c.id.clone(), c.name.clone(), c.input.clone()))
        .collect()
}

#[test]
fn calls_are_read_from_each_shape() {
    let anthropic_message = json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a"}},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            {"type": "tool_use", "id": "toolu_2", "name": "Glob", "input": {"pattern": "*"}}
        ],
        "stop_reason": "tool_use"
    });
    let chat_call = |id: &str, name: &str, args: &str| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}});
    let chat_message = json!({"role": "assistant", "content": null, "tool_calls": [
        chat_call("call_1", "Read", r#"{"file_path":"a"}"#),
        chat_call("call_2", "Glob", "{\"pattern\": \"*\""),
        chat_call("call_3", "Noop", ""),
    ]});
    let responses = json!({"id": "resp_1", "object": "response", "output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "Read", "arguments": "{\"file_path\":\"a\"}", "status": "completed"},
        {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "Glob", "arguments": "[1]", "status": "completed"}
    ]});
    let read = |id: &str| {
        (
            id.to_string(),
            "Read".to_string(),
            json!({"file_path": "a"}),
        )
    };
    // OpenAI's arguments stay the text the model wrote (the server decodes them).
    let read_text = |id: &str| {
        let text = json!("{\"file_path\":\"a\"}");
        (id.to_string(), "Read".to_string(), text)
    };
    let cases: Vec<(Format, Value, Option<&str>, Vec<Read>)> = vec![
        (
            Format::Anthropic,
            anthropic_message.clone(),
            Some("msg_01"),
            vec![
                read("toolu_1"),
                ("toolu_2".into(), "Glob".into(), json!({"pattern": "*"})),
            ],
        ),
        (
            Format::Anthropic,
            anthropic_message["content"].clone(),
            None,
            vec![
                read("toolu_1"),
                ("toolu_2".into(), "Glob".into(), json!({"pattern": "*"})),
            ],
        ),
        (
            Format::Anthropic,
            json!({"role": "assistant", "content": "just text"}),
            None,
            vec![],
        ),
        (
            Format::OpenAiChat,
            chat_message.clone(),
            None,
            vec![
                read_text("call_1"),
                // Invalid JSON goes on as the string: the schema check answers it.
                ("call_2".into(), "Glob".into(), json!("{\"pattern\": \"*\"")),
                ("call_3".into(), "Noop".into(), json!({})),
            ],
        ),
        (
            Format::OpenAiChat,
            json!({"index": 0, "finish_reason": "tool_calls", "message": chat_message.clone()}),
            None,
            vec![
                read_text("call_1"),
                ("call_2".into(), "Glob".into(), json!("{\"pattern\": \"*\"")),
                ("call_3".into(), "Noop".into(), json!({})),
            ],
        ),
        (
            Format::OpenAiChat,
            json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [chat_call("call_9", "Read", r#"{"file_path":"a"}"#)]}}]}),
            Some("chatcmpl-1"),
            vec![read_text("call_9")],
        ),
        (
            Format::OpenAiResponses,
            responses.clone(),
            Some("resp_1"),
            vec![
                read_text("call_a"),
                ("call_b".into(), "Glob".into(), json!("[1]")),
            ],
        ),
        (
            Format::OpenAiResponses,
            responses["output"].clone(),
            None,
            vec![
                read_text("call_a"),
                ("call_b".into(), "Glob".into(), json!("[1]")),
            ],
        ),
        (
            Format::OpenAiResponses,
            responses["output"][1].clone(),
            None,
            vec![read_text("call_a")],
        ),
    ];
    for (format, body, id, want) in cases {
        let turn = read_calls(format, &body).unwrap_or_else(|e| panic!("{format}: {e}: {body}"));
        assert_eq!(ids_names(&turn), want, "{format}: {body}");
        assert_eq!(turn.id.as_deref(), id, "{format}");
    }
}

#[test]
fn client_text_an_error_quotes_is_cut() {
    let long = "r".repeat(1 << 20);
    let cut = format!("\"{}\"… ({} bytes)", "r".repeat(100), long.len());
    for (format, body) in [
        (Format::Anthropic, json!({"role": long, "content": []})),
        (
            Format::OpenAiChat,
            json!({"role": "assistant", "tool_calls": [{"id": "c", "type": long}]}),
        ),
    ] {
        let err = read_calls(format, &body).unwrap_err().to_string();
        assert!(
            err.contains(&cut),
            "{format}: {}",
            &err[..err.len().min(500)]
        );
        assert!(err.len() < 1000, "{format}: {} bytes", err.len());
    }
    let err = read_calls(Format::Anthropic, &json!({"role": {"x": long}})).unwrap_err();
    assert!(err.to_string().ends_with("got object"), "{err}");
}

#[test]
fn malformed_messages_name_the_field() {
    let cases = [
        (
            Format::Anthropic,
            json!({"role": "user", "content": []}),
            "`role`",
        ),
        (
            Format::Anthropic,
            json!({"content": [{"type": "tool_use", "name": "Read", "input": {}}]}),
            "`content[0].id`: missing",
        ),
        (
            Format::Anthropic,
            json!({"content": [{"type": "tool_use", "id": "", "name": "Read"}]}),
            "`content[0].id`: must not be empty",
        ),
        (
            Format::Anthropic,
            json!([{"type": "tool_use", "id": "a", "name": "R"}, {"type": "tool_use", "id": "a", "name": "R"}]),
            "used by two calls",
        ),
        (Format::Anthropic, json!(42), "`message`"),
        (
            Format::OpenAiChat,
            json!({"choices": [{}, {}]}),
            "a completion with 2 choices",
        ),
        (
            Format::OpenAiChat,
            json!({"tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "x", "input": "y"}}]}),
            "`tool_calls[0].type`",
        ),
        (
            Format::OpenAiChat,
            json!({"tool_calls": [{"id": "c", "type": "function"}]}),
            "`tool_calls[0].function`: missing",
        ),
        (
            Format::OpenAiChat,
            json!({"role": "assistant", "function_call": {"name": "x", "arguments": "{}"}}),
            "deprecated",
        ),
        (
            Format::OpenAiResponses,
            json!([{"type": "function_call", "name": "x", "arguments": "{}"}]),
            "`[0].call_id`: missing",
        ),
        (Format::OpenAiResponses, json!({"id": "resp"}), "`items`"),
        (
            Format::OpenAiResponses,
            json!([{"type": "custom_tool_call", "call_id": "c", "name": "x", "input": ""}]),
            "custom_tool_call",
        ),
    ];
    for (format, body, want) in cases {
        let err = read_calls(format, &body).unwrap_err().to_string();
        assert!(err.contains(want), "{format} {body}: {err}");
    }
}

fn result(id: &str, outcome: Outcome, content: &str) -> ToolResult {
    ToolResult::new(id, outcome, content)
}

fn image_result(id: &str) -> ToolResult {
    let mut r = result(
        id,
        Outcome::Success,
        "[image: image/png, 4 bytes; in content_blocks]",
    );
    r.content_blocks = Some(vec![
        json!({"type": "text", "text": "a picture"}),
        json!({"type": "image", "data": "iVBO", "mimeType": "image/png"}),
    ]);
    r
}

#[test]
fn results_come_out_in_each_shape_in_order() {
    let ok = result("a", Outcome::Success, "hello");
    let denied = result("b", Outcome::Denied, "permission to use Bash was denied");
    let empty = result("c", Outcome::Success, "");
    let image = image_result("d");
    let all = [&ok, &denied, &empty, &image];
    assert_eq!(
        results_body(Format::Anthropic, &all),
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "hello", "is_error": false},
            {"type": "tool_result", "tool_use_id": "b", "content": "permission to use Bash was denied", "is_error": true},
            {"type": "tool_result", "tool_use_id": "c", "is_error": false},
            {"type": "tool_result", "tool_use_id": "d", "content": [
                {"type": "text", "text": "a picture"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}
            ], "is_error": false}
        ]})
    );
    assert_eq!(
        results_body(Format::OpenAiChat, &all),
        json!([
            {"role": "tool", "tool_call_id": "a", "content": "hello"},
            {"role": "tool", "tool_call_id": "b", "content": "permission to use Bash was denied"},
            {"role": "tool", "tool_call_id": "c", "content": ""},
            {"role": "tool", "tool_call_id": "d", "content": "[image: image/png, 4 bytes; in content_blocks]"}
        ])
    );
    assert_eq!(
        results_body(Format::OpenAiResponses, &all),
        json!([
            {"type": "function_call_output", "call_id": "a", "output": "hello"},
            {"type": "function_call_output", "call_id": "b", "output": "permission to use Bash was denied"},
            {"type": "function_call_output", "call_id": "c", "output": ""},
            {"type": "function_call_output", "call_id": "d", "output": [
                {"type": "input_text", "text": "a picture"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBO"}
            ]}
        ])
    );
    assert_eq!(outcomes(&all)[1], json!({"id": "b", "outcome": "denied"}));
}

#[test]
fn an_image_type_the_apis_do_not_take_is_described() {
    let mut r = image_result("d");
    r.content_blocks = Some(vec![
        json!({"type": "image", "data": "AAAA", "mimeType": "image/tiff"}),
    ]);
    let body = results_body(Format::Anthropic, &[&r]);
    let text = body["content"][0]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("image/tiff") && text.contains("does not take"),
        "{text}"
    );
}
