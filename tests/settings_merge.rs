//! Several `--settings` files: rule lists pool across them (a deny in any file wins), and for a
//! scalar the later file wins.

mod support;

use serde_json::json;
use support::*;

#[test]
fn lists_pool_and_later_scalars_win() {
    let sb = Sandbox::new();
    let a = sb.write(
        "a.json",
        r#"{"permissions": {"allow": ["Bash(touch *)"], "defaultMode": "plan"},
            "limits": {"bash_chars": 10}}"#,
    );
    let b = sb.write(
        "b.json",
        r#"{"permissions": {"deny": ["Bash(touch no*)"], "defaultMode": "default"},
            "limits": {"bash_chars": 40}}"#,
    );
    let done = run_lines(
        &sb,
        &[
            "--settings",
            a.to_str().unwrap(),
            "--settings",
            b.to_str().unwrap(),
            "--permission-prompt",
            "none",
        ],
        &[
            json!({"type": "tool_use", "id": "yes", "name": "Bash", "input": {"command": "touch yes.txt"}}),
            json!({"type": "tool_use", "id": "no", "name": "Bash", "input": {"command": "touch no.txt"}}),
            json!({"type": "tool_use", "id": "out", "name": "Bash", "input": {"command": "printf '%030d' 0"}}),
            json!({"type": "hello"}),
        ],
    );
    // a.json's allow and b.json's deny both hold; b.json's defaultMode (default, not plan) is
    // the mode, so the allowed touch runs.
    assert_eq!(
        done.result("yes")["outcome"],
        "success",
        "{}",
        done.result("yes")
    );
    assert_eq!(done.result("no")["outcome"], "denied");
    assert!(
        done.result("no")["content"]
            .as_str()
            .unwrap()
            .contains("b.json")
    );
    assert!(sb.path("yes.txt").exists() && !sb.path("no.txt").exists());
    // bash_chars 40 (b.json), not 10: 30 characters stay inline.
    let out = done.result("out");
    assert!(out.get("output_file").is_none(), "{out}");
    assert_eq!(done.of_type("hello")[0]["limits"]["bash_chars"], 40);
}
