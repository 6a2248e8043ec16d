//! The Bash sandbox through `toolrt serve` (docs/SEMANTICS.md, "Bash sandbox"): with
//! `sandbox.enabled`, every Bash command, its children and background tasks are held by the
//! kernel — writes only in the workspace, `$TMPDIR` and allowWrite; no reads of denyRead but
//! allowRead; no network but through the proxy (tests/sandbox_network.rs) — and each test proves
//! on the file system (or on a listening socket) that the refused side effect did not happen.

mod support;

use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Finished, Server, Stderr, command};

const WAIT: Duration = Duration::from_secs(90);

/// A project, a home outside it and an output folder, in one temp dir.
struct Fx {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    cwd: PathBuf,
    home: PathBuf,
}

impl Fx {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let (cwd, home) = (root.join("proj"), root.join("home"));
        for d in [&cwd, &home, &root.join("out")] {
            std::fs::create_dir_all(d).unwrap();
        }
        Fx {
            _tmp: tmp,
            root,
            cwd,
            home,
        }
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.cwd.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Runs one session with `settings`, the calls in order (each its own line), every
    /// permission request answered `answer`; `env` added to toolrt's environment.
    fn run(
        &self,
        settings: Value,
        calls: &[(&str, Value)],
        answer: &str,
        env: &[(&str, &str)],
    ) -> Finished {
        let file = self.root.join("settings.json");
        std::fs::write(&file, settings.to_string()).unwrap();
        let mut cmd = command();
        cmd.args(["serve", "--cwd"])
            .arg(&self.cwd)
            .arg("--output-dir")
            .arg(self.root.join("out"))
            .arg("--settings")
            .arg(&file)
            .current_dir(&self.cwd)
            .env("HOME", &self.home);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut server = Server::spawn(cmd, Stderr::Capture);
        for (id, input) in calls {
            let name = if input.get("task_id").is_some() {
                "TaskOutput"
            } else {
                "Bash"
            };
            server.tool_use(id, name, input.clone());
            // One at a time: a later call may read what an earlier one left.
            loop {
                let v = server.recv(WAIT).expect("a message before the timeout");
                if v["type"] == "permission_request" {
                    server.send(json!({"type": "permission_response", "request_id": v["request_id"], "behavior": answer}));
                }
                if v["type"] == "tool_result" && v["tool_use_id"] == *id {
                    break;
                }
            }
        }
        server.finish()
    }
}

fn sandbox_on() -> Value {
    json!({"sandbox": {"enabled": true}})
}

/// Adds a PostToolUse hook that appends each input it gets to `log` (hooks run outside the
/// sandbox).
fn with_post_hook(mut settings: Value, log: &std::path::Path) -> Value {
    let command = format!("cat >> '{}'; echo >> '{}'", log.display(), log.display());
    settings["hooks"] = json!({"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]});
    settings
}

/// `tool_response.sandboxed` of every PostToolUse input in `log`.
fn post_sandboxed(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["tool_response"]["sandboxed"].clone())
        .collect()
}

fn bash(command: &str) -> Value {
    json!({ "command": command })
}

fn outcome<'a>(run: &'a Finished, id: &str) -> &'a str {
    run.result(id)["outcome"].as_str().unwrap_or("")
}

fn content(run: &Finished, id: &str) -> String {
    run.result(id)["content"].as_str().unwrap_or("").to_string()
}

fn asked(run: &Finished, id: &str) -> bool {
    run.of_type("permission_request")
        .iter()
        .any(|v| v["tool_use_id"] == id)
}

/// A name no other run of this test uses, for paths outside the temp dir.
fn unique(tag: &str) -> String {
    format!("toolrt-sandbox-test-{tag}-{}", std::process::id())
}

