//! Package managers' and environment tools' runners: `uv run CMD`, `poetry run CMD`, `npx CMD`,
//! `npm exec -c SCRIPT`, `bundle exec CMD`, `conda run -n ENV CMD`, `mise exec -- CMD`, ….
//!
//! These are deny-only runners: the command they run is a reading that deny and ask rules match
//! and whose paths are checked (a `Bash(rm *)` deny holds for `uv run rm -rf x`, a protected
//! path for `uv run cp x .bashrc`), but the runner is not stripped for allow rules (`Bash(uv
//! run *)` allows what it runs, `Bash(rm *)` does not allow `uv run rm`), is never read-only,
//! and its own options need not be understood for an allow rule to apply. Where an option
//! toolrt does not know may or may not take a value, both readings are kept.

use super::super::word::Word;
use super::{Inner, Peeled, joined};

/// One runner.
struct Runner {
    /// Subcommands that run a command (`run`, `exec`); empty: the program itself does (`npx`).
    subs: &'static [&'static str],
    /// Options that take a value, before or after the subcommand (`--with`, `-n`).
    values: &'static [&'static str],
    /// Options that take no value (so that what follows is not read as their value).
    flags: &'static [&'static str],
    /// Options whose value is a script for a shell (`npx -c`, `nix-shell --run`).
    scripts: &'static [&'static str],
    /// Options after which the command starts (`nix develop -c CMD …`).
    starts: &'static [&'static str],
    /// Options that make the command's words one shell script (`pnpm exec --shell-mode`).
    shell_mode: &'static [&'static str],
    /// Operands that may come before the command (`direnv exec DIR CMD`, `nvm exec [VER] CMD`).
    skip: usize,
}

const NONE: &[&str] = &[];

const fn r(subs: &'static [&'static str]) -> Runner {
    Runner {
        subs,
        values: NONE,
        flags: NONE,
        scripts: NONE,
        starts: NONE,
        shell_mode: NONE,
        skip: 0,
    }
}

const UV_VALUES: &[&str] = &[
    "--with",
    "-w",
    "--with-editable",
    "--with-requirements",
    "--python",
    "-p",
    "--package",
    "--extra",
    "--group",
    "--only-group",
    "--no-group",
    "--env-file",
    "--index",
    "--default-index",
    "--index-url",
    "-i",
    "--extra-index-url",
    "--find-links",
    "-f",
    "--directory",
    "--project",
    "--config-file",
    "--cache-dir",
    "--color",
    "--python-preference",
    "--resolution",
    "--prerelease",
    "--link-mode",
    "--upgrade-package",
    "-P",
    "--reinstall-package",
    "--refresh-package",
    "--exclude-newer",
    "--config-setting",
    "-C",
    "--no-build-package",
    "--no-binary-package",
    "--keyring-provider",
    "--index-strategy",
    "--allow-insecure-host",
    "--from",
];
const UV_FLAGS: &[&str] = &[
    "--no-sync",
    "--frozen",
    "--locked",
    "--isolated",
    "--all-extras",
    "--no-dev",
    "--dev",
    "--quiet",
    "-q",
    "--verbose",
    "-v",
    "--offline",
    "--no-project",
    "--script",
    "-s",
    "--module",
    "-m",
    "--active",
    "--no-active",
    "--all-packages",
    "--no-editable",
    "--exact",
    "--inexact",
    "--no-env-file",
    "--native-tls",
    "--no-cache",
    "-n",
    "--refresh",
    "--reinstall",
    "--upgrade",
    "-U",
    "--compile-bytecode",
    "--no-build-isolation",
    "--no-build",
    "--no-binary",
    "--all-groups",
    "--no-default-groups",
    "--only-dev",
    "--gui-script",
    "--no-config",
    "--no-progress",
    "--preview",
    "--managed-python",
    "--no-managed-python",
    "--no-python-downloads",
];
const NPX_VALUES: &[&str] = &[
    "-p",
    "--package",
    "--cache",
    "--userconfig",
    "--registry",
    "--prefix",
    "-w",
    "--workspace",
];
const NPX_FLAGS: &[&str] = &["-y", "--yes", "--no", "-q", "--quiet", "--ignore-existing"];
const NPX_SCRIPTS: &[&str] = &["-c", "--call"];
const CONDA_VALUES: &[&str] = &["-n", "--name", "-p", "--prefix", "--cwd"];
const CONDA_FLAGS: &[&str] = &["--no-capture-output", "--live-stream", "-v", "--debug"];
const ENV_TOOLS: &[&str] = &[
    "rbenv", "pyenv", "nodenv", "goenv", "jenv", "asdf", "cabal", "stack", "opam", "fnm",
];

