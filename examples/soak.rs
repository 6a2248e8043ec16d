//! Soak test of the `toolrt` binary under a hostile mix: lone calls and batches of several tools,
//! permission asks answered at once, late, wrongly or never (then cancelled), cancels of calls
//! and batches, reused ids, PreToolUse hooks that block, hang, crash, print garbage or leave a
//! child behind, commands that time out, print a lot or leave children behind, background
//! tasks, rewinds, malformed lines, and a client that reads its output slowly and now and then
//! not at all. Then, separately, SIGKILL of toolrt while commands, a background task and a hook
//! run.
//!
//! It asserts what toolrt promises:
//! - every call id gets exactly as many results as it had calls accepted (a call is accepted
//!   unless an `error` line lists its id in `ids`), every `batch_start` one `batch_end`;
//! - no result reports an internal error, no refused line ran anything;
//! - toolrt exits 0 at end of input, and no process it started (every one carries an
//!   environment marker, looked for in /proc) outlives it, after an exit or after SIGKILL;
//! - peak RSS stays under a bound computed from the admission sizes (not from the number of
//!   calls), and once every result is read its anonymous memory (heap and stacks) gives back
//!   at least a third of what the run added.
//!
//! ```sh
//! cargo build --release
//! cargo run --release --example soak -- --calls 120000   # the long run (6–8 minutes here)
//! cargo run --release --example soak -- --calls 2500     # what .ci/run runs (under a minute)
//! ```
//! Options: `--calls N` (call ids sent, default 20000), `--seed N`, `--pauses N` (reader pauses
//! of 2 s, default 3), `--toolrt PATH` (default: the `toolrt` in the same target folder as this
//! example). Exit status 1 and a message on stderr when a promise is broken.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Admission sizes given to toolrt: small, so that the run spends its time at the limits.
const IN_FLIGHT: usize = 8;
const QUEUED: usize = 24;
const PARKED: usize = 32;

/// A tiny deterministic generator (xorshift64*): the same seed, the same run (as far as the
/// timing of a real process lets it be).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, items: &'a VecDeque<T>) -> Option<&'a T> {
        if items.is_empty() {
            return None;
        }
        items.get(self.below(items.len() as u64) as usize)
    }
}

struct Options {
    calls: usize,
    seed: u64,
    pauses: usize,
    toolrt: PathBuf,
    /// Where to copy everything toolrt wrote and was sent (for a failed run).
    log: Option<PathBuf>,
}

/// The `toolrt` built beside this example: cargo puts examples in `<target>/release/examples/`,
/// so this finds the binary whatever `CARGO_TARGET_DIR` says.
fn default_toolrt() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("toolrt")))
        .unwrap_or_else(|| PathBuf::from("target/release/toolrt"))
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        calls: 20_000,
        seed: 11,
        pauses: 3,
        toolrt: default_toolrt(),
        log: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse()
                .map_err(|_| format!("{flag} {value}: not a number"))
        };
        match flag.as_str() {
            "--calls" => o.calls = number()? as usize,
            "--seed" => o.seed = number()?,
            "--pauses" => o.pauses = number()? as usize,
            "--toolrt" => o.toolrt = PathBuf::from(value),
            "--log" => o.log = Some(PathBuf::from(value)),
            other => return Err(format!("unknown option {other}")),
        }
    }
    // Absolute: toolrt starts in its sandbox.
    o.toolrt = std::fs::canonicalize(&o.toolrt).map_err(|e| {
        format!(
            "{}: {e}: build it first (cargo build --release) or pass --toolrt",
            o.toolrt.display()
        )
    })?;
    Ok(o)
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("soak: {e}");
            std::process::exit(2);
        }
    };
    let started = Instant::now();
    let mut problems = Vec::new();
    match soak(&o) {
        Ok(report) => println!("{report}"),
        Err(why) => problems.push(why),
    }
    match sigkill_leaves_nothing(&o) {
        Ok(report) => println!("{report}"),
        Err(why) => problems.push(why),
    }
    if problems.is_empty() {
        println!("soak passed in {:.1} s", started.elapsed().as_secs_f64());
    } else {
        for p in &problems {
            eprintln!("soak FAILED: {p}");
        }
        std::process::exit(1);
    }
}

/// A fresh sandbox: project, output folder, hook script, settings.
struct Sandbox {
    dir: tempfile::TempDir,
    cwd: PathBuf,
    out: PathBuf,
    settings: PathBuf,
    marker: String,
}

