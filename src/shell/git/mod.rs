//! git: global options (normalised away for deny and ask rules), the read-only subcommands with
//! their option grammars, and the files they read.
//!
//! Read-only here means the subcommand and every option are in the table below. Whether git
//! would run code from its configuration (`core.fsmonitor`, diff drivers, hooks, …) is decided
//! at decision time by [`super::gitconfig`], for the directories in [`super::GitRun`].

mod grammars;
#[cfg(test)]
mod tests;

use super::options::{self, Grammar, Parsed};
use super::programs::target;
use super::word::Word;
use super::{Cwd, Effects, GitRun, Target};
use grammars::*;

/// git's own options before the subcommand, read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Globals {
    /// Index of the subcommand word, if there is one.
    pub(crate) sub: Option<usize>,
    /// `-C` directories, in order.
    pub(crate) chdirs: Vec<Word>,
    /// `-c name=value` pairs.
    pub(crate) configs: Vec<Word>,
    /// Why the global options are not understood.
    pub(crate) problems: Vec<String>,
    /// Code runs from a value toolrt cannot see (`--config-env`).
    pub(crate) hidden: Option<String>,
    /// git only prints something and exits (`--version`, `--exec-path`).
    pub(crate) prints_only: bool,
}

/// Reads git's global options (`git [-C dir] [-c k=v] [--no-pager] … <subcommand> …`).
pub(crate) fn globals(args: &[Word]) -> Globals {
    let mut g = Globals::default();
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        if !t.starts_with('-') {
            g.sub = Some(i);
            return g;
        }
        if !w.literal() {
            g.problems.push(format!(
                "git option `{t}` is only known when the command runs"
            ));
            i += 1;
            continue;
        }
        match t {
            "-C" => {
                match args.get(i + 1) {
                    Some(d) => g.chdirs.push(d.clone()),
                    None => g.problems.push("git -C is missing its directory".into()),
                }
                i += 2;
                continue;
            }
            "-c" => {
                match args.get(i + 1) {
                    Some(c) => g.configs.push(c.clone()),
                    None => g.problems.push("git -c is missing its value".into()),
                }
                g.problems
                    .push("git -c sets configuration, which can run commands".into());
                i += 2;
                continue;
            }
            "-p"
            | "--paginate"
            | "-P"
            | "--no-pager"
            | "--no-replace-objects"
            | "--no-lazy-fetch"
            | "--no-optional-locks"
            | "--no-advice"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs" => {}
            "--version" | "--html-path" | "--man-path" | "--info-path" | "--exec-path" => {
                g.prints_only = true;
            }
            "--git-dir" | "--work-tree" | "--namespace" | "--attr-source" | "--super-prefix" => {
                g.problems
                    .push(format!("git {t} points git at another repository or tree"));
                i += 2;
                continue;
            }
            _ if t.starts_with("--config-env") => {
                g.hidden = Some(
                    "git --config-env takes configuration from the environment, which can run commands"
                        .into(),
                );
            }
            _ if t.starts_with("--git-dir=")
                || t.starts_with("--work-tree=")
                || t.starts_with("--namespace=")
                || t.starts_with("--attr-source=")
                || t.starts_with("--super-prefix=")
                || t.starts_with("--exec-path=")
                || t.starts_with("--list-cmds=")
                || t == "--bare" =>
            {
                g.problems.push(format!(
                    "git {t} points git at another repository, tree or program"
                ));
            }
            _ => g.problems.push(format!("unknown git option `{t}`")),
        }
        i += 1;
    }
    g
}

/// The deny and ask view of a git command with its global options removed, and with an alias
/// given by `-c alias.NAME=VALUE` expanded (`git -c alias.p=push p` is `git push`). Aliases
/// starting with `!` run a shell command: that script is returned too.
pub(crate) fn normalised(args: &[Word], g: &Globals) -> (Option<String>, Vec<String>) {
    let Some(sub) = g.sub else {
        return (None, Vec::new());
    };
    if sub == 0 {
        // No global options: the plain view already is this one.
        return (None, Vec::new());
    }
    let mut scripts = Vec::new();
    let mut sub_words: Vec<String> = vec![args[sub].text.clone()];
    for c in &g.configs {
        let Some((key, value)) = c.text.split_once('=') else {
            continue;
        };
        // Any configured value may be a command (core.pager, core.fsmonitor, diff drivers…):
        // deny rules see it as one.
        let v = value.strip_prefix('!').unwrap_or(value);
        scripts.push(v.to_string());
        if let Some(name) = key.to_ascii_lowercase().strip_prefix("alias.")
            && name == args[sub].text.to_ascii_lowercase()
            && !value.starts_with('!')
        {
            sub_words = value.split_whitespace().map(String::from).collect();
        }
    }
    let mut view = vec!["git".to_string()];
    view.extend(sub_words);
    view.extend(args[sub + 1..].iter().map(|w| w.text.clone()));
    (Some(view.join(" ")), scripts)
}

