//! Read, Write, Edit, read-state tracking and rewind through `toolrt serve`.

mod support;
mod tools_common;

use serde_json::json;
use tools_common::*;

#[test]
fn read_numbers_lines_and_explains_errors() {
    let mut s = Server::start(&[]);
    let cwd = s.cwd();
    std::fs::write(cwd.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(cwd.join("empty.txt"), "").unwrap();
    std::fs::write(cwd.join("b.bin"), b"\x00\x01\x02binary").unwrap();
    std::fs::create_dir(cwd.join("sub")).unwrap();

    let r = s.call("r1", "Read", json!({"file_path": "a.txt"}));
    assert_outcome(&r, "success");
    assert_eq!(content(&r), "     1\tone\n     2\ttwo\n     3\tthree\n");
    let r = s.call(
        "r2",
        "Read",
        json!({"file_path": cwd.join("a.txt"), "offset": 2, "limit": 1}),
    );
    assert_eq!(content(&r), "     2\ttwo\n");
    let r = s.call("r3", "Read", json!({"file_path": "a.md"}));
    assert_outcome(&r, "failed");
    assert!(
        content(&r).contains("does not exist") && content(&r).contains("a.txt"),
        "{r}"
    );
    let r = s.call("r4", "Read", json!({"file_path": "sub"}));
    assert!(
        content(&r).contains("directory") && content(&r).contains("Glob"),
        "{r}"
    );
    let r = s.call("r5", "Read", json!({"file_path": "b.bin"}));
    assert!(content(&r).contains("binary"), "{r}");
    let r = s.call("r6", "Read", json!({"file_path": "empty.txt"}));
    assert_outcome(&r, "success");
    assert!(content(&r).contains("empty"), "{r}");

    let long: String = (1..=2500).map(|i| format!("{i}\n")).collect();
    std::fs::write(cwd.join("long.txt"), long).unwrap();
    let r = s.call("r7", "Read", json!({"file_path": "long.txt"}));
    assert!(
        content(&r).contains("  2000\t2000\n") && content(&r).contains("offset=2001"),
        "{}",
        &content(&r)[..100]
    );
}

#[test]
fn write_then_read_in_one_batch_and_overwrite_needs_a_read() {
    let mut s = Server::start(&[]);
    s.send(json!({"type": "batch", "id": "b", "calls": [
        {"type": "tool_use", "id": "w", "name": "Write", "input": {"file_path": "new/dir/f.txt", "content": "fresh\n"}},
        {"type": "tool_use", "id": "r", "name": "Read", "input": {"file_path": "new/dir/f.txt"}}
    ]}));
    assert_outcome(&s.result("w"), "success");
    assert_eq!(content(&s.result("r")), "     1\tfresh\n");

    std::fs::write(s.cwd().join("theirs.txt"), "user data\n").unwrap();
    let r = s.call(
        "w2",
        "Write",
        json!({"file_path": "theirs.txt", "content": "x"}),
    );
    assert_outcome(&r, "validation_error");
    assert!(content(&r).contains("Read it first"), "{r}");
    assert_eq!(
        std::fs::read_to_string(s.cwd().join("theirs.txt")).unwrap(),
        "user data\n"
    );
}

#[test]
fn unread_and_stale_edits_are_refused() {
    let mut s = Server::start(&[]);
    let f = s.cwd().join("code.rs");
    std::fs::write(&f, "fn main() {}\n").unwrap();
    let edit = json!({"file_path": "code.rs", "old_string": "main", "new_string": "start"});
    let r = s.call("e1", "Edit", edit.clone());
    assert_outcome(&r, "validation_error");
    assert!(content(&r).contains("has not been read"), "{r}");

    s.call("r", "Read", json!({"file_path": "code.rs"}));
    std::fs::write(&f, "fn main() { changed() }\n").unwrap();
    let r = s.call("e2", "Edit", edit.clone());
    assert_outcome(&r, "validation_error");
    assert!(content(&r).contains("Read it again"), "{r}");

    s.call("r2", "Read", json!({"file_path": "code.rs"}));
    let r = s.call("e3", "Edit", edit);
    assert_outcome(&r, "success");
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "fn start() { changed() }\n"
    );
}

