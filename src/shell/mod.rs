//! Shell analysis: what a Bash command would run, read and write, and whether toolrt understands
//! every part of it.
//!
//! The stance is "understood or not auto-allowed": a command may be auto-allowed (the read-only
//! set, a mode, an allow rule) only if every part of it lies in the understood subset —
//! words whose value is known after quote removal, the operators `&& || ; | |& &` and newlines,
//! redirects to literal paths, programs whose options are parsed by their real grammar (tables
//! in [`programs`] and [`wrappers`]). Anything else carries a reason in [`Command::unknown`] and
//! may still be denied or asked, never auto-allowed. Code toolrt cannot see at all (arithmetic on
//! variables, `eval` of an expansion, aliases, a shell reading its script from stdin, …) is
//! marked [`Command::hidden`]: no rule can be checked against it.
//!
//! Nothing here looks at the file system; paths are resolved and checked by the permission
//! engine at decision time ([`paths`], [`git`] help with that).
//!
//! # Layout
//! - `parse`: brush-parser, the fast path for plain words, the walk over the syntax tree
//!   (working directory, environment changes, nested scripts).
//! - `word`: quote removal and what an expansion means (exact, glob, hidden code).
//! - `options`: the getopt-style option parser the tables use.
//! - [`programs`]: the read-only programs, the acceptEdits file commands, file readers;
//!   `jq`: jq's own command line and what its filter can reach.
//! - [`wrappers`]: programs that run their arguments as a command.
//! - [`git`]: git's global options and read-only subcommands; [`gitconfig`]: whether a git
//!   command would run code from configuration.
//! - `recent`: the last few commands' analyses, so a call's command is walked once.
//! - [`paths`]: special paths (`/dev/null`, `/dev/tcp`, `/proc/self/cwd`, …) and glob expansion.

pub(crate) mod git;
pub(crate) mod gitconfig;
mod jq;
mod options;
mod parse;
pub(crate) mod paths;
pub(crate) mod programs;
mod recent;
mod word;
pub(crate) mod wrappers;

#[cfg(test)]
mod tests;

/// Where the working directory of a command may be, relative to the session's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Cwd {
    /// The session's working directory.
    #[default]
    Session,
    /// One of these directories: each is absolute, `~`-relative or relative to the session's
    /// working directory ("." is the session's own).
    OneOf(Vec<String>),
    /// Not known before the command runs (`cd $X`, `cd -`, a `cd` inside a loop, …).
    Unknown,
}

/// Adds to `out` (each once) where `cd dir` leads from each of `bases`: `dir` itself when it is
/// absolute or `~`-relative, else `dir` below the base.
fn push_joined(out: &mut Vec<String>, bases: Vec<String>, dir: &str) {
    for base in bases {
        let joined = if dir.starts_with('/') || dir == "~" || dir.starts_with("~/") {
            dir.to_string()
        } else {
            format!("{base}/{dir}")
        };
        if !out.contains(&joined) {
            out.push(joined);
        }
    }
}

impl Cwd {
    /// The directories after `cd dir` from any of these (a failing `cd` leaves the old one, so
    /// both stay possible).
    pub(crate) fn after_cd(&self, dir: &str) -> Cwd {
        if dir.starts_with("/proc/") || dir.starts_with("/dev/") {
            // `cd /proc/self/cwd` is the shell's own cwd seen through a link: not followed.
            return Cwd::Unknown;
        }
        let mut out: Vec<String> = match self {
            Cwd::Unknown => return Cwd::Unknown,
            Cwd::Session => vec![".".into()],
            Cwd::OneOf(v) => v.clone(),
        };
        let before = out.clone();
        push_joined(&mut out, before, dir);
        if out.len() > 8 {
            return Cwd::Unknown;
        }
        Cwd::OneOf(out)
    }

    /// The directories after `cd dir` succeeded.
    pub(crate) fn after_cd_succeeded(&self, dir: &str) -> Cwd {
        if dir.starts_with("/proc/") || dir.starts_with("/dev/") {
            return Cwd::Unknown;
        }
        let mut out = Vec::new();
        push_joined(&mut out, self.dirs(), dir);
        if out.is_empty() || out.len() > 8 {
            return Cwd::Unknown;
        }
        Cwd::OneOf(out)
    }

