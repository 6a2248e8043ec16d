//! Hostile input sizes and shapes: every string field of the built-in tools has a limit refused
//! with a `schema_error` naming the field, a huge field costs a small multiple of its size, ids
//! have a limit, a repeated key is refused wherever it is, and blank lines are ignored.

mod support;

use serde_json::{Value, json};
use support::*;

const BYPASS: &[&str] = &["--permission-mode", "bypassPermissions"];

fn raw_lines(sb: &Sandbox, lines: &[String]) -> Finished {
    let mut server = sb.serve(BYPASS);
    for line in lines {
        server.send_raw(line);
    }
    server.finish()
}

fn tool_use_line(id: &str, name: &str, input: Value) -> String {
    json!({"type": "tool_use", "id": id, "name": name, "input": input}).to_string()
}

#[test]
fn every_string_field_of_the_builtin_tools_has_a_limit() {
    let sb = Sandbox::new();
    let over = |n: usize| "x".repeat(n + 1);
    let cases: Vec<(&str, Value, &str, usize)> = vec![
        ("Read", json!({"file_path": over(4096)}), "file_path", 4096),
        (
            "Write",
            json!({"file_path": over(4096), "content": ""}),
            "file_path",
            4096,
        ),
        (
            "Write",
            json!({"file_path": "f", "content": over(16 << 20)}),
            "content",
            16 << 20,
        ),
        (
            "Edit",
            json!({"file_path": "f", "old_string": over(16 << 20), "new_string": ""}),
            "old_string",
            16 << 20,
        ),
        (
            "Edit",
            json!({"file_path": "f", "old_string": "a", "new_string": over(16 << 20)}),
            "new_string",
            16 << 20,
        ),
        (
            "Bash",
            json!({"command": over(131_071)}),
            "command",
            131_071,
        ),
        (
            "Bash",
            json!({"command": "true", "description": over(65_536)}),
            "description",
            65_536,
        ),
        ("Glob", json!({"pattern": over(16_384)}), "pattern", 16_384),
        (
            "Glob",
            json!({"pattern": "*", "path": over(4096)}),
            "path",
            4096,
        ),
        ("Grep", json!({"pattern": over(16_384)}), "pattern", 16_384),
        (
            "Grep",
            json!({"pattern": "a", "glob": over(16_384)}),
            "glob",
            16_384,
        ),
        (
            "Grep",
            json!({"pattern": "a", "type": over(256)}),
            "type",
            256,
        ),
        (
            "WebFetch",
            json!({"url": format!("https://{}", over(8192)), "prompt": "p"}),
            "url",
            8192,
        ),
        (
            "WebFetch",
            json!({"url": "https://example.com", "prompt": over(65_536)}),
            "prompt",
            65_536,
        ),
        ("TaskOutput", json!({"task_id": over(256)}), "task_id", 256),
        ("TaskStop", json!({"task_id": over(256)}), "task_id", 256),
    ];
    let lines: Vec<String> = cases
        .iter()
        .enumerate()
        .map(|(i, (tool, input, _, _))| tool_use_line(&format!("c{i}"), tool, input.clone()))
        .collect();
    let done = raw_lines(&sb, &lines);
    for (i, (tool, _, field, limit)) in cases.iter().enumerate() {
        let r = done.result(&format!("c{i}"));
        assert_eq!(r["outcome"], "schema_error", "{tool}.{field}: {r}");
        let content = r["content"].as_str().unwrap();
        assert!(
            content.contains(&format!("{field}: expected at most {limit} characters")),
            "{tool}.{field}: {content}"
        );
        assert!(
            content.len() < 1000,
            "{tool}.{field}: the error quotes the value"
        );
    }
    assert!(!sb.path("f").exists());
}

#[test]
fn a_bash_command_within_the_character_limit_but_over_the_byte_limit_is_refused() {
    let sb = Sandbox::new();
    // 50,000 three-byte characters: under the 131,071-character limit, over 131,071 bytes.
    let command = format!("echo {}", "€".repeat(50_000));
    let done = raw_lines(
        &sb,
        &[tool_use_line("b", "Bash", json!({"command": command}))],
    );
    let r = done.result("b");
    assert_eq!(r["outcome"], "validation_error", "{r}");
    assert!(
        r["content"].as_str().unwrap().contains("131071 bytes"),
        "{r}"
    );
}