#[test]
fn writes_outside_the_workspace_fail_and_write_nothing() {
    let fx = Fx::new();
    let etc = PathBuf::from("/etc").join(unique("etc"));
    let tmp = PathBuf::from("/tmp").join(unique("tmp"));
    let log = fx.root.join("post.log");
    let run = fx.run(
        with_post_hook(sandbox_on(), &log),
        &[
            ("home", bash("echo x > \"$HOME/outside.txt\"")),
            (
                "etc",
                bash(&format!("python3 -c \"open('{}','w')\"", etc.display())),
            ),
            ("tmp", bash(&format!("echo x > {}", tmp.display()))),
            ("inside", bash("echo hi > inside.txt && cat inside.txt")),
            (
                "tmpdir",
                bash("echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && echo \"$TMPDIR\""),
            ),
        ],
        "deny",
        &[],
    );
    let event = run.events("sandbox");
    assert_eq!(event.len(), 1, "{:#?}\n{}", run.messages, run.stderr);
    assert_eq!(event[0]["status"], "ready", "{:#?}", event[0]);
    assert!(
        event[0]["enforcement"]
            .as_str()
            .unwrap()
            .contains("Landlock ABI"),
        "{:#?}",
        event[0]
    );
    for id in ["home", "etc", "tmp"] {
        assert!(
            !asked(&run, id),
            "{id}: a sandboxed command no rule matches is auto-allowed"
        );
        assert_ne!(outcome(&run, id), "success", "{id}: {}", content(&run, id));
        assert!(
            content(&run, id).contains("(sandbox:"),
            "{id}: {}",
            content(&run, id)
        );
    }
    assert!(!fx.home.join("outside.txt").exists());
    let etc_written = etc.exists();
    let _ = std::fs::remove_file(&etc);
    assert!(!etc_written, "python3 wrote {}", etc.display());
    let tmp_written = tmp.exists();
    let _ = std::fs::remove_file(&tmp);
    assert!(
        !tmp_written,
        "bash wrote {} outside the session's TMPDIR",
        tmp.display()
    );
    assert_eq!(
        outcome(&run, "inside"),
        "success",
        "{}",
        content(&run, "inside")
    );
    assert_eq!(
        std::fs::read_to_string(fx.cwd.join("inside.txt")).unwrap(),
        "hi\n"
    );
    assert_eq!(
        outcome(&run, "tmpdir"),
        "success",
        "{}",
        content(&run, "tmpdir")
    );
    let text = content(&run, "tmpdir");
    assert!(
        text.starts_with("t\n") && text.contains("toolrt-sandbox-"),
        "{text}"
    );
    // PostToolUse fires for the two that succeeded.
    assert_eq!(post_sandboxed(&log), [json!(true), json!(true)]);
}

