//! Programs outside the read-only set with options whose value is a command they run
//! (`rg --pre CMD`, `tar --to-command=CMD`, `man -P CMD`, `ssh -o ProxyCommand=CMD`, …).
//!
//! Such a program runs that command with arguments of its own (each file searched, each member
//! extracted), so a rule for the program is not a rule for what it runs: like `find -exec`, the
//! command is never allowed by a prefix rule, and each value is also parsed as a script for deny
//! and ask rules. A value only known when it runs is code toolrt cannot see. (Programs that run
//! code of their own — `awk`, `perl -e`, `python -c` — are not here: their code is not
//! a command line, docs/SEMANTICS.md §3.2.)
//!
//! Options are found fail-closed: a long option is matched by any prefix of its name (GNU's
//! abbreviations, `--to-c` for `--to-command`), and a short one anywhere in a cluster of short
//! options (`-xvI CMD`), so a word that could be one of them is taken for one.

use super::super::word::Word;

/// What the command-running options of one command say.
#[derive(Debug, Default)]
pub(crate) struct CommandOptions {
    /// Why it runs a command of its arguments (for explanations); `None` when it does not.
    pub(crate) runs: Option<String>,
    /// It runs code toolrt cannot see, and why.
    pub(crate) hidden: Option<String>,
    /// The commands it runs, as scripts for deny and ask rules.
    pub(crate) readings: Vec<String>,
}

/// How one program names its command-running options.
struct Spec {
    /// Long options (without `--`) whose value is a command.
    long: &'static [&'static str],
    /// Short options whose value is a command.
    short: &'static [char],
    /// Other long options whose whole name begins one of `long` (named exactly, they are
    /// themselves, not an abbreviation).
    others: &'static [&'static str],
    /// The first word may hold options without a dash (`tar xIf CMD a.tar`).
    old_style: bool,
}

fn spec(prog: &str) -> Option<Spec> {
    let spec = match prog {
        // ripgrep: --pre COMMAND runs COMMAND FILE for every file searched.
        "rg" => Spec {
            long: &["pre", "hostname-bin"],
            short: &[],
            others: &[],
            old_style: false,
        },
        // GNU tar.
        "tar" | "gtar" => Spec {
            long: &[
                "use-compress-program",
                "to-command",
                "info-script",
                "new-volume-script",
                "rsh-command",
                "rmt-command",
                "checkpoint-action",
            ],
            short: &['I', 'F'],
            others: &["checkpoint"],
            old_style: true,
        },
        // man-db: the pager, and the browser of --html.
        "man" => Spec {
            long: &["pager", "html"],
            short: &['P', 'H'],
            others: &[],
            old_style: false,
        },
        // Info-ZIP zip: -TT / --unzip-command tests the archive with COMMAND.
        "zip" => Spec {
            long: &["unzip-command"],
            short: &[],
            others: &[],
            old_style: false,
        },
        // GNU split: --filter=COMMAND gets each piece on its stdin.
        "split" => Spec {
            long: &["filter"],
            short: &[],
            others: &[],
            old_style: false,
        },
        // rsync: the remote shell, and the program run on the other side.
        "rsync" => Spec {
            long: &["rsh", "rsync-path"],
            short: &['e'],
            others: &[],
            old_style: false,
        },
        // OpenSSH's scp and sftp: -S PROGRAM is the ssh they run (their -o below).
        "scp" | "sftp" => Spec {
            long: &[],
            short: &['S', 'D'],
            others: &[],
            old_style: false,
        },
        // Pagers run through the shell.
        "bat" | "ack" | "ag" => Spec {
            long: &["pager"],
            short: &[],
            others: &[],
            old_style: false,
        },
        // GNU diffutils: the diff they run.
        "sdiff" | "diff3" => Spec {
            long: &["diff-program"],
            short: &[],
            others: &[],
            old_style: false,
        },
        // pandoc: a JSON filter is a program it runs.
        "pandoc" => Spec {
            long: &["filter", "pdf-engine"],
            short: &['F'],
            others: &[],
            old_style: false,
        },
        // GNU wget: the program that answers for a password.
        "wget" => Spec {
            long: &["use-askpass"],
            short: &[],
            others: &[],
            old_style: false,
        },
        // GnuPG: the viewer of a key's photo.
        "gpg" | "gpg2" => Spec {
            long: &[
                "photo-viewer",
                "agent-program",
                "dirmngr-program",
                "keyboxd-program",
            ],
            short: &[],
            others: &[],
            old_style: false,
        },
        _ => return None,
    };
    Some(spec)
}

