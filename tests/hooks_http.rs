//! `type: "http"` hooks: the input JSON is POSTed to the hook's URL and the response body is read
//! as a command hook's stdout; header values interpolate only the variables the hook lists in
//! `allowedEnvVars`. A central policy service on loopback decides for the session.

mod hooks_support;
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use hooks_support::*;
use serde_json::{Value, json};

/// One request the server received: its headers (lower-case names) and its JSON body.
#[derive(Debug, Clone)]
struct Received {
    headers: Vec<(String, String)>,
    body: Value,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How the server answers one request: `Some((status, body))`, or `None` to never answer.
type Reply = Box<dyn Fn(&Received) -> Option<(u16, String)> + Send + Sync>;

/// A loopback HTTP/1.1 server answering every POST with `reply`.
struct PolicyServer {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl PolicyServer {
    fn start(reply: Reply) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&received);
        let reply = Arc::new(reply);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let seen = Arc::clone(&seen);
                let reply = Arc::clone(&reply);
                std::thread::spawn(move || serve_one(stream, &seen, &*reply));
            }
        });
        Self { url, received }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

fn serve_one(
    stream: TcpStream,
    seen: &Mutex<Vec<Received>>,
    reply: &(dyn Fn(&Received) -> Option<(u16, String)> + Send + Sync),
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    assert!(line.starts_with("POST /hook "), "{line}");
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).unwrap();
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':').unwrap();
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_owned());
        if name == "content-length" {
            length = value.parse().unwrap();
        }
        headers.push((name, value));
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
    let got = Received {
        headers,
        body: serde_json::from_slice(&body).unwrap(),
    };
    seen.lock().unwrap().push(got.clone());
    match reply(&got) {
        Some((status, text)) => {
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
        }
        // Never answer: hold the connection until the client gives up.
        None => {
            let mut sink = [0u8; 64];
            let mut stream = stream;
            while stream.read(&mut sink).map(|n| n > 0).unwrap_or(false) {}
        }
    }
}

fn http_hook(url: &str, extra: Value) -> Value {
    let mut h = json!({"type": "http", "url": url});
    for (k, v) in extra.as_object().unwrap() {
        h[k] = v.clone();
    }
    h
}

#[test]
fn a_policy_service_decides_deny_and_allow_for_the_session() {
    let server = PolicyServer::start(Box::new(|req| {
        let cmd = req.body["tool_input"]["command"].as_str().unwrap_or("");
        let decision = if cmd.starts_with("rm") {
            pre_decision("deny", "the policy service forbids rm")
        } else {
            pre_decision("allow", "fine by policy")
        };
        Some((200, decision.to_string()))
    }));
    let fx = Fixture::new();
    fx.settings(json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [http_hook(&server.url, json!({
        "headers": {"Authorization": "Bearer $POLICY_TOKEN", "X-Leak": "${SECRET_KEY}", "X-Plain": "v"},
        "allowedEnvVars": ["POLICY_TOKEN"],
        "timeout": 10
    }))]}]}}));
    std::fs::write(fx.cwd().join("keep.txt"), "x").unwrap();
    let run = fx
        .serve_with(
            "default",
            &["--session-id", "sess-http"],
            &[("POLICY_TOKEN", "t0ken"), ("SECRET_KEY", "do-not-send")],
        )
        .run(&[bash("ok", "touch made.txt"), bash("no", "rm keep.txt")]);
    // An allow from the hook skips the prompt (no rule needed), a deny blocks.
    assert_eq!(run.outcome("ok"), "success", "{:#?}", run.lines);
    assert!(run.permission_requests().is_empty());
    assert!(fx.cwd().join("made.txt").exists());
    assert_eq!(run.outcome("no"), "denied");
    assert!(run.content("no").contains("the policy service forbids rm"));
    assert!(fx.cwd().join("keep.txt").exists());

    let got = server.received();
    assert_eq!(got.len(), 2);
    let first = &got[0];
    assert_eq!(first.body["hook_event_name"], "PreToolUse");
    assert_eq!(first.body["session_id"], "sess-http");
    assert_eq!(first.body["tool_name"], "Bash");
    assert_eq!(first.header("content-type"), Some("application/json"));
    assert_eq!(first.header("authorization"), Some("Bearer t0ken"));
    assert_eq!(first.header("x-leak"), Some(""), "not in allowedEnvVars");
    assert_eq!(first.header("x-plain"), Some("v"));
    let starts = run.events("hook_start");
    assert_eq!(starts[0]["command"], server.url.as_str());
}

#[test]
fn a_service_that_never_answers_or_fails_is_a_hook_failure() {
    let silent = PolicyServer::start(Box::new(|_| None));
    let broken = PolicyServer::start(Box::new(|_| Some((500, "oops".into()))));
    let garbage = PolicyServer::start(Box::new(|_| Some((200, "{not json".into()))));
    // A port nothing listens on.
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/hook", l.local_addr().unwrap())
    };
    let fx = Fixture::new();
    for (name, url, why) in [
        ("silent", silent.url.as_str(), "timed out after 1 s"),
        ("500", broken.url.as_str(), "HTTP status 500: oops"),
        ("garbage", garbage.url.as_str(), "not a JSON object"),
        ("closed", closed.as_str(), "error sending request"),
    ] {
        for on_failure in ["continue", "block"] {
            let run = fx.run(
                json!({"PreToolUse": [{"matcher": "Bash", "hooks": [http_hook(url, json!({"timeout": 1, "onFailure": on_failure}))]}]}),
                "bypassPermissions",
                &[bash("a1", "echo through")],
            );
            let end = run.hook_ends("PreToolUse")[0];
            assert!(
                end["error"].as_str().unwrap_or_default().contains(why),
                "{name}/{on_failure}: {end}"
            );
            let want = if on_failure == "continue" {
                "success"
            } else {
                "denied"
            };
            assert_eq!(run.outcome("a1"), want, "{name}/{on_failure}");
        }
    }
}

#[test]
fn http_hooks_work_on_post_tool_use_too() {
    let server = PolicyServer::start(Box::new(|_| {
        Some((
            200,
            json!({"decision": "block", "reason": "style check failed", "systemMessage": "reviewed"})
                .to_string(),
        ))
    }));
    let fx = Fixture::new();
    let run = fx.run(
        json!({"PostToolUse": [{"matcher": "Bash", "hooks": [http_hook(&server.url, json!({}))]}]}),
        "bypassPermissions",
        &[bash("a1", "echo out")],
    );
    assert_eq!(run.outcome("a1"), "success");
    assert!(run.content("a1").contains("style check failed"));
    assert_eq!(run.events("hook_message")[0]["message"], "reviewed");
    assert_eq!(server.received()[0].body["hook_event_name"], "PostToolUse");
}