#[test]
fn denied_reads_and_writes_hold_inside_the_workspace() {
    let fx = Fx::new();
    fx.write("secret.txt", "TOPSECRET\n");
    fx.write("secrets/key.pem", "KEYDATA\n");
    fx.write("locked/f.txt", "original\n");
    fx.write("protected.txt", "original\n");
    let settings = json!({
        "sandbox": {"enabled": true, "filesystem": {
            "denyRead": ["./secret.txt", "secrets"],
            "denyWrite": ["./locked"],
        }},
        "permissions": {"deny": ["Edit(./protected.txt)"]},
    });
    let run = fx.run(
        settings,
        &[
            ("cat", bash("cat secret.txt")),
            ("catdir", bash("cat secrets/key.pem; ls secrets")),
            (
                "py_read",
                bash("python3 -c \"print(open('secret.txt').read())\""),
            ),
            ("locked", bash("echo changed > locked/f.txt")),
            ("locked_new", bash("touch locked/new.txt")),
            ("locked_rm", bash("rm -f locked/f.txt")),
            (
                "edit_rule",
                bash("python3 -c \"open('protected.txt','w').write('changed')\""),
            ),
            ("beside", bash("echo ok > free.txt")),
        ],
        "deny",
        &[],
    );
    for id in [
        "cat",
        "catdir",
        "py_read",
        "locked",
        "locked_new",
        "locked_rm",
        "edit_rule",
    ] {
        assert_ne!(outcome(&run, id), "success", "{id}: {}", content(&run, id));
        let text = content(&run, id);
        assert!(
            !text.contains("TOPSECRET") && !text.contains("KEYDATA"),
            "{id}: {text}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(fx.cwd.join("locked/f.txt")).unwrap(),
        "original\n"
    );
    assert!(!fx.cwd.join("locked/new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(fx.cwd.join("protected.txt")).unwrap(),
        "original\n"
    );
    assert_eq!(
        outcome(&run, "beside"),
        "success",
        "{}",
        content(&run, "beside")
    );
}

#[test]
fn a_symlink_in_the_workspace_does_not_launder_a_write() {
    let fx = Fx::new();
    let target = fx.home.join("target.txt");
    std::fs::write(&target, "original\n").unwrap();
    std::os::unix::fs::symlink(&target, fx.cwd.join("link")).unwrap();
    std::os::unix::fs::symlink(&fx.home, fx.cwd.join("homedir")).unwrap();
    let run = fx.run(
        sandbox_on(),
        &[
            ("file", bash("echo pwned > link")),
            ("dir", bash("echo pwned > homedir/new.txt")),
            ("py", bash("python3 -c \"open('homedir/py.txt','w')\"")),
        ],
        "deny",
        &[],
    );
    for id in ["file", "dir", "py"] {
        assert_ne!(outcome(&run, id), "success", "{id}: {}", content(&run, id));
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "original\n");
    assert!(!fx.home.join("new.txt").exists() && !fx.home.join("py.txt").exists());
}

#[test]
fn interpreters_and_scripts_are_contained() {
    let fx = Fx::new();
    let mut calls = vec![
        (
            "python",
            bash("python3 -c \"import os; open(os.environ['HOME']+'/py.txt','w')\""),
        ),
        (
            "perl",
            bash("perl -e 'open(F, \">\", \"$ENV{HOME}/perl.txt\") or die \"refused: $!\"'"),
        ),
        (
            "find",
            bash("find . -maxdepth 0 -exec touch \"$HOME/find.txt\" \\;"),
        ),
        (
            "script",
            bash(
                "printf '#!/bin/sh\\necho x > \"$HOME/script.txt\"\\n' > s.sh && chmod +x s.sh && ./s.sh",
            ),
        ),
    ];
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if node {
        calls.push((
            "node",
            bash("node -e \"require('fs').writeFileSync(process.env.HOME+'/node.txt','x')\""),
        ));
    }
    let run = fx.run(sandbox_on(), &calls, "deny", &[]);
    for (id, _) in &calls {
        assert!(
            !asked(&run, id),
            "{id} is auto-allowed: the sandbox holds it"
        );
        // find's exit status 1 counts as success; its -exec's refusal is in its output (the
        // read-only mount outside the writable roots answers before Landlock).
        if *id == "find" {
            let text = content(&run, id);
            assert!(
                text.contains("Permission denied") || text.contains("Read-only file system"),
                "{}",
                content(&run, id)
            );
        } else {
            assert_ne!(outcome(&run, id), "success", "{id}: {}", content(&run, id));
        }
    }
    for f in ["py.txt", "perl.txt", "find.txt", "script.txt", "node.txt"] {
        assert!(!fx.home.join(f).exists(), "{f} was written");
    }
    assert!(
        fx.cwd.join("s.sh").exists(),
        "the script itself was written in the workspace"
    );
}

#[test]
fn a_background_task_stays_inside() {
    let fx = Fx::new();
    let run = fx.run(
        sandbox_on(),
        &[
            (
                "bg",
                json!({"command": "echo x > \"$HOME/bg.txt\"; echo done > bg-done.txt", "run_in_background": true}),
            ),
            ("wait", json!({"task_id": "bg-1", "block": true, "timeout": 60000})),
        ],
        "deny",
        &[],
    );
    assert_eq!(outcome(&run, "bg"), "success", "{}", content(&run, "bg"));
    assert!(
        fx.cwd.join("bg-done.txt").exists(),
        "{}",
        content(&run, "wait")
    );
    assert!(!fx.home.join("bg.txt").exists());
}

#[test]
fn no_network_from_inside() {
    let fx = Fx::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let run = fx.run(
        sandbox_on(),
        &[
            ("tcp", bash(&format!("exec 3<>/dev/tcp/127.0.0.1/{port}"))),
            (
                "py",
                bash(&format!("python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5)\"")),
            ),
        ],
        "deny",
        &[],
    );
    for id in ["tcp", "py"] {
        assert_ne!(outcome(&run, id), "success", "{id}: {}", content(&run, id));
    }
    listener.set_nonblocking(true).unwrap();
    let accepted = listener.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a connection reached the test's server: {accepted:?}"
    );
}

#[test]
fn excluded_and_unsandboxed_calls_take_the_normal_flow() {
    let fx = Fx::new();
    let log = fx.root.join("post.log");
    let settings = json!({"sandbox": {"enabled": true, "excludedCommands": ["touch"]}});
    let run = fx.run(
        with_post_hook(settings, &log),
        &[
            ("excluded", bash("touch \"$HOME/excluded.txt\"")),
            ("flag", json!({"command": "echo x > \"$HOME/flag.txt\"", "dangerouslyDisableSandbox": true})),
        ],
        "allow",
        &[],
    );
    assert_eq!(post_sandboxed(&log), [json!(false), json!(false)]);
    for id in ["excluded", "flag"] {
        assert!(
            asked(&run, id),
            "{id}: an unsandboxed call is never auto-allowed"
        );
        assert_eq!(outcome(&run, id), "success", "{id}: {}", content(&run, id));
    }
    assert!(fx.home.join("excluded.txt").exists() && fx.home.join("flag.txt").exists());
    // With allowUnsandboxedCommands false the flag is ignored: sandboxed, auto-allowed, held.
    let settings = json!({"sandbox": {"enabled": true, "allowUnsandboxedCommands": false}});
    let run = fx.run(
        settings,
        &[(
            "flag",
            json!({"command": "echo x > \"$HOME/flag2.txt\"", "dangerouslyDisableSandbox": true}),
        )],
        "allow",
        &[],
    );
    assert!(!asked(&run, "flag"));
    assert_ne!(
        outcome(&run, "flag"),
        "success",
        "{}",
        content(&run, "flag")
    );
    assert!(!fx.home.join("flag2.txt").exists());
}

#[test]
fn an_unavailable_sandbox_refuses_or_warns_as_configured() {
    let fx = Fx::new();
    let missing = [("TOOLRT_SANDBOX_EXEC", "/nonexistent/toolrt")];
    let settings = json!({"sandbox": {"enabled": true, "failIfUnavailable": true}});
    let run = fx.run(
        settings,
        &[("refused", bash("echo hi > refused.txt"))],
        "allow",
        &missing,
    );
    assert_eq!(
        outcome(&run, "refused"),
        "failed",
        "{}",
        content(&run, "refused")
    );
    assert!(
        content(&run, "refused").contains("the sandbox is required"),
        "{}",
        content(&run, "refused")
    );
    assert!(!fx.cwd.join("refused.txt").exists());
    assert_eq!(run.events("sandbox")[0]["bash"], "refused");

    let settings = json!({"sandbox": {"enabled": true, "failIfUnavailable": false}});
    let run = fx.run(
        settings,
        &[("direct", bash("echo hi > \"$HOME/direct.txt\""))],
        "allow",
        &missing,
    );
    let event = run.events("sandbox");
    assert_eq!(event[0]["status"], "unavailable", "{:#?}", event);
    assert_eq!(event[0]["bash"], "unsandboxed");
    assert!(
        run.stderr.contains("the Bash sandbox cannot start"),
        "{}",
        run.stderr
    );
    assert!(
        asked(&run, "direct"),
        "unsandboxed: nothing is auto-allowed for the sandbox"
    );
    assert_eq!(
        outcome(&run, "direct"),
        "success",
        "{}",
        content(&run, "direct")
    );
    assert!(fx.home.join("direct.txt").exists());
}

#[test]
fn explain_says_how_a_command_would_run() {
    let fx = Fx::new();
    let file = fx.root.join("settings.json");
    std::fs::write(
        &file,
        json!({"sandbox": {"enabled": true, "excludedCommands": ["docker"]}}).to_string(),
    )
    .unwrap();
    let explain = |input: Value| {
        let out = command()
            .args(["explain", "Bash", &input.to_string(), "--cwd"])
            .arg(&fx.cwd)
            .arg("--settings")
            .arg(&file)
            .env("HOME", &fx.home)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, text) = explain(bash("python3 -c 'print(1)'"));
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("decided by: the sandbox"), "{text}");
    assert!(
        text.contains("sandbox: runs sandboxed (Landlock ABI"),
        "{text}"
    );
    let (code, text) = explain(bash("docker ps"));
    assert_eq!(code, Some(3), "{text}");
    assert!(
        text.contains("sandbox: runs unsandboxed: it is in sandbox.excludedCommands"),
        "{text}"
    );
}

