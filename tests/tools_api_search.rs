//! Glob and Grep through the `Tool` trait.

mod tools_api_common;

use std::time::{Duration, SystemTime};

use serde_json::json;
use toolrt::ToolStatus;
use tools_api_common::*;

fn touch(path: &std::path::Path, secs_ago: u64) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let f = std::fs::File::create(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

#[tokio::test]
async fn glob_newest_first_recursive_and_denied() {
    let e = env_with(|s| s.guard = std::sync::Arc::new(TestGuard));
    let cwd = e.cwd();
    touch(&cwd.join("old.rs"), 300);
    touch(&cwd.join("src/mid.rs"), 200);
    touch(&cwd.join("src/deep/new.rs"), 100);
    touch(&cwd.join("src/secret.rs"), 50);
    touch(&cwd.join("src/other.txt"), 10);
    let out = call(&e, "Glob", "g", json!({"pattern": "**/*.rs"}))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Success);
    let want: Vec<String> = ["src/deep/new.rs", "src/mid.rs", "old.rs"]
        .iter()
        .map(|p| cwd.join(p).display().to_string())
        .collect();
    assert_eq!(out.content.lines().collect::<Vec<_>>(), want);

    let out = call(&e, "Glob", "g", json!({"pattern": "*.rs", "path": "src"}))
        .await
        .unwrap();
    assert_eq!(
        out.content.trim(),
        cwd.join("src/mid.rs").display().to_string()
    );
    let out = call(&e, "Glob", "g", json!({"pattern": "*.zig"}))
        .await
        .unwrap();
    assert_eq!(out.content, "No files found");
    let out = call(&e, "Glob", "g", json!({"pattern": "*", "path": "nowhere"}))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Failed);
    assert!(tool("Glob").is_concurrency_safe(&Default::default()));
}

#[tokio::test]
async fn glob_caps_at_100_with_a_note() {
    let e = env();
    for i in 0..150u64 {
        touch(&e.cwd().join(format!("f{i:03}.txt")), 1000 - i);
    }
    let out = call(&e, "Glob", "g", json!({"pattern": "*.txt"}))
        .await
        .unwrap();
    let lines: Vec<&str> = out.content.lines().collect();
    assert_eq!(lines.len(), 101);
    assert!(lines[0].ends_with("f149.txt"), "newest first: {}", lines[0]);
    assert!(lines[99].ends_with("f050.txt"));
    assert!(lines[100].contains("50 more matched"), "{}", lines[100]);
}

#[tokio::test]
async fn grep_modes_gitignore_and_denied() {
    let e = env_with(|s| s.guard = std::sync::Arc::new(TestGuard));
    let cwd = e.cwd();
    std::fs::create_dir(cwd.join(".git")).unwrap();
    std::fs::write(cwd.join(".gitignore"), "build/\n").unwrap();
    std::fs::create_dir_all(cwd.join("build")).unwrap();
    std::fs::create_dir_all(cwd.join("src")).unwrap();
    std::fs::write(cwd.join("build/out.txt"), "TODO built\n").unwrap();
    std::fs::write(
        cwd.join("src/a.rs"),
        "fn a() {}\n// TODO one\n// todo two\n",
    )
    .unwrap();
    std::fs::write(cwd.join("src/b.py"), "# TODO py\n").unwrap();
    std::fs::write(cwd.join("src/secret.rs"), "TODO hidden by rule\n").unwrap();
    std::fs::write(cwd.join("img.bin"), b"TODO\0binary").unwrap();

    let out = call(&e, "Grep", "g", json!({"pattern": "TODO"}))
        .await
        .unwrap();
    assert_eq!(out.status, ToolStatus::Success);
    assert!(out.content.starts_with("Found 2 files"), "{}", out.content);
    for absent in ["build", "secret", "img.bin"] {
        assert!(!out.content.contains(absent), "{absent}: {}", out.content);
    }

    let out = call(
        &e,
        "Grep",
        "g",
        json!({"pattern": "todo", "-i": true, "output_mode": "count", "type": "rust"}),
    )
    .await
    .unwrap();
    assert!(
        out.content
            .starts_with(&format!("{}:2", cwd.join("src/a.rs").display())),
        "{}",
        out.content
    );

    let out = call(
        &e,
        "Grep",
        "g",
        json!({"pattern": "one", "output_mode": "content", "-B": 1, "glob": "*.rs"}),
    )
    .await
    .unwrap();
    let a = cwd.join("src/a.rs").display().to_string();
    assert_eq!(out.content, format!("{a}-1-fn a() {{}}\n{a}:2:// TODO one"));

    let out = call(&e, "Grep", "g", json!({"pattern": "TODO", "output_mode": "content", "-n": false, "head_limit": 1, "path": "src/b.py"})).await.unwrap();
    assert!(
        out.content
            .starts_with(&format!("{}:# TODO py", cwd.join("src/b.py").display())),
        "{}",
        out.content
    );

    let err = call(&e, "Grep", "g", json!({"pattern": "("}))
        .await
        .unwrap_err();
    assert!(err.contains("invalid regular expression"), "{err}");
    let err = call(&e, "Grep", "g", json!({"pattern": "x", "type": "klingon"}))
        .await
        .unwrap_err();
    assert!(err.contains("unknown file type"), "{err}");
    let out = call(&e, "Grep", "g", json!({"pattern": "absent-string"}))
        .await
        .unwrap();
    assert_eq!(out.content, "No matches found");
}
