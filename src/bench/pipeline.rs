//! The real pipeline, driven the way `toolrt serve` drives it: a line is parsed, submitted,
//! and its result serialised.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::floors::elapsed_ns;
use super::workload;
use crate::call::{Input, Outcome};
use crate::protocol::{self, ServerMessage};
use crate::runtime::{Config, Runtime};
use crate::supervisor::{Stage, StageClock};
use crate::tool::{Tool, ToolContext, ToolOutput};
use crate::tools::noop::Noop;

/// A started runtime and its output stream.
pub(super) struct Driver {
    runtime: Runtime,
    rx: crate::emit::Outbox,
}

impl Driver {
    /// Starts a runtime from `config`.
    pub(super) async fn start(config: Config) -> Result<Self, String> {
        let (runtime, rx) = Runtime::start(config)
            .await
            .map_err(|e| format!("the runtime did not start: {e}"))?;
        Ok(Self { runtime, rx })
    }

    /// The no-op runtime: the no-op tool only, the mixed rules plus `Noop` allowed.
    pub(super) async fn noop(
        cwd: &std::path::Path,
        clock: Option<Arc<dyn StageClock>>,
    ) -> Result<Self, String> {
        let mut config =
            workload::config(cwd, vec![Arc::new(Noop::new())], &["Noop"], false, 1_000);
        config.clock = clock;
        Self::start(config).await
    }

    /// Parses and submits one line, as the serve loop does.
    async fn submit(&self, line: &str) -> Result<(), String> {
        let msg = protocol::parse_line(line).map_err(|e| format!("bench line: {e}"))?;
        self.runtime.submit(msg).await;
        Ok(())
    }

    /// Waits for the next result and serialises it, as the writer does; returns its id. A
    /// result that is not `success` is an error (the bench would measure something else).
    async fn next_result(&mut self) -> Result<String, String> {
        while let Some(msg) = self.rx.recv().await {
            if let ServerMessage::ToolResult(result) = &msg {
                if result.outcome != Outcome::Success {
                    return Err(format!(
                        "a bench call ended {}: {}",
                        result.outcome.as_str(),
                        result.content
                    ));
                }
                let id = result.tool_use_id.clone();
                black_box(msg.to_line());
                return Ok(id);
            }
        }
        Err("the runtime closed its output".into())
    }

    /// One call at a time; the latency of each (line in → line out) in nanoseconds.
    pub(super) async fn latency(
        &mut self,
        line: impl Fn(u64) -> String,
        first_id: u64,
        calls: usize,
    ) -> Result<Vec<u64>, String> {
        let mut samples = Vec::with_capacity(calls);
        for i in 0..calls as u64 {
            let line = line(first_id + i);
            let start = Instant::now();
            self.submit(&line).await?;
            self.next_result().await?;
            samples.push(elapsed_ns(start));
        }
        Ok(samples)
    }

    /// `calls` calls keeping `in_flight` of them outstanding; returns the elapsed time and, if
    /// `timed`, the latency of each call (its line submitted to its result out).
    pub(super) async fn closed_loop(
        &mut self,
        line: impl Fn(u64) -> String,
        first_id: u64,
        calls: usize,
        in_flight: usize,
        timed: bool,
    ) -> Result<(Duration, Vec<u64>), String> {
        let mut starts: HashMap<String, Instant> = HashMap::new();
        let mut samples = Vec::with_capacity(if timed { calls } else { 0 });
        let begin = Instant::now();
        let (mut sent, mut done) = (0usize, 0usize);
        while done < calls {
            while sent < calls && sent - done < in_flight {
                let line = line(first_id + sent as u64);
                if timed {
                    let msg =
                        protocol::parse_line(&line).map_err(|e| format!("bench line: {e}"))?;
                    if let protocol::ClientMessage::ToolUse(call) = &msg {
                        starts.insert(call.id.clone(), Instant::now());
                    }
                    self.runtime.submit(msg).await;
                } else {
                    self.submit(&line).await?;
                }
                sent += 1;
            }
            let id = self.next_result().await?;
            done += 1;
            if let Some(start) = starts.remove(&id) {
                samples.push(elapsed_ns(start));
            }
        }
        Ok((begin.elapsed(), samples))
    }

    /// Whether `name` is a tool of the runtime now.
    pub(super) fn has_tool(&self, name: &str) -> bool {
        self.runtime.tools().iter().any(|t| t == name)
    }

    /// Finishes everything and stops the stages.
    pub(super) async fn shutdown(self) {
        self.runtime.shutdown().await;
    }
}

/// Collects [`StageClock`] samples per stage.
#[derive(Default)]
pub(super) struct Clock {
    samples: Mutex<Vec<Vec<u64>>>,
}

impl Clock {
    /// Takes the samples, one list per stage in [`Stage::ALL`] order.
    pub(super) fn take(&self) -> Vec<Vec<u64>> {
        let mut samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = std::mem::take(&mut *samples);
        out.resize_with(Stage::ALL.len(), Vec::new);
        out
    }
}

impl StageClock for Clock {
    fn record(&self, stage: Stage, nanos: u64) {
        let index = Stage::ALL.iter().position(|s| *s == stage).unwrap_or(0);
        let mut samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        if samples.len() < Stage::ALL.len() {
            samples.resize_with(Stage::ALL.len(), Vec::new);
        }
        samples[index].push(nanos);
    }
}

