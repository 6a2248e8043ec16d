//! Property tests: a compound command is allowed only if every part is; a denied path stays denied
//! however it is spelled; no command makes the engine panic.

use super::*;
use proptest::prelude::*;

const ALLOWED: [&str; 5] = [
    "npm test",
    "git status",
    "ls -la",
    "cargo build --release",
    "echo hi",
];
const DENIED: [&str; 3] = ["rm -rf x", "curl evil", "git push --force"];
const NEUTRAL: [&str; 2] = ["make", "python x.py"];

fn quoted(cmd: &str, style: u8) -> String {
    let (prog, rest) = cmd
        .split_once(' ')
        .map(|(a, b)| (a, format!(" {b}")))
        .unwrap_or((cmd, String::new()));
    let prog = match style {
        1 => format!("'{prog}'"),
        2 => format!("\"{prog}\""),
        3 => format!("\\{prog}"),
        4 if prog.len() > 1 => format!("{}''{}", &prog[..1], &prog[1..]),
        _ => prog.to_string(),
    };
    format!("{prog}{rest}")
}

fn wrap(cmd: String, nest: u8) -> String {
    match nest {
        1 => format!("( {cmd} )"),
        2 => format!("{{ {cmd}; }}"),
        3 => format!("echo $({cmd})"),
        4 => format!("echo `{cmd}`"),
        5 => format!("sh -c '{cmd}'"),
        _ => cmd,
    }
}

fn piece() -> impl Strategy<Value = (u8, usize, u8, u8)> {
    (0u8..3, 0usize..5, 0u8..5, 0u8..6)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn compound_allowed_iff_all_allowed(pieces in proptest::collection::vec(piece(), 1..5), seps in proptest::collection::vec(0usize..7, 5)) {
        let p = build(&json!({"allow": ["Bash(npm test)", "Bash(cargo build *)"], "deny": ["Bash(rm *)", "Bash(curl *)", "Bash(git push *)"]}));
        let sep = ["&&", "||", ";", "|", "\n", "|&", "&"];
        let mut cmd = String::new();
        let mut any_denied = false;
        let mut all_allowed = true;
        let mut substituted = false;
        for (i, (kind, idx, q, nest)) in pieces.iter().enumerate() {
            let base = match kind {
                0 => ALLOWED[idx % ALLOWED.len()],
                1 => { any_denied = true; DENIED[idx % DENIED.len()] }
                _ => { all_allowed = false; NEUTRAL[idx % NEUTRAL.len()] }
            };
            if *kind == 1 { all_allowed = false; }
            // sh -c with single quotes inside single quotes would change the words.
            let q = if *nest == 5 && (*q == 1 || *q == 4) { 0 } else { *q };
            // `echo $(cmd)`: echo's argument is only known when it runs.
            substituted |= *nest == 3 || *nest == 4;
            let piece = wrap(quoted(base, q), *nest);
            if i > 0 {
                cmd.push(' ');
                cmd.push_str(sep[seps[i] % sep.len()]);
                cmd.push(' ');
            }
            cmd.push_str(&piece);
        }
        let d = decide(&p, DF, "Bash", bash(&cmd));
        if any_denied {
            prop_assert_eq!(d.behavior, D, "{}\n{}", cmd, d.explain());
        } else if all_allowed && !substituted {
            prop_assert_eq!(d.behavior, A, "{}\n{}", cmd, d.explain());
        } else {
            prop_assert_eq!(d.behavior, Q, "{}\n{}", cmd, d.explain());
        }
        let d = decide(&p, BP, "Bash", bash(&cmd));
        prop_assert_eq!(d.behavior == D, any_denied, "{}", cmd);
    }

    /// However a denied path is spelled (`./`, `//`, `x/..`, relative or absolute), the deny holds
    /// for Read, Edit, Write and Bash readers and redirects.
    #[test]
    fn path_spellings_keep_deny(parts in proptest::collection::vec(0u8..4, 0..4), absolute in any::<bool>()) {
        let p = build(&json!({"deny": ["Read(secrets/**)", "Edit(locked.txt)"]}));
        let mut spelled = String::new();
        for part in &parts {
            spelled.push_str(match part { 0 => "./", 1 => "x/../", 2 => ".//", _ => "a/b/../../" });
        }
        let prefix = if absolute { format!("{CWD}//") } else { String::new() };
        let secret = format!("{prefix}{spelled}secrets/key");
        let locked = format!("{prefix}{spelled}locked.txt");
        prop_assert_eq!(decide(&p, BP, "Read", file(&secret)).behavior, D, "{}", secret);
        prop_assert_eq!(decide(&p, BP, "Write", file(&secret)).behavior, D, "{}", secret);
        prop_assert_eq!(decide(&p, BP, "Edit", file(&locked)).behavior, D, "{}", locked);
        prop_assert_eq!(decide(&p, BP, "Bash", bash(&format!("cat {secret}"))).behavior, D, "{}", secret);
        prop_assert_eq!(decide(&p, BP, "Bash", bash(&format!("echo x > {locked}"))).behavior, D, "{}", locked);
    }

    #[test]
    fn decide_never_panics(cmd in "\\PC{0,60}") {
        let p = build(&json!({"allow": ["Bash(npm *)"], "deny": ["Bash(rm *)", "Read(.env)"]}));
        for m in [DF, AE, PL, DA, BP] {
            let _ = decide(&p, m, "Bash", bash(&cmd));
        }
        let _ = crate::shell::is_concurrency_safe(&cmd);
    }
}
