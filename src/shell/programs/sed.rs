//! `sed`: its option grammar, its scripts (only commands whose effects toolrt understands) and
//! the files it reads or edits in place.

use super::super::Cwd;
use super::super::Target;
use super::super::options::{self, Grammar, Value};
use super::super::word::Word;
use super::{Outcome, check_words, operand_targets, value_target};

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

pub(super) fn sed(args: &[Word], cwd: &Cwd) -> Outcome {
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
    let mut s = Script {
        b: script.chars().collect(),
        i: 0,
    };
    while s.i < s.b.len() {
        s.skip_ws();
        let Some(&c) = s.b.get(s.i) else { break };
        if matches!(c, ';' | '\n' | '}') {
            s.i += 1;
            continue;
        }
        if c == '#' {
            s.skip_until(&['\n']);
            continue;
        }
        s.addresses()?;
        s.skip_ws();
        while s.b.get(s.i) == Some(&'!') {
            s.i += 1;
            s.skip_ws();
        }
        let Some(&c) = s.b.get(s.i) else { break };
        s.i += 1;
        s.command(c)?;
    }
    Ok(())
}

/// A sed script being read: its characters and the position.
struct Script {
    b: Vec<char>,
    i: usize,
}

impl Script {
    fn skip_ws(&mut self) {
        while self.i < self.b.len() && (self.b[self.i] == ' ' || self.b[self.i] == '\t') {
            self.i += 1;
        }
    }

    fn skip_digits(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
            self.i += 1;
        }
    }

    /// Moves to the next of `ends` (or the end of the script).
    fn skip_until(&mut self, ends: &[char]) {
        while self.i < self.b.len() && !ends.contains(&self.b[self.i]) {
            self.i += 1;
        }
    }

    /// Reads a delimited section starting after the delimiter at b[i-1]; returns the index after
    /// the closing delimiter.
    fn section(&self, mut i: usize, d: char) -> Option<usize> {
        let b = &self.b;
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
    }

    /// A regex address's `I` and `M` flags.
    fn skip_regex_flags(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], 'I' | 'M') {
            self.i += 1;
        }
    }

    /// Addresses: numbers, $, /re/, \cREc, first~step, addr,addr, +N, ~N.
    fn addresses(&mut self) -> Result<(), String> {
        for _ in 0..2 {
            self.skip_ws();
            let (b, i) = (&self.b, self.i);
            if i < b.len() && (b[i].is_ascii_digit() || b[i] == '$') {
                while self.i < self.b.len()
                    && (self.b[self.i].is_ascii_digit() || matches!(self.b[self.i], '$' | '~'))
                {
                    self.i += 1;
                }
            } else if i < b.len() && b[i] == '/' {
                self.i = self
                    .section(i + 1, '/')
                    .ok_or("an unterminated sed address")?;
                self.skip_regex_flags();
            } else if i + 1 < b.len() && b[i] == '\\' {
                let d = b[i + 1];
                self.i = self
                    .section(i + 2, d)
                    .ok_or("an unterminated sed address")?;
                self.skip_regex_flags();
            } else if i < b.len() && matches!(b[i], '+' | '~') {
                self.i += 1;
                self.skip_digits();
            }
            self.skip_ws();
            if self.b.get(self.i) == Some(&',') {
                self.i += 1;
                continue;
            }
            break;
        }
        Ok(())
    }

    /// One command `c` (already read) and its arguments.
    fn command(&mut self, c: char) -> Result<(), String> {
        match c {
            '{' => {}
            'p' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' | 'P' | 'z' | 'F' => {}
            'l' | 'q' | 'Q' | 'L' => {
                self.skip_ws();
                self.skip_digits();
            }
            ':' | 'b' | 't' | 'T' | 'v' => self.skip_until(&[';', '\n']),
            'a' | 'i' | 'c' => {
                // Text to the end of the line (a trailing backslash continues it).
                while self.i < self.b.len() && self.b[self.i] != '\n' {
                    if self.b[self.i] == '\\' {
                        self.i += 1;
                    }
                    self.i += 1;
                }
            }
            's' => self.substitute()?,
            'y' => {
                let d = *self.b.get(self.i).ok_or("an unterminated y command")?;
                self.i = self
                    .section(self.i + 1, d)
                    .ok_or("an unterminated y command")?;
                self.i = self.section(self.i, d).ok_or("an unterminated y command")?;
            }
            'e' => return Err("the sed e command runs a command".into()),
            'w' | 'W' => return Err("the sed w command writes a file".into()),
            'r' | 'R' => return Err("the sed r command reads a file".into()),
            other => return Err(format!("an unknown sed command `{other}`")),
        }
        Ok(())
    }

    /// `s/re/replacement/flags`: only flags that neither run nor write anything.
    fn substitute(&mut self) -> Result<(), String> {
        let d = *self.b.get(self.i).ok_or("an unterminated s command")?;
        if d == '\n' || d == '\\' {
            return Err("an unusual s delimiter".into());
        }
        self.i = self
            .section(self.i + 1, d)
            .ok_or("an unterminated s command")?;
        self.i = self.section(self.i, d).ok_or("an unterminated s command")?;
        while self.i < self.b.len()
            && !matches!(self.b[self.i], ';' | '\n' | '}' | ' ' | '\t' | '#')
        {
            match self.b[self.i] {
                'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => self.i += 1,
                'e' => return Err("the s///e flag runs the result as a command".into()),
                'w' => return Err("the s///w flag writes a file".into()),
                other => return Err(format!("an unknown s flag `{other}`")),
            }
        }
        Ok(())
    }
}
