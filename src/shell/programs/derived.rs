//! Files a program writes under names it makes from its operands rather than names it is given:
//! backups (`cp -b -S SUF`, `mv`, `ln`, `install`: the existing destination is renamed to
//! DEST+SUF), compressors and decompressors (`gzip F` writes `F.gz`, `gunzip F.gz` writes `F`,
//! `-S SUF` changes the suffix), and `patch`, whose targets are named inside the patch.
//!
//! The derived names are checked like any written path (Edit rules, protected paths): a rule
//! for `.bashrc` must hold for `cp -b -S rc x .bash`. A write whose name toolrt cannot derive
//! (`patch < x.diff`, `gunzip -N`, `gzip -r DIR`) is an unknown path: never allowed by a prefix
//! rule, and with Edit or Read rules present the command asks.

use super::super::options::{self, Grammar};
use super::super::word::Word;
use super::super::{Cwd, Target};
use super::target;

/// What [`derived`] finds.
#[derive(Debug, Default)]
pub(crate) struct Derived {
    /// Paths written under derived names.
    pub(crate) writes: Vec<Target>,
    /// It also writes files whose names toolrt cannot know, and why.
    pub(crate) unseen: Option<String>,
}

/// The files `prog` writes under names derived from `args`.
pub(crate) fn derived(prog: &str, args: &[Word], cwd: &Cwd) -> Derived {
    let mut out = Derived::default();
    if matches!(prog, "cp" | "mv" | "ln" | "install") || codec(prog).is_some() {
        let values = if matches!(prog, "ln" | "install") {
            "tgmo"
        } else {
            codec(prog).map_or("t", |c| c.values)
        };
        if backup_suffixes(args, values)
            .iter()
            .any(|(_, exact)| !exact)
        {
            out.unseen = Some(format!(
                "{prog} writes a file named with a suffix only known when it runs"
            ));
        }
    }
    match prog {
        "ln" | "install" => {
            // Every operand may be a destination (generous: these only add checks), and so
            // may a target directory (`-t DIR`, `--target-directory=DIR`).
            let ops: Vec<Target> = plain_operands(args, "tgmoS")
                .into_iter()
                .filter_map(|w| target(w, cwd))
                .collect();
            let mut dests = ops.clone();
            dests.extend(target_dirs(args).filter_map(|w| target(&w, cwd)));
            out.writes = backups(args, "tgmo", &dests, &ops);
        }
        "patch" => patch(args, cwd, &mut out),
        _ => {
            if let Some(c) = codec(prog) {
                compressed(prog, c, args, cwd, &mut out);
            }
        }
    }
    out
}

/// Whether words from stdin (`xargs PROG`) could make `prog` write files whose names toolrt
/// cannot know (`-N`, `-r`, or no target for `patch`).
pub(crate) fn derives_names(prog: &str) -> bool {
    prog == "patch" || codec(prog).is_some()
}

/// The backup files a `cp`/`mv`/`ln`/`install` with these arguments may write: for every
/// suffix (`-S SUF`, `--suffix=SUF` in any abbreviation, `~` for a bare `-b`/`--backup`),
/// DEST+SUF and, when DEST is a directory, DEST/NAME+SUF for each source NAME. `values` are
/// the program's other short options that take a value.
pub(crate) fn backups(
    args: &[Word],
    values: &str,
    dests: &[Target],
    sources: &[Target],
) -> Vec<Target> {
    let mut out = Vec::new();
    for (suffix, exact) in backup_suffixes(args, values) {
        for d in dests {
            let dir = d.path.trim_end_matches('/');
            let mut names = vec![format!("{dir}{suffix}")];
            for s in sources {
                let base = s.path.trim_end_matches('/');
                let base = base.rsplit_once('/').map_or(base, |(_, b)| b);
                names.push(format!("{dir}/{base}{suffix}"));
            }
            for path in names {
                out.push(Target {
                    path,
                    exact: exact && d.exact && !d.glob,
                    glob: false,
                    cwd: d.cwd.clone(),
                    repo_top: false,
                });
            }
        }
    }
    out
}

