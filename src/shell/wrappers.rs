//! Programs that run their arguments as a command, each with its option grammar and where the
//! inner command starts. An option missing from a wrapper's grammar makes the inner command
//! unknowable: every plausible start is a reading deny and ask rules match, and the command is
//! never auto-allowed. docs/SEMANTICS.md lists the table.

use super::options::{self, Grammar, Parsed};
use super::programs::target;
use super::word::Word;
use super::{Cwd, Target};

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

const TIMEOUT: Grammar = Grammar::new(
    "fk:ps:v",
    &[
        "foreground",
        "kill-after=",
        "preserve-status",
        "signal=",
        "verbose",
        "help",
        "version",
    ],
)
.stops();
const NICE: Grammar = Grammar::new("n:", &["adjustment=", "help", "version"])
    .stops()
    .numbers();
const NOHUP: Grammar = Grammar::new("", &["help", "version"]).stops();
const STDBUF: Grammar = Grammar::new(
    "i:o:e:",
    &["input=", "output=", "error=", "help", "version"],
)
.stops();
const ENV: Grammar = Grammar::new(
    "0iu:vC:S:",
    &[
        "null",
        "ignore-environment",
        "unset=",
        "chdir=",
        "split-string=",
        "debug",
        "block-signal=?",
        "default-signal=?",
        "ignore-signal=?",
        "list-signal-handling",
        "help",
        "version",
    ],
)
.stops();
const TIME: Grammar = Grammar::new(
    "af:o:pqv",
    &[
        "append",
        "format=",
        "output=",
        "portability",
        "quiet",
        "verbose",
        "help",
        "version",
    ],
)
.stops();
const COMMAND: Grammar = Grammar::new("pvV", &[]).stops();
const EXEC: Grammar = Grammar::new("cla:", &[]).stops();
const XARGS: Grammar = Grammar::new(
    "0a:d:E:e::I:i::L:l::n:opP:rs:tx",
    &[
        "null",
        "arg-file=",
        "delimiter=",
        "eof=?",
        "replace=?",
        "max-lines=?",
        "max-args=",
        "open-tty",
        "interactive",
        "max-procs=",
        "no-run-if-empty",
        "max-chars=",
        "verbose",
        "exit",
        "process-slot-var=",
        "show-limits",
        "help",
        "version",
    ],
)
.stops();
const SUDO: Grammar = Grammar::new(
    "AbBC:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv",
    &[
        "askpass",
        "auth-type=",
        "background",
        "bell",
        "close-from=",
        "chdir=",
        "preserve-env=?",
        "edit",
        "group=",
        "set-home",
        "help",
        "host=",
        "login",
        "remove-timestamp",
        "reset-timestamp",
        "list",
        "no-update",
        "non-interactive",
        "preserve-groups",
        "prompt=",
        "chroot=",
        "role=",
        "stdin",
        "shell",
        "type=",
        "command-timeout=",
        "other-user=",
        "user=",
        "version",
        "validate",
    ],
)
.stops();
const DOAS: Grammar = Grammar::new("a:C:Lnsu:", &[]).stops();
const WATCH: Grammar = Grammar::new(
    "bcCd::egn:pq:rtwxhv",
    &[
        "beep",
        "color",
        "no-color",
        "differences=?",
        "errexit",
        "chgexit",
        "interval=",
        "precise",
        "equexit=",
        "no-rerun",
        "no-title",
        "no-wrap",
        "exec",
        "help",
        "version",
    ],
)
.stops();
const FLOCK: Grammar = Grammar::new(
    "sexnuw:oE:Fc:hV",
    &[
        "shared",
        "exclusive",
        "unlock",
        "nonblock",
        "nb",
        "wait=",
        "timeout=",
        "close",
        "conflict-exit-code=",
        "no-fork",
        "command=",
        "verbose",
        "help",
        "version",
    ],
)
.stops();
const TASKSET: Grammar = Grammar::new(
    "acphV",
    &["all-tasks", "cpu-list", "pid", "help", "version"],
)
.stops();
const SETPRIV: Grammar = Grammar::new(
    "dhV",
    &[
        "dump",
        "no-new-privs",
        "nnp",
        "clear-groups",
        "keep-groups",
        "init-groups",
        "groups=",
        "inh-caps=",
        "ambient-caps=",
        "bounding-set=",
        "pdeathsig=",
        "regid=",
        "reuid=",
        "rgid=",
        "ruid=",
        "egid=",
        "euid=",
        "securebits=",
        "selinux-label=",
        "apparmor-profile=",
        "landlock-access=",
        "landlock-rule=",
        "reset-env",
        "help",
        "version",
    ],
)
.stops();
const PRLIMIT: Grammar = Grammar::new(
    "c::d::e::f::hi::l::m::n::o:p:q::r::s::t::u::v::x::y::V",
    &[
        "core=?",
        "data=?",
        "nice=?",
        "fsize=?",
        "sigpending=?",
        "memlock=?",
        "rss=?",
        "nofile=?",
        "msgqueue=?",
        "rtprio=?",
        "stack=?",
        "cpu=?",
        "nproc=?",
        "as=?",
        "locks=?",
        "rttime=?",
        "pid=",
        "output=",
        "noheadings",
        "raw",
        "verbose",
        "help",
        "version",
    ],
)
.stops();
const SCRIPT: Grammar = Grammar::new(
    "ac:eE:fI:O:B:T:m:o:qt::hV",
    &[
        "append",
        "command=",
        "return",
        "echo=",
        "flush",
        "force",
        "log-in=",
        "log-out=",
        "log-io=",
        "log-timing=",
        "logging-format=",
        "output-limit=",
        "quiet",
        "timing=?",
        "help",
        "version",
    ],
)
.stops();
const CHRT: Grammar = Grammar::new(
    "abdfiomprRT:P:D:vhV",
    &[
        "all-tasks",
        "batch",
        "deadline",
        "fifo",
        "idle",
        "other",
        "rr",
        "ext",
        "max",
        "pid",
        "reset-on-fork",
        "sched-runtime=",
        "sched-period=",
        "sched-deadline=",
        "verbose",
        "help",
        "version",
    ],
)
.stops();
const IONICE: Grammar = Grammar::new(
    "c:n:p:P:tu:hV",
    &[
        "class=",
        "classdata=",
        "pid=",
        "pgid=",
        "ignore",
        "uid=",
        "help",
        "version",
    ],
)
.stops();
const SETSID: Grammar = Grammar::new("cfwhV", &["ctty", "fork", "wait", "help", "version"]).stops();
const CHROOT: Grammar = Grammar::new(
    "",
    &["userspec=", "groups=", "skip-chdir", "help", "version"],
)
.stops();
const SU: Grammar = Grammar::new(
    "c:flmpPs:g:G:w:hV",
    &[
        "command=",
        "session-command=",
        "fast",
        "login",
        "preserve-environment",
        "pty",
        "shell=",
        "group=",
        "supp-group=",
        "whitelist-environment=",
        "help",
        "version",
    ],
)
.stops();
const RUNUSER: Grammar = Grammar::new(
    "c:flmpPs:g:G:u:w:hV",
    &[
        "command=",
        "session-command=",
        "fast",
        "login",
        "preserve-environment",
        "pty",
        "shell=",
        "group=",
        "supp-group=",
        "user=",
        "whitelist-environment=",
        "help",
        "version",
    ],
)
.stops();