#[test]
fn edit_reports_occurrences_and_keeps_crlf() {
    let mut s = Server::start(&[]);
    let f = s.cwd().join("w.txt");
    std::fs::write(&f, "a = 1\r\nb = 1\r\n").unwrap();
    s.call("r", "Read", json!({"file_path": "w.txt"}));
    let r = s.call(
        "e1",
        "Edit",
        json!({"file_path": "w.txt", "old_string": "= 1", "new_string": "= 2"}),
    );
    assert_outcome(&r, "validation_error");
    assert!(content(&r).contains("2 times"), "{r}");
    let r = s.call(
        "e2",
        "Edit",
        json!({"file_path": "w.txt", "old_string": "a = 1\nb", "new_string": "a = 0\nc"}),
    );
    assert_outcome(&r, "success");
    assert_eq!(std::fs::read(&f).unwrap(), b"a = 0\r\nc = 1\r\n");
    let r = s.call(
        "e3",
        "Edit",
        json!({"file_path": "w.txt", "old_string": "x", "new_string": "x"}),
    );
    assert_outcome(&r, "validation_error");
}

#[test]
fn rewind_across_three_calls_restores_exact_bytes() {
    let mut s = Server::start(&[]);
    let cwd = s.cwd();
    let kept = cwd.join("kept.txt");
    let original = b"first\r\nsecond\n\tthird without newline".to_vec();
    std::fs::write(&kept, &original).unwrap();
    let created = cwd.join("made/new.txt");

    s.call("r", "Read", json!({"file_path": "kept.txt"}));
    assert_outcome(
        &s.call(
            "c1",
            "Edit",
            json!({"file_path": "kept.txt", "old_string": "second", "new_string": "2nd"}),
        ),
        "success",
    );
    assert_outcome(
        &s.call(
            "c2",
            "Write",
            json!({"file_path": "made/new.txt", "content": "created\n"}),
        ),
        "success",
    );
    assert_outcome(
        &s.call(
            "c3",
            "Write",
            json!({"file_path": "kept.txt", "content": "overwritten\n"}),
        ),
        "success",
    );

    s.send(json!({"type": "rewind", "to": "c1"}));
    let ev = s.wait_for(WAIT, "the rewound event", |v| {
        v["type"] == "event" && v["event"] == "rewound"
    });
    assert_eq!(ev["to"], "c1");
    let mut files: Vec<String> = ev["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    files.sort();
    let mut want = vec![kept.display().to_string(), created.display().to_string()];
    want.sort();
    assert_eq!(files, want);
    assert_eq!(std::fs::read(&kept).unwrap(), original);
    assert!(
        !created.exists(),
        "a file created by a rewound Write is deleted"
    );

    // Rewound files must be read again before an edit.
    let r = s.call(
        "e",
        "Edit",
        json!({"file_path": "kept.txt", "old_string": "first", "new_string": "1st"}),
    );
    assert_outcome(&r, "validation_error");
    let (_, status) = s.finish();
    assert!(status.success());
}

#[test]
fn rewind_to_an_unknown_id_is_an_error_line() {
    let mut s = Server::start(&[]);
    s.send(json!({"type": "rewind", "to": "never-ran"}));
    let line = s.wait_for(WAIT, "an error line", |v| v["type"] == "error");
    assert!(
        line["message"].as_str().unwrap().contains("never-ran"),
        "{line}"
    );
}

#[test]
fn rewind_to_a_call_that_changed_nothing_or_was_rewound_is_an_error_line() {
    let mut s = Server::start(&[]);
    let cwd = s.cwd();
    std::fs::write(cwd.join("f.txt"), "one\n").unwrap();
    s.call("r", "Read", json!({"file_path": "f.txt"}));
    assert_outcome(
        &s.call(
            "w",
            "Write",
            json!({"file_path": "f.txt", "content": "two\n"}),
        ),
        "success",
    );
    // A Read changed no file.
    s.send(json!({"type": "rewind", "to": "r"}));
    let line = s.wait_for(WAIT, "an error line", |v| v["type"] == "error");
    assert!(
        line["message"].as_str().unwrap().contains("\"r\""),
        "{line}"
    );
    s.send(json!({"type": "rewind", "to": "w"}));
    s.wait_for(WAIT, "the rewound event", |v| v["event"] == "rewound");
    assert_eq!(std::fs::read_to_string(cwd.join("f.txt")).unwrap(), "one\n");
    // Already rewound.
    s.send(json!({"type": "rewind", "to": "w"}));
    let line = s.wait_for(WAIT, "a second error line", |v| {
        v["type"] == "error" && v["message"].as_str().is_some_and(|m| m.contains("\"w\""))
    });
    assert!(
        line["message"].as_str().unwrap().contains("no checkpoint"),
        "{line}"
    );
    let (_, status) = s.finish();
    assert!(status.success());
}

/// Changes of one file sent as separate calls run in parallel: none of them may be lost. Each
/// Edit (and Write) checks, writes and records the file as one step, so a second change of the
/// same file waits and then sees the first: every change that reports success is in the file.
#[test]
fn parallel_changes_of_one_file_lose_nothing() {
    let mut s = Server::start(&[]);
    let file = s.cwd().join("shared.txt");
    // Several rounds: without the per-file step, a round loses an update about half the time.
    for round in 0..6 {
        let lines: String = (0..8).map(|i| format!("L{i}\n")).collect();
        std::fs::write(&file, &lines).unwrap();
        assert_outcome(
            &s.call(
                &format!("r{round}"),
                "Read",
                json!({"file_path": "shared.txt"}),
            ),
            "success",
        );
        for i in 0..8 {
            s.send(json!({"type": "tool_use", "id": format!("e{round}-{i}"), "name": "Edit",
                "input": {"file_path": "shared.txt", "old_string": format!("L{i}\n"), "new_string": format!("E{i}\n")}}));
        }
        let succeeded: Vec<usize> = (0..8)
            .filter(|i| s.result(&format!("e{round}-{i}"))["outcome"] == "success")
            .collect();
        let text = std::fs::read_to_string(&file).unwrap();
        for i in &succeeded {
            assert!(
                text.contains(&format!("E{i}\n")),
                "round {round}: edit {i} reported success but the file lost it: {text:?}"
            );
        }
        // The same caller's earlier changes count as seen: every Edit applies.
        assert_eq!(succeeded.len(), 8, "round {round}: {text:?}");
    }
    // Writes too: each one that succeeds is what the file held right after it, and the last
    // one to succeed is what it holds now.
    assert_outcome(
        &s.call("rw", "Read", json!({"file_path": "shared.txt"})),
        "success",
    );
    for i in 0..6 {
        s.send(
            json!({"type": "tool_use", "id": format!("w{i}"), "name": "Write",
            "input": {"file_path": "shared.txt", "content": format!("W{i}\n")}}),
        );
    }
    let wrote: Vec<usize> = (0..6)
        .filter(|i| s.result(&format!("w{i}"))["outcome"] == "success")
        .collect();
    assert_eq!(wrote.len(), 6, "every Write follows the one before it");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with('W') && text.len() == 3, "{text:?}");
}

