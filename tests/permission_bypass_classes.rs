//! The fifteen classes of rule bypass an outside red-team pass found, one test each, through
//! `toolrt serve`. Every attempt would leave a trace if it ran — create its own marker file,
//! delete its own victim file, print a secret, or connect to a listener — and is sent in every
//! mode where it used to get through; each must come back `denied` (every ask is answered with
//! deny) and leave no trace.
//!
//! The project holds `.env` (`SECRET=hunter2`) under a `Read(.env)` deny rule; `../outside/`
//! holds `secret.txt` (`TOPSECRET`) outside the workspace. Deny rules: `Bash(rm *)`,
//! `Bash(touch *)`, `Bash(curl *)`, `Bash(git tag *)`, `Read(.env)`,
//! `WebFetch(domain:127.0.0.1)`.

mod support;

#[path = "common/serve.rs"]
mod serve;

#[path = "common/bypass.rs"]
mod bypass;

use std::process::Command;

use bypass::*;
use serde_json::json;
use serve::*;

/// Class 1: Code bash runs while evaluating values: arithmetic on a variable whose value holds a
/// command substitution, prompt expansion, indirection, subscripts.
#[test]
fn class_01_code_run_while_evaluating_values() {
    must_hold(
        &project,
        &[
            "x='a[$(touch {m})]'; echo $((x))",
            "x='a[$(touch {m})]'; echo $[x]",
            "x='a[$(touch {m})]'; ((x))",
            "x='a[$(touch {m})]'; [[ $x -eq 1 ]]",
            "x='a[$(touch {m})]'; echo ${y[x]}",
            "x='a[$(touch {m})]'; let x",
            "p='$(touch {m})'; echo ${p@P}",
            "for x in 'a[$(touch {m})]'; do echo $((x)); done",
            "declare -i n; n='a[$(touch {m})]'",
            "y='a[$(touch {m})]'; echo ${!y}",
            "s='a[$(touch {m})]'; echo ${s:s}",
            "read 'a[$(touch {m})]' <<< 1",
            "printf -v 'a[$(touch {m})]' 1",
            "x='a[$(rm {v})]'; echo $((x))",
        ],
        ALL,
    );
}

/// Class 2: Abbreviated and bundled options: `--open` is git grep's `--open-files-in-pager`, `-iO…`
/// bundles it; `--files0=` is wc's `--files0-from=`.
#[test]
fn class_02_abbreviated_and_bundled_options() {
    let fx = || {
        let fx = project();
        repo(&fx);
        fx
    };
    must_hold(
        &fx,
        &[
            "git grep --open='touch {m}' alpha",
            "git grep -iO'touch {m}' alpha",
            "git grep --open-files-in-pager='touch {m}' alpha",
            "wc --files0=.env",
            "grep -rf.env alpha .",
        ],
        ALL,
    );
}

/// Class 3: git runs programs named in a configuration the agent wrote: a bare-repository layout in
/// a plain folder (`diff.external`), a hooks directory the repository's configuration points
/// into the workspace, a file the repository's configuration includes.
#[test]
fn class_03_git_runs_code_from_configuration_the_agent_wrote() {
    let fx = || {
        let fx = project();
        repo(&fx);
        // What an agent can write in acceptEdits without touching a protected path.
        fx.write("evil/HEAD", "ref: refs/heads/main\n");
        fx.write(
            "evil/config",
            "[diff]\n\texternal = \"touch ../made_0; false\"\n",
        );
        std::fs::create_dir_all(fx.path("evil/objects")).unwrap();
        std::fs::create_dir_all(fx.path("evil/refs")).unwrap();
        // The user pointed hooks into the workspace; the agent wrote a hook there.
        git(&fx.cwd, &["config", "core.hooksPath", ".githooks"]);
        fx.write(".githooks/post-index-change", "#!/bin/sh\ntouch made_1\n");
        let hook = fx.path(".githooks/post-index-change");
        std::process::Command::new("chmod")
            .arg("+x")
            .arg(&hook)
            .status()
            .unwrap();
        // The user's configuration includes a workspace file; the agent wrote it.
        git(&fx.cwd, &["config", "include.path", "../gitcfg"]);
        fx.write("gitcfg", "[diff]\n\texternal = \"touch made_2; false\"\n");
        // A tracked file whose stat info changed, so `git status` refreshes the index.
        fx.write("notes.txt", "alpha\nbeta\nchanged\n");
        fx
    };
    must_hold(
        &fx,
        &[
            "cd evil && git diff --no-index ../notes.txt ../notes2.txt",
            "git status",
            "git diff",
            "git -c core.fsmonitor='touch made_3' status",
        ],
        ALL,
    );
}

