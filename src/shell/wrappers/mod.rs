//! Programs that run their arguments as a command, each with its option grammar and where the
//! inner command starts. An option missing from a wrapper's grammar makes the inner command
//! unknowable: every plausible start is a reading deny and ask rules match, and the command is
//! never auto-allowed. docs/SEMANTICS.md lists the table.

mod grammars;
mod packages;
#[cfg(test)]
mod tests;

use super::options::{self, Grammar, Parsed};
use super::programs::target;
use super::word::Word;
use super::{Cwd, Target};
use grammars::*;

/// What runs inside a wrapper.
#[derive(Debug, Clone)]
pub(crate) enum Inner {
    /// The command starts at this argument.
    At(usize),
    /// The wrapper hands this string to `sh -c`.
    Script(String),
    /// A script only known when the command runs.
    ScriptUnknown,
    /// Words the wrapper builds (`env -S`): they run, followed by the arguments from `rest`.
    Split(Vec<Word>, usize),
    /// No command (`nice` alone, `command -v x`, `sudo -l`).
    Nothing,
}

/// One wrapper, peeled.
#[derive(Debug, Clone, Default)]
pub(crate) struct Peeled {
    /// The readings of the inner command: one when the options are understood, every
    /// plausible start when not.
    pub(crate) inner: Vec<Inner>,
    /// Why the wrapper's options are not understood.
    pub(crate) problems: Vec<String>,
    /// Allow rules match past it (SEMANTICS.md §3.2 lists these), when its options are understood.
    pub(crate) strippable: bool,
    /// A rule with a wildcard never allows it.
    pub(crate) prefix_forbidden: bool,
    /// The inner command runs in another directory: `Some(dir)`, or `None` inside when unknown.
    pub(crate) chdir: Option<Option<String>>,
    /// Variables the wrapper sets for the inner command (`env NAME=VALUE`).
    pub(crate) env: Vec<(String, Word)>,
    /// The inner command also gets arguments from stdin (`xargs`), with this replacement
    /// string (`-I R`) if any.
    pub(crate) stdin_args: Option<Option<String>>,
    /// Files the wrapper itself reads and writes.
    pub(crate) reads: Vec<Target>,
    pub(crate) writes: Vec<Target>,
}

/// The runners [`is_runner`] knows.
const RUNNERS: &[&str] = &[
    "nsenter",
    "unshare",
    "strace",
    "ltrace",
    "valgrind",
    "firejail",
    "bwrap",
    "proot",
    "fakeroot",
    "faketime",
    "unbuffer",
    "catchsegv",
    "torsocks",
    "torify",
    "proxychains",
    "proxychains4",
    "tsocks",
    "numactl",
    "cgexec",
    "systemd-run",
    "xvfb-run",
    "dbus-run-session",
    "dbus-launch",
    "pkexec",
    "sg",
    "runcon",
    "chronic",
    "ifne",
    "parallel",
    "entr",
    "perf",
    "gdb",
    "lldb",
    "caffeinate",
    "tini",
    "dumb-init",
    "cpulimit",
    "trickle",
    "eatmydata",
    "nocache",
    "ddcmd",
    "tsp",
    "ts",
    "sem",
    "retry",
    "with-lock",
    "setarch",
    "linux32",
    "linux64",
    "i386",
    "x86_64",
    "uname26",
    "ssh-agent",
    "hyperfine",
    "ccache",
    "distcc",
    "schedtool",
    "screen",
    "tmux",
    "xterm",
    "pee",
    "socat",
    "ncat",
    "at",
    "batch",
    "start-stop-daemon",
    "rlwrap",
    "chpst",
    "timelimit",
    "daemonize",
    "lckdo",
    "mispipe",
    "fakechroot",
    "gosu",
    "su-exec",
    "setuidgid",
    "envdir",
    "softlimit",
    "setlock",
    "s6-setuidgid",
    "dtach",
    "abduco",
    "nq",
    "systemd-cat",
    "systemd-inhibit",
    "systemd-nspawn",
    "run-one",
];

/// Terminal multiplexers: what they run is in a command language of their own, typed into a
/// session or read from files toolrt does not see.
fn is_multiplexer(prog: &str) -> bool {
    matches!(
        prog,
        "tmux" | "tmate" | "screen" | "byobu" | "zellij" | "dtach" | "abduco"
    )
}