/// An option that makes `prog` read settings — a file, or a line in its own syntax — that can
/// name a command (`ssh -F FILE` with a ProxyCommand, `wget -e use_askpass=…`, `less -k`).
fn settings_file_option(prog: &str, args: &[Word]) -> Option<String> {
    let (long, short): (&[&str], &[char]) = match prog {
        "ssh" | "scp" => (&[], &['F', 'I']),
        "sftp" => (&[], &['F', 'I', 'b']),
        "wget" => (&["execute", "config"], &['e']),
        "less" => (&["lesskey-file", "lesskey-src", "lesskey-content"], &['k']),
        "gpg" | "gpg2" => (&["options"], &[]),
        _ => return None,
    };
    for w in args {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        if let Some(name) = t.strip_prefix("--") {
            let name = name.split('=').next().unwrap_or_default();
            if !name.is_empty() && long.iter().any(|l| l.starts_with(name)) {
                return Some(t.to_string());
            }
        } else if let Some(cluster) = t.strip_prefix('-')
            && let Some(c) = cluster.chars().find(|c| short.contains(c))
        {
            return Some(format!("-{c}"));
        }
    }
    None
}

/// The command-running options of `prog` with `args`.
pub(crate) fn command_options(prog: &str, args: &[Word]) -> CommandOptions {
    let mut out = CommandOptions::default();
    let spec = spec(prog);
    let others = matches!(
        prog,
        "zip" | "ssh" | "scp" | "sftp" | "less" | "fd" | "fdfind" | "wget" | "gpg" | "gpg2"
    );
    if spec.is_none() && !others {
        return out;
    }
    if let Some(option) = settings_file_option(prog, args) {
        let why =
            format!("{prog} {option} reads settings that can run commands toolrt does not read");
        out.runs.get_or_insert_with(|| why.clone());
        out.hidden.get_or_insert(why);
    }
    unknown_words(&mut out, prog, args);
    if let Some(spec) = spec {
        for value in option_values(&spec, args) {
            took(&mut out, prog, value);
        }
    }
    match prog {
        "zip" => zip_test_command(&mut out, args),
        "ssh" | "scp" | "sftp" => ssh_command_options(&mut out, prog, args),
        "less" => less_commands(&mut out, args),
        "fd" | "fdfind" => fd_exec(&mut out, prog, args),
        _ => {}
    }
    out
}

/// `rg "$X" foo` may be `rg --pre=rm foo`: for a program that runs commands from its
/// options, a word only known when it runs may be one of them.
fn unknown_words(out: &mut CommandOptions, prog: &str, args: &[Word]) {
    if let Some(w) = args.iter().find(|w| !w.exact) {
        let why = format!(
            "{prog} can run a command given in an option, and `{}` is only known when it runs",
            w.text
        );
        out.runs = Some(why.clone());
        out.hidden = Some(why);
    }
}

/// Words that are a command run as they are (`fd -x CMD ARGS`, `git bisect run CMD ARGS`):
/// their text joined, and whether all of them are known.
fn command_words(words: &[&Word]) -> (String, bool) {
    let text = words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    (text, words.iter().all(|w| w.exact))
}

/// A command-running option as written, and its value (text, known exactly) unless the
/// option ends the words.
type Found = (String, Option<(String, bool)>);

/// A word's value.
fn whole(w: &Word) -> (String, bool) {
    (w.text.clone(), w.exact)
}

/// The attached part of a word (`--pre=CMD`, `-ICMD`), as exact as the whole word.
fn attached(w: &Word, text: &str) -> (String, bool) {
    (text.to_string(), w.exact)
}