    /// Both sets of directories (a loop body may or may not have changed directory).
    pub(crate) fn union(&self, other: &Cwd) -> Cwd {
        match (self, other) {
            (Cwd::Unknown, _) | (_, Cwd::Unknown) => Cwd::Unknown,
            (Cwd::Session, Cwd::Session) => Cwd::Session,
            _ => {
                let mut v = self.dirs();
                for d in other.dirs() {
                    if !v.contains(&d) {
                        v.push(d);
                    }
                }
                Cwd::OneOf(v)
            }
        }
    }

    /// The directories as strings ("." for the session's own); empty for unknown.
    pub(crate) fn dirs(&self) -> Vec<String> {
        match self {
            Cwd::Session => vec![".".into()],
            Cwd::OneOf(v) => v.clone(),
            Cwd::Unknown => Vec::new(),
        }
    }
}

/// A path a command touches, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The path after quote removal (may start with `~/`, hold glob characters, or show an
    /// expansion as written when not exact).
    pub path: String,
    /// The value is known exactly (no expansion; globs are flagged separately).
    pub exact: bool,
    /// Holds unquoted glob characters: the shell expands it to the matching paths.
    pub glob: bool,
    /// The working directories it is relative to.
    pub cwd: Cwd,
    /// Relative to the top of the git repository (a `REV:path` operand), not the cwd.
    pub repo_top: bool,
}

/// A network endpoint a command opens through the shell itself (`/dev/tcp/host/port`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// The host, or `None` when it is only known when the command runs.
    pub host: Option<String>,
    /// `tcp` or `udp`.
    pub proto: &'static str,
    /// The port as written.
    pub port: String,
}

/// Where a read-only git command runs, for the configuration check at decision time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GitRun {
    /// The directories git starts in (the command's cwd with `-C` applied).
    pub dirs: Cwd,
    /// The subcommand shows file contents (diffs, blobs, blame, grep): with Read deny rules the
    /// whole repository is a recursive read.
    pub shows_content: bool,
    /// Pathspecs that limit what it shows (empty: the whole repository).
    pub pathspecs: Vec<Target>,
}

/// What a command does with the file system and the network, as far as toolrt can tell.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Effects {
    /// Files whose content is read.
    pub reads: Vec<Target>,
    /// Paths whose names or metadata are read (`ls`, `stat`, `cd`, `find` start points).
    pub lists: Vec<Target>,
    /// Directories whose files' content is read recursively (`grep -r`, `diff -r`).
    pub trees: Vec<Target>,
    /// Files a program writes or creates (its operands and option values).
    pub writes: Vec<Target>,
    /// Files written as a command's output, judged like the Write tool (an Edit allow rule, or
    /// acceptEdits inside the workspace): the shell's own redirects (`>`, `>>`, `&>`, …) and the
    /// output files of read-only programs (`sort -o FILE`, `sort -T DIR`'s temporary files).
    pub redirects: Vec<Target>,
    /// Paths removed (`rm`, `rmdir`, `find -delete`, `xargs rm`, …) for the critical-path check.
    pub removes: Vec<Target>,
    /// Paths renamed (`mv` sources): a rule on a file below one no longer holds for it.
    pub moves: Vec<Target>,
    /// Network endpoints opened by the shell.
    pub network: Vec<Endpoint>,
    /// A network endpoint that is only known when the command runs (a dynamic redirect target).
    pub network_unknown: bool,
}

impl Effects {
    fn extend(&mut self, other: Effects) {
        self.reads.extend(other.reads);
        self.lists.extend(other.lists);
        self.trees.extend(other.trees);
        self.writes.extend(other.writes);
        self.redirects.extend(other.redirects);
        self.removes.extend(other.removes);
        self.moves.extend(other.moves);
        self.network.extend(other.network);
        self.network_unknown |= other.network_unknown;
    }
}

/// What kind of command a part is, for the built-in defaults and the modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Kind {
    /// Anything else: needs an allow rule (or bypass).
    #[default]
    Other,
    /// In the read-only set (§3.3) with every option understood.
    ReadOnly,
    /// An acceptEdits file command (`mkdir touch rm rmdir mv cp sed`) with every option
    /// understood; its paths are in [`Effects::writes`].
    FileEdit,
    /// A shell or `eval` whose script is analysed into commands of its own: needs no allow of
    /// its own.
    Transparent,
}