#[test]
fn a_huge_path_costs_a_small_multiple_of_its_size_and_writes_nothing() {
    const SIZE: usize = 60 << 20;
    let sb = Sandbox::new();
    let mut server = sb.serve(BYPASS);
    server.tool_use("warm", "Read", json!({"file_path": "nothing-here"}));
    server.result("warm");
    let before = status_kib(server.pid(), "VmRSS");
    let line = tool_use_line(
        "big",
        "Write",
        json!({"file_path": "x".repeat(SIZE), "content": "a"}),
    );
    server.send_raw(&line);
    drop(line);
    let r = server.result("big");
    assert_eq!(r["outcome"], "schema_error");
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .contains("file_path: expected at most 4096 characters")
    );
    let peak = status_kib(server.pid(), "VmHWM");
    let done = server.finish();
    assert!(done.status.success());
    // The line as read and the string parsed from it exist together for a moment; nothing more.
    let bound = before + 3 * (SIZE as u64 / 1024) + 32 * 1024;
    assert!(
        peak <= bound,
        "peak {peak} KiB over {bound} KiB for a {SIZE}-byte field"
    );
    // Nothing the size of the field was written anywhere.
    for entry in files_under(sb.dir.path()) {
        let len = std::fs::metadata(&entry).map(|m| m.len()).unwrap_or(0);
        assert!(len < 1 << 20, "{} is {len} bytes", entry.display());
    }
}

#[test]
fn ids_and_tool_names_over_256_bytes_are_refused_without_a_result() {
    let sb = Sandbox::new();
    let long = "i".repeat(257);
    let done = raw_lines(
        &sb,
        &[
            tool_use_line(&long, "Bash", json!({"command": "touch ran-long-id"})),
            tool_use_line("n", &long, json!({})),
            tool_use_line(&"j".repeat(256), "Bash", json!({"command": "true"})),
        ],
    );
    let errors = done.of_type("error");
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("field `id`: longer than 256 bytes")
    );
    assert_eq!(errors[0]["line"], 1);
    assert!(
        errors[1]["message"]
            .as_str()
            .unwrap()
            .contains("field `name`: longer than 256 bytes")
    );
    assert!(done.results(&long).is_empty() && done.results("n").is_empty());
    assert_eq!(done.result(&"j".repeat(256))["outcome"], "success");
    assert!(!sb.path("ran-long-id").exists());
}

#[test]
fn a_smuggled_second_key_is_refused_wherever_it_is() {
    let sb = Sandbox::new();
    let done = raw_lines(
        &sb,
        &[
            r#"{"type":"tool_use","id":"a","name":"Bash","input":{"command":"echo safe","command":"touch pwned-a"}}"#.into(),
            r#"{"type":"tool_use","id":"b","name":"Bash","name":"Read","input":{"command":"touch pwned-b"}}"#.into(),
            r#"{"type":"batch","id":"B","calls":[{"id":"c","name":"Bash","input":{"command":"echo safe","timeout":1000,"command":"touch pwned-c"}}]}"#.into(),
            r#"{"type":"tool_use","id":"d","name":"Bash","input":"{\"command\":\"echo safe\",\"command\":\"touch pwned-d\"}"}"#.into(),
            r#"{"type":"tool_use","id":"e","name":"Bash","input":{"command":"echo fine"}}"#.into(),
        ],
    );
    let errors = done.of_type("error");
    assert_eq!(errors.len(), 3, "{errors:#?}");
    for (error, (line, key)) in
        errors
            .iter()
            .zip([(1, "`command`"), (2, "`name`"), (3, "`command`")])
    {
        let message = error["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("duplicate key {key}")),
            "{message}"
        );
        assert_eq!(error["line"], line);
    }
    assert!(
        done.results("a").is_empty()
            && done.results("b").is_empty()
            && done.results("c").is_empty()
    );
    // An input sent as a JSON-encoded string is read as strictly: refused as a schema error.
    let d = done.result("d");
    assert_eq!(d["outcome"], "schema_error");
    assert!(
        d["content"]
            .as_str()
            .unwrap()
            .contains("duplicate key `command`"),
        "{d}"
    );
    assert_eq!(done.result("e")["outcome"], "success");
    for f in ["pwned-a", "pwned-b", "pwned-c", "pwned-d"] {
        assert!(!sb.path(f).exists(), "{f}");
    }
}

#[test]
fn blank_lines_are_ignored_and_still_counted() {
    let sb = Sandbox::new();
    let done = raw_lines(
        &sb,
        &[
            String::new(),
            "   \t ".into(),
            tool_use_line("a", "Bash", json!({"command": "echo a"})),
            String::new(),
            "not json".into(),
        ],
    );
    assert_eq!(done.result("a")["outcome"], "success");
    let errors = done.of_type("error");
    assert_eq!(errors.len(), 1, "a blank line was answered: {errors:?}");
    assert_eq!(errors[0]["line"], 5);
}