/// The runner `prog` is, if any.
fn runner(prog: &str) -> Option<Runner> {
    python_runner(prog)
        .or_else(|| node_runner(prog))
        .or_else(|| env_runner(prog))
}

/// Python's and Ruby's project tools, and conda.
fn python_runner(prog: &str) -> Option<Runner> {
    let uv = Runner {
        values: UV_VALUES,
        flags: UV_FLAGS,
        ..r(&["run"])
    };
    Some(match prog {
        "uv" => uv,
        "uvx" => Runner { subs: NONE, ..uv },
        "poetry" => Runner {
            values: &["-C", "--directory", "-P", "--project"],
            flags: &[
                "-q",
                "--quiet",
                "-v",
                "--verbose",
                "-n",
                "--no-interaction",
                "--no-plugins",
            ],
            ..r(&["run"])
        },
        "pdm" => Runner {
            values: &["-p", "--project", "--venv"],
            flags: &["-s", "--site-packages", "-q", "-v"],
            ..r(&["run"])
        },
        "hatch" => Runner {
            values: &[
                "-e",
                "--env",
                "-p",
                "--project",
                "--data-dir",
                "--cache-dir",
                "--config",
            ],
            ..r(&["run"])
        },
        "rye" | "pipenv" | "devbox" | "pixi" => Runner {
            values: &[
                "--pyproject",
                "--python",
                "-e",
                "--environment",
                "--manifest-path",
            ],
            ..r(&["run"])
        },
        "conda" | "mamba" | "micromamba" => Runner {
            values: CONDA_VALUES,
            flags: CONDA_FLAGS,
            ..r(&["run"])
        },
        "bundle" | "bundler" => Runner {
            values: &["--gemfile"],
            flags: &["--keep-file-descriptors", "--verbose", "--no-color"],
            ..r(&["exec"])
        },
        "pipx" => Runner {
            values: &["--spec", "--python", "--index-url", "--pip-args"],
            flags: &[
                "--no-cache",
                "--system-site-packages",
                "--editable",
                "--verbose",
                "-q",
            ],
            ..r(&["run"])
        },
        _ => return None,
    })
}

/// JavaScript's package managers.
fn node_runner(prog: &str) -> Option<Runner> {
    let npx = Runner {
        values: NPX_VALUES,
        flags: NPX_FLAGS,
        scripts: NPX_SCRIPTS,
        ..r(NONE)
    };
    Some(match prog {
        "npx" | "pnpx" | "bunx" => npx,
        "npm" => Runner {
            subs: &["exec", "x"],
            ..npx
        },
        "pnpm" => Runner {
            values: &["-C", "--dir", "--filter", "-F", "--package", "--reporter"],
            flags: &["-r", "--recursive", "--parallel", "--silent", "-s"],
            shell_mode: &["-c", "--shell-mode"],
            ..r(&["exec", "dlx"])
        },
        "yarn" => Runner {
            values: &["-p", "--package", "--cwd"],
            flags: &["-q", "--quiet"],
            ..r(&["exec", "dlx"])
        },
        "bun" => Runner {
            subs: &["x"],
            ..npx
        },
        _ => return None,
    })
}

/// Version managers, environment and secret loaders, nix.
fn env_runner(prog: &str) -> Option<Runner> {
    Some(match prog {
        "mise" | "rtx" => Runner {
            values: &["-C", "--cd", "-j", "--jobs", "-E", "--env"],
            scripts: &["-c", "--command"],
            skip: 4,
            ..r(&["exec", "x"])
        },
        "direnv" => Runner {
            skip: 1,
            ..r(&["exec"])
        },
        "nvm" => Runner {
            skip: 1,
            ..r(&["exec"])
        },
        "volta" => Runner {
            values: &["--node", "--npm", "--yarn", "--pnpm", "--env"],
            ..r(&["run"])
        },
        "nix" => Runner {
            starts: &["-c", "--command"],
            skip: 8,
            ..r(&["develop", "shell"])
        },
        "nix-shell" => Runner {
            values: &[
                "-p",
                "--packages",
                "-A",
                "--attr",
                "-I",
                "--arg",
                "--argstr",
            ],
            scripts: &["--run", "--command"],
            ..r(NONE)
        },
        "dotenvx" | "op" | "doppler" | "infisical" => Runner {
            values: &[
                "-f",
                "--env-file",
                "--env",
                "-p",
                "--project",
                "-c",
                "--config",
            ],
            scripts: &["--command"],
            ..r(&["run"])
        },
        "aws-vault" => Runner {
            skip: 1,
            ..r(&["exec"])
        },
        p if ENV_TOOLS.contains(&p) => Runner {
            values: &["--switch", "--root", "--using", "--package", "--cwd"],
            ..r(&["exec"])
        },
        _ => return None,
    })
}