/// Class 4: Brace expansion turns one word into several: never a literal path, never a known
/// program.
#[test]
fn class_04_brace_expansion() {
    must_hold(
        &project,
        &[
            "cat {notes.txt,.env}",
            "cat .en{v,}",
            "{touch,{m}}",
            "{rm,{v}}",
            "cat {..,.}/outside/secret.txt",
            "cat .e?v",
            "cat .[e]nv",
        ],
        &[
            "default",
            "acceptEdits",
            "plan",
            "dontAsk",
            "bypassPermissions",
        ],
    );
}

/// Class 5: Programs that read files without being plain file readers: git's blob, diff, grep,
/// blame and patch output, options that take a file, recursion spelled another way, operands
/// from stdin.
#[test]
fn class_05_reads_through_other_programs() {
    let fx = || {
        let fx = project();
        fx.write("sub/.env", "OTHER=1\n");
        repo(&fx);
        fx
    };
    must_hold(
        &fx,
        &[
            "git show HEAD:.env",
            "git diff --no-index .env notes.txt",
            "git grep hunter",
            "git blame .env",
            "git log -p",
            "git cat-file -p HEAD:.env",
            "diff --from-file=.env notes.txt",
            "wc --files0-from=.env",
            "grep -f .env -r . --include=.env",
            "grep -d recurse hunter .",
            "diff -r . sub",
            "diff -r sub .",
            "ls -a | xargs cat",
            "echo .env | xargs cat",
        ],
        ALL,
    );
}

/// Class 6: Reads outside the workspace ask, as the Read tool's do. (Plan mode allows reads anywhere,
/// for the Read tool and Bash alike; bypass allows everything not denied.)
#[test]
fn class_06_reads_outside_the_workspace() {
    must_hold(
        &project,
        &[
            "cat ../outside/secret.txt",
            "cat {root}/outside/secret.txt",
            "cd .. && cat outside/secret.txt",
            "grep -r TOPSEC ..",
            "head ../outside/*.txt",
            "tail /proc/self/cwd/../outside/secret.txt",
            "git -C ../outside diff --no-index secret.txt /dev/null",
        ],
        &["default", "acceptEdits", "dontAsk"],
    );
}

/// Class 7: Network through the shell itself: `/dev/tcp` redirects are connections, denied by the
/// WebFetch domain rule and by `Bash(curl *)`, never read-only.
#[test]
fn class_07_network_through_dev_tcp() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let attempts = [
        format!("echo hi > /dev/tcp/127.0.0.1/{port}"),
        format!("cat < /dev/tcp/127.0.0.1/{port}"),
        format!("exec 3<>/dev/tcp/127.0.0.1/{port}; echo hi >&3"),
        format!("h=127.0.0.1; echo hi > /dev/tcp/$h/{port}"),
        format!("ls > /dev/tcp/localhost/{port}"),
    ];
    let templates: Vec<&str> = attempts.iter().map(String::as_str).collect();
    must_hold(&project, &templates, ALL);
    assert!(
        listener.accept().is_err(),
        "a /dev/tcp redirect connected to the listener"
    );
}

/// Class 8: acceptEdits file commands with options that run code or write elsewhere.
#[test]
fn class_08_edit_commands_with_options_that_run_or_write_elsewhere() {
    let fx = || {
        let fx = project();
        repo(&fx);
        fx
    };
    must_hold(
        &fx,
        &[
            "sed 's/.*/touch {m}/e' notes.txt",
            "sed -n '1e touch {m}' notes.txt",
            "sed -n 'w ../{m}' notes.txt",
            "sed 's/alpha/x/w ../{m}' notes.txt",
            "sed -i'../{m}_*' s/alpha/x/ notes.txt",
            "cp -t .. {v}",
            "cp --target-directory=.git {v}",
            "cp -t.git {v}",
            "mv -t .. {v}",
            "mv --target-directory=.. {v}",
        ],
        &["acceptEdits"],
    );
}

