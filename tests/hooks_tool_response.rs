//! What PostToolUse, PostToolUseFailure and PostToolBatch hooks receive of a call's result,
//! through `toolrt serve`: for each built-in tool, `tool_response` has the field names and JSON
//! types of the reference CLI's published output type for that tool (written out below), and no
//! top-level name that type does not have; the failure `error` and the batch's results are
//! worded as the reference words them. A hook script written for the reference, reading
//! `.tool_response.stdout`, works unchanged.

mod hooks_support;
mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;

use hooks_support::*;
use serde_json::{Value, json};

/// A JSON type a field of an output type has.
#[derive(Debug, Clone, Copy)]
enum Ty {
    Str,
    Num,
    Bool,
    /// An array of strings.
    Strs,
    Obj,
    Arr,
    /// A string, or null.
    StrOrNull,
    /// Unified-diff hunks: `[{oldStart, oldLines, newStart, newLines, lines: [string]}]`.
    Hunks,
}

/// One field of an output type: name, type, required.
type Field = (&'static str, Ty, bool);

// The reference CLI's published output types, field by field. Each is a closed object type:
// a name outside its list is not part of it.

const BASH_OUTPUT: &[Field] = &[
    ("stdout", Ty::Str, true),
    ("stderr", Ty::Str, true),
    ("interrupted", Ty::Bool, true),
    ("rawOutputPath", Ty::Str, false),
    ("isImage", Ty::Bool, false),
    ("backgroundTaskId", Ty::Str, false),
    ("backgroundedByUser", Ty::Bool, false),
    ("timedOutAfterMs", Ty::Num, false),
    ("backgroundCwdHint", Ty::Str, false),
    ("backgroundEndsWithFinalResponse", Ty::Bool, false),
    ("backgroundWakesOwner", Ty::Bool, false),
    ("dangerouslyDisableSandbox", Ty::Bool, false),
    ("returnCodeInterpretation", Ty::Str, false),
    ("noOutputExpected", Ty::Bool, false),
    ("structuredContent", Ty::Arr, false),
    ("persistedOutputPath", Ty::Str, false),
    ("persistedOutputSize", Ty::Num, false),
    ("staleReadFileStateHint", Ty::Str, false),
    ("ghRateLimitHint", Ty::Str, false),
    ("gitOperation", Ty::Obj, false),
];

/// The `text` variant of the Read output; `file` is [`FILE_READ_TEXT_FILE`].
const FILE_READ_TEXT: &[Field] = &[
    ("type", Ty::Str, true),
    ("file", Ty::Obj, true),
    ("artifactRead", Ty::Obj, false),
];

const FILE_READ_TEXT_FILE: &[Field] = &[
    ("filePath", Ty::Str, true),
    ("content", Ty::Str, true),
    ("numLines", Ty::Num, true),
    ("startLine", Ty::Num, true),
    ("totalLines", Ty::Num, true),
    ("truncatedByTokenCap", Ty::Bool, false),
];

const FILE_WRITE_OUTPUT: &[Field] = &[
    ("type", Ty::Str, true),
    ("filePath", Ty::Str, true),
    ("content", Ty::Str, true),
    ("structuredPatch", Ty::Hunks, true),
    ("originalFile", Ty::StrOrNull, true),
    ("gitDiff", Ty::Obj, false),
    ("userModified", Ty::Bool, false),
    ("staged", Ty::Bool, false),
];

const FILE_EDIT_OUTPUT: &[Field] = &[
    ("filePath", Ty::Str, true),
    ("oldString", Ty::Str, true),
    ("newString", Ty::Str, true),
    ("originalFile", Ty::StrOrNull, true),
    ("structuredPatch", Ty::Hunks, true),
    ("userModified", Ty::Bool, true),
    ("replaceAll", Ty::Bool, true),
    ("gitDiff", Ty::Obj, false),
    ("staged", Ty::Bool, false),
];

const GLOB_OUTPUT: &[Field] = &[
    ("durationMs", Ty::Num, true),
    ("numFiles", Ty::Num, true),
    ("filenames", Ty::Strs, true),
    ("truncated", Ty::Bool, true),
    ("totalMatches", Ty::Num, false),
    ("countIsComplete", Ty::Bool, false),
    ("timedOut", Ty::Bool, false),
];

const GREP_OUTPUT: &[Field] = &[
    ("mode", Ty::Str, false),
    ("numFiles", Ty::Num, true),
    ("filenames", Ty::Strs, true),
    ("content", Ty::Str, false),
    ("numLines", Ty::Num, false),
    ("numMatches", Ty::Num, false),
    ("totalFiles", Ty::Num, false),
    ("totalLines", Ty::Num, false),
    ("appliedLimit", Ty::Num, false),
    ("appliedOffset", Ty::Num, false),
    ("timedOut", Ty::Bool, false),
];

const WEB_FETCH_OUTPUT: &[Field] = &[
    ("bytes", Ty::Num, true),
    ("code", Ty::Num, true),
    ("codeText", Ty::Str, true),
    ("result", Ty::Str, true),
    ("durationMs", Ty::Num, true),
    ("url", Ty::Str, true),
    ("artifactRead", Ty::Obj, false),
];

const TASK_STOP_OUTPUT: &[Field] = &[
    ("message", Ty::Str, true),
    ("task_id", Ty::Str, true),
    ("task_type", Ty::Str, true),
    ("command", Ty::Str, false),
];

// TaskOutput has no published output type in the reference: this is toolrt's own shape, as
// docs/SEMANTICS.md describes it.

const TASK_OUTPUT_TOOLRT: &[Field] =
    &[("retrieval_status", Ty::Str, true), ("task", Ty::Obj, true)];

const TASK_OUTPUT_TOOLRT_TASK: &[Field] = &[
    ("task_id", Ty::Str, true),
    ("task_type", Ty::Str, true),
    ("status", Ty::Str, true),
    ("description", Ty::Str, true),
    ("output", Ty::Str, true),
    ("exitCode", Ty::Num, false),
];

fn has_type(v: &Value, ty: Ty) -> bool {
    match ty {
        Ty::Str => v.is_string(),
        Ty::Num => v.is_number(),
        Ty::Bool => v.is_boolean(),
        Ty::Strs => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
        Ty::Obj => v.is_object(),
        Ty::Arr => v.is_array(),
        Ty::StrOrNull => v.is_string() || v.is_null(),
        Ty::Hunks => v.as_array().is_some_and(|hunks| {
            hunks.iter().all(|h| {
                let nums = ["oldStart", "oldLines", "newStart", "newLines"];
                h.as_object().is_some_and(|o| o.len() == 5)
                    && nums.iter().all(|k| h[k].is_u64())
                    && has_type(&h["lines"], Ty::Strs)
            })
        }),
    }
}

/// Asserts that `value` is an object of the type `fields` describes: every required field
/// present, every field of the right JSON type, and no other name.
fn assert_shape(what: &str, value: &Value, fields: &[Field]) {
    let Some(obj) = value.as_object() else {
        panic!("{what}: not an object: {value}");
    };
    for (name, ty, required) in fields {
        match obj.get(*name) {
            None if *required => panic!("{what}: required field {name} missing: {value}"),
            None => {}
            // An optional field may be absent, never null (except where the type says so).
            Some(v) => assert!(has_type(v, *ty), "{what}: {name} is not {ty:?}: {v}"),
        }
    }
    for name in obj.keys() {
        assert!(
            fields.iter().any(|(f, _, _)| f == name),
            "{what}: {name} is not a field of the output type: {value}"
        );
    }
}

/// A session whose PostToolUse and PostToolUseFailure hooks log their input; each call is sent
/// after the previous one's result, so a Read comes before the Write that needs it.
struct Logged {
    fx: Fixture,
    log: PathBuf,
}

impl Logged {
    fn new() -> Self {
        let fx = Fixture::new();
        let (logger, log) = fx.logger("post");
        fx.settings(json!({"hooks": {
            "PostToolUse": [group("*", &[&logger])],
            "PostToolUseFailure": [group("*", &[&logger])],
        }}));
        Self { fx, log }
    }

    /// Runs `calls` one after the other; returns the session's lines.
    fn run(&self, calls: &[Value]) -> Run {
        let mut session = self.fx.serve("bypassPermissions");
        for c in calls {
            session.send(c);
            session.result(c["id"].as_str().unwrap());
        }
        session.finish()
    }

    /// The input the hook received for call `id`.
    fn input(&self, id: &str) -> Value {
        let lines = log_lines(&self.log);
        let found: Vec<&Value> = lines
            .iter()
            .map(|l| &l["input"])
            .filter(|i| i["tool_use_id"] == id)
            .collect();
        assert_eq!(found.len(), 1, "hook inputs of {id}: {lines:#?}");
        found[0].clone()
    }

    /// The `tool_response` of call `id`, checked to come with a PostToolUse event.
    fn response(&self, id: &str) -> Value {
        let input = self.input(id);
        assert_eq!(input["hook_event_name"], "PostToolUse", "{input}");
        input["tool_response"].clone()
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.fx.cwd().join(name);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }
}

#[test]
fn bash_response_is_the_bash_output_type() {
    let t = Logged::new();
    let run = t.run(&[
        bash("out", "echo hi"),
        bash("err", "echo err >&2"),
        bash("silent", "mkdir -p made && touch made/x"),
        bash("long", "seq 1 20000"),
        call(
            "bg",
            "Bash",
            json!({"command": "sleep 30", "run_in_background": true}),
        ),
    ]);
    for id in ["out", "err", "silent", "long", "bg"] {
        assert_eq!(run.outcome(id), "success", "{id}");
        assert_shape(id, &t.response(id), BASH_OUTPUT);
    }
    let out = t.response("out");
    assert_eq!(out["stdout"], "hi", "trimmed as the reference trims it");
    assert_eq!(out["stderr"], "");
    assert_eq!(out["interrupted"], false);
    assert_eq!(out["noOutputExpected"], false);
    // stderr is merged into stdout, as the model sees it.
    assert_eq!(t.response("err")["stdout"], "err");
    assert_eq!(t.response("silent")["noOutputExpected"], true);
    assert_eq!(t.response("silent")["stdout"], "");
    // A long output is kept whole in a file: the response names it and its size.
    let long = t.response("long");
    let path = long["persistedOutputPath"].as_str().unwrap();
    let whole = std::fs::read_to_string(path).unwrap();
    assert!(whole.ends_with("19999\n20000\n"));
    assert_eq!(long["persistedOutputSize"], whole.len());
    assert!(long["stdout"].as_str().unwrap().starts_with("1\n2\n3\n"));
    assert_eq!(t.response("bg")["backgroundTaskId"], "bg-1");
    assert_eq!(t.response("bg")["stdout"], "");
}

#[test]
fn read_response_is_the_file_read_output_type() {
    let t = Logged::new();
    let file = t.write("a.txt", "one\ntwo\nthree\n");
    let empty = t.write("empty.txt", "");
    let run = t.run(&[
        call("whole", "Read", json!({"file_path": &file})),
        call(
            "window",
            "Read",
            json!({"file_path": "a.txt", "offset": 2, "limit": 1}),
        ),
        call("empty", "Read", json!({"file_path": &empty})),
    ]);
    for (id, content, start, lines) in [
        ("whole", "one\ntwo\nthree\n", 1, 3),
        ("window", "two", 2, 1),
        ("empty", "", 1, 0),
    ] {
        assert_eq!(run.outcome(id), "success", "{id}");
        let r = t.response(id);
        assert_shape(id, &r, FILE_READ_TEXT);
        assert_shape(id, &r["file"], FILE_READ_TEXT_FILE);
        assert_eq!(r["type"], "text");
        assert_eq!(r["file"]["content"], content, "{id}: the lines, unnumbered");
        assert_eq!(r["file"]["startLine"], start, "{id}");
        assert_eq!(r["file"]["numLines"], lines, "{id}");
    }
    assert_eq!(t.response("whole")["file"]["filePath"], file);
    assert_eq!(
        t.response("window")["file"]["filePath"],
        file,
        "absolute, as the tool input is"
    );
    assert_eq!(t.response("window")["file"]["totalLines"], 3);
}

#[test]
fn write_response_is_the_file_write_output_type() {
    let t = Logged::new();
    let old = t.write("w.txt", "old\nsame\n");
    let new = t.fx.cwd().join("new.txt").to_string_lossy().into_owned();
    let run = t.run(&[
        call(
            "create",
            "Write",
            json!({"file_path": &new, "content": "x\ny\n"}),
        ),
        call("read", "Read", json!({"file_path": &old})),
        call(
            "update",
            "Write",
            json!({"file_path": &old, "content": "new\nsame\n"}),
        ),
    ]);
    assert_eq!(run.outcome("create"), "success");
    assert_eq!(run.outcome("update"), "success");
    let created = t.response("create");
    assert_shape("create", &created, FILE_WRITE_OUTPUT);
    assert_eq!(created["type"], "create");
    assert_eq!(created["filePath"], new);
    assert_eq!(created["content"], "x\ny\n");
    assert_eq!(created["originalFile"], Value::Null);
    assert_eq!(created["structuredPatch"], json!([]));
    let updated = t.response("update");
    assert_shape("update", &updated, FILE_WRITE_OUTPUT);
    assert_eq!(updated["type"], "update");
    assert_eq!(updated["originalFile"], "old\nsame\n");
    assert_eq!(
        updated["structuredPatch"],
        json!([{"oldStart": 1, "oldLines": 2, "newStart": 1, "newLines": 2,
                "lines": ["-old", "+new", " same"]}])
    );
}

#[test]
fn edit_response_is_the_file_edit_output_type() {
    let t = Logged::new();
    let file = t.write("e.txt", "alpha\nbeta\ngamma\n");
    let fresh = t.fx.cwd().join("fresh.txt").to_string_lossy().into_owned();
    let run = t.run(&[
        call("read", "Read", json!({"file_path": &file})),
        call(
            "edit",
            "Edit",
            json!({"file_path": &file, "old_string": "beta", "new_string": "BETA"}),
        ),
        call(
            "create",
            "Edit",
            json!({"file_path": &fresh, "old_string": "", "new_string": "hello\n"}),
        ),
    ]);
    assert_eq!(run.outcome("edit"), "success");
    assert_eq!(run.outcome("create"), "success");
    let edit = t.response("edit");
    assert_shape("edit", &edit, FILE_EDIT_OUTPUT);
    assert_eq!(edit["filePath"], file);
    assert_eq!(edit["oldString"], "beta");
    assert_eq!(edit["newString"], "BETA");
    assert_eq!(edit["originalFile"], "alpha\nbeta\ngamma\n");
    assert_eq!(edit["replaceAll"], false);
    assert_eq!(edit["userModified"], false);
    assert_eq!(
        edit["structuredPatch"],
        json!([{"oldStart": 1, "oldLines": 3, "newStart": 1, "newLines": 3,
                "lines": [" alpha", "-beta", "+BETA", " gamma"]}])
    );
    let create = t.response("create");
    assert_shape("create", &create, FILE_EDIT_OUTPUT);
    assert_eq!(create["originalFile"], "");
    assert_eq!(
        create["structuredPatch"],
        json!([{"oldStart": 1, "oldLines": 0, "newStart": 1, "newLines": 1, "lines": ["+hello"]}])
    );
}

#[test]
fn glob_response_is_the_glob_output_type() {
    let t = Logged::new();
    t.write("a.txt", "a");
    t.write("sub/b.txt", "b");
    t.write("c.rs", "c");
    let run = t.run(&[
        call("some", "Glob", json!({"pattern": "**/*.txt"})),
        call("none", "Glob", json!({"pattern": "*.zzz"})),
    ]);
    assert_eq!(run.outcome("some"), "success");
    let some = t.response("some");
    assert_shape("some", &some, GLOB_OUTPUT);
    let mut names: Vec<&str> = some["filenames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["a.txt", "sub/b.txt"],
        "relative to the working directory"
    );
    assert_eq!(some["numFiles"], 2);
    assert_eq!(some["truncated"], false);
    let none = t.response("none");
    assert_shape("none", &none, GLOB_OUTPUT);
    assert_eq!(none["numFiles"], 0);
}

#[test]
fn grep_response_is_the_grep_output_type_in_every_mode() {
    let t = Logged::new();
    t.write("a.txt", "one\ntwo\nthree\n");
    t.write("src/b.rs", "fn main() { two(); }\n");
    let run = t.run(&[
        call("files", "Grep", json!({"pattern": "two"})),
        call(
            "content",
            "Grep",
            json!({"pattern": "two", "output_mode": "content"}),
        ),
        call(
            "count",
            "Grep",
            json!({"pattern": "t", "output_mode": "count"}),
        ),
        call(
            "limited",
            "Grep",
            json!({"pattern": "t", "output_mode": "content", "head_limit": 1}),
        ),
        call("none", "Grep", json!({"pattern": "zzz"})),
    ]);
    for id in ["files", "content", "count", "limited", "none"] {
        assert_eq!(run.outcome(id), "success", "{id}");
        assert_shape(id, &t.response(id), GREP_OUTPUT);
    }
    let files = t.response("files");
    assert_eq!(files["mode"], "files_with_matches");
    assert_eq!(files["numFiles"], 2);
    let content = t.response("content");
    assert_eq!(content["mode"], "content");
    assert_eq!(content["numLines"], 2);
    assert!(content["content"].as_str().unwrap().contains("two"));
    let count = t.response("count");
    assert_eq!(count["mode"], "count");
    assert_eq!(count["numMatches"], 3, "two, three, and b.rs's line");
    let limited = t.response("limited");
    assert_eq!(limited["numLines"], 1);
    assert_eq!(limited["appliedLimit"], 1);
    assert_eq!(t.response("none")["numFiles"], 0);
}

/// The page [`serve_page`] serves.
const PAGE: &[u8] = b"<html><body><h1>Docs</h1><p>hello</p></body></html>";

/// Serves one HTML page on 127.0.0.1 for the rest of the test process.
fn serve_page() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/page", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                match sock.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => req.extend_from_slice(&buf[..n]),
                }
            }
            let body = PAGE;
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = sock.write_all(head.as_bytes());
            let _ = sock.write_all(body);
        }
    });
    url
}

