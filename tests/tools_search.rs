//! Glob and Grep through `toolrt serve`.

mod support;
mod tools_common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::json;
use tools_common::*;

fn touch(path: &Path, secs_ago: u64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let f = std::fs::File::create(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

#[test]
fn glob_orders_newest_first_and_caps_at_100() {
    let mut s = Server::start(&[]);
    let cwd = s.cwd();
    touch(&cwd.join("a/old.rs"), 300);
    touch(&cwd.join("b/c/new.rs"), 10);
    touch(&cwd.join("mid.rs"), 100);
    touch(&cwd.join("skip.txt"), 1);
    let r = s.call("g1", "Glob", json!({"pattern": "**/*.rs"}));
    assert_outcome(&r, "success");
    let want: Vec<String> = ["b/c/new.rs", "mid.rs", "a/old.rs"]
        .iter()
        .map(|p| cwd.join(p).display().to_string())
        .collect();
    assert_eq!(content(&r).lines().collect::<Vec<_>>(), want);

    for i in 0..130u64 {
        touch(&cwd.join(format!("many/f{i:03}.log")), 1000 - i);
    }
    let r = s.call("g2", "Glob", json!({"pattern": "*.log", "path": "many"}));
    let lines: Vec<&str> = content(&r).lines().collect();
    assert_eq!(lines.len(), 101, "{r}");
    assert!(lines[0].ends_with("f129.log"));
    assert!(lines[100].contains("30 more"), "{}", lines[100]);

    let r = s.call("g3", "Glob", json!({"pattern": "*.nothing"}));
    assert_eq!(content(&r), "No files found");
}

#[test]
fn grep_modes_and_gitignore() {
    let mut s = Server::start(&[]);
    let cwd = s.cwd();
    std::fs::create_dir(cwd.join(".git")).unwrap();
    std::fs::write(cwd.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(cwd.join("target")).unwrap();
    std::fs::create_dir_all(cwd.join("src")).unwrap();
    std::fs::write(cwd.join("target/gen.rs"), "needle in build output\n").unwrap();
    std::fs::write(
        cwd.join("src/lib.rs"),
        "// head\nlet needle = 1;\n// tail\nNEEDLE again\n",
    )
    .unwrap();
    std::fs::write(cwd.join("src/notes.md"), "a needle here\n").unwrap();
    std::fs::write(cwd.join("blob.bin"), b"needle\0\x01\x02").unwrap();

    let r = s.call("f", "Grep", json!({"pattern": "needle"}));
    assert_outcome(&r, "success");
    let text = full_text(&r);
    assert!(
        text.contains("src/lib.rs") && text.contains("src/notes.md"),
        "{text}"
    );
    assert!(
        !text.contains("target/") && !text.contains("blob.bin") && !text.contains(".git/"),
        "{text}"
    );

    let lib = cwd.join("src/lib.rs").display().to_string();
    let r = s.call(
        "c",
        "Grep",
        json!({"pattern": "needle", "output_mode": "content", "-C": 1, "type": "rust"}),
    );
    assert_eq!(
        content(&r),
        format!("{lib}-1-// head\n{lib}:2:let needle = 1;\n{lib}-3-// tail")
    );

    let r = s.call(
        "n",
        "Grep",
        json!({"pattern": "needle", "output_mode": "count", "-i": true, "glob": "*.rs"}),
    );
    assert!(content(&r).starts_with(&format!("{lib}:2")), "{r}");

    let r = s.call(
        "m",
        "Grep",
        json!({"pattern": "head.*\\n.*needle", "multiline": true, "output_mode": "content"}),
    );
    assert!(
        content(&r).contains(":1:// head") && content(&r).contains(":2:let needle"),
        "{r}"
    );

    let r = s.call("bad", "Grep", json!({"pattern": "(unclosed"}));
    assert_outcome(&r, "validation_error");
    let r = s.call("none", "Grep", json!({"pattern": "zzz-absent"}));
    assert_eq!(content(&r), "No matches found");
}

#[test]
fn read_deny_hides_files_from_glob_and_grep() {
    let mut s = Server::with_settings(json!({"permissions": {"deny": ["Read(**/secret.txt)"]}}));
    let cwd = s.cwd();
    std::fs::write(cwd.join("secret.txt"), "token=abc\n").unwrap();
    std::fs::write(cwd.join("open.txt"), "token=public\n").unwrap();
    let r = s.call("g", "Glob", json!({"pattern": "*.txt"}));
    assert!(
        content(&r).contains("open.txt") && !content(&r).contains("secret.txt"),
        "{r}"
    );
    let r = s.call(
        "s",
        "Grep",
        json!({"pattern": "token", "output_mode": "content"}),
    );
    assert!(
        content(&r).contains("public") && !content(&r).contains("abc"),
        "{r}"
    );
}

#[test]
fn an_absolute_glob_pattern_is_judged_on_the_folder_it_searches() {
    let sb = support::Sandbox::new();
    sb.write("in.txt", "x\n");
    let outside = sb.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "s\n").unwrap();
    let mut server = sb.serve(&["--permission-prompt", "none"]);
    // Without `path` the cwd is the default, but an absolute pattern searches elsewhere: that
    // folder is what needs permission.
    server.tool_use(
        "out",
        "Glob",
        json!({"pattern": format!("{}/*.txt", outside.display())}),
    );
    let r = server.result("out");
    assert_eq!(r["outcome"], "denied", "{r}");
    assert!(!r["content"].as_str().unwrap().contains("secret.txt"));
    server.tool_use(
        "in",
        "Glob",
        json!({"pattern": format!("{}/*.txt", sb.cwd.display())}),
    );
    let r = server.result("in");
    assert_eq!(r["outcome"], "success", "{r}");
    assert!(r["content"].as_str().unwrap().contains("in.txt"));
    server.finish();
}

/// `glob` may list several globs separated by commas (as the reference splits it), and
/// `context` is `-C` by its other name.
#[test]
fn glob_lists_with_commas_and_context_alias() {
    let mut s = Server::start(&[]);
    let cwd = s.cwd();
    std::fs::create_dir(cwd.join("sub")).unwrap();
    std::fs::write(cwd.join("a.txt"), "before\nalpha\nafter\n").unwrap();
    std::fs::write(cwd.join("sub/b.py"), "alpha\n").unwrap();
    std::fs::write(cwd.join("c.md"), "alpha\n").unwrap();
    let r = s.call(
        "g",
        "Grep",
        json!({"pattern": "alpha", "glob": "*.txt,*.py"}),
    );
    assert_outcome(&r, "success");
    let text = content(&r);
    assert!(text.starts_with("Found 2 files"), "{text}");
    assert!(
        text.contains("a.txt") && text.contains("b.py") && !text.contains("c.md"),
        "{text}"
    );
    let r = s.call(
        "c",
        "Grep",
        json!({"pattern": "alpha", "glob": "a.txt", "output_mode": "content", "context": 1}),
    );
    let text = content(&r);
    assert!(text.contains("before") && text.contains("after"), "{text}");

    // offset pages through the entries: skipped first, then head_limit.
    let many: String = (1..=9).map(|i| format!("m{i}\n")).collect();
    std::fs::write(cwd.join("m.log"), many).unwrap();
    let r = s.call(
        "p",
        "Grep",
        json!({"pattern": "m[0-9]", "glob": "m.log", "output_mode": "content", "-n": false, "offset": 3, "head_limit": 2}),
    );
    let text = content(&r);
    assert!(text.contains("m4\n") && text.contains("m5"), "{text}");
    assert!(!text.contains("m3") && !text.contains("m6"), "{text}");
    assert!(text.contains("after the first 3 skipped"), "{text}");
}
