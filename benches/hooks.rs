//! What a command hook costs a call, through the public API: a no-op call with no hook, the
//! same call with one PreToolUse command hook (`true`), and a bare `sh -c true` spawn for
//! comparison (the hook's floor: a process toolrt must start and wait for).
//!
//! Run: `cargo bench --bench hooks`. With `CI` set, fewer samples.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolrt::{
    AskPolicy, ClientMessage, Config, Noop, Outbox, Runtime, ServerMessage, Settings, ToolCall,
};

// Measure with the allocator the binary uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A runtime with the no-op tool allowed, and, when `hooked`, one PreToolUse hook `true` on it.
async fn start(dir: &Path, hooked: bool) -> (Runtime, Outbox) {
    let mut config = Config::new(dir.to_path_buf()).tool(Arc::new(Noop::new()));
    config.builtins = false;
    config.allowed_tools = vec!["Noop".into()];
    config.ask_policy = AskPolicy::Deny;
    if hooked {
        let file = dir.join("settings.json");
        let hooks = json!({"hooks": {"PreToolUse": [
            {"matcher": "Noop", "hooks": [{"type": "command", "command": "true"}]}
        ]}});
        std::fs::write(&file, hooks.to_string()).expect("settings written");
        config.settings = Settings::load(&[file]).expect("valid settings");
    }
    Runtime::start(config).await.expect("the runtime starts")
}

/// `iters` calls one after another; the time they took.
async fn calls(runtime: &Runtime, outbox: &mut Outbox, iters: u64) -> Duration {
    let start = Instant::now();
    for i in 0..iters {
        let call = ToolCall::new(format!("c{i}"), "Noop", json!({}));
        runtime.submit(ClientMessage::ToolUse(call)).await;
        loop {
            match outbox.recv().await {
                Some(ServerMessage::ToolResult(_)) => break,
                Some(_) => continue, // hook events
                None => panic!("the outbox closed"),
            }
        }
    }
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let plain_dir = tempfile::tempdir().unwrap();
    let hooked_dir = tempfile::tempdir().unwrap();
    let (plain, plain_out) = rt.block_on(start(plain_dir.path(), false));
    let (hooked, hooked_out) = rt.block_on(start(hooked_dir.path(), true));
    let (plain_out, hooked_out) = (
        tokio::sync::Mutex::new(plain_out),
        tokio::sync::Mutex::new(hooked_out),
    );

    let mut g = c.benchmark_group("hooks");
    if std::env::var_os("CI").is_some() {
        g.sample_size(10).measurement_time(Duration::from_secs(2));
    }
    g.bench_function("noop_call/no_hook", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async { calls(&plain, &mut *plain_out.lock().await, iters).await })
        })
    });
    g.bench_function("noop_call/one_true_hook", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async { calls(&hooked, &mut *hooked_out.lock().await, iters).await })
        })
    });
    g.bench_function("bare_sh_c_true", |b| {
        b.iter(|| {
            // Spawned the way a command hook is: stdin piped, output read. Inside the runtime:
            // tokio spawns the child as soon as `output()` is called.
            rt.block_on(async {
                tokio::process::Command::new("sh")
                    .args(["-c", "true"])
                    .current_dir(hooked_dir.path())
                    .stdin(std::process::Stdio::piped())
                    .output()
                    .await
                    .expect("sh runs")
            })
        })
    });
    g.finish();
    rt.block_on(async {
        plain.shutdown().await;
        hooked.shutdown().await;
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