/// The backup suffixes given (with whether each is known exactly); `~` when backups are on
/// without one (the usual `SIMPLE_BACKUP_SUFFIX`, which a command that sets it hides).
fn backup_suffixes(args: &[Word], values: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut backup = false;
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, val) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            if name.len() >= 2 && "suffix".starts_with(name) {
                match val {
                    Some(v) => out.push((v.to_string(), w.exact)),
                    None => {
                        i += 1;
                        if let Some(n) = args.get(i) {
                            out.push((n.text.clone(), n.exact));
                        }
                    }
                }
            } else if name.len() >= 2 && "backup".starts_with(name) {
                backup = true;
            }
        } else if let Some(cluster) = t.strip_prefix('-').filter(|c| !c.is_empty()) {
            for (k, c) in cluster.char_indices() {
                let rest = &cluster[k + c.len_utf8()..];
                if c == 'b' {
                    backup = true;
                } else if c == 'S' {
                    if rest.is_empty() {
                        i += 1;
                        if let Some(n) = args.get(i) {
                            out.push((n.text.clone(), n.exact));
                        }
                    } else {
                        out.push((rest.to_string(), w.exact));
                    }
                    break;
                } else if values.contains(c) {
                    i += usize::from(rest.is_empty());
                    break;
                }
            }
        }
        i += 1;
    }
    if backup && out.is_empty() {
        out.push(("~".into(), true));
    }
    out
}

/// Words that are not options or their values (`values`: short options taking a value), and
/// every word after `--`. An unknown long option's value, if it has one, counts as an operand
/// (generous: it only adds checks).
fn plain_operands<'a>(args: &'a [Word], values: &str) -> Vec<&'a Word> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut only = false;
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        if only || t == "-" || !t.starts_with('-') {
            out.push(w);
        } else if t == "--" {
            only = true;
        } else if !t.starts_with("--") {
            for (k, c) in t[1..].char_indices() {
                if values.contains(c) {
                    i += usize::from(t[1 + k + c.len_utf8()..].is_empty());
                    break;
                }
            }
        } else if t.len() > 4 && "--suffix".starts_with(t) {
            i += 1;
        }
        i += 1;
    }
    out
}

/// `-t DIR`, `-tDIR`, `--target-directory[=]DIR` (in any abbreviation) of `ln` and `install`.
fn target_dirs(args: &[Word]) -> impl Iterator<Item = Word> + '_ {
    args.iter().enumerate().filter_map(|(i, w)| {
        let t = w.text.as_str();
        let next = || args.get(i + 1).cloned();
        if t == "-t" {
            return next();
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, val) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            if name.len() >= 2 && "target-directory".starts_with(name) {
                return match val {
                    Some(v) => Some(Word {
                        text: v.to_string(),
                        ..w.clone()
                    }),
                    None => next(),
                };
            }
            return None;
        }
        let v = t.strip_prefix("-t").filter(|v| !v.is_empty())?;
        Some(Word {
            text: v.to_string(),
            ..w.clone()
        })
    })
}

/// A compressor: what it adds and takes off.
struct Codec {
    /// Names that decompress by default.
    unpack: &'static [&'static str],
    /// Suffixes it adds when compressing.
    suffix: &'static [&'static str],
    /// Suffixes it takes off when decompressing, and what replaces each.
    known: &'static [(&'static str, &'static str)],
    /// Short options that take a value.
    values: &'static str,
    /// Short options that make it write no file (to stdout, test, list).
    no_file: &'static str,
    /// The suffix a decompressed file without a known suffix gets (`bzip2 -d x`: `x.out`).
    fallback: Option<&'static str>,
}

const GZ: &[(&str, &str)] = &[
    (".gz", ""),
    ("-gz", ""),
    (".z", ""),
    ("-z", ""),
    ("_z", ""),
    (".Z", ""),
    (".tgz", ".tar"),
    (".taz", ".tar"),
];
const XZ: &[(&str, &str)] = &[
    (".xz", ""),
    (".txz", ".tar"),
    (".lzma", ""),
    (".tlz", ".tar"),
];

