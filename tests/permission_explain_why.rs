//! `toolrt explain` says exactly why a part of a Bash command is not auto-allowed, while the
//! model-facing message of the same decision quotes nothing from the command.

mod support;

#[path = "common/serve.rs"]
mod serve;

use std::process::{Command, Stdio};

use serde_json::json;
use serve::*;

fn explain(fx: &Fixture, args: &[&str], command: &str) -> String {
    let out = Command::new(support::bin())
        .arg("explain")
        .args(args)
        .arg("--cwd")
        .arg(&fx.cwd)
        .arg("Bash")
        .arg(json!({ "command": command }).to_string())
        .current_dir(&fx.cwd)
        .env("HOME", &fx.home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn explain_names_the_reason_for_every_part_it_does_not_auto_allow() {
    let fx = Fixture::new();
    fx.write("evil/HEAD", "ref: refs/heads/main\n");
    fx.write("evil/config", "[diff]\n\texternal = ./x.sh\n");
    std::fs::create_dir_all(fx.path("evil/objects")).unwrap();
    std::fs::create_dir_all(fx.path("evil/refs")).unwrap();
    for (args, command, want) in [
        (
            &[][..],
            "x='a[$(rm v)]'; echo $((x))",
            "arithmetic evaluates variables",
        ),
        (
            &[],
            "cat /etc/hostname",
            "it reads /etc/hostname outside the workspace",
        ),
        (
            &[],
            "timeout --frobnicate 5 ls",
            "timeout: unknown option `--frobnicate`",
        ),
        (&[], "ls --recur", "unknown option `--recur`"),
        (
            &[],
            "echo $HOME",
            "`$HOME` is only known when the command runs",
        ),
        (&[], "cat {a,b}", "brace expansion"),
        (&[], "cd evil && git diff", "sets diff.external"),
        (
            &[],
            "ls | xargs cat",
            "`(stdin)` is only known when it runs",
        ),
        (&[], "zsh -c 'ls'", "zsh syntax is not bash's"),
        (&[], "cat < /dev/tcp/example.com/80", "network connection"),
        (
            &["--disallowed-tools", "Bash(rm *)"][..],
            "echo ls | bash",
            "bash reads its script from stdin",
        ),
        (&[], "jq -n '$ENV'", "the jq filter reads the environment"),
        (
            &[],
            "jq -L lib 'import \"m\" as m; .' a.json",
            "the jq filter loads modules from disk (`import`)",
        ),
        (
            &[],
            "jq -f prog.jq a.json",
            "the jq filter comes from a file",
        ),
        (&[], "jq --rwa . a.json", "jq: unknown option `--rwa`"),
        (&[], "sort -o sorted.txt a.txt", "it writes sorted.txt"),
        (
            &[],
            "sort --compress-prog=sh a.txt",
            "sort --compress-program runs `sh` on its temporary data",
        ),
        (&[], "sort --ra a.txt", "`--ra` is ambiguous"),
    ] {
        let out = explain(&fx, args, command);
        assert!(out.contains(want), "{command}: want {want:?} in\n{out}");
    }
}

#[test]
fn the_model_facing_message_does_not_quote_the_command() {
    let fx = Fixture::new();
    let s = fx.settings(json!({}));
    let run = fx.run(
        &s,
        &["--permission-mode", "dontAsk"],
        &[
            bash("a", "echo $SECRET_TOKEN_abc"),
            bash("b", "cat /etc/passwd_hunter2"),
        ],
        "deny",
    );
    for id in ["a", "b"] {
        assert_eq!(run.outcome(id), "denied");
        let c = run.content(id);
        assert!(
            !c.contains("SECRET_TOKEN_abc") && !c.contains("hunter2"),
            "{id}: {c}"
        );
    }
}
