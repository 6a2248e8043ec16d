//! `toolrt bench` end to end at tiny sizes (the hidden `--smoke` flag): the JSON has every
//! documented key with a finite, positive number, and the plot is an SVG. No timing is asserted.

use std::process::Command;

mod support;

const KEYS: &[&str] = &[
    "inline_p50_us",
    "actor_floor_p50_us",
    "actor_floor_same_hops_p50_us",
    "ratio_noop_vs_actor_floor_same_hops",
    "noop_p50_us",
    "noop_p99_us",
    "noop_throughput_c16",
    "noop_throughput_c1000",
    "ratio_noop_vs_actor_floor",
    "ratio_noop_vs_inline",
    "bash_ratio",
    "bash_ratio_c4",
    "decide_1k_rules_p50_us",
    "rss_peak_mb",
];

/// Figures that may be zero at smoke sizes (a few hundred calls may fit in memory the allocator
/// already holds).
const NON_NEGATIVE: &[&str] = &["rss_10k_in_flight_mb"];

const STAGES: &[&str] = &[
    "queue",
    "validate",
    "slot",
    "pre_hooks",
    "permission",
    "execute",
    "post_hooks",
    "budget",
];

#[test]
fn smoke_run_writes_every_key_and_a_plot() {
    // The MCP figure measures the server the MCP tests install.
    support::mcp::fixtures();
    let dir = tempfile::tempdir().expect("temp dir");
    let json_path = dir.path().join("bench.json");
    let svg_path = dir.path().join("bench.svg");
    let out = Command::new(env!("CARGO_BIN_EXE_toolrt"))
        .args(["bench", "--quick", "--smoke", "--json"])
        .arg(&json_path)
        .arg("--plot")
        .arg(&svg_path)
        .output()
        .expect("toolrt runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    // Not a terminal: no progress on stderr.
    assert!(stderr.is_empty(), "unexpected stderr: {stderr}");
    let table = String::from_utf8_lossy(&out.stdout);
    for row in [
        "inline floor p50",
        "actor floor p50",
        "toolrt no-op p50",
        "bash ratio",
        "mcp ratio, 1 in flight",
        "client tool / no-op",
    ] {
        assert!(table.contains(row), "no {row:?} in the table:\n{table}");
    }

    let text = std::fs::read_to_string(&json_path).expect("json written");
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid json");
    for key in KEYS {
        let n = v[key].as_f64().unwrap_or(f64::NAN);
        assert!(n.is_finite() && n > 0.0, "{key} = {}", v[key]);
    }
    for key in NON_NEGATIVE {
        let n = v[key].as_f64().unwrap_or(f64::NAN);
        assert!(n.is_finite() && n >= 0.0, "{key} = {}", v[key]);
    }
    // Stages that do no work in this run (no hooks) may time at 0 µs on a coarse clock.
    for stage in STAGES {
        let n = v["stages"][stage].as_f64().unwrap_or(f64::NAN);
        assert!(
            n.is_finite() && n >= 0.0,
            "stages.{stage} = {}",
            v["stages"][stage]
        );
    }
    for key in [
        "toolrt_p50_us",
        "bare_p50_us",
        "ratio_c1",
        "toolrt_throughput_c16",
        "bare_throughput_c16",
        "round_ratio_median_c1",
        "round_ratio_median_c16",
    ] {
        let n = v["mcp"][key].as_f64().unwrap_or(f64::NAN);
        assert!(n.is_finite() && n > 0.0, "mcp.{key} = {}", v["mcp"]);
    }
    // CPU time per call from getrusage (microsecond resolution).
    for key in [
        "toolrt_cpu_us_per_call_c1",
        "bare_cpu_us_per_call_c1",
        "toolrt_cpu_us_per_call_c16",
        "bare_cpu_us_per_call_c16",
    ] {
        let n = v["mcp"][key].as_f64().unwrap_or(f64::NAN);
        assert!(n.is_finite() && n >= 0.0, "mcp.{key} = {}", v["mcp"]);
    }
    for key in ["client_p50_us", "noop_p50_us", "ratio_c1"] {
        let n = v["client_tool"][key].as_f64().unwrap_or(f64::NAN);
        assert!(
            n.is_finite() && n > 0.0,
            "client_tool.{key} = {}",
            v["client_tool"]
        );
    }
    let svg = std::fs::read_to_string(&svg_path).expect("svg written");
    assert!(svg.starts_with("<svg"));
}

#[test]
fn unwritable_json_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bad = dir.path().join("missing/dir/bench.json");
    let out = Command::new(env!("CARGO_BIN_EXE_toolrt"))
        .args(["bench", "--smoke", "--json"])
        .arg(&bad)
        .output()
        .expect("toolrt runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot write") && stderr.contains("bench.json"),
        "{stderr}"
    );
}

#[test]
fn smoke_is_hidden_from_help() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolrt"))
        .args(["bench", "--help"])
        .output()
        .expect("toolrt runs");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--quick") && help.contains("--json") && help.contains("--plot"));
    assert!(!help.contains("--smoke"), "{help}");
}
