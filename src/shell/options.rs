//! A getopt-style option parser driven by a program's grammar: bundled short options, values
//! attached (`-n5`, `--lines=5`) or separate (`-n 5`, `--lines 5`), optional values (attached
//! only, as getopt has them), `--` and, unless the program stops at its first operand, options
//! after operands (GNU permutation).
//!
//! Long options match **exactly** unless the grammar says its table lists every long option the
//! program has ([`Grammar::abbreviations`]). GNU programs also accept unique prefixes (`--recur`
//! for `--recursive`); without a complete table toolrt does not resolve them, so an abbreviation
//! is an unknown option and the command is not understood. That is safe whatever the table
//! lists: a word can only ever be read as the option of the same name. With a complete table,
//! prefixes resolve as getopt_long resolves them: an exact name wins, else the one option the
//! prefix starts, and a prefix of several is ambiguous (the program refuses it: not understood).

use super::word::Word;

/// How an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arity {
    /// No value.
    Flag,
    /// A value, attached or the next word.
    Required,
    /// A value only when attached (`-iSUFFIX`, `--color=always`).
    Optional,
}

/// A program's option grammar.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Grammar {
    /// getopt's option string: a letter, `:` after it for a required value, `::` for an
    /// optional one.
    pub(crate) short: &'static str,
    /// Long option names: `name`, `name=` (required value), `name=?` (optional value).
    pub(crate) long: &'static [&'static str],
    /// Options end at the first operand (getopt's `+`, and every command runner).
    pub(crate) stop_at_operand: bool,
    /// `-NUM` is an option of its own (`head -5`, `grep -3`).
    pub(crate) dash_number: bool,
    /// `long` lists every long option of the program: unique prefixes resolve.
    pub(crate) abbrev: bool,
    /// No option reads or writes a file or runs a program: a glob match the program reads as
    /// an option changes only the form of its output.
    pub(crate) harmless: bool,
}

impl Grammar {
    pub(crate) const fn new(short: &'static str, long: &'static [&'static str]) -> Grammar {
        Grammar {
            short,
            long,
            stop_at_operand: false,
            dash_number: false,
            abbrev: false,
            harmless: false,
        }
    }

    /// Every option is harmless ([`Grammar::harmless`]).
    pub(crate) const fn harmless(mut self) -> Grammar {
        self.harmless = true;
        self
    }

    pub(crate) const fn stops(mut self) -> Grammar {
        self.stop_at_operand = true;
        self
    }

    pub(crate) const fn numbers(mut self) -> Grammar {
        self.dash_number = true;
        self
    }

    /// The long table is complete (checked against the program's source): GNU abbreviations
    /// resolve.
    pub(crate) const fn abbreviations(mut self) -> Grammar {
        self.abbrev = true;
        self
    }

    fn short_arity(&self, c: char) -> Option<Arity> {
        let b = self.short.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let ch = b[i] as char;
            let req = b.get(i + 1) == Some(&b':');
            let opt = req && b.get(i + 2) == Some(&b':');
            if ch == c && ch != ':' {
                return Some(if opt {
                    Arity::Optional
                } else if req {
                    Arity::Required
                } else {
                    Arity::Flag
                });
            }
            i += 1 + usize::from(req) + usize::from(opt);
        }
        None
    }

    /// The option `name` names: its full name and arity; `Err` for a prefix of several.
    fn long_option(&self, name: &str) -> Option<Result<(&'static str, Arity), ()>> {
        let split = |l: &'static str| {
            if let Some(n) = l.strip_suffix("=?") {
                (n, Arity::Optional)
            } else if let Some(n) = l.strip_suffix('=') {
                (n, Arity::Required)
            } else {
                (l, Arity::Flag)
            }
        };
        let mut found = None;
        for &l in self.long {
            let (n, a) = split(l);
            if n == name {
                return Some(Ok((n, a)));
            }
            if self.abbrev && n.starts_with(name) {
                found = match found {
                    None => Some(Ok((n, a))),
                    Some(_) => Some(Err(())),
                };
            }
        }
        found
    }
}

/// An option's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Value {
    /// The text.
    pub(crate) text: String,
    /// Known exactly (from a literal word).
    pub(crate) exact: bool,
    /// Index of the word it came from.
    pub(crate) word: usize,
    /// Part of the option's own word (`-oFILE`, `--output=FILE`): the shell expanded no `~`
    /// at its start.
    pub(crate) attached: bool,
}

/// One option as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Opt {
    /// `-n` or `--lines` (or `-5` for `-NUM`).
    pub(crate) name: String,
    /// Its value, if it has one.
    pub(crate) value: Option<Value>,
}

