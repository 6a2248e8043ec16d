//! Dispatch latency and throughput through the whole pipeline with a no-op tool.
//!
//! Run with `cargo bench --bench dispatch`. With `CI` set, sizes are cut down.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use toolrt::{AskPolicy, ClientMessage, Config, Noop, Outbox, Runtime, ServerMessage, ToolCall};

// Measure with the allocator the binary uses.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn ci() -> bool {
    std::env::var_os("CI").is_some()
}

async fn start(max_in_flight: usize) -> (Runtime, Outbox, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path().to_path_buf()).tool(Arc::new(Noop::new()));
    config.builtins = false;
    config.allowed_tools = vec!["Noop".into()];
    config.ask_policy = AskPolicy::Deny;
    config.max_in_flight = max_in_flight;
    config.max_queued = 20_000;
    let (rt, rx) = Runtime::start(config).await.unwrap();
    (rt, rx, dir)
}

async fn next_result(rx: &mut Outbox) {
    while let Some(msg) = rx.recv().await {
        if matches!(msg, ServerMessage::ToolResult(_)) {
            return;
        }
    }
    panic!("runtime closed");
}

fn dispatch(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("dispatch");
    if ci() {
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(1))
            .warm_up_time(Duration::from_millis(200));
    }

    let (runtime, rx, _dir) = rt.block_on(start(64));
    let rx = tokio::sync::Mutex::new(rx);
    group.throughput(Throughput::Elements(1));
    group.bench_function("noop_one_in_flight", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut rx = rx.lock().await;
                let start = Instant::now();
                for i in 0..iters {
                    runtime
                        .submit(ClientMessage::ToolUse(ToolCall::new(
                            format!("c{i}"),
                            "Noop",
                            json!({}),
                        )))
                        .await;
                    next_result(&mut rx).await;
                }
                start.elapsed()
            })
        })
    });

    let n: u64 = if ci() { 1_000 } else { 10_000 };
    let (runtime, rx, _dir2) = rt.block_on(start(1_000));
    let rx = tokio::sync::Mutex::new(rx);
    group.throughput(Throughput::Elements(n));
    group.bench_function("noop_10k_at_1000_in_flight", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut rx = rx.lock().await;
                let start = Instant::now();
                for _ in 0..iters {
                    let mut received = 0;
                    for i in 0..n {
                        runtime
                            .submit(ClientMessage::ToolUse(ToolCall::new(
                                format!("t{i}"),
                                "Noop",
                                json!({}),
                            )))
                            .await;
                        // Keep at most 1,000 in flight.
                        while i + 1 - received >= 1_000 {
                            next_result(&mut rx).await;
                            received += 1;
                        }
                    }
                    while received < n {
                        next_result(&mut rx).await;
                        received += 1;
                    }
                }
                start.elapsed()
            })
        })
    });
    group.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