/// Command runners whose options toolrt does not model: every argument that could start a
/// command is a reading.
fn is_runner(prog: &str) -> bool {
    // The dynamic loader runs the program named by its first operand.
    RUNNERS.contains(&prog)
        || is_multiplexer(prog)
        || ["ld-linux", "ld.so", "ld64.so", "ld-musl", "qemu-"]
            .iter()
            .any(|p| prog.starts_with(p))
}

/// Words of a runner's arguments that may be a script it hands to a shell: every word, whole
/// and past an option's `=` or a `KIND:` address (`socat EXEC:'cmd'`), with a leading `|` or
/// `!` taken off (`strace -o '|cmd'`). A word only known when it runs is a script toolrt cannot
/// see.
fn runner_scripts(args: &[Word]) -> Vec<Inner> {
    let mut out = Vec::new();
    for w in args {
        if !w.exact {
            out.push(Inner::ScriptUnknown);
            continue;
        }
        let t = w.text.as_str();
        let mut parts = vec![t];
        if let Some((_, v)) = t.split_once('=') {
            parts.push(v);
        }
        if let Some((_, v)) = t.split_once(':') {
            parts.push(v);
        }
        for part in parts {
            let part = part.trim_start_matches(['|', '!']).trim();
            if !part.is_empty()
                && !part.starts_with('-')
                && !out
                    .iter()
                    .any(|i| matches!(i, Inner::Script(s) if s == part))
            {
                out.push(Inner::Script(part.to_string()));
            }
        }
    }
    out
}

fn operand(p: &Parsed, k: usize) -> Option<usize> {
    p.operands.get(k).copied()
}

/// Every position after `from` that could start a command (not an option), bounded.
fn plausible(args: &[Word], from: usize) -> Vec<Inner> {
    (from..args.len())
        .filter(|&j| !args[j].text.starts_with('-') || args[j].text == "-")
        .take(8)
        .map(Inner::At)
        .collect()
}

/// Peels one wrapper: `None` if `prog` is not one.
pub(crate) fn peel(prog: &str, args: &[Word], cwd: &Cwd) -> Option<Peeled> {
    let Some(grammar) = grammar(prog) else {
        return unmodelled(prog, args);
    };
    let mut out = Peeled::default();
    // `nice --10 cmd`: an old spelling of a negative adjustment.
    let nice_old = prog == "nice"
        && args.first().is_some_and(|w| {
            w.text
                .strip_prefix("--")
                .is_some_and(|n| n.parse::<u32>().is_ok())
        });
    let skip = usize::from(nice_old);
    let mut p = options::parse(grammar, &args[skip..]);
    for o in p.operands.iter_mut() {
        *o += skip;
    }
    if let Some(u) = p.first_unknown.as_mut() {
        *u += skip;
    }
    out.problems = p
        .problems
        .iter()
        .map(|why| format!("{prog}: {why}"))
        .collect();
    out.strippable = matches!(
        prog,
        "timeout" | "nice" | "nohup" | "stdbuf" | "time" | "command"
    );
    out.prefix_forbidden = matches!(prog, "watch" | "setsid" | "ionice" | "flock");
    let inner = inner(prog, &p, args, cwd, &mut out);
    out.inner.push(inner);
    if let Some(u) = p.first_unknown {
        // The unknown option may or may not take a value, may be followed by more options:
        // every later word that is not an option could start the command.
        for r in plausible(args, u + 1) {
            if !out
                .inner
                .iter()
                .any(|i| matches!((i, &r), (Inner::At(a), Inner::At(b)) if a == b))
            {
                out.inner.push(r);
            }
        }
    }
    Some(out)
}

/// The grammar of a wrapper whose options toolrt models.
fn grammar(prog: &str) -> Option<&'static Grammar> {
    Some(match prog {
        "timeout" => &TIMEOUT,
        "nice" => &NICE,
        "nohup" => &NOHUP,
        "stdbuf" => &STDBUF,
        "env" => &ENV,
        "time" => &TIME,
        "command" => &COMMAND,
        "exec" => &EXEC,
        "xargs" => &XARGS,
        "sudo" => &SUDO,
        "doas" => &DOAS,
        "watch" => &WATCH,
        "flock" => &FLOCK,
        "taskset" => &TASKSET,
        "setpriv" => &SETPRIV,
        "prlimit" => &PRLIMIT,
        "script" => &SCRIPT,
        "chrt" => &CHRT,
        "ionice" => &IONICE,
        "setsid" => &SETSID,
        "chroot" => &CHROOT,
        "su" => &SU,
        "runuser" => &RUNUSER,
        _ => return None,
    })
}

