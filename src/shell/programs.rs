//! The program tables: the read-only set (§3.3) and the acceptEdits file commands, each with
//! its real option grammar (GNU coreutils 9, grep 3, diffutils 3, findutils 4.9, bash 5
//! builtins) and which operands and option values are paths it reads, lists or writes; plus a
//! generous list of other programs that read or write files, for deny rules.
//!
//! A program missing from the read-only table is not read-only. An option missing from a
//! program's grammar makes the command not understood (never auto-allowed). docs/SEMANTICS.md
//! lists the tables.

use super::options::{self, Grammar, Parsed, Value};
use super::word::Word;
use super::{Cwd, Effects, Target};

/// What a table says about one command.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    /// Paths read, listed, written.
    pub(crate) effects: Effects,
    /// Why it is not understood; empty when it is.
    pub(crate) problems: Vec<String>,
    /// Commands it runs (`find -exec`): their words, with `{}` standing for found paths.
    pub(crate) runs: Vec<Runs>,
    /// Understood, but it writes, removes or runs something: not read-only.
    pub(crate) not_read_only: Option<String>,
    /// It runs code toolrt cannot see (`sed`'s `e` command).
    pub(crate) hidden: Option<String>,
    /// Command lines it may run, for deny and ask rules (`sort --compress-program=PROG`).
    pub(crate) readings: Vec<String>,
}

/// A command another program runs.
#[derive(Debug, Clone)]
pub(crate) struct Runs {
    /// Its words.
    pub(crate) words: Vec<Word>,
    /// It runs in the directory of each found file (`-execdir`): cwd unknown.
    pub(crate) cwd_unknown: bool,
    /// Where `{}` points: below these start points.
    pub(crate) found_under: Vec<Target>,
    /// The start points themselves can be among the found paths (no test before the action).
    pub(crate) unfiltered: bool,
}

impl Outcome {
    pub(crate) fn problem(&mut self, why: impl Into<String>) {
        let why = why.into();
        if !self.problems.contains(&why) {
            self.problems.push(why);
        }
    }
}

/// The programs of the read-only set, as documented.
pub const READ_ONLY: &[&str] = &[
    "ls", "cat", "echo", "pwd", "head", "tail", "grep", "egrep", "fgrep", "find", "wc", "which",
    "diff", "stat", "du", "cd", "sort", "jq", "git",
];

/// The acceptEdits file commands.
pub const FILE_EDITS: &[&str] = &["mkdir", "touch", "rm", "rmdir", "mv", "cp", "sed"];

pub(crate) fn target(w: &Word, cwd: &Cwd) -> Option<Target> {
    if w.fd || w.text == "-" {
        return None;
    }
    Some(Target {
        path: w.text.clone(),
        exact: w.exact && !w.brace,
        glob: w.glob && w.exact,
        cwd: cwd.clone(),
        repo_top: false,
    })
}

fn value_target(v: &Value, cwd: &Cwd) -> Option<Target> {
    if v.text == "-" {
        return None;
    }
    Some(value_path(v, cwd))
}

/// An option value that names a file, `-` included (a file of that name for options that do not
/// read stdin). A `~` at the start of an attached value (`-o~/x`, `--output=~/x`) is not
/// expanded by the shell: the path is relative.
fn value_path(v: &Value, cwd: &Cwd) -> Target {
    Target {
        path: unexpanded_tilde(&v.text, v.attached),
        exact: v.exact,
        glob: false,
        cwd: cwd.clone(),
        repo_top: false,
    }
}

fn unexpanded_tilde(text: &str, attached: bool) -> String {
    if attached && text.starts_with('~') {
        format!("./{text}")
    } else {
        text.to_string()
    }
}

/// A word that names a file, `-` included; `attached` as for [`value_path`]. `None` for a
/// process substitution (the pipe it reads is checked where it is made).
pub(crate) fn raw_target(w: &Word, attached: bool, cwd: &Cwd) -> Option<Target> {
    if w.fd {
        return None;
    }
    Some(Target {
        path: unexpanded_tilde(&w.text, attached),
        exact: w.exact && !w.brace,
        glob: w.glob && w.exact,
        cwd: cwd.clone(),
        repo_top: false,
    })
}

/// Every word must be exact; globs only where the program takes a path it reads.
pub(crate) fn check_words(args: &[Word], parsed: &Parsed, glob_ok: &[usize], out: &mut Outcome) {
    for p in &parsed.problems {
        out.problem(p.clone());
    }
    for (i, w) in args.iter().enumerate() {
        if w.fd && glob_ok.contains(&i) {
            continue;
        }
        if !w.exact || w.brace || w.fd {
            out.problem(format!(
                "`{}` is only known when the command runs ({})",
                w.text,
                w.why.as_deref().unwrap_or("an expansion")
            ));
        } else if w.glob && !glob_ok.contains(&i) {
            out.problem(format!(
                "`{}` expands to file names where the program does not take a path",
                w.text
            ));
        }
    }
}

pub(crate) fn operand_targets(args: &[Word], idx: &[usize], cwd: &Cwd) -> Vec<Target> {
    idx.iter().filter_map(|&i| target(&args[i], cwd)).collect()
}

