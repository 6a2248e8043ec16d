//! jq in the read-only set: its command line as jq 1.6–1.8 read it, and what its filter can
//! reach besides its input.
//!
//! jq parses its own arguments, not with getopt: a word is an option only if it starts with `-`
//! and then a letter or `-` (so `-1` and `-` are operands); long options match exactly (no
//! abbreviations); short options bundle (`-rc`; jq 1.7 found each letter anywhere in the word
//! and rejected repeats, jq 1.8 reads them in order — toolrt reads them in order and rejects
//! letters neither knows); `-L DIR` takes the rest of its word or the next one; `--arg`,
//! `--argjson`, `--rawfile`, `--slurpfile` and `--argfile` take two words; `--args` and
//! `--jsonargs` make the operands after them values instead of files. The first operand is the
//! filter; with `-f`/`--from-file` (a flag, wherever it stands) it names the file holding it.
//!
//! A filter runs inside jq: it cannot write a file or start a program. What it can reach
//! besides its input makes the command not read-only (an allow rule may still allow it):
//! - the environment (`env`, `$ENV`): variables may hold secrets, which would land in the
//!   model's context (`printenv` is not read-only either);
//! - modules (`import`, `include`, `modulemeta`, a `mod::name` call): jq loads `.jq` and `.json`
//!   files from a search path the filter itself can extend with absolute directories, so any
//!   such file on the machine could be read — a read of paths only known when it runs;
//! - a filter from a file (`-f`): toolrt does not read it, so it may do either.
//!
//! A filter that does not lex, or that jq versions read differently, is not understood.
//!
//! jq also loads `~/.jq` (or `~/jq/main.jq`, jq 1.7+) into every filter: definitions there can
//! redefine any builtin. Those paths are protected (SEMANTICS.md §3.6), so the agent cannot
//! write them without the user's approval, and what is there is the user's.

use super::options::Parsed;
use super::programs::{Outcome, check_words, operand_targets, raw_target};
use super::word::Word;
use super::{Cwd, Target};

/// jq's short options without a value (`-L` takes one).
const SHORT_FLAGS: &str = "srjcCMaSRnfehV";

/// jq's long options and how many words follow each.
fn long_arity(name: &str) -> Option<usize> {
    Some(match name {
        "slurp"
        | "raw-output"
        | "raw-output0"
        | "join-output"
        | "compact-output"
        | "color-output"
        | "monochrome-output"
        | "ascii-output"
        | "unbuffered"
        | "sort-keys"
        | "raw-input"
        | "null-input"
        | "from-file"
        | "tab"
        | "seq"
        | "stream"
        | "stream-errors"
        | "exit-status"
        | "args"
        | "jsonargs"
        | "debug-dump-disasm"
        | "debug-trace"
        | "debug-trace=all"
        | "help"
        | "version"
        | "build-configuration" => 0,
        "indent" | "library-path" => 1,
        "arg" | "argjson" | "rawfile" | "slurpfile" | "argfile" => 2,
        _ => return None,
    })
}

/// Whether jq reads `w` as an option: `-` then a letter or `-`.
fn optionish(t: &str) -> bool {
    let mut c = t.chars();
    c.next() == Some('-') && c.next().is_some_and(|c| c == '-' || c.is_alphabetic())
}

/// What operands after the filter are.
#[derive(Clone, Copy, PartialEq)]
enum Rest {
    Files,
    Values,
}

/// `jq ARGS`: the files it reads and whether every part is understood.
pub(crate) fn jq(args: &[Word], cwd: &Cwd) -> Outcome {
    let mut out = Outcome::default();
    let JqArgs {
        filter,
        from_file,
        files,
        dashdash,
    } = jq_options(args, cwd, &mut out);
    let parsed = Parsed {
        dashdash,
        ..Parsed::default()
    };
    check_words(args, &parsed, &files, &mut out);
    let modules = |out: &mut Outcome| {
        out.effects.reads.push(Target {
            path: "(the modules the jq filter loads)".into(),
            exact: false,
            glob: false,
            cwd: cwd.clone(),
            repo_top: false,
        })
    };
    match filter {
        Some(f) if from_file => {
            out.effects.reads.extend(raw_target(&args[f], false, cwd));
            out.not_read_only = Some(
                "the jq filter comes from a file toolrt does not read: it may read the environment or load modules"
                    .into(),
            );
            modules(&mut out);
        }
        Some(f) if args[f].exact => match filter_reach(&args[f].text) {
            Err(why) => out.problem(why),
            Ok(reach) => {
                if let Some(m) = &reach.modules {
                    out.not_read_only =
                        Some(format!("the jq filter loads modules from disk (`{m}`)"));
                    modules(&mut out);
                }
                if reach.env {
                    out.not_read_only = Some(
                        "the jq filter reads the environment (`env`, `$ENV`), which may hold secrets"
                            .into(),
                    );
                }
            }
        },
        Some(_) => {}
        // No filter: jq runs `.` when its input or output is not a terminal.
        None if from_file => out.problem("jq -f names no file"),
        None => {}
    }
    out.effects.reads.extend(operand_targets(args, &files, cwd));
    out
}

