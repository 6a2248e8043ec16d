//! The `toolrt` binary: parse flags, run the chosen command, exit with its code.

mod cli;
mod stdio;

use std::process::ExitCode;

use clap::Parser;
use cli::{Cli, Command};
use tokio::io::BufReader;

use toolrt::AskPolicy;
use toolrt::Behavior;
use toolrt::Explained;
use toolrt::{SignalState, serve, watch_signals};

// Every call allocates a little (messages, futures, ids); mimalloc makes that cheap.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Logs go to stderr, at the level `TOOLRT_LOG` asks for (`warn` by default).
fn init_logging() {
    use std::io::IsTerminal;
    // Colour codes only for a person at a terminal, and not when NO_COLOR asks for none: a log
    // file or a supervising program should get plain text.
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TOOLRT_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_ansi(colour)
        .with_target(false)
        .init();
}

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    // First, while this process has one thread: a user namespace refuses a threaded process.
    if let Command::SandboxExec {
        policy,
        probe,
        hold,
        command,
    } = cli.command
    {
        return toolrt::sandbox_exec(&policy, probe, hold, &command);
    }
    if let Command::Watchdog = cli.command {
        return ExitCode::from(toolrt::watchdog::run() as u8);
    }
    if let Command::Explain {
        tool,
        input,
        agent_types,
        args,
    } = cli.command
    {
        return explain(&tool, &input, &agent_types, args);
    }
    // Every command from here on may start processes: none of them may outlive toolrt.
    // The binary by its path, so the watchdog shows as toolrt in `ps`; /proc/self/exe if that
    // path is gone (the binary was replaced since it started).
    let program = std::env::current_exe()
        .ok()
        .filter(|p| p.exists())
        .unwrap_or_else(|| "/proc/self/exe".into());
    if let Err(err) = toolrt::watchdog::start(&program) {
        tracing::warn!(%err, "could not start the watchdog: if toolrt is killed, processes it started keep running");
    }
    if let Command::Tools { args } = cli.command {
        let code = tools(args.format, args);
        toolrt::watchdog::stop();
        return code;
    }
    if let Command::Bench(args) = cli.command {
        let code = toolrt::bench::run(&args.into());
        toolrt::watchdog::stop();
        return code;
    }
    // One thread drives the whole pipeline: every hop between actors is then a local wake-up,
    // which on two cores is several times cheaper than a cross-thread one. Blocking work (file
    // I/O, Grep, Glob, large output files) runs on tokio's blocking pool.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("toolrt: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    if let Command::Worker(args) = cli.command {
        let code = worker(&runtime, args);
        runtime.shutdown_background();
        toolrt::watchdog::stop();
        return code;
    }
    if let Command::McpServe { ask, http, args } = cli.command {
        let code = mcp_serve(&runtime, ask, http, args);
        runtime.shutdown_background();
        toolrt::watchdog::stop();
        return code;
    }
    let code = runtime.block_on(serve_or_run(cli.command));
    // A read of stdin may still be parked on a blocking thread (shutdown came as a message, not
    // EOF); do not wait for it.
    runtime.shutdown_background();
    toolrt::watchdog::stop();
    code
}

/// Lines in from stdin or a file (`-` is stdin).
type Input = Box<dyn tokio::io::AsyncBufRead + Unpin + Send>;

