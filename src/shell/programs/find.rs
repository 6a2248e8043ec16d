//! `find`: its start points, its expression primaries and the commands `-exec` and friends run.

use super::super::word::Word;
use super::super::{Cwd, Effects, Target};
use super::{Outcome, Runs, dot, target};

/// find's expression primaries by the number of words they take; `None` for unknown ones.
fn find_arity(p: &str) -> Option<usize> {
    Some(match p {
        "("
        | ")"
        | "!"
        | ","
        | "-not"
        | "-a"
        | "-and"
        | "-o"
        | "-or"
        | "-depth"
        | "-d"
        | "-mount"
        | "-xdev"
        | "-noleaf"
        | "-ignore_readdir_race"
        | "-noignore_readdir_race"
        | "-daystart"
        | "-follow"
        | "-nowarn"
        | "-warn"
        | "-empty"
        | "-false"
        | "-true"
        | "-nouser"
        | "-nogroup"
        | "-readable"
        | "-writable"
        | "-executable"
        | "-print"
        | "-print0"
        | "-ls"
        | "-prune"
        | "-quit"
        | "-delete" => 0,
        "-maxdepth" | "-mindepth" | "-regextype" | "-amin" | "-anewer" | "-atime" | "-cmin"
        | "-cnewer" | "-context" | "-ctime" | "-fstype" | "-gid" | "-group" | "-ilname"
        | "-iname" | "-inum" | "-ipath" | "-iregex" | "-iwholename" | "-links" | "-lname"
        | "-mmin" | "-mtime" | "-name" | "-newer" | "-path" | "-perm" | "-regex" | "-samefile"
        | "-size" | "-type" | "-uid" | "-used" | "-user" | "-wholename" | "-xtype" | "-printf"
        | "-files0-from" | "-fprint" | "-fprint0" | "-fls" => 1,
        "-fprintf" => 2,
        p if p.starts_with("-newer") && p.len() == 8 => 1,
        _ => return None,
    })
}

/// Primaries that narrow what an action applies to (a bare `find . -delete` removes the whole
/// tree, `find . -name '*.o' -delete` only what matches).
fn find_filters(p: &str) -> bool {
    matches!(
        p,
        "-name"
            | "-iname"
            | "-path"
            | "-ipath"
            | "-wholename"
            | "-iwholename"
            | "-regex"
            | "-iregex"
            | "-lname"
            | "-ilname"
            | "-newer"
            | "-anewer"
            | "-cnewer"
            | "-samefile"
            | "-inum"
            | "-links"
            | "-size"
            | "-empty"
            | "-perm"
            | "-user"
            | "-group"
            | "-uid"
            | "-gid"
            | "-nouser"
            | "-nogroup"
            | "-mtime"
            | "-mmin"
            | "-atime"
            | "-amin"
            | "-ctime"
            | "-cmin"
            | "-used"
    ) || (p.starts_with("-newer") && p.len() == 8)
}