/// Where jq's filter and files are among its arguments.
struct JqArgs {
    /// The filter (or, with `-f`, the file holding it).
    filter: Option<usize>,
    from_file: bool,
    /// Input files.
    files: Vec<usize>,
    /// The `--` that ends the options, if any.
    dashdash: Option<usize>,
}

/// jq's options: the files they read or list, and where the filter and the input files are.
fn jq_options(args: &[Word], cwd: &Cwd, out: &mut Outcome) -> JqArgs {
    let mut filter: Option<usize> = None;
    let mut from_file = false;
    let mut rest = Rest::Files;
    let mut done = false;
    let mut dashdash = None;
    let mut files: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if done || !optionish(t) {
            if filter.is_none() {
                filter = Some(i);
            } else if rest == Rest::Files {
                files.push(i);
            }
            i += 1;
            continue;
        }
        if t.chars().nth(1).is_some_and(|c| !c.is_ascii()) {
            // Whether jq sees a letter there depends on the locale.
            out.problem(format!(
                "jq: `{t}` is an option or not depending on the locale"
            ));
            i += 1;
            continue;
        }
        if t == "--" {
            done = true;
            dashdash = Some(i);
            i += 1;
            continue;
        }
        if let Some(name) = t.strip_prefix("--") {
            match long_arity(name) {
                None if name == "run-tests" => {
                    out.problem("jq --run-tests runs the tests of a file");
                }
                None => out.problem(format!("jq: unknown option `--{name}`")),
                Some(n) => {
                    if i + n >= args.len() {
                        out.problem(format!("jq --{name} is missing its value"));
                    }
                    match name {
                        "from-file" => from_file = true,
                        "args" | "jsonargs" => rest = Rest::Values,
                        "library-path" => {
                            if let Some(w) = args.get(i + 1) {
                                out.effects.lists.extend(raw_target(w, false, cwd));
                            }
                        }
                        "rawfile" | "slurpfile" | "argfile" => {
                            if let Some(w) = args.get(i + 2) {
                                out.effects.reads.extend(raw_target(w, false, cwd));
                            }
                        }
                        _ => {}
                    }
                    i += n;
                }
            }
            i += 1;
            continue;
        }
        for (k, c) in t[1..].char_indices() {
            if c == 'L' {
                let attached = &t[1 + k + 1..];
                if !attached.is_empty() {
                    let w = Word {
                        text: attached.to_string(),
                        ..args[i].clone()
                    };
                    out.effects.lists.extend(raw_target(&w, true, cwd));
                } else if let Some(w) = args.get(i + 1) {
                    out.effects.lists.extend(raw_target(w, false, cwd));
                    i += 1;
                } else {
                    out.problem("jq -L is missing its value");
                }
                break;
            }
            if !SHORT_FLAGS.contains(c) {
                out.problem(format!("jq: unknown option `-{c}`"));
                break;
            }
            if c == 'f' {
                from_file = true;
            }
        }
        i += 1;
    }
    JqArgs {
        filter,
        from_file,
        files,
        dashdash,
    }
}

/// What a filter reaches besides its input.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Reach {
    /// It reads the environment (`env`, `$ENV`).
    pub(crate) env: bool,
    /// It loads modules: the first construct that does.
    pub(crate) modules: Option<String>,
}

