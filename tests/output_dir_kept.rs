//! A result that says its full output was saved to a file points to a file that still exists
//! after `toolrt run` exits and that the model can read back without asking; a temporary
//! output folder is used only when asked for, and the notice then says so.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::*;

/// Runs `toolrt run -` over `lines` in the sandbox's project with the sandbox as `$HOME` and
/// `env` set; returns every stdout message and stderr.
fn run(
    sb: &Sandbox,
    args: &[&str],
    env: &[(&str, &Path)],
    lines: &[Value],
) -> (Vec<Value>, String) {
    let mut cmd = Command::new(bin());
    cmd.arg("run")
        .arg("-")
        .arg("--cwd")
        .arg(&sb.cwd)
        .args(args)
        .current_dir(&sb.cwd)
        .env("HOME", sb.dir.path())
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        for l in lines {
            writeln!(stdin, "{l}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let messages = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (messages, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn result<'a>(messages: &'a [Value], id: &str) -> &'a Value {
    messages
        .iter()
        .find(|v| is_result(v, id))
        .unwrap_or_else(|| panic!("no result {id}: {messages:#?}"))
}

const BIG: &str = "seq 1 100000";

fn big_call(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": BIG}})
}

fn expected_big() -> String {
    (1..=100000).map(|i| format!("{i}\n")).collect()
}

#[test]
fn the_default_output_folder_is_kept_in_the_state_directory() {
    let sb = Sandbox::new();
    let (messages, _) = run(
        &sb,
        &["--allowed-tools", "Bash(seq *)"],
        &[],
        &[big_call("big")],
    );
    let r = result(&messages, "big");
    let file = PathBuf::from(r["output_file"].as_str().expect("externalized"));
    let sessions = sb.dir.path().join(".local/state/toolrt/sessions");
    assert!(
        file.starts_with(&sessions),
        "{} not under {}",
        file.display(),
        sessions.display()
    );
    // toolrt has exited: the file is still there, whole.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), expected_big());
    assert!(!r["content"].as_str().unwrap().contains("temporary"));
    // Not inside the workspace, and only its owner may look into it.
    assert!(!file.starts_with(&sb.cwd));
    use std::os::unix::fs::PermissionsExt;
    for folder in [&sessions, &file.parent().unwrap().to_path_buf()] {
        let mode = std::fs::metadata(folder).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{} mode {mode:o}", folder.display());
    }
}

#[test]
fn xdg_state_home_is_honoured() {
    let sb = Sandbox::new();
    let state = sb.dir.path().join("state");
    let (messages, _) = run(
        &sb,
        &["--allowed-tools", "Bash(seq *)"],
        &[("XDG_STATE_HOME", &state)],
        &[big_call("big")],
    );
    let file = PathBuf::from(result(&messages, "big")["output_file"].as_str().unwrap());
    assert!(
        file.starts_with(state.join("toolrt/sessions")),
        "{}",
        file.display()
    );
    assert!(file.exists());
}

#[test]
fn a_temporary_folder_only_when_asked_and_the_notice_says_so() {
    let sb = Sandbox::new();
    let background = json!({"type": "tool_use", "id": "bg", "name": "Bash",
        "input": {"command": "seq 1 3", "run_in_background": true}});
    let (messages, _) = run(
        &sb,
        &["--allowed-tools", "Bash(seq *)", "--temp-output-dir"],
        &[],
        &[big_call("big"), background],
    );
    // A background task's start notice names its output file in the folder too.
    let started = result(&messages, "bg")["content"].as_str().unwrap();
    assert!(
        started.contains(".log (a temporary folder: deleted when this toolrt session ends)"),
        "{started}"
    );
    let r = result(&messages, "big");
    let file = PathBuf::from(r["output_file"].as_str().unwrap());
    let content = r["content"].as_str().unwrap();
    assert!(
        content.contains(&format!(
            "saved to {} (a temporary folder: deleted when this toolrt session ends)",
            file.display()
        )),
        "{content}"
    );
    assert!(!file.exists(), "the temporary folder is gone after exit");
    assert!(!sb.dir.path().join(".local/state/toolrt").exists());
}

/// The first file found under `dir`, depth first.
fn first_file(dir: &Path) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_file() {
            return Some(path);
        }
        if let Some(found) = first_file(&path) {
            return Some(found);
        }
    }
    None
}

