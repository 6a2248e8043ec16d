//! The cluster figure (`--cluster N`): real `toolrt worker` processes on loopback and
//! `toolrt serve` coordinators driven over stdin and stdout, as a client drives them.
//!
//! - **Remote overhead**: a Read of a small file, one in flight, through a coordinator without
//!   workers (it reads its own copy) against one with a single worker (the worker reads its
//!   copy), blocks interleaved. Both sides pay the same process and pipes; the difference is
//!   what placing the execute step on a worker adds: two round trips (the worker resolves the
//!   path for the permission decision, then runs the call), each set against a bare loopback
//!   TCP round trip measured in the same rounds.
//! - **Throughput**: `sleep 0.05` through Bash with 64 calls kept in flight, through a
//!   coordinator with one worker against one with all N (and, for scale, one running the
//!   commands itself), blocks interleaved.
//!
//! Workers are pinned to CPUs round-robin with `taskset` where it exists.

use std::time::Duration;

use serde_json::{Value, json};

use super::mcp::{median, turns};
use super::nodes::{self, Place, Serve, Worker};
use super::stats::{Dist, ratio};

/// The file every Read reads, in the coordinator's folder and in each worker's.
const FILE: &str = "bench.txt";
const FILE_TEXT: &str = "a small file\n";
const READ_INPUT: &str = r#"{"file_path":"bench.txt"}"#;
/// The folder of files each read once, for the first-path figure.
const FIRST_DIR: &str = "first";
const SLEEP_INPUT: &str = r#"{"command":"sleep 0.05"}"#;

/// Calls kept in flight by the throughput figure.
pub(super) const SLEEP_IN_FLIGHT: usize = 64;

/// Calls per latency block (each side), as in the MCP figure.
const LATENCY_BLOCK: usize = 50;

/// How many calls the figure makes.
#[derive(Debug, Clone, Copy)]
pub(super) struct ClusterSizes {
    /// Reads per side at one in flight.
    pub latency_calls: usize,
    /// `sleep 0.05` calls per side at 64 in flight.
    pub sleep_calls: usize,
}

impl ClusterSizes {
    /// Sizes for a run of `mode` (`full`, `quick`, `smoke`).
    pub(super) fn of(mode: &str) -> Self {
        match mode {
            "full" => Self {
                latency_calls: 2_000,
                sleep_calls: 3_200,
            },
            "quick" => Self {
                latency_calls: 400,
                sleep_calls: 1_280,
            },
            _ => Self {
                latency_calls: 20,
                sleep_calls: 128,
            },
        }
    }
}

/// One throughput side: calls per second, and how busy the machine's CPUs were meanwhile.
#[derive(Debug, Clone, Default)]
pub(super) struct Throughput {
    /// Calls per second.
    pub calls_per_s: f64,
    /// Share of all CPUs' time spent busy during its blocks (every process on the machine,
    /// /proc/stat); None without /proc.
    pub cpu_busy: Option<f64>,
    /// Calls each worker ran.
    pub per_node: Vec<(String, usize)>,
}

/// The cluster figures.
pub(super) struct ClusterFigures {
    /// Workers started.
    pub workers: usize,
    /// The CPU each worker was pinned to (`taskset -c`), or why none was.
    pub pinned: Result<Vec<usize>, String>,
    /// The one-minute load average when the figure began.
    pub load_average: Option<f64>,
    /// Read through a coordinator without workers, one in flight.
    pub local: Dist,
    /// Read through a coordinator with one worker, one in flight.
    pub remote: Dist,
    /// Reads of paths not read before, each once: through the coordinator without workers,
    /// and with one (whose answer about the path is not kept yet: two round trips).
    pub first_local: Dist,
    pub first_remote: Dist,
    /// A bare loopback TCP round trip between two threads (`nodes::loopback_round_trips`),
    /// in the same rounds: the floor under each round trip of a remote Read.
    pub loopback: Dist,
    /// Each round's remote p50 minus its local p50 (µs).
    pub rounds: Vec<f64>,
    /// `sleep 0.05` at 64 in flight run by the coordinator itself (no workers): what this
    /// machine does without the cluster.
    pub sleep_local: Throughput,
    /// The same with one worker.
    pub one: Throughput,
    /// The same with every worker.
    pub all: Throughput,
}

impl ClusterFigures {
    /// What a remote call adds at p50 (µs).
    pub(super) fn remote_extra_us(&self) -> f64 {
        self.remote.p50_us() - self.local.p50_us()
    }