#[test]
fn web_fetch_response_is_the_web_fetch_output_type() {
    let url = serve_page();
    let t = Logged::new();
    let run = t.run(&[call(
        "w",
        "WebFetch",
        json!({"url": &url, "prompt": "the heading"}),
    )]);
    assert_eq!(run.outcome("w"), "success", "{:?}", run.content("w"));
    let r = t.response("w");
    assert_shape("w", &r, WEB_FETCH_OUTPUT);
    assert_eq!(r["code"], 200);
    assert_eq!(r["codeText"], "OK");
    assert_eq!(r["url"], url);
    assert_eq!(r["bytes"], PAGE.len());
    assert!(r["result"].as_str().unwrap().contains("# Docs"));
}

#[test]
fn task_stop_response_is_the_task_stop_output_type() {
    let t = Logged::new();
    let run = t.run(&[
        call(
            "bg",
            "Bash",
            json!({"command": "sleep 30", "run_in_background": true}),
        ),
        call("stop", "TaskStop", json!({"task_id": "bg-1"})),
    ]);
    assert_eq!(run.outcome("stop"), "success");
    let r = t.response("stop");
    assert_shape("stop", &r, TASK_STOP_OUTPUT);
    assert_eq!(r["task_id"], "bg-1");
    assert_eq!(r["task_type"], "local_bash");
    assert_eq!(r["command"], "sleep 30");
    assert_eq!(r["message"], run.content("stop"));
}