const LS: Grammar = Grammar::new(
    "abcdfghiklmnopqrstuvw:xABCDFGHI:LNQRST:UXZ1",
    &[
        "all",
        "almost-all",
        "author",
        "escape",
        "block-size=",
        "ignore-backups",
        "color=?",
        "directory",
        "dired",
        "classify=?",
        "file-type",
        "format=",
        "full-time",
        "group-directories-first",
        "no-group",
        "human-readable",
        "si",
        "dereference-command-line",
        "dereference-command-line-symlink-to-dir",
        "hide=",
        "hyperlink=?",
        "indicator-style=",
        "inode",
        "ignore=",
        "kibibytes",
        "dereference",
        "literal",
        "numeric-uid-gid",
        "hide-control-chars",
        "show-control-chars",
        "quote-name",
        "quoting-style=",
        "reverse",
        "recursive",
        "size",
        "sort=",
        "time=",
        "time-style=",
        "tabsize=",
        "width=",
        "context",
        "zero",
        "help",
        "version",
    ],
);
const CAT: Grammar = Grammar::new(
    "AbeEnstTuv",
    &[
        "show-all",
        "number-nonblank",
        "show-ends",
        "number",
        "squeeze-blank",
        "show-tabs",
        "show-nonprinting",
        "help",
        "version",
    ],
);
const HEAD: Grammar = Grammar::new(
    "c:n:qvz",
    &[
        "bytes=",
        "lines=",
        "quiet",
        "silent",
        "verbose",
        "zero-terminated",
        "help",
        "version",
    ],
)
.numbers();
const TAIL: Grammar = Grammar::new(
    "c:fFn:qs:vz",
    &[
        "bytes=",
        "follow=?",
        "lines=",
        "max-unchanged-stats=",
        "pid=",
        "quiet",
        "retry",
        "silent",
        "sleep-interval=",
        "verbose",
        "zero-terminated",
        "debug",
        "help",
        "version",
    ],
)
.numbers();
const GREP: Grammar = Grammar::new(
    "0123456789A:B:C:D:EFGHIJLNPRTUVX:abcd:e:f:hiLlm:noqRrsuvwxyZz",
    &[
        "extended-regexp",
        "fixed-strings",
        "basic-regexp",
        "perl-regexp",
        "regexp=",
        "file=",
        "ignore-case",
        "no-ignore-case",
        "word-regexp",
        "line-regexp",
        "null-data",
        "no-messages",
        "invert-match",
        "version",
        "help",
        "max-count=",
        "byte-offset",
        "line-number",
        "no-line-number",
        "line-buffered",
        "with-filename",
        "no-filename",
        "label=",
        "only-matching",
        "quiet",
        "silent",
        "binary-files=",
        "text",
        "directories=",
        "devices=",
        "recursive",
        "dereference-recursive",
        "include=",
        "exclude=",
        "exclude-from=",
        "exclude-dir=",
        "files-without-match",
        "files-with-matches",
        "count",
        "initial-tab",
        "null",
        "before-context=",
        "after-context=",
        "context=",
        "group-separator=",
        "no-group-separator",
        "color=?",
        "colour=?",
        "binary",
    ],
);
const WC: Grammar = Grammar::new(
    "clLmw",
    &[
        "bytes",
        "chars",
        "lines",
        "files0-from=",
        "max-line-length",
        "words",
        "total=",
        "help",
        "version",
    ],
);
const WHICH: Grammar = Grammar::new("as", &[]);
const DIFF: Grammar = Grammar::new(
    "abBcC:dD:eEF:hHiI:lL:nNpPqrsS:tTuU:vwW:x:X:yZ",
    &[
        "normal",
        "brief",
        "report-identical-files",
        "context=?",
        "unified=?",
        "ed",
        "rcs",
        "side-by-side",
        "width=",
        "left-column",
        "suppress-common-lines",
        "show-c-function",
        "show-function-line=",
        "label=",
        "expand-tabs",
        "initial-tab",
        "tabsize=",
        "suppress-blank-empty",
        "paginate",
        "recursive",
        "no-dereference",
        "new-file",
        "unidirectional-new-file",
        "ignore-file-name-case",
        "no-ignore-file-name-case",
        "exclude=",
        "exclude-from=",
        "starting-file=",
        "from-file=",
        "to-file=",
        "ignore-case",
        "ignore-tab-expansion",
        "ignore-trailing-space",
        "ignore-space-change",
        "ignore-all-space",
        "ignore-blank-lines",
        "ignore-matching-lines=",
        "text",
        "strip-trailing-cr",
        "ifdef=",
        "old-group-format=",
        "new-group-format=",
        "unchanged-group-format=",
        "changed-group-format=",
        "line-format=",
        "old-line-format=",
        "new-line-format=",
        "unchanged-line-format=",
        "minimal",
        "horizon-lines=",
        "speed-large-files",
        "color=?",
        "palette=",
        "help",
        "version",
    ],
);
const STAT: Grammar = Grammar::new(
    "c:fLt",
    &[
        "dereference",
        "file-system",
        "cached=",
        "format=",
        "printf=",
        "terse",
        "help",
        "version",
    ],
);
const DU: Grammar = Grammar::new(
    "0abB:cd:DhHklLmPsSt:xX:",
    &[
        "null",
        "all",
        "apparent-size",
        "block-size=",
        "bytes",
        "total",
        "dereference-args",
        "max-depth=",
        "files0-from=",
        "human-readable",
        "inodes",
        "dereference",
        "count-links",
        "no-dereference",
        "separate-dirs",
        "si",
        "summarize",
        "threshold=",
        "time=?",
        "time-style=",
        "exclude-from=",
        "exclude=",
        "one-file-system",
        "help",
        "version",
    ],
);
const CD: Grammar = Grammar::new("LPe@", &[]);
/// GNU coreutils 9 `sort`, every long option of its source (so abbreviations resolve); not the
/// obsolete `-y` or `+POS1 -POS2` keys (a `+POS` word reads as a file, `-POS` as an unknown option).
const SORT: Grammar = Grammar::new(
    "bcCdfghik:mMno:rRsS:t:T:uVz",
    &[
        "ignore-leading-blanks",
        "check=?",
        "compress-program=",
        "debug",
        "dictionary-order",
        "ignore-case",
        "files0-from=",
        "general-numeric-sort",
        "ignore-nonprinting",
        "key=",
        "merge",
        "month-sort",
        "numeric-sort",
        "human-numeric-sort",
        "version-sort",
        "random-sort",
        "random-source=",
        "sort=",
        "output=",
        "reverse",
        "stable",
        "batch-size=",
        "buffer-size=",
        "field-separator=",
        "temporary-directory=",
        "unique",
        "zero-terminated",
        "parallel=",
        "help",
        "version",
    ],
)
.abbreviations();
const PWD: Grammar = Grammar::new("LP", &[]);

/// The read-only set: `None` if `prog` is not in it; otherwise what it reads and whether every
/// part is understood.
pub(crate) fn read_only(prog: &str, args: &[Word], cwd: &Cwd) -> Option<Outcome> {
    let mut out = Outcome::default();
    match prog {
        "ls" => {
            let p = options::parse(&LS, args);
            check_words(args, &p, &p.operands, &mut out);
            out.effects.lists = operand_targets(args, &p.operands, cwd);
            if p.operands.is_empty() {
                out.effects.lists.push(dot(cwd));
            }
        }
        "cat" | "head" | "tail" => {
            let g = match prog {
                "cat" => &CAT,
                "head" => &HEAD,
                _ => &TAIL,
            };
            let p = options::parse(g, args);
            check_words(args, &p, &p.operands, &mut out);
            out.effects.reads = operand_targets(args, &p.operands, cwd);
        }
        "echo" => {
            // bash's builtin: `-n`, `-e`, `-E` or words printed as they are; nothing is read.
            check_words(args, &Parsed::default(), &[], &mut out);
        }
        "pwd" => {
            let p = options::parse(&PWD, args);
            check_words(args, &p, &[], &mut out);
        }
        "grep" | "egrep" | "fgrep" => return Some(grep(args, cwd)),
        "wc" => {
            let p = options::parse(&WC, args);
            check_words(args, &p, &p.operands, &mut out);
            out.effects.reads = operand_targets(args, &p.operands, cwd);
            files0_from(&p, cwd, &mut out);
        }
        "which" => {
            let p = options::parse(&WHICH, args);
            check_words(args, &p, &[], &mut out);
        }
        "diff" => {
            let p = options::parse(&DIFF, args);
            check_words(args, &p, &p.operands, &mut out);
            let files = operand_targets(args, &p.operands, cwd);
            if p.has(&["-r", "--recursive"]) {
                out.effects.trees = files;
            } else {
                out.effects.reads = files;
            }
            for v in p.values(&["--from-file", "--to-file", "-X", "--exclude-from"]) {
                out.effects.reads.extend(value_target(v, cwd));
            }
        }
        "stat" => {
            let p = options::parse(&STAT, args);
            check_words(args, &p, &p.operands, &mut out);
            out.effects.lists = operand_targets(args, &p.operands, cwd);
        }
        "du" => {
            let p = options::parse(&DU, args);
            check_words(args, &p, &p.operands, &mut out);
            out.effects.lists = operand_targets(args, &p.operands, cwd);
            if p.operands.is_empty() {
                out.effects.lists.push(dot(cwd));
            }
            for v in p.values(&["-X", "--exclude-from"]) {
                out.effects.reads.extend(value_target(v, cwd));
            }
            files0_from(&p, cwd, &mut out);
        }
        "cd" => {
            let p = options::parse(&CD, args);
            check_words(args, &p, &[], &mut out);
            match p.operands.as_slice() {
                [] => out.effects.lists.push(Target {
                    path: "~".into(),
                    exact: true,
                    glob: false,
                    cwd: cwd.clone(),
                    repo_top: false,
                }),
                [i] if args[*i].text == "-" => {
                    out.problem("`cd -` goes back to a directory only known when it runs")
                }
                [i] => out.effects.lists.extend(target(&args[*i], cwd)),
                _ => out.problem("cd takes one directory"),
            }
        }
        "find" => return Some(find(args, cwd)),
        "sort" => return Some(sort(args, cwd)),
        "jq" => return Some(super::jq::jq(args, cwd)),
        _ => return None,
    }
    Some(out)
}