/// Each command-running option of `args` with its value: attached (`--pre=CMD`, `-ICMD`) as
/// text, separate as the next word.
fn option_values(spec: &Spec, args: &[Word]) -> Vec<Found> {
    let mut found = Vec::new();
    for (i, w) in args.iter().enumerate() {
        let next = args.get(i + 1).map(whole);
        let text = w.text.as_str();
        if let Some(long) = text.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            let abbreviates = |o: &&str| o.starts_with(name) && !spec.others.contains(&name);
            if !name.is_empty() && spec.long.iter().any(abbreviates) {
                found.push(match value {
                    Some(v) => (format!("--{name}"), Some(attached(w, v))),
                    None => (format!("--{name}"), next),
                });
            }
        } else if let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) {
            short_in_cluster(spec, w, cluster, next, &mut found);
        } else if i == 0 && spec.old_style {
            // `tar cfI a.tar CMD`: the letters' values are the next words in the letters'
            // order, which takes the whole option grammar to follow; the command stays unknown.
            if let Some(c) = text.chars().find(|c| spec.short.contains(c)) {
                found.push((format!("{c} (in `{text}`)"), None));
            }
        }
    }
    found
}

fn short_in_cluster(
    spec: &Spec,
    w: &Word,
    cluster: &str,
    next: Option<(String, bool)>,
    found: &mut Vec<Found>,
) {
    if let Some((at, c)) = cluster.char_indices().find(|(_, c)| spec.short.contains(c)) {
        let rest = &cluster[at + c.len_utf8()..];
        let value = if rest.is_empty() {
            next
        } else {
            Some(attached(w, rest))
        };
        found.push((format!("-{c}"), value));
    }
}

/// The command of a git `ext::` URL, its escapes undone: `% ` is a space inside an argument,
/// `%%` a percent sign (`%s`, `%S` and `%G` stand for what git fills in).
pub(crate) fn ext_command(url: &str) -> String {
    url.replace("%%", "\u{0}")
        .replace("% ", " ")
        .replace('\u{0}', "%")
}

/// The command-running options of `git SUB` with `args` (the words after the subcommand):
/// the programs fetch and push run on the other side of a local or ssh remote, the commands of
/// `rebase --exec`, `difftool --extcmd`, `submodule foreach`, `bisect run`, `filter-branch`'s
/// filters and `send-email`'s helpers.
pub(crate) fn git_command_options(sub: &str, args: &[Word]) -> CommandOptions {
    let mut out = CommandOptions::default();
    // A remote `ext::CMD ARGS…` is a command git runs to talk to it (when `protocol.ext.allow`
    // lets it, which configuration or `-c` may), wherever a URL is taken.
    // `clone -c KEY=VALUE` writes configuration into the new repository, `--template=DIR`
    // copies hooks into it: what later git commands there run, which toolrt cannot see now.
    if matches!(sub, "clone" | "init") {
        for (i, w) in args.iter().enumerate() {
            let t = w.text.as_str();
            let option = ["--config", "--template"]
                .into_iter()
                .find(|o| t == *o || t.starts_with(&format!("{o}=")))
                .or(
                    (sub == "clone" && (t == "-c" || (t.starts_with("-c") && t.len() > 2)))
                        .then_some("-c"),
                );
            if let Some(option) = option {
                let value = args.get(i + 1).map(|n| n.text.clone()).unwrap_or_default();
                took(
                    &mut out,
                    &format!("git {sub}"),
                    (option.to_string(), Some((value, false))),
                );
            }
        }
    }
    for w in args {
        if let Some(at) = w.text.find("ext::") {
            let command = ext_command(&w.text[at + "ext::".len()..]);
            took(
                &mut out,
                &format!("git {sub}"),
                ("ext::".into(), Some((command, w.exact))),
            );
        }
    }
    let (long, short): (&[&str], &[char]) = match sub {
        "fetch" | "pull" | "ls-remote" | "fetch-pack" => (&["upload-pack"], &[]),
        "clone" => (&["upload-pack"], &['u']),
        "archive" => (&["exec"], &[]),
        "push" | "send-pack" => (&["receive-pack", "exec"], &[]),
        "rebase" => (&["exec"], &['x']),
        "difftool" => (&["extcmd"], &['x']),
        "filter-branch" => (
            &[
                "env-filter",
                "tree-filter",
                "index-filter",
                "parent-filter",
                "msg-filter",
                "commit-filter",
                "tag-name-filter",
            ],
            &[],
        ),
        "send-email" => (
            &[
                "smtp-server",
                "sendmail-cmd",
                "to-cmd",
                "cc-cmd",
                "header-cmd",
            ],
            &[],
        ),
        "submodule" | "bisect" => {
            // `submodule [--quiet] foreach [--recursive] CMD…`, `bisect run CMD…`.
            let verb = if sub == "submodule" { "foreach" } else { "run" };
            if let Some(at) = args.iter().position(|w| w.text == verb) {
                let rest: Vec<&Word> = args[at + 1..]
                    .iter()
                    .skip_while(|w| w.text.starts_with("--"))
                    .collect();
                let name = format!("git {sub} {verb}");
                took(&mut out, &name, (String::new(), Some(command_words(&rest))));
            }
            return out;
        }
        _ => return out,
    };
    let spec = Spec {
        long,
        short,
        others: &[],
        old_style: false,
    };
    let name = format!("git {sub}");
    unknown_words(&mut out, &name, args);
    for value in option_values(&spec, args) {
        took(&mut out, &name, value);
    }
    out
}