/// `toolrt serve` (asks go to the client) and `toolrt run` (asks are denied): the protocol over
/// stdin and stdout, or a file's lines in, until the input ends or a signal stops it.
async fn serve_or_run(command: Command) -> ExitCode {
    let (args, input, ask): (_, Input, _) = match command {
        Command::Serve(args) => (
            args,
            Box::new(BufReader::new(stdio::stdin())),
            AskPolicy::Client,
        ),
        Command::Run { file, args } => match lines_of(&file).await {
            Ok(input) => (args, input, AskPolicy::Deny),
            Err(e) => {
                eprintln!("toolrt: {}: {e}", file.display());
                return ExitCode::from(2);
            }
        },
        // Handled before the runtime starts.
        Command::Explain { .. }
        | Command::McpServe { .. }
        | Command::Bench(_)
        | Command::Tools { .. }
        | Command::SandboxExec { .. }
        | Command::Worker(_)
        | Command::Watchdog => return ExitCode::from(2),
    };
    let config = match args.into_config(ask) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("toolrt: {e}");
            return ExitCode::from(2);
        }
    };
    let signals = watch_signals();
    let mut abort = signals.clone();
    tokio::select! {
        served = serve(config, input, stdio::stdout(), signals) => match served {
            Ok(code) => ExitCode::from(code as u8),
            Err(e) => {
                eprintln!("toolrt: {e}");
                ExitCode::from(2)
            }
        },
        // A signal after everything was cancelled: stop waiting for a client that does not
        // read. Dropping the server kills background tasks and removes temporary files.
        _ = abort.wait_for(|s| *s == SignalState::Abort) => ExitCode::from(130),
    }
}

/// The lines of `file`, or of stdin for `-`.
async fn lines_of(file: &std::path::Path) -> std::io::Result<Input> {
    if file.as_os_str() == "-" {
        return Ok(Box::new(BufReader::new(stdio::stdin())));
    }
    let f = tokio::fs::File::open(file).await?;
    Ok(Box::new(BufReader::new(f)))
}

/// `toolrt mcp-serve`: MCP over stdin and stdout until the client closes stdin, or over HTTP
/// (`--http`) until a signal. Asks go to the MCP client (`--permission-prompt none` denies
/// them in toolrt instead). Signals act as for `serve`.
fn mcp_serve(
    runtime: &tokio::runtime::Runtime,
    ask: toolrt::AskFallback,
    http: cli::HttpArgs,
    args: cli::RuntimeArgs,
) -> ExitCode {
    let (config, http) = match (args.into_config(AskPolicy::Client), http.options()) {
        (Ok(c), Ok(h)) => (c, h),
        (Err(e), _) => {
            eprintln!("toolrt: {e}");
            return ExitCode::from(2);
        }
        (_, Err(e)) => {
            eprintln!("toolrt: {e}");
            return ExitCode::from(2);
        }
    };
    let options = toolrt::McpServeOptions { ask };
    runtime.block_on(async move {
        let signals = watch_signals();
        let mut abort = signals.clone();
        let stop = mcp_stop(signals);
        let served = async move {
            match http {
                None => {
                    toolrt::mcp_serve_until(config, options, stdio::stdin(), stdio::stdout(), stop)
                        .await
                        .map_err(|e| e.to_string())
                }
                Some(http) => {
                    let server = toolrt::McpHttpServer::bind(http)
                        .await
                        .map_err(|e| e.to_string())?;
                    eprintln!(
                        "toolrt mcp-serve: listening on http://{}/mcp",
                        server.local_addr()
                    );
                    server
                        .serve(config, options, stop)
                        .await
                        .map_err(|e| e.to_string())
                }
            }
        };
        tokio::select! {
            served = served => match served {
                Ok(code) => ExitCode::from(code as u8),
                Err(e) => {
                    eprintln!("toolrt: {e}");
                    ExitCode::from(2)
                }
            },
            _ = abort.wait_for(|s| *s == SignalState::Abort) => ExitCode::from(130),
        }
    })
}

/// The signals, as how far mcp-serve's stopping has gone.
fn mcp_stop(
    mut signals: tokio::sync::watch::Receiver<SignalState>,
) -> tokio::sync::watch::Receiver<toolrt::McpStop> {
    let (tx, rx) = tokio::sync::watch::channel(toolrt::McpStop::None);
    tokio::spawn(async move {
        loop {
            let stop = match *signals.borrow_and_update() {
                SignalState::None => toolrt::McpStop::None,
                SignalState::Graceful => toolrt::McpStop::Finish,
                SignalState::CancelAll | SignalState::Abort => toolrt::McpStop::CancelAll,
            };
            tx.send_replace(stop);
            if signals.changed().await.is_err() {
                return;
            }
        }
    });
    rx
}