fn codec(prog: &str) -> Option<&'static Codec> {
    const fn c(
        unpack: &'static [&'static str],
        suffix: &'static [&'static str],
        known: &'static [(&'static str, &'static str)],
        values: &'static str,
        no_file: &'static str,
    ) -> Codec {
        Codec {
            unpack,
            suffix,
            known,
            values,
            no_file,
            fallback: None,
        }
    }
    static GZIP: Codec = c(&["gunzip"], &[".gz"], GZ, "S", "clt");
    static PIGZ: Codec = c(&["unpigz"], &[".gz", ".zz"], GZ, "bpSIJ", "clt");
    static BZIP2: Codec = Codec {
        fallback: Some(".out"),
        ..c(
            &["bunzip2"],
            &[".bz2"],
            &[
                (".bz2", ""),
                (".bz", ""),
                (".tbz2", ".tar"),
                (".tbz", ".tar"),
            ],
            "",
            "ct",
        )
    };
    static XZ_: Codec = c(&["unxz", "unlzma"], &[".xz", ".lzma"], XZ, "SCFMT", "clt");
    static ZSTD: Codec = c(
        &["unzstd"],
        &[".zst"],
        &[
            (".zst", ""),
            (".tzst", ".tar"),
            (".gz", ""),
            (".tgz", ".tar"),
            (".xz", ""),
            (".txz", ".tar"),
            (".lzma", ""),
            (".lz4", ""),
        ],
        "oD",
        "clt",
    );
    static LZ4: Codec = c(&["unlz4"], &[".lz4"], &[(".lz4", "")], "", "ct");
    static BROTLI: Codec = c(&["unbrotli"], &[".br"], &[(".br", "")], "oSqw", "ct");
    static LZOP: Codec = c(
        &["unlzop"],
        &[".lzo"],
        &[(".lzo", ""), (".tzo", ".tar")],
        "oS",
        "clt",
    );
    static LZIP: Codec = c(
        &[],
        &[".lz"],
        &[(".lz", ""), (".tlz", ".tar")],
        "obms",
        "ct",
    );
    static COMPRESS: Codec = c(&["uncompress"], &[".Z"], &[(".Z", "")], "b", "c");
    Some(match prog {
        "gzip" | "gunzip" => &GZIP,
        "pigz" | "unpigz" => &PIGZ,
        "bzip2" | "bunzip2" => &BZIP2,
        "xz" | "unxz" | "lzma" | "unlzma" => &XZ_,
        "zstd" | "zstdmt" | "unzstd" => &ZSTD,
        "lz4" | "unlz4" => &LZ4,
        "brotli" | "unbrotli" => &BROTLI,
        "lzop" | "unlzop" => &LZOP,
        "lzip" | "plzip" => &LZIP,
        "compress" | "uncompress" => &COMPRESS,
        _ => return None,
    })
}

/// How a compressor was asked to run.
#[derive(Default)]
struct CodecRun {
    decompress: bool,
    no_file: bool,
    /// `-N`/`--name`: a decompressed file takes the name stored inside the archive.
    stored_name: bool,
    unseen: Option<String>,
    suffixes: Vec<(String, bool)>,
}

fn codec_run(prog: &str, c: &Codec, args: &[Word]) -> CodecRun {
    let mut r = CodecRun {
        decompress: c.unpack.contains(&prog),
        suffixes: backup_suffixes(args, c.values)
            .into_iter()
            .filter(|(s, _)| s != "~")
            .collect(),
        ..CodecRun::default()
    };
    for w in args {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let name = long.split_once('=').map_or(long, |(n, _)| n);
            let is = |full: &str, min: usize| name.len() >= min && full.starts_with(name);
            if is("decompress", 3) || is("uncompress", 3) {
                r.decompress = true;
            } else if matches!(name, "stdout" | "to-stdout" | "test" | "list") {
                r.no_file = true;
            } else if is("name", 2) {
                r.stored_name = true;
            } else if is("recursive", 3) {
                r.unseen = Some(format!("{prog} -r writes files below a directory"));
            } else if matches!(
                name,
                "files" | "files0" | "filelist" | "output-dir-flat" | "output-dir-mirror"
            ) {
                r.unseen = Some(format!("{prog} --{name} names files toolrt cannot see"));
            }
        } else if let Some(cluster) = t.strip_prefix('-').filter(|c| !c.is_empty()) {
            for ch in cluster.chars() {
                match ch {
                    'd' => r.decompress = true,
                    'N' => r.stored_name = true,
                    'r' => r.unseen = Some(format!("{prog} -r writes files below a directory")),
                    _ if c.no_file.contains(ch) => r.no_file = true,
                    _ => {}
                }
                if c.values.contains(ch) {
                    break;
                }
            }
        }
    }
    r
}

