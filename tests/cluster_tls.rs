//! Worker nodes over TLS: a worker with a certificate, a coordinator that trusts its CA, and
//! every mismatch refused at start-up with a clear error (tests/fixtures/tls holds the test
//! certificates).

mod cluster_support;
mod support;

use std::path::PathBuf;

use cluster_support::*;
use serde_json::json;
use support::*;

fn tls(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tls")
        .join(name)
        .display()
        .to_string()
}

/// A worker `w1` that coordinators reach over TLS only, with `extra` flags.
fn tls_worker_with(sb: &Sandbox, cookie: &std::path::Path, extra: &[&str]) -> Worker {
    let (cert, key) = (tls("worker.pem"), tls("worker.key"));
    let mut args = vec!["--tls-cert", &cert, "--tls-key", &key];
    args.extend_from_slice(extra);
    Worker::start_at("w1", cookie, &sb.dir.path().join("w1"), &free_addr(), &args)
}

/// A worker `w1` that coordinators reach over TLS only.
fn tls_worker(sb: &Sandbox, cookie: &std::path::Path) -> Worker {
    tls_worker_with(sb, cookie, &[])
}

/// Starts `serve` against `worker` with `args`; it must stop at start-up with exit status 2,
/// its stderr saying `want` and naming the worker's address.
fn refused(sb: &Sandbox, cookie: &std::path::Path, worker: &Worker, args: &[&str], want: &str) {
    let mut all = vec![
        "--cookie-file",
        cookie.to_str().unwrap(),
        "--worker",
        &worker.addr,
    ];
    all.extend_from_slice(args);
    let done = sb.serve(&all).finish();
    assert_eq!(done.status.code(), Some(2), "{}", done.stderr);
    assert!(done.stderr.contains(want), "{}", done.stderr);
    assert!(done.stderr.contains(&worker.addr), "{}", done.stderr);
}

#[test]
fn a_coordinator_that_trusts_the_workers_ca_runs_calls_on_it_over_tls() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let worker = tls_worker(&sb, &cookie);
    let ca = tls("ca.pem");
    for name in [None, Some("toolrt-worker")] {
        let mut args = vec!["--tls-ca", ca.as_str(), "--allowed-tools", "Bash(echo:*)"];
        if let Some(name) = name {
            args.extend(["--tls-server-name", name]);
        }
        let mut server = coordinator(&sb, &cookie, std::slice::from_ref(&worker), &args);
        server.tool_use("t", "Bash", json!({"command": "echo over tls"}));
        let t = server.result("t");
        assert_eq!(
            (
                t["outcome"].as_str(),
                t["node"].as_str(),
                t["content"].as_str()
            ),
            (Some("success"), Some("w1"), Some("over tls\n")),
            "{name:?}: {t}"
        );
        assert_eq!(server.finish().status.code(), Some(0));
    }
}

#[test]
fn a_worker_whose_certificate_the_coordinator_does_not_trust_is_refused() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let worker = tls_worker(&sb, &cookie);
    let other = tls("other-ca.pem");
    refused(
        &sb,
        &cookie,
        &worker,
        &["--tls-ca", &other],
        "the TLS handshake failed",
    );
    // Signed by the right CA, but for another name than the one asked for.
    let ca = tls("ca.pem");
    refused(
        &sb,
        &cookie,
        &worker,
        &["--tls-ca", &ca, "--tls-server-name", "elsewhere.example"],
        "the TLS handshake failed",
    );
}

#[test]
fn tls_on_one_side_only_is_refused_either_way() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    // A coordinator without TLS: the worker takes nothing but a TLS handshake.
    let worker = tls_worker(&sb, &cookie);
    refused(&sb, &cookie, &worker, &[], "expects TLS");
    // A coordinator with TLS and a worker without it.
    let plain = Worker::start("w2", &cookie, &sb.dir.path().join("w2"));
    let ca = tls("ca.pem");
    refused(
        &sb,
        &cookie,
        &plain,
        &["--tls-ca", &ca],
        "the TLS handshake failed",
    );
}

#[test]
fn tls_flags_without_their_partner_are_refused() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let cert = tls("worker.pem");
    let cookie_arg = cookie.display().to_string();
    let (code, err) = run_status(
        &[
            "worker",
            "--listen",
            "127.0.0.1:1",
            "--cookie-file",
            &cookie_arg,
            "--tls-cert",
            &cert,
        ],
        sb.dir.path(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--tls-key"), "{err}");
    let ca = tls("ca.pem");
    let (code, err) = serve_status(&sb.cwd, &["--tls-ca", &ca]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--tls-ca needs --worker"), "{err}");
}

#[test]
fn a_peer_that_never_answers_the_handshake_holds_up_no_other_worker() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    // Takes the connection (the kernel's backlog does) and never says a word.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_addr = silent.local_addr().unwrap().to_string();
    let worker = tls_worker(&sb, &cookie);
    let ca = tls("ca.pem");
    let mut server = sb.serve(&[
        "--cookie-file",
        cookie.to_str().unwrap(),
        "--worker",
        &silent_addr,
        "--worker",
        &worker.addr,
        "--tls-ca",
        &ca,
        "--allowed-tools",
        "Bash(echo:*)",
    ]);
    wait_node(
        &mut server,
        "w1",
        "joined",
        std::time::Duration::from_secs(20),
    );
    server.tool_use("t", "Bash", json!({"command": "echo still served"}));
    let t = server.result("t");
    assert_eq!(
        (t["outcome"].as_str(), t["node"].as_str()),
        (Some("success"), Some("w1")),
        "{t}"
    );
    assert_eq!(server.finish().status.code(), Some(0));
    drop(silent);
}

/// A worker `w1` over TLS that asks coordinators for a certificate the client CA signed.
fn worker_asking_for_certificates(sb: &Sandbox, cookie: &std::path::Path) -> Worker {
    let client_ca = tls("client-ca.pem");
    tls_worker_with(sb, cookie, &["--tls-client-ca", &client_ca])
}

#[test]
fn a_worker_asking_for_client_certificates_takes_only_a_coordinator_with_one() {
    let sb = Sandbox::new();
    let cookie = cookie(&sb, "cookie", "s3cret");
    let worker = worker_asking_for_certificates(&sb, &cookie);
    let (ca, cert, key) = (
        tls("ca.pem"),
        tls("coordinator.pem"),
        tls("coordinator.key"),
    );
    let mut server = coordinator(
        &sb,
        &cookie,
        std::slice::from_ref(&worker),
        &[
            "--tls-ca",
            &ca,
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
            "--allowed-tools",
            "Bash(echo:*)",
        ],
    );
    server.tool_use("t", "Bash", json!({"command": "echo mutual"}));
    let t = server.result("t");
    assert_eq!(
        (t["outcome"].as_str(), t["node"].as_str()),
        (Some("success"), Some("w1")),
        "{t}"
    );
    assert_eq!(server.finish().status.code(), Some(0));

    // No certificate, and one the client CA did not sign (the worker's own, by the other CA).
    refused(
        &sb,
        &cookie,
        &worker,
        &["--tls-ca", &ca],
        "client certificate",
    );
    let (wrong_cert, wrong_key) = (tls("worker.pem"), tls("worker.key"));
    refused(
        &sb,
        &cookie,
        &worker,
        &[
            "--tls-ca",
            &ca,
            "--tls-cert",
            &wrong_cert,
            "--tls-key",
            &wrong_key,
        ],
        "client certificate",
    );
}