#[test]
fn wrong_types_stop_start_up_naming_the_key() {
    let fx = Fx::new();
    let file = fx.root.join("settings.json");
    std::fs::write(&file, json!({"sandbox": {"enabled": "yes"}}).to_string()).unwrap();
    let out = command()
        .args(["explain", "Bash", "{\"command\":\"true\"}", "--cwd"])
        .arg(&fx.cwd)
        .arg("--settings")
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("sandbox.enabled: expected true or false, got string"),
        "{err}"
    );
}

#[test]
fn allow_read_reopens_paths_inside_a_denied_folder() {
    let fx = Fx::new();
    fx.write("vault/hidden.txt", "TOPSECRET\n");
    fx.write("vault/public/readme.txt", "PUBLICDIR\n");
    fx.write("vault/note.txt", "PUBLICFILE\n");
    fx.write("vault/deep/er/ok.txt", "PUBLICDEEP\n");
    fx.write("open.txt", "OPENFILE\n");
    let settings = json!({
        "sandbox": {"enabled": true, "filesystem": {
            "denyRead": ["./vault", "./open.txt"],
            "allowRead": ["./vault/public", "./vault/note.txt", "./vault/deep/er/ok.txt", "./open.txt"],
        }},
    });
    let run = fx.run(
        settings,
        &[
            ("hidden", bash("cat vault/hidden.txt")),
            ("list", bash("ls vault")),
            ("dir", bash("cat vault/public/readme.txt")),
            ("file", bash("cat vault/note.txt")),
            ("deep", bash("cat vault/deep/er/ok.txt")),
            ("same", bash("cat open.txt")),
            ("again", bash("cat vault/hidden.txt; cat vault/note.txt")),
        ],
        "deny",
        &[],
    );
    for id in ["hidden", "list"] {
        assert_ne!(outcome(&run, id), "success", "{id}: {}", content(&run, id));
        assert!(
            !content(&run, id).contains("TOPSECRET"),
            "{id}: {}",
            content(&run, id)
        );
    }
    for (id, want) in [
        ("dir", "PUBLICDIR"),
        ("file", "PUBLICFILE"),
        ("deep", "PUBLICDEEP"),
        ("same", "OPENFILE"),
    ] {
        assert_eq!(outcome(&run, id), "success", "{id}: {}", content(&run, id));
        assert!(
            content(&run, id).contains(want),
            "{id}: {}",
            content(&run, id)
        );
    }
    // A later command finds the same mounts (made once per session).
    let again = content(&run, "again");
    assert!(
        !again.contains("TOPSECRET") && again.contains("PUBLICFILE"),
        "{again}"
    );
}

