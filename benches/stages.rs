//! Each stage's pure work alone: validate (`prepare`), one permission decision against 100
//! rules, the budget plan, and the protocol's parse and serialise.
//!
//! Run with `cargo bench --bench stages`. With `CI` set, criterion takes fewer, shorter samples.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use futures::FutureExt;
use serde_json::json;
use toolrt::Noop;
use toolrt::bench::workload::{Workspace, noop_line, pipeline_policy};
use toolrt::permission::{DecisionRequest, Mode};
use toolrt::registry::{Naming, Registry, Selection};
use toolrt::settings::Limits;
use toolrt::{
    BudgetClass, Outcome, ServerMessage, Session, Tool, ToolCall, ToolOutput, ToolResult,
    parse_line,
};
use toolrt::{budget, validate};

fn ci() -> bool {
    std::env::var_os("CI").is_some()
}

fn stages(c: &mut Criterion) {
    let ws = Workspace::new().expect("workspace");
    let policy = pipeline_policy(&ws.cwd, &["Noop"]).expect("rules compile");
    let noop: Arc<dyn Tool> = Arc::new(Noop::new());
    let registry = Registry::build(
        vec![noop.clone()],
        Naming {
            selection: &Selection::All,
            aliases: &BTreeMap::new(),
            alias_files: &BTreeMap::new(),
            late_prefixes: &[],
        },
        |_| false,
    )
    .expect("registry");
    let session = Session::new(ws.cwd.clone(), std::env::temp_dir());

    let mut group = c.benchmark_group("stages");
    if ci() {
        group
            .sample_size(10)
            .measurement_time(Duration::from_millis(500))
            .warm_up_time(Duration::from_millis(100));
    }

    group.bench_function("validate_prepare", |b| {
        b.iter_batched(
            || ToolCall::new("c1", "Noop", json!({"value": 1})),
            // The no-op tool's own validation is done on its first poll.
            |call| black_box(validate::prepare(&registry, &session, call).now_or_never()),
            criterion::BatchSize::SmallInput,
        )
    });

    let input = match validate::check(
        &registry,
        &session,
        ToolCall::new("c1", "Noop", json!({"value": 1})),
    ) {
        Ok(prepared) => prepared.input,
        Err(r) => panic!("the bench call is valid: {}", r.content),
    };
    group.bench_function("permission_decide_100_rules", |b| {
        b.iter(|| {
            black_box(policy.decide(black_box(&DecisionRequest {
                tool: "Noop",
                access: noop.access(),
                input: &input,
                mode: Mode::Default,
                hook: None,
            })))
        })
    });

    let limits = Limits::default();
    let small = ToolOutput::success("ok");
    let large = ToolOutput::success("x".repeat(60_000));
    group.bench_function("budget_plan_inline", |b| {
        b.iter(|| black_box(budget::plan(black_box(&small), BudgetClass::Other, &limits)))
    });
    group.bench_function("budget_plan_over_budget", |b| {
        b.iter(|| black_box(budget::plan(black_box(&large), BudgetClass::Other, &limits)))
    });

    let line = noop_line(42);
    group.bench_function("protocol_parse_line", |b| {
        b.iter(|| black_box(parse_line(black_box(&line))))
    });
    let result = ServerMessage::ToolResult(ToolResult::new("b42", Outcome::Success, "ok"));
    group.bench_function("protocol_to_line", |b| {
        b.iter(|| black_box(black_box(&result).to_line()))
    });
    group.finish();
}

criterion_group!(benches, stages);
criterion_main!(benches);