/// The config of a command that runs no session (`explain`, `tools`: asks are denied) and a
/// runtime for its async work; Err is the exit code, its reason already on stderr.
fn config_and_runtime(
    args: cli::RuntimeArgs,
) -> Result<(toolrt::Config, tokio::runtime::Runtime), ExitCode> {
    let config = args.into_config(AskPolicy::Deny).map_err(|e| {
        eprintln!("toolrt: {e}");
        ExitCode::from(2)
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("toolrt: cannot start the async runtime: {e}");
            ExitCode::from(1)
        })?;
    Ok((config, runtime))
}

/// `toolrt tools`: the effective registry as one API's tool-definition list on stdout; tools
/// listed non-strict or left out are named on stderr, with why.
fn tools(format: toolrt::Format, args: cli::RuntimeArgs) -> ExitCode {
    // MCP servers are started to list their tools: they need a runtime.
    let (config, runtime) = match config_and_runtime(args) {
        Ok(both) => both,
        Err(code) => return code,
    };
    let defs = match runtime.block_on(toolrt::list_tools(&config)) {
        Ok(defs) => defs,
        Err(e) => {
            eprintln!("toolrt: {e}");
            return ExitCode::from(2);
        }
    };
    runtime.shutdown_background();
    let list = toolrt::tool_list(format, &defs);
    for note in &list.non_strict {
        eprintln!(
            "toolrt: {}: listed with strict: false: {}",
            note.name, note.reason
        );
    }
    for note in &list.skipped {
        eprintln!("toolrt: {}: left out: {}", note.name, note.reason);
    }
    match serde_json::to_string_pretty(&list.tools) {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("toolrt: {e}");
            ExitCode::from(1)
        }
    }
}

/// `toolrt explain`: decide one call and print why.
fn explain(tool: &str, input: &str, agent_types: &[String], args: cli::RuntimeArgs) -> ExitCode {
    let input: serde_json::Value = match serde_json::from_str(input) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("toolrt: the input is not valid JSON: {e}");
            return ExitCode::from(2);
        }
    };
    // The tool's own validation may do file work on the blocking pool: it needs a runtime.
    let (config, runtime) = match config_and_runtime(args) {
        Ok(both) => both,
        Err(code) => return code,
    };
    match runtime.block_on(toolrt::explain_as(&config, agent_types, tool, input)) {
        Err(e) => {
            eprintln!("toolrt: {e}");
            ExitCode::from(2)
        }
        Ok(Explained::Rejected(rejection)) => {
            println!("{}: {}", rejection.outcome.as_str(), rejection.content);
            ExitCode::from(2)
        }
        Ok(Explained::Decision {
            tool,
            input,
            decision,
            at_run_time,
        }) => {
            println!("tool: {tool}");
            println!("input: {}", serde_json::Value::Object(input));
            if !agent_types.is_empty() {
                println!("agent types: {}", agent_types.join(" > "));
            }
            print!("{}", decision.explain());
            if let Some(check) = at_run_time {
                println!(
                    "checked at run time, not here: the tool's own validation needs the session's state; in a session that has done nothing yet it would say: {check}"
                );
            }
            ExitCode::from(match decision.behavior {
                Behavior::Allow => 0,
                Behavior::Deny => 1,
                Behavior::Ask => 3,
            })
        }
    }
}

/// `toolrt worker`: serve execute steps until SIGINT or SIGTERM. Exit 2 on bad flags or a
/// listen address it cannot use.
fn worker(runtime: &tokio::runtime::Runtime, args: cli::WorkerArgs) -> ExitCode {
    let options = match args.into_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("toolrt: {e}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(async {
        let stop = tokio_util::sync::CancellationToken::new();
        let mut signals = watch_signals();
        let on_signal = stop.clone();
        tokio::spawn(async move {
            let _ = signals.wait_for(|s| *s != SignalState::None).await;
            on_signal.cancel();
        });
        match toolrt::run_worker(options, stop).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("toolrt worker: {e}");
                ExitCode::from(2)
            }
        }
    })
}
