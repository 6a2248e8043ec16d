//! One permission decision against 1,000 mixed Bash and path rules.
//!
//! Run with `cargo bench --bench decide`; set `CI=1` for a quick run with 100 rules. Criterion
//! prints the time per decision; the median is in `target/criterion/*/new/estimates.json`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use toolrt::bench::workload;
use toolrt::permission::{DecisionRequest, Mode, Policy};
use toolrt::{Tool, ToolState};

/// The same mixed rule set `toolrt bench` decides against (Bash exact, prefix, `:*` and
/// mid-pattern stars; anchored, any-depth and home path globs; WebFetch domains).
fn policy(n: usize, cwd: &std::path::Path) -> Policy {
    let (allow, deny) = workload::mixed_rules(n);
    workload::policy(cwd, &allow, &deny).expect("policy builds")
}

fn input(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn bench(c: &mut Criterion) {
    let n = if std::env::var_os("CI").is_some() {
        100
    } else {
        1000
    };
    // A real workspace: symlink resolution touches the file system, as in production.
    let tmp = tempfile::tempdir().expect("temp dir");
    let cwd = std::fs::canonicalize(tmp.path()).expect("canonical temp dir");
    std::fs::create_dir_all(cwd.join("src/mod4")).expect("mkdir");
    std::fs::create_dir_all(cwd.join("docs/x")).expect("mkdir");
    std::fs::write(cwd.join("src/mod4/a.rs"), "fn main() {}").expect("write");
    let p = policy(n, &cwd);
    let read = cwd.join("src/mod4/a.rs").display().to_string();
    let edit = cwd.join("docs/x/page7.md").display().to_string();
    let tools = ToolState::default().tools();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t.name() == name)
            .cloned()
            .expect("a built-in tool")
    };
    let (bash, read_tool, edit_tool) = (tool("Bash"), tool("Read"), tool("Edit"));
    let cases: [(&str, &dyn Tool, Value); 4] = [
        (
            "bash_simple",
            &*bash,
            json!({ "command": "tool8 run --fast" }),
        ),
        (
            "bash_compound",
            &*bash,
            json!({ "command": "git status && npm run script2 | grep ok" }),
        ),
        ("read", &*read_tool, json!({ "file_path": read })),
        ("edit", &*edit_tool, json!({ "file_path": edit })),
    ];
    for (name, tool, v) in cases {
        let inp = input(v);
        c.bench_function(&format!("decide_{name}_{n}_rules"), |b| {
            b.iter(|| {
                let req = DecisionRequest {
                    tool: tool.name(),
                    access: tool.access(),
                    input: &inp,
                    mode: Mode::Default,
                    hook: None,
                };
                black_box(p.decide(black_box(&req)))
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