/// Records that `prog` runs the command `value` of `option`.
fn took(out: &mut CommandOptions, prog: &str, (option, value): Found) {
    let exact = value.as_ref().is_some_and(|(_, exact)| *exact);
    let text = value.map(|(t, _)| t.trim().to_string()).unwrap_or_default();
    // tar --checkpoint-action: only `exec=COMMAND` runs a command (a value only known when it
    // runs may be one).
    let checkpoint = matches!(prog, "tar" | "gtar") && option.starts_with("--c");
    let text = match text.strip_prefix("exec=") {
        Some(cmd) if checkpoint => cmd.to_string(),
        None if checkpoint && exact => return,
        _ => text,
    };
    let shown = if option.is_empty() {
        prog.to_string()
    } else {
        format!("{prog} {option}")
    };
    if out.runs.is_none() {
        out.runs = Some(format!(
            "{shown} runs a command with arguments of its own: only a rule for the whole \
             command allows it, not a prefix rule"
        ));
    }
    if exact && !text.is_empty() {
        out.readings.push(text);
    } else if out.hidden.is_none() {
        out.hidden = Some(format!("{shown} runs a command only known when it runs"));
    }
}

/// zip's `-TT COMMAND` (a two-letter option; `-TTCMD` attached).
fn zip_test_command(out: &mut CommandOptions, args: &[Word]) {
    for (i, w) in args.iter().enumerate() {
        if w.text.starts_with('-')
            && !w.text.starts_with("--")
            && let Some(at) = w.text.find("TT")
        {
            let rest = &w.text[at + 2..];
            let value = if rest.is_empty() {
                args.get(i + 1).map(whole)
            } else {
                Some(attached(w, rest))
            };
            took(out, "zip", ("-TT".to_string(), value));
        }
    }
}

