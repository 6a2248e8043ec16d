//! `toolrt mcp-serve` driven by an rmcp client (the official Rust SDK): tools/list is the
//! effective registry with hints, and every tools/call walks the pipeline — a deny rule, a
//! blocking PreToolUse hook and asks (elicitation either way, `--ask` without it) hold.

mod mcp_serve_support;
mod support;

use mcp_serve_support::{call, connect, deny_and_hook_hold, guarded_flags, outcome, text};
use rmcp::model::ErrorCode;
use serde_json::json;
use support::Sandbox;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_is_the_registry_with_hints_and_aliases() {
    let sb = Sandbox::new();
    let settings = sb.settings_file(&json!({"aliases": {"cat": "Read"}}));
    let c = connect(
        &sb.cwd,
        &sb.out,
        &["--settings", &settings, "--tools", "Read,Bash,Write"],
        None,
    )
    .await;
    let tools = c.service.list_all_tools().await.unwrap();
    let by_name = |n: &str| {
        tools.iter().find(|t| t.name == n).unwrap_or_else(|| {
            panic!(
                "{n} not listed: {:?}",
                tools.iter().map(|t| &t.name).collect::<Vec<_>>()
            )
        })
    };
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    assert_eq!(names, ["Bash", "Read", "Write", "cat"]);
    let read = by_name("Read").annotations.clone().unwrap();
    assert_eq!(
        (read.read_only_hint, read.open_world_hint),
        (Some(true), Some(false))
    );
    let bash = by_name("Bash").annotations.clone().unwrap();
    assert_eq!(
        (
            bash.read_only_hint,
            bash.destructive_hint,
            bash.open_world_hint
        ),
        (Some(false), Some(true), Some(true))
    );
    let write = by_name("Write").annotations.clone().unwrap();
    assert_eq!(write.read_only_hint, Some(false));
    assert_eq!(by_name("cat").input_schema, by_name("Read").input_schema);
    assert!(by_name("Read").input_schema.contains_key("properties"));
    assert!(c.finish().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_succeeds_and_an_unknown_tool_is_invalid_params() {
    let sb = Sandbox::new();
    let file = sb.write("notes.txt", "alpha\nbeta\n");
    let c = connect(&sb.cwd, &sb.out, &[], None).await;
    let read = c
        .service
        .call_tool(call("Read", json!({"file_path": file})))
        .await
        .unwrap();
    assert_eq!(read.is_error, Some(false), "{read:?}");
    assert!(text(&read).contains("beta"), "{read:?}");
    assert_eq!(outcome(&read), "success");
    // Coercion, then the schema stage: a wrong type is toolrt's schema_error, as isError.
    let bad = c
        .service
        .call_tool(call("Read", json!({"file_path": 7, "limit": "x"})))
        .await
        .unwrap();
    assert_eq!(bad.is_error, Some(true), "{bad:?}");
    assert_eq!(outcome(&bad), "schema_error");
    let unknown = c
        .service
        .call_tool(call("NoSuchTool", json!({})))
        .await
        .unwrap_err();
    match unknown {
        rmcp::ServiceError::McpError(e) => {
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{e:?}");
            assert!(e.message.contains("NoSuchTool"), "{e:?}");
        }
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
    assert!(c.finish().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_rule_and_a_blocking_hook_hold() {
    let sb = Sandbox::new();
    let flags = guarded_flags(&sb);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let c = connect(&sb.cwd, &sb.out, &flags, None).await;
    deny_and_hook_hold(c.service.peer(), &sb).await;
    assert!(c.finish().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_is_an_elicitation_honoured_both_ways() {
    for approve in [true, false] {
        let sb = Sandbox::new();
        let c = connect(&sb.cwd, &sb.out, &[], Some(approve)).await;
        let target = sb.path("asked.txt");
        let w = c
            .service
            .call_tool(call("Write", json!({"file_path": target, "content": "ok"})))
            .await
            .unwrap();
        let asked = c.client.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 1, "one elicitation per ask: {asked:?}");
        assert!(asked[0].contains("Write"), "{asked:?}");
        if approve {
            assert_eq!(outcome(&w), "success", "{w:?}");
            assert_eq!(std::fs::read_to_string(&target).unwrap(), "ok");
        } else {
            assert_eq!(outcome(&w), "denied", "{w:?}");
            assert!(text(&w).contains("declined"), "{w:?}");
            assert!(!target.exists());
        }
        assert!(c.finish().await.success());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_elicitation_the_ask_flag_decides_and_says_so() {
    let sb = Sandbox::new();
    // Outside the workspace: Read asks.
    let outside = sb.dir.path().join("outside.txt");
    std::fs::write(&outside, "far away\n").unwrap();
    let target = sb.path("asked.txt");

    let c = connect(&sb.cwd, &sb.out, &[], None).await;
    let r = c
        .service
        .call_tool(call("Read", json!({"file_path": outside})))
        .await
        .unwrap();
    assert_eq!(outcome(&r), "denied", "{r:?}");
    assert!(text(&r).contains("--ask deny"), "{r:?}");
    assert!(c.finish().await.success());

    let c = connect(&sb.cwd, &sb.out, &["--ask", "allow-read-only"], None).await;
    let r = c
        .service
        .call_tool(call("Read", json!({"file_path": outside})))
        .await
        .unwrap();
    assert_eq!(outcome(&r), "success", "{r:?}");
    assert!(text(&r).contains("far away"), "{r:?}");
    let meta = serde_json::to_value(&r).unwrap()["_meta"]["toolrt/ask"].clone();
    assert!(meta.as_str().unwrap().contains("allow-read-only"), "{meta}");
    let w = c
        .service
        .call_tool(call("Write", json!({"file_path": target, "content": "x"})))
        .await
        .unwrap();
    assert_eq!(outcome(&w), "denied", "{w:?}");
    assert!(text(&w).contains("allow-read-only"), "{w:?}");
    assert!(!target.exists());
    assert!(c.finish().await.success());
}