/// A Unix socket of the test's, listening in the workspace (which the command may write), and
/// a Bash command that connects to it with python3 and says so.
fn unix_listener(fx: &Fx, name: &str) -> (UnixListener, Value) {
    let path = fx.cwd.join(name);
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); \
         print(\"connected\")' '{}'",
        path.display()
    );
    (listener, bash(&connect))
}

/// How many connections reached `listener` (the command has exited: they are all queued).
fn connections(listener: &UnixListener) -> usize {
    let mut n = 0;
    loop {
        match listener.accept() {
            Ok(_) => n += 1,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return n,
            Err(e) => panic!("accept: {e}"),
        }
    }
}

#[test]
fn unix_sockets_are_refused_unless_all_are_allowed() {
    let fx = Fx::new();
    let (listener, connect) = unix_listener(&fx, "agent.sock");
    let pair = bash(
        "python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"x\"); print(b.recv(1))'",
    );
    let nested = bash(&format!(
        "bash -c {}",
        shell_quote(connect["command"].as_str().unwrap())
    ));
    let run = fx.run(
        sandbox_on(),
        &[
            ("unix", connect.clone()),
            ("nested", nested),
            ("pair", pair),
        ],
        "deny",
        &[],
    );
    let event = &run.events("sandbox")[0];
    assert_eq!(event["status"], "ready", "{event:#?}");
    let enforcement = event["enforcement"].as_str().unwrap();
    assert!(
        enforcement.contains("Unix sockets refused (seccomp)"),
        "{enforcement}"
    );
    for id in ["unix", "nested"] {
        assert!(!asked(&run, id), "{id}: sandboxed, auto-allowed");
        assert_ne!(outcome(&run, id), "success", "{id}: {}", content(&run, id));
        // EPERM from socket(AF_UNIX, …), before any connect.
        assert!(
            content(&run, id).contains("[Errno 1] Operation not permitted"),
            "{id}: {}",
            content(&run, id)
        );
    }
    assert_eq!(connections(&listener), 0, "a sandboxed command connected");
    // A connected pair reaches nothing outside and stays allowed.
    assert_eq!(
        outcome(&run, "pair"),
        "success",
        "{}",
        content(&run, "pair")
    );
    assert_eq!(content(&run, "pair"), "b'x'\n");

    let all = json!({"sandbox": {"enabled": true, "network": {"allowAllUnixSockets": true}}});
    let run = fx.run(all, &[("unix", connect)], "deny", &[]);
    let enforcement = run.events("sandbox")[0]["enforcement"].clone();
    assert!(
        enforcement
            .as_str()
            .unwrap()
            .contains("Unix sockets allowed (sandbox.network.allowAllUnixSockets)"),
        "{enforcement}"
    );
    assert_eq!(
        outcome(&run, "unix"),
        "success",
        "{}",
        content(&run, "unix")
    );
    assert_eq!(content(&run, "unix"), "connected\n");
    assert_eq!(connections(&listener), 1);
}