#[test]
fn the_model_can_read_its_output_file_back_without_asking() {
    let sb = Sandbox::new();
    sb.write("f.txt", "before\n");
    // No prompt possible: anything that would ask is denied.
    let mut server = Server::start(
        &[
            "serve".into(),
            "--cwd".into(),
            sb.cwd.display().to_string(),
            "--permission-prompt".into(),
            "none".into(),
            "--allowed-tools".into(),
            "Bash(seq *)".into(),
            "--permission-mode".into(),
            "acceptEdits".into(),
        ],
        &sb.cwd,
    );
    server.send(big_call("big"));
    let big = server.result("big");
    let file = big["output_file"].as_str().unwrap().to_string();
    let folder = Path::new(&file).parent().unwrap().to_path_buf();
    server.tool_use("r1", "Read", json!({"file_path": file}));
    let r1 = server.result("r1");
    assert_eq!(r1["outcome"], "success", "{r1}");
    assert!(r1["content"].as_str().unwrap().starts_with("     1\t1\n"));
    server.tool_use(
        "r2",
        "Read",
        json!({"file_path": file, "offset": 99990, "limit": 11}),
    );
    assert!(
        server.result("r2")["content"]
            .as_str()
            .unwrap()
            .contains("100000\t100000")
    );
    server.tool_use(
        "g",
        "Grep",
        json!({"pattern": "^77777$", "path": file, "output_mode": "count"}),
    );
    assert_eq!(server.result("g")["outcome"], "success");
    // An Edit leaves a checkpoint of the file's prior content there: not readable unasked.
    server.tool_use("r", "Read", json!({"file_path": "f.txt"}));
    server.result("r");
    server.tool_use(
        "e",
        "Edit",
        json!({"file_path": "f.txt", "old_string": "before", "new_string": "after"}),
    );
    assert_eq!(server.result("e")["outcome"], "success");
    let checkpoints = folder.join("checkpoints");
    let saved = first_file(&checkpoints).expect("a checkpoint file");
    server.tool_use("cp", "Read", json!({"file_path": saved}));
    assert_eq!(server.result("cp")["outcome"], "denied");
    // Nor is a search of the whole folder, which would reach the checkpoints, or a listing.
    server.tool_use("all", "Grep", json!({"pattern": "before", "path": folder}));
    assert_eq!(server.result("all")["outcome"], "denied");
    server.tool_use(
        "ls",
        "Glob",
        json!({"pattern": format!("{}/*", checkpoints.display())}),
    );
    assert_eq!(server.result("ls")["outcome"], "denied");
    // Another session's folder is not this session's.
    let other = folder.parent().unwrap().join("another-session");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("x.txt"), "x\n").unwrap();
    server.tool_use("o", "Read", json!({"file_path": other.join("x.txt")}));
    assert_eq!(server.result("o")["outcome"], "denied");
    server.finish();
}

#[test]
fn an_output_dir_that_would_expose_more_than_outputs_is_refused() {
    let sb = Sandbox::new();
    let home = sb.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let status = |dir: &Path| {
        let out = Command::new(bin())
            .args(["serve", "--cwd"])
            .arg(&sb.cwd)
            .arg("--output-dir")
            .arg(dir)
            .env("HOME", &home)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for dir in [
        Path::new("/"),
        &home,
        sb.dir.path(),
        sb.cwd.parent().unwrap(),
    ] {
        let (code, err) = status(dir);
        assert_eq!(code, Some(2), "{}: {err}", dir.display());
        assert!(
            err.contains("--output-dir") && err.contains("folder of its own"),
            "{err}"
        );
    }
    let file = sb.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let (code, err) = status(&file);
    assert_eq!(code, Some(2));
    assert!(err.contains("not a folder"), "{err}");
    // A folder of its own is fine.
    let (code, err) = status(&sb.out);
    assert_eq!(code, Some(0), "{err}");
}

/// `toolrt serve` in the sandbox with the default output folder (`$HOME` the sandbox, no
/// `XDG_STATE_HOME`) and Bash's `seq` allowed.
fn serve_default_folder(sb: &Sandbox) -> Server {
    let mut cmd = Command::new(bin());
    cmd.arg("serve")
        .arg("--cwd")
        .arg(&sb.cwd)
        .args(["--allowed-tools", "Bash(seq *)"])
        .current_dir(&sb.cwd)
        .env("HOME", sb.dir.path())
        .env_remove("XDG_STATE_HOME");
    Server::spawn(cmd, Stderr::Capture)
}

#[test]
fn the_output_folder_is_made_only_when_the_first_file_is_written() {
    let sb = Sandbox::new();
    sb.write("f.txt", "x\n");
    let state = sb.dir.path().join(".local/state/toolrt");
    // Calls whose results fit write no file: a session of them leaves nothing behind.
    let small = |server: &mut Server| {
        server.tool_use("r", "Read", json!({"file_path": "f.txt"}));
        server.tool_use("e", "Bash", json!({"command": "echo small"}));
        server.tool_use("s", "Bash", json!({"command": "seq 1 10"}));
        for id in ["r", "e", "s"] {
            assert_eq!(server.result(id)["outcome"], "success");
        }
    };
    let mut server = serve_default_folder(&sb);
    small(&mut server);
    assert!(server.finish().status.success());
    assert!(!state.exists(), "{} was made", state.display());
    // The first file makes it.
    let mut server = serve_default_folder(&sb);
    small(&mut server);
    assert!(!state.exists(), "{} was made early", state.display());
    server.send(big_call("big"));
    let file = PathBuf::from(server.result("big")["output_file"].as_str().unwrap());
    assert!(
        file.starts_with(state.join("sessions")),
        "{}",
        file.display()
    );
    assert!(file.exists());
    server.finish();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), expected_big());
}