/// Wrappers and runners whose options toolrt does not model (or that have none); `None` if
/// `prog` is not one.
fn unmodelled(prog: &str, args: &[Word]) -> Option<Peeled> {
    let mut out = Peeled::default();
    match prog {
        "builtin" | "noglob" => {
            out.strippable = true;
            out.inner.push(if args.is_empty() {
                Inner::Nothing
            } else {
                Inner::At(0)
            });
            Some(out)
        }
        "busybox" | "toybox" => {
            out.inner.push(match args.first() {
                Some(w) if !w.text.starts_with('-') => Inner::At(0),
                Some(_) => {
                    out.problems
                        .push(format!("{prog} options are not modelled"));
                    return Some(Peeled {
                        inner: plausible(args, 0),
                        ..out
                    });
                }
                None => Inner::Nothing,
            });
            Some(out)
        }
        p if is_runner(p) => {
            out.problems.push(format!(
                "{prog} runs a command, and its options are not modelled"
            ));
            out.prefix_forbidden = true;
            out.inner = plausible(args, 0);
            out.inner.extend(runner_scripts(args));
            if matches!(p, "at" | "batch" | "parallel") || is_multiplexer(p) {
                // The job's script (parallel's commands) may come from stdin or a file; a
                // terminal multiplexer runs its own command language (`tmux send-keys` typed
                // key by key, `source-file`, `#(…)` in formats, hooks, its start-up file).
                out.inner.push(Inner::ScriptUnknown);
            }
            if out.inner.is_empty() {
                out.inner.push(Inner::Nothing);
            }
            Some(out)
        }
        _ => packages::peel(prog, args),
    }
}

/// Where the inner command of a modelled wrapper starts, and what the wrapper itself touches.
fn inner(prog: &str, p: &Parsed, args: &[Word], cwd: &Cwd, out: &mut Peeled) -> Inner {
    let first = operand(p, 0);
    match prog {
        "timeout" => match operand(p, 1) {
            Some(i) => Inner::At(i),
            None => {
                out.problems
                    .push("timeout needs a duration and a command".into());
                Inner::Nothing
            }
        },
        "nice" | "nohup" | "stdbuf" | "setpriv" | "setsid" | "exec" => {
            first.map_or(Inner::Nothing, Inner::At)
        }
        "time" => {
            for v in p.values(&["-o", "--output"]) {
                out.writes.extend(value_target(&v.text, v.exact, cwd));
            }
            first.map_or(Inner::Nothing, Inner::At)
        }
        "command" => {
            if p.has(&["-v", "-V"]) {
                Inner::Nothing
            } else {
                first.map_or(Inner::Nothing, Inner::At)
            }
        }
        "env" => env(args, p, out),
        "xargs" => xargs(p, args, cwd, out),
        "sudo" => sudo(p, args, cwd, out),
        "doas" => {
            if p.has(&["-C"]) {
                Inner::Nothing
            } else {
                first.map_or(Inner::Nothing, Inner::At)
            }
        }
        "watch" => match first {
            None => Inner::Nothing,
            Some(i) if p.has(&["-x", "--exec"]) => Inner::At(i),
            Some(i) => joined(&args[i..]),
        },
        "flock" => flock(p, args, cwd, out),
        "taskset" => {
            if p.has(&["-p", "--pid"]) {
                Inner::Nothing
            } else {
                operand(p, 1).map_or(Inner::Nothing, Inner::At)
            }
        }
        "prlimit" => {
            if p.has(&["-p", "--pid"]) {
                Inner::Nothing
            } else {
                first.map_or(Inner::Nothing, Inner::At)
            }
        }
        "script" => script(p, args, cwd, out),
        "chrt" => {
            if p.has(&["-p", "--pid", "-m", "--max"]) {
                Inner::Nothing
            } else {
                operand(p, 1).map_or(Inner::Nothing, Inner::At)
            }
        }
        "ionice" => {
            if p.has(&["-p", "--pid", "-P", "--pgid", "-u", "--uid"]) {
                Inner::Nothing
            } else {
                first.map_or(Inner::Nothing, Inner::At)
            }
        }
        "chroot" => {
            out.chdir = Some(None);
            operand(p, 1).map_or(Inner::Nothing, Inner::At)
        }
        "su" | "runuser" => su_command(args).unwrap_or_else(|| {
            if prog == "runuser" && p.has(&["-u", "--user"]) {
                first.map_or(Inner::Nothing, Inner::At)
            } else {
                Inner::Nothing
            }
        }),
        _ => Inner::Nothing,
    }
}

