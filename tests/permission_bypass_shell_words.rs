//! Bypasses through what bash does with words and paths before the program sees them, found by
//! a tester through `toolrt serve`: a glob match the program reads as an option. Every attempt
//! must come back `denied` (every ask is answered with deny) and leave no trace.

mod support;

#[path = "common/serve.rs"]
mod serve;

#[path = "common/bypass.rs"]
mod bypass;

use bypass::*;
use serde_json::json;
use serve::*;

/// A glob's match named like an option: `find *e` finds `-delete`, `sort *` finds
/// `--compress-program=sh`, `-o.bashrc` or `--files0-from=.env`, `diff *` finds
/// `--from-file=.env`. bash hands the matches over as words, and the program reads them as
/// options.
#[test]
fn glob_matches_read_as_options() {
    let fx = || {
        let fx = project();
        for name in ["-delete", "--compress-program=sh", "-S1", "-o.bashrc"] {
            fx.write(name, "");
        }
        fx.write("data", "touch made_1\n");
        fx
    };
    must_hold_under(
        &fx,
        json!({}),
        &["find *e", "sort * | head -1", "sort *"],
        &["default", "plan", "dontAsk"],
    );
    let fx = project();
    fx.write("--from-file=.env", "");
    fx.write("--files0-from=.env", "");
    let s = fx.settings(json!({"deny": ["Read(.env)"]}));
    let calls = [bash("d", "diff *"), bash("w", "wc *")];
    for mode in ALL {
        let run = fx.run(&s, &["--permission-mode", mode], &calls, "deny");
        for id in ["d", "w"] {
            assert_eq!(
                run.outcome(id),
                "denied",
                "{mode} {id}: {}",
                run.content(id)
            );
        }
        assert!(
            !run.lines.iter().any(|l| l.to_string().contains("hunter2")),
            "{mode}: {:?}",
            run.lines
        );
    }
    assert!(!fx.path(".bashrc").exists());
}

/// Without such names, globs stay allowed where they were; `--` keeps a program that honours it
/// from reading a match as an option.
#[test]
fn plain_globs_stay_allowed() {
    let fx = project();
    fx.write("a.txt", "one\n");
    let s = fx.settings(json!({}));
    let calls = [
        bash("l", "ls *"),
        bash("c", "cat *.txt"),
        bash("g", "grep -h alpha -- *.txt"),
        bash("f", "find ./*.txt"),
    ];
    let run = fx.run(&s, &[], &calls, "deny");
    for id in ["l", "c", "g", "f"] {
        assert_eq!(run.outcome(id), "success", "{id}: {}", run.content(id));
        assert!(!run.asked(id), "{id} asked");
    }
    // A harmless program still asks once a match is named like an option.
    fx.write("-n", "");
    let run = fx.run(&s, &[], &[bash("c", "cat *")], "deny");
    assert_eq!(run.outcome("c"), "denied", "{}", run.content("c"));
}

/// The project with `secret/key` (the secret), `secret/inner/`, `sub/ln -> ../secret/inner`
/// and `lo -> ../outside/inner`: a `..` after either link leads beside its target.
fn linked() -> Fixture {
    let fx = project();
    fx.write("secret/key", "SECRET=hunter2\n");
    std::fs::create_dir_all(fx.path("secret/inner")).unwrap();
    std::fs::create_dir_all(fx.root.join("outside/inner")).unwrap();
    std::os::unix::fs::symlink("../secret/inner", fx.path("sub/ln")).unwrap();
    std::os::unix::fs::symlink("../outside/inner", fx.path("lo")).unwrap();
    fx
}

