//! What toolrt says on stderr: useful debug lines with `TOOLRT_LOG=debug`, no colour codes when
//! stderr is not a terminal, each warning once, misspelt settings keys named with the key they
//! most likely meant, `--strict-settings`, and the same error for an empty rule wherever it is.

mod support;

use serde_json::json;
use support::*;

/// Starts `toolrt serve` in the sandbox with `args`, `TOOLRT_LOG` set to `log` when given.
fn serve(sb: &Sandbox, args: &[&str], log: Option<&str>) -> Server {
    let mut cmd = command();
    cmd.arg("serve")
        .arg("--cwd")
        .arg(&sb.cwd)
        .arg("--output-dir")
        .arg(&sb.out)
        .args(args)
        .current_dir(&sb.cwd)
        .env("HOME", sb.dir.path())
        .env_remove("NO_COLOR");
    match log {
        Some(level) => cmd.env("TOOLRT_LOG", level),
        None => cmd.env_remove("TOOLRT_LOG"),
    };
    Server::spawn(cmd, Stderr::Capture)
}

#[test]
fn debug_logging_shows_each_step_of_a_call() {
    let sb = Sandbox::new();
    sb.write("f.txt", "x\n");
    let settings = sb.write(
        "s.json",
        r#"{"permissions": {"allow": ["Bash(echo *)"]},
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 0"}]}]}}"#,
    );
    let mut server = serve(
        &sb,
        &["--settings", settings.to_str().unwrap()],
        Some("debug"),
    );
    server.tool_use("t1", "Bash", json!({"command": "echo hi"}));
    server.send(json!({"type": "batch", "id": "b", "calls": [{"id": "r", "name": "Read", "input": {"file_path": "f.txt"}}]}));
    let done = server.finish();
    let log = done.stderr;
    for needle in [
        "call admitted id=t1 tool=Bash",
        "batch admitted batch=b calls=1",
        "call{id=t1 tool=Bash}: call started",
        "hook started hook_event=\"PreToolUse\" tool_use_id=\"t1\" command=exit 0",
        "hook finished hook_event=\"PreToolUse\" tool_use_id=\"t1\" exit_code=0",
        "permission decided decision=\"allow\" by=the allow rule `Bash(echo *)` in ",
        "call{id=r tool=Read}: permission decided decision=\"allow\" by=a built-in default",
        "process started pid=",
        "command=\"echo hi\"",
        "process ended pid=",
        "ending=exit status: 0",
        "call{id=t1 tool=Bash}: call finished outcome=\"success\" stages=queue=",
    ] {
        assert!(log.contains(needle), "missing {needle:?} in:\n{log}");
    }
    let finished = log
        .lines()
        .find(|l| l.contains("call{id=t1 tool=Bash}: call finished"))
        .unwrap();
    for stage in [
        "validate=",
        "pre_hooks=",
        "permission=",
        "execute=",
        "budget=",
    ] {
        assert!(finished.contains(stage), "{finished}");
    }
}

#[test]
fn no_debug_lines_and_no_colour_codes_by_default() {
    let sb = Sandbox::new();
    let settings = sb.write("s.json", r#"{"colour": "blue"}"#);
    let mut server = serve(&sb, &["--settings", settings.to_str().unwrap()], None);
    server.tool_use("t1", "Read", json!({"file_path": "nope.txt"}));
    let done = server.finish();
    assert!(!done.stderr.contains("DEBUG"), "{}", done.stderr);
    assert!(done.stderr.contains("WARN"), "{}", done.stderr);
    assert!(
        !done.stderr.contains('\u{1b}'),
        "colour codes: {:?}",
        done.stderr
    );
}

#[test]
fn each_warning_is_printed_once() {
    let sb = Sandbox::new();
    let settings = sb.write(
        "s.json",
        r#"{"colour": 1, "permissions": {"alow": []},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}],
                      "PreToolUse": [{"matcher": "Bash", "extra": 1, "hooks": [{"type": "command", "command": "true"}]}]}}"#,
    );
    let s = settings.to_str().unwrap();
    // The same file twice: its warnings are still said once.
    let done = serve(&sb, &["--settings", s, "--settings", s], None).finish();
    assert!(done.status.success());
    for needle in [
        "unknown key \"colour\" ignored",
        "unknown key \"permissions.alow\" ignored",
        "hooks for events that do not apply to toolrt are loaded but never run: Stop (",
        "hooks.PreToolUse[0].extra: unknown key ignored",
    ] {
        assert_eq!(
            done.stderr.matches(needle).count(),
            1,
            "{needle:?} in:\n{}",
            done.stderr
        );
    }
}

