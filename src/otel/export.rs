//! The exporter: a task that takes finished calls' records off a bounded queue and POSTs them
//! in batches, and sends what is left when the runtime shuts down.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{CallTrace, OtlpConfig, Tracer, encode};

/// Calls' records the queue holds: beyond, records are dropped and counted, so a collector
/// that is slow or down costs at most this much memory (a record is a few hundred bytes).
const QUEUE: usize = 2048;
/// Calls per export request.
const BATCH: usize = 512;
/// How long a record may wait for others to fill its batch.
const DELAY: Duration = Duration::from_secs(1);

/// The exporter task, for shutdown.
pub(super) struct Handle {
    closing: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl Handle {
    /// No task (tests that read the queue themselves).
    #[cfg(test)]
    pub(super) fn none() -> Self {
        Self {
            closing: CancellationToken::new(),
            task: Mutex::new(None),
        }
    }
}

impl Tracer {
    /// Starts the exporter task (inside a Tokio runtime).
    pub(crate) fn start(config: &OtlpConfig) -> Result<Arc<Self>, String> {
        // reqwest is built without a default crypto provider (for https:// collectors);
        // install ring's unless the process already chose one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            // The collector is addressed as configured, not through a proxy.
            .no_proxy()
            .user_agent(concat!("toolrt/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("could not set up the OTLP HTTP client: {e}"))?;
        let mut headers = reqwest::header::HeaderMap::new();
        for (k, v) in &config.headers {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("OTEL_EXPORTER_OTLP_HEADERS: {k:?} is not a header name"))?;
            let value = reqwest::header::HeaderValue::from_str(v).map_err(|_| {
                format!("OTEL_EXPORTER_OTLP_HEADERS: the value of {k:?} is not a header value")
            })?;
            headers.insert(name, value);
        }
        let (queue, rx) = mpsc::channel(QUEUE);
        let closing = CancellationToken::new();
        let sender = Sender {
            client,
            endpoint: config.endpoint.clone(),
            headers,
            resource: config.resource.clone(),
            failed: AtomicU64::new(0),
        };
        let task = tokio::spawn(run(rx, closing.clone(), sender));
        Ok(Arc::new(Self {
            queue,
            dropped: AtomicU64::new(0),
            exporter: Handle {
                closing,
                task: Mutex::new(Some(task)),
            },
        }))
    }

    /// Sends what is queued and stops the exporter, waiting at most `grace` (a collector that
    /// is down does not hold the process).
    pub(crate) async fn shutdown(&self, grace: Duration) {
        self.exporter.closing.cancel();
        let task = self.exporter.task.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task {
            let abort = task.abort_handle();
            if tokio::time::timeout(grace, task).await.is_err() {
                abort.abort();
                tracing::warn!(
                    "OTLP export did not finish within {grace:?} of shutdown: the last spans were not sent"
                );
            }
        }
        let dropped = self.dropped();
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "OTLP export: {dropped} calls' spans were dropped because the export queue was full"
            );
        }
    }
}

/// What sends a batch.
struct Sender {
    client: reqwest::Client,
    endpoint: String,
    headers: reqwest::header::HeaderMap,
    resource: Vec<(String, String)>,
    /// Export requests that failed (the first is logged as a warning, the rest at debug).
    failed: AtomicU64,
}

impl Sender {
    async fn send(&self, batch: &mut Vec<CallTrace>) {
        if batch.is_empty() {
            return;
        }
        let body = encode::request(&self.resource, batch);
        let calls = batch.len();
        batch.clear();
        let body = match serde_json::to_vec(&body) {
            Ok(body) => body,
            Err(e) => return self.failed(calls, &e.to_string()),
        };
        let sent = self
            .client
            .post(&self.endpoint)
            .headers(self.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => {
                // Read the (small) answer so the connection can be reused.
                let _ = r.bytes().await;
            }
            Ok(r) => self.failed(calls, &format!("the collector answered {}", r.status())),
            Err(e) => self.failed(calls, &e.to_string()),
        }
    }

    fn failed(&self, calls: usize, why: &str) {
        let endpoint = &self.endpoint;
        if self.failed.fetch_add(1, Ordering::Relaxed) == 0 {
            tracing::warn!("OTLP export to {endpoint} failed ({why}): {calls} calls' spans lost");
        } else {
            tracing::debug!("OTLP export to {endpoint} failed ({why}): {calls} calls' spans lost");
        }
    }
}

/// The exporter's loop: a batch is sent when it is full or its first record has waited
/// [`DELAY`]; closing sends whatever is queued, then ends.
async fn run(mut rx: mpsc::Receiver<Box<CallTrace>>, closing: CancellationToken, sender: Sender) {
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let first = tokio::select! {
            biased;
            _ = closing.cancelled() => None,
            first = rx.recv() => first,
        };
        let Some(first) = first else { break };
        batch.push(*first);
        let deadline = tokio::time::sleep(DELAY);
        tokio::pin!(deadline);
        while batch.len() < BATCH {
            tokio::select! {
                biased;
                _ = closing.cancelled() => break,
                more = rx.recv() => match more {
                    Some(more) => batch.push(*more),
                    None => break,
                },
                _ = &mut deadline => break,
            }
        }
        sender.send(&mut batch).await;
    }
    // Closing (or every sender gone): send what is queued.
    rx.close();
    while let Some(more) = rx.recv().await {
        batch.push(*more);
        if batch.len() == BATCH {
            sender.send(&mut batch).await;
        }
    }
    sender.send(&mut batch).await;
}