/// `su`/`runuser`'s command, found the way their getopt finds it — options after the user name
/// too (`su root -c CMD`): the last `-c`/`--command`/`--session-command` script; with `-s`/
/// `--shell` the program that runs is one toolrt does not know.
fn su_command(args: &[Word]) -> Option<Inner> {
    let mut found: Option<(String, bool)> = None;
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        let next = || {
            args.get(i + 1)
                .map(|n| (n.text.clone(), n.exact && w.exact))
        };
        if t == "-s" || t == "--shell" || t.starts_with("--shell=") {
            return Some(Inner::ScriptUnknown);
        }
        if matches!(t, "--command" | "--session-command") {
            found = next();
            i += 2;
            continue;
        }
        if let Some(v) = t
            .strip_prefix("--command=")
            .or_else(|| t.strip_prefix("--session-command="))
        {
            found = Some((v.to_string(), w.exact));
        } else if let Some(cluster) = t.strip_prefix('-').filter(|c| !c.starts_with('-')) {
            // A short cluster: the letters before `c` or `s` are flags (`-lc CMD`, `-fs SH`).
            if let Some(at) = cluster.find(['c', 's']) {
                if cluster[at..].starts_with('s') {
                    return Some(Inner::ScriptUnknown);
                }
                let rest = &cluster[at + 1..];
                if rest.is_empty() {
                    found = next();
                    i += 2;
                    continue;
                }
                found = Some((rest.to_string(), w.exact));
            }
        }
        i += 1;
    }
    found.map(|(text, exact)| {
        if exact {
            Inner::Script(text)
        } else {
            Inner::ScriptUnknown
        }
    })
}

/// `xargs`: the command (`echo` without one) gets arguments from stdin.
fn xargs(p: &Parsed, args: &[Word], cwd: &Cwd, out: &mut Peeled) -> Inner {
    let first = operand(p, 0);
    out.strippable = p.opts.is_empty() && p.problems.is_empty();
    for v in p.values(&["-a", "--arg-file"]) {
        out.reads.extend(value_target(&v.text, v.exact, cwd));
    }
    let replace = p
        .opts
        .iter()
        .filter(|o| matches!(o.name.as_str(), "-I" | "-i" | "--replace"))
        .map(|o| {
            o.value
                .as_ref()
                .map_or("{}".to_string(), |v| v.text.clone())
        })
        .next_back();
    out.stdin_args = Some(replace);
    // With no command, xargs runs `echo`.
    first.map_or(
        Inner::Split(vec![Word::plain("echo")], args.len()),
        Inner::At,
    )
}

/// `sudo`: its directory options, `-e` (edits files), and the options that run nothing.
fn sudo(p: &Parsed, args: &[Word], cwd: &Cwd, out: &mut Peeled) -> Inner {
    let first = operand(p, 0);
    for v in p.values(&["-D", "--chdir"]) {
        out.chdir = Some(v.exact.then(|| v.text.clone()));
    }
    if p.has(&["-R", "--chroot"]) {
        out.chdir = Some(None);
    }
    if p.has(&["-e", "--edit"]) {
        for &i in &p.operands {
            out.writes.extend(target(&args[i], cwd));
        }
        Inner::Nothing
    } else if p.has(&["-l", "--list", "-v", "--validate", "-k", "-K", "-V"]) && first.is_none() {
        Inner::Nothing
    } else {
        first.map_or(Inner::Nothing, Inner::At)
    }
}