/// `..` after a symlink: the kernel undoes it from the link's target, so `sub/ln/../key` is
/// `secret/key`, not `sub/key`.
#[test]
fn dot_dot_after_a_symlink_is_where_the_kernel_goes() {
    must_hold_under(
        &linked,
        json!({"deny": ["Read(./secret/**)"]}),
        &[
            "cat sub/ln/../key",
            "cd sub/ln && cat ../key",
            "grep -r hunter2 sub/ln/..",
            "cd sub/ln/.. && cat key",
            "cd sub/ln && cat /proc/self/cwd/../key",
        ],
        ALL,
    );
    must_hold_under(
        &linked,
        json!({}),
        &["cat lo/../secret.txt", "cd lo && cat ../secret.txt"],
        // plan mode reads outside the workspace anyway
        &["default", "acceptEdits", "dontAsk"],
    );
    // Writes beside the target: outside the workspace, or into `.git`.
    for mode in ["default", "acceptEdits", "dontAsk"] {
        let fx = linked();
        repo(&fx);
        std::os::unix::fs::symlink(".git/refs", fx.path("gl")).unwrap();
        let config = std::fs::read_to_string(fx.path(".git/config")).unwrap();
        let s = fx.settings(json!({}));
        let calls = [
            bash("o", "echo owned > lo/../made_out"),
            bash("g", "echo '[core]' >> gl/../config"),
        ];
        let run = fx.run(&s, &["--permission-mode", mode], &calls, "deny");
        for id in ["o", "g"] {
            assert_eq!(
                run.outcome(id),
                "denied",
                "{mode} {id}: {}",
                run.content(id)
            );
        }
        assert!(!fx.root.join("outside/made_out").exists(), "{mode}");
        assert_eq!(
            std::fs::read_to_string(fx.path(".git/config")).unwrap(),
            config,
            "{mode}"
        );
    }
}

/// `git config --blob`, and `git log -S/-G/--find-object` (which commits a pickaxe lists tells
/// whether a file holds a guess), show a Read-denied file's content.
#[test]
fn git_commands_that_show_content() {
    let fx = project();
    repo(&fx);
    let s = fx.settings(json!({"deny": ["Read(.env)"]}));
    let calls = [
        bash("blob", "git config --blob HEAD:.env --list"),
        bash("s", "git log -S hunter2 --oneline"),
        bash("g", "git log -G hunter --oneline"),
        bash("o", "git log --find-object=HEAD:.env --oneline"),
    ];
    for mode in ALL {
        let run = fx.run(&s, &["--permission-mode", mode], &calls, "deny");
        for id in ["blob", "s", "g", "o"] {
            assert_eq!(
                run.outcome(id),
                "denied",
                "{mode} {id}: {}",
                run.content(id)
            );
        }
        assert!(
            !(run.lines.iter())
                .any(|l| l.to_string().contains("hunter2") && l["type"] != "permission_request"),
            "{mode}"
        );
    }
}

/// `mv` of a folder takes the files below it out of the Read and Edit rules that named them:
/// after `mv conf moved`, `moved/creds.json` is readable.
#[test]
fn renaming_a_folder_asks_when_a_rule_reaches_below_it() {
    let rules = json!({"deny": [
        "Read(./conf/secret/**)", "Read(./conf/creds.json)", "Edit(./keep/locked/**)"
    ]});
    for mode in ["default", "acceptEdits", "dontAsk"] {
        let fx = project();
        fx.write("conf/creds.json", "SECRET=hunter2\n");
        fx.write("conf/secret/k", "x\n");
        fx.write("keep/locked/a", "x\n");
        let s = fx.settings(rules.clone());
        let calls = [
            bash("conf", "mv conf moved"),
            bash("keep", "mv keep moved2"),
        ];
        let run = fx.run(&s, &["--permission-mode", mode], &calls, "deny");
        for id in ["conf", "keep"] {
            assert_eq!(
                run.outcome(id),
                "denied",
                "{mode} {id}: {}",
                run.content(id)
            );
        }
        assert!(fx.path("conf/creds.json").exists() && fx.path("keep/locked/a").exists());
    }
    // A folder no rule reaches into, or a plain file, still moves in acceptEdits.
    let fx = project();
    fx.write("plain/a.txt", "a\n");
    let s = fx.settings(rules);
    let calls = [
        bash("dir", "mv plain moved"),
        bash("file", "mv notes.txt notes3.txt"),
    ];
    let run = fx.run(&s, &["--permission-mode", "acceptEdits"], &calls, "deny");
    for id in ["dir", "file"] {
        assert_eq!(run.outcome(id), "success", "{id}: {}", run.content(id));
    }
}