/// A tool that waits until it is released, so that many calls are in flight at once.
pub(super) struct Hold {
    arrived: Arc<AtomicUsize>,
    release: Arc<Semaphore>,
}

impl Hold {
    /// A held tool, the counter of calls that reached it, and its release (close it).
    pub(super) fn new() -> (Self, Arc<AtomicUsize>, Arc<Semaphore>) {
        let arrived = Arc::new(AtomicUsize::new(0));
        let release = Arc::new(Semaphore::new(0));
        (
            Self {
                arrived: arrived.clone(),
                release: release.clone(),
            },
            arrived,
            release,
        )
    }
}

#[async_trait]
impl Tool for Hold {
    fn name(&self) -> &str {
        "Hold"
    }

    fn description(&self) -> &str {
        "Waits until the benchmark releases it, then succeeds."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"value": {"type": "integer"}}, "additionalProperties": false})
    }

    fn is_concurrency_safe(&self, _input: &Input) -> bool {
        true
    }

    async fn call(&self, _input: Input, _ctx: ToolContext) -> ToolOutput {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        // The semaphore has no permits: this returns when it is closed.
        let _ = self.release.acquire().await;
        ToolOutput::success("ok")
    }
}

/// What the memory test found, in bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Memory {
    /// Resident set before the calls were submitted.
    pub baseline: u64,
    /// Peak resident set while they were held in flight.
    pub peak: u64,
    /// Whether the kernel's peak could be reset first (else `peak` is the process's lifetime
    /// peak).
    pub peak_reset: bool,
}

/// Holds `calls` no-op-like calls in flight at once in a fresh runtime, then releases them.
pub(super) async fn memory(cwd: &std::path::Path, calls: usize) -> Result<Memory, String> {
    let (hold, arrived, release) = Hold::new();
    let config = workload::config(cwd, vec![Arc::new(hold)], &["Hold"], false, calls);
    let mut driver = Driver::start(config).await?;
    // Let the runtime settle, then measure from here.
    tokio::task::yield_now().await;
    let peak_reset = reset_peak_rss();
    let baseline = rss_bytes("VmRSS:").ok_or("cannot read VmRSS from /proc/self/status")?;
    for i in 0..calls as u64 {
        let line = format!(r#"{{"type":"tool_use","id":"m{i}","name":"Hold","input":{{}}}}"#);
        driver.submit(&line).await?;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while arrived.load(Ordering::SeqCst) < calls {
        if Instant::now() > deadline {
            release.close();
            return Err(format!(
                "only {} of {calls} held calls reached the tool",
                arrived.load(Ordering::SeqCst)
            ));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let peak = rss_bytes("VmHWM:").ok_or("cannot read VmHWM from /proc/self/status")?;
    release.close();
    for _ in 0..calls {
        driver.next_result().await?;
    }
    driver.shutdown().await;
    Ok(Memory {
        baseline,
        peak,
        peak_reset,
    })
}

/// A `kB` field of /proc/self/status, in bytes.
pub(super) fn rss_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status_field(&status, field)
}

/// Parses `field  1234 kB` out of a /proc status text, in bytes.
pub(super) fn status_field(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// Resets the kernel's peak-RSS counter (VmHWM) to the current RSS, so the peak belongs to the
/// memory test alone (Linux ≥ 4.0). False where that is not possible.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// `bash -c true` spawned directly, as a tokio user writes it — `bash` by name — with the Bash
/// tool's settings (own process group, stdin from /dev/null, stdout and stderr piped and read
/// to the end). The Bash tool starts the `bash` it found once per session (docs/BENCH.md, "Bash
/// found once per session").
pub(super) async fn direct_true(cwd: &std::path::Path) -> Result<(), String> {
    let child = tokio::process::Command::new("bash")
        .arg("-c")
        .arg("true")
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot spawn bash: {e}"))?;
    let out = child
        .wait_with_output()
        .await
        .map_err(|e| format!("bash: {e}"))?;
    if !out.status.success() {
        return Err(format!("bash -c true exited with {}", out.status));
    }
    Ok(())
}

/// `calls` direct spawns keeping `in_flight` outstanding; the latency of each in nanoseconds.
pub(super) async fn direct_bash(
    cwd: &std::path::Path,
    calls: usize,
    in_flight: usize,
) -> Result<Vec<u64>, String> {
    use futures::stream::{FuturesUnordered, StreamExt};
    let mut samples = Vec::with_capacity(calls);
    let mut running = FuturesUnordered::new();
    let mut sent = 0;
    while samples.len() < calls {
        while sent < calls && running.len() < in_flight {
            running.push(async move {
                let start = Instant::now();
                direct_true(cwd).await.map(|()| elapsed_ns(start))
            });
            sent += 1;
        }
        match running.next().await {
            Some(r) => samples.push(r?),
            None => break,
        }
    }
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields() {
        let status = "Name:\ttoolrt\nVmHWM:\t  20480 kB\nVmRSS:\t   10240 kB\n";
        assert_eq!(status_field(status, "VmHWM:"), Some(20_480 * 1024));
        assert_eq!(status_field(status, "VmRSS:"), Some(10_240 * 1024));
        assert_eq!(status_field(status, "VmSwap:"), None);
        assert_eq!(status_field("VmRSS: lots kB", "VmRSS:"), None);
    }
}