/// Peels a package manager's runner: `None` if `prog` with these arguments is not one (`npm
/// install`, `uv pip …`).
pub(super) fn peel(prog: &str, args: &[Word]) -> Option<Peeled> {
    let rn = runner(prog)?;
    let mut i = 0;
    if !rn.subs.is_empty() {
        // The subcommand: the first word that is not an option or a known option's value.
        loop {
            let w = args.get(i)?;
            let t = w.text.as_str();
            if !t.starts_with('-') || t == "-" {
                if !rn.subs.contains(&t) {
                    return None;
                }
                i += 1;
                break;
            }
            i += 1 + usize::from(!t.contains('=') && rn.values.contains(&t));
        }
    }
    let mut out = Peeled::default();
    let mut starts = Vec::new();
    walk(&rn, args, i, 0, &mut starts, &mut out);
    for s in starts {
        let inner = if let Some(k) = s.shell {
            joined(&args[k..])
        } else {
            Inner::At(s.at)
        };
        let dup = out.inner.iter().any(|o| match (o, &inner) {
            (Inner::At(a), Inner::At(b)) => a == b,
            (Inner::Script(a), Inner::Script(b)) => a == b,
            _ => false,
        });
        if !dup {
            out.inner.push(inner);
        }
    }
    if out.inner.is_empty() {
        out.inner.push(Inner::Nothing);
    }
    Some(out)
}

/// Where a reading of the inner command starts.
struct Start {
    at: usize,
    /// The words from here are joined into one shell script.
    shell: Option<usize>,
}

/// Finds where the command may start from word `i`: options are skipped by the table, and an
/// option the table does not know is taken both ways (with a value and without).
fn walk(
    rn: &Runner,
    args: &[Word],
    mut i: usize,
    depth: usize,
    out: &mut Vec<Start>,
    p: &mut Peeled,
) {
    let mut shell = false;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            push(out, i + 1, args, shell);
            return;
        }
        if !t.starts_with('-') || t == "-" {
            // The command, or (`skip`) an operand before it: each is a reading.
            for k in i..args.len().min(i + 1 + rn.skip) {
                if !args[k].text.starts_with('-') {
                    push(out, k, args, shell);
                }
            }
            return;
        }
        let (name, attached) = match t.split_once('=') {
            Some((n, v)) if t.starts_with("--") => (n, Some(v)),
            _ => (t, None),
        };
        if rn.shell_mode.contains(&name) {
            shell = true;
        }
        if rn.scripts.contains(&name) {
            let v = attached
                .map(|v| (v.to_string(), w.exact))
                .or_else(|| args.get(i + 1).map(|n| (n.text.clone(), n.exact)));
            match v {
                Some((s, true)) => p.inner.push(Inner::Script(s)),
                Some((_, false)) => p.inner.push(Inner::ScriptUnknown),
                None => {}
            }
            i += 1 + usize::from(attached.is_none());
            continue;
        }
        if rn.starts.contains(&name) {
            push(out, i + 1, args, shell);
            return;
        }
        let known_flag = rn.flags.contains(&name) || rn.shell_mode.contains(&name);
        if attached.is_some() || known_flag {
            i += 1;
        } else if rn.values.contains(&name) || short_value(rn, t) {
            i += 2;
        } else if short_flags(rn, t) {
            i += 1;
        } else {
            // Unknown: with a value, and without.
            if depth < 4 {
                walk(rn, args, i + 2, depth + 1, out, p);
            }
            i += 1;
        }
    }
}

fn push(out: &mut Vec<Start>, at: usize, args: &[Word], shell: bool) {
    if at < args.len() {
        out.push(Start {
            at,
            shell: shell.then_some(at),
        });
    }
}

/// A short cluster ending in an option that takes a value (`-qp` with `-p`).
fn short_value(rn: &Runner, t: &str) -> bool {
    t.len() > 2
        && !t.starts_with("--")
        && t[1..t.len() - 1]
            .chars()
            .all(|c| rn.flags.contains(&format!("-{c}").as_str()))
        && rn
            .values
            .contains(&format!("-{}", &t[t.len() - 1..]).as_str())
}

/// A short cluster of known flags (`-qv`).
fn short_flags(rn: &Runner, t: &str) -> bool {
    !t.starts_with("--")
        && t[1..]
            .chars()
            .all(|c| rn.flags.contains(&format!("-{c}").as_str()))
}