#[test]
fn an_output_dir_that_does_not_exist_is_made_and_kept() {
    let sb = Sandbox::new();
    let dir = sb.dir.path().join("made/here");
    let (messages, _) = run(
        &sb,
        &[
            "--allowed-tools",
            "Bash(seq *)",
            "--output-dir",
            dir.to_str().unwrap(),
        ],
        &[],
        &[big_call("big")],
    );
    let file = PathBuf::from(result(&messages, "big")["output_file"].as_str().unwrap());
    assert_eq!(file.parent().unwrap(), dir, "{}", file.display());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), expected_big());
    use std::os::unix::fs::PermissionsExt;
    for folder in [&dir, &sb.dir.path().join("made")] {
        let mode = std::fs::metadata(folder).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{} mode {mode:o}", folder.display());
    }
}

#[test]
fn a_background_task_writes_its_output_to_the_output_folder() {
    let sb = Sandbox::new();
    let done = run_lines(
        &sb,
        &["--permission-mode", "bypassPermissions"],
        &[json!({"type": "batch", "id": "b", "calls": [
            {"id": "bg", "name": "Bash", "input": {"command": "echo from-the-task; touch t", "run_in_background": true}},
            {"id": "out", "name": "TaskOutput", "input": {"task_id": "bg-1", "timeout": 20000}}
        ]})],
    );
    assert_eq!(done.result("out")["outcome"], "success");
    let files: Vec<PathBuf> = std::fs::read_dir(&sb.out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    let holding: Vec<&PathBuf> = files
        .iter()
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|s| s.contains("from-the-task")))
        .collect();
    assert_eq!(holding.len(), 1, "{files:?}");
    // The result names it, so the model can read it back.
    assert!(
        done.result("bg")["content"]
            .as_str()
            .unwrap()
            .contains(holding[0].to_str().unwrap()),
        "{}",
        done.result("bg")
    );
}

#[test]
fn reading_the_output_folder_needs_no_rule_in_any_mode_but_deny_and_ask_rules_apply() {
    let sb = Sandbox::new();
    let (messages, _) = run(
        &sb,
        &[
            "--allowed-tools",
            "Bash(seq *)",
            "--output-dir",
            sb.out.to_str().unwrap(),
        ],
        &[],
        &[big_call("big")],
    );
    let file = result(&messages, "big")["output_file"]
        .as_str()
        .unwrap()
        .to_string();
    let read = json!({"type": "tool_use", "id": "r", "name": "Read", "input": {"file_path": file, "limit": 1}});
    let rule = format!("Read(/{}/**)", sb.out.display());
    for mode in [
        "default",
        "acceptEdits",
        "plan",
        "dontAsk",
        "bypassPermissions",
    ] {
        // Nobody can approve: anything that would ask is denied.
        let base = ["--permission-prompt", "none", "--permission-mode", mode];
        let done = run_lines(&sb, &base, std::slice::from_ref(&read));
        let r = done.result("r");
        assert_eq!(r["outcome"], "success", "{mode}: {r}");
        assert_eq!(r["content"], "     1\t1\n", "{mode}");
        let done = run_lines(
            &sb,
            &[&base[..], &["--disallowed-tools", &rule]].concat(),
            std::slice::from_ref(&read),
        );
        let r = done.result("r");
        assert_eq!(r["outcome"], "denied", "{mode} with a deny rule: {r}");
        assert!(
            r["content"].as_str().unwrap().contains(&rule),
            "{mode}: {r}"
        );
    }
    // An ask rule asks.
    let settings = sb.write(
        "ask.json",
        &json!({"permissions": {"ask": [rule]}}).to_string(),
    );
    let mut server = sb.serve(&["--settings", settings.to_str().unwrap()]);
    server.send(read);
    let request = server.wait_for(
        "a permission_request",
        std::time::Duration::from_secs(10),
        |v| v["type"] == "permission_request",
    );
    assert_eq!(request["tool_use_id"], "r");
    server.send(json!({"type": "permission_response", "request_id": request["request_id"], "behavior": "deny"}));
    assert_eq!(server.result("r")["outcome"], "denied");
    server.finish();
}

