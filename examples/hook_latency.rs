//! Measures what one trivial command hook (`true`) adds to a call, against a bare `sh -c true`
//! spawn measured in the same run, interleaved so both see the same machine load.
//!
//! Run: `cargo run --release --example hook_latency` (set `ITERS`, default 400; `CI` uses 100).
//! Prints p50/p90 of each and the p50 ratio, e.g.
//! `bare sh -c true: p50 1.02 ms …` / `PreToolUse hook true: p50 1.08 ms …` / `ratio 1.06`.

#[path = "../benches/support/hook_setup.rs"]
mod hook_setup;

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use toolrt::hooks::ToolHookCall;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let default_iters = if std::env::var_os("CI").is_some() {
        100
    } else {
        400
    };
    let iters: usize = std::env::var("ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_iters);
    let dir = std::env::temp_dir();
    let runner = hook_setup::runner(&dir);
    let input = hook_setup::input();
    let call = ToolHookCall {
        tool_name: "Bash",
        access: Default::default(),
        tool_input: &input,
        tool_use_id: "t1",
        permission_mode: "default",
        agent: None,
    };
    let cancel = CancellationToken::new();
    let unmatched = ToolHookCall {
        tool_name: "Read",
        access: Default::default(),
        ..call
    };

    let mut bare = Vec::with_capacity(iters);
    let mut hooked = Vec::with_capacity(iters);
    let mut skipped = Vec::with_capacity(iters);
    for i in 0..iters + 20 {
        let t = Instant::now();
        let out = hook_setup::bare_sh_true(&dir).await;
        let b = t.elapsed();
        assert!(out.status.success());
        let t = Instant::now();
        let r = runner.pre_tool_use(&call, &cancel).await;
        let h = t.elapsed();
        assert!(r.permission.is_none());
        let t = Instant::now();
        runner.pre_tool_use(&unmatched, &cancel).await;
        let s = t.elapsed();
        // The first rounds warm caches and the runtime; they are not counted.
        if i >= 20 {
            bare.push(b);
            hooked.push(h);
            skipped.push(s);
        }
    }
    for v in [&mut bare, &mut hooked, &mut skipped] {
        v.sort();
    }
    let report = |name: &str, v: &[Duration]| {
        println!(
            "{name}: p50 {:.3} ms, p90 {:.3} ms ({} runs)",
            ms(percentile(v, 0.5)),
            ms(percentile(v, 0.9)),
            v.len()
        );
    };
    report("bare sh -c true spawn", &bare);
    report("PreToolUse with one hook `true`", &hooked);
    report("PreToolUse, no matching hook", &skipped);
    println!(
        "p50 ratio hook/bare: {:.3}",
        percentile(&hooked, 0.5).as_secs_f64() / percentile(&bare, 0.5).as_secs_f64()
    );
}
