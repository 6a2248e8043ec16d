//! One permission decision against 1,000 mixed Bash and path rules.
//!
//! Run with `cargo bench --bench decide`; set `CI=1` for a quick run with 100 rules. Criterion
//! prints the time per decision; the median is in `target/criterion/*/new/estimates.json`.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use toolrt::permission::{DecisionRequest, Mode, Policy, PolicyBuilder};

/// Half Bash rules (exact, prefix, `:*`, mid-pattern stars), half path rules (anchored,
/// any-depth, globs), spread over allow, ask and deny.
fn policy(n: usize, cwd: &std::path::Path) -> Policy {
    let mut allow = Vec::new();
    let mut ask = Vec::new();
    let mut deny = Vec::new();
    for i in 0..n {
        let rule = match i % 8 {
            0 => format!("Bash(tool{i} run:*)"),
            1 => format!("Bash(git * branch{i})"),
            2 => format!("Bash(npm run script{i})"),
            3 => format!("Bash(cmd{i} *)"),
            4 => format!("Read(src/mod{i}/**)"),
            5 => format!("Edit(//opt/data{i}/*.csv)"),
            6 => format!("Read(~/.secret{i})"),
            _ => format!("Edit(docs/**/page{i}.md)"),
        };
        match i % 10 {
            0..=5 => allow.push(rule),
            6 => ask.push(rule),
            _ => deny.push(rule),
        }
    }
    let mut b = PolicyBuilder::new(cwd.to_path_buf(), PathBuf::from("/h/u"));
    b.add_settings_file(
        &cwd.join(".claude/settings.json"),
        &json!({ "allow": allow, "ask": ask, "deny": deny }),
    )
    .expect("rules compile");
    b.build().expect("policy builds")
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
    let cases = [
        (
            "bash_simple",
            "Bash",
            json!({ "command": "tool8 run --fast" }),
        ),
        (
            "bash_compound",
            "Bash",
            json!({ "command": "git status && npm run script2 | grep ok" }),
        ),
        ("read", "Read", json!({ "file_path": read })),
        ("edit", "Edit", json!({ "file_path": edit })),
    ];
    for (name, tool, v) in cases {
        let inp = input(v);
        c.bench_function(&format!("decide_{name}_{n}_rules"), |b| {
            b.iter(|| {
                let req = DecisionRequest {
                    tool,
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