/// A read-only git subcommand: what it reads, and whether every part is understood. `None`
/// when the subcommand is not read-only at all.
pub(crate) struct ReadOnly {
    pub(crate) effects: Effects,
    pub(crate) problems: Vec<String>,
    pub(crate) shows_content: bool,
}

/// Paths named in `REV:path` operands (relative to the repository's top unless they start with
/// `./` or `../`).
fn rev_paths(args: &[Word], idx: &[usize], cwd: &Cwd, fx: &mut Effects) {
    for &i in idx {
        let w = &args[i];
        if let Some((rev, path)) = w.text.split_once(':')
            && !path.is_empty()
            && !rev.contains('/')
            && !w.text.starts_with(":(")
        {
            // `:0:path` is a stage number and a path.
            let path = match path.split_once(':') {
                Some((stage, p)) if stage.len() == 1 && rev.is_empty() => p,
                _ => path,
            };
            fx.reads.push(Target {
                path: path.to_string(),
                exact: w.exact,
                glob: false,
                cwd: cwd.clone(),
                repo_top: !(path.starts_with("./") || path.starts_with("../")),
            });
        }
    }
}

fn values_read(p: &Parsed, names: &[&str], cwd: &Cwd, fx: &mut Effects) {
    for v in p.values(names) {
        if v.text != "-" {
            fx.reads.push(Target {
                path: v.text.clone(),
                exact: v.exact,
                glob: false,
                cwd: cwd.clone(),
                repo_top: false,
            });
        }
    }
}

fn problems_of(args: &[Word], p: &Parsed, out: &mut ReadOnly) {
    out.problems.extend(p.problems.iter().cloned());
    for w in args {
        if !w.literal() {
            out.problems
                .push(format!("`{}` is only known when the command runs", w.text));
        }
    }
}

/// Output options that show no file content.
fn content_limited(p: &Parsed) -> bool {
    p.has(&[
        "--name-only",
        "--name-status",
        "--stat",
        "--numstat",
        "--shortstat",
        "--summary",
        "--raw",
        "--dirstat",
        "--quiet",
        "-s",
        "--no-patch",
        "--check",
        "--compact-summary",
    ]) && !patch_requested(p)
}

fn patch_requested(p: &Parsed) -> bool {
    p.has(&[
        "-p",
        "-u",
        "--patch",
        "-U",
        "--unified",
        "--patch-with-stat",
        "--patch-with-raw",
        "--word-diff",
        "--color-words",
        "-L",
        "--cc",
        "--dd",
        "--remerge-diff",
        "-W",
        "--function-context",
        "--binary",
    ])
}

/// The read-only subcommands; `args` are the words after the subcommand.
pub(crate) fn read_only(sub: &str, args: &[Word], cwd: &Cwd) -> Option<ReadOnly> {
    let mut out = ReadOnly {
        effects: Effects::default(),
        problems: Vec::new(),
        shows_content: false,
    };
    if let Some(g) = plain_grammar(sub) {
        let p = options::parse(g, args);
        problems_of(args, &p, &mut out);
        return Some(out);
    }
    match sub {
        "log" | "whatchanged" | "shortlog" | "rev-list" | "reflog" => {
            history(sub, args, cwd, &mut out)?
        }
        "show" | "diff" => changes(sub, args, cwd, &mut out),
        "branch" | "tag" | "remote" | "stash" | "worktree" => refs(sub, args, &mut out)?,
        "ls-files" | "blame" | "annotate" | "cat-file" | "grep" => files(sub, args, cwd, &mut out),
        "config" => config(args, cwd, &mut out)?,
        "version" => {}
        _ => return None,
    }
    Some(out)
}