/// A command line split into options and operands.
#[derive(Debug, Clone, Default)]
pub(crate) struct Parsed {
    /// The options in order.
    pub(crate) opts: Vec<Opt>,
    /// Indices of the operand words.
    pub(crate) operands: Vec<usize>,
    /// Why the parse is not certain (an unknown option, a missing value, an option only known
    /// when the command runs). Empty when every word was understood.
    pub(crate) problems: Vec<String>,
    /// Index of the first word that is an unknown option, if any.
    pub(crate) first_unknown: Option<usize>,
    /// Index of the `--` that ends the options, if any.
    pub(crate) dashdash: Option<usize>,
    /// The grammar's options are all harmless ([`Grammar::harmless`]).
    pub(crate) harmless: bool,
}

impl Parsed {
    /// Records why the command is not understood, at word `i` (the first such word is kept).
    fn problem(&mut self, i: usize, why: String) {
        self.problems.push(why);
        self.first_unknown.get_or_insert(i);
    }

    /// Whether option `name` (either spelling) was given.
    pub(crate) fn has(&self, names: &[&str]) -> bool {
        self.opts.iter().any(|o| names.contains(&o.name.as_str()))
    }

    /// The values of option `name` (either spelling), in order.
    pub(crate) fn values<'a>(&'a self, names: &'a [&'a str]) -> impl Iterator<Item = &'a Value> {
        self.opts
            .iter()
            .filter(move |o| names.contains(&o.name.as_str()))
            .filter_map(|o| o.value.as_ref())
    }
}

/// Splits `args` (the words after the program name) by `grammar`.
pub(crate) fn parse(grammar: &Grammar, args: &[Word]) -> Parsed {
    let mut p = Parsed {
        harmless: grammar.harmless,
        ..Parsed::default()
    };
    let mut only_operands = false;
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        if only_operands || !t.starts_with('-') || t == "-" {
            p.operands.push(i);
            if grammar.stop_at_operand {
                only_operands = true;
            }
        } else if !w.literal() {
            p.problem(
                i,
                format!("the option `{t}` is only known when the command runs"),
            );
        } else if t == "--" {
            only_operands = true;
            p.dashdash = Some(i);
        } else if let Some(long) = t.strip_prefix("--") {
            long_option(grammar, args, &mut i, long, &mut p);
        } else {
            short_options(grammar, args, &mut i, &t[1..], &mut p);
        }
        i += 1;
    }
    p
}

/// `--name`, `--name=value` or `--name value` at `args[*i]` (`*i` moves past a separate value).
fn long_option(grammar: &Grammar, args: &[Word], i: &mut usize, long: &str, p: &mut Parsed) {
    let (given, attached) = match long.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (long, None),
    };
    let (name, arity) = match grammar.long_option(given) {
        Some(Ok((name, a))) => (name, Some(a)),
        Some(Err(())) => {
            p.problem(*i, format!("`--{given}` is ambiguous"));
            return;
        }
        None => (given, None),
    };
    match arity {
        None => p.problem(*i, format!("unknown option `--{name}`")),
        Some(Arity::Flag) if attached.is_some() => {
            p.problem(*i, format!("`--{name}` takes no value"))
        }
        Some(Arity::Flag) => p.opts.push(Opt {
            name: format!("--{name}"),
            value: None,
        }),
        Some(Arity::Optional) => p.opts.push(Opt {
            name: format!("--{name}"),
            value: attached.map(|v| Value {
                text: v.to_string(),
                exact: true,
                word: *i,
                attached: true,
            }),
        }),
        Some(Arity::Required) => {
            let value = match attached {
                Some(v) => Some(Value {
                    text: v.to_string(),
                    exact: true,
                    word: *i,
                    attached: true,
                }),
                None => {
                    *i += 1;
                    args.get(*i).map(|v| Value {
                        text: v.text.clone(),
                        exact: v.literal(),
                        word: *i,
                        attached: false,
                    })
                }
            };
            if value.is_none() {
                p.problem(*i, format!("`--{name}` is missing its value"));
            }
            p.opts.push(Opt {
                name: format!("--{name}"),
                value,
            });
        }
    }
}

