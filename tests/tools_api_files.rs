//! Read, Write, Edit, read-state tracking and rewind through the `Tool` trait.

mod tools_api_common;

use serde_json::json;
use toolrt::{RewindError, ToolState, ToolStatus};
use tools_api_common::*;

#[tokio::test]
async fn read_numbers_lines_and_windows() {
    let e = env();
    std::fs::write(e.cwd().join("a.txt"), "one\ntwo\nthree\n").unwrap();
    let out = call(&e, "Read", "r", json!({"file_path": "a.txt"}))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Success);
    assert_eq!(out.content, "     1\tone\n     2\ttwo\n     3\tthree\n");
    let out = call(
        &e,
        "Read",
        "r",
        json!({"file_path": "a.txt", "offset": 2, "limit": 1}),
    )
    .await
    .unwrap();
    assert_eq!(out.content, "     2\ttwo\n");

    let big: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(e.cwd().join("big.txt"), big).unwrap();
    let out = call(&e, "Read", "r", json!({"file_path": "big.txt"}))
        .await
        .unwrap();
    assert!(out.content.contains("  2000\tline 2000\n"));
    assert!(
        out.content.contains("offset=2001"),
        "{}",
        &out.content[out.content.len() - 300..]
    );

    let wide: String = (0..300)
        .map(|_| format!("{}\n", "w".repeat(1000)))
        .collect();
    std::fs::write(e.cwd().join("wide.txt"), wide).unwrap();
    let out = call(&e, "Read", "r", json!({"file_path": "wide.txt"}))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Success);
    assert!(out.content.contains("Showing lines 1–"));
    let out = call(
        &e,
        "Read",
        "r",
        json!({"file_path": "wide.txt", "offset": 1, "limit": 300}),
    )
    .await
    .unwrap();
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(out.content.contains("limit="), "{}", out.content);
}

#[tokio::test]
async fn read_errors_are_clear() {
    let e = env();
    std::fs::write(e.cwd().join("notes.md"), "x").unwrap();
    std::fs::write(e.cwd().join("empty.txt"), "").unwrap();
    std::fs::write(e.cwd().join("blob.bin"), b"\x7fELF\0\0\x01").unwrap();
    std::fs::create_dir(e.cwd().join("dir")).unwrap();

    let out = call(&e, "Read", "r", json!({"file_path": "notes.txt"}))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(
        out.content.contains("does not exist") && out.content.contains("notes.md"),
        "{}",
        out.content
    );
    let out = call(&e, "Read", "r", json!({"file_path": "dir"}))
        .await
        .unwrap();
    assert!(
        out.content.contains("is a directory") && out.content.contains("Glob"),
        "{}",
        out.content
    );
    let out = call(&e, "Read", "r", json!({"file_path": "blob.bin"}))
        .await
        .unwrap();
    assert!(out.content.contains("binary"), "{}", out.content);
    let out = call(&e, "Read", "r", json!({"file_path": "empty.txt"}))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Success);
    assert!(out.content.contains("is empty"));
}

#[tokio::test]
async fn normalize_makes_paths_absolute() {
    let e = env();
    let read = tool("Read");
    let mut input = json!({"file_path": "./sub/../a.txt"})
        .as_object()
        .unwrap()
        .clone();
    read.normalize(&mut input, &e.session);
    assert_eq!(
        input["file_path"],
        json!(e.cwd().join("a.txt").display().to_string())
    );
}