    /// Calls per second with every worker over one worker's.
    pub(super) fn throughput_ratio(&self) -> f64 {
        ratio(self.all.calls_per_s, self.one.calls_per_s)
    }

    /// The most [`ClusterFigures::throughput_ratio`] can be when the commands' own CPU is
    /// what limits them: the CPUs every worker is pinned to over the one worker's (None when
    /// not pinned). A worker's commands inherit its CPU, so one worker starts only as many
    /// as one CPU can.
    pub(super) fn cpu_bound_ratio(&self) -> Option<f64> {
        cpu_bound_ratio(self.pinned.as_ref().ok()?)
    }

    /// The figures as JSON (the `cluster` object).
    pub(super) fn json(&self) -> Value {
        let side = |t: &Throughput| {
            json!({
                "calls_per_s": t.calls_per_s,
                "cpu_busy": t.cpu_busy,
                "calls_per_node": t.per_node.iter().map(|(n, c)| (n.clone(), json!(c))).collect::<serde_json::Map<String, Value>>(),
            })
        };
        json!({
            "workers": self.workers,
            "pinned_cpus": self.pinned.as_ref().ok(),
            "not_pinned_because": self.pinned.as_ref().err(),
            "load_average": self.load_average,
            "call": "Read of a 13-byte file (relative path), one in flight",
            "local_p50_us": self.local.p50_us(),
            "local_p99_us": self.local.p99_us(),
            "remote_p50_us": self.remote.p50_us(),
            "remote_p99_us": self.remote.p99_us(),
            "remote_extra_us": self.remote_extra_us(),
            "remote_extra_round_median_us": median(&self.rounds),
            "remote_round_trips": 1,
            "first_path_local_p50_us": self.first_local.p50_us(),
            "first_path_remote_p50_us": self.first_remote.p50_us(),
            "first_path_remote_extra_us": self.first_remote.p50_us() - self.first_local.p50_us(),
            "first_path_remote_round_trips": 2,
            "loopback_round_trip_p50_us": self.loopback.p50_us(),
            "latency_calls": self.local.len(),
            "sleep_in_flight": SLEEP_IN_FLIGHT,
            "throughput_local": side(&self.sleep_local),
            "throughput_1_worker": side(&self.one),
            "throughput_all_workers": side(&self.all),
            "throughput_ratio": self.throughput_ratio(),
            "throughput_ratio_cpu_bound": self.cpu_bound_ratio(),
        })
    }
}

/// Measures the figure with `workers` workers.
pub(super) async fn measure(workers: usize, sizes: ClusterSizes) -> Result<ClusterFigures, String> {
    let dir = tempfile::Builder::new()
        .prefix("toolrt-bench-cluster-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary folder: {e}"))?;
    let dir_path = std::fs::canonicalize(dir.path()).map_err(|e| e.to_string())?;
    let place = Place::new(&dir_path)?;
    let pinned = pins(workers);
    let load_average = nodes::load_average();
    let firsts = first_paths(sizes.latency_calls);
    let mut files: Vec<(&str, &str)> = vec![(FILE, FILE_TEXT)];
    files.extend(firsts.iter().map(|f| (f.as_str(), FILE_TEXT)));
    let mut started = Vec::with_capacity(workers);
    for i in 0..workers {
        let pin = pinned.as_ref().ok().map(|cpus| cpus[i]);
        let name = format!("w{}", i + 1);
        match Worker::start(&place, &name, "Bash,Read", &files, pin).await {
            Ok(w) => started.push(w),
            Err(e) => {
                stop_workers(started).await;
                return Err(e);
            }
        }
    }
    let result = with_workers(&place, &started, sizes).await;
    stop_workers(started).await;
    let m = result?;
    Ok(ClusterFigures {
        workers,
        pinned,
        load_average,
        local: m.local,
        remote: m.remote,
        first_local: m.first_local,
        first_remote: m.first_remote,
        loopback: m.loopback,
        rounds: m.rounds,
        sleep_local: m.sleep_local,
        one: m.one,
        all: m.all,
    })
}

/// The CPUs of workers pinned to `pins` over the first worker's one CPU.
fn cpu_bound_ratio(pins: &[usize]) -> Option<f64> {
    let distinct = pins.iter().collect::<std::collections::BTreeSet<_>>().len();
    (distinct > 0).then_some(distinct as f64)
}