/// `hook_timeout`: the PreToolUse hook's time limit in seconds.
fn sandbox(seed: u64, hook_timeout: u64) -> Sandbox {
    let dir = tempfile::tempdir().expect("temp dir");
    let cwd = dir.path().join("proj");
    let out = dir.path().join("out");
    std::fs::create_dir_all(cwd.join("src")).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    for i in 0..20 {
        std::fs::write(
            cwd.join(format!("src/f{i}.txt")),
            format!("line {i}\nneedle {i}\n"),
        )
        .unwrap();
    }
    // The hook reads its input, then misbehaves as the command asks it to. A hanging hook
    // leaves a file first, so the SIGKILL part knows it runs.
    let hook = dir.path().join("hook.sh");
    std::fs::write(
        &hook,
        r#"input=$(cat)
case "$input" in
  *FAULT_BLOCK*) echo "blocked by the soak hook" >&2; exit 2 ;;
  *FAULT_HANG*) : > "$(dirname "$0")/hook-hangs"; sleep 30 ;;
  *FAULT_GARBAGE*) echo '{"hookSpecificOutput": {"permissionDecision": 12'; exit 0 ;;
  *FAULT_CRASH*) kill -9 $$ ;;
  *FAULT_CHILD*) (sleep 30 &) ; exit 0 ;;
esac
exit 0
"#,
    )
    .unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({
            "permissions": {"allow": [
                "Bash(echo:*)", "Bash(sleep:*)", "Bash(true)", "Bash(false)", "Bash(cat:*)",
                "Bash(touch:*)", "Bash(seq:*)"
            ]},
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [
                    {"type": "command", "command": format!("sh {}", hook.display()), "timeout": hook_timeout}
                ]}],
                "PostToolUse": [{"matcher": "Read", "hooks": [
                    {"type": "command", "command": "cat > /dev/null; echo '{}'"}
                ]}]
            }
        })
        .to_string(),
    )
    .unwrap();
    let cwd = std::fs::canonicalize(cwd).unwrap();
    Sandbox {
        dir,
        cwd,
        out,
        settings,
        marker: format!("soak-{}-{seed}", std::process::id()),
    }
}

fn start(o: &Options, sb: &Sandbox) -> Result<Child, String> {
    let n = |x: usize| x.to_string();
    Command::new(&o.toolrt)
        .args(["serve", "--cwd"])
        .arg(&sb.cwd)
        .arg("--output-dir")
        .arg(&sb.out)
        .arg("--settings")
        .arg(&sb.settings)
        .args(["--max-in-flight", &n(IN_FLIGHT), "--max-queued", &n(QUEUED)])
        .args(["--max-parked", &n(PARKED)])
        .current_dir(&sb.cwd)
        .env("HOME", sb.dir.path())
        // Every process toolrt starts inherits this: what is left is found by it.
        .env("TOOLRT_SOAK_MARKER", &sb.marker)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", o.toolrt.display()))
}

/// One random call, as a JSON object without `type`.
fn random_call(rng: &mut Rng, id: &str) -> Value {
    let fault = match rng.below(40) {
        0 => " # FAULT_BLOCK",
        1 => " # FAULT_HANG",
        2 => " # FAULT_GARBAGE",
        3 => " # FAULT_CRASH",
        4 => " # FAULT_CHILD",
        _ => "",
    };
    let (name, input) = match rng.below(100) {
        0..=21 => ("Bash", json!({"command": format!("echo {id}{fault}")})),
        22..=25 => ("Bash", json!({"command": format!("false{fault}")})),
        26..=29 => ("Bash", json!({"command": "sleep 0.05"})),
        30..=31 => ("Bash", json!({"command": "sleep 5", "timeout": 100})),
        32..=33 => ("Bash", json!({"command": "sleep 30 & echo left a child"})),
        34 => (
            "Bash",
            json!({"command": format!("sleep {}", 1 + rng.below(8)), "run_in_background": true}),
        ),
        35..=36 => ("Bash", json!({"command": "seq 1 100000"})),
        37..=46 => (
            "Read",
            json!({"file_path": format!("src/f{}.txt", rng.below(25))}),
        ),
        47..=50 => (
            "Read",
            json!({"file_path": format!("w/{}.txt", rng.below(10))}),
        ),
        51..=58 => ("Glob", json!({"pattern": "src/*.txt"})),
        59..=66 => ("Grep", json!({"pattern": "needle", "path": "src"})),
        67..=78 => (
            "Write",
            json!({"file_path": format!("w/{}.txt", rng.below(10)), "content": id}),
        ),
        79..=82 => (
            "Bash",
            json!({"command": format!("rm -rf w/{}.txt", rng.below(10))}),
        ),
        83..=85 => ("NoSuchTool", json!({})),
        86..=89 => ("Read", json!({"file_path": 7})),
        _ => (
            "Bash",
            json!({"command": format!("cat src/f{}.txt", rng.below(20))}),
        ),
    };
    json!({"id": id, "name": name, "input": input})
}