/// A cluster of short options (`-la`, `-n5`, `-n 5`), or `-NUM` where the program takes it, at
/// `args[*i]` (`*i` moves past a separate value).
fn short_options(grammar: &Grammar, args: &[Word], i: &mut usize, cluster: &str, p: &mut Parsed) {
    if grammar.dash_number && cluster.chars().all(|c| c.is_ascii_digit()) {
        p.opts.push(Opt {
            name: "-NUM".into(),
            value: Some(Value {
                text: cluster.to_string(),
                exact: true,
                word: *i,
                attached: true,
            }),
        });
        return;
    }
    for (k, c) in cluster.char_indices() {
        match grammar.short_arity(c) {
            None => {
                p.problem(*i, format!("unknown option `-{c}`"));
                break;
            }
            Some(Arity::Flag) => p.opts.push(Opt {
                name: format!("-{c}"),
                value: None,
            }),
            Some(arity) => {
                let rest = &cluster[k + c.len_utf8()..];
                let value = if !rest.is_empty() {
                    Some(Value {
                        text: rest.to_string(),
                        exact: true,
                        word: *i,
                        attached: true,
                    })
                } else if arity == Arity::Required {
                    *i += 1;
                    let v = args.get(*i).map(|v| Value {
                        text: v.text.clone(),
                        exact: v.literal(),
                        word: *i,
                        attached: false,
                    });
                    if v.is_none() {
                        p.problem(*i, format!("`-{c}` is missing its value"));
                    }
                    v
                } else {
                    None
                };
                p.opts.push(Opt {
                    name: format!("-{c}"),
                    value,
                });
                break;
            }
        }
    }
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

    const G: Grammar = Grammar::new("abn:i::", &["all", "lines=", "color=?"]);

    #[test]
    fn parse_table() {
        for (args, opts, operands, ok) in [
            ("-ab x", vec!["-a", "-b"], vec![1usize], true),
            ("-n5 x", vec!["-n=5"], vec![1], true),
            ("-n 5 x", vec!["-n=5"], vec![2], true),
            ("-an5", vec!["-a", "-n=5"], vec![], true),
            ("-ibak x", vec!["-i=bak"], vec![1], true),
            ("-i x", vec!["-i"], vec![1], true),
            ("-ai x", vec!["-a", "-i"], vec![1], true),
            ("-ia x", vec!["-i=a"], vec![1], true),
            ("--lines=3 x", vec!["--lines=3"], vec![1], true),
            ("--lines 3 x", vec!["--lines=3"], vec![2], true),
            ("--color x", vec!["--color"], vec![1], true),
            ("--color=always x", vec!["--color=always"], vec![1], true),
            ("x -a", vec!["-a"], vec![0], true),
            ("-- -a", vec![], vec![1], true),
            ("--al", vec![], vec![], false),
            ("-z", vec![], vec![], false),
            ("-n", vec!["-n"], vec![], false),
            ("--all=x", vec![], vec![], false),
        ] {
            let p = parse(&G, &words(args));
            let got: Vec<String> = p
                .opts
                .iter()
                .map(|o| match &o.value {
                    Some(v) => format!("{}={}", o.name, v.text),
                    None => o.name.clone(),
                })
                .collect();
            assert_eq!(got, opts, "{args}");
            assert_eq!(p.operands, operands, "{args}");
            assert_eq!(p.problems.is_empty(), ok, "{args}: {:?}", p.problems);
        }
        let stop = Grammar::new("k:", &[]).stops();
        let p = parse(&stop, &words("-k 1 cmd -k 2"));
        assert_eq!(p.operands, vec![2, 3, 4]);
    }

    #[test]
    fn abbreviations_table() {
        // getopt_long: an exact name wins over a longer one it starts; a prefix of one option
        // is that option; a prefix of several is ambiguous.
        const A: Grammar =
            Grammar::new("o:", &["output=", "out", "debug", "dictionary", "check=?"])
                .abbreviations();
        for (args, opts, operands, ok) in [
            ("--out x", vec!["--out"], vec![1usize], true),
            ("--outp x", vec!["--output=x"], vec![], true),
            ("--outp=~/x", vec!["--output=~/x"], vec![], true),
            ("--deb", vec!["--debug"], vec![], true),
            ("--d", vec![], vec![], false),
            ("--c", vec!["--check"], vec![], true),
            ("--ch=quiet", vec!["--check=quiet"], vec![], true),
            ("--de=x", vec![], vec![], false),
            ("--x", vec![], vec![], false),
        ] {
            let p = parse(&A, &words(args));
            let got: Vec<String> = p
                .opts
                .iter()
                .map(|o| match &o.value {
                    Some(v) => format!("{}={}", o.name, v.text),
                    None => o.name.clone(),
                })
                .collect();
            assert_eq!(got, opts, "{args}");
            assert_eq!(p.operands, operands, "{args}");
            assert_eq!(p.problems.is_empty(), ok, "{args}: {:?}", p.problems);
        }
        // Without a complete table, abbreviations stay unknown.
        assert!(!parse(&G, &words("--line 3")).problems.is_empty());
        // Attached values say so: the shell expanded no `~` there.
        let p = parse(&A, &words("-o~/a --output=~/b -o ~/c"));
        let att: Vec<(&str, bool)> = p
            .opts
            .iter()
            .map(|o| {
                let v = o.value.as_ref().unwrap();
                (v.text.as_str(), v.attached)
            })
            .collect();
        assert_eq!(att, [("~/a", true), ("~/b", true), ("~/c", false)]);
    }
}