/// Command runners whose options toolrt does not model: every argument that could start a
/// command is a reading.
fn is_runner(prog: &str) -> bool {
    matches!(
        prog,
        "nsenter"
            | "unshare"
            | "strace"
            | "ltrace"
            | "valgrind"
            | "firejail"
            | "bwrap"
            | "proot"
            | "fakeroot"
            | "faketime"
            | "unbuffer"
            | "catchsegv"
            | "torsocks"
            | "torify"
            | "proxychains"
            | "proxychains4"
            | "tsocks"
            | "numactl"
            | "cgexec"
            | "systemd-run"
            | "xvfb-run"
            | "dbus-run-session"
            | "dbus-launch"
            | "pkexec"
            | "sg"
            | "runcon"
            | "chronic"
            | "ifne"
            | "parallel"
            | "entr"
            | "perf"
            | "gdb"
            | "lldb"
            | "caffeinate"
            | "tini"
            | "dumb-init"
            | "cpulimit"
            | "trickle"
            | "eatmydata"
            | "nocache"
            | "ddcmd"
            | "tsp"
            | "ts"
            | "sem"
            | "retry"
            | "with-lock"
    )
}

/// The wrappers and runners toolrt peels, for the documentation and tests.
pub const WRAPPERS: &[&str] = &[
    "timeout", "nice", "nohup", "stdbuf", "env", "time", "command", "builtin", "noglob", "exec",
    "xargs", "sudo", "doas", "watch", "flock", "taskset", "setpriv", "prlimit", "script", "chrt",
    "ionice", "setsid", "chroot", "su", "runuser", "busybox", "toybox",
];