#[test]
fn task_output_response_is_toolrts_own_shape() {
    let t = Logged::new();
    let run = t.run(&[
        call(
            "bg",
            "Bash",
            json!({"command": "echo done; exit 3", "run_in_background": true}),
        ),
        call("out", "TaskOutput", json!({"task_id": "bg-1"})),
    ]);
    assert_eq!(run.outcome("out"), "success");
    let r = t.response("out");
    assert_shape("out", &r, TASK_OUTPUT_TOOLRT);
    assert_shape("out.task", &r["task"], TASK_OUTPUT_TOOLRT_TASK);
    assert_eq!(r["retrieval_status"], "success");
    assert_eq!(r["task"]["status"], "completed");
    assert_eq!(r["task"]["exitCode"], 3);
    assert_eq!(r["task"]["description"], "echo done; exit 3");
    assert_eq!(r["task"]["output"], "done\n");
}

#[test]
fn bash_failure_error_puts_the_exit_code_first() {
    let t = Logged::new();
    let run = t.run(&[
        bash("fail", "(echo out; echo bad >&2) 2>&1; exit 3"),
        bash("quiet", "exit 4"),
    ]);
    assert_eq!(run.outcome("fail"), "failed");
    for (id, error) in [("fail", "Exit code 3\nout\nbad"), ("quiet", "Exit code 4")] {
        let input = t.input(id);
        assert_eq!(input["hook_event_name"], "PostToolUseFailure");
        assert_eq!(input["error"], error, "{id}");
        assert!(input.get("tool_response").is_none());
    }
    // The model's text is toolrt's own.
    assert!(run.content("fail").ends_with("(exit code 3)"));
}