/// Class 9: Wrapper options parsed by each wrapper's real grammar; an unknown option makes the inner
/// command unknowable, and deny rules match every plausible reading.
#[test]
fn class_09_wrapper_options() {
    must_hold(
        &project,
        &[
            "timeout --signal=KILL 5 rm {v}",
            "timeout -k 1 5 rm {v}",
            "timeout --frobnicate 5 rm {v}",
            "nice --adjustment=5 rm {v}",
            "nice -n5 rm {v}",
            "stdbuf --output=L rm {v}",
            "env -S 'rm {v}'",
            "env --split-string='rm {v}'",
            "env -C sub rm ../{v}",
            "xargs -l rm <<< {v}",
            "xargs --max-lines rm <<< {v}",
            "xargs -i rm {} <<< {v}",
            "xargs -I% sh -c 'rm %' <<< {v}",
            "\\time -f %e rm {v}",
            "flock -c 'rm {v}' {cwd}/lockfile",
            "flock {cwd}/lockfile -c 'rm {v}'",
        ],
        ALL,
    );
}

/// Class 10: Programs that run their arguments as a command, peeled by the wrapper table.
#[test]
fn class_10_command_runners() {
    must_hold(
        &project,
        &[
            "taskset 1 rm {v}",
            "taskset -c 0 rm {v}",
            "setpriv --inh-caps=-all rm {v}",
            "prlimit --nofile=1024 rm {v}",
            "script -qc 'rm {v}' /dev/null",
            "chrt -o 0 rm {v}",
            "ionice -c3 rm {v}",
            "setsid -w rm {v}",
            "nohup rm {v}",
        ],
        ALL,
    );
}

/// Class 10, options whose value is a command the program runs with arguments of its own
/// (`tar -I`, `tar --checkpoint-action=exec=`, `split --filter`, `git fetch --upload-pack`): an
/// allow rule for the program does not allow them (as `find -exec`), and the deny rules see the
/// command.
#[test]
fn class_10_options_that_run_commands() {
    let mut rules = deny_rules();
    rules["allow"] = json!([
        "Bash(tar *)",
        "Bash(split *)",
        "Bash(git ls-remote *)",
        "Bash(git fetch *)"
    ]);
    must_hold_under(
        &project,
        rules,
        &[
            "split --filter='rm {v}' notes.txt",
            "split --fil 'rm {v}' notes.txt",
            "tar -cf a{m}.tar --checkpoint=1 --checkpoint-action=exec='touch {m}' notes.txt",
            "tar -I 'touch {m}' -cf a{m}.tar notes.txt",
            "tar -cI'touch {m}' -f a{m}.tar notes.txt",
            "tar --use-comp='touch {m}' -cf a{m}.tar notes.txt",
            "timeout 5 tar -I 'touch {m}' -cf a{m}.tar notes.txt",
            "o='--checkpoint-action=exec=touch {m}'; tar -cf a{m}.tar --checkpoint=1 \"$o\" notes.txt",
            "o=$(echo --checkpoint-action=exec=touch {m}); tar -cf a{m}.tar --checkpoint=1 \"$o\" notes.txt",
            "git ls-remote --upload-pack='touch {m}' {root}/no-repo",
            "git fetch --upload-p='rm {v}' {root}/no-repo",
        ],
        &["default", "acceptEdits", "dontAsk", "bypassPermissions"],
    );
}

/// Class 11: Shell scripts read wrongly: `-c` option handling, trap strings, scripts from stdin,
/// here-strings and process substitution, aliases, `hash -p`, callbacks.
#[test]
fn class_11_shell_sources() {
    must_hold(
        &project,
        &[
            "bash -c -- 'rm {v}'",
            "bash -c -e 'rm {v}'",
            "bash -o errexit -c 'rm {v}'",
            "bash -O extglob -c 'rm {v}'",
            "trap 'rm {v}' EXIT",
            "trap -- 'rm {v}' EXIT",
            "source /dev/stdin <<< 'rm {v}'",
            ". <(echo rm {v})",
            "bash <<< 'rm {v}'",
            "bash /dev/stdin <<< 'rm {v}'",
            "shopt -s expand_aliases\nalias ls='rm {v}'\nls",
            "hash -p /bin/rm ls; ls {v}",
            "mapfile -C 'rm {v};:' -c 1 a <<< x",
            "compgen -C 'rm {v}' x",
            "sh -c \"eval 'rm {v}'\"",
            "zsh -c 'rm {v}'",
        ],
        ALL,
    );
}

