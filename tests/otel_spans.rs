//! OpenTelemetry spans: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, `toolrt serve` POSTs one
//! `execute_tool <tool>` span per call (GenAI semantic conventions) with a child span per stage
//! to `<endpoint>/v1/traces` as OTLP/JSON, the last ones before it exits; without it (or with
//! tracing turned off) it connects to nothing.

mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use support::{Sandbox, Server, Stderr, command, is_result};

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Request {
    path: String,
    headers: HashMap<String, String>,
    body: Value,
}

/// A loopback OTLP/HTTP receiver: records every request and every connection, answers 200.
struct Receiver {
    port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
    connections: Arc<AtomicUsize>,
}

impl Receiver {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let (seen, count) = (requests.clone(), connections.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                count.fetch_add(1, Ordering::SeqCst);
                let seen = seen.clone();
                std::thread::spawn(move || serve_connection(stream, &seen));
            }
        });
        Self {
            port,
            requests,
            connections,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

/// Reads HTTP/1.1 requests off one connection (kept alive) and answers each `200 {}`; the
/// request is recorded before it is answered, so an exporter that waited for its answer has
/// been recorded.
fn serve_connection(stream: TcpStream, seen: &Mutex<Vec<Request>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        assert!(line.starts_with("POST "), "{line}");
        let mut headers = HashMap::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (name, value) = h.split_once(':').unwrap();
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
        let length: usize = headers["content-length"].parse().unwrap();
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).unwrap();
        let body = serde_json::from_slice(&body).expect("the body is JSON");
        seen.lock().unwrap().push(Request {
            path,
            headers,
            body,
        });
        let _ = write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{{}}"
        );
    }
}

/// `toolrt serve` in the sandbox with the given OTEL variables (every other OTEL_ variable of
/// the test's environment removed), the deny rule `Bash(rm:*)`.
fn serve(sb: &Sandbox, vars: &[(&str, String)]) -> Server {
    let settings = sb.settings_file(&json!({"permissions": {"deny": ["Bash(rm:*)"]}}));
    let mut cmd: Command = command();
    cmd.args(["serve", "--cwd"])
        .arg(&sb.cwd)
        .arg("--output-dir")
        .arg(&sb.out)
        .args(["--settings", &settings])
        .current_dir(&sb.cwd)
        .env("HOME", sb.dir.path());
    for (k, _) in std::env::vars() {
        if k.starts_with("OTEL_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in vars {
        cmd.env(k, v);
    }
    Server::spawn(cmd, Stderr::Capture)
}

/// Sends the calls, waits for each result, closes stdin and waits for the exit.
fn run_calls(mut server: Server, calls: &[(&str, &str, Value)]) -> support::Finished {
    for (id, name, input) in calls {
        server.tool_use(id, name, input.clone());
    }
    for (id, ..) in calls {
        server.result(id);
    }
    let done = server.finish();
    assert!(
        done.status.success(),
        "exit: {:?}\n{}",
        done.status,
        done.stderr
    );
    done
}

/// The four calls: allowed, denied by a rule, failing as it runs, refused by the schema.
fn calls() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("ok", "Read", json!({"file_path": "a.txt"})),
        ("deny", "Bash", json!({"command": "rm a.txt"})),
        ("fail", "Read", json!({"file_path": "missing.txt"})),
        ("schema", "Read", json!({"file_path": 7})),
    ]
}

