use super::*;

#[test]
fn parse_table() {
    let text = "[core]\n\tfsmonitor = \"./x.sh\" # run\n\tbare\n[diff \"lfs\"]\n  textconv = cat\n[Include]\n  path = ~/extra\n[alias]\n  st = status \\\n -s\n";
    let got = parse(text);
    assert_eq!(
        got,
        vec![
            ("core.fsmonitor".to_string(), "./x.sh".to_string()),
            ("core.bare".into(), "true".into()),
            ("diff.lfs.textconv".into(), "cat".into()),
            ("include.path".into(), "~/extra".into()),
            ("alias.st".into(), "status  -s".into()),
        ]
    );
}

/// What the check finds on disk, and that the cache notices every change that matters:
/// a bare layout appearing, its configuration changing, a hook appearing.
#[test]
fn check_follows_the_file_system() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let ws = root.join("ws");
    let home = root.join("home");
    std::fs::create_dir_all(ws.join("evil")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let env = GitEnv {
        home: home.clone(),
        ..GitEnv::default()
    };
    let trusted = |p: &Path| !p.starts_with(&ws) || p.components().any(|c| c.as_os_str() == ".git");
    let safe = |dir: &Path| matches!(check(dir, &env, &trusted), Check::Safe { .. });
    let evil = ws.join("evil");
    assert!(safe(&evil));
    // A bare layout appears, with a configuration that runs a program.
    std::fs::create_dir_all(evil.join("objects")).unwrap();
    std::fs::create_dir_all(evil.join("refs")).unwrap();
    std::fs::write(evil.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(evil.join("config"), "[core]\n\tbare = true\n").unwrap();
    assert!(safe(&evil), "only harmless settings");
    std::fs::write(evil.join("config"), "[diff]\n\texternal = ./x.sh\n").unwrap();
    assert!(!safe(&evil), "diff.external in a file the agent wrote");
    std::fs::write(evil.join("config"), "[core]\n\tbare = true\n").unwrap();
    assert!(safe(&evil));
    std::fs::create_dir_all(evil.join("hooks")).unwrap();
    std::fs::write(evil.join("hooks/post-index-change"), "#!/bin/sh\n").unwrap();
    assert!(!safe(&evil), "a hook the agent wrote");
    std::fs::remove_file(evil.join("hooks/post-index-change")).unwrap();
    assert!(safe(&evil));
    // A trusted repository whose configuration points hooks into the workspace.
    std::fs::create_dir_all(ws.join("repo/.git/objects")).unwrap();
    std::fs::create_dir_all(ws.join("repo/.git/refs")).unwrap();
    std::fs::write(ws.join("repo/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        ws.join("repo/.git/config"),
        "[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../extra.cfg\n",
    )
    .unwrap();
    let repo = ws.join("repo");
    assert!(safe(&repo));
    std::fs::create_dir_all(repo.join(".githooks")).unwrap();
    std::fs::write(repo.join(".githooks/post-index-change"), "x").unwrap();
    assert!(!safe(&repo), "hooksPath into the workspace");
    std::fs::remove_file(repo.join(".githooks/post-index-change")).unwrap();
    assert!(safe(&repo));
    std::fs::write(repo.join("extra.cfg"), "[filter \"x\"]\n\tclean = evil\n").unwrap();
    assert!(!safe(&repo), "an included file the agent wrote");
    std::fs::remove_file(repo.join("extra.cfg")).unwrap();
    // The user's own global configuration may name programs.
    std::fs::write(
        home.join(".gitconfig"),
        "[filter \"lfs\"]\n\tclean = git-lfs clean\n",
    )
    .unwrap();
    assert!(safe(&repo), "trusted programs");
    std::fs::write(
        home.join(".gitconfig"),
        format!("[core]\n\tfsmonitor = {}/x.sh\n", ws.display()),
    )
    .unwrap();
    assert!(
        !safe(&repo),
        "a trusted setting naming a program the agent can write"
    );
    std::fs::remove_file(home.join(".gitconfig")).unwrap();
    assert!(safe(&repo));
    // A directory that does not exist: git cannot start there.
    assert!(safe(&ws.join("missing/deeper")));
}

#[test]
fn harmless_table() {
    for (k, ok) in [
        ("core.bare", true),
        ("core.fsmonitor", false),
        ("core.hookspath", false),
        ("core.worktree", false),
        ("remote.origin.url", true),
        ("diff.renames", true),
        ("diff.lfs.textconv", false),
        ("filter.lfs.clean", false),
        ("include.path", false),
        ("alias.st", false),
        ("user.name", true),
    ] {
        assert_eq!(harmless(k), ok, "{k}");
    }
}