/// What a jq filter reaches besides its input: the environment, modules. Read as jq's lexer
/// reads it — strings with `\( … )` interpolation, `#` comments, `.name` fields, identifiers —
/// so `.env` (a field) and `"env"` (a string) reach nothing while `env`, `$ENV`, `"\(env)"` do.
/// `Err` where jq versions read the text differently (a comment holding `\` or a carriage
/// return) or it does not lex: the filter is not understood.
pub(crate) fn filter_reach(src: &str) -> Result<Reach, String> {
    let mut reach = Reach::default();
    let b = src.as_bytes();
    // Open brackets; `I` is a string interpolation, closed by `)`.
    let mut open: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut i = 0;
    loop {
        if in_string {
            let Some(&c) = b.get(i) else {
                return Err("the jq filter has an unterminated string".into());
            };
            match c {
                b'"' => {
                    in_string = false;
                    i += 1;
                }
                b'\\' => match b.get(i + 1) {
                    Some(b'(') => {
                        open.push(b'I');
                        in_string = false;
                        i += 2;
                    }
                    Some(_) => i += 2,
                    None => return Err("the jq filter has an unterminated string".into()),
                },
                _ => i += 1,
            }
            continue;
        }
        let Some(&c) = b.get(i) else { break };
        match c {
            b'#' => i = comment_end(b, i)?,
            b'"' => {
                in_string = true;
                i += 1;
            }
            b'(' | b'[' | b'{' => {
                open.push(c);
                i += 1;
            }
            b')' | b']' | b'}' => {
                match (open.pop(), c) {
                    (Some(b'I'), b')') => in_string = true,
                    (Some(b'('), b')') | (Some(b'['), b']') | (Some(b'{'), b'}') => {}
                    _ => return Err("the jq filter's brackets do not match".into()),
                }
                i += 1;
            }
            b'.' => {
                i += 1;
                match b.get(i) {
                    // `.name`: a field, whatever its name.
                    Some(&n) if ident_start(n) => {
                        while b.get(i).is_some_and(|&c| ident(c)) {
                            i += 1;
                        }
                    }
                    Some(n) if n.is_ascii_digit() => i = number_end(b, i),
                    Some(b'.') => i += 1,
                    _ => {}
                }
            }
            b'0'..=b'9' => i = number_end(b, i),
            b'@' => {
                // A format (`@sh`, `@base64d`): not an identifier.
                i += 1;
                while b.get(i).is_some_and(|&c| ident(c)) {
                    i += 1;
                }
            }
            c if ident_start(c) => {
                // `([a-zA-Z_][a-zA-Z_0-9]*::)*[a-zA-Z_][a-zA-Z_0-9]*`
                let start = i;
                i = identifier_end(b, i);
                let name = &src[start..i];
                match name {
                    "env" | "ENV" => reach.env = true,
                    "import" | "include" | "modulemeta" => {
                        reach.modules.get_or_insert_with(|| name.to_string());
                    }
                    _ if name.contains("::") => {
                        reach.modules.get_or_insert_with(|| name.to_string());
                    }
                    _ => {}
                }
            }
            _ => i += 1,
        }
    }
    if !open.is_empty() {
        return Err("the jq filter's brackets do not match".into());
    }
    Ok(reach)
}

fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The end of a comment starting at `i`. jq 1.6 ends a comment at `\r` too, jq 1.8 continues
/// one after `\` and a newline: a comment with either is read differently by different
/// versions, and is an error here.
fn comment_end(b: &[u8], mut i: usize) -> Result<usize, String> {
    while let Some(&c) = b.get(i)
        && c != b'\n'
    {
        if c == b'\\' || c == b'\r' {
            return Err("the jq filter has a comment that jq versions read differently".into());
        }
        i += 1;
    }
    Ok(i)
}

/// The end of an identifier starting at `i`: `([a-zA-Z_][a-zA-Z_0-9]*::)*[a-zA-Z_][a-zA-Z_0-9]*`.
fn identifier_end(b: &[u8], mut i: usize) -> usize {
    loop {
        while b.get(i).is_some_and(|&c| ident(c)) {
            i += 1;
        }
        if b.get(i) == Some(&b':')
            && b.get(i + 1) == Some(&b':')
            && b.get(i + 2).is_some_and(|&c| ident_start(c))
        {
            i += 2;
            continue;
        }
        return i;
    }
}

