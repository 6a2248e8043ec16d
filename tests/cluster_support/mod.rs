//! Real `toolrt worker` processes on loopback for the cluster tests.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::{Sandbox, Server, bin};

/// A worker process and its workspace.
pub(crate) struct Worker {
    pub child: Child,
    pub name: String,
    pub addr: String,
    pub cwd: PathBuf,
    /// Its `TMPDIR` (`<cwd>.tmp`), where it keeps long outputs until they are fetched.
    pub tmp: PathBuf,
}

impl Worker {
    /// Starts `toolrt worker` named `name` on a free loopback port, its workspace `cwd`, and
    /// waits for its ready line.
    pub(crate) fn start(name: &str, cookie: &Path, cwd: &Path) -> Self {
        Self::start_at(name, cookie, cwd, &free_addr(), &[])
    }

    /// Starts a worker at `addr` with `extra` flags.
    pub(crate) fn start_at(
        name: &str,
        cookie: &Path,
        cwd: &Path,
        addr: &str,
        extra: &[&str],
    ) -> Self {
        Self::start_with_env(name, cookie, cwd, addr, extra, &[])
    }

    /// Starts a worker at `addr` with `extra` flags and `env` added to its environment.
    pub(crate) fn start_with_env(
        name: &str,
        cookie: &Path,
        cwd: &Path,
        addr: &str,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        std::fs::create_dir_all(cwd).unwrap();
        let tmp = cwd.with_extension("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let mut child = Command::new(bin())
            .envs(env.iter().copied())
            .env("TMPDIR", &tmp)
            .args(["worker", "--listen", addr, "--name", name, "--cookie-file"])
            .arg(cookie)
            .arg("--cwd")
            .arg(cwd)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start toolrt worker");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let _ = tx.send(line);
            }
        });
        let ready = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("worker {name} did not say it is listening: {e}"));
        assert!(ready.contains("listening on"), "worker {name}: {ready}");
        Self {
            child,
            name: name.to_string(),
            addr: addr.to_string(),
            cwd: cwd.to_path_buf(),
            tmp,
        }
    }

    /// Kills it with SIGKILL and reaps it.
    pub(crate) fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A loopback address with a port free just now.
pub(crate) fn free_addr() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// A cookie file in the sandbox's temp folder.
pub(crate) fn cookie(sb: &Sandbox, name: &str, value: &str) -> PathBuf {
    let path = sb.dir.path().join(name);
    std::fs::write(&path, format!("{value}\n")).unwrap();
    path
}

/// Starts `n` workers (`w1`…) with workspaces `<tmp>/w1`…, all with `cookie`.
pub(crate) fn workers(sb: &Sandbox, cookie: &Path, n: usize) -> Vec<Worker> {
    (1..=n)
        .map(|i| {
            let name = format!("w{i}");
            Worker::start(&name, cookie, &sb.dir.path().join(&name))
        })
        .collect()
}

/// Three workers sharing one cookie and a coordinator that has seen each join, in
/// `bypassPermissions` mode (the tests' commands use `$!` and `$(…)`, which would ask).
pub(crate) fn three_node_cluster(sb: &Sandbox) -> (Vec<Worker>, Server) {
    let cookie = cookie(sb, "cookie", "s3cret");
    let workers = workers(sb, &cookie, 3);
    let server = coordinator(
        sb,
        &cookie,
        &workers,
        &["--permission-mode", "bypassPermissions"],
    );
    (workers, server)
}

/// Starts `serve` dialing `workers` with `cookie`, plus `args`, and waits for each worker's
/// `node joined` event.
pub(crate) fn coordinator(
    sb: &Sandbox,
    cookie: &Path,
    workers: &[Worker],
    args: &[&str],
) -> Server {
    let cookie = cookie.display().to_string();
    let mut all: Vec<String> = vec!["--cookie-file".into(), cookie];
    for w in workers {
        all.push("--worker".into());
        all.push(w.addr.clone());
    }
    all.extend(args.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let mut server = sb.serve(&refs);
    for w in workers {
        wait_node(&mut server, &w.name, "joined", Duration::from_secs(20));
    }
    server
}

/// Waits at most `within` for the `node` event saying `node` is now `status` (joined, lost,
/// rejoined).
pub(crate) fn wait_node(server: &mut Server, node: &str, status: &str, within: Duration) {
    server.wait_for(&format!("{node} {status}"), within, |v| {
        v["type"] == "event" && v["event"] == "node" && v["node"] == node && v["status"] == status
    });
}
