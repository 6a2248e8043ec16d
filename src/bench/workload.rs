//! What every measurement shares: sizes, the permission rules, the workspace, call lines.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::permission::{Policy, PolicyBuilder};
use crate::runtime::Config;
use crate::supervisor::AskPolicy;
use crate::tool::Tool;

/// How many of everything one run measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sizes {
    /// Calls at one in flight for each latency figure (inline, actor floor, toolrt no-op).
    pub latency_calls: usize,
    /// Calls for each throughput figure.
    pub throughput_calls: usize,
    /// Calls of the run timed stage by stage (a separate run: the clock costs a little).
    pub stage_calls: usize,
    /// `true` runs per Bash figure (toolrt and direct, one and four in flight).
    pub bash_calls: usize,
    /// Timed batches of permission decisions.
    pub decide_samples: usize,
    /// Calls held in flight at once for the memory figure.
    pub memory_calls: usize,
    /// Rounds the latency measurements are interleaved in, so that drift of a shared machine
    /// hits floors and toolrt alike.
    pub rounds: usize,
}

impl Sizes {
    /// The full run: ≥ 100,000 calls per latency figure.
    pub(crate) const FULL: Sizes = Sizes {
        latency_calls: 100_000,
        throughput_calls: 100_000,
        stage_calls: 50_000,
        bash_calls: 2_000,
        decide_samples: 20_000,
        memory_calls: 10_000,
        rounds: 5,
    };

    /// `--quick`: well under a minute on two cores.
    pub(crate) const QUICK: Sizes = Sizes {
        latency_calls: 30_000,
        throughput_calls: 30_000,
        stage_calls: 20_000,
        bash_calls: 400,
        decide_samples: 10_000,
        memory_calls: 10_000,
        rounds: 4,
    };

    /// `--smoke` (tests only): every figure from a handful of samples, in a few seconds.
    pub(crate) const SMOKE: Sizes = Sizes {
        latency_calls: 200,
        throughput_calls: 200,
        stage_calls: 200,
        bash_calls: 8,
        decide_samples: 100,
        memory_calls: 200,
        rounds: 1,
    };
}

/// Permission rules of the no-op run (and of the inline floor's policy).
pub(crate) const PIPELINE_RULES: usize = 100;

/// Permission rules of the decide figure.
pub(crate) const DECIDE_RULES: usize = 1_000;

/// `n` rules, a mix of the kinds a real settings file holds: Bash (exact, prefix, `:*`,
/// mid-pattern stars), Read and Edit paths (anchored, any-depth, globs, home) and WebFetch
/// domains, as (allow, deny) lists. None of them matches the calls the bench makes, so every
/// decision walks all of them before the allow rule for the tool itself.
pub(crate) fn mixed_rules(n: usize) -> (Vec<String>, Vec<String>) {
    let mut allow = Vec::new();
    let mut deny = Vec::new();
    for i in 0..n {
        let rule = match i % 9 {
            0 => format!("Bash(tool{i} run:*)"),
            1 => format!("Bash(git * branch{i})"),
            2 => format!("Bash(npm run script{i})"),
            3 => format!("Bash(cmd{i} *)"),
            4 => format!("Read(src/mod{i}/**)"),
            5 => format!("Edit(//opt/data{i}/*.csv)"),
            6 => format!("Read(~/.secret{i})"),
            7 => format!("Edit(docs/**/page{i}.md)"),
            _ => format!("WebFetch(domain:site{i}.example.com)"),
        };
        // Mostly allow rules, as in real settings; a fifth deny.
        if i % 5 == 4 {
            deny.push(rule);
        } else {
            allow.push(rule);
        }
    }
    (allow, deny)
}

/// A temporary workspace with a few real files, since path rules resolve symlinks on the file
/// system as they do in production.
pub(crate) struct Workspace {
    /// Removed when dropped.
    _dir: tempfile::TempDir,
    /// Its canonical path.
    pub cwd: PathBuf,
}