/// Class 12: git's global options under prefix rules: `-C`, `--no-pager`, `-c alias.…`.
#[test]
fn class_12_git_global_options() {
    let fx = || {
        let fx = project();
        repo(&fx);
        fx
    };
    must_hold(
        &fx,
        &[
            "git -C . tag {m}",
            "git --no-pager tag {m}",
            "git -P tag {m}",
            "git -c alias.t=tag t {m}",
            "git -c alias.x='!touch {m}' x",
            "git --literal-pathspecs tag {m}",
        ],
        ALL,
    );
    let fx = fx();
    let out = Command::new("git")
        .args(["tag", "-l"])
        .current_dir(&fx.cwd)
        .output()
        .unwrap();
    assert!(out.stdout.is_empty());
}

/// Class 13: The critical-path `rm` check sees paths that reach rm through xargs, find and any
/// wrapper (asked in every mode, bypass included; here answered with deny).
#[test]
fn class_13_critical_rm_through_xargs_find_and_wrappers() {
    let fx = || {
        let fx = project();
        fx.write("keep.txt", "keep\n");
        fx
    };
    must_hold(
        &fx,
        &[
            "echo . | xargs rm -rf",
            "find . -delete",
            "find . -exec rm -rf {} +",
            "find {cwd} -mindepth 1 -delete",
            "timeout 5 rm -rf .",
            "nice rm -rf ~",
            "env -C .. rm -rf proj",
            "command rm -rf ..",
            "xargs -a /dev/stdin rm -rf <<< .",
        ],
        &["bypassPermissions", "acceptEdits"],
    );
}

/// Class 14: Read deny rules in bypass through `env -C`, `find -exec`, `xargs -a`.
#[test]
fn class_14_read_deny_in_bypass() {
    must_hold(
        &project,
        &[
            "env -C sub cat ../.env",
            "find . -name .env -exec cat {} +",
            "find . -name '.e*' -exec head {} \\;",
            "xargs -a .env echo",
            "xargs --arg-file=.env echo",
            "cd sub && cat ../.env",
        ],
        &["bypassPermissions", "default"],
    );
}

/// Code toolrt cannot see asks in bypass with a Bash deny rule alone (no path rules).
#[test]
fn hidden_code_asks_in_bypass_with_only_a_bash_deny_rule() {
    let fx = project();
    let s = fx.settings(json!({"deny": ["Bash(rm *)"]}));
    let attempts = [
        "x='a[$(rm victim_0)]'; echo $((x))",
        "echo 'rm victim_1' | bash",
        "env BASH_ENV=<(echo rm victim_2) bash -c true",
        "echo 'unterminated; rm victim_3",
        "c='rm victim_4'; eval \"$c\"",
    ];
    let mut calls = Vec::new();
    for (i, a) in attempts.iter().enumerate() {
        fx.write(&format!("victim_{i}"), "keep\n");
        calls.push(bash(&format!("h{i}"), a));
    }
    let run = fx.run(
        &s,
        &["--permission-mode", "bypassPermissions"],
        &calls,
        "deny",
    );
    for (i, (id, _, input)) in calls.iter().enumerate() {
        assert_eq!(run.outcome(id), "denied", "{input}: {}", run.content(id));
        assert!(fx.path(&format!("victim_{i}")).exists(), "{input}");
    }
}

/// Class 14b: An `--output=FILE` option writes FILE, for every program: Edit deny rules hold.
#[test]
fn class_14_output_options_are_writes() {
    let fx = || {
        let fx = project();
        repo(&fx);
        fx
    };
    let s_fx = fx();
    let s = s_fx.settings(json!({"deny": ["Edit(made_*)"]}));
    let calls = vec![
        bash("o0", "git log --output=made_0 -1"),
        bash("o1", "git diff --output made_1"),
        bash("o2", "sort --output=made_2 notes.txt"),
    ];
    let run = s_fx.run(
        &s,
        &["--permission-mode", "bypassPermissions"],
        &calls,
        "deny",
    );
    for (id, _, input) in &calls {
        assert_eq!(run.outcome(id), "denied", "{input}: {}", run.content(id));
    }
    for m in ["made_0", "made_1", "made_2"] {
        assert!(!s_fx.path(m).exists(), "{m} was written");
    }
}

