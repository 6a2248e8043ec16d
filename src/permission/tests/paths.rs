//! §3.4: path specifiers, and symlinks.

use super::*;

#[test]
fn s2_4_paths() {
    table(&[
        // anchors
        (
            json!({"deny": ["Read(//etc/**)"]}),
            DF,
            "Read",
            file("/etc/hosts"),
            D,
        ),
        (json!({"deny": ["Read(~/.ssh/**)"]}), DF, "Read", file("/h/u/.ssh/id_rsa"), D),
        (json!({"deny": ["Read(/secret.txt)"]}), DF, "Read", file("/w/proj/.claude/secret.txt"), D),
        (json!({"deny": ["Read(/secret.txt)"]}), DF, "Read", file("/w/proj/secret.txt"), A),
        (json!({"deny": ["Read(./.env)"]}), DF, "Read", file("/w/proj/.env"), D),
        (json!({"deny": ["Read(./.env)"]}), DF, "Read", file("/w/proj/sub/.env"), A),
        // bare name at any depth
        (json!({"deny": ["Read(.env)"]}), DF, "Read", file("/w/proj/a/b/.env"), D),
        (json!({"deny": ["Read(*.pem)"]}), DF, "Read", file("/w/proj/a/k.pem"), D),
        // * within a segment, ** across
        (json!({"allow": ["Edit(src/*.rs)"]}), DF, "Edit", file("/w/proj/src/a.rs"), A),
        (json!({"allow": ["Edit(src/*.rs)"]}), DF, "Edit", file("/w/proj/src/x/a.rs"), Q),
        (json!({"allow": ["Edit(src/**/*.rs)"]}), DF, "Edit", file("/w/proj/src/x/a.rs"), A),
        // single-segment directory asymmetry
        (json!({"allow": ["Edit(src/**)"]}), DF, "Edit", file("/w/proj/src/a/b.rs"), A),
        (json!({"allow": ["Edit(src/**)"]}), DF, "Edit", file("/w/proj/lib/src/b.rs"), Q),
        (json!({"deny": ["Edit(src/**)"]}), AE, "Edit", file("/w/proj/lib/src/b.rs"), D),
        (json!({"ask": ["Edit(src/**)"]}), AE, "Edit", file("/w/proj/lib/src/b.rs"), Q),
        // Read rules govern Glob and Grep
        (json!({"deny": ["Read(secrets/**)"]}), DF, "Grep", json!({"pattern": "x", "path": "/w/proj/secrets"}), D),
        (json!({"deny": ["Read(secrets/**)"]}), DF, "Glob", json!({"pattern": "*", "path": "/w/proj/a/secrets/x"}), D),
        (
            json!({"allow": ["Read(//opt/**)"]}),
            DF,
            "Glob",
            json!({"pattern": "*", "path": "/opt/x"}),
            A,
        ),
        (json!({"deny": ["Read"]}), DF, "Grep", json!({"pattern": "x"}), D),
        // Edit rules govern Write
        (json!({"deny": ["Edit(*.lock)"]}), BP, "Write", file("/w/proj/Cargo.lock"), D),
        (
            json!({"allow": ["Edit(//tmp/**)"]}),
            DF,
            "Write",
            file("/tmp/x"),
            A,
        ),
        (json!({"allow": ["Edit"]}), DF, "Write", file("/tmp/x"), A),
        // Edit allow grants read; Read deny blocks Edit and Write
        (
            json!({"allow": ["Edit(//opt/data/**)"]}),
            DF,
            "Read",
            file("/opt/data/a"),
            A,
        ),
        (json!({"deny": ["Read(.env)"]}), BP, "Edit", file("/w/proj/.env"), D),
        (json!({"deny": ["Read(.env)"]}), AE, "Write", file("/w/proj/x/.env"), D),
        // normalisation
        (json!({"deny": ["Read(./.env)"]}), DF, "Read", file("/w/proj/sub/../.env"), D),
        (
            json!({"deny": ["Read(./.env)"]}),
            DF,
            "Read",
            file("/w/proj//./.env"),
            D,
        ),
        (
            json!({"deny": ["Read(//etc/passwd)"]}),
            DF,
            "Read",
            file("/etc//passwd"),
            D,
        ),
        (json!({"deny": ["Read(../other/**)"]}), DF, "Read", file("/w/other/a"), D),
        // workspace: cwd + additionalDirectories
        (json!({"additionalDirectories": ["/data"]}), DF, "Read", file("/data/a.csv"), A),
        (json!({"additionalDirectories": ["/data"]}), AE, "Edit", file("/data/a.csv"), A),
        (json!({"additionalDirectories": ["../lib"]}), DF, "Read", file("/w/lib/a"), A),
        (json!({}), DF, "Read", file("/w/projx/a"), Q),
        (json!({}), DF, "Read", file("/w/proj/../secret"), Q),
        // relative input paths are made absolute defensively
        (json!({"deny": ["Read(./.env)"]}), DF, "Read", file(".env"), D),
        (json!({"deny": ["Read(~/.aws/**)"]}), DF, "Read", file("~/.aws/credentials"), D),
    ]);
}

#[test]
fn s2_4_symlinks() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let ws = root.join("ws");
    let outside = root.join("outside");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "s").unwrap();
    std::fs::write(ws.join(".env"), "s").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), ws.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("linkdir")).unwrap();
    std::os::unix::fs::symlink(ws.join(".env"), ws.join("innocent")).unwrap();
    let mk = |settings: Value| {
        let mut b = PolicyBuilder::new(ws.clone(), PathBuf::from(HOME));
        b.add_settings_file(&ws.join("settings.json"), &settings)
            .unwrap();
        b.build().unwrap()
    };
    let p = |s: &Path| s.to_string_lossy().into_owned();
    let rows: Vec<(Value, Mode, &str, Value, Behavior)> = vec![
        // a link inside the workspace to a file outside: not a workspace read
        (json!({}), DF, "Read", file(&p(&ws.join("link.txt"))), Q),
        (json!({}), DF, "Read", file(&p(&ws.join("linkdir/secret.txt"))), Q),
        (json!({}), AE, "Edit", file(&p(&ws.join("linkdir/new.txt"))), Q),
        // deny if either the link or the target matches
        (json!({"deny": [format!("Read(/{}/**)", p(&outside))]}), DF, "Read", file(&p(&ws.join("link.txt"))), D),
        (json!({"deny": ["Read(.env)"]}), DF, "Read", file(&p(&ws.join("innocent"))), D),
        (json!({"deny": ["Read(.env)"]}), DF, "Bash", bash("cat innocent"), D),
        (json!({"deny": ["Edit(.env)"]}), BP, "Bash", bash("echo x > innocent"), D),
        // allow needs both the link and the target
        (json!({"allow": ["Read(./link.txt)"]}), DF, "Read", file(&p(&ws.join("link.txt"))), Q),
        (json!({"allow": ["Read(./link.txt)", format!("Read(/{})", p(&outside.join("**")))]}), DF, "Read", file(&p(&ws.join("link.txt"))), A),
        (json!({}), DF, "Read", file(&p(&ws.join("src/new.rs"))), A),
    ];
    let mut failures = Vec::new();
    for (i, (s, mode, tool, input, want)) in rows.into_iter().enumerate() {
        let pol = mk(s.clone());
        let d = decide(&pol, mode, tool, input.clone());
        if d.behavior != want {
            failures.push(format!(
                "row {i}: {tool} {input} {s}: got {:?}\n{}",
                d.behavior,
                d.explain()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