/// The relative paths of the first-path figure's files.
fn first_paths(calls: usize) -> Vec<String> {
    (0..calls).map(|i| format!("{FIRST_DIR}/{i}.txt")).collect()
}

async fn stop_workers(workers: Vec<Worker>) {
    for w in workers {
        w.stop().await;
    }
}

/// The CPU of each worker, round-robin over the CPUs this process may use, or why the workers
/// are not pinned.
fn pins(workers: usize) -> Result<Vec<usize>, String> {
    if !nodes::has_taskset() {
        return Err("no taskset on PATH".into());
    }
    let cpus = nodes::allowed_cpus();
    if cpus.len() < 2 {
        return Err(format!("{} CPU available", cpus.len()));
    }
    Ok((0..workers).map(|i| cpus[i % cpus.len()]).collect())
}

/// What the coordinators measured.
struct Measured {
    local: Dist,
    remote: Dist,
    first_local: Dist,
    first_remote: Dist,
    loopback: Dist,
    rounds: Vec<f64>,
    sleep_local: Throughput,
    one: Throughput,
    all: Throughput,
}

/// Starts the three coordinators (none, one, every worker) and measures; stops them whatever
/// happened.
async fn with_workers(
    place: &Place,
    workers: &[Worker],
    sizes: ClusterSizes,
) -> Result<Measured, String> {
    let local_cwd = place.dir.join("coordinator");
    std::fs::create_dir_all(&local_cwd).map_err(|e| e.to_string())?;
    std::fs::write(local_cwd.join(FILE), FILE_TEXT).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(local_cwd.join(FIRST_DIR)).map_err(|e| e.to_string())?;
    for path in first_paths(sizes.latency_calls) {
        std::fs::write(local_cwd.join(path), FILE_TEXT).map_err(|e| e.to_string())?;
    }
    // Asks are denied (nothing waits for an answer), the two calls allowed by rule; room for
    // more than the figure keeps in flight, so the coordinator's limit is never what is
    // measured. Output files go to a temporary folder removed at exit.
    let args = [
        "--tools",
        "Bash,Read",
        "--allowed-tools",
        "Read",
        "--allowed-tools",
        "Bash(sleep 0.05)",
        "--permission-prompt",
        "none",
        "--max-in-flight",
        "128",
        "--temp-output-dir",
        "--strict-mcp-config",
    ];
    let mut serves: Vec<Serve> = Vec::new();
    for (tag, nodes) in [
        ("local", &workers[..0]),
        ("one", &workers[..1]),
        ("all", workers),
    ] {
        match Serve::start(place, tag, &local_cwd, &args, nodes).await {
            Ok(s) => serves.push(s),
            Err(e) => {
                for s in serves {
                    s.stop().await;
                }
                return Err(e);
            }
        }
    }
    let result = run(&mut serves, workers.len(), sizes).await;
    for s in serves {
        s.stop().await;
    }
    result
}

