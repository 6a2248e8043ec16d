//! Calls' records as an OTLP/JSON `ExportTraceServiceRequest`: one `execute_tool <tool>` span
//! per call (GenAI semantic conventions), a child span per stage.
//!
//! OTLP/JSON: ids are lowercase hex, enums are numbers, 64-bit integers are decimal strings.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::CallTrace;

/// `SPAN_KIND_INTERNAL`: the GenAI conventions' kind for `execute_tool`.
const KIND_INTERNAL: u8 = 1;
/// `STATUS_CODE_ERROR`.
const STATUS_ERROR: u8 = 2;

/// The request body for a batch of calls.
pub(super) fn request(resource: &[(String, String)], calls: &[CallTrace]) -> Value {
    let resource: Vec<Value> = resource.iter().map(|(k, v)| attr(k, v)).collect();
    let mut spans = Vec::with_capacity(calls.len() * 8);
    for call in calls {
        call_spans(call, &mut spans);
    }
    json!({
        "resourceSpans": [{
            "resource": {"attributes": resource},
            "scopeSpans": [{
                "scope": {"name": "toolrt", "version": env!("CARGO_PKG_VERSION")},
                "spans": spans,
            }],
        }],
    })
}

/// One call's span and its stages' spans.
fn call_spans(call: &CallTrace, out: &mut Vec<Value>) {
    let trace_id = format!("{:016x}{:016x}", random_id(), random_id());
    let span_id = format!("{:016x}", random_id());
    let time = |at: Instant| unix_nanos(call.wall, call.start, at);
    let success = call.outcome == "success";
    let tool_type = if call.tool.starts_with("mcp__") {
        "extension"
    } else {
        "function"
    };
    let mut attributes = vec![
        attr("gen_ai.operation.name", "execute_tool"),
        attr("gen_ai.tool.name", &call.tool),
        attr("gen_ai.tool.call.id", &call.id),
        attr("gen_ai.tool.type", tool_type),
        attr("toolrt.outcome", call.outcome),
    ];
    if let Some(agent) = &call.agent {
        attributes.push(attr("gen_ai.agent.id", agent));
    }
    if let Some((behavior, by)) = &call.decision {
        attributes.push(attr("toolrt.permission", behavior));
        attributes.push(attr("toolrt.rule", by));
    }
    if !success {
        attributes.push(attr("error.type", call.outcome));
    }
    out.push(span(
        &trace_id,
        &span_id,
        None,
        &format!("execute_tool {}", call.tool),
        (time(call.start), time(call.end)),
        attributes,
        (!success).then_some(call.outcome),
    ));
    for stage in &call.stages {
        let id = format!("{:016x}", random_id());
        out.push(span(
            &trace_id,
            &id,
            Some(&span_id),
            stage.name,
            (time(stage.start), time(stage.end)),
            vec![attr("toolrt.stage", stage.name)],
            stage.error.then_some(call.outcome),
        ));
    }
}

/// One span.
fn span(
    trace_id: &str,
    span_id: &str,
    parent: Option<&str>,
    name: &str,
    (start, end): (u128, u128),
    attributes: Vec<Value>,
    error: Option<&str>,
) -> Value {
    let mut span = json!({
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": KIND_INTERNAL,
        "startTimeUnixNano": start.to_string(),
        "endTimeUnixNano": end.to_string(),
        "attributes": attributes,
    });
    if let Some(parent) = parent {
        span["parentSpanId"] = parent.into();
    }
    if let Some(message) = error {
        span["status"] = json!({"code": STATUS_ERROR, "message": message});
    }
    span
}

/// A string attribute.
fn attr(key: &str, value: &str) -> Value {
    json!({"key": key, "value": {"stringValue": value}})
}

/// Nanoseconds since the Unix epoch of `at`, given that `start` was at `wall`.
fn unix_nanos(wall: SystemTime, start: Instant, at: Instant) -> u128 {
    let at = wall + at.saturating_duration_since(start);
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// A random non-zero 64-bit id: a per-process random key (the standard library's hasher
/// seeds, from the system's randomness) over a counter, so ids never repeat in a process and
/// differ between processes.
fn random_id() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static KEYS: RandomState = RandomState::new();
    }
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let id = KEYS.with(|keys| {
        let mut h = keys.build_hasher();
        h.write_u64(n);
        h.finish()
    });
    id.max(1)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use super::*;

    #[test]
    fn ids_are_distinct_and_non_zero() {
        let ids: HashSet<u64> = (0..10_000).map(|_| random_id()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(!ids.contains(&0));
    }

    #[test]
    fn a_call_and_its_stages() {
        let (queue, mut rx) = tokio::sync::mpsc::channel(1);
        let tracer = Arc::new(super::super::Tracer {
            queue,
            dropped: AtomicU64::new(0),
            exporter: super::super::export::Handle::none(),
        });
        let id: Arc<str> = "toolu_1".into();
        let agent: Arc<str> = "a1".into();
        let t0 = Instant::now();
        let mut t = tracer.begin("Bash", &id, Some(&agent), t0);
        t.stage("queue", t0, t0, "validate");
        t.decided("deny", "the deny rule `Bash(rm:*)`".into());
        t.finish("denied", true, t0);
        let call = rx.try_recv().expect("queued");
        let body = request(&[("service.name".into(), "toolrt".into())], &[*call]);
        let spans = body["resourceSpans"][0]["scopeSpans"][0]["spans"]
            .as_array()
            .unwrap();
        assert_eq!(spans.len(), 3);
        let root = &spans[0];
        assert_eq!(root["name"], "execute_tool Bash");
        assert_eq!(root["kind"], 1);
        assert_eq!(root["status"]["code"], 2);
        assert_eq!(root["traceId"].as_str().unwrap().len(), 32);
        assert!(root.get("parentSpanId").is_none());
        let attrs: Vec<(String, String)> = root["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["key"].as_str().unwrap().to_string(),
                    a["value"]["stringValue"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        for (k, v) in [
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "Bash"),
            ("gen_ai.tool.call.id", "toolu_1"),
            ("gen_ai.tool.type", "function"),
            ("gen_ai.agent.id", "a1"),
            ("toolrt.outcome", "denied"),
            ("toolrt.permission", "deny"),
            ("toolrt.rule", "the deny rule `Bash(rm:*)`"),
            ("error.type", "denied"),
        ] {
            assert!(
                attrs.contains(&(k.into(), v.into())),
                "{k}={v} in {attrs:?}"
            );
        }
        let names: Vec<&str> = spans[1..]
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["queue", "validate"]);
        for child in &spans[1..] {
            assert_eq!(child["traceId"], root["traceId"]);
            assert_eq!(child["parentSpanId"], root["spanId"]);
        }
        assert!(spans[1].get("status").is_none());
        assert_eq!(spans[2]["status"]["code"], 2);
    }
}
