//! The bypass attempts the integration tests make, checked against the engine directly.

use super::*;

#[path = "../../../tests/common/attempts.rs"]
mod attempts;

/// The bypass attempts of `tests/permission_bypass.rs`, checked against the engine directly:
/// none may be allowed. Controls check the engine is not simply asking for everything.
#[test]
fn bypass_attempts_are_never_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let cwd = root.join("proj");
    let home = root.join("home");
    for d in [".git", ".vscode", ".claude", ".husky", ".idea", "sub"] {
        std::fs::create_dir_all(cwd.join(d)).unwrap();
    }
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(cwd.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(cwd.join(".bashrc"), "orig\n").unwrap();
    std::fs::write(cwd.join(".env"), "SECRET=hunter2\n").unwrap();
    std::os::unix::fs::symlink(cwd.join(".git"), cwd.join("gitlink")).unwrap();
    std::os::unix::fs::symlink(cwd.join(".git/config"), cwd.join("cfglink")).unwrap();
    std::os::unix::fs::symlink(cwd.join(".bashrc"), cwd.join("rclink")).unwrap();
    std::os::unix::fs::symlink(cwd.join(".git/made_dangling"), cwd.join("danglink")).unwrap();
    let policy = |perms: Value| {
        let mut b = PolicyBuilder::new(cwd.clone(), home.clone());
        b.add_settings_file(&root.join("settings.json"), &perms)
            .unwrap();
        b.build().unwrap()
    };
    let mut bad = Vec::new();
    let mut expect = |p: &Policy, mode: Mode, tool: &str, input: Value, allowed: bool| {
        let d = decide(p, mode, tool, input.clone());
        if (d.behavior == A) != allowed {
            bad.push(format!(
                "{mode} {tool} {input}: {:?}\n{}",
                d.behavior,
                d.explain()
            ));
        }
    };

    let p = policy(json!({"deny": ["Bash(rm *)", "Bash(touch *)", "Read(.env)"]}));
    for (i, t) in attempts::DEFAULT_MODE_ATTEMPTS.iter().enumerate() {
        let cmd = t
            .replace("{v}", &format!("victim_{i}"))
            .replace("{m}", &format!("made_{i}"));
        expect(&p, DF, "Bash", bash(&cmd), false);
        // Deny rules hold in bypass too, even when part of the command cannot be analysed.
        let removes_or_creates = cmd.contains("rm")
            || cmd.contains("touch")
            || cmd.contains("$(")
            || cmd.contains("$X")
            || cmd.contains("r*")
            || cmd.contains("unterminated");
        if removes_or_creates
            && !cmd.contains("python3")
            && !cmd.contains("-delete")
            && !cmd.contains("unlink")
            && !cmd.contains("tee")
            && !cmd.contains(">")
        {
            expect(&p, BP, "Bash", bash(&cmd), false);
        }
    }
    for cmd in attempts::SECRET_READ_ATTEMPTS {
        expect(&p, DF, "Bash", bash(cmd), false);
        expect(&p, BP, "Bash", bash(cmd), false);
        expect(&p, PL, "Bash", bash(cmd), false);
    }
    expect(
        &p,
        DF,
        "Bash",
        bash("cat README.md && ls -la | grep x"),
        true,
    );

    let p = policy(json!({"allow": ["Edit", "Write", "Bash(tee *)", "Bash(cd *)"]}));
    for (i, t) in attempts::ACCEPT_EDITS_ATTEMPTS.iter().enumerate() {
        expect(
            &p,
            AE,
            "Bash",
            bash(&t.replace("{m}", &format!("made_{i}"))),
            false,
        );
    }
    for cmd in attempts::PROTECTED_EXTRA_BASH {
        expect(&p, AE, "Bash", bash(cmd), false);
    }
    for t in attempts::PROTECTED_WRITE_PATHS {
        let path = t
            .replace("{cwd}", &cwd.display().to_string())
            .replace("{home}", &home.display().to_string());
        expect(
            &p,
            AE,
            "Write",
            json!({"file_path": path, "content": "x"}),
            false,
        );
    }
    expect(
        &p,
        AE,
        "Bash",
        bash("echo x > ok.txt && mkdir -p sub/dir && echo y | tee sub/t.txt"),
        true,
    );
    expect(
        &p,
        AE,
        "Write",
        json!({"file_path": cwd.join("sub/ok.txt").display().to_string()}),
        true,
    );

    // With Bash deny rules alone, code toolrt cannot see asks in bypass too.
    let p = policy(json!({"deny": ["Bash(rm *)"]}));
    for cmd in [
        "echo 'unterminated; rm x",
        "X=<(echo rm v); . $X",
        "x='a[$(rm v)]'; echo $((x))",
        "$X v",
        "cat a | sh",
        "eval \"$C\"",
    ] {
        expect(&p, BP, "Bash", bash(cmd), false);
    }
    expect(&p, BP, "Bash", bash("echo $X"), true);

    let p = policy(json!({"deny": ["Bash(touch *)", "Edit(locked.txt)"]}));
    for cmd in attempts::BYPASS_MODE_ATTEMPTS {
        expect(&p, BP, "Bash", bash(cmd), false);
    }
    expect(&p, BP, "Bash", bash("rm -rf sub && echo x > .git/ok"), true);
    assert!(bad.is_empty(), "{} wrong:\n{}", bad.len(), bad.join("\n"));
}