/// Subcommands that read nothing toolrt must check: their options are all there is to them.
fn plain_grammar(sub: &str) -> Option<&'static Grammar> {
    Some(match sub {
        "status" => &STATUS,
        "rev-parse" => &REV_PARSE,
        "ls-tree" => &LS_TREE,
        "describe" => &DESCRIBE,
        "show-ref" => &SHOW_REF,
        "for-each-ref" => &FOR_EACH_REF,
        "merge-base" => &MERGE_BASE,
        "name-rev" => &NAME_REV,
        "count-objects" => &COUNT_OBJECTS,
        _ => return None,
    })
}

/// `log` and its relatives: history, with patches when asked for; `None` for a `reflog`
/// subcommand that writes.
fn history(sub: &str, args: &[Word], cwd: &Cwd, out: &mut ReadOnly) -> Option<()> {
    let (args, p) = if sub == "reflog" {
        match args.first().map(|w| w.text.as_str()) {
            Some("show") => (&args[1..], options::parse(log_grammar(), &args[1..])),
            Some("exists") => (&args[1..], Parsed::default()),
            Some(s) if !s.starts_with('-') => return None,
            _ => (args, options::parse(log_grammar(), args)),
        }
    } else {
        (args, options::parse(log_grammar(), args))
    };
    problems_of(args, &p, out);
    out.shows_content =
        patch_requested(&p) || p.has(&["-m", "-c"]) && !content_limited(&p) || pickaxe(&p);
    values_read(&p, &["-O"], cwd, &mut out.effects);
    for v in p.values(&["-L"]) {
        if let Some((_, file)) = v.text.rsplit_once(':') {
            out.effects.reads.push(Target {
                path: file.to_string(),
                exact: v.exact,
                glob: false,
                cwd: cwd.clone(),
                repo_top: false,
            });
        }
    }
    rev_paths(args, &p.operands, cwd, &mut out.effects);
    Some(())
}

/// A pickaxe (`-S`, `-G`, `--find-object`): which commits it lists tells whether a file's
/// content matches a guess, so it reveals content one guess at a time.
fn pickaxe(p: &Parsed) -> bool {
    p.has(&["-S", "-G", "--find-object"])
}

/// `show` and `diff`: file content unless an option limits the output.
fn changes(sub: &str, args: &[Word], cwd: &Cwd, out: &mut ReadOnly) {
    if sub == "show" {
        let p = options::parse(log_grammar(), args);
        problems_of(args, &p, out);
        out.shows_content = !content_limited(&p) || pickaxe(&p);
        values_read(&p, &["-O"], cwd, &mut out.effects);
        rev_paths(args, &p.operands, cwd, &mut out.effects);
    } else {
        let p = options::parse(diff_grammar(), args);
        problems_of(args, &p, out);
        out.shows_content = !content_limited(&p) || pickaxe(&p);
        values_read(&p, &["-O"], cwd, &mut out.effects);
        if p.has(&["--no-index"]) {
            for &i in &p.operands {
                out.effects.reads.extend(target(&args[i], cwd));
            }
        } else {
            rev_paths(args, &p.operands, cwd, &mut out.effects);
        }
    }
}

/// Branches, tags, remotes, stashes and worktrees, listed; `None` when the words ask for a
/// change.
fn refs(sub: &str, args: &[Word], out: &mut ReadOnly) -> Option<()> {
    match sub {
        "branch" => {
            let p = options::parse(&BRANCH, args);
            problems_of(args, &p, out);
            let list = p.has(&[
                "-l",
                "--list",
                "-a",
                "--all",
                "-r",
                "--remotes",
                "--contains",
                "--no-contains",
                "--merged",
                "--no-merged",
                "--points-at",
                "--show-current",
            ]);
            if !p.operands.is_empty() && !list {
                return None;
            }
        }
        "tag" => {
            let p = options::parse(&TAG, args);
            problems_of(args, &p, out);
            if !p.operands.is_empty() && !p.has(&["-l", "--list"]) {
                return None;
            }
        }
        "remote" => {
            let p = options::parse(&REMOTE, args);
            problems_of(args, &p, out);
            match p.operands.first().map(|&i| args[i].text.as_str()) {
                None => {}
                Some("get-url") => {}
                Some(_) => return None,
            }
        }
        "stash" => match args.first().map(|w| w.text.as_str()) {
            Some("list") => {
                let p = options::parse(log_grammar(), &args[1..]);
                problems_of(&args[1..], &p, out);
            }
            Some("show") => {
                let p = options::parse(log_grammar(), &args[1..]);
                problems_of(&args[1..], &p, out);
                out.shows_content = patch_requested(&p);
            }
            _ => return None,
        },
        _ => match args.first().map(|w| w.text.as_str()) {
            Some("list") => {
                let p = options::parse(&WORKTREE_LIST, &args[1..]);
                problems_of(&args[1..], &p, out);
            }
            _ => return None,
        },
    }
    Some(())
}

