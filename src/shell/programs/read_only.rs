//! The read-only set (§3.3): each program with its option grammar and what it reads or lists.

use super::super::options::{self, Grammar, Parsed};
use super::super::word::Word;
use super::super::{Cwd, Target};
use super::find::find;
use super::{Outcome, check_words, dot, operand_targets, target, value_path, value_target};

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
)
.harmless();
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
)
.harmless();
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
.numbers()
.harmless();
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
.numbers()
.harmless();
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
)
.harmless();
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
            if p.has(&["-R", "--recursive"]) && p.has(&["-L", "--dereference"]) {
                out.effects.reads.push(followed_links(cwd));
            }
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
                if !p.has(&["--no-dereference"]) {
                    out.effects.reads.push(followed_links(cwd));
                }
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
            if p.has(&["-L", "--dereference"]) {
                out.effects.reads.push(followed_links(cwd));
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
        "jq" => return Some(super::super::jq::jq(args, cwd)),
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

/// What a recursive read that follows symbolic links inside the tree (`grep -R`, `diff -r`)
/// reads besides the tree: wherever those links point, which toolrt cannot know.
pub(super) fn followed_links(cwd: &Cwd) -> Target {
    Target {
        path: "(files that symbolic links in the tree name)".into(),
        exact: false,
        glob: false,
        cwd: cwd.clone(),
        repo_top: false,
    }
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
        if p.has(&["-R", "--dereference-recursive"]) {
            out.effects.reads.push(followed_links(cwd));
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