/// ssh options (`-o Key=Value`, `-oKey Value`) that run a command on this machine.
fn ssh_command_options(out: &mut CommandOptions, prog: &str, args: &[Word]) {
    const RUNS: [&str; 3] = ["proxycommand", "localcommand", "knownhostscommand"];
    for (i, w) in args.iter().enumerate() {
        let Some(cluster) = w.text.strip_prefix('-').filter(|c| !c.starts_with('-')) else {
            continue;
        };
        let Some(at) = cluster.find('o') else {
            continue;
        };
        let rest = &cluster[at + 1..];
        let (option, exact) = if rest.is_empty() {
            match args.get(i + 1) {
                Some(next) => whole(next),
                None => continue,
            }
        } else {
            attached(w, rest)
        };
        if !exact {
            // `-o "$OPT"`: may be a ProxyCommand.
            took(out, prog, ("-o".to_string(), Some((option, false))));
            continue;
        }
        let (key, value) = match option.split_once(['=', ' ', '\t']) {
            Some((k, v)) => (k.trim(), v.trim_start_matches(['=', ' ', '\t'])),
            None => (option.trim(), ""),
        };
        if ["match", "include", "pkcs11provider", "securitykeyprovider"]
            .iter()
            .any(|k| key.eq_ignore_ascii_case(k))
        {
            // `Match exec "CMD"` runs CMD, in ssh's own quoting.
            took(
                out,
                prog,
                (format!("-o {key}"), Some((value.to_string(), false))),
            );
        } else if RUNS.contains(&key.to_ascii_lowercase().as_str()) {
            let value = (value.to_string(), exact);
            took(out, prog, (format!("-o {key}"), Some(value)));
        }
    }
}

/// fd's `-x`/`--exec` and `-X`/`--exec-batch`: the words after it, up to a `;`, are a command
/// run for the results (as `find -exec`).
fn fd_exec(out: &mut CommandOptions, prog: &str, args: &[Word]) {
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        let long = t.strip_prefix("--").is_some_and(|n| {
            !n.is_empty() && ("exec".starts_with(n) || "exec-batch".starts_with(n))
        });
        // In a cluster, a letter after one that takes a value is that value (`-tx`: type x).
        let short = t.starts_with('-')
            && !t.starts_with("--")
            && t[1..]
                .chars()
                .take_while(|c| !"dteEcjSo".contains(*c))
                .any(|c| c == 'x' || c == 'X');
        if !(long || short) {
            i += 1;
            continue;
        }
        let words: Vec<&Word> = args[i + 1..].iter().take_while(|w| w.text != ";").collect();
        took(out, prog, (t.to_string(), Some(command_words(&words))));
        i += 1 + words.len();
    }
}