#[test]
fn local_tcp_binding_is_refused_unless_allowed() {
    let fx = Fx::new();
    let tcp = bash(
        "python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); \
         print(\"bound\")'",
    );
    let udp = bash(
        "python3 -c 'import socket; s = socket.socket(type=socket.SOCK_DGRAM); \
         s.bind((\"127.0.0.1\", 0)); print(\"bound\")'",
    );
    let run = fx.run(
        sandbox_on(),
        &[("tcp", tcp.clone()), ("udp", udp)],
        "deny",
        &[],
    );
    let enforcement = run.events("sandbox")[0]["enforcement"].clone();
    let enforcement = enforcement.as_str().unwrap();
    if enforcement.contains("TCP bind refused (Landlock)") {
        assert_ne!(outcome(&run, "tcp"), "success", "{}", content(&run, "tcp"));
        assert!(
            content(&run, "tcp").contains("[Errno 13] Permission denied"),
            "{}",
            content(&run, "tcp")
        );
    } else {
        // Landlock before ABI 4 cannot refuse it, and the report says so.
        assert!(
            enforcement.contains("local binding not enforced"),
            "{enforcement}"
        );
        assert_eq!(outcome(&run, "tcp"), "success", "{}", content(&run, "tcp"));
    }
    // UDP binds are beyond Landlock here (docs/SEMANTICS.md §11).
    assert_eq!(outcome(&run, "udp"), "success", "{}", content(&run, "udp"));

    let allowed = json!({"sandbox": {"enabled": true, "network": {"allowLocalBinding": true}}});
    let run = fx.run(allowed, &[("tcp", tcp)], "deny", &[]);
    let enforcement = run.events("sandbox")[0]["enforcement"].clone();
    assert!(
        enforcement
            .as_str()
            .unwrap()
            .contains("TCP bind allowed (sandbox.network.allowLocalBinding)"),
        "{enforcement}"
    );
    assert_eq!(outcome(&run, "tcp"), "success", "{}", content(&run, "tcp"));
    assert_eq!(content(&run, "tcp"), "bound\n");
}