/// Subcommands that read files of the work tree or the repository.
fn files(sub: &str, args: &[Word], cwd: &Cwd, out: &mut ReadOnly) {
    match sub {
        "ls-files" => {
            let p = options::parse(&LS_FILES, args);
            problems_of(args, &p, out);
            values_read(&p, &["-X", "--exclude-from"], cwd, &mut out.effects);
        }
        "blame" | "annotate" => {
            let p = options::parse(&BLAME, args);
            problems_of(args, &p, out);
            out.shows_content = true;
            values_read(
                &p,
                &["-S", "--contents", "--ignore-revs-file"],
                cwd,
                &mut out.effects,
            );
            if let Some(&last) = p.operands.last() {
                out.effects
                    .reads
                    .extend(target(&args[last], cwd).map(|t| Target {
                        repo_top: false,
                        ..t
                    }));
            }
        }
        "cat-file" => {
            let p = options::parse(&CAT_FILE, args);
            problems_of(args, &p, out);
            out.shows_content = !p.has(&["-t", "-s", "-e"]);
            rev_paths(args, &p.operands, cwd, &mut out.effects);
        }
        _ => {
            let p = options::parse(&GREP, args);
            problems_of(args, &p, out);
            out.shows_content = true;
            values_read(&p, &["-f"], cwd, &mut out.effects);
            if p.has(&["--no-index", "--untracked"]) {
                out.effects.trees.push(Target {
                    path: ".".into(),
                    exact: true,
                    glob: false,
                    cwd: cwd.clone(),
                    repo_top: false,
                });
            }
            rev_paths(args, &p.operands, cwd, &mut out.effects);
        }
    }
}

/// `git config`: reading a value or the list; `None` when it writes.
fn config(args: &[Word], cwd: &Cwd, out: &mut ReadOnly) -> Option<()> {
    let (rest, p) = match args.first().map(|w| w.text.as_str()) {
        Some("get") | Some("list") => (&args[1..], options::parse(&CONFIG, &args[1..])),
        Some(s) if !s.starts_with('-') && args.len() > 1 => return None,
        _ => {
            let p = options::parse(&CONFIG, args);
            let reads = p.has(&[
                "--get",
                "--get-all",
                "--get-regexp",
                "--get-urlmatch",
                "--list",
                "-l",
            ]);
            // `git config NAME` (one operand, no option that writes) reads it.
            if !reads && p.operands.len() != 1 {
                return None;
            }
            (args, p)
        }
    };
    problems_of(rest, &p, out);
    values_read(&p, &["-f", "--file"], cwd, &mut out.effects);
    // `--blob REV:path` or a blob id: it prints a file's content from the repository.
    out.shows_content = p.has(&["--blob"]);
    Some(())
}

/// The directories a git command runs in: the command's own, with `-C` applied.
pub(crate) fn run_dirs(cwd: &Cwd, chdirs: &[Word]) -> Cwd {
    let mut dirs = cwd.clone();
    for d in chdirs {
        if !d.literal() || d.text.starts_with("/proc/") || d.text.starts_with("/dev/") {
            return Cwd::Unknown;
        }
        dirs = match dirs.dirs().as_slice() {
            [] => Cwd::Unknown,
            list => Cwd::OneOf(
                list.iter()
                    .map(|base| {
                        if d.text.starts_with('/') || d.text.starts_with("~/") || d.text == "~" {
                            d.text.clone()
                        } else {
                            format!("{base}/{}", d.text)
                        }
                    })
                    .collect(),
            ),
        };
    }
    dirs
}

/// What the policy needs to know about a read-only git command.
pub(crate) fn run(dirs: Cwd, shows_content: bool) -> GitRun {
    GitRun {
        dirs,
        shows_content,
        pathspecs: Vec::new(),
    }
}