/// `flock`: the lock file is written; the command is a script (`-c`) or the words after it.
fn flock(p: &Parsed, args: &[Word], cwd: &Cwd, out: &mut Peeled) -> Inner {
    let first = operand(p, 0);
    let cmd: Vec<_> = p.values(&["-c", "--command"]).cloned().collect();
    if let Some(f) = first {
        out.writes.extend(target(&args[f], cwd));
    }
    if let Some(c) = cmd.last() {
        if c.exact {
            Inner::Script(c.text.clone())
        } else {
            Inner::ScriptUnknown
        }
    } else {
        match operand(p, 1) {
            // `flock FILE -c CMD`: options end at FILE for getopt, but flock reads
            // `-c` after it.
            Some(i) if matches!(args[i].text.as_str(), "-c" | "--command") => {
                match args.get(i + 1) {
                    Some(w) if w.literal() => Inner::Script(w.text.clone()),
                    Some(_) => Inner::ScriptUnknown,
                    None => Inner::Nothing,
                }
            }
            Some(i) => Inner::At(i),
            None => Inner::Nothing,
        }
    }
}

/// `script`: its log files are written; the command is a script (`-c`).
fn script(p: &Parsed, args: &[Word], cwd: &Cwd, out: &mut Peeled) -> Inner {
    let first = operand(p, 0);
    for v in p.values(&[
        "-I",
        "--log-in",
        "-O",
        "--log-out",
        "-B",
        "--log-io",
        "-T",
        "--log-timing",
        "-t",
        "--timing",
    ]) {
        out.writes.extend(value_target(&v.text, v.exact, cwd));
    }
    if let Some(f) = first {
        out.writes.extend(target(&args[f], cwd));
    }
    match p.values(&["-c", "--command"]).last() {
        Some(v) if v.exact => Inner::Script(v.text.clone()),
        Some(_) => Inner::ScriptUnknown,
        None => Inner::Nothing,
    }
}

fn value_target(text: &str, exact: bool, cwd: &Cwd) -> Option<Target> {
    (text != "-").then(|| Target {
        path: text.to_string(),
        exact,
        glob: false,
        cwd: cwd.clone(),
        repo_top: false,
    })
}

/// `watch` (without `-x`) and `sudo -s` join their arguments with spaces and hand them to a
/// shell.
fn joined(args: &[Word]) -> Inner {
    if args.iter().all(Word::literal) {
        Inner::Script(
            args.iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        )
    } else {
        Inner::ScriptUnknown
    }
}

fn env(args: &[Word], p: &Parsed, out: &mut Peeled) -> Inner {
    for v in p.values(&["-C", "--chdir"]) {
        out.chdir = Some(v.exact.then(|| v.text.clone()));
    }
    let mut i = p.operands.first().copied().unwrap_or(args.len());
    // `-` alone means -i.
    if args.get(i).is_some_and(|w| w.text == "-") {
        i += 1;
    }
    while let Some(w) = args.get(i) {
        match w.text.split_once('=') {
            Some((name, _)) if is_name(name) => {
                let value = Word {
                    text: w.text[name.len() + 1..].to_string(),
                    ..w.clone()
                };
                out.env.push((name.to_string(), value));
                i += 1;
            }
            _ => break,
        }
    }
    let split: Vec<_> = p.values(&["-S", "--split-string"]).cloned().collect();
    if let Some(s) = split.last() {
        if !s.exact || s.text.contains(['$', '\\']) {
            // -S expands ${VAR} and escapes of its own.
            out.problems
                .push("env -S builds its command from a string toolrt does not expand".into());
            return Inner::ScriptUnknown;
        }
        // The string is split like shell words (quotes, no expansions).
        let words = shell_split(&s.text);
        return Inner::Split(words, i);
    }
    if i < args.len() {
        Inner::At(i)
    } else {
        Inner::Nothing
    }
}

/// Splits a string into words the way `env -S` does for plain and quoted text.
fn shell_split(s: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, ' ' | '\t' | '\n') => {
                if any || !cur.is_empty() {
                    out.push(Word {
                        text: std::mem::take(&mut cur),
                        exact: true,
                        ..Word::default()
                    });
                    any = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if any || !cur.is_empty() {
        out.push(Word {
            text: cur,
            exact: true,
            ..Word::default()
        });
    }
    out
}

pub(crate) fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}