/// A line toolrt must refuse without accepting anything (a blank line it must ignore).
fn malformed(rng: &mut Rng, n: usize) -> String {
    match rng.below(9) {
        0 => "{not json".into(),
        1 => "   ".into(),
        2 => r#"{"type":"nope"}"#.into(),
        // A smuggled second command: must not run either.
        3 => format!(
            r#"{{"type":"tool_use","id":"m{n}","name":"Bash","input":{{"command":"echo a","command":"touch pwned"}}}}"#
        ),
        4 => format!(
            r#"{{"type":"tool_use","id":"{}","name":"Bash"}}"#,
            "x".repeat(300)
        ),
        5 => "[1,2,3]".into(),
        6 => format!(r#"{{"type":"tool_use","id":"m{n}","id":"m{n}b","name":"Read"}}"#),
        7 => format!(
            r#"{{"type":"batch","id":"mb{n}","calls":[{{"id":"m{n}","name":"Bash","input":{{"command":"touch pwned"}},"name":"Read"}}]}}"#
        ),
        _ => r#"{"type":"tool_use","name":"Read"}"#.into(),
    }
}

/// What was sent and what came back.
#[derive(Default)]
struct Ledger {
    /// Call lines written, per call id (a call may still be refused: see `refused`).
    sent: HashMap<String, usize>,
    /// Call ids listed by `error` lines (busy, duplicate id).
    refused: HashMap<String, usize>,
    results: HashMap<String, usize>,
    outcomes: HashMap<String, usize>,
    batch_starts: HashMap<String, usize>,
    batch_ends: HashMap<String, usize>,
    internal_failures: Vec<String>,
    /// Ids whose result is out, free to be used again.
    reusable: VecDeque<String>,
    error_codes: HashMap<String, usize>,
    asks: usize,
    /// Call ids sent, and how many of them have their result or were refused.
    sent_total: usize,
    done_total: usize,
    malformed: usize,
    cancels: usize,
    rewinds: usize,
    /// `rewound` answers.
    rewound: usize,
    lines: usize,
}

impl Ledger {
    /// Accepted calls still without their result.
    fn open(&self) -> usize {
        self.sent_total.saturating_sub(self.done_total)
    }

    fn send(&mut self, id: &str) {
        *self.sent.entry(id.to_string()).or_default() += 1;
        self.sent_total += 1;
    }
}

/// Lines for toolrt's stdin: calls (paced by a bounded channel) and control lines (answers,
/// cancels, which must never wait behind the reader).
enum Line {
    Call(String),
    /// Written once `at` has passed: a late answer, or a cancel of a call left waiting.
    Later(Instant, String),
}

/// A copy of the conversation, for `--log`: `>` lines sent, `<` lines received.
type Log = Option<Arc<Mutex<std::io::BufWriter<std::fs::File>>>>;

fn log(log: &Log, dir: char, line: &str) {
    if let Some(log) = log {
        let _ = writeln!(log.lock().unwrap(), "{dir} {line}");
    }
}

type Stdin = std::io::BufWriter<ChildStdin>;

fn put(stdin: &mut Stdin, copy: &Log, line: &str) -> Result<(), String> {
    log(copy, '>', line);
    writeln!(stdin, "{line}").map_err(|e| format!("writing toolrt's stdin: {e}"))
}

fn flush(stdin: &mut Stdin) -> Result<(), String> {
    stdin
        .flush()
        .map_err(|e| format!("writing toolrt's stdin: {e}"))
}

/// Owns toolrt's stdin: writes control lines first, then calls; ends (closing stdin) once the
/// call channel is closed and `done` is set.
fn stdin_writer(
    stdin: ChildStdin,
    calls: Receiver<String>,
    control: Receiver<Line>,
    done: Arc<AtomicBool>,
    copy: Log,
) -> std::thread::JoinHandle<Result<(), String>> {
    std::thread::spawn(move || {
        let mut stdin = std::io::BufWriter::new(stdin);
        let mut later: Vec<(Instant, String)> = Vec::new();
        let mut calls_open = true;
        loop {
            while let Ok(line) = control.try_recv() {
                match line {
                    Line::Call(l) => {
                        put(&mut stdin, &copy, &l)?;
                        flush(&mut stdin)?;
                    }
                    Line::Later(at, l) => later.push((at, l)),
                }
            }
            let now = Instant::now();
            let mut i = 0;
            while i < later.len() {
                if later[i].0 <= now {
                    let (_, l) = later.swap_remove(i);
                    put(&mut stdin, &copy, &l)?;
                    flush(&mut stdin)?;
                } else {
                    i += 1;
                }
            }
            if calls_open {
                match calls.recv_timeout(Duration::from_millis(5)) {
                    Ok(l) => put(&mut stdin, &copy, &l)?,
                    Err(RecvTimeoutError::Timeout) => flush(&mut stdin)?,
                    Err(RecvTimeoutError::Disconnected) => calls_open = false,
                }
            } else {
                if done.load(Ordering::Relaxed) {
                    return Ok(());
                }
                flush(&mut stdin)?;
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    })
}

/// Reads toolrt's stdout into the ledger, answers permission requests, and reads slowly.
fn stdout_reader(
    stdout: std::process::ChildStdout,
    ledger: Arc<Mutex<Ledger>>,
    control: mpsc::Sender<Line>,
    writing: Arc<AtomicBool>,
    copy: Log,
    o: &Options,
) -> std::thread::JoinHandle<Result<(), String>> {
    let (pauses, calls, seed) = (o.pauses, o.calls, o.seed);
    std::thread::spawn(move || {
        let mut rng = Rng::new(seed ^ 0x5eed);
        let mut long_pauses = 0;
        let pause_every = (calls / (pauses + 1)).max(1000);
        for line in BufReader::new(stdout).lines() {
            let line = line.map_err(|e| e.to_string())?;
            log(&copy, '<', &line);
            let v: Value = serde_json::from_str(&line)
                .map_err(|e| format!("stdout line is not JSON ({e}): {line}"))?;
            let mut l = ledger.lock().unwrap();
            l.lines += 1;
            let lines = l.lines;
            let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            match v["type"].as_str() {
                Some("tool_result") => {
                    let id = text("tool_use_id");
                    *l.results.entry(id.clone()).or_default() += 1;
                    l.done_total += 1;
                    *l.outcomes.entry(text("outcome")).or_default() += 1;
                    if text("content").contains("internal error") {
                        l.internal_failures.push(line.clone());
                    }
                    l.reusable.push_back(id);
                    if l.reusable.len() > 200 {
                        l.reusable.pop_front();
                    }
                }
                Some("error") => {
                    *l.error_codes.entry(text("code")).or_default() += 1;
                    for id in v["ids"].as_array().into_iter().flatten() {
                        if let Some(id) = id.as_str() {
                            *l.refused.entry(id.to_string()).or_default() += 1;
                            l.done_total += 1;
                        }
                    }
                }
                Some("event") => {
                    let batch = text("batch");
                    match v["event"].as_str() {
                        Some("batch_start") => *l.batch_starts.entry(batch).or_default() += 1,
                        Some("batch_end") => *l.batch_ends.entry(batch).or_default() += 1,
                        Some("rewound") => l.rewound += 1,
                        _ => {}
                    }
                }
                Some("permission_request") => {
                    l.asks += 1;
                    let answer = |behavior: &str| {
                        json!({"type": "permission_response", "request_id": v["request_id"], "behavior": behavior}).to_string()
                    };
                    let soon = Instant::now() + Duration::from_millis(20 + rng.below(300));
                    let msg = match rng.below(20) {
                        0..=6 => Line::Call(answer("allow")),
                        7..=12 => Line::Call(answer("deny")),
                        13..=15 => {
                            Line::Later(soon, answer(if rng.chance(50) { "allow" } else { "deny" }))
                        }
                        // A wrong answer now (an unknown request), the right one later.
                        16 => {
                            let wrong = json!({"type": "permission_response", "request_id": "no-such-request", "behavior": "allow"});
                            let _ = control.send(Line::Call(wrong.to_string()));
                            Line::Later(soon, answer("deny"))
                        }
                        // Never answered: the call is cancelled instead.
                        _ => Line::Later(
                            soon,
                            json!({"type": "cancel", "id": v["tool_use_id"]}).to_string(),
                        ),
                    };
                    let _ = control.send(msg);
                }
                _ => {}
            }
            drop(l);
            // A slow reader: short pauses often, a few long ones, none once writing is over.
            if writing.load(Ordering::Relaxed) {
                if lines.is_multiple_of(500) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                if long_pauses < pauses && lines.is_multiple_of(pause_every) {
                    long_pauses += 1;
                    std::thread::sleep(Duration::from_secs(2));
                }
            }
        }
        Ok(())
    })
}

/// Samples toolrt's RSS until it exits: the peak (VmHWM, all resident memory), the peak of its
/// anonymous memory (RssAnon: heap and stacks, without the pages of its own binary that a run
/// touches), and the highest RssAnon in each tenth of the run (the writer says which tenth it
/// is in).
struct Sampler {
    peak: Arc<AtomicU64>,
    peak_anon: Arc<AtomicU64>,
    tenth: Arc<AtomicUsize>,
    tenths: Arc<[AtomicU64; 10]>,
    handle: std::thread::JoinHandle<()>,
}

fn sample(pid: u32) -> Sampler {
    let peak = Arc::new(AtomicU64::new(0));
    let peak_anon = Arc::new(AtomicU64::new(0));
    let tenth = Arc::new(AtomicUsize::new(0));
    let tenths: Arc<[AtomicU64; 10]> = Arc::new(std::array::from_fn(|_| AtomicU64::new(0)));
    let handle = {
        let (peak, peak_anon) = (peak.clone(), peak_anon.clone());
        let (tenth, tenths) = (tenth.clone(), tenths.clone());
        std::thread::spawn(move || {
            while let (Some(hwm), Some(anon)) =
                (status_kib(pid, "VmHWM"), status_kib(pid, "RssAnon"))
            {
                peak.fetch_max(hwm, Ordering::Relaxed);
                peak_anon.fetch_max(anon, Ordering::Relaxed);
                tenths[tenth.load(Ordering::Relaxed).min(9)].fetch_max(anon, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    Sampler {
        peak,
        peak_anon,
        tenth,
        tenths,
        handle,
    }
}

fn soak(o: &Options) -> Result<String, String> {
    let started = Instant::now();
    let sb = sandbox(o.seed, 1);
    let mut child = start(o, &sb)?;
    let pid = child.id();
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let writing = Arc::new(AtomicBool::new(true));
    let done = Arc::new(AtomicBool::new(false));
    let (call_tx, call_rx): (SyncSender<String>, _) = mpsc::sync_channel(16);
    let (control_tx, control_rx) = mpsc::channel();
    let copy: Log = match &o.log {
        Some(path) => Some(Arc::new(Mutex::new(std::io::BufWriter::new(
            std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?,
        )))),
        None => None,
    };
    let writer = stdin_writer(
        child.stdin.take().unwrap(),
        call_rx,
        control_rx,
        done.clone(),
        copy.clone(),
    );
    let reader = stdout_reader(
        child.stdout.take().unwrap(),
        ledger.clone(),
        control_tx.clone(),
        writing.clone(),
        copy.clone(),
        o,
    );

    // The baseline: toolrt after its first call.
    let warm = json!({"type": "tool_use", "id": "warm", "name": "Read", "input": {"file_path": "src/f0.txt"}});
    ledger.lock().unwrap().send("warm");
    call_tx
        .send(warm.to_string())
        .map_err(|_| "toolrt's stdin closed")?;
    wait_until(Duration::from_secs(30), || {
        ledger.lock().unwrap().open() == 0
    })
    .map_err(|_| "no result for the first call within 30 s")?;
    std::thread::sleep(Duration::from_millis(200));
    let baseline = status_kib(pid, "VmRSS").unwrap_or(0);
    let baseline_anon = status_kib(pid, "RssAnon").unwrap_or(0);
    let sampler = sample(pid);

    let mut rng = Rng::new(o.seed);
    let mut recent: VecDeque<String> = VecDeque::new();
    let mut batches: VecDeque<String> = VecDeque::new();
    let mut writes: VecDeque<String> = VecDeque::new();
    let mut n = 0usize;
    let send = |line: String| {
        call_tx
            .send(line)
            .map_err(|_| "toolrt's stdin closed".to_string())
    };
    // Like a client, the writer mostly keeps the calls without a result under a window between
    // what toolrt admits and what it also parks; now and then it floods, ignoring the window
    // (and so meets `busy` refusals, or a toolrt that stops reading).
    let window = IN_FLIGHT + QUEUED + PARKED / 2;
    let mut flood_until = 0;
    while n < o.calls {
        if n >= flood_until && n % 1000 < 10 && rng.chance(30) {
            flood_until = n + 300;
        }
        if n >= flood_until {
            let deadline = Instant::now() + Duration::from_secs(60);
            while ledger.lock().unwrap().open() > window {
                if Instant::now() > deadline {
                    return Err(format!(
                        "accepted calls without a result stayed over {window} for 60 s"
                    ));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let tenth = n * 10 / o.calls.max(1);
        if sampler.tenth.swap(tenth, Ordering::Relaxed) != tenth {
            // Progress for a long run; stderr, so the report on stdout stays whole.
            eprintln!(
                "soak: {n} calls sent, {:.0} s, RSS {} KiB",
                started.elapsed().as_secs_f64(),
                status_kib(pid, "VmRSS").unwrap_or(0)
            );
        }
        let kind = rng.below(100);
        if kind < 5 {
            ledger.lock().unwrap().malformed += 1;
            send(malformed(&mut rng, n))?;
            continue;
        }
        if kind < 10 {
            let msg = if rng.chance(70) {
                rng.pick(&recent)
                    .map(|id| json!({"type": "cancel", "id": id}))
            } else {
                rng.pick(&batches)
                    .map(|b| json!({"type": "cancel", "batch": b}))
            };
            let msg = msg.unwrap_or_else(|| json!({"type": "cancel", "id": "nobody"}));
            ledger.lock().unwrap().cancels += 1;
            send(msg.to_string())?;
            continue;
        }
        if kind < 11 {
            if let Some(to) = rng.pick(&writes) {
                ledger.lock().unwrap().rewinds += 1;
                send(json!({"type": "rewind", "to": to}).to_string())?;
            }
            continue;
        }
        // 3 % of calls reuse an id whose result is out.
        let mut next_id = |rng: &mut Rng| {
            let reused = if rng.chance(3) {
                ledger.lock().unwrap().reusable.pop_front()
            } else {
                None
            };
            n += 1;
            reused.unwrap_or_else(|| format!("c{n}"))
        };
        let (line, calls) = if kind < 26 {
            let size = 1 + rng.below(6) as usize;
            let calls: Vec<Value> = (0..size)
                .map(|_| {
                    let id = next_id(&mut rng);
                    random_call(&mut rng, &id)
                })
                .collect();
            let batch = format!("b{n}");
            batches.push_back(batch.clone());
            let line = json!({"type": "batch", "id": batch, "calls": calls});
            (line, calls)
        } else {
            let id = next_id(&mut rng);
            let mut call = random_call(&mut rng, &id);
            let line = {
                call["type"] = json!("tool_use");
                call.clone()
            };
            (line, vec![call])
        };
        {
            let mut l = ledger.lock().unwrap();
            for call in &calls {
                let id = call["id"].as_str().unwrap_or_default().to_string();
                l.send(&id);
                if call["name"] == "Write" {
                    writes.push_back(id.clone());
                }
                recent.push_back(id);
            }
        }
        for queue in [&mut recent, &mut batches, &mut writes] {
            while queue.len() > 50 {
                queue.pop_front();
            }
        }
        send(line.to_string())?;
    }
    drop(call_tx);
    writing.store(false, Ordering::Relaxed);
    let sent_at = started.elapsed();

    // Every accepted call gets its result without end of input (late answers and cancels are
    // all on their way).
    let settled = wait_until(Duration::from_secs(120), || {
        ledger.lock().unwrap().open() == 0
    });
    let open = ledger.lock().unwrap().open();
    let settled_at = started.elapsed();
    // Memory goes back once the burst is over (a few background tasks may still run). Measured
    // on anonymous memory: the pages of toolrt's binary that the run touched stay resident, and
    // are no growth (the kernel drops them under pressure; they are shared with other toolrts).
    let returned = settled.ok().map(|()| {
        let peak = sampler.peak_anon.load(Ordering::Relaxed).max(baseline_anon);
        // A third of what the run added must go: staying near the peak fails. Not close to the
        // start: a session keeps state by design (up to 10,000 checkpoints, 1,024 finished
        // background tasks, the files read) and the pages it sits on, and what stays still
        // grows slowly with the calls (docs/BENCH.md); tests/memory_returns checks the return
        // after a plain burst precisely.
        let added = peak.saturating_sub(baseline_anon);
        let target = peak - added / 3;
        let mut now = status_kib(pid, "RssAnon").unwrap_or(0);
        let deadline = Instant::now() + Duration::from_secs(30);
        while now > target && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            now = status_kib(pid, "RssAnon").unwrap_or(0);
        }
        (now, target)
    });
    let returned_at = started.elapsed();
    // Background tasks still running at end of input are killed with toolrt's exit.
    let mut seen_running = 0;
    if settled.is_ok() {
        let mut l = ledger.lock().unwrap();
        for i in 0..3 {
            let id = format!("last{i}");
            l.send(&id);
            let call = json!({"type": "tool_use", "id": id, "name": "Bash",
                "input": {"command": "sleep 60", "run_in_background": true}});
            let _ = control_tx.send(Line::Call(call.to_string()));
        }
        drop(l);
        let _ = wait_until(Duration::from_secs(30), || {
            ledger.lock().unwrap().open() == 0
        });
        seen_running = leftovers(&sb.marker, Duration::ZERO).map_or(0, |v| v.len());
    }
    done.store(true, Ordering::Relaxed);
    drop(control_tx);
    let writer = writer.join().map_err(|_| "the stdin writer panicked")?;
    let status = wait_exit(&mut child, Duration::from_secs(120));
    let exited_at = started.elapsed();
    let read = reader.join().map_err(|_| "the stdout reader panicked")?;
    let _ = sampler.handle.join();
    let peak = sampler.peak.load(Ordering::Relaxed);
    let peak_anon = sampler.peak_anon.load(Ordering::Relaxed);
    let tenths: Vec<u64> = sampler
        .tenths
        .iter()
        .map(|t| t.load(Ordering::Relaxed))
        .collect();
    let mib = |kib: &u64| format!("{:.1}", *kib as f64 / 1024.0);
    let leftovers = leftovers(&sb.marker, Duration::from_secs(10));
    if let Some(copy) = copy {
        let _ = copy.lock().unwrap().flush();
    }

    let mut problems = Vec::new();
    if let Err(e) = writer {
        problems.push(format!("writing toolrt's stdin failed: {e}"));
    }
    if let Err(e) = read {
        problems.push(format!("reading toolrt's stdout failed: {e}"));
    }
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => problems.push(format!("toolrt exited with {s}")),
        Err(e) => problems.push(e),
    }
    if open != 0 {
        problems.push(format!(
            "{open} accepted calls had no result 120 s after the last line"
        ));
    }
    let l = ledger.lock().unwrap();
    let mut broken = Vec::new();
    let ids: HashSet<&String> = l.sent.keys().chain(l.results.keys()).collect();
    for id in ids {
        let sent = l.sent.get(id).copied().unwrap_or(0);
        let refused = l.refused.get(id).copied().unwrap_or(0);
        let results = l.results.get(id).copied().unwrap_or(0);
        if results + refused != sent {
            broken.push(format!(
                "{id}: {sent} sent, {refused} refused, {results} results"
            ));
        }
    }
    if !broken.is_empty() {
        broken.sort();
        broken.truncate(20);
        problems.push(format!("results do not match accepted calls: {broken:?}"));
    }
    let unended: Vec<_> = l
        .batch_starts
        .keys()
        .chain(l.batch_ends.keys())
        .filter(|b| l.batch_starts.get(*b) != Some(&1) || l.batch_ends.get(*b) != Some(&1))
        .take(10)
        .collect();
    if !unended.is_empty() {
        problems.push(format!(
            "batches without exactly one start and one end: {unended:?}"
        ));
    }
    if !l.internal_failures.is_empty() {
        let first = &l.internal_failures[..l.internal_failures.len().min(5)];
        problems.push(format!("internal failures: {first:?}"));
    }
    if let Some(left) = &leftovers {
        problems.push(format!("processes outlived toolrt: {left:?}"));
    }
    if settled.is_ok() && seen_running < 3 {
        problems.push(format!(
            "{seen_running} processes carry the soak's marker while 3 background tasks run: the leftover scan cannot see what toolrt starts"
        ));
    }
    // Admission bounds what toolrt holds: each place or parked call may hold a call, its hooks'
    // and command's captured output and its result (256 KiB each is generous); the blocking
    // pool's threads and the rest get a fixed 64 MiB. The bound does not grow with the calls.
    let bound = baseline + ((IN_FLIGHT + QUEUED + PARKED) as u64) * 256 + 64 * 1024;
    if peak > bound {
        problems.push(format!("peak RSS {peak} KiB over the bound of {bound} KiB"));
    }
    match returned {
        Some((now, target)) if now > target => problems.push(format!(
            "anonymous RSS stayed at {now} KiB 30 s after the last result (baseline {baseline_anon} KiB, peak {peak_anon} KiB, target {target} KiB)"
        )),
        _ => {}
    }
    if sb.cwd.join("pwned").exists() {
        problems.push("a refused line ran".into());
    }
    let sent: usize = l.sent.values().sum();
    let refused: usize = l.refused.values().sum();
    let results: usize = l.results.values().sum();
    let mut outcomes: Vec<_> = l.outcomes.iter().collect();
    outcomes.sort();
    let mut codes: Vec<_> = l.error_codes.iter().collect();
    codes.sort();
    let (after, _) = returned.unwrap_or_default();
    // A tenth sent faster than one sample (a flood refused at once) has none.
    let tenths = tenths
        .iter()
        .map(|t| if *t == 0 { "-".into() } else { mib(t) })
        .collect::<Vec<_>>()
        .join(" ");
    let seconds = |d: Duration| format!("{:.1} s", d.as_secs_f64());
    let report = format!(
        "soak: {sent} calls sent, {refused} refused, {results} results\n  \
         {batches} batches, {asks} permission requests, {cancels} cancels, {rewinds} rewinds ({rewound} restored), \
         {malformed} malformed lines, {lines} lines read\n  \
         outcomes {outcomes:?}\n  error codes {codes:?}\n  \
         RSS: baseline {baseline} KiB, peak {peak} KiB (bound {bound} KiB)\n  \
         anonymous RSS: baseline {baseline_anon} KiB, peak {peak_anon} KiB, {after} KiB after the burst; \
         highest per tenth of the calls (MiB): {tenths}\n  \
         processes left at exit: {left} ({seen_running} were running before, 3 background tasks among them)\n  \
         {total}: calls written at {written}, last result at {settled}, memory back at {back}, exit at {exited}",
        batches = l.batch_starts.len(),
        asks = l.asks,
        cancels = l.cancels,
        rewinds = l.rewinds,
        rewound = l.rewound,
        malformed = l.malformed,
        lines = l.lines,
        total = seconds(started.elapsed()),
        written = seconds(sent_at),
        settled = seconds(settled_at),
        back = seconds(returned_at),
        exited = seconds(exited_at),
        left = leftovers.as_ref().map_or(0, Vec::len),
    );
    if problems.is_empty() {
        Ok(report)
    } else {
        Err(format!("{}\n{report}", problems.join("\n")))
    }
}

/// Polls `ok` until it holds, at most `limit`.
fn wait_until(limit: Duration, mut ok: impl FnMut() -> bool) -> Result<(), ()> {
    let deadline = Instant::now() + limit;
    while !ok() {
        if Instant::now() > deadline {
            return Err(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn wait_exit(child: &mut Child, limit: Duration) -> Result<ExitStatus, String> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "toolrt did not exit within {limit:?} of end of input"
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `kB` field of /proc/<pid>/status; `None` once the process is gone.
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Live (not zombie) processes whose environment carries `marker`, after waiting up to `limit`
/// for them to go; `None` when there are none.
fn leftovers(marker: &str, limit: Duration) -> Option<Vec<(u32, String)>> {
    let needle = format!("TOOLRT_SOAK_MARKER={marker}");
    let deadline = Instant::now() + limit;
    loop {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                continue;
            };
            if !environ.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
                continue;
            }
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next());
            if matches!(state, Some("Z" | "X") | None) {
                continue;
            }
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            found.push((pid, String::from_utf8_lossy(&cmd).replace('\0', " ")));
        }
        if found.is_empty() {
            return None;
        }
        if Instant::now() > deadline {
            return Some(found);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits for `file` to exist, at most until `deadline`.
fn appears(file: &Path, deadline: Instant) -> bool {
    while !file.exists() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// SIGKILL of toolrt while three commands (each with a child of its own), a background task
/// and a hook run: nothing may remain.
fn sigkill_leaves_nothing(o: &Options) -> Result<String, String> {
    let sb = sandbox(o.seed + 1, 60);
    let mut child = start(o, &sb)?;
    let stdin = child.stdin.as_mut().unwrap();
    let mut lines = Vec::new();
    for i in 0..3 {
        lines.push(
            json!({"type": "tool_use", "id": format!("k{i}"), "name": "Bash",
            "input": {"command": format!("sleep 30 & touch started-{i}; sleep 30")}}),
        );
    }
    lines.push(json!({"type": "tool_use", "id": "kb", "name": "Bash",
        "input": {"command": "sleep 30 & touch started-bg; sleep 30", "run_in_background": true}}));
    lines.push(json!({"type": "tool_use", "id": "kh", "name": "Bash",
        "input": {"command": "echo hook # FAULT_HANG"}}));
    for line in &lines {
        writeln!(stdin, "{line}").map_err(|e| e.to_string())?;
    }
    stdin.flush().map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(20);
    let hook_file = sb.dir.path().join("hook-hangs");
    for file in ["started-0", "started-1", "started-2", "started-bg"]
        .map(|f| sb.cwd.join(f))
        .into_iter()
        .chain([hook_file])
    {
        if !appears(&file, deadline) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{} never appeared", file.display()));
        }
    }
    let running = leftovers(&sb.marker, Duration::ZERO).map_or(0, |v| v.len());
    // Three commands, a background task and a hook are at least five processes: fewer seen means
    // the scan is blind (the marker did not reach them), and "none remain" would prove nothing.
    if running < 5 {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!(
            "only {running} processes carry the soak's marker while five or more run: the leftover scan cannot see what toolrt starts"
        ));
    }
    child.kill().map_err(|e| e.to_string())?;
    let _ = child.wait();
    if let Some(left) = leftovers(&sb.marker, Duration::from_secs(10)) {
        return Err(format!(
            "after SIGKILL of toolrt, processes remain: {left:?}"
        ));
    }
    Ok(format!(
        "sigkill: {running} processes ran under toolrt (3 commands and their children, a background task, a hook, the watchdog); none remain"
    ))
}