impl Workspace {
    /// Creates the workspace.
    pub(crate) fn new() -> std::io::Result<Self> {
        let dir = tempfile::Builder::new().prefix("toolrt-bench-").tempdir()?;
        let cwd = std::fs::canonicalize(dir.path())?;
        std::fs::create_dir_all(cwd.join("src/mod4"))?;
        std::fs::create_dir_all(cwd.join("docs/x"))?;
        std::fs::write(cwd.join("src/mod4/a.rs"), "fn main() {}\n")?;
        Ok(Self { _dir: dir, cwd })
    }
}

/// The runtime config of the no-op runs: only `tools` (no built-ins), the mixed rules plus an
/// allow rule for each tool, no hooks, asks denied, and room for `max_in_flight` calls.
pub(crate) fn config(
    cwd: &Path,
    tools: Vec<Arc<dyn Tool>>,
    allow_extra: &[&str],
    builtins: bool,
    max_in_flight: usize,
) -> Config {
    let mut config = Config::new(cwd.to_path_buf());
    config.builtins = builtins;
    config.extra_tools = tools;
    let (mut allow, deny) = mixed_rules(PIPELINE_RULES);
    allow.extend(allow_extra.iter().map(|s| s.to_string()));
    config.allowed_tools = allow;
    config.disallowed_tools = deny;
    config.ask_policy = AskPolicy::Deny;
    config.max_in_flight = max_in_flight;
    config.max_queued = max_in_flight.max(4_096);
    config
}

/// The policy the runtime builds from [`config`]'s rules, for the inline floor.
pub(crate) fn pipeline_policy(cwd: &Path, allow_extra: &[&str]) -> Result<Policy, String> {
    let (mut allow, deny) = mixed_rules(PIPELINE_RULES);
    allow.extend(allow_extra.iter().map(|s| s.to_string()));
    policy(cwd, &allow, &deny)
}

/// A policy of these allow and deny rules, given as flags are.
pub(crate) fn policy(cwd: &Path, allow: &[String], deny: &[String]) -> Result<Policy, String> {
    let mut b = PolicyBuilder::new(cwd.to_path_buf(), crate::paths::home_dir());
    for rule in allow {
        b.add_cli_allow(rule).map_err(|e| e.to_string())?;
    }
    for rule in deny {
        b.add_cli_deny(rule).map_err(|e| e.to_string())?;
    }
    b.build().map_err(|e| e.to_string())
}

/// Hands out blocks of call ids (`next(n)` is the first of `n` fresh ids), so that no two
/// measurements of one run reuse an id.
pub(crate) fn id_blocks() -> impl FnMut(usize) -> u64 {
    let mut ids = 0u64;
    move |n| {
        let first = ids;
        ids += n as u64;
        first
    }
}

/// The wire line of one no-op call.
pub(crate) fn noop_line(id: u64) -> String {
    format!(r#"{{"type":"tool_use","id":"b{id}","name":"Noop","input":{{"value":{id}}}}}"#)
}

/// The wire line of one `true` through Bash.
pub(crate) fn bash_line(id: u64) -> String {
    format!(r#"{{"type":"tool_use","id":"s{id}","name":"Bash","input":{{"command":"true"}}}}"#)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_compile_and_lines_parse() {
        let ws = Workspace::new().expect("workspace");
        let (allow, deny) = mixed_rules(DECIDE_RULES);
        assert_eq!(allow.len() + deny.len(), DECIDE_RULES);
        policy(&ws.cwd, &allow, &deny).expect("rules compile");
        pipeline_policy(&ws.cwd, &["Noop"]).expect("rules compile");
        for line in [noop_line(7), bash_line(7)] {
            assert!(
                matches!(
                    crate::protocol::parse_line(&line),
                    Ok(crate::protocol::ClientMessage::ToolUse(_))
                ),
                "{line}"
            );
        }
    }
}