#[test]
fn a_misspelt_key_names_the_key_it_most_likely_meant() {
    let sb = Sandbox::new();
    let settings = sb.write(
        "s.json",
        r#"{"permissions": {"alow": ["Read"]}, "limits": {"bash_char": 5},
            "tools": {"requireReadBeforEdit": false}, "defaultMode": "plan", "model": "x"}"#,
    );
    let done = serve(&sb, &["--settings", settings.to_str().unwrap()], None).finish();
    assert!(done.status.success());
    for (key, likely) in [
        ("permissions.alow", "permissions.allow"),
        ("limits.bash_char", "limits.bash_chars"),
        ("tools.requireReadBeforEdit", "tools.requireReadBeforeEdit"),
        ("defaultMode", "permissions.defaultMode"),
    ] {
        let want = format!("unknown key {key:?} ignored; did you mean {likely:?}?");
        assert!(done.stderr.contains(&want), "{want} in:\n{}", done.stderr);
    }
    let model = done
        .stderr
        .lines()
        .find(|l| l.contains("unknown key \"model\""))
        .expect("model warns");
    assert!(!model.contains("did you mean"), "{model}");
}

#[test]
fn strict_settings_makes_what_would_be_ignored_an_error() {
    let sb = Sandbox::new();
    let bad = sb.write("bad.json", r#"{"permissions": {"alow": ["Read"]}}"#);
    let good = sb.write("good.json", r#"{"permissions": {"allow": ["Read"]}}"#);
    let (code, err) = serve_status(
        &sb.cwd,
        &["--strict-settings", "--settings", bad.to_str().unwrap()],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--strict-settings"), "{err}");
    assert!(
        err.contains("bad.json: unknown key \"permissions.alow\" ignored; did you mean \"permissions.allow\"?"),
        "{err}"
    );
    let (code, err) = serve_status(
        &sb.cwd,
        &["--strict-settings", "--settings", good.to_str().unwrap()],
    );
    assert_eq!(code, Some(0), "{err}");
    // explain holds to it too.
    let out = command()
        .args(["explain", "--strict-settings", "--settings"])
        .arg(&bad)
        .args(["Read", r#"{"file_path": "x"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn an_empty_rule_from_a_flag_is_the_same_error_as_in_a_file() {
    let sb = Sandbox::new();
    let file = sb.write("s.json", r#"{"permissions": {"allow": [""]}}"#);
    let (code, from_file) = serve_status(&sb.cwd, &["--settings", file.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    let reason = from_file.trim().rsplit(": ").next().unwrap().to_string();
    assert_eq!(reason, "empty rule", "{from_file}");
    for (flag, value) in [
        ("--allowed-tools", ""),
        ("--disallowed-tools", ""),
        ("--allowed-tools", " , "),
    ] {
        let (code, err) = serve_status(&sb.cwd, &[flag, value]);
        assert_eq!(code, Some(2), "{flag} {value:?}: {err}");
        assert_eq!(err.trim(), format!("toolrt: {flag}: {reason}"));
    }
}

#[test]
fn toolrt_log_takes_a_level_or_a_filter() {
    let sb = Sandbox::new();
    let settings = sb.write("s.json", r#"{"permissions": {"alow": []}}"#);
    let s = settings.to_str().unwrap();
    let stderr_with = |log: &str| {
        let mut server = serve(&sb, &["--settings", s], Some(log));
        server.tool_use("t1", "Read", json!({"file_path": "s.json"}));
        let done = server.finish();
        assert!(done.status.success(), "{log}: {}", done.stderr);
        assert_eq!(done.result("t1")["outcome"], "success");
        done.stderr
    };
    let warning = "unknown key \"permissions.alow\" ignored";
    let admitted = "call admitted id=t1 tool=Read";
    let decided = "permission decided";
    // `info`: warnings, no debug lines (toolrt logs nothing at info of its own).
    let log = stderr_with("info");
    assert!(log.contains(warning), "info:\n{log}");
    assert!(
        !log.contains(admitted) && !log.contains("DEBUG"),
        "info:\n{log}"
    );
    // `error`: not even the warning.
    let log = stderr_with("error");
    assert!(!log.contains(warning), "error:\n{log}");
    // Filter syntax: debug for the dispatcher only, warnings for the rest.
    let log = stderr_with("warn,toolrt::dispatch=debug");
    assert!(log.contains(warning), "filter:\n{log}");
    assert!(log.contains(admitted), "filter:\n{log}");
    assert!(!log.contains(decided), "filter:\n{log}");
    // The same at `debug` has both.
    let log = stderr_with("debug");
    assert!(
        log.contains(admitted) && log.contains(decided),
        "debug:\n{log}"
    );
}

/// Runs `toolrt serve` with stderr on a new terminal (stdin empty, so it starts and stops) and
/// returns what the terminal showed.
fn stderr_on_a_terminal(
    sb: &Sandbox,
    settings: &std::path::Path,
    no_color: Option<&str>,
) -> String {
    use std::io::Read;
    use std::process::Stdio;
    let pty = nix::pty::openpty(None, None).expect("a pseudo-terminal");
    let mut cmd = command();
    cmd.arg("serve")
        .arg("--cwd")
        .arg(&sb.cwd)
        .arg("--output-dir")
        .arg(&sb.out)
        .arg("--settings")
        .arg(settings)
        .current_dir(&sb.cwd)
        .env("HOME", sb.dir.path())
        .env_remove("TOOLRT_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(pty.slave));
    match no_color {
        Some(v) => cmd.env("NO_COLOR", v),
        None => cmd.env_remove("NO_COLOR"),
    };
    let mut child = cmd.spawn().unwrap();
    // Our copy of the terminal's other end goes with `cmd`: reading ends once toolrt (and its
    // watchdog) have closed theirs.
    drop(cmd);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut master = std::fs::File::from(pty.master);
    std::thread::spawn(move || {
        let mut all = Vec::new();
        // A terminal whose other end is closed reads as an error (EIO); what came before stays.
        let _ = master.read_to_end(&mut all);
        let _ = tx.send(all);
    });
    assert!(child.wait().unwrap().success());
    let all = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the terminal was closed");
    String::from_utf8_lossy(&all).into_owned()
}

#[test]
fn colour_codes_on_a_terminal_unless_no_color_is_set() {
    let sb = Sandbox::new();
    let settings = sb.write("s.json", r#"{"colour": "blue"}"#);
    let shown = stderr_on_a_terminal(&sb, &settings, None);
    assert!(
        shown.contains("unknown key \"colour\" ignored"),
        "{shown:?}"
    );
    assert!(shown.contains("\u{1b}["), "no colour codes: {shown:?}");
    let shown = stderr_on_a_terminal(&sb, &settings, Some("1"));
    assert!(
        shown.contains("unknown key \"colour\" ignored"),
        "{shown:?}"
    );
    assert!(!shown.contains('\u{1b}'), "colour codes: {shown:?}");
}

#[test]
fn debug_logging_names_the_mode_every_stage_hooks_and_how_a_process_was_stopped() {
    let sb = Sandbox::new();
    let settings = sb.write(
        "s.json",
        r#"{"hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "exit 0"}]}]}}"#,
    );
    let mut server = serve(
        &sb,
        &[
            "--settings",
            settings.to_str().unwrap(),
            "--permission-mode",
            "acceptEdits",
            "--allowed-tools",
            "Bash(sleep *)",
        ],
        Some("debug"),
    );
    server.tool_use("w", "Write", json!({"file_path": "w.txt", "content": "x"}));
    server.tool_use("t", "Bash", json!({"command": "sleep 30", "timeout": 100}));
    let done = server.finish();
    assert_eq!(done.result("w")["outcome"], "success");
    assert_eq!(done.result("t")["outcome"], "timed_out");
    let log = done.stderr;
    let line = |needle: &str| {
        log.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{log}"))
    };
    line(
        "call{id=w tool=Write}: permission decided decision=\"allow\" by=the permission mode acceptEdits",
    );
    let finished = line("call{id=w tool=Write}: call finished outcome=\"success\"");
    for stage in [
        "queue=",
        "validate=",
        "slot=",
        "pre_hooks=",
        "permission=",
        "execute=",
        "post_hooks=",
        "budget=",
    ] {
        assert!(finished.contains(stage), "{stage} missing: {finished}");
    }
    let hook = line("hook finished hook_event=\"PostToolUse\" tool_use_id=\"w\"");
    for field in ["exit_code=0", "duration_ms=", "outcome=\"success\""] {
        assert!(hook.contains(field), "{field} missing: {hook}");
    }
    line("process ended pid=");
    assert!(
        log.lines()
            .any(|l| l.contains("process ended") && l.contains("ending=timed out, group killed")),
        "{log}"
    );
}
