//! The tracing figure: the no-op call with OpenTelemetry spans exported to a loopback sink
//! against the same call untraced, two runtimes in one process, interleaved, one call in
//! flight. The untraced runtime is the one every other figure measures: tracing off is the
//! supervisor's one branch on an empty `Option` (its cost against a build without it is
//! measured across builds, docs/BENCH.md).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::client::Bench;
use super::stats::Dist;
use super::workload;
use crate::otel::OtlpConfig;
use crate::tools::noop::Noop;

/// The tracing figures (ns per call, one in flight).
pub(crate) struct OtelFigures {
    /// The no-op call, traced and exported.
    pub(crate) traced_c1: Dist,
    /// The same call, untraced.
    pub(crate) noop_c1: Dist,
    /// Export requests the sink received (0 would mean nothing was exported).
    pub(crate) requests: u64,
}

/// Measures `calls` calls of each kind, interleaved in `rounds` blocks.
pub(crate) async fn measure(
    cwd: &std::path::Path,
    calls: usize,
    rounds: usize,
    next_ids: &mut impl FnMut(usize) -> u64,
) -> Result<OtelFigures, String> {
    let sink = Sink::start()?;
    let config = || workload::config(cwd, vec![Arc::new(Noop::new())], &["Noop"], false, 64);
    let mut traced_config = config();
    traced_config.otel = Some(OtlpConfig {
        endpoint: format!("http://{}/v1/traces", sink.addr),
        headers: Vec::new(),
        timeout: Duration::from_secs(10),
        resource: vec![("service.name".into(), "toolrt-bench".into())],
    });
    let mut plain = Bench::with(config()).await?;
    let mut traced = Bench::with(traced_config).await?;
    let warm = (calls / 20).max(10);
    plain
        .latency(workload::noop_line, next_ids(warm), warm)
        .await?;
    traced
        .latency(workload::noop_line, next_ids(warm), warm)
        .await?;
    let block = calls.div_ceil(rounds.max(1));
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for _ in 0..rounds.max(1) {
        off.extend(
            plain
                .latency(workload::noop_line, next_ids(block), block)
                .await?,
        );
        on.extend(
            traced
                .latency(workload::noop_line, next_ids(block), block)
                .await?,
        );
    }
    plain.runtime.shutdown().await;
    // Shutdown sends what is queued: every call's spans have reached the sink after this.
    traced.runtime.shutdown().await;
    let requests = sink.requests.load(Ordering::SeqCst);
    if requests == 0 {
        return Err("tracing: the loopback sink received no spans".into());
    }
    Ok(OtelFigures {
        traced_c1: Dist::new(on),
        noop_c1: Dist::new(off),
        requests,
    })
}

impl OtelFigures {
    /// Traced p50 over untraced p50.
    pub(crate) fn ratio(&self) -> f64 {
        super::stats::ratio(self.traced_c1.p50_us(), self.noop_c1.p50_us())
    }

    /// The figures as JSON.
    pub(crate) fn json(&self) -> Value {
        json!({
            "traced_p50_us": self.traced_c1.p50_us(),
            "traced_p99_us": self.traced_c1.p99_us(),
            "noop_p50_us": self.noop_c1.p50_us(),
            "noop_p99_us": self.noop_c1.p99_us(),
            "ratio_c1": self.ratio(),
            "export_requests": self.requests,
            "calls": self.traced_c1.len(),
        })
    }
}

/// A loopback OTLP/HTTP sink on a thread of its own (so receiving costs the measured runtime
/// nothing): answers every request `200 {}` and counts them.
struct Sink {
    addr: std::net::SocketAddr,
    requests: Arc<AtomicU64>,
}

impl Sink {
    fn start() -> Result<Self, String> {
        let listener =
            TcpListener::bind("127.0.0.1:0").map_err(|e| format!("tracing sink: {e}"))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("tracing sink: {e}"))?;
        let requests = Arc::new(AtomicU64::new(0));
        let count = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let count = count.clone();
                std::thread::spawn(move || answer(stream, &count));
            }
        });
        Ok(Self { addr, requests })
    }
}

/// Answers the requests of one kept-alive connection.
fn answer(stream: TcpStream, count: &AtomicU64) -> Option<()> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut out = stream;
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        loop {
            line.clear();
            reader.read_line(&mut line).ok()?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().ok()?;
            }
        }
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).ok()?;
        count.fetch_add(1, Ordering::SeqCst);
        out.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
            .ok()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn traced_calls_reach_the_sink() {
        let ws = workload::Workspace::new().expect("workspace");
        let mut next = workload::id_blocks();
        let f = measure(&ws.cwd, 20, 2, &mut next).await.expect("measured");
        assert_eq!((f.traced_c1.len(), f.noop_c1.len()), (20, 20));
        assert!(f.requests >= 1);
    }
}
