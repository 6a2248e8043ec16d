//! A Bash command placed on a worker node: its paths are judged against the node's folder and
//! what they resolve to there, and what the node did not resolve asks.

use super::*;

const ROOT: &str = "/n/ws";

/// The node's view of `command`: each path it names resolved by `resolves` (None: the node
/// could not say).
fn on_node(command: &str, resolves: impl Fn(&Path) -> Option<Vec<PathBuf>>) -> Located {
    let (root, home) = (PathBuf::from(ROOT), PathBuf::from("/n/h"));
    let named = crate::permission::paths_named_by(command, &root, &home, 64)
        .into_iter()
        .filter_map(|p| resolves(&p).map(|r| (p, r)))
        .collect();
    Located {
        node: "w1".into(),
        root,
        home,
        named,
        sandbox: None,
    }
}

fn decide_on(p: &Policy, mode: Mode, command: &str, at: &Located) -> Behavior {
    let input = obj(json!({ "command": command }));
    p.decide_at(
        &DecisionRequest {
            tool: "Bash",
            access: access("Bash"),
            input: &input,
            mode,
            hook: None,
        },
        Some(at),
    )
    .behavior
}

/// Every path resolves to itself (no symlinks on the node).
fn plain(p: &Path) -> Option<Vec<PathBuf>> {
    Some(vec![p.to_path_buf()])
}

#[test]
fn relative_paths_are_the_nodes() {
    let p = build(&json!({"deny": ["Read(//n/ws/secret/**)"]}));
    let rows = [
        ("cat secret/s.txt", BP, D),
        ("cat ./a/../secret/s.txt", BP, D),
        ("cd secret && cat s.txt", BP, D),
        ("wc -l < secret/s.txt", DF, D),
        ("cat open.txt", DF, A),
        // The coordinator's folder is not the workspace of a call on the node.
        ("cat /w/proj/x.txt", DF, Q),
        // Here `secret/s.txt` would be under /w/proj, which no rule denies.
        ("cat secret/s.txt", DF, D),
    ];
    for (command, mode, want) in rows {
        let got = decide_on(&p, mode, command, &on_node(command, plain));
        assert_eq!(got, want, "{command} in {mode:?}");
    }
    // The same command judged here is about the coordinator's files: no rule denies it.
    assert_eq!(decide(&p, DF, "Bash", json!({"command": "cat secret/s.txt"})).behavior, A);
}

#[test]
fn what_the_node_cannot_place_asks() {
    let p = build(&json!({}));
    // Not resolved by the node: it could lead anywhere.
    let at = on_node("cat open.txt", |_| None);
    assert_eq!(decide_on(&p, DF, "cat open.txt", &at), Q);
    // Globs are not expanded on a node, git's configuration there is not checked.
    for command in ["cat o*.txt", "git status"] {
        assert_eq!(decide_on(&p, DF, command, &on_node(command, plain)), Q, "{command}");
    }
    // A symlink on the node that leads out of its folder.
    let out = |p: &Path| Some(vec![p.to_path_buf(), PathBuf::from("/etc/passwd")]);
    assert_eq!(decide_on(&p, DF, "cat link", &on_node("cat link", out)), Q);
}

#[test]
fn a_deny_rule_holds_through_the_nodes_symlinks() {
    let p = build(&json!({"deny": ["Read(//vault/**)"]}));
    let into_vault = |p: &Path| Some(vec![p.to_path_buf(), PathBuf::from("/vault/key")]);
    let at = on_node("cat link", into_vault);
    assert_eq!(decide_on(&p, BP, "cat link", &at), D);
    // rm of a link that resolves to the node's `/`: never allowed, not even by bypass.
    let to_root = |p: &Path| Some(vec![p.to_path_buf(), PathBuf::from("/")]);
    let at = on_node("rm -rf link", to_root);
    assert_eq!(decide_on(&p, BP, "rm -rf link", &at), Q);
}

#[test]
fn the_paths_a_node_is_asked_for_are_bounded_and_absolute() {
    let (root, home) = (Path::new(ROOT), Path::new("/n/h"));
    let named = crate::permission::paths_named_by("cat a b ~/c > d; rm e", root, home, 64);
    let want: Vec<PathBuf> = ["/n/ws/a", "/n/ws/b", "/n/h/c", "/n/ws/d", "/n/ws/e"]
        .iter()
        .map(PathBuf::from)
        .collect();
    for w in &want {
        assert!(named.contains(w), "{w:?} missing from {named:?}");
    }
    let many: String = (0..100).map(|i| format!(" f{i}")).collect();
    let named = crate::permission::paths_named_by(&format!("cat{many}"), root, home, 8);
    assert_eq!(named.len(), 8);
}


/// A node's sandbox that runs every command it is asked about sandboxed.
#[derive(Debug)]
struct NodeSandbox;

impl crate::session::ShellSandbox for NodeSandbox {
    fn plan(&self, _: &str, _: bool) -> crate::session::ShellPlan {
        crate::session::ShellPlan::Refused("runs on the node".into())
    }
    fn auto_allows(&self, _: &str, _: bool) -> bool {
        true
    }
    fn describe(&self, _: &str, _: bool) -> String {
        "on worker node w1: runs sandboxed".into()
    }
}

#[test]
fn a_command_on_a_node_is_allowed_for_the_nodes_sandbox_never_past_a_rule() {
    let rules = json!({"deny": ["Bash(rm *)"], "ask": ["Bash(git push*)"]});
    let mut b = PolicyBuilder::new(PathBuf::from(CWD), PathBuf::from(HOME));
    b.add_settings_file(Path::new("/w/proj/.claude/settings.json"), &rules)
        .unwrap();
    // This node's own sandbox would allow nothing: only the node's answers.
    b.set_sandbox(std::sync::Arc::new(NoSandbox));
    let p = b.build().unwrap();
    let with_sandbox = |command: &str| Located {
        sandbox: Some(std::sync::Arc::new(NodeSandbox)),
        ..on_node(command, plain)
    };
    // Not read-only, no rule allows it: it asks without the node's sandbox, and is allowed
    // for running in it.
    let command = "python3 build.py";
    assert_eq!(decide_on(&p, DF, command, &on_node(command, plain)), Q);
    assert_eq!(decide_on(&p, DF, command, &with_sandbox(command)), A);
    // Deny and ask rules come first.
    assert_eq!(decide_on(&p, DF, "rm x", &with_sandbox("rm x")), D);
    assert_eq!(
        decide_on(&p, DF, "git push origin", &with_sandbox("git push origin")),
        Q
    );
    // The explanation is the node's.
    let input = obj(json!({ "command": command }));
    let d = p.decide_at(
        &DecisionRequest {
            tool: "Bash",
            access: access("Bash"),
            input: &input,
            mode: DF,
            hook: None,
        },
        Some(&with_sandbox(command)),
    );
    assert_eq!(d.sandbox.as_deref(), Some("on worker node w1: runs sandboxed"));
    // Rules that know no sandbox (an agent type's own) know none on a node either.
    let no_sandbox = build(&rules);
    assert_eq!(decide_on(&no_sandbox, DF, command, &with_sandbox(command)), Q);
}

/// This node's sandbox, which cannot start here.
#[derive(Debug)]
struct NoSandbox;

impl crate::session::ShellSandbox for NoSandbox {
    fn plan(&self, _: &str, _: bool) -> crate::session::ShellPlan {
        crate::session::ShellPlan::Direct
    }
    fn auto_allows(&self, _: &str, _: bool) -> bool {
        false
    }
    fn describe(&self, _: &str, _: bool) -> String {
        "runs unsandboxed".into()
    }
}
