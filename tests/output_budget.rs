//! Output over the budget is externalized: `output_file` holds every byte, `content` starts with
//! a notice (size, path) and a preview. Nothing is dropped silently.

mod support;

use serde_json::json;
use support::*;

#[test]
fn large_bash_output_is_externalized_whole() {
    let sb = Sandbox::new();
    // 200,000 numbered lines: ~1.3 MB, far over the 30,000-character Bash budget.
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[
            json!({"type": "tool_use", "id": "big", "name": "Bash", "input": {"command": "seq 1 200000"}}),
        ],
    );
    let r = done.result("big");
    assert_eq!(r["outcome"], "success");
    let path = r["output_file"].as_str().expect("output_file set");
    let file = std::fs::read_to_string(path).unwrap();
    let expected: String = (1..=200000).map(|i| format!("{i}\n")).collect();
    assert_eq!(file, expected, "the output file must hold every byte");
    let content = r["content"].as_str().unwrap();
    assert!(
        content.starts_with("Output too large ("),
        "{}",
        &content[..200]
    );
    assert!(content.contains(&format!("{} characters", expected.len())));
    assert!(content.contains("200000 lines"));
    assert!(content.contains(path));
    assert!(content.len() < 3_000, "content is {} bytes", content.len());
    assert!(
        path.starts_with(sb.out.to_str().unwrap()),
        "{path} not under --output-dir"
    );
}

#[test]
fn a_large_read_stays_within_budget_and_failures_keep_head_and_tail() {
    let sb = Sandbox::new();
    let line = "x".repeat(100);
    let body: String = (0..600).map(|i| format!("{i:05} {line}\n")).collect();
    sb.write("big.txt", &body);
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[
            json!({"type": "tool_use", "id": "r", "name": "Read", "input": {"file_path": "big.txt"}}),
            json!({"type": "tool_use", "id": "f", "name": "Bash", "input": {"command": "seq 1 20000; echo LAST; exit 4"}}),
        ],
    );
    // Read keeps within its own budget: never cut or moved to a file, it says where to read on.
    let r = done.result("r");
    assert_eq!(r["outcome"], "success");
    assert!(r.get("output_file").is_none(), "{r}");
    let content = r["content"].as_str().unwrap();
    assert!(content.chars().count() <= 50_000);
    assert!(content.contains("00000 x") && content.contains("Read on with offset="));
    let f = done.result("f");
    assert_eq!(f["outcome"], "failed");
    let content = f["content"].as_str().unwrap();
    assert!(content.contains("exit code 4"), "the exit code is kept");
    assert!(content.contains("\n1\n2\n3\n"), "head kept");
    assert!(content.contains("\n19999\n20000\nLAST"), "tail kept");
    assert!(content.contains("characters omitted"));
    let full = std::fs::read_to_string(f["output_file"].as_str().unwrap()).unwrap();
    assert!(full.contains("\n10000\n"));
}

#[test]
fn limits_are_configurable() {
    let sb = Sandbox::new();
    let settings = sb.write(
        "s.json",
        r#"{"limits": {"bash_chars": 50, "preview_chars": 10}}"#,
    );
    let done = run_lines(
        &sb,
        &[
            "--settings",
            settings.to_str().unwrap(),
            "--permission-mode",
            "bypassPermissions",
        ],
        &[
            json!({"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "seq 1 100"}}),
        ],
    );
    let r = done.result("a");
    assert!(r["output_file"].is_string());
    assert!(r["content"].as_str().unwrap().ends_with("1\n2\n3\n4\n5\n"));
}

#[test]
fn per_tool_limits_override_the_class_limit() {
    let sb = Sandbox::new();
    sb.write("a.txt", &"line\n".repeat(100));
    let settings = sb.write(
        "s.json",
        r#"{"limits": {"per_tool": {"Grep": 100, "Read": 300}}}"#,
    );
    let done = run_lines(
        &sb,
        &["--settings", settings.to_str().unwrap()],
        &[
            json!({"type": "tool_use", "id": "g", "name": "Grep", "input": {"pattern": "line", "output_mode": "content"}}),
            json!({"type": "tool_use", "id": "r", "name": "Read", "input": {"file_path": "a.txt"}}),
        ],
    );
    let g = done.result("g");
    assert_eq!(g["outcome"], "success");
    assert!(g["output_file"].is_string(), "{g}");
    assert!(
        g["content"]
            .as_str()
            .unwrap()
            .starts_with("Output too large")
    );
    // Read's per-tool budget is Read's own limit: it returns less, inline.
    let r = done.result("r");
    assert_eq!(r["outcome"], "success");
    assert!(r.get("output_file").is_none(), "{r}");
    let content = r["content"].as_str().unwrap();
    assert!(content.chars().count() <= 300, "{content}");
    assert!(content.contains("Read on with offset="), "{content}");
}
