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
    let (messages, _) = run(
        &sb,
        &["--allowed-tools", "Bash(seq *)", "--temp-output-dir"],
        &[],
        &[big_call("big")],
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