/// Class 15: Paths through `/proc/self/cwd`, `/proc/self/root`, `/dev/fd/N` resolve to what they name
/// before rules match, for Bash and for the Read tool. toolrt's own process runs elsewhere than
/// the session's cwd here, so `/proc/self/cwd` means something else to toolrt than to the
/// command it runs.
#[test]
fn class_15_proc_and_fd_aliases() {
    let attempts = [
        "cat /proc/self/cwd/.env",
        "cat /proc/thread-self/cwd/sub/../.env",
        "cat /proc/self/root{cwd}/.env",
        "cd sub && cat /proc/self/cwd/../.env",
        "cat /dev/fd/3 3< .env",
        "cat /dev/stdin < .env",
        "cat /proc/$$/cwd/.env",
        "cat /proc/self/fd/3 3<.env",
        "cat /proc/self/root/proc/self/cwd/.env",
        "cat /proc/self/fd/3/.env 3<.",
        "cat /dev/stdin/.env < .",
        "cd /proc/self/cwd && cat .env",
        "cd /proc/self/cwd/sub && cat ../.env",
        "git -C /proc/self/cwd show HEAD:.env",
    ];
    for mode in ALL {
        let fx = project();
        let s = fx.settings(deny_rules());
        let mut calls = Vec::new();
        for (i, a) in attempts.iter().enumerate() {
            let cmd = a.replace("{cwd}", &fx.cwd.display().to_string());
            calls.push(bash(&format!("b{i}"), &cmd));
        }
        calls.push(call(
            "r0",
            "Read",
            json!({"file_path": "/proc/self/cwd/proj/.env"}),
        ));
        calls.push(call(
            "r1",
            "Read",
            json!({"file_path": format!("/proc/self/root{}/.env", fx.cwd.display())}),
        ));
        // toolrt's own descriptors are its protocol: never read or written as a file (the
        // harness fails on any stdout line that is not JSON).
        calls.push(call(
            "w0",
            "Write",
            json!({"file_path": "/dev/stdout", "content": "not json"}),
        ));
        calls.push(call("w1", "Read", json!({"file_path": "/dev/stdin"})));
        let run = fx.run_from(&fx.root, &s, &["--permission-mode", mode], &calls, "deny");
        for (id, _, input) in &calls {
            let outcome = run.outcome(id);
            // A Write over an existing file that was never read is refused even earlier.
            let refused = outcome == "denied" || (id == "w0" && outcome == "validation_error");
            assert!(refused, "{mode} {input}: {outcome}: {}", run.content(id));
            assert!(!run.content(id).contains("hunter2"), "{mode} {input}");
        }
    }
}

/// Class 16: Runners toolrt did not know (`setarch`, the dynamic loader, `ssh-agent`, a
/// `strace -o '|cmd'` pipe), variables that hold a program's options (`TAR_OPTIONS`,
/// `LESSOPEN`, `GIT_CONFIG_PARAMETERS`) and git's `ext::` transport: the deny rules hold.
#[test]
fn class_16_runners_option_variables_and_git_ext() {
    must_hold(
        &project,
        &[
            "setarch x86_64 rm {v}",
            "linux64 rm {v}",
            "/lib64/ld-linux-x86-64.so.2 /bin/rm {v}",
            "ssh-agent rm {v}",
            "TAR_OPTIONS='--to-command=rm\\ {v}' tar -xf a{m}.tar",
            "LESSOPEN='|rm {v} %s' less notes.txt",
            "GIT_CONFIG_PARAMETERS=\"'core.fsmonitor'='rm {v}'\" git status",
            "git -c protocol.ext.allow=always ls-remote 'ext::rm {v}'",
            "git clone -c protocol.ext.allow=always 'ext::touch {m}' d{m}",
            "git -c protocol.ext.allow=always -c remote.o.url='ext::rm {v}' fetch o",
            "git -c protocol.ext.allow=always fetch 'ext::sh -c rm% {v}'",
            "echo rm {v} | xargs env",
            "echo rm {v} | xargs timeout 5",
            "su root -c 'rm {v}'",
            "strace -qq -o '!rm {v}' true",
        ],
        ALL,
    );
}

