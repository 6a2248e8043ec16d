//! Settings `aliases` map a name to a canonical tool in a single hop; bad aliases stop start-up.

mod support;

use serde_json::json;
use support::*;

#[test]
fn alias_runs_the_canonical_tool() {
    let sb = Sandbox::new();
    let settings = sb.write(
        "settings.json",
        r#"{"aliases": {"Shell": "Bash", "Cat": "Read"}}"#,
    );
    sb.write("a.txt", "via alias\n");
    let done = run_lines(
        &sb,
        &[
            "--settings",
            settings.to_str().unwrap(),
            "--permission-mode",
            "bypassPermissions",
        ],
        &[
            json!({"type": "tool_use", "id": "s", "name": "Shell", "input": {"command": "echo from shell"}}),
            json!({"type": "tool_use", "id": "c", "name": "Cat", "input": {"file_path": "a.txt"}}),
        ],
    );
    assert!(
        done.result("s")["content"]
            .as_str()
            .unwrap()
            .contains("from shell")
    );
    assert!(
        done.result("c")["content"]
            .as_str()
            .unwrap()
            .contains("via alias")
    );
}

#[test]
fn rules_see_the_canonical_name() {
    let sb = Sandbox::new();
    let settings = sb.write(
        "settings.json",
        r#"{"aliases": {"Shell": "Bash"}, "permissions": {"deny": ["Bash(touch *)"]}}"#,
    );
    let done = run_lines(
        &sb,
        &[
            "--settings",
            settings.to_str().unwrap(),
            "--permission-mode",
            "bypassPermissions",
        ],
        &[json!({"type": "tool_use", "id": "s", "name": "Shell", "input": {"command": "touch x"}})],
    );
    assert_eq!(done.result("s")["outcome"], "denied");
    assert!(
        done.result("s")["content"]
            .as_str()
            .unwrap()
            .contains("Bash")
    );
    assert!(!sb.path("x").exists());
}

#[test]
fn alias_of_an_unselected_tool_is_unavailable() {
    let sb = Sandbox::new();
    let settings = sb.write("settings.json", r#"{"aliases": {"Shell": "Bash"}}"#);
    let done = run_lines(
        &sb,
        &["--settings", settings.to_str().unwrap(), "--tools", "Read"],
        &[json!({"type": "tool_use", "id": "s", "name": "Shell", "input": {"command": "true"}})],
    );
    assert_eq!(done.result("s")["outcome"], "unavailable");
}

#[test]
fn bad_aliases_are_startup_errors_naming_them() {
    let sb = Sandbox::new();
    for (body, needle) in [
        (
            r#"{"aliases": {"Shell": "Sh", "Sh": "Bash"}}"#,
            "itself an alias",
        ),
        (
            r#"{"aliases": {"Shell": "Nothing"}}"#,
            "aliases.Shell: points at \"Nothing\", which is not a tool",
        ),
        (r#"{"aliases": {"Read": "Bash"}}"#, "aliases.Read: shadows"),
        (r#"{"aliases": ["Bash"]}"#, "aliases: expected an object"),
    ] {
        let settings = sb.write("settings.json", body);
        let (code, stderr) = serve_status(&sb.cwd, &["--settings", settings.to_str().unwrap()]);
        assert_eq!(code, Some(2), "{body}");
        assert!(stderr.contains(needle), "{body}: {stderr}");
        assert!(stderr.contains("settings.json"), "{stderr}");
    }
}