/// `text` as one word for bash.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The helper that sets each sandboxed command up: the small `toolrt-sandbox-exec` beside
/// toolrt, or, without it, toolrt's own `sandbox-exec`. Either way the same boundary holds.
fn contained_through(fx: &Fx, env: &[(&str, &str)]) -> Finished {
    let (listener, connect) = unix_listener(fx, "through.sock");
    let run = fx.run(
        sandbox_on(),
        &[
            ("home", bash("echo x > \"$HOME/outside.txt\"")),
            ("inside", bash("echo hi > inside.txt && cat inside.txt")),
            ("unix", connect),
        ],
        "deny",
        env,
    );
    assert_ne!(
        outcome(&run, "unix"),
        "success",
        "{}",
        content(&run, "unix")
    );
    assert_eq!(connections(&listener), 0, "a sandboxed command connected");
    assert_eq!(
        run.events("sandbox")[0]["status"],
        "ready",
        "{}",
        run.stderr
    );
    assert!(!asked(&run, "home"));
    assert_ne!(
        outcome(&run, "home"),
        "success",
        "{}",
        content(&run, "home")
    );
    assert!(!fx.home.join("outside.txt").exists());
    assert_eq!(
        outcome(&run, "inside"),
        "success",
        "{}",
        content(&run, "inside")
    );
    assert_eq!(content(&run, "inside"), "hi\n");
    run
}

#[test]
fn commands_are_set_up_by_the_small_helper() {
    let helper = PathBuf::from(env!("CARGO_BIN_EXE_toolrt-sandbox-exec"));
    // It links none of the runtime: a small fraction of toolrt's size.
    let size = |p: &std::path::Path| std::fs::metadata(p).unwrap().len();
    let toolrt = PathBuf::from(support::bin());
    assert!(
        size(&helper) * 10 < size(&toolrt),
        "toolrt-sandbox-exec is {} bytes, toolrt {}",
        size(&helper),
        size(&toolrt)
    );
    let fx = Fx::new();
    let run = contained_through(&fx, &[("TOOLRT_LOG", "toolrt::sandbox=debug")]);
    let want = format!("commands are set up by {}", helper.display());
    assert!(run.stderr.contains(&want), "{}", run.stderr);
    // Its own arguments are checked, with the exit status of a sandbox that cannot start.
    for args in [
        &["--probe"][..],
        &["--policy"],
        &["--policy", "{", "--probe"],
    ] {
        let out = std::process::Command::new(&helper)
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {err}");
        assert!(err.starts_with("toolrt sandbox-exec: "), "{args:?}: {err}");
    }
}

#[test]
fn a_missing_helper_falls_back_to_toolrt_sandbox_exec() {
    let fx = Fx::new();
    // The toolrt binary, named from a folder without the helper beside it.
    let bin = fx.root.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let toolrt = bin.join("toolrt");
    std::os::unix::fs::symlink(support::bin(), &toolrt).unwrap();
    let run = contained_through(
        &fx,
        &[
            ("TOOLRT_SANDBOX_EXEC", toolrt.to_str().unwrap()),
            ("TOOLRT_LOG", "toolrt::sandbox=debug"),
        ],
    );
    let want = format!(
        "{} is absent; commands are set up by `{} sandbox-exec`",
        bin.join("toolrt-sandbox-exec").display(),
        toolrt.display()
    );
    assert!(run.stderr.contains(&want), "{}", run.stderr);
}