/// `gzip F` writes F.gz, `gzip -d F.gz` writes F (`-S SUF` for either).
fn compressed(prog: &str, c: &Codec, args: &[Word], cwd: &Cwd, out: &mut Derived) {
    let r = codec_run(prog, c, args);
    if r.no_file {
        return;
    }
    if r.unseen.is_some() {
        out.unseen = r.unseen;
    }
    if r.decompress && r.stored_name {
        out.unseen = Some(format!(
            "{prog} -N names the file it writes after the name stored in the archive"
        ));
    }
    let mut custom = r.suffixes;
    for w in plain_operands(args, c.values) {
        let Some(t) = target(w, cwd) else { continue };
        let mut names: Vec<(String, bool)> = Vec::new();
        if r.decompress {
            let mut found = false;
            let known = c.known.iter().map(|&(s, to)| (s.to_string(), true, to));
            for (s, exact, to) in custom.iter().map(|(s, e)| (s.clone(), *e, "")).chain(known) {
                if !s.is_empty() && t.path.len() > s.len() && t.path.ends_with(s.as_str()) {
                    names.push((format!("{}{to}", &t.path[..t.path.len() - s.len()]), exact));
                    found = true;
                }
            }
            if !found && let Some(f) = c.fallback {
                names.push((format!("{}{f}", t.path), true));
            }
        } else {
            if custom.is_empty() {
                custom = c.suffix.iter().map(|s| (s.to_string(), true)).collect();
            }
            names.extend(custom.iter().map(|(s, e)| (format!("{}{s}", t.path), *e)));
        }
        for (path, exact) in names {
            out.writes.push(Target {
                path,
                exact: exact && t.exact && !t.glob,
                glob: false,
                ..t.clone()
            });
        }
    }
}

/// GNU patch 2.7's options; the table is complete, so abbreviations resolve.
const PATCH: Grammar = Grammar::new(
    "bB:cd:D:eEfF:g:i:lnNo:p:r:RstTuvV:x:Y:z:Z",
    &[
        "backup",
        "backup-if-mismatch",
        "basename-prefix=",
        "batch",
        "binary",
        "context",
        "debug=",
        "directory=",
        "dry-run",
        "ed",
        "follow-symlinks",
        "force",
        "forward",
        "fuzz=",
        "get=",
        "help",
        "ifdef=",
        "ignore-whitespace",
        "input=",
        "merge=?",
        "no-backup-if-mismatch",
        "normal",
        "output=",
        "posix",
        "prefix=",
        "quiet",
        "quoting-style=",
        "read-only=",
        "reject-file=",
        "reject-format=",
        "remove-empty-files",
        "reverse",
        "set-time",
        "set-utc",
        "silent",
        "strip=",
        "suffix=",
        "unified",
        "verbose",
        "version",
        "version-control=",
    ],
)
.abbreviations();

/// `patch [ORIGINAL [PATCHFILE]]`: without ORIGINAL or `-o FILE`, the files it writes are
/// named inside the patch, which toolrt does not read.
fn patch(args: &[Word], cwd: &Cwd, out: &mut Derived) {
    let p = options::parse(&PATCH, args);
    if p.has(&["--dry-run", "--help", "--version"]) {
        return;
    }
    if !p.problems.is_empty() {
        out.unseen = Some("patch has options toolrt does not know".into());
        return;
    }
    if p.has(&["-d", "--directory"]) {
        out.unseen = Some("patch -d patches files in another directory".into());
        return;
    }
    let mut written: Vec<Target> = p
        .values(&["-o", "--output"])
        .filter(|v| v.text != "-")
        .map(|v| super::value_path(v, cwd))
        .collect();
    if written.is_empty() {
        match p.operands.first() {
            Some(&i) => written.extend(target(&args[i], cwd)),
            None => {
                out.unseen = Some(
                    "patch writes the files its patch names, which toolrt does not read".into(),
                );
                return;
            }
        }
    }
    // Backups and rejects beside each written file (`.orig`, `.rej`, `-z SUF`, `-B PRE`).
    for t in &written {
        let mut names = vec![format!("{}.orig", t.path), format!("{}.rej", t.path)];
        for v in p.values(&["-z", "--suffix"]) {
            names.push(format!("{}{}", t.path, v.text));
        }
        for v in p.values(&["-B", "--prefix"]) {
            names.push(format!("{}{}", v.text, t.path));
        }
        for v in p.values(&["-Y", "--basename-prefix"]) {
            names.push(match t.path.rsplit_once('/') {
                Some((dir, base)) => format!("{dir}/{}{base}", v.text),
                None => format!("{}{}", v.text, t.path),
            });
        }
        for path in names {
            out.writes.push(Target {
                path,
                exact: t.exact,
                ..t.clone()
            });
        }
    }
    out.writes.extend(written);
}
