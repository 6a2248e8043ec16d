//! The program tables: the read-only set (§3.3) and the acceptEdits file commands, each with
//! its real option grammar (GNU coreutils 9, grep 3, diffutils 3, findutils 4.9, bash 5
//! builtins) and which operands and option values are paths it reads, lists or writes; plus a
//! generous list of other programs that read or write files, for deny rules.
//!
//! A program missing from the read-only table is not read-only. An option missing from a
//! program's grammar makes the command not understood (never auto-allowed). docs/SEMANTICS.md
//! lists the tables.

mod command_options;
mod deny;
mod derived;
mod file_edit;
mod find;
mod read_only;
mod sed;
#[cfg(test)]
mod tests;

pub(crate) use command_options::{CommandOptions, command_options, git_command_options};
pub(crate) use deny::deny_effects;
pub(crate) use derived::{derived, derives_names};
pub(crate) use file_edit::file_edit;
pub(crate) use find::{find, removes_found};
pub(crate) use read_only::read_only;

use super::options::{Parsed, Value};
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
        } else if w.glob
            && !parsed.harmless
            && parsed.dashdash.is_none_or(|d| d > i)
            && may_expand_to(&w.text, &['-'])
        {
            // bash hands the matches over as words: one named `--output=x` is an option.
            out.problem(format!(
                "`{}` may expand to a file name the program reads as an option (put `--` before it)",
                w.text
            ));
        }
    }
}

/// Whether a glob word could expand to a word starting with one of `starts`: its first
/// character is a glob character (a bracket is not looked into) or one of them.
pub(crate) fn may_expand_to(text: &str, starts: &[char]) -> bool {
    text.chars()
        .next()
        .is_some_and(|c| matches!(c, '*' | '?' | '[') || starts.contains(&c))
}

pub(crate) fn operand_targets(args: &[Word], idx: &[usize], cwd: &Cwd) -> Vec<Target> {
    idx.iter().filter_map(|&i| target(&args[i], cwd)).collect()
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
