//! Through the library: tools defined here, outside toolrt's own tools, tell the permission
//! engine what their calls act on (`Tool::access`), and `Read(…)` / `Edit(…)` path rules, the
//! workspace default, plan mode, acceptEdits and protected paths then treat them exactly as
//! they treat Read and Edit — without the engine knowing their names.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use toolrt::{
    Access, AskPolicy, ClientMessage, Config, Input, Mode, Outcome, Runtime, ServerMessage,
    Subject, Tool, ToolCall, ToolContext, ToolOutput,
};

/// A tool acting on the path in its `target` field: `Inspect` only reads, `Stamp` writes.
struct PathTool {
    name: &'static str,
    read_only: bool,
}

#[async_trait]
impl Tool for PathTool {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "acts on a path (test tool)"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"target": {"type": "string"}}, "required": ["target"], "additionalProperties": false})
    }
    fn access(&self) -> Access<'_> {
        Access {
            subject: Subject::Path {
                field: "target",
                read_only: self.read_only,
                default_cwd: false,
            },
            allowed_by_default: false,
        }
    }
    async fn call(&self, input: Input, _ctx: ToolContext) -> ToolOutput {
        ToolOutput::success(format!("{} {}", self.name, input["target"]))
    }
}

const INSPECT: PathTool = PathTool {
    name: "Inspect",
    read_only: true,
};
const STAMP: PathTool = PathTool {
    name: "Stamp",
    read_only: false,
};

/// How a call ended, as the test tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// It ran.
    Ran,
    /// A rule denied it (its text is in the result).
    Denied,
    /// It needed approval, which nobody can give here.
    Asked,
}

/// Runs each (tool, target) call in a runtime rooted in a fresh folder with these permission
/// settings and this mode; `target` may use `{cwd}` and `{out}` (a folder outside the
/// workspace).
async fn run(permissions: Value, mode: Mode, calls: &[(&str, &str)]) -> Vec<(Seen, String)> {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    let settings = cwd.join("settings.json");
    std::fs::write(&settings, json!({"permissions": permissions}).to_string()).unwrap();
    let mut config = Config::new(cwd.clone())
        .tool(Arc::new(INSPECT))
        .tool(Arc::new(STAMP));
    config.builtins = false;
    config.settings = toolrt::Settings::load(&[settings]).unwrap();
    config.permission_mode = Some(mode);
    config.ask_policy = AskPolicy::Deny;
    let (rt, mut rx) = Runtime::start(config).await.unwrap();
    let mut seen = Vec::new();
    for (i, (tool, target)) in calls.iter().enumerate() {
        let target = target
            .replace("{cwd}", &cwd.display().to_string())
            .replace("{out}", &outside.path().display().to_string());
        rt.submit(ClientMessage::ToolUse(ToolCall::new(
            format!("c{i}"),
            *tool,
            json!({"target": target}),
        )))
        .await;
        // One at a time: a result keeps its place until it is read.
        let result = loop {
            match rx.recv().await {
                Some(ServerMessage::ToolResult(r)) => break r,
                Some(_) => {}
                None => panic!("the outbox closed"),
            }
        };
        let kind = match result.outcome {
            Outcome::Success => Seen::Ran,
            Outcome::Denied if result.content.contains("no one can approve") => Seen::Asked,
            Outcome::Denied => Seen::Denied,
            other => panic!("{tool} {target}: {other:?}: {}", result.content),
        };
        seen.push((kind, result.content));
    }
    let shutdown = tokio::spawn(rt.shutdown());
    while rx.recv().await.is_some() {}
    shutdown.await.unwrap();
    seen
}

/// Checks `run`'s results against (tool, target, expected, text the result must hold).
async fn table(permissions: Value, mode: Mode, rows: &[(&str, &str, Seen, &str)]) {
    let calls: Vec<(&str, &str)> = rows.iter().map(|(t, p, _, _)| (*t, *p)).collect();
    let seen = run(permissions.clone(), mode, &calls).await;
    for ((tool, target, want, needle), (got, content)) in rows.iter().zip(seen) {
        assert_eq!(
            got, *want,
            "{tool} {target} in {mode:?} with {permissions}: {content}"
        );
        assert!(content.contains(needle), "{tool} {target}: {content}");
    }
}

#[tokio::test]
async fn read_and_edit_path_rules_match_tools_through_their_access() {
    use Seen::{Asked, Denied, Ran};
    let rules = json!({
        "deny": ["Read(./secret/**)"],
        "ask": ["Edit(./docs/**)"],
        "allow": ["Edit(./src/**)"],
    });
    table(
        rules,
        Mode::Default,
        &[
            // A read-only path tool: Read deny rules, the workspace default, asks outside it.
            ("Inspect", "secret/key.txt", Denied, "Read(./secret/**)"),
            (
                "Inspect",
                "{cwd}/secret/key.txt",
                Denied,
                "Read(./secret/**)",
            ),
            ("Inspect", "src/main.rs", Ran, "Inspect"),
            ("Inspect", "{out}/notes.txt", Asked, ""),
            // A path tool that writes: Edit allow and ask rules; a Read deny covers writes too.
            ("Stamp", "src/main.rs", Ran, "Stamp"),
            ("Stamp", "docs/guide.md", Asked, "Edit(./docs/**)"),
            ("Stamp", "secret/key.txt", Denied, "Read(./secret/**)"),
            ("Stamp", "notes.txt", Asked, ""),
        ],
    )
    .await;
}

#[tokio::test]
async fn modes_and_protected_paths_follow_the_read_only_flag() {
    use Seen::{Asked, Ran};
    // Plan mode runs reads only.
    table(
        json!({}),
        Mode::Plan,
        &[
            ("Inspect", "notes.txt", Ran, ""),
            ("Stamp", "notes.txt", Asked, ""),
        ],
    )
    .await;
    // acceptEdits runs writes inside the workspace, but never to a protected path.
    table(
        json!({}),
        Mode::AcceptEdits,
        &[
            ("Stamp", "notes.txt", Ran, ""),
            ("Stamp", ".git/config", Asked, "protected"),
            ("Stamp", "{out}/notes.txt", Asked, ""),
        ],
    )
    .await;
    // A bare `Read` deny rule covers every read-only path tool, and an `Edit` allow grants
    // reads.
    table(
        json!({"deny": ["Read"]}),
        Mode::Default,
        &[
            ("Inspect", "notes.txt", Seen::Denied, "Read"),
            ("Stamp", "notes.txt", Asked, ""),
        ],
    )
    .await;
    table(
        json!({"allow": ["Edit"]}),
        Mode::Default,
        &[
            ("Inspect", "{out}/notes.txt", Ran, ""),
            ("Stamp", "{out}/notes.txt", Ran, ""),
        ],
    )
    .await;
}
