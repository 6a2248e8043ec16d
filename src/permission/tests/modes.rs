//! §3.1: the order of rules and modes, and what hooks can say.

use super::*;

#[test]
fn s2_1_order_and_modes() {
    table(&[
        // deny beats ask beats allow, whatever the specificity
        (json!({"allow": ["Bash(git push origin main)"], "deny": ["Bash(git *)"]}), DF, "Bash", bash("git push origin main"), D),
        (json!({"allow": ["Bash(git push origin main)"], "ask": ["Bash(git *)"]}), DF, "Bash", bash("git push origin main"), Q),
        (json!({"ask": ["Bash(git push origin main)"], "deny": ["Bash(git *)"]}), DF, "Bash", bash("git push origin main"), D),
        (json!({"allow": ["Bash(npm test)"]}), DF, "Bash", bash("npm test"), A),
        (json!({}), DF, "Bash", bash("npm test"), Q),
        // deny in every mode, bypass included
        (json!({"deny": ["Bash(rm *)"]}), BP, "Bash", bash("rm x"), D),
        (json!({"deny": ["Edit(src/**)"]}), AE, "Edit", file("/w/proj/src/a.rs"), D),
        // ask in every mode; dontAsk makes it a deny
        (json!({"ask": ["Bash(npm *)"]}), BP, "Bash", bash("npm i"), Q),
        (json!({"ask": ["Bash(npm *)"]}), DA, "Bash", bash("npm i"), D),
        (json!({"ask": ["Read(./x)"]}), DF, "Read", file("/w/proj/x"), Q),
        // bypass allows everything else
        (json!({}), BP, "Bash", bash("npm publish"), A),
        (json!({}), BP, "Edit", file("/etc/hosts"), A),
        (json!({}), BP, "MyTool", json!({}), A),
        (
            json!({}),
            BP,
            "WebFetch",
            json!({"url": "https://x.com"}),
            A,
        ),
        // allow rules moot in bypass, still fine
        (json!({"allow": ["Bash(npm *)"]}), BP, "Bash", bash("npm i"), A),
        // acceptEdits: edits inside the workspace, fs commands on workspace paths
        (json!({}), AE, "Edit", file("/w/proj/src/a.rs"), A),
        (json!({}), AE, "Write", file("/w/proj/new.txt"), A),
        (json!({}), AE, "MultiEdit", file("/w/proj/a.txt"), A),
        (json!({}), AE, "NotebookEdit", json!({"notebook_path": "/w/proj/n.ipynb"}), A),
        (json!({}), AE, "Edit", file("/etc/hosts"), Q),
        (json!({}), DF, "Edit", file("/w/proj/src/a.rs"), Q),
        (json!({}), AE, "Bash", bash("mkdir -p build/out"), A),
        (json!({}), AE, "Bash", bash("touch a.txt && cp a.txt b.txt && mv b.txt c.txt"), A),
        (json!({}), AE, "Bash", bash("rm -f build/x.o"), A),
        (json!({}), AE, "Bash", bash("rmdir build/empty"), A),
        (json!({}), AE, "Bash", bash("sed -i s/a/b/ src/a.rs"), A),
        (json!({}), AE, "Bash", bash("rm /etc/hosts"), Q),
        (json!({}), AE, "Bash", bash("cp a.txt ../outside.txt"), Q),
        (json!({}), AE, "Bash", bash("sudo rm x"), Q),
        (json!({}), AE, "Bash", bash("npm i"), Q),
        (json!({}), DF, "Bash", bash("mkdir build"), Q),
        // plan: only reads are auto-allowed; anything else asks (allow rules included)
        (json!({}), PL, "Read", file("/w/proj/a.txt"), A),
        (json!({}), PL, "Read", file("/etc/hosts"), A),
        (json!({}), PL, "Bash", bash("git status"), A),
        (json!({}), PL, "Edit", file("/w/proj/a.txt"), Q),
        (json!({}), PL, "Write", file("/w/proj/new.txt"), Q),
        (json!({"allow": ["Edit"]}), PL, "Edit", file("/w/proj/a.txt"), Q),
        (json!({"allow": ["Bash(npm *)"]}), PL, "Bash", bash("npm i"), Q),
        (json!({}), PL, "Bash", bash("ls > out.txt"), Q),
        (json!({"deny": ["Edit"]}), PL, "Edit", file("/w/proj/a.txt"), D),
        // dontAsk: no prompt, a deny instead
        (json!({}), DA, "Bash", bash("npm test"), D),
        (json!({"allow": ["Bash(npm test)"]}), DA, "Bash", bash("npm test"), A),
        (json!({}), DA, "Read", file("/w/proj/a"), A),
        (json!({}), DA, "Read", file("/etc/hosts"), D),
        // built-in defaults
        (json!({}), DF, "Read", file("/w/proj/src/a.rs"), A),
        (json!({}), DF, "Glob", json!({"pattern": "**/*.rs"}), A),
        (json!({}), DF, "Grep", json!({"pattern": "fn", "path": "/w/proj/src"}), A),
        (json!({}), DF, "Read", file("/etc/passwd"), Q),
        (json!({}), DF, "Grep", json!({"pattern": "x", "path": "/etc"}), Q),
        (json!({}), DF, "TaskOutput", json!({"task_id": "t1"}), A),
        (json!({}), DF, "TaskStop", json!({"task_id": "t1"}), A),
        (json!({"deny": ["TaskStop"]}), DF, "TaskStop", json!({}), D),
        (json!({}), DF, "MyTool", json!({}), Q),
        (json!({"allow": ["MyTool"]}), DF, "MyTool", json!({}), A),
        (json!({"deny": ["MyTool"]}), DF, "MyTool", json!({}), D),
        (json!({"allow": ["MyTool(*)"]}), DF, "MyTool", json!({}), A),
        // rules for tools whose specifier toolrt cannot read: deny and ask cover the tool by
        // name, an allow grants nothing it cannot check
        (json!({"deny": ["Skill(deploy)"]}), DF, "Skill", json!({"skill": "other"}), D),
        (json!({"ask": ["SlashCommand(/x)"]}), BP, "SlashCommand", json!({"command": "/y"}), Q),
        (json!({"allow": ["Skill(deploy)"]}), DF, "Skill", json!({"skill": "deploy"}), Q),
        (json!({"deny": ["Skill(deploy)"]}), DF, "Bash", bash("git status"), A),
        // `//` entries are comments; the rest of the list still applies
        (json!({"deny": ["// no pushing", "Bash(git push *)"]}), DF, "Bash", bash("git push origin"), D),
        (json!({"allow": ["//Bash(npm *)"]}), DF, "Bash", bash("npm i"), Q),
    ]);
}

