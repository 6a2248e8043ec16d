//! The acceptEdits file commands (`mkdir`, `touch`, `rm`, `rmdir`, `mv`, `cp`; `sed` in its own
//! module) with their option grammars and the paths they write or remove.

use super::super::Cwd;
use super::super::Target;
use super::super::options::{self, Grammar};
use super::super::word::Word;
use super::derived::backups;
use super::sed::sed;
use super::{Outcome, check_words, operand_targets, value_target};

const MKDIR: Grammar = Grammar::new(
    "m:pvZ",
    &[
        "mode=",
        "parents",
        "verbose",
        "context=?",
        "help",
        "version",
    ],
);
const TOUCH: Grammar = Grammar::new(
    "acd:fhmr:t:",
    &[
        "no-create",
        "date=",
        "no-dereference",
        "reference=",
        "time=",
        "help",
        "version",
    ],
);
const RM: Grammar = Grammar::new(
    "dfiIrRv",
    &[
        "force",
        "interactive=?",
        "one-file-system",
        "no-preserve-root",
        "preserve-root=?",
        "recursive",
        "dir",
        "verbose",
        "help",
        "version",
    ],
);
const RMDIR: Grammar = Grammar::new(
    "pv",
    &[
        "ignore-fail-on-non-empty",
        "parents",
        "verbose",
        "help",
        "version",
    ],
);
const MV: Grammar = Grammar::new(
    "bfinS:t:TuvZ",
    &[
        "backup=?",
        "force",
        "interactive",
        "no-clobber",
        "strip-trailing-slashes",
        "suffix=",
        "target-directory=",
        "no-target-directory",
        "update=?",
        "verbose",
        "context",
        "help",
        "version",
    ],
);
const CP: Grammar = Grammar::new(
    "abdfHilLnprsS:t:TuvxZ",
    &[
        "archive",
        "attributes-only",
        "backup=?",
        "copy-contents",
        "force",
        "interactive",
        "link",
        "dereference",
        "no-clobber",
        "no-dereference",
        "preserve=?",
        "no-preserve=",
        "parents",
        "recursive",
        "reflink=?",
        "remove-destination",
        "sparse=",
        "strip-trailing-slashes",
        "symbolic-link",
        "suffix=",
        "target-directory=",
        "no-target-directory",
        "update=?",
        "verbose",
        "one-file-system",
        "context=?",
        "debug",
        "help",
        "version",
    ],
);

/// The acceptEdits file commands: `None` if `prog` is not one; otherwise the paths it writes
/// (and reads) and whether every part is understood.
pub(crate) fn file_edit(prog: &str, args: &[Word], cwd: &Cwd) -> Option<Outcome> {
    let mut out = Outcome::default();
    let g = match prog {
        "mkdir" => &MKDIR,
        "touch" => &TOUCH,
        "rm" => &RM,
        "rmdir" => &RMDIR,
        "mv" => &MV,
        "cp" => &CP,
        "sed" => return Some(sed(args, cwd)),
        _ => return None,
    };
    let p = options::parse(g, args);
    check_words(args, &p, &[], &mut out);
    let files = operand_targets(args, &p.operands, cwd);
    match prog {
        "mkdir" | "touch" => {
            out.effects.writes = files;
            for v in p.values(&["-r", "--reference"]) {
                out.effects.lists.extend(value_target(v, cwd));
            }
        }
        "rm" | "rmdir" => {
            if prog == "rmdir" && p.has(&["-p", "--parents"]) {
                // `rmdir -p a/b/c` removes a/b and a too.
                for t in &files {
                    let mut path = t.path.trim_end_matches('/').to_string();
                    while let Some((parent, _)) = path.rsplit_once('/') {
                        if parent.is_empty() {
                            break;
                        }
                        out.effects.removes.push(Target {
                            path: parent.to_string(),
                            ..t.clone()
                        });
                        path = parent.to_string();
                    }
                }
            }
            out.effects.removes.extend(files.iter().cloned());
            out.effects.writes = files;
        }
        "mv" | "cp" => {
            for v in p.values(&["-S", "--suffix"]) {
                if v.text.contains('/') {
                    out.problem("the backup suffix holds a path");
                }
            }
            let target_dir: Vec<Target> = p
                .values(&["-t", "--target-directory"])
                .filter_map(|v| value_target(v, cwd))
                .collect();
            let (sources, dests) = if !target_dir.is_empty() {
                (files, target_dir)
            } else if files.len() >= 2 {
                let mut f = files;
                let last = f.pop().into_iter().collect();
                (f, last)
            } else {
                out.problem(format!("{prog} needs a source and a destination"));
                (files, Vec::new())
            };
            // A backup renames an existing destination to a name of its own.
            out.effects
                .writes
                .extend(backups(args, "t", &dests, &sources));
            out.effects.writes.extend(dests);
            if prog == "mv" {
                out.effects.moves.extend(sources.iter().cloned());
                out.effects.writes.extend(sources.iter().cloned());
                out.effects.reads.extend(sources);
            } else if p.has(&["-r", "-R", "--recursive", "-a", "--archive"]) {
                out.effects.trees.extend(sources);
            } else {
                out.effects.reads.extend(sources);
            }
        }
        _ => {}
    }
    Some(out)
}
