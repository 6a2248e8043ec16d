//! git: global options (normalised away for deny and ask rules), the read-only subcommands with
//! their option grammars, and the files they read.
//!
//! Read-only here means the subcommand and every option are in the table below. Whether git
//! would run code from its configuration (`core.fsmonitor`, diff drivers, hooks, …) is decided
//! at decision time by [`super::gitconfig`], for the directories in [`super::GitRun`].

use super::options::{self, Grammar, Parsed};
use super::programs::target;
use super::word::Word;
use super::{Cwd, Effects, GitRun, Target};

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

const DIFF_SHORT: &str = "pusWRazwbDB::M::C::X::U::l:I:G:S:O:";
const DIFF_LONG: &[&str] = &[
    "patch",
    "no-patch",
    "unified=?",
    "function-context",
    "no-function-context",
    "raw",
    "patch-with-raw",
    "patch-with-stat",
    "numstat",
    "shortstat",
    "dirstat=?",
    "cumulative",
    "dirstat-by-file=?",
    "check",
    "summary",
    "name-only",
    "name-status",
    "stat=?",
    "stat-width=",
    "stat-name-width=",
    "stat-graph-width=",
    "stat-count=",
    "compact-summary",
    "no-compact-summary",
    "binary",
    "full-index",
    "no-full-index",
    "color=?",
    "no-color",
    "ws-error-highlight=",
    "abbrev=?",
    "no-abbrev",
    "src-prefix=",
    "dst-prefix=",
    "line-prefix=",
    "no-prefix",
    "default-prefix",
    "inter-hunk-context=",
    "output-indicator-new=",
    "output-indicator-old=",
    "output-indicator-context=",
    "break-rewrites=?",
    "find-renames=?",
    "irreversible-delete",
    "find-copies=?",
    "find-copies-harder",
    "no-find-copies-harder",
    "no-renames",
    "rename-empty",
    "no-rename-empty",
    "follow",
    "no-follow",
    "minimal",
    "ignore-all-space",
    "ignore-space-change",
    "ignore-space-at-eol",
    "ignore-cr-at-eol",
    "ignore-blank-lines",
    "ignore-matching-lines=",
    "indent-heuristic",
    "no-indent-heuristic",
    "patience",
    "histogram",
    "diff-algorithm=",
    "anchored=",
    "word-diff=?",
    "word-diff-regex=",
    "color-words=?",
    "color-moved=?",
    "no-color-moved",
    "color-moved-ws=",
    "no-color-moved-ws",
    "relative=?",
    "no-relative",
    "text",
    "no-text",
    "exit-code",
    "no-exit-code",
    "quiet",
    "no-quiet",
    "no-ext-diff",
    "no-textconv",
    "ignore-submodules=?",
    "submodule=?",
    "ita-invisible-in-index",
    "ita-visible-in-index",
    "pickaxe-all",
    "pickaxe-regex",
    "find-object=",
    "diff-filter=",
    "rotate-to=",
    "skip-to=",
];
const LOG_LONG: &[&str] = &[
    "max-count=",
    "skip=",
    "since=",
    "after=",
    "until=",
    "before=",
    "since-as-filter=",
    "author=",
    "committer=",
    "grep-reflog=",
    "grep=",
    "all-match",
    "invert-grep",
    "regexp-ignore-case",
    "basic-regexp",
    "extended-regexp",
    "fixed-strings",
    "perl-regexp",
    "remove-empty",
    "merges",
    "no-merges",
    "min-parents=",
    "max-parents=",
    "no-min-parents",
    "no-max-parents",
    "first-parent",
    "exclude-first-parent-only",
    "not",
    "all",
    "branches=?",
    "tags=?",
    "remotes=?",
    "glob=",
    "exclude=",
    "exclude-hidden=",
    "reflog",
    "alternate-refs",
    "single-worktree",
    "ignore-missing",
    "cherry-mark",
    "cherry-pick",
    "left-only",
    "right-only",
    "cherry",
    "walk-reflogs",
    "merge",
    "boundary",
    "simplify-by-decoration",
    "show-pulls",
    "full-history",
    "dense",
    "sparse",
    "simplify-merges",
    "ancestry-path=?",
    "date-order",
    "author-date-order",
    "topo-order",
    "reverse",
    "no-walk=?",
    "do-walk",
    "format=",
    "pretty=?",
    "oneline",
    "abbrev-commit",
    "no-abbrev-commit",
    "encoding=",
    "expand-tabs=?",
    "no-expand-tabs",
    "notes=?",
    "no-notes",
    "show-notes=?",
    "show-notes-by-default",
    "show-signature",
    "no-show-signature",
    "relative-date",
    "date=",
    "parents",
    "children",
    "left-right",
    "graph",
    "show-linear-break=?",
    "decorate=?",
    "no-decorate",
    "decorate-refs=",
    "decorate-refs-exclude=",
    "clear-decorations",
    "source",
    "no-source",
    "use-mailmap",
    "no-use-mailmap",
    "mailmap",
    "no-mailmap",
    "log-size",
    "full-diff",
    "cc",
    "dd",
    "remerge-diff",
    "diff-merges=",
    "no-diff-merges",
    "combined-all-paths",
    "count",
];