/// `sort`: operands read; its output file and temporary files are written like a redirect's
/// target (an Edit allow rule or acceptEdits inside the workspace allows them); a compression
/// program runs on its temporary data, which is code toolrt cannot see.
fn sort(args: &[Word], cwd: &Cwd) -> Outcome {
    let mut out = Outcome::default();
    let p = options::parse(&SORT, args);
    check_words(args, &p, &p.operands, &mut out);
    out.effects.reads = operand_targets(args, &p.operands, cwd);
    files0_from(&p, cwd, &mut out);
    // sort opens these by name: `-` is a file called `-` (only --files0-from=- is stdin).
    for v in p.values(&["--random-source"]) {
        out.effects.reads.push(value_path(v, cwd));
    }
    for v in p.values(&["-o", "--output"]) {
        out.effects.redirects.push(value_path(v, cwd));
    }
    for v in p.values(&["-T", "--temporary-directory"]) {
        // Its temporary files: `DIR/sortXXXXXX`, created and removed while it runs.
        let mut t = value_path(v, cwd);
        t.path.push_str("/sortXXXXXX");
        out.effects.redirects.push(t);
    }
    for v in p.values(&["--compress-program"]) {
        out.hidden = Some(format!(
            "sort --compress-program runs `{}` on its temporary data, which toolrt cannot see",
            v.text
        ));
        out.not_read_only = Some("sort --compress-program runs a program".into());
        if v.exact && !v.text.trim().is_empty() {
            out.readings.push(v.text.clone());
        }
    }
    out
}

/// `--files0-from=F`: reads F, and then the files named in it, which toolrt cannot know.
fn files0_from(p: &Parsed, cwd: &Cwd, out: &mut Outcome) {
    for v in p.values(&["--files0-from"]) {
        out.effects.reads.extend(value_target(v, cwd));
        out.effects.reads.push(Target {
            path: format!("(the files named in {})", v.text),
            exact: false,
            glob: false,
            cwd: cwd.clone(),
            repo_top: false,
        });
        out.problem("--files0-from reads file names from a file");
    }
}

fn dot(cwd: &Cwd) -> Target {
    Target {
        path: ".".into(),
        exact: true,
        glob: false,
        cwd: cwd.clone(),
        repo_top: false,
    }
}

fn grep(args: &[Word], cwd: &Cwd) -> Outcome {
    let mut out = Outcome::default();
    let p = options::parse(&GREP, args);
    let explicit = p.has(&["-e", "--regexp", "-f", "--file"]);
    let files: Vec<usize> = if explicit {
        p.operands.clone()
    } else {
        p.operands.iter().skip(1).copied().collect()
    };
    check_words(args, &p, &files, &mut out);
    let mut recursive = p.has(&["-r", "-R", "--recursive", "--dereference-recursive"]);
    for v in p.values(&["-d", "--directories"]) {
        match v.text.as_str() {
            "recurse" => recursive = true,
            "read" | "skip" => {}
            other => out.problem(format!("grep -d {other}: unknown action")),
        }
    }
    for v in p.values(&["-D", "--devices"]) {
        if !matches!(v.text.as_str(), "read" | "skip") {
            out.problem(format!("grep -D {}: unknown action", v.text));
        }
    }
    let mut targets = operand_targets(args, &files, cwd);
    if recursive {
        if targets.is_empty() {
            targets.push(dot(cwd));
        }
        out.effects.trees = targets;
    } else {
        out.effects.reads = targets;
    }
    for v in p.values(&["-f", "--file", "--exclude-from"]) {
        out.effects.reads.extend(value_target(v, cwd));
    }
    out
}

/// find's expression primaries by the number of words they take; `None` for unknown ones.
fn find_arity(p: &str) -> Option<usize> {
    Some(match p {
        "("
        | ")"
        | "!"
        | ","
        | "-not"
        | "-a"
        | "-and"
        | "-o"
        | "-or"
        | "-depth"
        | "-d"
        | "-mount"
        | "-xdev"
        | "-noleaf"
        | "-ignore_readdir_race"
        | "-noignore_readdir_race"
        | "-daystart"
        | "-follow"
        | "-nowarn"
        | "-warn"
        | "-empty"
        | "-false"
        | "-true"
        | "-nouser"
        | "-nogroup"
        | "-readable"
        | "-writable"
        | "-executable"
        | "-print"
        | "-print0"
        | "-ls"
        | "-prune"
        | "-quit"
        | "-delete" => 0,
        "-maxdepth" | "-mindepth" | "-regextype" | "-amin" | "-anewer" | "-atime" | "-cmin"
        | "-cnewer" | "-context" | "-ctime" | "-fstype" | "-gid" | "-group" | "-ilname"
        | "-iname" | "-inum" | "-ipath" | "-iregex" | "-iwholename" | "-links" | "-lname"
        | "-mmin" | "-mtime" | "-name" | "-newer" | "-path" | "-perm" | "-regex" | "-samefile"
        | "-size" | "-type" | "-uid" | "-used" | "-user" | "-wholename" | "-xtype" | "-printf"
        | "-files0-from" | "-fprint" | "-fprint0" | "-fls" => 1,
        "-fprintf" => 2,
        p if p.starts_with("-newer") && p.len() == 8 => 1,
        _ => return None,
    })
}