/// Class 16, `xargs` without `-I`: the words it reads from stdin may be options, not only the
/// one operand the program tables count (`xargs find` with `-exec` on stdin, `xargs grep` with
/// a denied file on stdin).
#[test]
fn class_16_xargs_words_from_stdin() {
    let mut rules = deny_rules();
    rules["allow"] = json!(["Bash(find *)", "Bash(sort *)"]);
    must_hold_under(
        &project,
        rules,
        &[
            "echo '. -maxdepth 0 -exec touch {m} ;' | xargs find",
            "echo '. -maxdepth 0 -exec rm {v} ;' | xargs find",
            "echo 'SECRET .env' | xargs grep",
            "echo '-o {m} notes.txt' | xargs sort",
        ],
        &["default", "acceptEdits", "dontAsk", "bypassPermissions"],
    );
}

/// Class 16, bypassPermissions lets the agent write `.git/config` like any file, so a command
/// git would run from it is code toolrt cannot check against the deny rules; and `git clone -c`
/// writes such configuration into the repository it makes.
#[test]
fn class_16_git_configuration_the_agent_wrote_in_bypass() {
    let fx = project();
    repo(&fx);
    let config = fx.cwd.join(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[core]\n\tfsmonitor = touch made_f\n");
    std::fs::write(&config, text).unwrap();
    let s = fx.settings(deny_rules());
    let calls = vec![
        bash("g0", "git status"),
        bash(
            "g1",
            "git clone -q -c core.fsmonitor='touch made_c' . d1 && git -C d1 status",
        ),
    ];
    let run = fx.run(
        &s,
        &["--permission-mode", "bypassPermissions"],
        &calls,
        "deny",
    );
    for (id, _, input) in &calls {
        assert_eq!(run.outcome(id), "denied", "{input}: {}", run.content(id));
    }
    assert!(!fx.path("made_f").exists());
    assert!(!fx.path("d1/made_c").exists() && !fx.path("made_c").exists());
}

/// Sends each command in each mode, in a project `setup` prepares, and checks that it is denied
/// and that none of `forbidden` (paths in the project) was written.
fn must_not_write(
    setup: &dyn Fn(&Fixture),
    rules: serde_json::Value,
    cmds: &[&str],
    modes: &[&str],
    forbidden: &[&str],
) {
    for mode in modes {
        let fx = project();
        setup(&fx);
        let s = fx.settings(rules.clone());
        let calls: Vec<_> = cmds
            .iter()
            .enumerate()
            .map(|(i, c)| bash(&format!("c{i}"), c))
            .collect();
        let run = fx.run(&s, &["--permission-mode", mode], &calls, "deny");
        let mut bad = Vec::new();
        for (id, _, input) in &calls {
            if run.outcome(id) != "denied" {
                bad.push(format!("{mode}: {input} -> {}", run.content(id)));
            }
        }
        for f in forbidden {
            if fx.path(f).exists() {
                bad.push(format!("{mode}: {f} was written"));
            }
        }
        assert!(bad.is_empty(), "{}\nstderr: {}", bad.join("\n"), run.stderr);
    }
}

fn sh(dir: &std::path::Path, script: &str) {
    let ok = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .status()
        .expect("run sh")
        .success();
    assert!(ok, "{script}");
}

/// Rules on `secret.txt` and `.bashrc` (also a protected path), with allow rules for the
/// programs class 17 writes through.
fn edit_rules() -> serde_json::Value {
    json!({
        "deny": ["Edit(secret.txt)", "Edit(.bashrc)"],
        "allow": ["Bash(cp *)", "Bash(mv *)", "Bash(gzip *)", "Bash(gunzip *)", "Bash(patch *)"]
    })
}

const WRITING_MODES: &[&str] = &["default", "acceptEdits", "dontAsk", "bypassPermissions"];

/// Class 17, backups: `cp -b -S SUF` renames the existing destination to DEST+SUF, a file no
/// operand names (`cp -b -S rc x .bash` writes `.bashrc`).
#[test]
fn class_17_backup_suffix_names_the_written_file() {
    must_not_write(
        &|fx| {
            fx.write("secret", "old\n");
            fx.write(".bash", "old\n");
        },
        edit_rules(),
        &[
            "cp -b -S .txt notes.txt secret",
            "mv --suffix=.txt notes2.txt secret",
            "cp -S rc notes.txt .bash",
            "SIMPLE_BACKUP_SUFFIX=.txt cp --backup notes.txt secret",
        ],
        WRITING_MODES,
        &["secret.txt", ".bashrc"],
    );
}

/// Class 17, compressors: `gunzip F.gz` writes F, `gzip -S SUF F` writes F+SUF.
#[test]
fn class_17_compressors_write_derived_names() {
    must_not_write(
        &|fx| {
            fx.write("secret", "old\n");
            sh(
                &fx.cwd,
                "printf x > secret.txt && gzip secret.txt && printf y > .bashrc && gzip .bashrc",
            );
        },
        edit_rules(),
        &[
            "gunzip secret.txt.gz",
            "gzip -S .txt secret",
            "gzip -dk .bashrc.gz",
        ],
        WRITING_MODES,
        &["secret.txt", ".bashrc"],
    );
}

/// Class 17, `patch`: without a file to patch it writes the files its patch names, which toolrt
/// does not read.
#[test]
fn class_17_patch_writes_what_its_patch_names() {
    let diff = "--- /dev/null\n+++ secret.txt\n@@ -0,0 +1 @@\n+x\n";
    must_not_write(
        &|fx| {
            fx.write("new.diff", diff);
        },
        edit_rules(),
        &["patch -p0 < new.diff", "patch -p0 -i new.diff"],
        WRITING_MODES,
        &["secret.txt"],
    );
}

/// Class 17, terminal multiplexers: tmux and screen run their own command language — keys typed
/// one by one, `source-file`, `#(…)` in formats — that no deny rule can be checked against.
#[test]
fn class_17_multiplexer_command_language() {
    must_hold(
        &project,
        &[
            "tmux -L t{m} send -t s r m Space {v} Enter",
            "tmux -L t{m} source-file {m}.conf",
            "tmux -L t{m} display -p '#(touch {m})'",
            "screen -c {m}.rc -dm true",
        ],
        ALL,
    );
}

/// Class 17, configuration through the environment: a variable that holds options or names a
/// configuration file (npm, pip, cargo, git, the loader) can make an allowed program run
/// anything.
#[test]
fn class_17_configuration_variables() {
    must_hold(
        &project,
        &[
            "npm_config_script_shell={m}.sh npm test",
            "NPM_CONFIG_USERCONFIG={m}.rc npm --version",
            "export npm_config_node_options=--require=./{m}.js && npm --version",
            "PIP_CONFIG_FILE={m}.conf pip --version",
            "RUSTFLAGS='-C linker=./{m}' cargo --version",
            "GIT_CONFIG_GLOBAL={m}.cfg git status",
            "LD_PRELOAD=./{m}.so ls",
        ],
        ALL,
    );
}

/// Class 17, package runners: the command `uv run`, `npx`, `bundle exec`, … run is matched by
/// deny rules.
#[test]
fn class_17_package_runners() {
    must_hold(
        &project,
        &[
            "uv run rm {v}",
            "uv run --with x -- rm {v}",
            "poetry run touch {m}",
            "npx -y rm {v}",
            "npm exec -c 'rm {v}'",
            "pnpm dlx rm {v}",
            "bundle exec touch {m}",
            "conda run -n base rm {v}",
            "mise exec -- rm {v}",
        ],
        ALL,
    );
}

/// Class 18: a destination only known when it runs (`"$PWD/.bashrc"`, `"$X"`) may be a
/// protected path, so a prefix rule such as `Bash(cp *)` does not allow the command.
#[test]
fn class_18_unnamed_destinations_under_a_prefix_rule() {
    must_not_write(
        &|fx| {
            fx.write("notes.txt", "x\n");
        },
        json!({"allow": ["Bash(cp *)", "Bash(mv *)"]}),
        &[
            "cp notes.txt \"$PWD/.bashrc\"",
            "X=.bashrc; cp notes.txt \"$X\"",
        ],
        &["default", "acceptEdits", "dontAsk"],
        &[".bashrc"],
    );
}