/// How a command came to be in the analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Origin {
    /// Written in the command itself (or a script toolrt parsed: `sh -c`, `eval`, `$( )`, …).
    #[default]
    Script,
    /// A reading only: the value of a variable that might be run as a command
    /// (`GIT_PAGER='…' git log`), or a possible start of an inner command past an unknown
    /// wrapper option. Deny and ask rules match it; it needs no allow of its own.
    Reading,
    /// Run by the command before it (`find -exec`), whose own allow covers it; deny and ask
    /// rules match it.
    RunBy,
}

/// One simple command the script would run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Command {
    /// As shown to humans: words after quote removal, joined by spaces.
    pub display: String,
    /// Texts deny and ask rules match: past assignments, through every wrapper, absolute
    /// program paths also as their basename.
    pub deny_views: Vec<String>,
    /// Readings with parts only known when the command runs (`git $X push`): a deny or ask
    /// rule that could match one of them makes the command uncertain.
    pub open_views: Vec<Vec<word::Part>>,
    /// The text allow rules match (past safe assignments and the strippable wrappers); `None`
    /// when the command is not understood.
    pub allow_view: Option<String>,
    /// Why the command cannot be auto-allowed; empty when it is understood.
    pub unknown: Vec<String>,
    /// It may run code toolrt cannot see, and why: no rule can be checked against that code.
    pub hidden: Option<String>,
    /// Understood, but a read-only program used in a way that is not read-only, and how
    /// (`jq` reading the environment): an allow rule may still allow it. For explanations.
    pub not_read_only: Option<String>,
    /// What kind of command it is.
    pub kind: Kind,
    /// File system and network effects.
    pub effects: Effects,
    /// A read-only git command (for the configuration check).
    pub git: Option<GitRun>,
    /// `find -exec/-delete` or an exec wrapper (`watch`, `setsid`, …): never allowed by a
    /// prefix rule.
    pub prefix_forbidden: bool,
    /// How it came to be here.
    pub origin: Origin,
    /// The program after every wrapper is peeled (for messages).
    pub program: String,
    /// The words after quote removal, for the round-trip property test.
    #[cfg(test)]
    pub(crate) words: Vec<String>,
}

impl Command {
    /// Whether toolrt understands every part of it.
    pub(crate) fn understood(&self) -> bool {
        self.unknown.is_empty() && self.hidden.is_none()
    }

    pub(crate) fn not_understood(&mut self, why: impl Into<String>) {
        let why = why.into();
        if !self.unknown.contains(&why) {
            self.unknown.push(why);
        }
    }

    pub(crate) fn hide(&mut self, why: impl Into<String>) {
        if self.hidden.is_none() {
            self.hidden = Some(why.into());
        }
    }
}

/// The analysis of one command string.
#[derive(Debug, Clone, Default)]
pub(crate) struct Analysis {
    /// Every simple command, in source order (nested ones after the word that holds them).
    pub commands: Vec<Command>,
    /// The command (or a script inside it) does not parse: why.
    pub parse_error: Option<String>,
}

impl Analysis {
    /// Whether every part is understood and the whole parses.
    pub(crate) fn understood(&self) -> bool {
        self.parse_error.is_none() && self.commands.iter().all(Command::understood)
    }

    /// Whether some part may run code toolrt cannot see (or the command does not parse).
    #[cfg(test)]
    pub(crate) fn hidden(&self) -> bool {
        self.parse_error.is_some() || self.commands.iter().any(|c| c.hidden.is_some())
    }
}

/// Parses and analyses a command (or finds it analysed: the last few commands' analyses are
/// kept, see `recent`).
pub(crate) fn analyse(command: &str) -> std::sync::Arc<Analysis> {
    recent::table().analysis(command, parse::analyse)
}

/// Whether a command may run concurrently with others: it parses, every part is understood and
/// read-only (or a shell whose script is), and nothing is written.
pub(crate) fn is_concurrency_safe(command: &str) -> bool {
    let a = analyse(command);
    a.understood()
        && !a.commands.is_empty()
        && a.commands.iter().all(|c| {
            c.origin == Origin::Reading
                || (matches!(c.kind, Kind::ReadOnly | Kind::Transparent)
                    && c.effects.writes.is_empty()
                    && c.effects.redirects.is_empty()
                    && c.effects.removes.is_empty()
                    && c.effects.network.is_empty())
        })
}

pub(crate) use word::Part;