/// Primaries that narrow what an action applies to (a bare `find . -delete` removes the whole
/// tree, `find . -name '*.o' -delete` only what matches).
fn find_filters(p: &str) -> bool {
    matches!(
        p,
        "-name"
            | "-iname"
            | "-path"
            | "-ipath"
            | "-wholename"
            | "-iwholename"
            | "-regex"
            | "-iregex"
            | "-lname"
            | "-ilname"
            | "-newer"
            | "-anewer"
            | "-cnewer"
            | "-samefile"
            | "-inum"
            | "-links"
            | "-size"
            | "-empty"
            | "-perm"
            | "-user"
            | "-group"
            | "-uid"
            | "-gid"
            | "-nouser"
            | "-nogroup"
            | "-mtime"
            | "-mmin"
            | "-atime"
            | "-amin"
            | "-ctime"
            | "-cmin"
            | "-used"
    ) || (p.starts_with("-newer") && p.len() == 8)
}

/// `find`: start points (listed), its expression, and the commands `-exec` and friends run.
/// Also used for deny rules when find is not read-only (`-delete`, `-exec`, `-fprint`).
pub(crate) fn find(args: &[Word], cwd: &Cwd) -> Outcome {
    let mut out = Outcome::default();
    let mut i = 0;
    // Leading options.
    while i < args.len() {
        let t = args[i].text.as_str();
        match t {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            _ if t.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let mut starts = Vec::new();
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        if (t.starts_with('-') && t.len() > 1) || t == "(" || t == "!" || t == "," {
            break;
        }
        if !w.exact || w.brace {
            out.problem(format!(
                "the start point `{t}` is only known when the command runs"
            ));
        }
        starts.extend(target(w, cwd));
        i += 1;
    }
    if starts.is_empty() {
        starts.push(dot(cwd));
    }
    out.effects.lists = starts.clone();
    let mut filtered = false;
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        if !w.literal() {
            out.problem(format!(
                "`{t}` in find's expression is only known when the command runs"
            ));
            i += 1;
            continue;
        }
        if matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut end = start;
            while end < args.len() && !matches!(args[end].text.as_str(), ";" | "+") {
                end += 1;
            }
            if end >= args.len() {
                out.problem(format!("{t} is not terminated"));
            }
            out.runs.push(Runs {
                words: args[start..end.min(args.len())].to_vec(),
                cwd_unknown: t == "-execdir" || t == "-okdir",
                found_under: starts.clone(),
                unfiltered: !filtered,
            });
            out.not_read_only
                .get_or_insert_with(|| format!("find {t} runs a command for every file found"));
            i = end + 1;
            continue;
        }
        let Some(n) = find_arity(t) else {
            out.problem(format!("unknown find primary `{t}`"));
            i += 1;
            continue;
        };
        if find_filters(t) {
            filtered = true;
        }
        let vals = &args[(i + 1).min(args.len())..(i + 1 + n).min(args.len())];
        if vals.len() < n {
            out.problem(format!("find {t} is missing its value"));
        }
        for v in vals {
            if !v.literal() {
                out.problem(format!(
                    "`{}` in find's expression is only known when the command runs",
                    v.text
                ));
            }
        }
        match t {
            "-delete" => {
                out.not_read_only
                    .get_or_insert_with(|| "find -delete removes files".into());
                removes_found(&starts, !filtered, &mut out.effects);
            }
            "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
                out.not_read_only
                    .get_or_insert_with(|| format!("find {t} writes a file"));
                if let Some(v) = vals.first() {
                    out.effects.writes.extend(target(v, cwd));
                }
            }
            "-files0-from" => {
                out.problem("find -files0-from reads start points from a file");
                if let Some(v) = vals.first() {
                    out.effects.reads.extend(target(v, cwd));
                }
            }
            "-anewer" | "-cnewer" | "-newer" | "-samefile" => {
                if let Some(v) = vals.first() {
                    out.effects.lists.extend(target(v, cwd));
                }
            }
            _ if t.starts_with("-newer") && !t.ends_with('t') => {
                if let Some(v) = vals.first() {
                    out.effects.lists.extend(target(v, cwd));
                }
            }
            _ => {}
        }
        i += 1 + n;
    }
    out
}

/// What `find … -delete` (or `-exec rm {}`) may remove below `starts`: the start points
/// themselves when nothing filters, or when a start point is `/`, one of its children or home
/// (removing everything found there is never a small cleanup).
pub(crate) fn removes_found(starts: &[Target], unfiltered: bool, fx: &mut Effects) {
    for s in starts {
        let broad = unfiltered
            || s.path == "/"
            || s.path == "~"
            || s.path == "~/"
            || (s.path.starts_with('/') && s.path.trim_end_matches('/').matches('/').count() <= 1);
        if broad {
            fx.removes.push(s.clone());
        }
        fx.write_trees_push(s.clone());
    }
}

impl Effects {
    pub(crate) fn write_trees_push(&mut self, t: Target) {
        self.writes.push(Target {
            path: format!("{}/**", t.path.trim_end_matches('/')),
            exact: false,
            glob: false,
            cwd: t.cwd,
            repo_top: false,
        });
    }
}

const MKDIR: Grammar = Grammar::new(
    "m:pvZ",
    &[
        "mode=",
        "parents",
        "verbose",
        "context=?",
        "help",
        "version",
    ],
);
const TOUCH: Grammar = Grammar::new(
    "acd:fhmr:t:",
    &[
        "no-create",
        "date=",
        "no-dereference",
        "reference=",
        "time=",
        "help",
        "version",
    ],
);
const RM: Grammar = Grammar::new(
    "dfiIrRv",
    &[
        "force",
        "interactive=?",
        "one-file-system",
        "no-preserve-root",
        "preserve-root=?",
        "recursive",
        "dir",
        "verbose",
        "help",
        "version",
    ],
);
const RMDIR: Grammar = Grammar::new(
    "pv",
    &[
        "ignore-fail-on-non-empty",
        "parents",
        "verbose",
        "help",
        "version",
    ],
);
const MV: Grammar = Grammar::new(
    "bfinS:t:TuvZ",
    &[
        "backup=?",
        "force",
        "interactive",
        "no-clobber",
        "strip-trailing-slashes",
        "suffix=",
        "target-directory=",
        "no-target-directory",
        "update=?",
        "verbose",
        "context",
        "help",
        "version",
    ],
);
const CP: Grammar = Grammar::new(
    "abdfHilLnprsS:t:TuvxZ",
    &[
        "archive",
        "attributes-only",
        "backup=?",
        "copy-contents",
        "force",
        "interactive",
        "link",
        "dereference",
        "no-clobber",
        "no-dereference",
        "preserve=?",
        "no-preserve=",
        "parents",
        "recursive",
        "reflink=?",
        "remove-destination",
        "sparse=",
        "strip-trailing-slashes",
        "symbolic-link",
        "suffix=",
        "target-directory=",
        "no-target-directory",
        "update=?",
        "verbose",
        "one-file-system",
        "context=?",
        "debug",
        "help",
        "version",
    ],
);
const SED: Grammar = Grammar::new(
    "bEe:f:i::l:nrsuz",
    &[
        "quiet",
        "silent",
        "debug",
        "expression=",
        "file=",
        "follow-symlinks",
        "in-place=?",
        "line-length=",
        "null-data",
        "zero-terminated",
        "posix",
        "regexp-extended",
        "separate",
        "sandbox",
        "unbuffered",
        "binary",
        "help",
        "version",
    ],
);