/// Whether `prog` runs its arguments as a command.
pub fn is_wrapper(prog: &str) -> bool {
    WRAPPERS.contains(&prog) || is_runner(prog)
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
    let mut out = Peeled::default();
    let grammar = match prog {
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
        "builtin" | "noglob" => {
            out.strippable = true;
            out.inner.push(if args.is_empty() {
                Inner::Nothing
            } else {
                Inner::At(0)
            });
            return Some(out);
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
            return Some(out);
        }
        p if is_runner(p) => {
            out.problems.push(format!(
                "{prog} runs a command, and its options are not modelled"
            ));
            out.prefix_forbidden = true;
            out.inner = plausible(args, 0);
            if out.inner.is_empty() {
                out.inner.push(Inner::Nothing);
            }
            return Some(out);
        }
        _ => return None,
    };
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
    let first = operand(&p, 0);
    let inner = match prog {
        "timeout" => match operand(&p, 1) {
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
        "env" => env(args, &p, &mut out),
        "xargs" => {
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
        "sudo" => {
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
            } else if p.has(&["-l", "--list", "-v", "--validate", "-k", "-K", "-V"])
                && first.is_none()
            {
                Inner::Nothing
            } else {
                first.map_or(Inner::Nothing, Inner::At)
            }
        }
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
        "flock" => {
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
                match operand(&p, 1) {
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
        "taskset" => {
            if p.has(&["-p", "--pid"]) {
                Inner::Nothing
            } else {
                operand(&p, 1).map_or(Inner::Nothing, Inner::At)
            }
        }
        "prlimit" => {
            if p.has(&["-p", "--pid"]) {
                Inner::Nothing
            } else {
                first.map_or(Inner::Nothing, Inner::At)
            }
        }
        "script" => {
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
        "chrt" => {
            if p.has(&["-p", "--pid", "-m", "--max"]) {
                Inner::Nothing
            } else {
                operand(&p, 1).map_or(Inner::Nothing, Inner::At)
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
            operand(&p, 1).map_or(Inner::Nothing, Inner::At)
        }
        "su" | "runuser" => match p.values(&["-c", "--command", "--session-command"]).last() {
            Some(v) if v.exact => Inner::Script(v.text.clone()),
            Some(_) => Inner::ScriptUnknown,
            None if prog == "runuser" && p.has(&["-u", "--user"]) => {
                first.map_or(Inner::Nothing, Inner::At)
            }
            None => Inner::Nothing,
        },
        _ => Inner::Nothing,
    };
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

#[cfg(test)]
mod tests {
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
    }
}
