use super::*;

fn words(s: &str) -> Vec<Word> {
    s.split(' ')
        .filter(|w| !w.is_empty())
        .map(Word::plain)
        .collect()
}

/// (wrapper command, the inner command's first words for each reading, understood)
#[test]
fn peel_table() {
    for (cmd, want, ok) in [
        ("timeout 5 rm x", vec!["rm x"], true),
        ("timeout -s KILL 5 rm x", vec!["rm x"], true),
        ("timeout --signal=KILL -k 1 5 rm x", vec!["rm x"], true),
        ("timeout --bogus 5 rm x", vec!["rm x", "5 rm x", "x"], false),
        ("nice -n 5 rm x", vec!["rm x"], true),
        ("nice -10 rm x", vec!["rm x"], true),
        ("nice --10 rm x", vec!["rm x"], true),
        ("stdbuf -oL rm x", vec!["rm x"], true),
        ("stdbuf -o L rm x", vec!["rm x"], true),
        ("env -i A=1 rm x", vec!["rm x"], true),
        ("env -C /tmp rm x", vec!["rm x"], true),
        ("env -u A rm x", vec!["rm x"], true),
        ("xargs rm", vec!["rm"], true),
        ("xargs -0 -n1 rm", vec!["rm"], true),
        ("xargs -I{} rm {}", vec!["rm {}"], true),
        ("xargs -i rm {}", vec!["rm {}"], true),
        ("xargs -l rm", vec!["rm"], true),
        ("xargs -a list rm", vec!["rm"], true),
        ("xargs --frob rm", vec!["rm"], false),
        ("sudo -u root rm x", vec!["rm x"], true),
        ("sudo -uroot rm x", vec!["rm x"], true),
        ("sudo --user=root rm x", vec!["rm x"], true),
        ("sudo -Eu root rm x", vec!["rm x"], true),
        ("sudo -- rm x", vec!["rm x"], true),
        ("watch -x rm x", vec!["rm x"], true),
        ("watch -n 1 rm x", vec![], true),
        ("taskset 1 rm x", vec!["rm x"], true),
        ("taskset -c 0 rm x", vec!["rm x"], true),
        ("chrt -f 10 rm x", vec!["rm x"], true),
        ("prlimit --nofile=10 rm x", vec!["rm x"], true),
        ("setpriv --reuid=1 rm x", vec!["rm x"], true),
        ("ionice -c 3 rm x", vec!["rm x"], true),
        ("setsid -f rm x", vec!["rm x"], true),
        ("flock /tmp/l rm x", vec!["rm x"], true),
        ("command rm x", vec!["rm x"], true),
        ("command -v rm", vec![], true),
        ("exec -a foo rm x", vec!["rm x"], true),
        ("chroot / rm x", vec!["rm x"], true),
        ("strace -f rm x", vec!["rm x", "x"], false),
        // deny-only runners: the inner command is found, their own options need not be known
        ("uv run rm -rf x", vec!["rm -rf x"], true),
        ("uv --quiet run --with foo -p 3.11 rm x", vec!["rm x"], true),
        ("uv run -- rm x", vec!["rm x"], true),
        (
            "uv run --bogus pytest -k rm",
            vec!["rm", "pytest -k rm"],
            true,
        ),
        ("poetry run pytest -x", vec!["pytest -x"], true),
        ("npx -y rm x", vec!["rm x"], true),
        ("npm exec -- rm x", vec!["rm x"], true),
        ("npm --prefix d x rm x", vec!["rm x"], true),
        ("pnpm dlx rm x", vec!["rm x"], true),
        ("bundle exec rm x", vec!["rm x"], true),
        ("conda run -n env rm x", vec!["rm x"], true),
        ("direnv exec . rm x", vec![". rm x", "rm x"], true),
        (
            "nix develop .#a -c rm x",
            vec![".#a -c rm x", "rm x", "x"],
            true,
        ),
        (
            "mise exec node@20 -- rm x",
            vec!["node@20 -- rm x", "rm x", "x"],
            true,
        ),
    ] {
        let w = words(cmd);
        let got = peel(&w[0].text, &w[1..], &Cwd::Session).expect(cmd);
        let inner: Vec<String> = got
            .inner
            .iter()
            .filter_map(|i| match i {
                Inner::At(k) => Some(
                    w[1 + k..]
                        .iter()
                        .map(|x| x.text.clone())
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                _ => None,
            })
            .collect();
        assert_eq!(inner, want, "{cmd}");
        assert_eq!(got.problems.is_empty(), ok, "{cmd}: {:?}", got.problems);
    }
    let w = words("flock /tmp/l -c x");
    assert!(matches!(
        &peel("flock", &w[1..], &Cwd::Session).unwrap().inner[0],
        Inner::Script(s) if s == "x"
    ));
    let w = words("watch rm x");
    assert!(matches!(
        &peel("watch", &w[1..], &Cwd::Session).unwrap().inner[0],
        Inner::Script(s) if s == "rm x"
    ));
    assert!(peel("ls", &[], &Cwd::Session).is_none());
    // a multiplexer's command language toolrt does not read
    for cmd in ["tmux ls", "screen -r", "zellij run"] {
        let w = words(cmd);
        let got = peel(&w[0].text, &w[1..], &Cwd::Session).expect(cmd);
        assert!(
            got.inner.iter().any(|i| matches!(i, Inner::ScriptUnknown)),
            "{cmd}"
        );
    }
    // not a runner's subcommand: an ordinary program
    for cmd in [
        "npm install rm",
        "uv pip install rm",
        "yarn add x",
        "cargo run",
    ] {
        let w = words(cmd);
        assert!(peel(&w[0].text, &w[1..], &Cwd::Session).is_none(), "{cmd}");
    }
    // a runner's script option
    let w = words("npx -c rm");
    assert!(matches!(
        &peel("npx", &w[1..], &Cwd::Session).unwrap().inner[0],
        Inner::Script(s) if s == "rm"
    ));
}