/// The acceptEdits file commands: `None` if `prog` is not one; otherwise the paths it writes
/// (and reads) and whether every part is understood.
pub(crate) fn file_edit(prog: &str, args: &[Word], cwd: &Cwd) -> Option<Outcome> {
    let mut out = Outcome::default();
    let g = match prog {
        "mkdir" => &MKDIR,
        "touch" => &TOUCH,
        "rm" => &RM,
        "rmdir" => &RMDIR,
        "mv" => &MV,
        "cp" => &CP,
        "sed" => return Some(sed(args, cwd)),
        _ => return None,
    };
    let p = options::parse(g, args);
    check_words(args, &p, &[], &mut out);
    let files = operand_targets(args, &p.operands, cwd);
    match prog {
        "mkdir" | "touch" => {
            out.effects.writes = files;
            for v in p.values(&["-r", "--reference"]) {
                out.effects.lists.extend(value_target(v, cwd));
            }
        }
        "rm" | "rmdir" => {
            if prog == "rmdir" && p.has(&["-p", "--parents"]) {
                // `rmdir -p a/b/c` removes a/b and a too.
                for t in &files {
                    let mut path = t.path.trim_end_matches('/').to_string();
                    while let Some((parent, _)) = path.rsplit_once('/') {
                        if parent.is_empty() {
                            break;
                        }
                        out.effects.removes.push(Target {
                            path: parent.to_string(),
                            ..t.clone()
                        });
                        path = parent.to_string();
                    }
                }
            }
            out.effects.removes.extend(files.iter().cloned());
            out.effects.writes = files;
        }
        "mv" | "cp" => {
            for v in p.values(&["-S", "--suffix"]) {
                if v.text.contains('/') {
                    out.problem("the backup suffix holds a path");
                }
            }
            let target_dir: Vec<Target> = p
                .values(&["-t", "--target-directory"])
                .filter_map(|v| value_target(v, cwd))
                .collect();
            let (sources, dests) = if !target_dir.is_empty() {
                (files, target_dir)
            } else if files.len() >= 2 {
                let mut f = files;
                let last = f.pop().into_iter().collect();
                (f, last)
            } else {
                out.problem(format!("{prog} needs a source and a destination"));
                (files, Vec::new())
            };
            out.effects.writes.extend(dests);
            if prog == "mv" {
                out.effects.writes.extend(sources.iter().cloned());
                out.effects.reads.extend(sources);
            } else if p.has(&["-r", "-R", "--recursive", "-a", "--archive"]) {
                out.effects.trees.extend(sources);
            } else {
                out.effects.reads.extend(sources);
            }
        }
        _ => {}
    }
    Some(out)
}

fn sed(args: &[Word], cwd: &Cwd) -> Outcome {
    let mut out = Outcome::default();
    let p = options::parse(&SED, args);
    let mut scripts: Vec<&Value> = p.values(&["-e", "--expression"]).collect();
    let from_file: Vec<&Value> = p.values(&["-f", "--file"]).collect();
    let mut files = p.operands.clone();
    let first_operand_script;
    if scripts.is_empty() && from_file.is_empty() {
        if files.is_empty() {
            out.problem("sed has no script");
        } else {
            let i = files.remove(0);
            first_operand_script = Value {
                text: args[i].text.clone(),
                exact: args[i].literal(),
                word: i,
                attached: false,
            };
            scripts.push(&first_operand_script);
        }
    }
    check_words(args, &p, &[], &mut out);
    for f in &from_file {
        out.effects.reads.extend(value_target(f, cwd));
        out.problem("the sed script comes from a file");
    }
    let sandbox = p.has(&["--sandbox"]);
    for s in &scripts {
        if !s.exact {
            out.problem("the sed script is only known when the command runs");
            out.hidden =
                Some("the sed script is only known when it runs; sed can run commands".into());
        } else if let Err(why) = sed_script_ok(&s.text)
            && !sandbox
        {
            if why.contains("runs") {
                out.hidden = Some(format!("{why}, which toolrt cannot see"));
            } else if why.contains("writes") {
                out.effects.writes.push(Target {
                    path: "(a file the sed script names)".into(),
                    exact: false,
                    glob: false,
                    cwd: cwd.clone(),
                    repo_top: false,
                });
            } else if why.contains("reads") {
                out.effects.reads.push(Target {
                    path: "(a file the sed script names)".into(),
                    exact: false,
                    glob: false,
                    cwd: cwd.clone(),
                    repo_top: false,
                });
            }
            out.problem(why);
        }
    }
    if !from_file.is_empty() && !sandbox {
        out.hidden = Some("the sed script comes from a file; sed can run commands".into());
    }
    let targets = operand_targets(args, &files, cwd);
    let in_place = p
        .opts
        .iter()
        .find(|o| o.name == "-i" || o.name == "--in-place");
    if let Some(o) = in_place {
        if let Some(suffix) = &o.value
            && suffix.text.contains(['/', '*'])
        {
            out.problem("the -i backup suffix names another path");
        }
        out.effects.writes.extend(targets.iter().cloned());
    }
    out.effects.reads.extend(targets);
    out
}