/// The end of a number starting at `i` (after its `.` for `.5`):
/// `[0-9]*(\.[0-9]*)?([eE][+-]?[0-9]+)?`.
fn number_end(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if b.get(j).is_some_and(u8::is_ascii_digit) {
            while b.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
            i = j;
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(t: &[super::super::Target]) -> Vec<&str> {
        t.iter().map(|t| t.path.as_str()).collect()
    }

    #[test]
    fn command_line_table() {
        // (words, understood, read-only, files read, paths listed)
        type Row<'a> = (&'a [&'a str], bool, bool, &'a [&'a str], &'a [&'a str]);
        let rows: &[Row] = &[
            (&[".", "a.json"], true, true, &["a.json"], &[]),
            (
                &["-r", ".name", "a.json", "b.json"],
                true,
                true,
                &["a.json", "b.json"],
                &[],
            ),
            (&["-rc", ".x", "a"], true, true, &["a"], &[]),
            (&["-sRnjaSCMe", ".", "a"], true, true, &["a"], &[]),
            (&["--raw-output0", ".", "a"], true, true, &["a"], &[]),
            (&[".x", "a", "-r"], true, true, &["a"], &[]),
            (&[], true, true, &[], &[]),
            (&["-n", "1+1"], true, true, &[], &[]),
            (&[".", "-"], true, true, &[], &[]),
            (&["--indent", "4", ".", "a"], true, true, &["a"], &[]),
            (
                &["--tab", "--seq", "--stream", ".", "a"],
                true,
                true,
                &["a"],
                &[],
            ),
            (
                &["--stream-errors", "--unbuffered", "-e", ".", "a"],
                true,
                true,
                &["a"],
                &[],
            ),
            (
                &["--arg", "n", "v", ".x == $n", "a"],
                true,
                true,
                &["a"],
                &[],
            ),
            (
                &["--argjson", "n", "{}", ".x", "a"],
                true,
                true,
                &["a"],
                &[],
            ),
            (
                &["--rawfile", "t", "notes.txt", "-n", "$t"],
                true,
                true,
                &["notes.txt"],
                &[],
            ),
            (
                &["--slurpfile", "d", "d.json", "-n", "$d"],
                true,
                true,
                &["d.json"],
                &[],
            ),
            // jq opens `-` as a file here, not stdin
            (
                &["--rawfile", "t", "-", "-n", "$t"],
                true,
                true,
                &["-"],
                &[],
            ),
            (
                &["--argfile", "d", "d.json", "-n", "$d"],
                true,
                true,
                &["d.json"],
                &[],
            ),
            // --args, --jsonargs: the operands after them are values, not files
            (&["-n", "$ARGS", "--args", "a", "b"], true, true, &[], &[]),
            (&[".", "f", "--args", "a", "b"], true, true, &["f"], &[]),
            (
                &["-n", "$ARGS", "--jsonargs", "1", "2"],
                true,
                true,
                &[],
                &[],
            ),
            // `-1` and `-` are operands; `--` ends the options
            (&["-1"], true, true, &[], &[]),
            (&["--", "-r", "f"], true, true, &["f"], &[]),
            // -L DIR: listed; the filter cannot use it without import
            (&["-L", "lib", ".", "a"], true, true, &["a"], &["lib"]),
            (&["-Llib", ".", "a"], true, true, &["a"], &["lib"]),
            (&["-rL", "lib", ".", "a"], true, true, &["a"], &["lib"]),
            (&["-L~/lib", "."], true, true, &[], &["./~/lib"]),
            (
                &["--library-path", "lib", ".", "a"],
                true,
                true,
                &["a"],
                &["lib"],
            ),
            // -f: a flag; the first operand is the filter's file, which toolrt does not read
            (
                &["-f", "prog.jq", "a"],
                true,
                false,
                &["prog.jq", M, "a"],
                &[],
            ),
            (&["a", "-f", "b"], true, false, &["a", M, "b"], &[]),
            (
                &["-rf", "prog.jq", "a"],
                true,
                false,
                &["prog.jq", M, "a"],
                &[],
            ),
            (
                &["--from-file", "prog.jq"],
                true,
                false,
                &["prog.jq", M],
                &[],
            ),
            (&["-f"], false, true, &[], &[]),
            // unknown, abbreviated or malformed options
            (&["--raw", ".", "a"], false, true, &["a"], &[]),
            (&["--indent=2", ".", "a"], false, true, &["a"], &[]),
            (&["-x", ".", "a"], false, true, &["a"], &[]),
            (&["-rx", ".", "a"], false, true, &["a"], &[]),
            (&["--run-tests", "t"], false, true, &[], &[]),
            (&["--arg", "n"], false, true, &[], &[]),
            (&["--rawfile", "t"], false, true, &[], &[]),
            (&["-L"], false, true, &[], &[]),
            (&["-\u{e9}", ".", "a"], false, true, &["a"], &[]),
            // what the filter reaches
            (&["-n", "env"], true, false, &[], &[]),
            (&["$ENV.HOME", "a"], true, false, &["a"], &[]),
            (&["import \"x\" as x; .", "a"], true, false, &[M, "a"], &[]),
            (
                &["-L", "/tmp/evil", "include \"x\"; .", "a"],
                true,
                false,
                &[M, "a"],
                &["/tmp/evil"],
            ),
            (&[".env", "a"], true, true, &["a"], &[]),
            (&["\"unterminated", "a"], false, true, &["a"], &[]),
            // a glob is fine as a file, not as the filter or a value
            (&["--", ".", "*.json"], true, true, &["*.json"], &[]),
            // a match named `--rawfile…` would be an option
            (&[".", "*.json"], false, true, &["*.json"], &[]),
            (&[".[]", "a"], false, true, &["a"], &[]),
            (&["-n", "$ARGS", "--args", "*.json"], false, true, &[], &[]),
        ];
        for (args, ok, read_only, reads, lists) in rows {
            let w: Vec<Word> = args.iter().map(|a| Word::plain(a)).collect();
            let o = jq(&w, &Cwd::Session);
            assert_eq!(o.problems.is_empty(), *ok, "{args:?}: {:?}", o.problems);
            assert_eq!(o.not_read_only.is_none(), *read_only, "{args:?}");
            assert_eq!(paths(&o.effects.reads), *reads, "{args:?}");
            assert_eq!(paths(&o.effects.lists), *lists, "{args:?}");
            assert!(o.effects.writes.is_empty() && o.effects.redirects.is_empty());
            assert!(o.effects.reads.iter().all(|t| t.exact == (t.path != M)));
        }
    }

    const M: &str = "(the modules the jq filter loads)";

    #[test]
    fn filter_table() {
        #[derive(Debug, PartialEq)]
        enum R {
            Nothing,
            Env,
            Modules,
            Both,
            Unreadable,
        }
        use R::*;
        for (f, want) in [
            (".", Nothing),
            (".name", Nothing),
            (".env", Nothing),
            (".foo.env.bar", Nothing),
            (".[\"env\"]", Nothing),
            ("select(.type == \"env\")", Nothing),
            ("\"import\"", Nothing),
            ("\"# not a comment\" | env", Env),
            ("map(.x) | add", Nothing),
            ("\"\\(.a) and \\(.b)\"", Nothing),
            ("\"\\(env.HOME)\"", Env),
            ("\"\\(\"\\(env)\")\"", Env),
            ("\"\\(\"nested \\\"quote\")\" | env", Env),
            ("\"a \\\" b\" | .x", Nothing),
            ("@sh \"echo \\(.x)\"", Nothing),
            ("@base64d", Nothing),
            ("@env", Nothing),
            ("input_filename, $__loc__, input, [inputs]", Nothing),
            ("debug | stderr | halt_error", Nothing),
            ("env", Env),
            ("env.PATH", Env),
            ("$ENV", Env),
            ("$ENV.AWS_SECRET_ACCESS_KEY", Env),
            ("$ ENV", Env),
            ("{$ENV}", Env),
            ("{env}", Env),
            (". as $x | ENV", Env),
            ("1 + env", Env),
            ("1env", Env),
            ("1.env", Env),
            ("1e5 | env", Env),
            ("..env", Env),
            ("import \"a\" as a; a::f", Modules),
            ("include \"a\"; .", Modules),
            ("import \"a\" as $a; $a | env", Both),
            ("modulemeta", Modules),
            ("a::f", Modules),
            ("# comment\n.x", Nothing),
            ("# env\n.x", Nothing),
            ("# comment \\\nenv", Unreadable),
            ("# comment\r env", Unreadable),
            ("\"unterminated", Unreadable),
            ("\"ends in a backslash\\", Unreadable),
            ("(.a", Unreadable),
            (".a)", Unreadable),
            ("[.a}", Unreadable),
            ("\"\\(.a\"", Unreadable),
            ("def f: .; f | .x", Nothing),
            ("reduce .[] as $i (0; . + $i)", Nothing),
            ("1.5e3, .5, 2E-1", Nothing),
        ] {
            let got = match filter_reach(f) {
                Err(_) => Unreadable,
                Ok(Reach {
                    env: true,
                    modules: Some(_),
                }) => Both,
                Ok(Reach { env: true, .. }) => Env,
                Ok(Reach {
                    modules: Some(_), ..
                }) => Modules,
                Ok(_) => Nothing,
            };
            assert_eq!(got, want, "{f:?}");
        }
    }
}