/// less's start-up commands (`+CMD`, `++CMD`): `!` runs a shell command, `|` pipes to one.
fn less_commands(out: &mut CommandOptions, args: &[Word]) {
    for w in args {
        let Some(cmds) = w.text.strip_prefix('+') else {
            continue;
        };
        let cmds = cmds.strip_prefix('+').unwrap_or(cmds);
        // A search (`+/x|y`) is a pattern to its end, unless a line break starts a new command.
        if cmds.starts_with(['/', '?']) && !cmds.contains(['\n', '\r']) {
            continue;
        }
        if let Some(at) = cmds.find(['!', '|']) {
            // `|X COMMAND`: a mark letter comes first.
            let rest = &cmds[at + 1..];
            let rest = if cmds[at..].starts_with('|') {
                rest.get(1..).unwrap_or("")
            } else {
                rest
            };
            took(out, "less", ("+".to_string(), Some(attached(w, rest))));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(args: &[&str]) -> Vec<Word> {
        args.iter().map(|a| Word::plain(a)).collect()
    }

    /// A program, its arguments, and the commands it runs (`None`: it runs none).
    type Case = (
        &'static str,
        &'static [&'static str],
        Option<&'static [&'static str]>,
    );

    #[test]
    fn command_options_table() {
        let cases: &[Case] = &[
            ("rg", &["--pre", "pdftotext", "x"], Some(&["pdftotext"])),
            ("rg", &["--pre=rm", "x"], Some(&["rm"])),
            ("rg", &["--pretty", "--pre-glob", "*.pdf", "x"], None),
            ("rg", &["-n", "foo", "src"], None),
            (
                "tar",
                &["-I", "zstd -19", "-cf", "a.tar", "f"],
                Some(&["zstd -19"]),
            ),
            ("tar", &["-cIzstd", "-f", "a.tar"], Some(&["zstd"])),
            ("tar", &["--use-compress=xz", "-cf", "a"], Some(&["xz"])),
            (
                "tar",
                &["--to-command", "rm -rf y", "-xf", "a.tar"],
                Some(&["rm -rf y"]),
            ),
            ("tar", &["--to-c=sh", "-xf", "a.tar"], Some(&["sh"])),
            (
                "tar",
                &[
                    "--checkpoint=10",
                    "--checkpoint-action=dot",
                    "-cf",
                    "a",
                    "f",
                ],
                None,
            ),
            (
                "tar",
                &["--checkpoint-action=exec=rm y", "-cf", "a", "f"],
                Some(&["rm y"]),
            ),
            (
                "tar",
                &["-F", "./next.sh", "-cf", "a", "f"],
                Some(&["./next.sh"]),
            ),
            ("tar", &["--info-script=./s", "-cf", "a"], Some(&["./s"])),
            (
                "tar",
                &["--rsh-command=/bin/evil", "-cf", "h:a"],
                Some(&["/bin/evil"]),
            ),
            ("tar", &["-xzf", "a.tgz"], None),
            ("tar", &["xzf", "a.tgz"], None),
            ("man", &["-P", "rm y", "ls"], Some(&["rm y"])),
            ("man", &["--pager=cat", "ls"], Some(&["cat"])),
            ("man", &["-Hfirefox", "ls"], Some(&["firefox"])),
            ("man", &["ls"], None),
            (
                "zip",
                &["-T", "-TT", "unzip -tqq", "a.zip", "f"],
                Some(&["unzip -tqq"]),
            ),
            ("zip", &["--unzip-command", "sh", "a.zip"], Some(&["sh"])),
            ("zip", &["-r", "a.zip", "dir"], None),
            (
                "split",
                &["--filter=gzip > $FILE.gz", "big"],
                Some(&["gzip > $FILE.gz"]),
            ),
            ("split", &["-l", "10", "big"], None),
            (
                "rsync",
                &["-avz", "-e", "ssh -p 22", "a", "h:b"],
                Some(&["ssh -p 22"]),
            ),
            ("rsync", &["-ave", "ssh", "a", "h:b"], Some(&["ssh"])),
            ("rsync", &["--rsh=rm y", "a", "h:b"], Some(&["rm y"])),
            (
                "rsync",
                &["--rsync-path=sudo rsync", "a", "h:b"],
                Some(&["sudo rsync"]),
            ),
            ("rsync", &["-avz", "--delete", "a/", "b/"], None),
            (
                "ssh",
                &["-o", "ProxyCommand=nc %h %p", "host"],
                Some(&["nc %h %p"]),
            ),
            ("ssh", &["-oproxycommand rm y", "host"], Some(&["rm y"])),
            (
                "ssh",
                &["-v", "-o", "LocalCommand=rm y", "host"],
                Some(&["rm y"]),
            ),
            (
                "ssh",
                &["-o", "StrictHostKeyChecking=no", "host", "ls"],
                None,
            ),
            ("scp", &["-S", "./myssh", "a", "h:b"], Some(&["./myssh"])),
            ("scp", &["-r", "a", "h:b"], None),
            ("less", &["+!rm y", "f"], Some(&["rm y"])),
            ("less", &["++|arm y", "f"], Some(&["rm y"])),
            ("less", &["+/a|b!c", "f"], None),
            ("less", &["+G", "f"], None),
            ("cat", &["--pre", "rm"], None),
            ("bat", &["--pager=rm y", "f"], Some(&["rm y"])),
            ("ack", &["--pager", "less -R", "x"], Some(&["less -R"])),
            ("bat", &["-n", "f"], None),
            ("sdiff", &["--diff-program=rm", "a", "b"], Some(&["rm"])),
            ("diff3", &["a", "b", "c"], None),
            ("pandoc", &["-F", "./f.py", "a.md"], Some(&["./f.py"])),
            (
                "pandoc",
                &["--filter=pandoc-citeproc", "a.md"],
                Some(&["pandoc-citeproc"]),
            ),
            ("fd", &["-e", "rs", "-x", "rm", "{}"], Some(&["rm {}"])),
            (
                "fd",
                &["foo", "--exec-batch", "rm", "-rf", ";", "-H"],
                Some(&["rm -rf"]),
            ),
            ("fd", &["-Hx", "touch", "m"], Some(&["touch m"])),
            ("fd", &["-H", "-e", "rs", "foo"], None),
            ("fd", &["-tx", "foo"], None),
            ("fd", &["-Htx", "foo"], None),
        ];
        check(cases, command_options);
    }

    /// Runs `find` over the cases: each runs exactly the commands it names, none hidden.
    fn check(cases: &[Case], find: fn(&str, &[Word]) -> CommandOptions) {
        for (prog, args, want) in cases {
            let out = find(prog, &words(args));
            match want {
                None => assert!(out.runs.is_none(), "{prog} {args:?}: {out:?}"),
                Some(want) => {
                    assert!(out.runs.is_some(), "{prog} {args:?}: {out:?}");
                    assert_eq!(out.readings, *want, "{prog} {args:?}");
                    assert!(out.hidden.is_none(), "{prog} {args:?}: {out:?}");
                }
            }
        }
    }

    #[test]
    fn git_subcommands_that_run_commands() {
        let cases: &[Case] = &[
            ("fetch", &["--upload-pack=rm y", "origin"], Some(&["rm y"])),
            ("fetch", &["--upload", "rm y", "origin"], Some(&["rm y"])),
            ("fetch", &["--prune", "origin"], None),
            ("clone", &["-u", "rm y", "/r", "d"], Some(&["rm y"])),
            ("clone", &["--depth", "1", "/r", "d"], None),
            ("push", &["-u", "origin", "main"], None),
            ("push", &["--receive-pack=rm y", "origin"], Some(&["rm y"])),
            ("push", &["--exec=rm y", "origin"], Some(&["rm y"])),
            ("rebase", &["-x", "make test", "main"], Some(&["make test"])),
            ("rebase", &["--exec", "rm y", "main"], Some(&["rm y"])),
            ("rebase", &["-i", "main"], None),
            ("difftool", &["--extcmd=rm y"], Some(&["rm y"])),
            (
                "archive",
                &["--remote=x", "--exec=rm y", "HEAD"],
                Some(&["rm y"]),
            ),
            (
                "filter-branch",
                &["--tree-filter", "rm y", "HEAD"],
                Some(&["rm y"]),
            ),
            ("send-email", &["--sendmail-cmd=rm y", "p"], Some(&["rm y"])),
            (
                "submodule",
                &["foreach", "--recursive", "rm", "y"],
                Some(&["rm y"]),
            ),
            ("submodule", &["update", "--init"], None),
            ("bisect", &["run", "rm", "y"], Some(&["rm y"])),
            ("bisect", &["good"], None),
            ("commit", &["-m", "x"], None),
        ];
        check(cases, git_command_options);
    }

    #[test]
    fn a_command_only_known_when_it_runs_is_hidden() {
        let mut args = words(&["--pre", "x", "file"]);
        args[1].exact = false;
        let out = command_options("rg", &args);
        assert!(out.runs.is_some());
        assert!(out.readings.is_empty());
        assert!(
            out.hidden
                .is_some_and(|h| h.contains("only known when it runs"))
        );
        let mut args = words(&["-n", "x", "src"]);
        args[1].exact = false;
        let out = command_options("rg", &args);
        assert!(out.runs.is_some() && out.hidden.is_some(), "{out:?}");
        // A checkpoint action only known when it runs may be `exec=…`.
        let mut args = words(&["--checkpoint-action", "x", "-cf", "a", "f"]);
        args[1].exact = false;
        let out = command_options("tar", &args);
        assert!(out.hidden.is_some(), "{out:?}");
        let mut args = words(&["-o", "x", "host"]);
        args[1].exact = false;
        assert!(command_options("ssh", &args).hidden.is_some());
        // Old-style tar letters: which word is the command cannot be told.
        let out = command_options("tar", &words(&["cfI", "a.tar", "rm y", "f"]));
        assert!(out.runs.is_some() && out.hidden.is_some(), "{out:?}");
        // An option at the very end runs nothing known.
        let out = command_options("man", &words(&["ls", "-P"]));
        assert!(out.hidden.is_some(), "{out:?}");
    }
}