#[tokio::test]
async fn write_creates_parents_and_needs_a_read_to_overwrite() {
    let e = env();
    let out = call(
        &e,
        "Write",
        "w1",
        json!({"file_path": "deep/er/new.txt", "content": "hi\n"}),
    )
    .await
    .unwrap();
    assert_eq!(out.status, ToolStatus::Success, "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(e.cwd().join("deep/er/new.txt")).unwrap(),
        "hi\n"
    );
    // Written by toolrt: counts as read in the state it left.
    let out = call(
        &e,
        "Write",
        "w2",
        json!({"file_path": "deep/er/new.txt", "content": "again\n"}),
    )
    .await
    .unwrap();
    assert_eq!(out.status, ToolStatus::Success);

    std::fs::write(e.cwd().join("existing.txt"), "mine").unwrap();
    let err = call(
        &e,
        "Write",
        "w3",
        json!({"file_path": "existing.txt", "content": "x"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("has not been read"), "{err}");
    call(&e, "Read", "r", json!({"file_path": "existing.txt"}))
        .await
        .unwrap();
    let out = call(
        &e,
        "Write",
        "w4",
        json!({"file_path": "existing.txt", "content": "x"}),
    )
    .await
    .unwrap();
    assert_eq!(out.status, ToolStatus::Success);
}

#[tokio::test]
async fn edit_refuses_unread_and_stale_files() {
    let e = env();
    let f = e.cwd().join("f.txt");
    std::fs::write(&f, "alpha\nbeta\n").unwrap();
    let edit = json!({"file_path": "f.txt", "old_string": "beta", "new_string": "gamma"});
    let err = call(&e, "Edit", "e1", edit.clone()).await.unwrap_err();
    assert!(
        err.contains("has not been read") && err.contains("Read it first"),
        "{err}"
    );

    // A partial read counts as a read.
    call(&e, "Read", "r", json!({"file_path": "f.txt", "limit": 1}))
        .await
        .unwrap();
    std::fs::write(&f, "alpha\nbeta\nchanged by someone\n").unwrap();
    let err = call(&e, "Edit", "e2", edit.clone()).await.unwrap_err();
    assert!(
        err.contains("has changed since it was last read") && err.contains("Read it"),
        "{err}"
    );

    call(&e, "Read", "r2", json!({"file_path": "f.txt"}))
        .await
        .unwrap();
    let out = call(&e, "Edit", "e3", edit).await.unwrap();
    assert_eq!(out.status, ToolStatus::Success, "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "alpha\ngamma\nchanged by someone\n"
    );
    assert!(out.content.contains("     2\tgamma"), "{}", out.content);
    // Edited by toolrt: a second edit needs no new read.
    let out = call(
        &e,
        "Edit",
        "e4",
        json!({"file_path": "f.txt", "old_string": "alpha", "new_string": "A"}),
    )
    .await
    .unwrap();
    assert_eq!(out.status, ToolStatus::Success);
}

#[tokio::test]
async fn read_before_edit_can_be_switched_off() {
    let e = env_with_state(|out| ToolState::new(false, out.join("cp")));
    std::fs::write(e.cwd().join("f.txt"), "a").unwrap();
    let out = call(
        &e,
        "Edit",
        "e",
        json!({"file_path": "f.txt", "old_string": "a", "new_string": "b"}),
    )
    .await
    .unwrap();
    assert_eq!(out.status, ToolStatus::Success);
}

#[tokio::test]
async fn edit_counts_occurrences_and_keeps_crlf_and_bom() {
    let e = env();
    let f = e.cwd().join("w.txt");
    std::fs::write(&f, b"\xEF\xBB\xBFx = 1\r\ny = 1\r\nz = 2\r\n").unwrap();
    call(&e, "Read", "r", json!({"file_path": "w.txt"}))
        .await
        .unwrap();
    // An old_string found twice, or not at all, is refused by validation, before the call.
    let err = call(
        &e,
        "Edit",
        "e1",
        json!({"file_path": "w.txt", "old_string": "= 1", "new_string": "= 3"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("occurs 2 times"), "{err}");
    let err = call(
        &e,
        "Edit",
        "e2",
        json!({"file_path": "w.txt", "old_string": "nope", "new_string": "x"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("not found"), "{err}");
    let err = call(
        &e,
        "Edit",
        "e3",
        json!({"file_path": "w.txt", "old_string": "a", "new_string": "a"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("the same"), "{err}");

    let out = call(&e, "Edit", "e4", json!({"file_path": "w.txt", "old_string": "y = 1\nz = 2", "new_string": "y = 10\nw = 0\nz = 2"})).await.unwrap();
    assert_eq!(out.status, ToolStatus::Success, "{}", out.content);
    assert_eq!(
        std::fs::read(&f).unwrap(),
        b"\xEF\xBB\xBFx = 1\r\ny = 10\r\nw = 0\r\nz = 2\r\n"
    );
    let out = call(&e, "Edit", "e5", json!({"file_path": "w.txt", "old_string": "= 1", "new_string": "= 7", "replace_all": true})).await.unwrap();
    assert!(out.content.contains("2 occurrences"), "{}", out.content);
    assert_eq!(
        std::fs::read(&f).unwrap(),
        b"\xEF\xBB\xBFx = 7\r\ny = 70\r\nw = 0\r\nz = 2\r\n"
    );
}

#[tokio::test]
async fn rewind_across_three_calls_restores_exact_bytes() {
    let e = env();
    let existing = e.cwd().join("keep.bin");
    let original: Vec<u8> = b"line one\r\nline two\n\xff\xfe raw bytes\n".to_vec();
    std::fs::write(&existing, &original).unwrap();
    let created = e.cwd().join("made/new.txt");

    let out = call(
        &e,
        "Write",
        "c1",
        json!({"file_path": "made/new.txt", "content": "fresh\n"}),
    )
    .await
    .unwrap();
    assert_eq!(out.status, ToolStatus::Success);
    call(&e, "Read", "r", json!({"file_path": "keep.bin"}))
        .await
        .unwrap();
    let out = call(
        &e,
        "Write",
        "c2",
        json!({"file_path": "keep.bin", "content": "replaced\n"}),
    )
    .await
    .unwrap();
    assert_eq!(out.status, ToolStatus::Success);
    let out = call(
        &e,
        "Edit",
        "c3",
        json!({"file_path": "made/new.txt", "old_string": "fresh", "new_string": "edited"}),
    )
    .await
    .unwrap();
    assert_eq!(out.status, ToolStatus::Success, "{}", out.content);

    // Undo only the last call.
    let files = e.state.rewind("c3").unwrap().files;
    assert_eq!(files, vec![created.clone()]);
    assert_eq!(std::fs::read_to_string(&created).unwrap(), "fresh\n");

    // Undo from the first call on: the created file goes, the existing one gets its bytes back.
    let files = e.state.rewind("c1").unwrap().files;
    assert_eq!(files, vec![created.clone(), existing.clone()]);
    assert!(!created.exists());
    assert_eq!(std::fs::read(&existing).unwrap(), original);
    assert!(matches!(e.state.rewind("c2"), Err(RewindError::Unknown(_))));
    assert!(
        e.state
            .rewind("zzz")
            .unwrap_err()
            .to_string()
            .contains("no checkpoint")
    );

    // Rewound files count as unread.
    let err = call(
        &e,
        "Edit",
        "c4",
        json!({"file_path": "keep.bin", "old_string": "line", "new_string": "x"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("has not been read"), "{err}");
}

#[tokio::test]
async fn concurrency_flags() {
    let input = Default::default();
    assert!(tool("Read").is_concurrency_safe(&input));
    assert!(!tool("Write").is_concurrency_safe(&input));
    assert!(!tool("Edit").is_concurrency_safe(&input));
    for t in ToolState::default().tools() {
        assert_eq!(
            t.input_schema()["additionalProperties"],
            json!(false),
            "{}",
            t.name()
        );
    }
    let names: Vec<String> = ToolState::default()
        .tools()
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(names, toolrt::DEFAULT_TOOLS);
}

/// The session state is shared across tasks (it holds the background tasks, so this covers
/// them too).
#[test]
fn tool_state_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ToolState>();
}
