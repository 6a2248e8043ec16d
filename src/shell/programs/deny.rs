//! Best-effort effects of any program, for deny and ask rules: a generous list of programs that
//! read or write the files they are given.

use super::super::word::Word;
use super::super::{Cwd, Effects, Target};
use super::{dot, target};

/// The programs [`is_reader`] knows.
const READERS: &[&str] = &[
    "cat",
    "tac",
    "head",
    "tail",
    "less",
    "more",
    "most",
    "nl",
    "od",
    "xxd",
    "hexdump",
    "hd",
    "strings",
    "base64",
    "base32",
    "basenc",
    "diff",
    "diff3",
    "sdiff",
    "cmp",
    "comm",
    "paste",
    "join",
    "uniq",
    "sort",
    "cut",
    "fold",
    "fmt",
    "pr",
    "expand",
    "unexpand",
    "rev",
    "column",
    "wc",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "sum",
    "iconv",
    "file",
    "jq",
    "yq",
    "xmllint",
    "bat",
    "batcat",
    "view",
    "vi",
    "vim",
    "nvim",
    "nano",
    "emacs",
    "ed",
    "ex",
    "zcat",
    "zless",
    "zmore",
    "zgrep",
    "bzcat",
    "xzcat",
    "zstdcat",
    "lz4cat",
    "gunzip",
    "gzip",
    "bzip2",
    "bunzip2",
    "xz",
    "unxz",
    "zstd",
    "lz4",
    "tar",
    "zip",
    "unzip",
    "7z",
    "cpio",
    "openssl",
    "gpg",
    "source",
    ".",
    "split",
    "csplit",
    "shuf",
    "tee",
    "dd",
    "install",
    "rsync",
    "scp",
    "sftp",
    "ln",
    "look",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "python",
    "python3",
    "node",
    "perl",
    "ruby",
    "php",
    "lua",
    "bash",
    "sh",
    "zsh",
    "dash",
    "ksh",
    "curl",
    "wget",
    "nc",
    "ncat",
    "socat",
    "mail",
    "mutt",
    "sendmail",
    "ssh",
    "git",
    "xargs",
    "tr",
    "readlink",
    "realpath",
    "truncate",
    "shred",
    "patch",
    "printf",
    "envsubst",
    "m4",
    "cpp",
    "gcc",
    "cc",
    "clang",
    "rustc",
    "go",
    "java",
    "javac",
];

/// The programs [`is_writer`] knows.
const WRITERS: &[&str] = &[
    "tee", "truncate", "shred", "touch", "mkdir", "rm", "rmdir", "unlink", "mv", "cp", "ln",
    "install", "chmod", "chown", "chgrp", "chattr", "setfacl", "patch", "rsync", "scp", "dd",
    "split", "csplit", "mkfifo", "mknod", "sed",
];

/// Programs that may write a file named among their operands or option values (`uniq IN OUT`,
/// `shuf -o F`, `xxd -r IN OUT`, `tar -x -C DIR`, `unzip -d DIR`, `wget -P DIR`, `openssl
/// -out F`, `gpg -o F`): each of those words counts as a write too, which only adds checks.
const MAY_WRITE: &[&str] = &[
    "uniq",
    "shuf",
    "iconv",
    "xxd",
    "openssl",
    "gpg",
    "tar",
    "unzip",
    "7z",
    "cpio",
    "zip",
    "wget",
    "curl",
    "mktemp",
    "base64",
    "gzip",
    "gunzip",
    "pigz",
    "unpigz",
    "bzip2",
    "bunzip2",
    "xz",
    "unxz",
    "lzma",
    "unlzma",
    "zstd",
    "zstdmt",
    "unzstd",
    "lz4",
    "unlz4",
    "brotli",
    "unbrotli",
    "lzop",
    "unlzop",
    "lzip",
    "plzip",
    "compress",
    "uncompress",
];

/// Options that name a file a program writes, whatever the program.
const OUTPUT_OPTIONS: &[&str] = &[
    "--output",
    "--output-file",
    "--output-document",
    "--out-file",
    "--log-file",
    "--logfile",
];

/// Programs whose operands (and option values) are files they read, for deny rules: generous on
/// purpose, since it only ever adds checks.
fn is_reader(prog: &str) -> bool {
    READERS.contains(&prog)
}

/// Programs that write the files named by their operands.
fn is_writer(prog: &str) -> bool {
    WRITERS.contains(&prog)
}

fn is_output_option(o: &str) -> bool {
    OUTPUT_OPTIONS.contains(&o)
}

/// Best-effort effects of any program, for deny and ask rules: every operand and option value
/// of a file reader is a read, of a writer a write; `rm`, `rmdir` and `unlink` remove.
pub(crate) fn deny_effects(prog: &str, args: &[Word], cwd: &Cwd) -> Effects {
    let mut fx = Effects::default();
    output_option_writes(args, cwd, &mut fx);
    let d = super::derived(prog, args, cwd);
    fx.writes.extend(d.writes);
    if let Some(why) = d.unseen {
        // A write toolrt cannot name: an unknown path, asked about when Edit rules exist.
        fx.writes.push(Target {
            path: format!("(a file it names itself: {why})"),
            exact: false,
            glob: false,
            cwd: cwd.clone(),
            repo_top: false,
        });
    }
    let reader = is_reader(prog);
    let writer = is_writer(prog) || MAY_WRITE.contains(&prog);
    let downloader = matches!(prog, "sort" | "curl" | "wget");
    if !reader && !writer && !downloader {
        return fx;
    }
    let paths = operand_paths(args, skips_first_operand(prog, args), cwd);
    if reader || downloader {
        fx.reads.extend(paths.iter().cloned());
    }
    if writer {
        fx.writes.extend(paths.iter().cloned());
    }
    if downloader {
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

/// `--output=FILE` and friends write FILE, whatever the program.
fn output_option_writes(args: &[Word], cwd: &Cwd, fx: &mut Effects) {
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
}

/// Whether the first operand is a pattern or a script rather than a file.
fn skips_first_operand(prog: &str, args: &[Word]) -> bool {
    match prog {
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
    }
}

/// Every operand and option value that may be a path (`--opt=FILE`, `-fFILE`, curl's `@FILE`,
/// dd's `if=`/`of=`), the first operand left out when `skip_first`.
fn operand_paths(args: &[Word], skip_first: bool, cwd: &Cwd) -> Vec<Target> {
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
                // `-fFILE`, and in a cluster of flags the value may start after any letter
                // (`tar -cvf.bashrc`, `curl -so.bashrc`): each tail that looks like a path.
                for (at, _) in t.char_indices().skip(2) {
                    let tail = &t[at..];
                    if at == 2 || tail.contains(['.', '/']) {
                        paths.push(Target {
                            path: tail.to_string(),
                            exact: true,
                            glob: false,
                            cwd: cwd.clone(),
                            repo_top: false,
                        });
                    }
                }
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
        }
    }
    paths
}