/// An old_string that is absent, or found more than once without `replace_all`, is the call's
/// validation error (as the reference answers it), decided on the file as it is when checked;
/// Write and Edit do not create a file through a link that points nowhere.
#[test]
fn edit_match_errors_are_validation_errors_and_dangling_links_are_refused() {
    let mut s = Server::start(&[]);
    let cwd = s.cwd();
    std::fs::write(cwd.join("notes.txt"), "alpha alpha\n").unwrap();
    s.send(json!({"type": "batch", "id": "b", "calls": [
        {"id": "r", "name": "Read", "input": {"file_path": "notes.txt"}},
        {"id": "missing", "name": "Edit", "input": {"file_path": "notes.txt", "old_string": "beta", "new_string": "g"}},
        {"id": "twice", "name": "Edit", "input": {"file_path": "notes.txt", "old_string": "alpha", "new_string": "g"}}
    ]}));
    assert_outcome(&s.result("r"), "success");
    let r = s.result("missing");
    assert_outcome(&r, "validation_error");
    assert!(content(&r).contains("was not found"), "{r}");
    let r = s.result("twice");
    assert_outcome(&r, "validation_error");
    assert!(content(&r).contains("occurs 2 times"), "{r}");
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "alpha alpha\n"
    );

    // A path that cannot be a file (a folder on the way is a file) is refused as such.
    let r = s.call(
        "wf",
        "Write",
        json!({"file_path": "notes.txt/sub", "content": "x"}),
    );
    assert_outcome(&r, "validation_error");
    assert!(
        content(&r).contains("cannot write") && !content(&r).contains("checkpoint"),
        "{r}"
    );

    std::os::unix::fs::symlink("nowhere.txt", cwd.join("dangling")).unwrap();
    let r = s.call(
        "w",
        "Write",
        json!({"file_path": "dangling", "content": "via"}),
    );
    assert_outcome(&r, "validation_error");
    assert!(
        content(&r).contains("symbolic link") && content(&r).contains("nowhere.txt"),
        "{r}"
    );
    let r = s.call(
        "c",
        "Edit",
        json!({"file_path": "dangling", "old_string": "", "new_string": "via"}),
    );
    assert_outcome(&r, "validation_error");
    assert!(!cwd.join("nowhere.txt").exists(), "nothing was created");
    assert!(
        std::fs::symlink_metadata(cwd.join("dangling")).is_ok(),
        "the link is kept"
    );
    let r = s.call("rd", "Read", json!({"file_path": "dangling"}));
    assert_outcome(&r, "failed");
    assert!(
        content(&r).contains("symbolic link") && !content(&r).contains("Did you mean"),
        "{r}"
    );
}