/// An over-budget output of a tool other than Bash (here Grep) goes to a new file of its own:
/// a symlink planted under any name the file could have had is not written through, a second
/// session's output with the same call id in the same `--output-dir` does not overwrite the
/// first, and the file is the owner's alone (mode 0600).
#[test]
fn an_output_file_is_new_private_and_never_written_through_a_planted_link() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let data: String = (0..5000)
        .map(|i| format!("line {i} payload payload payload\n"))
        .collect();
    std::fs::write(sb.cwd.join("data.txt"), &data).unwrap();
    let out = sb.cwd.join("out");
    std::fs::create_dir(&out).unwrap();
    let victim = sb.dir.path().join("victim.txt");
    std::fs::write(&victim, "ORIGINAL").unwrap();
    // The names a per-session counter would have given the first outputs of call `g`.
    for n in 0..4 {
        std::os::unix::fs::symlink(&victim, out.join(format!("g-{n}.txt"))).unwrap();
    }
    let grep = json!({"type": "tool_use", "id": "g", "name": "Grep",
        "input": {"pattern": "payload", "path": "data.txt", "output_mode": "content"}});
    let args = ["--output-dir", out.to_str().unwrap()];
    let (first, _) = run(&sb, &args, &[], std::slice::from_ref(&grep));
    let (second, _) = run(&sb, &args, &[], std::slice::from_ref(&grep));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "ORIGINAL");
    let file = |messages: &[Value]| {
        let r = result(messages, "g");
        assert_eq!(r["outcome"], "success", "{r}");
        PathBuf::from(
            r["output_file"]
                .as_str()
                .unwrap_or_else(|| panic!("no file: {r}")),
        )
    };
    let (a, b) = (file(&first), file(&second));
    assert_ne!(a, b, "two sessions' outputs share one file");
    for path in [&a, &b] {
        let meta = std::fs::symlink_metadata(path).unwrap();
        assert!(
            meta.file_type().is_file(),
            "{} is not a plain file",
            path.display()
        );
        assert_eq!(
            meta.permissions().mode() & 0o777,
            0o600,
            "{}",
            path.display()
        );
        let text = std::fs::read_to_string(path).unwrap();
        assert_eq!(text.lines().count(), 5000, "{}", path.display());
    }
}

/// A temporary output folder is named with its session's pid: a later session with
/// `--temp-output-dir` removes the folder of one that was killed outright (nothing else could),
/// and leaves a live session's alone.
#[test]
fn a_killed_sessions_temporary_folder_is_swept_by_the_next() {
    let sb = Sandbox::new();
    let tmp = sb.dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let leftover = tmp.join(format!("toolrt-out-{dead}-AbCdEf"));
    std::fs::create_dir(&leftover).unwrap();
    std::fs::write(leftover.join("big-1.txt"), "x").unwrap();
    let live = tmp.join(format!("toolrt-out-{}-GhIjKl", std::process::id()));
    std::fs::create_dir(&live).unwrap();
    let (messages, _) = run(
        &sb,
        &["--allowed-tools", "Bash(seq *)", "--temp-output-dir"],
        &[("TMPDIR", tmp.as_path())],
        &[big_call("big")],
    );
    let file = PathBuf::from(result(&messages, "big")["output_file"].as_str().unwrap());
    assert!(file.starts_with(&tmp), "{}", file.display());
    assert!(!leftover.exists(), "a dead session's folder was left");
    assert!(live.exists(), "a live session's folder was removed");
}
