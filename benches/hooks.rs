//! What hooks cost a call: the runner with no matching hook (the common case), with one trivial
//! command hook (`true`), and a bare `sh -c true` spawn for comparison.
//!
//! Run: `cargo bench --bench hooks`. With `CI` set, fewer samples. For the p50 ratio printed
//! directly, see `examples/hook_latency.rs`.

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use toolrt::hooks::{HookConfig, HookEnv, HookRunner, IfFilter, ToolHookCall};

struct NoFilter;

impl IfFilter for NoFilter {
    fn matches(&self, _: &str, _: &str, _: &Map<String, Value>) -> bool {
        true
    }
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = std::env::temp_dir();
    let mut config = HookConfig::new();
    config
        .add_settings_file(
            std::path::Path::new("bench.json"),
            &json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}),
            &|_| Ok(()),
        )
        .unwrap();
    let runner = HookRunner::new(
        Arc::new(config),
        HookEnv {
            cwd: dir.clone(),
            project_dir: dir.clone(),
            session_id: "bench".into(),
            env_scrub: vec!["*_TOKEN".into()],
            output_dir: dir.clone(),
        },
        Arc::new(NoFilter),
        Arc::new(|_| {}),
    );
    let input = json!({"command": "ls"}).as_object().cloned().unwrap();
    let bash = ToolHookCall {
        tool_name: "Bash",
        tool_input: &input,
        tool_use_id: "t1",
        permission_mode: "default",
    };
    let read = ToolHookCall {
        tool_name: "Read",
        ..bash
    };
    let cancel = CancellationToken::new();

    let mut g = c.benchmark_group("hooks");
    if std::env::var_os("CI").is_some() {
        g.sample_size(10).measurement_time(Duration::from_secs(2));
    }
    g.bench_function("pre_tool_use/no_matching_hook", |b| {
        b.iter(|| rt.block_on(runner.pre_tool_use(&read, &cancel)))
    });
    g.bench_function("pre_tool_use/one_true_hook", |b| {
        b.iter(|| rt.block_on(runner.pre_tool_use(&bash, &cancel)))
    });
    g.bench_function("bare_sh_c_true", |b| {
        b.iter(|| {
            // Inside the runtime: tokio spawns the child as soon as `output()` is called.
            rt.block_on(async {
                tokio::process::Command::new("sh")
                    .arg("-c")
                    .arg("true")
                    .current_dir(&dir)
                    .stdin(std::process::Stdio::piped())
                    .output()
                    .await
                    .unwrap()
            })
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