/// A span's string attributes.
fn attrs(span: &Value) -> HashMap<String, String> {
    span["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["key"].as_str().unwrap().to_string(),
                a["value"]["stringValue"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn nanos(span: &Value, field: &str) -> u128 {
    span[field].as_str().unwrap().parse().unwrap()
}

#[test]
fn each_call_is_one_execute_tool_span_with_its_stages_as_children() {
    let receiver = Receiver::start();
    let sb = Sandbox::new();
    sb.write("a.txt", "hello\n");
    let server = serve(
        &sb,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url()),
            ("OTEL_SERVICE_NAME", "otel-test".into()),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Bearer%20t0k".into(),
            ),
        ],
    );
    let done = run_calls(server, &calls());
    for (id, outcome) in [
        ("ok", "success"),
        ("deny", "denied"),
        ("fail", "failed"),
        ("schema", "schema_error"),
    ] {
        let r = done.messages.iter().find(|v| is_result(v, id)).unwrap();
        assert_eq!(r["outcome"], outcome, "{r}");
    }

    // Every span was sent before the process exited.
    let requests = receiver.requests();
    assert!(!requests.is_empty(), "no export; stderr:\n{}", done.stderr);
    let mut spans = Vec::new();
    for r in &requests {
        assert_eq!(r.path, "/v1/traces");
        assert_eq!(r.headers["content-type"], "application/json");
        assert_eq!(r.headers["authorization"], "Bearer t0k");
        let rs = &r.body["resourceSpans"][0];
        assert_eq!(attrs(&rs["resource"])["service.name"], "otel-test");
        let scope = &rs["scopeSpans"][0];
        assert_eq!(scope["scope"]["name"], "toolrt");
        spans.extend(scope["spans"].as_array().unwrap().iter().cloned());
    }
    let roots: Vec<&Value> = spans
        .iter()
        .filter(|s| s.get("parentSpanId").is_none())
        .collect();
    assert_eq!(roots.len(), 4, "one span per call: {roots:#?}");

    // (id, tool, outcome, permission decision, rule contains, the child span in error)
    let expected = [
        ("ok", "Read", "success", Some("allow"), "", None),
        (
            "deny",
            "Bash",
            "denied",
            Some("deny"),
            "Bash(rm:*)",
            Some("permission"),
        ),
        ("fail", "Read", "failed", Some("allow"), "", Some("execute")),
        ("schema", "Read", "schema_error", None, "", Some("validate")),
    ];
    for (id, tool, outcome, decision, rule, error_child) in expected {
        let root = roots
            .iter()
            .find(|s| attrs(s).get("gen_ai.tool.call.id").map(String::as_str) == Some(id))
            .unwrap_or_else(|| panic!("no span for {id}: {roots:#?}"));
        let a = attrs(root);
        assert_eq!(root["name"], format!("execute_tool {tool}"));
        assert_eq!(root["kind"], 1, "INTERNAL");
        assert_eq!(a["gen_ai.operation.name"], "execute_tool");
        assert_eq!(a["gen_ai.tool.name"], tool);
        assert_eq!(a["gen_ai.tool.type"], "function");
        assert_eq!(a["toolrt.outcome"], outcome);
        assert_eq!(
            a.get("toolrt.permission").map(String::as_str),
            decision,
            "{id}"
        );
        assert!(
            a.get("toolrt.rule").is_some_and(|r| r.contains(rule)) || decision.is_none(),
            "{id}: {a:?}"
        );
        assert!(!a.contains_key("gen_ai.agent.id"));
        if outcome == "success" {
            assert!(root.get("status").is_none(), "{root}");
            assert!(!a.contains_key("error.type"));
        } else {
            assert_eq!(root["status"]["code"], 2, "{root}");
            assert_eq!(a["error.type"], outcome);
        }
        let trace_id = root["traceId"].as_str().unwrap();
        assert_eq!(trace_id.len(), 32);
        let children: Vec<&Value> = spans
            .iter()
            .filter(|s| s.get("parentSpanId") == Some(&root["spanId"]))
            .collect();
        let names: Vec<&str> = children
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        for child in &children {
            assert_eq!(
                child["traceId"], trace_id,
                "children share the call's trace"
            );
            assert!(nanos(child, "startTimeUnixNano") >= nanos(root, "startTimeUnixNano"));
            assert!(nanos(child, "endTimeUnixNano") <= nanos(root, "endTimeUnixNano"));
            assert!(nanos(child, "startTimeUnixNano") <= nanos(child, "endTimeUnixNano"));
            assert_eq!(
                attrs(child)["toolrt.stage"],
                child["name"].as_str().unwrap()
            );
        }
        let in_error: Vec<&str> = children
            .iter()
            .filter(|s| s["status"]["code"] == 2)
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            in_error,
            error_child.into_iter().collect::<Vec<_>>(),
            "{id}: {names:?}"
        );
        let want: &[&str] = match id {
            "ok" | "fail" => &[
                "queue",
                "validate",
                "slot",
                "pre_hooks",
                "permission",
                "execute",
                "post_hooks",
                "budget",
            ],
            "deny" => &["queue", "validate", "slot", "pre_hooks", "permission"],
            _ => &["queue", "validate"],
        };
        assert_eq!(names, want, "{id}");
    }
}

#[test]
fn no_endpoint_or_tracing_off_connects_to_nothing() {
    let receiver = Receiver::start();
    // The endpoint is set but traces are turned off, two standard ways; then no endpoint at
    // all (only other OTEL variables).
    let runs: [&[(&str, String)]; 3] = [
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url()),
            ("OTEL_SDK_DISABLED", "true".into()),
        ],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url()),
            ("OTEL_TRACES_EXPORTER", "none".into()),
        ],
        &[("OTEL_SERVICE_NAME", "otel-test".into())],
    ];
    for vars in runs {
        let sb = Sandbox::new();
        sb.write("a.txt", "hello\n");
        let done = run_calls(serve(&sb, vars), &calls());
        assert!(!done.stderr.contains("OTLP"), "{}", done.stderr);
    }
    assert_eq!(receiver.connections.load(Ordering::SeqCst), 0);
    assert!(receiver.requests().is_empty());
}

#[test]
fn a_collector_that_is_down_fails_no_call() {
    // A port nothing listens on: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sb = Sandbox::new();
    sb.write("a.txt", "hello\n");
    let server = serve(
        &sb,
        &[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        )],
    );
    let done = run_calls(server, &calls());
    let ok = done.messages.iter().find(|v| is_result(v, "ok")).unwrap();
    assert_eq!(ok["outcome"], "success");
    assert!(
        done.stderr.contains("OTLP export to") && done.stderr.contains("failed"),
        "{}",
        done.stderr
    );
}

#[test]
fn a_bad_variable_is_named_and_nothing_starts() {
    let sb = Sandbox::new();
    let mut server = serve(
        &sb,
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318".into())],
    );
    server.tool_use("x", "Read", json!({"file_path": "a.txt"}));
    let done = server.finish();
    assert_eq!(done.status.code(), Some(2), "{}", done.stderr);
    assert!(
        done.stderr.contains("OTEL_EXPORTER_OTLP_ENDPOINT")
            && done.stderr.contains("collector:4318"),
        "{}",
        done.stderr
    );
    assert!(done.messages.iter().all(|v| v["type"] != "tool_result"));
}