#[test]
fn post_tool_batch_is_given_each_result_as_the_model_sees_it() {
    let fx = Fixture::new();
    std::fs::write(fx.cwd().join("a.txt"), "hello\n").unwrap();
    let (logger, log) = fx.logger("batch");
    let calls = [
        call("c1", "Read", json!({"file_path": "a.txt"})),
        bash("c2", "echo second"),
        bash("c3", "exit 4"),
    ];
    let run = fx.run(
        json!({"PostToolBatch": [{"hooks": [{"type": "command", "command": logger}]}]}),
        "bypassPermissions",
        &[batch("b1", &calls)],
    );
    let lines = log_lines(&log);
    let tool_calls = lines[0]["input"]["tool_calls"].as_array().unwrap();
    assert_eq!(tool_calls.len(), 3);
    for c in tool_calls {
        let id = c["tool_use_id"].as_str().unwrap();
        assert_eq!(c["tool_response"], run.content(id), "{id}");
    }
}

#[test]
fn a_script_reading_tool_response_stdout_works_unchanged() {
    // As public "did the tests pass?" hooks do: read the command's stdout from the response and
    // give the model feedback when it shows a failure.
    let fx = Fixture::new();
    let check = fx.script(
        r#"out=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["tool_response"]["stdout"])')
case "$out" in
  *FAILED*) echo '{"decision": "block", "reason": "the test run failed: fix it before going on"}' ;;
esac"#,
    );
    let run = fx.run(
        json!({"PostToolUse": [group("Bash", &[&check])]}),
        "bypassPermissions",
        &[
            bash("pass", "echo '3 passed'"),
            bash("fail", "echo '1 FAILED, 2 passed'"),
        ],
    );
    assert_eq!(run.outcome("pass"), "success");
    assert!(!run.content("pass").contains("test run failed"));
    assert_eq!(run.outcome("fail"), "success");
    assert!(
        run.content("fail")
            .contains("the test run failed: fix it before going on"),
        "{}",
        run.content("fail")
    );
}