/// A grammar joining the diff options with other ones, built once.
fn joined(extra_short: &'static str, extra_long: &'static [&'static str]) -> Grammar {
    // Leaked once per grammar on first use: a handful of small strings for the process life.
    let short: &'static str = Box::leak(format!("{DIFF_SHORT}{extra_short}").into_boxed_str());
    let mut long: Vec<&'static str> = DIFF_LONG.to_vec();
    long.extend_from_slice(extra_long);
    Grammar::new(short, Box::leak(long.into_boxed_slice())).numbers()
}

fn log_grammar() -> &'static Grammar {
    static G: std::sync::OnceLock<Grammar> = std::sync::OnceLock::new();
    G.get_or_init(|| joined("n:iEFPgmctL:q", LOG_LONG))
}

fn diff_grammar() -> &'static Grammar {
    static G: std::sync::OnceLock<Grammar> = std::sync::OnceLock::new();
    G.get_or_init(|| {
        joined(
            "0123",
            &[
                "cached",
                "staged",
                "merge-base",
                "no-index",
                "base",
                "ours",
                "theirs",
            ],
        )
    })
}

const STATUS: Grammar = Grammar::new(
    "vsbzu::M::",
    &[
        "verbose",
        "no-verbose",
        "short",
        "no-short",
        "branch",
        "no-branch",
        "show-stash",
        "no-show-stash",
        "ahead-behind",
        "no-ahead-behind",
        "porcelain=?",
        "no-porcelain",
        "long",
        "no-long",
        "null",
        "no-null",
        "untracked-files=?",
        "no-untracked-files",
        "ignored=?",
        "no-ignored",
        "ignore-submodules=?",
        "no-ignore-submodules",
        "column=?",
        "no-column",
        "no-renames",
        "renames",
        "find-renames=?",
    ],
);
const BRANCH: Grammar = Grammar::new(
    "vqrali",
    &[
        "verbose",
        "no-verbose",
        "quiet",
        "color=?",
        "no-color",
        "remotes",
        "contains=",
        "no-contains=",
        "abbrev=?",
        "no-abbrev",
        "all",
        "list",
        "show-current",
        "merged=?",
        "no-merged=?",
        "column=?",
        "no-column",
        "sort=",
        "no-sort",
        "points-at=",
        "ignore-case",
        "no-ignore-case",
        "format=",
        "no-format",
        "omit-empty",
        "no-omit-empty",
    ],
);
const TAG: Grammar = Grammar::new(
    "ln::i",
    &[
        "list",
        "sort=",
        "contains=",
        "no-contains=",
        "merged=?",
        "no-merged=?",
        "points-at=",
        "format=",
        "column=?",
        "no-column",
        "color=?",
        "ignore-case",
        "omit-empty",
    ],
);
const REV_PARSE: Grammar = Grammar::new(
    "q",
    &[
        "show-toplevel",
        "show-prefix",
        "show-cdup",
        "git-dir",
        "absolute-git-dir",
        "git-common-dir",
        "is-inside-work-tree",
        "is-inside-git-dir",
        "is-bare-repository",
        "is-shallow-repository",
        "abbrev-ref=?",
        "short=?",
        "verify",
        "quiet",
        "symbolic",
        "symbolic-full-name",
        "sq",
        "sq-quote",
        "default=",
        "revs-only",
        "no-revs",
        "flags",
        "no-flags",
        "all",
        "branches=?",
        "tags=?",
        "remotes=?",
        "glob=",
        "exclude=",
        "local-env-vars",
        "show-object-format=?",
        "show-ref-format",
        "git-path=",
        "path-format=",
        "shared-index-path",
        "since=",
        "until=",
        "before=",
        "after=",
        "disambiguate=",
        "keep-dashdash",
        "stop-at-non-option",
    ],
);
const LS_FILES: Grammar = Grammar::new(
    "cdmoiskuztvfx:X:",
    &[
        "cached",
        "deleted",
        "modified",
        "others",
        "ignored",
        "stage",
        "killed",
        "directory",
        "no-empty-directory",
        "eol",
        "exclude=",
        "exclude-from=",
        "exclude-per-directory=",
        "exclude-standard",
        "error-unmatch",
        "with-tree=",
        "full-name",
        "recurse-submodules",
        "abbrev=?",
        "debug",
        "format=",
        "sparse",
        "deduplicate",
        "unmerged",
        "resolve-undo",
        "null",
    ],
);
const LS_TREE: Grammar = Grammar::new(
    "dtrlz",
    &[
        "long",
        "name-only",
        "name-status",
        "object-only",
        "full-name",
        "full-tree",
        "abbrev=?",
        "format=",
    ],
);
const BLAME: Grammar = Grammar::new(
    "bL:lstfnewpcM::C::S:",
    &[
        "root",
        "show-stats",
        "reverse=",
        "first-parent",
        "porcelain",
        "line-porcelain",
        "incremental",
        "encoding=",
        "contents=",
        "date=",
        "progress",
        "no-progress",
        "score-debug",
        "show-name",
        "show-number",
        "show-email",
        "ignore-rev=",
        "ignore-revs-file=",
        "color-lines",
        "color-by-age",
        "minimal",
        "abbrev=?",
    ],
);
const DESCRIBE: Grammar = Grammar::new(
    "",
    &[
        "all",
        "tags",
        "contains",
        "abbrev=?",
        "candidates=",
        "exact-match",
        "debug",
        "long",
        "match=",
        "exclude=",
        "always",
        "first-parent",
        "dirty=?",
        "broken=?",
    ],
);
const CAT_FILE: Grammar = Grammar::new(
    "tsepZ",
    &[
        "batch=?",
        "batch-check=?",
        "batch-command=?",
        "batch-all-objects",
        "buffer",
        "follow-symlinks",
        "unordered",
        "textconv",
        "filters",
        "path=",
        "allow-unknown-type",
        "use-mailmap",
        "mailmap",
        "no-mailmap",
    ],
);
const GREP: Grammar = Grammar::new(
    "EFGPinvwlLchHzoqpWa0123456789A:B:C:e:f:m:",
    &[
        "cached",
        "no-index",
        "untracked",
        "no-exclude-standard",
        "exclude-standard",
        "recurse-submodules",
        "text",
        "textconv",
        "no-textconv",
        "ignore-case",
        "word-regexp",
        "invert-match",
        "full-name",
        "extended-regexp",
        "basic-regexp",
        "fixed-strings",
        "perl-regexp",
        "line-number",
        "column",
        "files-with-matches",
        "name-only",
        "files-without-match",
        "count",
        "color=?",
        "no-color",
        "break",
        "heading",
        "function-context",
        "show-function",
        "and",
        "or",
        "not",
        "all-match",
        "max-depth=",
        "threads=",
        "only-matching",
        "null",
        "quiet",
        "after-context=",
        "before-context=",
        "context=",
        "max-count=",
    ],
);
const SHOW_REF: Grammar = Grammar::new(
    "dsq",
    &[
        "head",
        "tags",
        "heads",
        "branches",
        "dereference",
        "hash=?",
        "abbrev=?",
        "verify",
        "quiet",
        "exists",
    ],
);
const FOR_EACH_REF: Grammar = Grammar::new(
    "",
    &[
        "count=",
        "shell",
        "perl",
        "python",
        "tcl",
        "sort=",
        "format=",
        "color=?",
        "points-at=",
        "merged=?",
        "no-merged=?",
        "contains=?",
        "no-contains=?",
        "ignore-case",
        "omit-empty",
        "exclude=",
    ],
);
const MERGE_BASE: Grammar = Grammar::new(
    "a",
    &["all", "octopus", "independent", "is-ancestor", "fork-point"],
);
const NAME_REV: Grammar = Grammar::new(
    "",
    &[
        "tags",
        "refs=",
        "exclude=",
        "all",
        "name-only",
        "no-undefined",
        "always",
        "annotate-stdin",
    ],
);
const REMOTE: Grammar = Grammar::new("v", &["verbose"]);
const CONFIG: Grammar = Grammar::new(
    "lzf:",
    &[
        "get",
        "get-all",
        "get-regexp",
        "get-urlmatch",
        "list",
        "show-origin",
        "show-scope",
        "null",
        "name-only",
        "type=",
        "bool",
        "int",
        "bool-or-int",
        "path",
        "expiry-date",
        "default=",
        "global",
        "system",
        "local",
        "worktree",
        "file=",
        "blob=",
        "includes",
        "no-includes",
    ],
);
const WORKTREE_LIST: Grammar = Grammar::new("vz", &["porcelain", "verbose", "expire="]);
const COUNT_OBJECTS: Grammar = Grammar::new("vH", &["verbose", "human-readable"]);

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
    let parse = |g: &Grammar| options::parse(g, args);
    match sub {
        "status" => {
            let p = parse(&STATUS);
            problems_of(args, &p, &mut out);
        }
        "log" | "whatchanged" | "shortlog" | "rev-list" | "reflog" => {
            let (args, p) = if sub == "reflog" {
                match args.first().map(|w| w.text.as_str()) {
                    Some("show") => (&args[1..], options::parse(log_grammar(), &args[1..])),
                    Some("exists") => (&args[1..], Parsed::default()),
                    Some(s) if !s.starts_with('-') => return None,
                    _ => (args, parse(log_grammar())),
                }
            } else {
                (args, parse(log_grammar()))
            };
            problems_of(args, &p, &mut out);
            out.shows_content = patch_requested(&p) || p.has(&["-m", "-c"]) && !content_limited(&p);
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
        }
        "show" => {
            let p = parse(log_grammar());
            problems_of(args, &p, &mut out);
            out.shows_content = !content_limited(&p);
            values_read(&p, &["-O"], cwd, &mut out.effects);
            rev_paths(args, &p.operands, cwd, &mut out.effects);
        }
        "diff" => {
            let p = parse(diff_grammar());
            problems_of(args, &p, &mut out);
            out.shows_content = !content_limited(&p);
            values_read(&p, &["-O"], cwd, &mut out.effects);
            if p.has(&["--no-index"]) {
                for &i in &p.operands {
                    out.effects.reads.extend(target(&args[i], cwd));
                }
            } else {
                rev_paths(args, &p.operands, cwd, &mut out.effects);
            }
        }
        "branch" => {
            let p = parse(&BRANCH);
            problems_of(args, &p, &mut out);
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
            let p = parse(&TAG);
            problems_of(args, &p, &mut out);
            if !p.operands.is_empty() && !p.has(&["-l", "--list"]) {
                return None;
            }
        }
        "rev-parse" => {
            let p = parse(&REV_PARSE);
            problems_of(args, &p, &mut out);
        }
        "ls-files" => {
            let p = parse(&LS_FILES);
            problems_of(args, &p, &mut out);
            values_read(&p, &["-X", "--exclude-from"], cwd, &mut out.effects);
        }
        "ls-tree" => {
            let p = parse(&LS_TREE);
            problems_of(args, &p, &mut out);
        }
        "blame" | "annotate" => {
            let p = parse(&BLAME);
            problems_of(args, &p, &mut out);
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
        "describe" => {
            let p = parse(&DESCRIBE);
            problems_of(args, &p, &mut out);
        }
        "cat-file" => {
            let p = parse(&CAT_FILE);
            problems_of(args, &p, &mut out);
            out.shows_content = !p.has(&["-t", "-s", "-e"]);
            rev_paths(args, &p.operands, cwd, &mut out.effects);
        }
        "grep" => {
            let p = parse(&GREP);
            problems_of(args, &p, &mut out);
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
        "show-ref" => {
            let p = parse(&SHOW_REF);
            problems_of(args, &p, &mut out);
        }
        "for-each-ref" => {
            let p = parse(&FOR_EACH_REF);
            problems_of(args, &p, &mut out);
        }
        "merge-base" => {
            let p = parse(&MERGE_BASE);
            problems_of(args, &p, &mut out);
        }
        "name-rev" => {
            let p = parse(&NAME_REV);
            problems_of(args, &p, &mut out);
        }
        "count-objects" => {
            let p = parse(&COUNT_OBJECTS);
            problems_of(args, &p, &mut out);
        }
        "version" => {}
        "remote" => {
            let p = parse(&REMOTE);
            problems_of(args, &p, &mut out);
            match p.operands.first().map(|&i| args[i].text.as_str()) {
                None => {}
                Some("get-url") => {}
                Some(_) => return None,
            }
        }
        "stash" => match args.first().map(|w| w.text.as_str()) {
            Some("list") => {
                let p = options::parse(log_grammar(), &args[1..]);
                problems_of(&args[1..], &p, &mut out);
            }
            Some("show") => {
                let p = options::parse(log_grammar(), &args[1..]);
                problems_of(&args[1..], &p, &mut out);
                out.shows_content = patch_requested(&p);
            }
            _ => return None,
        },
        "worktree" => match args.first().map(|w| w.text.as_str()) {
            Some("list") => {
                let p = options::parse(&WORKTREE_LIST, &args[1..]);
                problems_of(&args[1..], &p, &mut out);
            }
            _ => return None,
        },
        "config" => {
            let (rest, p) = match args.first().map(|w| w.text.as_str()) {
                Some("get") | Some("list") => (&args[1..], options::parse(&CONFIG, &args[1..])),
                Some(s) if !s.starts_with('-') && args.len() > 1 => return None,
                _ => {
                    let p = parse(&CONFIG);
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
            problems_of(rest, &p, &mut out);
            values_read(&p, &["-f", "--file"], cwd, &mut out.effects);
        }
        _ => return None,
    }
    Some(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<Word> {
        s.split(' ')
            .filter(|w| !w.is_empty())
            .map(Word::plain)
            .collect()
    }

    fn ro(cmd: &str) -> Option<ReadOnly> {
        let w = words(cmd);
        let g = globals(&w);
        let sub = g.sub?;
        read_only(&w[sub].text, &w[sub + 1..], &Cwd::Session).map(|mut r| {
            r.problems.extend(g.problems);
            r
        })
    }

    #[test]
    fn read_only_table() {
        for (cmd, ok) in [
            ("status", true),
            ("status -sb", true),
            ("status --porcelain=v1", true),
            ("log --oneline -n 5", true),
            ("log --oneline -5", true),
            ("log -p --stat", true),
            ("log --format=%h%x20%s", true),
            ("log --output=x", false),
            ("log --ext-diff", false),
            ("diff", true),
            ("diff -O/dev/null", true),
            ("diff --cached --stat", true),
            ("diff --no-index a b", true),
            ("diff --output=x", false),
            ("diff --out=x", false),
            ("show HEAD:README.md", true),
            ("show --stat HEAD", true),
            ("branch", true),
            ("branch -a", true),
            ("branch --format=%(refname)", true),
            ("branch -vv", true),
            ("tag", true),
            ("tag -l v1.0", true),
            ("tag -l v1*", false),
            ("rev-parse --show-toplevel", true),
            ("rev-parse --abbrev-ref HEAD", true),
            ("ls-files -m", true),
            ("blame -L 1,5 a.rs", true),
            ("grep -n foo", true),
            ("grep --open-files-in-pager foo", false),
            ("grep -Ofoo foo", false),
            ("config --get user.name", true),
            ("config user.name", true),
            ("stash list", true),
            ("remote -v", true),
            ("-P log", true),
            ("--no-pager diff", true),
            ("-C sub status", true),
            ("-c core.pager=x log", false),
            ("--git-dir=x log", false),
        ] {
            let got = ro(cmd).unwrap_or_else(|| panic!("{cmd} should be read-only"));
            assert_eq!(got.problems.is_empty(), ok, "{cmd}: {:?}", got.problems);
        }
        for cmd in [
            "push",
            "commit -m x",
            "branch -D x",
            "branch newbranch",
            "tag v1",
            "stash",
            "stash pop",
            "config user.name x",
            "remote add o u",
            "reflog expire",
            "checkout x",
            "fetch",
        ] {
            assert!(ro(cmd).is_none(), "{cmd} is not read-only");
        }
    }

    #[test]
    fn content_and_paths() {
        let r = ro("show HEAD:.env").unwrap();
        assert!(
            r.effects
                .reads
                .iter()
                .any(|t| t.path == ".env" && t.repo_top)
        );
        assert!(ro("log -p").unwrap().shows_content);
        assert!(!ro("log --oneline").unwrap().shows_content);
        assert!(ro("show HEAD").unwrap().shows_content);
        assert!(!ro("show --stat HEAD").unwrap().shows_content);
        let r = ro("diff --no-index .env /dev/null").unwrap();
        assert!(r.effects.reads.iter().any(|t| t.path == ".env"));
        let r = ro("blame .env").unwrap();
        assert!(
            r.effects
                .reads
                .iter()
                .any(|t| t.path == ".env" && !t.repo_top)
        );
    }

    #[test]
    fn normalised_views() {
        for (cmd, want) in [
            ("git -C /x push origin", "git push origin"),
            ("git --no-pager push", "git push"),
            ("git -c alias.p=push p", "git push"),
            ("git -P -c a.b=c push -f", "git push -f"),
            ("git -C x push", "git push"),
        ] {
            let w = words(cmd);
            let g = globals(&w[1..]);
            let (view, _) = normalised(&w[1..], &g);
            assert_eq!(view.as_deref(), Some(want), "{cmd}");
        }
        let w = words("git -c alias.x=!rm x");
        let g = globals(&w[1..]);
        let (_, scripts) = normalised(&w[1..], &g);
        assert!(scripts.contains(&"rm".to_string()));
    }
}
