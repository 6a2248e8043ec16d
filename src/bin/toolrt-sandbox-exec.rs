//! `toolrt-sandbox-exec --policy JSON [--probe | --hold] -- COMMAND…`: the Bash sandbox's
//! helper, a binary of its own so that each sandboxed command pays for the exec of a small
//! program rather than of the whole runtime. It compiles the same files as `toolrt
//! sandbox-exec` (the policy, the restriction, the namespace holder) by path, and nothing else
//! of toolrt, so the linker leaves the runtime out. toolrt starts it; it is not meant to be run
//! by hand (docs/SEMANTICS.md, "Bash sandbox").

#[path = "../sandbox/exec.rs"]
mod exec;
#[path = "../sandbox/holder.rs"]
mod holder;
#[path = "../sandbox/mounts.rs"]
mod mounts;
#[path = "../sandbox/policy.rs"]
mod policy;
#[path = "../sandbox/seccomp.rs"]
mod seccomp;

use std::ffi::OsString;
use std::process::ExitCode;

use policy::Mode;

const USAGE: &str = "usage: toolrt-sandbox-exec --policy JSON [--probe | --hold] -- COMMAND…";

fn main() -> ExitCode {
    match parse(std::env::args_os().skip(1)) {
        Ok((policy, mode, command)) => exec::run(&policy, mode, &command),
        Err(why) => {
            eprintln!("toolrt sandbox-exec: {why}\n{USAGE}");
            ExitCode::from(125)
        }
    }
}

/// The same arguments as `toolrt sandbox-exec`: the policy, `--probe` or `--hold`, and the
/// command after `--`.
fn parse(
    mut args: impl Iterator<Item = OsString>,
) -> Result<(String, Mode, Vec<OsString>), String> {
    let (mut policy, mut mode) = (None, Mode::Exec);
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--policy") => {
                let text = args.next().ok_or("--policy needs a value")?;
                policy = Some(text.into_string().map_err(|_| "--policy is not UTF-8")?);
            }
            // `--hold` wins over `--probe`, as in `toolrt sandbox-exec`.
            Some("--probe") => {
                if mode != Mode::Hold {
                    mode = Mode::Probe;
                }
            }
            Some("--hold") => mode = Mode::Hold,
            Some("--") => break,
            _ => return Err(format!("unexpected argument {}", arg.to_string_lossy())),
        }
    }
    let policy = policy.ok_or("--policy is required")?;
    Ok((policy, mode, args.collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_as_toolrt_sandbox_exec_takes_them() {
        let ok = |args: &[&str]| parse(args.iter().map(OsString::from));
        let cmd = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        for (args, want) in [
            (
                &["--policy", "{}", "--", "bash", "-c", "true"][..],
                ("{}", Mode::Exec, cmd(&["bash", "-c", "true"])),
            ),
            (&["--policy", "{}", "--probe"], ("{}", Mode::Probe, vec![])),
            (&["--probe", "--policy", "{}"], ("{}", Mode::Probe, vec![])),
            (&["--hold", "--policy", "P"], ("P", Mode::Hold, vec![])),
            (
                &["--hold", "--probe", "--policy", "P"],
                ("P", Mode::Hold, vec![]),
            ),
            // After `--`, everything is the command's, flags included.
            (
                &["--policy", "P", "--", "--probe", "--"],
                ("P", Mode::Exec, cmd(&["--probe", "--"])),
            ),
        ] {
            let (policy, mode, command) = ok(args).unwrap();
            assert_eq!((policy.as_str(), mode, command), want, "{args:?}");
        }
        for (args, why) in [
            (&["--probe"][..], "--policy is required"),
            (&["--policy"], "--policy needs a value"),
            (&["--policy", "P", "bash"], "unexpected argument bash"),
            (&["-x"], "unexpected argument -x"),
        ] {
            assert_eq!(ok(args).unwrap_err(), why, "{args:?}");
        }
    }
}
