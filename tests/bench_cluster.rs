//! `toolrt bench --cluster N` end to end at tiny sizes (the hidden `--smoke` flag): real
//! workers and coordinators of the binary start, every cluster key is in the JSON with a sane
//! value, the calls spread as the figure says, and no process of the bench outlives it. No
//! timing is asserted.

use std::process::Command;

/// The pids of every process whose command line names `needle` (from /proc).
fn processes_naming(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc") {
        let Ok(entry) = entry else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(needle) {
            found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

#[test]
fn cluster_run_writes_its_figures_and_leaves_no_process() {
    let dir = tempfile::tempdir().expect("temp dir");
    let json_path = dir.path().join("bench.json");
    let out = Command::new(env!("CARGO_BIN_EXE_toolrt"))
        .args(["bench", "--smoke", "--cluster", "2", "--json"])
        .arg(&json_path)
        .output()
        .expect("toolrt runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    let table = String::from_utf8_lossy(&out.stdout);
    for row in [
        "cluster read p50, remote, 1",
        "cluster remote extra, p50",
        "cluster throughput, 2 / 1 workers",
    ] {
        assert!(table.contains(row), "no {row:?} in the table:\n{table}");
    }

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("json written"))
            .expect("valid json");
    let c = &v["cluster"];
    assert_eq!(c["workers"], 2, "{c}");
    for key in [
        "local_p50_us",
        "remote_p50_us",
        "local_p99_us",
        "remote_p99_us",
        "throughput_ratio",
    ] {
        let n = c[key].as_f64().unwrap_or(f64::NAN);
        assert!(n.is_finite() && n > 0.0, "cluster.{key} = {}", c[key]);
    }
    for side in ["throughput_1_worker", "throughput_all_workers"] {
        let n = c[side]["calls_per_s"].as_f64().unwrap_or(f64::NAN);
        assert!(n.is_finite() && n > 0.0, "cluster.{side} = {}", c[side]);
    }
    // The difference may be of either sign on a busy machine, but it is a number, and the
    // top-level keys repeat the object's.
    assert!(c["remote_extra_us"].as_f64().is_some_and(f64::is_finite));
    // Paths read once each: measured beside the repeated one.
    for key in ["first_path_local_p50_us", "first_path_remote_p50_us"] {
        assert!(c[key].as_f64().is_some_and(|v| v > 0.0), "{key}: {c}");
    }
    assert_eq!(v["cluster_remote_extra_us"], c["remote_extra_us"]);
    assert_eq!(v["cluster_throughput_ratio"], c["throughput_ratio"]);
    // Pinned or not, the report says which.
    assert!(
        c["pinned_cpus"].is_array() != c["not_pinned_because"].is_string(),
        "{c}"
    );

    // One worker's side ran only on w1; the other side's calls went to both workers.
    let one = c["throughput_1_worker"]["calls_per_node"]
        .as_object()
        .unwrap();
    assert_eq!(one.keys().collect::<Vec<_>>(), ["w1"], "{c}");
    let all = c["throughput_all_workers"]["calls_per_node"]
        .as_object()
        .unwrap();
    assert_eq!(all.keys().collect::<Vec<_>>(), ["w1", "w2"], "{c}");
    assert!(all.values().all(|n| n.as_u64() > Some(0)), "{c}");

    // Every worker and coordinator it started is gone: their workspaces were under its
    // temporary folder, named on their command lines.
    let left = processes_naming("toolrt-bench-cluster-");
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[test]
fn a_cluster_of_one_is_refused_as_bad_flags() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolrt"))
        .args(["bench", "--smoke", "--cluster", "1"])
        .output()
        .expect("toolrt runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--cluster"), "{stderr}");
}