/// A straight quote in old_string matches a curly one in the file, and the new text takes the
/// file's style, as the reference does.
#[test]
fn edit_matches_curly_quotes_with_straight_ones() {
    let mut s = Server::start(&[]);
    let f = s.cwd().join("q.txt");
    std::fs::write(&f, "it\u{2019}s \u{201C}here\u{201D}\n").unwrap();
    s.call("r", "Read", json!({"file_path": "q.txt"}));
    let r = s.call(
        "e",
        "Edit",
        json!({"file_path": "q.txt", "old_string": "it's \"here\"", "new_string": "that's \"there\""}),
    );
    assert_outcome(&r, "success");
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "that\u{2019}s \u{201C}there\u{201D}\n"
    );
}

/// After Writes of notes.txt and sub/new.txt, notes.txt becomes a symlink to a file outside
/// the workspace and `sub` a symlink to a folder outside: the rewind writes into neither, deletes
/// nothing there, and names the two files it left as they are.
#[test]
fn rewind_follows_no_symlink_put_on_a_changed_path() {
    let mut s = Server::start(&[]);
    let cwd = s.cwd();
    let outside = s.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let (secret, theirs) = (outside.join("secret.txt"), outside.join("new.txt"));
    std::fs::write(cwd.join("notes.txt"), "old notes\n").unwrap();
    s.call("r", "Read", json!({"file_path": "notes.txt"}));
    for (id, file) in [("w1", "notes.txt"), ("w2", "sub/new.txt")] {
        let input = json!({"file_path": file, "content": "mine\n"});
        assert_outcome(&s.call(id, "Write", input), "success");
    }
    std::fs::write(&secret, "SECRET\n").unwrap();
    std::fs::write(&theirs, "theirs\n").unwrap();
    std::fs::remove_file(cwd.join("notes.txt")).unwrap();
    std::os::unix::fs::symlink(&secret, cwd.join("notes.txt")).unwrap();
    std::fs::remove_dir_all(cwd.join("sub")).unwrap();
    std::os::unix::fs::symlink(&outside, cwd.join("sub")).unwrap();

    s.send(json!({"type": "rewind", "to": "w1"}));
    let ev = s.wait_for(WAIT, "the rewound event", |v| {
        v["type"] == "event" && v["event"] == "rewound"
    });
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "SECRET\n");
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "theirs\n");
    assert_eq!(ev["files"], json!([]), "{ev}");
    let left: Vec<&str> = (ev["not_restored"].as_array().unwrap().iter())
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    let want = [cwd.join("notes.txt"), cwd.join("sub/new.txt")];
    assert_eq!(left, want.map(|p| p.display().to_string()), "{ev}");
    let (_, status) = s.finish();
    assert!(status.success());
}
