//! What hooks cost a call: the runner with no matching hook (the common case), with one trivial
//! command hook (`true`), and a bare `sh -c true` spawn for comparison.
//!
//! Run: `cargo bench --bench hooks`. With `CI` set, fewer samples. For the p50 ratio printed
//! directly, see `examples/hook_latency.rs`.

#[path = "support/hook_setup.rs"]
mod hook_setup;

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tokio_util::sync::CancellationToken;
use toolrt::hooks::ToolHookCall;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = std::env::temp_dir();
    let runner = hook_setup::runner(&dir);
    let input = hook_setup::input();
    let bash = ToolHookCall {
        tool_name: "Bash",
        access: Default::default(),
        tool_input: &input,
        tool_use_id: "t1",
        permission_mode: "default",
        agent: None,
    };
    let read = ToolHookCall {
        tool_name: "Read",
        access: Default::default(),
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
            rt.block_on(hook_setup::bare_sh_true(&dir))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
