//! Table tests: one row or more per statement of docs/SEMANTICS.md §1–3, one file per part;
//! the helpers they share are here.

mod bash;
mod bypass;
mod engine;
mod modes;
mod nodes;
mod paths;
mod props;
mod settings;
mod specifiers;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::*;
use crate::session::Guard;
use crate::tool::{Access, Subject};

/// What the tools these tables name tell the engine about themselves: the built-in tools as
/// they declare it ([`crate::tool::Tool::access`]), and the reference's tools toolrt lacks.
fn access(tool: &str) -> Access<'static> {
    let path = |field, read_only, default_cwd| Subject::Path {
        field,
        read_only,
        default_cwd,
    };
    let subject = match tool {
        "Read" => path("file_path", true, false),
        "Glob" | "Grep" => path("path", true, true),
        "Edit" | "Write" | "MultiEdit" => path("file_path", false, false),
        "NotebookEdit" => path("notebook_path", false, false),
        "Bash" => Subject::Command { field: "command" },
        "WebFetch" => Subject::Url { field: "url" },
        "Agent" | "Task" => Subject::Subagent {
            field: "subagent_type",
        },
        _ => Subject::Name,
    };
    Access {
        subject,
        allowed_by_default: matches!(tool, "TaskOutput" | "TaskStop"),
    }
}

const CWD: &str = "/w/proj";
const HOME: &str = "/h/u";

fn build(settings: &Value) -> Policy {
    let mut b = PolicyBuilder::new(PathBuf::from(CWD), PathBuf::from(HOME));
    b.add_settings_file(Path::new("/w/proj/.claude/settings.json"), settings)
        .unwrap();
    b.build().unwrap()
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn decide(p: &Policy, mode: Mode, tool: &str, input: Value) -> Decision {
    let input = obj(input);
    p.decide(&DecisionRequest {
        tool,
        access: access(tool),
        input: &input,
        mode,
        hook: None,
    })
}

use Behavior::{Allow as A, Ask as Q, Deny as D};
use Mode::{AcceptEdits as AE, BypassPermissions as BP, Default as DF, DontAsk as DA, Plan as PL};

/// Runs rows of (settings, mode, tool, input, expected).
fn table(rows: &[(Value, Mode, &str, Value, Behavior)]) {
    let mut failures = Vec::new();
    for (i, (settings, mode, tool, input, want)) in rows.iter().enumerate() {
        let p = build(settings);
        let d = decide(&p, *mode, tool, input.clone());
        if d.behavior != *want {
            failures.push(format!(
                "row {i}: {tool} {input} in {mode} with {settings}: got {:?}\n{}",
                d.behavior,
                d.explain()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing rows:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn bash(c: &str) -> Value {
    json!({ "command": c })
}
fn file(p: &str) -> Value {
    json!({ "file_path": p })
}