/// `find`: start points (listed), its expression, and the commands `-exec` and friends run.
/// Also used for deny rules when find is not read-only (`-delete`, `-exec`, `-fprint`).
pub(crate) fn find(args: &[Word], cwd: &Cwd) -> Outcome {
    let mut out = Outcome::default();
    let mut i = 0;
    // Leading options.
    while i < args.len() {
        let t = args[i].text.as_str();
        match t {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            _ if t.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    // `-L` (or `-follow` in the expression): the walk goes wherever links in the tree point.
    if args[..i].iter().any(|w| w.text == "-L") || args.iter().any(|w| w.text == "-follow") {
        out.effects
            .reads
            .push(super::read_only::followed_links(cwd));
    }
    let mut starts = Vec::new();
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        if (t.starts_with('-') && t.len() > 1) || t == "(" || t == "!" || t == "," {
            break;
        }
        if !w.exact || w.brace {
            out.problem(format!(
                "the start point `{t}` is only known when the command runs"
            ));
        } else if w.glob && super::may_expand_to(t, &['-', '(', ')', '!', ',']) {
            // find reads a match named `-delete` or `!` as its expression, and has no `--`.
            out.problem(format!(
                "the start point `{t}` may expand to a file name find reads as its expression"
            ));
        }
        starts.extend(target(w, cwd));
        i += 1;
    }
    if starts.is_empty() {
        starts.push(dot(cwd));
    }
    out.effects.lists = starts.clone();
    let mut filtered = false;
    while i < args.len() {
        let w = &args[i];
        let t = w.text.as_str();
        if !w.literal() {
            out.problem(format!(
                "`{t}` in find's expression is only known when the command runs"
            ));
            i += 1;
            continue;
        }
        if matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut end = start;
            while end < args.len() && !matches!(args[end].text.as_str(), ";" | "+") {
                end += 1;
            }
            if end >= args.len() {
                out.problem(format!("{t} is not terminated"));
            }
            out.runs.push(Runs {
                words: args[start..end.min(args.len())].to_vec(),
                cwd_unknown: t == "-execdir" || t == "-okdir",
                found_under: starts.clone(),
                unfiltered: !filtered,
            });
            out.not_read_only
                .get_or_insert_with(|| format!("find {t} runs a command for every file found"));
            i = end + 1;
            continue;
        }
        let Some(n) = find_arity(t) else {
            out.problem(format!("unknown find primary `{t}`"));
            i += 1;
            continue;
        };
        if find_filters(t) {
            filtered = true;
        }
        let vals = &args[(i + 1).min(args.len())..(i + 1 + n).min(args.len())];
        if vals.len() < n {
            out.problem(format!("find {t} is missing its value"));
        }
        for v in vals {
            if !v.literal() {
                out.problem(format!(
                    "`{}` in find's expression is only known when the command runs",
                    v.text
                ));
            }
        }
        primary_effects(t, vals, &starts, filtered, cwd, &mut out);
        i += 1 + n;
    }
    out
}

/// What the primary `t` with its values `vals` does beyond listing: removes (`-delete`),
/// writes (`-fprint`…), reads (`-files0-from`) or looks at another file (`-newer`…).
fn primary_effects(
    t: &str,
    vals: &[Word],
    starts: &[Target],
    filtered: bool,
    cwd: &Cwd,
    out: &mut Outcome,
) {
    match t {
        "-delete" => {
            out.not_read_only
                .get_or_insert_with(|| "find -delete removes files".into());
            removes_found(starts, !filtered, &mut out.effects);
        }
        "-fprint" | "-fprint0" | "-fls" | "-fprintf" => {
            out.not_read_only
                .get_or_insert_with(|| format!("find {t} writes a file"));
            if let Some(v) = vals.first() {
                out.effects.writes.extend(target(v, cwd));
            }
        }
        "-files0-from" => {
            out.problem("find -files0-from reads start points from a file");
            if let Some(v) = vals.first() {
                out.effects.reads.extend(target(v, cwd));
            }
        }
        "-anewer" | "-cnewer" | "-newer" | "-samefile" => {
            if let Some(v) = vals.first() {
                out.effects.lists.extend(target(v, cwd));
            }
        }
        _ if t.starts_with("-newer") && !t.ends_with('t') => {
            if let Some(v) = vals.first() {
                out.effects.lists.extend(target(v, cwd));
            }
        }
        _ => {}
    }
}

/// What `find … -delete` (or `-exec rm {}`) may remove below `starts`: the start points
/// themselves when nothing filters, or when a start point is `/`, one of its children or home
/// (removing everything found there is never a small cleanup).
pub(crate) fn removes_found(starts: &[Target], unfiltered: bool, fx: &mut Effects) {
    for s in starts {
        let broad = unfiltered
            || s.path == "/"
            || s.path == "~"
            || s.path == "~/"
            || (s.path.starts_with('/') && s.path.trim_end_matches('/').matches('/').count() <= 1);
        if broad {
            fx.removes.push(s.clone());
        }
        fx.write_trees_push(s.clone());
    }
}