async fn run(
    serves: &mut [Serve],
    workers: usize,
    sizes: ClusterSizes,
) -> Result<Measured, String> {
    let [local, one, all] = serves else {
        return Err("three coordinators expected".into());
    };
    // The same warm-up for each side: a tenth of the reads, then one block of sleeps.
    let warm = (sizes.latency_calls / 10).max(5);
    local.latency("Read", READ_INPUT, warm, false).await?;
    one.latency("Read", READ_INPUT, warm, true).await?;
    let block = sizes.latency_calls.clamp(1, LATENCY_BLOCK);
    let rounds = sizes.latency_calls.div_ceil(block);
    let (mut l, mut r, mut extra) = (Vec::new(), Vec::new(), Vec::new());
    let mut loopback = Vec::new();
    for round in 0..rounds {
        let mut p50 = [0.0; 2];
        for remote_turn in turns(round) {
            let side = if remote_turn { &mut *one } else { &mut *local };
            let samples = side.latency("Read", READ_INPUT, block, remote_turn).await?;
            p50[usize::from(remote_turn)] = Dist::new(samples.clone()).p50_us();
            if remote_turn { &mut r } else { &mut l }.extend(samples);
        }
        extra.push(p50[1] - p50[0]);
        loopback.extend(nodes::loopback_round_trips(block).await?);
    }
    // Each path read once per side, in the same turns: what a path costs the first time.
    let firsts = first_paths(sizes.latency_calls);
    let inputs: Vec<String> = (firsts.iter())
        .map(|f| json!({ "file_path": f }).to_string())
        .collect();
    let (mut fl, mut fr) = (Vec::new(), Vec::new());
    for (round, chunk) in inputs.chunks(block).enumerate() {
        let chunk: Vec<&str> = chunk.iter().map(String::as_str).collect();
        for remote_turn in turns(round) {
            let side = if remote_turn { &mut *one } else { &mut *local };
            let samples = side.latency_each("Read", &chunk, remote_turn).await?;
            if remote_turn { &mut fr } else { &mut fl }.extend(samples);
        }
    }

    let sleep_block = sizes.sleep_calls.min(5 * SLEEP_IN_FLIGHT);
    let sleep_rounds = sizes.sleep_calls.div_ceil(sleep_block);
    let mut sides = [local, one, all];
    for (i, side) in sides.iter_mut().enumerate() {
        side.closed_loop("Bash", SLEEP_INPUT, SLEEP_IN_FLIGHT, SLEEP_IN_FLIGHT, i > 0)
            .await?;
        side.per_node.clear();
    }
    let mut took = [Duration::ZERO; 3];
    let mut busy = [(0u64, 0u64); 3];
    for round in 0..sleep_rounds {
        // Each side goes first in turn, so drift on the machine falls on all three alike.
        for k in 0..3 {
            let i = (round + k) % 3;
            let before = nodes::cpu_ticks();
            took[i] += sides[i]
                .closed_loop("Bash", SLEEP_INPUT, sleep_block, SLEEP_IN_FLIGHT, i > 0)
                .await?;
            if let (Some(b), Some(a)) = (before, nodes::cpu_ticks()) {
                busy[i].0 += a.0.saturating_sub(b.0);
                busy[i].1 += a.1.saturating_sub(b.1);
            }
        }
    }
    let n = (sleep_rounds * sleep_block) as f64;
    let [local, one, all] = sides;
    // Every worker must have taken part, or the figure is of fewer workers than it says.
    if all.per_node.len() != workers {
        return Err(format!(
            "only {} of {workers} workers ran calls ({:?}): a worker was lost or never chosen",
            all.per_node.len(),
            all.per_node
        ));
    }
    let side = |i: usize, serve: &Serve| {
        let mut per_node: Vec<(String, usize)> = serve
            .per_node
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        per_node.sort();
        Throughput {
            calls_per_s: n / took[i].as_secs_f64(),
            cpu_busy: (busy[i].1 > 0).then(|| busy[i].0 as f64 / busy[i].1 as f64),
            per_node,
        }
    };
    Ok(Measured {
        local: Dist::new(l),
        remote: Dist::new(r),
        first_local: Dist::new(fl),
        first_remote: Dist::new(fr),
        loopback: Dist::new(loopback),
        rounds: extra,
        sleep_local: side(0, local),
        one: side(1, one),
        all: side(2, all),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_grow_with_the_mode() {
        let (s, q, f) = (
            ClusterSizes::of("smoke"),
            ClusterSizes::of("quick"),
            ClusterSizes::of("full"),
        );
        assert!(s.latency_calls < q.latency_calls && q.latency_calls < f.latency_calls);
        assert!(s.sleep_calls < q.sleep_calls && q.sleep_calls < f.sleep_calls);
        // Every throughput side keeps 64 in flight for at least one full window.
        assert!(s.sleep_calls >= SLEEP_IN_FLIGHT);
    }

    #[test]
    fn the_cpu_bound_ratio_counts_the_cpus_the_workers_have() {
        assert_eq!(cpu_bound_ratio(&[0, 1, 0]), Some(2.0));
        assert_eq!(cpu_bound_ratio(&[0, 1, 2]), Some(3.0));
        assert_eq!(cpu_bound_ratio(&[]), None);
    }

    #[test]
    fn workers_are_pinned_round_robin_or_not_at_all() {
        match pins(5) {
            Ok(cpus) => {
                let allowed = nodes::allowed_cpus();
                assert_eq!(cpus.len(), 5);
                assert!(cpus.iter().all(|c| allowed.contains(c)), "{cpus:?}");
                for (i, cpu) in cpus.iter().enumerate() {
                    assert_eq!(*cpu, allowed[i % allowed.len()], "{cpus:?}");
                }
            }
            Err(why) => assert!(!why.is_empty()),
        }
    }
}
