//! Makes N calls of the no-op tool through `Runtime`, one at a time, as `toolrt serve` does
//! around them: a line through `parse_line`, `submit`, the result through `to_line`. Built-ins
//! off, `Noop` allowed, a current-thread runtime (the `toolrt bench` no-op figure's set-up,
//! without its 100 unmatched rules). Nothing is timed: it is for counting instructions, which a
//! loaded machine does not disturb (docs/BENCH.md):
//!
//! ```sh
//! cargo build --release --example noop_calls
//! for n in 1000 11000; do
//!   valgrind --tool=callgrind --callgrind-out-file=cg.noop.$n \
//!     target/release/examples/noop_calls $n
//! done
//! # instructions per call: (I(11000) - I(1000)) / 10000, I from each file's "summary:"
//! ```

mod support;

use std::process::ExitCode;
use std::sync::Arc;

use toolrt::{Outcome, ServerMessage};

async fn run(cwd: std::path::PathBuf, calls: usize) -> Result<(), String> {
    let mut config = toolrt::Config::new(cwd).tool(Arc::new(toolrt::Noop::new()));
    config.builtins = false;
    config.output_dir = toolrt::OutputDir::Temporary;
    config.allowed_tools = vec!["Noop".into()];
    config.ask_policy = toolrt::AskPolicy::Deny;
    let (runtime, mut outbox) = toolrt::Runtime::start(config)
        .await
        .map_err(|e| format!("the runtime did not start: {e}"))?;
    for id in 0..calls {
        let line =
            format!(r#"{{"type":"tool_use","id":"n{id}","name":"Noop","input":{{"value":{id}}}}}"#);
        let msg = toolrt::parse_line(&line).map_err(|e| format!("{line}: {e}"))?;
        runtime.submit(msg).await;
        loop {
            let Some(msg) = outbox.recv().await else {
                return Err("the runtime closed its output".into());
            };
            if let ServerMessage::ToolResult(result) = &msg {
                if result.outcome != Outcome::Success {
                    return Err(format!(
                        "call n{id} ended {}: {}",
                        result.outcome.as_str(),
                        result.content
                    ));
                }
                std::hint::black_box(msg.to_line());
                break;
            }
        }
    }
    runtime.shutdown().await;
    Ok(())
}

fn main() -> ExitCode {
    let calls = match std::env::args().nth(1).map(|n| n.parse::<usize>()) {
        Some(Ok(n)) => n,
        Some(Err(e)) => return usage(&format!("calls: {e}")),
        None => return usage("expected the number of calls"),
    };
    support::run_counted("noop_calls", usage, |cwd| run(cwd, calls))
}

fn usage(why: &str) -> ExitCode {
    eprintln!("noop_calls: {why}\nusage: noop_calls CALLS");
    ExitCode::from(2)
}