#[test]
fn s2_1_hooks() {
    let p = build(
        &json!({"allow": ["Bash(npm *)"], "deny": ["Bash(rm *)"], "ask": ["Bash(git push *)"]}),
    );
    let run = |mode, cmd: &str, hook| {
        let input = obj(bash(cmd));
        p.decide(&DecisionRequest {
            tool: "Bash",
            access: access("Bash"),
            input: &input,
            mode,
            hook,
        })
        .behavior
    };
    let deny = || {
        Some(HookVerdict::Deny {
            reason: "no".into(),
        })
    };
    // a hook deny blocks in every mode, bypass included
    assert_eq!(run(BP, "npm i", deny()), D);
    assert_eq!(run(DF, "ls", deny()), D);
    // a hook allow never lifts a deny or ask rule, and only skips the prompt
    assert_eq!(run(DF, "rm x", Some(HookVerdict::Allow)), D);
    assert_eq!(run(DF, "git push origin", Some(HookVerdict::Allow)), Q);
    assert_eq!(run(DF, "cargo build", Some(HookVerdict::Allow)), A);
    // a hook ask forces a prompt, even for allowed commands
    assert_eq!(run(DF, "npm i", Some(HookVerdict::Ask)), Q);
    // …and in dontAsk too (verified with the reference), unless an ask rule makes it a deny
    assert_eq!(run(DA, "npm i", Some(HookVerdict::Ask)), Q);
    assert_eq!(run(DA, "git push origin", Some(HookVerdict::Ask)), D);
    let input = obj(bash("ls"));
    let d = p.decide(&DecisionRequest {
        tool: "Bash",
        access: access("Bash"),
        input: &input,
        mode: DF,
        hook: deny(),
    });
    assert!(d.message("Bash").contains("hook"), "{}", d.message("Bash"));
}