/// Whether a sed script only edits text: no `e` (run a command), no `w`/`W` (write a file), no
/// `r`/`R` (read a file), no `s///e` or `s///w`, nothing toolrt does not know.
pub(crate) fn sed_script_ok(script: &str) -> Result<(), String> {
    let b: Vec<char> = script.chars().collect();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && (b[*i] == ' ' || b[*i] == '\t') {
            *i += 1;
        }
    };
    // Reads a delimited section starting after the delimiter at b[i-1]; returns index after
    // the closing delimiter.
    let section = |mut i: usize, d: char| -> Option<usize> {
        while i < b.len() {
            if b[i] == '\\' {
                i += 2;
                continue;
            }
            if b[i] == d {
                return Some(i + 1);
            }
            if b[i] == '\n' && d != '\n' {
                return None;
            }
            i += 1;
        }
        None
    };
    while i < b.len() {
        skip_ws(&mut i);
        if i >= b.len() {
            break;
        }
        if matches!(b[i], ';' | '\n' | '}') {
            i += 1;
            continue;
        }
        if b[i] == '#' {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        // Addresses: numbers, $, /re/, \cREc, first~step, addr,addr, +N, ~N.
        for _ in 0..2 {
            skip_ws(&mut i);
            if i < b.len() && (b[i].is_ascii_digit() || b[i] == '$') {
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == '$' || b[i] == '~') {
                    i += 1;
                }
            } else if i < b.len() && b[i] == '/' {
                i = section(i + 1, '/').ok_or("an unterminated sed address")?;
                while i < b.len() && matches!(b[i], 'I' | 'M') {
                    i += 1;
                }
            } else if i + 1 < b.len() && b[i] == '\\' {
                let d = b[i + 1];
                i = section(i + 2, d).ok_or("an unterminated sed address")?;
                while i < b.len() && matches!(b[i], 'I' | 'M') {
                    i += 1;
                }
            } else if i < b.len() && matches!(b[i], '+' | '~') {
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            skip_ws(&mut i);
            if i < b.len() && b[i] == ',' {
                i += 1;
                continue;
            }
            break;
        }
        skip_ws(&mut i);
        while i < b.len() && b[i] == '!' {
            i += 1;
            skip_ws(&mut i);
        }
        let Some(&c) = b.get(i) else { break };
        i += 1;
        match c {
            '{' => {}
            'p' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' | 'P' | 'z' | 'F' => {}
            'l' | 'q' | 'Q' | 'L' => {
                skip_ws(&mut i);
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            ':' | 'b' | 't' | 'T' => {
                while i < b.len() && !matches!(b[i], ';' | '\n') {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line (a trailing backslash continues it).
                while i < b.len() && b[i] != '\n' {
                    if b[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            's' => {
                let d = *b.get(i).ok_or("an unterminated s command")?;
                if d == '\n' || d == '\\' {
                    return Err("an unusual s delimiter".into());
                }
                i = section(i + 1, d).ok_or("an unterminated s command")?;
                i = section(i, d).ok_or("an unterminated s command")?;
                while i < b.len() && !matches!(b[i], ';' | '\n' | '}' | ' ' | '\t' | '#') {
                    match b[i] {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                        'e' => return Err("the s///e flag runs the result as a command".into()),
                        'w' => return Err("the s///w flag writes a file".into()),
                        other => return Err(format!("an unknown s flag `{other}`")),
                    }
                }
            }
            'y' => {
                let d = *b.get(i).ok_or("an unterminated y command")?;
                i = section(i + 1, d).ok_or("an unterminated y command")?;
                i = section(i, d).ok_or("an unterminated y command")?;
            }
            'e' => return Err("the sed e command runs a command".into()),
            'w' | 'W' => return Err("the sed w command writes a file".into()),
            'r' | 'R' => return Err("the sed r command reads a file".into()),
            'v' => {
                while i < b.len() && !matches!(b[i], ';' | '\n') {
                    i += 1;
                }
            }
            other => return Err(format!("an unknown sed command `{other}`")),
        }
    }
    Ok(())
}

/// Programs whose operands (and option values) are files they read, for deny rules: generous on
/// purpose, since it only ever adds checks.
fn is_reader(prog: &str) -> bool {
    matches!(
        prog,
        "cat"
            | "tac"
            | "head"
            | "tail"
            | "less"
            | "more"
            | "most"
            | "nl"
            | "od"
            | "xxd"
            | "hexdump"
            | "hd"
            | "strings"
            | "base64"
            | "base32"
            | "basenc"
            | "diff"
            | "diff3"
            | "sdiff"
            | "cmp"
            | "comm"
            | "paste"
            | "join"
            | "uniq"
            | "sort"
            | "cut"
            | "fold"
            | "fmt"
            | "pr"
            | "expand"
            | "unexpand"
            | "rev"
            | "column"
            | "wc"
            | "md5sum"
            | "sha1sum"
            | "sha224sum"
            | "sha256sum"
            | "sha384sum"
            | "sha512sum"
            | "b2sum"
            | "cksum"
            | "sum"
            | "iconv"
            | "file"
            | "jq"
            | "yq"
            | "xmllint"
            | "bat"
            | "batcat"
            | "view"
            | "vi"
            | "vim"
            | "nvim"
            | "nano"
            | "emacs"
            | "ed"
            | "ex"
            | "zcat"
            | "zless"
            | "zmore"
            | "zgrep"
            | "bzcat"
            | "xzcat"
            | "zstdcat"
            | "lz4cat"
            | "gunzip"
            | "gzip"
            | "bzip2"
            | "bunzip2"
            | "xz"
            | "unxz"
            | "zstd"
            | "lz4"
            | "tar"
            | "zip"
            | "unzip"
            | "7z"
            | "cpio"
            | "openssl"
            | "gpg"
            | "source"
            | "."
            | "split"
            | "csplit"
            | "shuf"
            | "tee"
            | "dd"
            | "install"
            | "rsync"
            | "scp"
            | "sftp"
            | "ln"
            | "look"
            | "awk"
            | "gawk"
            | "mawk"
            | "nawk"
            | "sed"
            | "grep"
            | "egrep"
            | "fgrep"
            | "rg"
            | "ag"
            | "ack"
            | "python"
            | "python3"
            | "node"
            | "perl"
            | "ruby"
            | "php"
            | "lua"
            | "bash"
            | "sh"
            | "zsh"
            | "dash"
            | "ksh"
            | "curl"
            | "wget"
            | "nc"
            | "ncat"
            | "socat"
            | "mail"
            | "mutt"
            | "sendmail"
            | "ssh"
            | "git"
            | "xargs"
            | "tr"
            | "readlink"
            | "realpath"
            | "truncate"
            | "shred"
            | "patch"
            | "printf"
            | "envsubst"
            | "m4"
            | "cpp"
            | "gcc"
            | "cc"
            | "clang"
            | "rustc"
            | "go"
            | "java"
            | "javac"
    )
}

/// Programs that write the files named by their operands.
fn is_writer(prog: &str) -> bool {
    matches!(
        prog,
        "tee"
            | "truncate"
            | "shred"
            | "touch"
            | "mkdir"
            | "rm"
            | "rmdir"
            | "unlink"
            | "mv"
            | "cp"
            | "ln"
            | "install"
            | "chmod"
            | "chown"
            | "chgrp"
            | "chattr"
            | "setfacl"
            | "patch"
            | "rsync"
            | "scp"
            | "dd"
            | "split"
            | "csplit"
            | "mkfifo"
            | "mknod"
            | "sed"
    )
}

fn is_output_option(o: &str) -> bool {
    matches!(
        o,
        "--output"
            | "--output-file"
            | "--output-document"
            | "--out-file"
            | "--log-file"
            | "--logfile"
    )
}

/// Best-effort effects of any program, for deny and ask rules: every operand and option value
/// of a file reader is a read, of a writer a write; `rm`, `rmdir` and `unlink` remove.
pub(crate) fn deny_effects(prog: &str, args: &[Word], cwd: &Cwd) -> Effects {
    let mut fx = Effects::default();
    // `--output=FILE` and friends write FILE, whatever the program.
    let mut it = args.iter().peekable();
    while let Some(w) = it.next() {
        let t = w.text.as_str();
        let value = match t.split_once('=') {
            Some((k, v)) if is_output_option(k) => Some(v.to_string()),
            None if is_output_option(t) => it.peek().map(|n| n.text.clone()),
            _ => None,
        };
        if let Some(v) = value {
            fx.writes.push(Target {
                path: v,
                exact: w.literal(),
                glob: false,
                cwd: cwd.clone(),
                repo_top: false,
            });
        }
    }
    let reader = is_reader(prog);
    let writer = is_writer(prog);
    if !reader && !writer && !matches!(prog, "sort" | "curl" | "wget") {
        return fx;
    }
    // Pattern or script first operands are not files.
    let skip_first = match prog {
        "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" => !args.iter().any(|w| {
            let t = w.text.as_str();
            t.starts_with("-e")
                || t.starts_with("-f")
                || t.starts_with("--regexp")
                || t.starts_with("--file")
        }),
        "sed" => !args.iter().any(|w| {
            let t = w.text.as_str();
            t.starts_with("-e")
                || t.starts_with("-f")
                || t.starts_with("--expression")
                || t.starts_with("--file")
        }),
        "awk" | "gawk" | "mawk" | "nawk" => !args
            .iter()
            .any(|w| w.text.starts_with("-f") || w.text == "--file"),
        "printf" | "tr" => true,
        _ => false,
    };
    let mut skipped = !skip_first;
    let mut only_operands = false;
    let mut paths = Vec::new();
    for w in args {
        let t = w.text.as_str();
        if !only_operands && t == "--" {
            only_operands = true;
            continue;
        }
        if !only_operands && t.starts_with('-') && t.len() > 1 && w.literal() {
            // `--opt=FILE`, `-fFILE`, `@FILE` (curl): the value may be a path.
            if let Some((_, v)) = t.split_once('=') {
                paths.push(Target {
                    path: v.trim_start_matches('@').to_string(),
                    exact: true,
                    glob: false,
                    cwd: cwd.clone(),
                    repo_top: false,
                });
            } else if !t.starts_with("--") && t.len() > 2 {
                paths.push(Target {
                    path: t[2..].to_string(),
                    exact: true,
                    glob: false,
                    cwd: cwd.clone(),
                    repo_top: false,
                });
            }
            continue;
        }
        if !skipped {
            skipped = true;
            continue;
        }
        if let Some(mut tg) = target(w, cwd) {
            if let Some(rest) = tg.path.strip_prefix('@') {
                tg.path = rest.to_string();
            }
            if let Some(rest) = tg.path.strip_prefix("of=").or(tg.path.strip_prefix("if=")) {
                tg.path = rest.to_string();
            }
            paths.push(tg);
        } else if w.fd {
            continue;
        }
    }
    if reader || matches!(prog, "sort" | "curl" | "wget") {
        fx.reads.extend(paths.iter().cloned());
    }
    if writer {
        fx.writes.extend(paths.iter().cloned());
    }
    if matches!(prog, "sort" | "curl" | "wget") {
        // -o FILE / --output FILE: the next word is written.
        let mut it = args.iter().peekable();
        while let Some(w) = it.next() {
            if matches!(
                w.text.as_str(),
                "-o" | "--output" | "-O" | "--output-document"
            ) && let Some(next) = it.peek()
            {
                fx.writes.extend(target(next, cwd));
            }
        }
    }
    if matches!(prog, "rm" | "rmdir" | "unlink" | "shred") {
        fx.removes.extend(paths);
    }
    // ripgrep and friends search directory trees, the cwd when given no path.
    if matches!(prog, "rg" | "ag" | "ack") {
        let mut trees: Vec<Target> = std::mem::take(&mut fx.reads);
        if trees.iter().all(|t| t.path.starts_with('-')) {
            trees.push(dot(cwd));
        }
        fx.trees = trees;
    }
    fx
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

    fn ro(cmd: &str) -> Option<Outcome> {
        let w = words(cmd);
        read_only(&w[0].text, &w[1..], &Cwd::Session)
    }

    #[test]
    fn read_only_understood_table() {
        for (cmd, ok) in [
            ("ls -la", true),
            ("ls -la --color=auto src", true),
            ("ls --colour", false),
            ("ls --recur", false),
            ("cat -n a", true),
            ("head -n 5 a", true),
            ("head -5 a", true),
            ("head -n5 a", true),
            ("tail -f a", true),
            ("tail --follow=name a", true),
            ("grep -rn x src", true),
            ("grep -d recurse x .", true),
            ("grep -d frob x .", false),
            ("grep --open x", false),
            ("grep -A 3 -B2 x a", true),
            ("wc -l a", true),
            ("wc --files0-from=list", false),
            ("diff -u a b", true),
            ("diff -r a b", true),
            ("stat -c %s a", true),
            ("du -sh .", true),
            ("du --files0-from=x", false),
            ("find . -name *.rs", false),
            ("find . -name x -type f", true),
            ("find . -delete", true),
            ("find . -exec cat {} ;", true),
            ("find . -fprint out", true),
            ("find . -frobnicate", false),
            ("pwd -P", true),
            ("pwd -x", false),
            ("echo -n hi", true),
            ("echo *", false),
            ("cd -", false),
            ("which -a cargo", true),
        ] {
            let o = ro(cmd).expect(cmd);
            assert_eq!(o.problems.is_empty(), ok, "{cmd}: {:?}", o.problems);
        }
        for cmd in [
            "find . -delete",
            "find . -exec cat {} ;",
            "find . -fprint out",
        ] {
            assert!(ro(cmd).unwrap().not_read_only.is_some(), "{cmd}");
        }
        assert!(ro("uniq a").is_none());
        assert!(ro("lsof").is_none());
    }

    #[test]
    fn read_only_effects() {
        let o = ro("grep -f pats.txt x a b").unwrap();
        let reads: Vec<&str> = o.effects.reads.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(reads, ["x", "a", "b", "pats.txt"]);
        let o = ro("grep pat a").unwrap();
        let reads: Vec<&str> = o.effects.reads.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(reads, ["a"]);
        let o = ro("grep -r pat").unwrap();
        assert_eq!(o.effects.trees[0].path, ".");
        let o = ro("diff --from-file=.env a").unwrap();
        assert!(o.effects.reads.iter().any(|t| t.path == ".env"));
        let o = ro("ls *.rs").unwrap();
        assert!(o.problems.is_empty() && o.effects.lists[0].glob);
    }

    #[test]
    fn sort_table() {
        let paths = |t: &[Target]| -> Vec<String> { t.iter().map(|t| t.path.clone()).collect() };
        // (command, understood, reads, output files, runs code toolrt cannot see)
        for (cmd, ok, reads, outputs, hidden) in [
            ("sort a", true, vec!["a"], vec![], false),
            ("sort", true, vec![], vec![], false),
            ("sort -", true, vec![], vec![], false),
            ("sort -u a b", true, vec!["a", "b"], vec![], false),
            ("sort -rn -k2 a", true, vec!["a"], vec![], false),
            ("sort -t , -k3,3n a.csv", true, vec!["a.csv"], vec![], false),
            ("sort -t, -k 2 a", true, vec!["a"], vec![], false),
            ("sort -hV --stable a", true, vec!["a"], vec![], false),
            (
                "sort --sort=version -S 10M --parallel=2 a",
                true,
                vec!["a"],
                vec![],
                false,
            ),
            ("sort -c a", true, vec!["a"], vec![], false),
            ("sort --check=quiet a", true, vec!["a"], vec![], false),
            ("sort a -r", true, vec!["a"], vec![], false),
            ("sort *.txt", true, vec!["*.txt"], vec![], false),
            // unique prefixes resolve as getopt_long resolves them
            ("sort --rev --uniq a", true, vec!["a"], vec![], false),
            ("sort --num a", true, vec!["a"], vec![], false),
            // ambiguous: --ra (random-sort, random-source), --d (debug, dictionary-order)
            ("sort --ra a", false, vec!["a"], vec![], false),
            ("sort --d a", false, vec!["a"], vec![], false),
            ("sort --frobnicate a", false, vec!["a"], vec![], false),
            ("sort -y a", false, vec!["a"], vec![], false),
            ("sort -1 a", false, vec!["a"], vec![], false),
            // the output file, every spelling
            ("sort -o out a", true, vec!["a"], vec!["out"], false),
            ("sort -oout a", true, vec!["a"], vec!["out"], false),
            ("sort -ro out a", true, vec!["a"], vec!["out"], false),
            ("sort -roout a", true, vec!["a"], vec!["out"], false),
            ("sort --output out a", true, vec!["a"], vec!["out"], false),
            ("sort --output=out a", true, vec!["a"], vec!["out"], false),
            ("sort --out=out a", true, vec!["a"], vec!["out"], false),
            ("sort --o out a", true, vec!["a"], vec!["out"], false),
            ("sort a -o a", true, vec!["a"], vec!["a"], false),
            ("sort -o - a", true, vec!["a"], vec!["-"], false),
            (
                "sort -o ~/.bashrc a",
                true,
                vec!["a"],
                vec!["~/.bashrc"],
                false,
            ),
            (
                "sort -o~/.bashrc a",
                true,
                vec!["a"],
                vec!["./~/.bashrc"],
                false,
            ),
            ("sort --output=~/x a", true, vec!["a"], vec!["./~/x"], false),
            ("sort -o *.txt a", false, vec!["a"], vec!["*.txt"], false),
            // temporary files
            (
                "sort -T tmp a",
                true,
                vec!["a"],
                vec!["tmp/sortXXXXXX"],
                false,
            ),
            (
                "sort --temporary-directory=/x a",
                true,
                vec!["a"],
                vec!["/x/sortXXXXXX"],
                false,
            ),
            (
                "sort --temp /x a",
                true,
                vec!["a"],
                vec!["/x/sortXXXXXX"],
                false,
            ),
            // files read through options
            (
                "sort --random-source=.env -R a",
                true,
                vec!["a", ".env"],
                vec![],
                false,
            ),
            (
                "sort --random-source - a",
                true,
                vec!["a", "-"],
                vec![],
                false,
            ),
            (
                "sort --files0-from=list",
                false,
                vec!["list", "(the files named in list)"],
                vec![],
                false,
            ),
            (
                "sort --files0=list",
                false,
                vec!["list", "(the files named in list)"],
                vec![],
                false,
            ),
            // a compression program runs on sort's temporary data
            (
                "sort --compress-program=sh a",
                true,
                vec!["a"],
                vec![],
                true,
            ),
            ("sort --compress=gzip a", true, vec!["a"], vec![], true),
        ] {
            let o = ro(cmd).expect(cmd);
            assert_eq!(o.problems.is_empty(), ok, "{cmd}: {:?}", o.problems);
            assert_eq!(paths(&o.effects.reads), reads, "{cmd}");
            assert_eq!(paths(&o.effects.redirects), outputs, "{cmd}");
            assert!(o.effects.writes.is_empty(), "{cmd}");
            assert_eq!(o.hidden.is_some(), hidden, "{cmd}");
            assert_eq!(o.not_read_only.is_some(), hidden, "{cmd}");
        }
        assert_eq!(
            ro("sort --compress-program=gzip a").unwrap().readings,
            ["gzip"]
        );
    }

    #[test]
    fn file_edit_table() {
        for (cmd, ok, writes) in [
            ("mkdir -p a/b", true, vec!["a/b"]),
            ("touch a", true, vec!["a"]),
            ("rm -rf build", true, vec!["build"]),
            ("cp a b", true, vec!["b"]),
            ("cp -t dir a b", true, vec!["dir"]),
            ("cp --target-directory=dir a", true, vec!["dir"]),
            ("mv a b", true, vec!["b", "a"]),
            ("mv -S /x a b", false, vec!["b", "a"]),
            ("sed -i s/a/b/ f", true, vec!["f"]),
            ("sed -Ei s/a/b/ f", true, vec!["f"]),
            ("sed -iE s/a/b/ f", true, vec!["f"]),
            ("sed -i.bak s/a/b/ f", true, vec!["f"]),
            ("sed -i../x s/a/b/ f", false, vec!["f"]),
            ("sed s/a/b/e f", false, vec![]),
            (
                "sed s/a/b/w f",
                false,
                vec!["(a file the sed script names)"],
            ),
            ("sed 1e f", false, vec![]),
            ("sed -n 1p f", true, vec![]),
            ("sed w.out f", false, vec!["(a file the sed script names)"]),
            (
                "sed -e p -e w.x f",
                false,
                vec!["(a file the sed script names)"],
            ),
            ("sed --sandbox s/a/b/e f", true, vec![]),
        ] {
            let w = words(cmd);
            let o = file_edit(&w[0].text, &w[1..], &Cwd::Session).unwrap();
            assert_eq!(o.problems.is_empty(), ok, "{cmd}: {:?}", o.problems);
            let got: Vec<&str> = o.effects.writes.iter().map(|t| t.path.as_str()).collect();
            assert_eq!(got, writes, "{cmd}");
        }
    }

    #[test]
    fn sed_scripts() {
        for (s, ok) in [
            ("s/a/b/g", true),
            ("1,5d", true),
            ("/x/,/y/{s/a/b/;p}", true),
            ("$!N;P;D", true),
            ("s|a|b|2", true),
            ("s/a/b/e", false),
            ("s/a/b/w out", false),
            ("w out", false),
            ("1r /etc/passwd", false),
            ("e rm x", false),
            ("y/abc/xyz/", true),
            ("a hello", true),
            ("s/a\\/b/c/", true),
        ] {
            assert_eq!(sed_script_ok(s).is_ok(), ok, "{s}");
        }
    }
}
