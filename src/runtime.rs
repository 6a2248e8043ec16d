//! Assembling a runtime: settings, registry, policy, stage actors, dispatcher. This is the
//! library's entry point; `toolrt serve` and `toolrt run` are thin loops over it.

mod assemble;
mod config;
mod explain;
mod listing;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::client_tools::{ClientTools, Exchange, RegisterError};
use crate::dispatch::{Dispatcher, Limits};
use crate::emit::{Emitter, Outbox};
use crate::protocol::{ClientMessage, ServerMessage};
use crate::registry::{GroupChange, Registry};
use crate::session::Session;
use crate::supervisor::{Pipeline, PipelineOptions};
use crate::tool::Tool;
use crate::tools::ToolState;

use assemble::{
    ScopeFollowers, build_policy_and_registry, hook_config, limits_for_hello, mcp_event_sink,
    node_event_sink, output_limits, report_warnings, scope_table, spawn_hooks, spawn_stages,
    warn_unmatched_mcp_selection, working_dir,
};
use config::output_folder;
pub use config::{Config, OutputDir, StartError};
pub use explain::{Explained, explain, explain_as};
pub use listing::list_tools;

/// At shutdown, how long async hooks still running may take before they are killed.
const ASYNC_HOOK_GRACE: Duration = Duration::from_secs(5);

/// At shutdown, how long the last calls' spans may take to reach the collector.
#[cfg(feature = "otel")]
const OTEL_FLUSH_GRACE: Duration = Duration::from_secs(5);

/// The OTLP exporter, when the config asks for one.
#[cfg(feature = "otel")]
fn start_tracer(config: &Config) -> Result<Option<Arc<crate::otel::Tracer>>, StartError> {
    config
        .otel
        .as_ref()
        .map(|c| crate::otel::Tracer::start(c).map_err(StartError::Otel))
        .transpose()
}

/// Without the `otel` feature calls are never traced.
#[cfg(not(feature = "otel"))]
fn start_tracer(_: &Config) -> Result<Option<Arc<crate::otel::Tracer>>, StartError> {
    Ok(None)
}

/// A running runtime: submit client messages, read server messages.
///
/// Embedding toolrt: start a runtime with a tool of your own, submit a call, read its one
/// result from the outbox, shut down.
///
/// ```
/// use std::sync::Arc;
///
/// use async_trait::async_trait;
/// use serde_json::{Value, json};
/// use toolrt::{
///     AskPolicy, ClientMessage, Config, Input, Outcome, OutputDir, Runtime, ServerMessage, Tool,
///     ToolCall, ToolContext, ToolOutput,
/// };
///
/// /// Answers with its `text` field.
/// struct Echo;
///
/// #[async_trait]
/// impl Tool for Echo {
///     fn name(&self) -> &str {
///         "Echo"
///     }
///     fn description(&self) -> &str {
///         "Answers with its text."
///     }
///     fn input_schema(&self) -> Value {
///         json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
///     }
///     async fn call(&self, input: Input, _ctx: ToolContext) -> ToolOutput {
///         ToolOutput::success(input["text"].as_str().unwrap_or_default())
///     }
/// }
///
/// # fn main() {
/// # let dir = tempfile::tempdir().unwrap();
/// # let cwd = dir.path().to_path_buf();
/// let run = async {
///     let mut config = Config::new(cwd).tool(Arc::new(Echo));
///     config.builtins = false;
///     config.output_dir = OutputDir::Temporary;
///     // A tool that is not built in needs a rule to run without asking.
///     config.allowed_tools = vec!["Echo".into()];
///     config.ask_policy = AskPolicy::Deny;
///     let (runtime, mut outbox) = Runtime::start(config).await.expect("a valid configuration");
///
///     let call = ToolCall::new("call-1", "Echo", json!({"text": "hello"}));
///     runtime.submit(ClientMessage::ToolUse(call)).await;
///     let result = loop {
///         match outbox.recv().await {
///             Some(ServerMessage::ToolResult(result)) => break result,
///             Some(_) => continue, // events: hooks, progress, ...
///             None => panic!("the outbox closed before the result"),
///         }
///     };
///     assert_eq!(result.tool_use_id, "call-1");
///     assert_eq!(result.outcome, Outcome::Success);
///     assert_eq!(result.content, "hello");
///     runtime.shutdown().await;
/// };
/// tokio::runtime::Builder::new_current_thread()
///     .enable_all()
///     .build()
///     .unwrap()
///     .block_on(run);
/// # }
/// ```
pub struct Runtime {
    dispatcher: Dispatcher,
    /// Tools the client (or the library user) defines and runs.
    client_tools: Arc<ClientTools>,
    session: Arc<Session>,
    mcp: Arc<crate::mcp::McpServers>,
    /// Which tools exist; it changes with [`Runtime::set_tools`].
    registry: Arc<Registry>,
    /// The session's format (`--format`), `list_tools`'s default.
    format: crate::formats::Format,
    /// The `limits` of the answer to `hello`.
    hello_limits: serde_json::Value,
    /// What the built-in tools remember (rewind, shutdown).
    tool_state: ToolState,
    /// The links to worker nodes (`serve --worker`), if any.
    cluster: Option<crate::cluster::Coordinator>,
    _temp_output: Option<tempfile::TempDir>,
}

/// The environment every child process gets (toolrt's own minus `toolrt.envScrub`, then the
/// settings' `env`), and the `bash` it finds on that `PATH`.
fn child_environment(session: &mut Session, settings: &crate::Settings) {
    session.env_remove = crate::process::scrubbed_names(&settings.env_scrub);
    session.env = settings
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    session.shell = crate::process::find_program("bash", &session.env_remove, &session.env);
}

/// The links to worker nodes, when the configuration names any.
async fn start_cluster(
    config: &Config,
    emitter: &Emitter,
    sandbox: &Option<Arc<crate::sandbox::Sandbox>>,
) -> Result<Option<crate::cluster::Coordinator>, StartError> {
    let Some(cluster) = &config.cluster else {
        return Ok(None);
    };
    let events = node_event_sink(emitter.clone());
    let started = crate::cluster::Coordinator::start(cluster, events, sandbox.clone()).await;
    started.map(Some).map_err(StartError::Cluster)
}

/// The pipeline's options: limits and mode from the configuration and rules, each agent's own
/// limit from its scope, the tracer, and where calls run when there are worker nodes.
fn pipeline_options(
    config: &Config,
    policy: &Arc<crate::permission::Policy>,
    scopes: Arc<crate::scope::ScopeTable>,
    cluster: Option<&crate::cluster::Coordinator>,
) -> Result<PipelineOptions, StartError> {
    // Each agent's own limit: its scope's maxInFlight, narrowed along its chain.
    let scope_limits = {
        let table = scopes.clone();
        Arc::new(move |agent: &str| table.resolve(agent).and_then(|s| s.max_in_flight))
    };
    Ok(PipelineOptions {
        max_in_flight: config.max_in_flight,
        mode: policy.starting_mode(),
        ask_policy: config.ask_policy,
        clock: config.clock.clone(),
        scope_limits,
        scopes,
        tracer: start_tracer(config)?,
        placement: cluster.map(|c| c.nodes.clone() as Arc<dyn crate::execute::Placement>),
    })
}

/// What faces the client, over a started pipeline: client tools and the Agent tool wired to
/// the `execute` exchange, SessionStart hooks run, and the dispatcher that admits calls.
async fn front(
    pipeline: Arc<Pipeline>,
    config: &Config,
    registry: &Arc<Registry>,
    agent_tool: &crate::scope::agent_tool::AgentTool,
    tool_state: &ToolState,
) -> (Dispatcher, Arc<ClientTools>) {
    let exchange = Exchange::new(pipeline.emitter.clone(), pipeline.client_waits().clone());
    let exchange = Arc::new(exchange);
    agent_tool.connect(
        pipeline.scopes.clone(),
        exchange.clone(),
        pipeline.hooks.clone(),
        pipeline.emitter.clone(),
    );
    let client_tools = Arc::new(ClientTools::new(registry.clone(), exchange));
    // Before any call is accepted, as the reference runs SessionStart before the first turn.
    pipeline
        .hooks
        .session_start(crate::supervisor::mode_name(pipeline.mode))
        .await;
    let dispatcher = Dispatcher::new(
        pipeline,
        Limits {
            capacity: config.max_in_flight + config.max_queued,
            max_parallel: config.max_parallel,
            max_parked: config.max_parked,
        },
    );
    // Before any input, so before any scope starts.
    dispatcher
        .pipeline()
        .scopes
        .listen(Arc::new(ScopeFollowers {
            files: tool_state.clone(),
            parked: dispatcher.parked_sweeper(),
        }));
    (dispatcher, client_tools)
}

impl Runtime {
    /// Builds and starts a runtime. Messages for the client arrive in the returned outbox; it
    /// ends once the runtime is shut down and every message is out. Read it steadily: a call's
    /// admission place is given back only when its result has been taken from the outbox.
    pub async fn start(config: Config) -> Result<(Self, Outbox), StartError> {
        let cwd = working_dir(&config)?;
        let mut session = Session::new(cwd.clone(), PathBuf::new());
        session.paths_on_nodes = config.cluster.is_some();
        let (output_dir, temp_output) = output_folder(&config.output_dir, &session.id, &cwd)?;
        session.output_dir = output_dir.clone();
        session.output_dir_temporary = temp_output.is_some();
        let settings = &config.settings;

        let tool_state = ToolState::new(
            settings.require_read_before_edit,
            output_dir.join("checkpoints"),
        );
        let (emitter, rx) = Emitter::channel();
        // Every MCP server answers or times out before the first call is read.
        let mcp_events = mcp_event_sink(emitter.clone());
        let started = crate::mcp::McpServers::start(
            settings,
            &config.mcp,
            &cwd,
            &settings.env_scrub,
            mcp_events,
        )
        .await?;
        let mcp = started.servers;
        let agent_tool = crate::scope::agent_tool::AgentTool::new();
        let sandbox = crate::sandbox::Sandbox::start(settings, &cwd, &session.home).await?;
        if let Some(sandbox) = &sandbox.sandbox {
            emitter.send(ServerMessage::event("sandbox", sandbox.event()));
            session.sandbox = Some(sandbox.clone() as Arc<dyn crate::session::ShellSandbox>);
        }
        let (policy, registry, mut warnings) = build_policy_and_registry(
            &config,
            &cwd,
            Some(&output_dir),
            &tool_state,
            &agent_tool,
            started.tools,
            session.sandbox.clone(),
        )?;
        warnings.extend(started.warnings);
        warnings.extend(sandbox.warnings);
        let scopes = Arc::new(
            scope_table(settings, &cwd, Some(&output_dir), &policy, &mut warnings)?
                .with_nodes(config.cluster.is_some()),
        );

        child_environment(&mut session, settings);
        session.guard = policy.clone();
        let limits = output_limits(settings, &mut warnings);
        let session = Arc::new(session);

        let hook_config = hook_config(&config, &session)?;
        warnings.extend(hook_config.warnings());
        report_warnings(config.strict_settings, &warnings)?;
        let hooks = spawn_hooks(hook_config, &config, &session, &policy, &emitter).await?;
        let hello_limits = limits_for_hello(&config, &limits);
        let cluster = start_cluster(&config, &emitter, &sandbox.sandbox).await?;
        let registry = Arc::new(registry);
        // Weak: the registry holds the servers' tools, which hold their server.
        let weak = Arc::downgrade(&registry);
        mcp.attach(Arc::new(move |group: &str, tools| {
            weak.upgrade()
                .map(|r| r.set_group(group, tools))
                .unwrap_or_default()
        }));
        warn_unmatched_mcp_selection(&config.selection, &registry);
        let stages = spawn_stages(
            &registry,
            &session,
            &policy,
            hooks,
            limits,
            output_dir,
            temp_output.is_some(),
        )
        .await?;
        let pipeline = Pipeline::new(
            stages,
            session.clone(),
            emitter,
            pipeline_options(&config, &policy, scopes, cluster.as_ref())?,
        );
        let pipeline = Arc::new(pipeline);
        if let Some(sandbox) = &sandbox.sandbox {
            sandbox.set_network_asker(network_asker(&pipeline));
        }
        let (dispatcher, client_tools) =
            front(pipeline, &config, &registry, &agent_tool, &tool_state).await;
        Ok((
            Self {
                dispatcher,
                client_tools,
                session,
                mcp,
                registry,
                hello_limits,
                format: config.format,
                tool_state,
                cluster,
                _temp_output: temp_output,
            },
            rx,
        ))
    }

    /// Handles one client message. A call is accepted at once, and admitted when a place is
    /// free; this waits only while the parked queue is full. Answer permission requests from
    /// another task than the one submitting, or a full queue can wait on them forever.
    pub async fn submit(&self, msg: ClientMessage) {
        match msg {
            ClientMessage::Hello { client } => {
                tracing::debug!(client = client.as_deref().unwrap_or("-"), "hello");
                let hello = ServerMessage::Hello {
                    protocol: crate::protocol::PROTOCOL_VERSION,
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    tools: self.registry.available(),
                    limits: self.hello_limits.clone(),
                };
                // An answer to an input line: it counts toward the reader's backlog.
                self.dispatcher.pipeline().emitter.send_reply(hello);
            }
            ClientMessage::Rewind { to } => self.rewind(to).await,
            ClientMessage::ListTools { format } => {
                let format = format.unwrap_or(self.format);
                let list = crate::formats::tool_list(format, &self.tool_definitions());
                let fields = match list.to_message_fields(format) {
                    serde_json::Value::Object(m) => m,
                    _ => serde_json::Map::new(),
                };
                // An answer to an input line: it counts toward the reader's backlog.
                self.dispatcher
                    .pipeline()
                    .emitter
                    .send_reply(ServerMessage::Tools(crate::protocol::EventBody(fields)));
            }
            ClientMessage::RegisterTools { tools } => {
                let answer = self.client_tools.register(tools);
                self.report_tools_change(answer);
            }
            ClientMessage::UnregisterTools { names } => {
                let answer = self.client_tools.unregister(&names);
                self.report_tools_change(answer);
            }
            ClientMessage::ExecuteResult(result) => self.answer_execute(result),
            msg @ (ClientMessage::AgentStart(_) | ClientMessage::AgentEnd { .. }) => {
                self.agents(msg)
            }
            msg => self.dispatcher.submit(msg).await,
        }
    }

    /// Starts or ends an agent scope (`agent_start`, `agent_end`), answering with an
    /// `agent_started` / `agent_ended` event or an error line. Never waits.
    pub fn agents(&self, msg: ClientMessage) {
        let pipeline = self.dispatcher.pipeline();
        match msg {
            ClientMessage::AgentStart(start) => {
                let (scopes, out, hooks) = (&pipeline.scopes, &pipeline.emitter, &pipeline.hooks);
                crate::scope::control::start(scopes, out, hooks, start, |id| {
                    self.dispatcher.call_cancel(id)
                });
            }
            ClientMessage::AgentEnd {
                agent_id,
                last_assistant_message,
            } => {
                let (scopes, out, hooks) = (&pipeline.scopes, &pipeline.emitter, &pipeline.hooks);
                let last = last_assistant_message.as_deref();
                crate::scope::control::end(scopes, out, hooks, &agent_id, last);
            }
            _ => {}
        }
    }

    /// Ends every live agent scope (end of input, cancel-all signals): no call can come for
    /// them any more, so their unfinished calls are cancelled, one result each.
    pub fn end_agents(&self) {
        let pipeline = self.dispatcher.pipeline();
        crate::scope::control::end_all(&pipeline.scopes, &pipeline.emitter, &pipeline.hooks);
    }

    /// Answers `register_tools` / `unregister_tools`: a `tools_changed` event, or an error line
    /// naming each refused tool and why.
    fn report_tools_change(&self, answer: Result<GroupChange, RegisterError>) {
        let message = match answer {
            Ok(change) => ServerMessage::event(
                "tools_changed",
                serde_json::json!({"added": change.added, "removed": change.removed}),
            ),
            Err(e) => ServerMessage::error(e.to_string(), None),
        };
        // An answer to an input line: it counts toward the reader's backlog.
        self.dispatcher.pipeline().emitter.send_reply(message);
    }

    /// Hands an `execute_result` to the call waiting for it; an answer no call waits for (an
    /// unknown `request_id`, a second answer, an answer after a cancel or a timeout) gets an
    /// error line and changes nothing. Never waits: it is read even while admission is full.
    pub fn answer_execute(&self, result: crate::protocol::ExecuteResult) {
        if let Err(e) = self.client_tools.exchange().answer(result) {
            self.dispatcher
                .pipeline()
                .emitter
                .send_reply(ServerMessage::error(e.to_string(), None));
        }
    }

    /// Ends the call waiting under `request_id` `failed`, saying `why` (its answer could not be
    /// read); false if no call waits under that id.
    pub(crate) fn fail_execute(&self, request_id: String, why: String) -> bool {
        let answer = crate::protocol::ExecuteResult {
            request_id,
            content: crate::protocol::ExecuteContent::Text(why),
            is_error: true,
        };
        self.client_tools.exchange().answer(answer).is_ok()
    }

    /// Registers tools the client runs, as `register_tools` does: all of them or none. Each call
    /// of one walks the whole pipeline; at execution the outbox receives a
    /// [`ServerMessage::Execute`], answered by submitting
    /// [`ClientMessage::ExecuteResult`] (or through [`Runtime::answer_execute`]).
    pub fn register_tools(
        &self,
        tools: Vec<crate::protocol::ClientToolSpec>,
    ) -> Result<GroupChange, RegisterError> {
        self.client_tools.register(tools)
    }

    /// Registers a client tool whose calls an async function of yours runs, in this process.
    /// The call walks the whole pipeline (coercion, schema, hooks, the permission decision —
    /// rules name it like any tool, and with none it asks — PostToolUse hooks, the output
    /// budget); `run` gets the input as approved. toolrt owns cancellation and the time limit
    /// (`timeout_ms`, else [`crate::client_tools::DEFAULT_TIMEOUT`]): it drops the future and
    /// answers `cancelled` or `timed_out`. The same names are refused as for `register_tools`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::json;
    /// use toolrt::{
    ///     AskPolicy, ClientMessage, ClientToolSpec, Config, Outcome, OutputDir, Runtime,
    ///     ServerMessage, ToolCall, ToolOutput,
    /// };
    ///
    /// # fn main() {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let run = async {
    ///     let mut config = Config::new(dir.path().to_path_buf());
    ///     config.output_dir = OutputDir::Temporary;
    ///     // A client tool asks unless a rule allows it.
    ///     config.allowed_tools = vec!["Shout".into()];
    ///     config.ask_policy = AskPolicy::Deny;
    ///     let (runtime, mut outbox) = Runtime::start(config).await.expect("a valid configuration");
    ///     let schema = json!({
    ///         "type": "object",
    ///         "properties": {"text": {"type": "string"}},
    ///         "required": ["text"],
    ///     });
    ///     runtime
    ///         .register_tool_fn(ClientToolSpec::new("Shout", schema), |input, _ctx| async move {
    ///             let text = input["text"].as_str().unwrap_or_default();
    ///             ToolOutput::success(text.to_uppercase())
    ///         })
    ///         .expect("the name is free");
    ///
    ///     let call = ToolCall::new("c1", "Shout", json!({"text": "hello"}));
    ///     runtime.submit(ClientMessage::ToolUse(call)).await;
    ///     let result = loop {
    ///         match outbox.recv().await {
    ///             Some(ServerMessage::ToolResult(result)) => break result,
    ///             Some(_) => continue,
    ///             None => panic!("the outbox closed before the result"),
    ///         }
    ///     };
    ///     assert_eq!((result.outcome, result.content.as_str()), (Outcome::Success, "HELLO"));
    ///     runtime.shutdown().await;
    /// };
    /// tokio::runtime::Builder::new_current_thread()
    ///     .enable_all()
    ///     .build()
    ///     .unwrap()
    ///     .block_on(run);
    /// # }
    /// ```
    pub fn register_tool_fn<F, Fut>(
        &self,
        spec: crate::protocol::ClientToolSpec,
        run: F,
    ) -> Result<GroupChange, RegisterError>
    where
        F: Fn(crate::call::Input, crate::tool::ToolContext) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = crate::tool::ToolOutput> + Send + 'static,
    {
        let run: crate::client_tools::ToolFn =
            Arc::new(move |input, ctx| Box::pin(run(input, ctx)));
        self.client_tools.register_fn(spec, run)
    }

    /// Removes client tools (registered either way): all of them or none. Calls in flight
    /// finish with the tool they resolved; later calls are `unavailable`.
    pub fn unregister_tools(&self, names: &[String]) -> Result<GroupChange, RegisterError> {
        self.client_tools.unregister(names)
    }

    /// Restores the files changed by call `to` and every later call (file I/O on the blocking
    /// pool), then emits `rewound`, or an error line naming what went wrong.
    async fn rewind(&self, to: String) {
        let state = self.tool_state.clone();
        let target = to.clone();
        let outcome = tokio::task::spawn_blocking(move || state.rewind(&target)).await;
        let message = match outcome {
            Ok(Ok(rewound)) => {
                let mut body = serde_json::json!({
                    "to": to,
                    "files": crate::protocol::paths_value(&rewound.files),
                });
                // Only when some file was left as it is (a symlink now on its way).
                if !rewound.not_restored.is_empty() {
                    let left: Vec<_> = (rewound.not_restored.iter())
                        .map(|(path, why)| {
                            serde_json::json!({"path": path.to_string_lossy(), "reason": why})
                        })
                        .collect();
                    body["not_restored"] = left.into();
                }
                ServerMessage::event("rewound", body)
            }
            Ok(Err(e)) => ServerMessage::error(format!("rewind to {to:?}: {e}"), None),
            Err(_) => ServerMessage::error(
                format!("rewind to {to:?}: internal error while restoring files"),
                None,
            ),
        };
        // An answer to an input line: it counts toward the reader's backlog.
        self.dispatcher.pipeline().emitter.send_reply(message);
    }

    /// Adds, replaces or removes tools while the runtime serves: the tools of `group` become
    /// `tools` (an empty list removes the group). `--tools` selection, aliases and bare-name
    /// deny rules apply to them as to the tools known at start-up; a tool whose name is taken
    /// (by a built-in, another group or an alias) or whose schema does not compile is left out
    /// and reported in [`GroupChange::skipped`]. Calls already past name resolution keep the
    /// tool they resolved and finish with it; calls resolved after a removal are answered
    /// `unavailable`.
    pub fn set_tools(&self, group: &str, tools: Vec<Arc<dyn Tool>>) -> GroupChange {
        let change = self.registry.set_group(group, tools);
        tracing::debug!(group, added = ?change.added, removed = ?change.removed, skipped = ?change.skipped, "tools changed");
        change
    }

    /// Every tool that exists now (built-ins, aliases, MCP and client tools) as definitions
    /// for a model, sorted by name: [`crate::formats::tool_list`] gives them an API's shape.
    pub fn tool_definitions(&self) -> Vec<crate::formats::ToolDef> {
        listing::definitions(&self.registry)
    }

    /// The tool a call's name resolves to now (an alias too), if it exists.
    pub(crate) fn resolve_tool(&self, name: &str) -> Option<Arc<crate::registry::ToolEntry>> {
        match self.registry.resolve(name) {
            crate::registry::Resolution::Found(entry) => Some(entry),
            crate::registry::Resolution::Unavailable { .. } => None,
        }
    }

    /// The session's format (`--format`).
    pub fn format(&self) -> crate::formats::Format {
        self.format
    }

    /// The names of the tools that exist now, sorted.
    pub fn tools(&self) -> Vec<String> {
        self.registry.available()
    }

    /// The dispatcher (cancellation, idleness).
    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }

    /// The session.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// Every configured MCP server's last reported status (the `mcp_server` events' content).
    pub fn mcp_servers(&self) -> Vec<crate::mcp::ServerStatus> {
        self.mcp.statuses()
    }

    /// What the built-in tools remember (rewind, background tasks).
    pub fn tool_state(&self) -> &ToolState {
        &self.tool_state
    }

    /// The client can no longer answer: waiting and future permission asks are denied, and
    /// calls waiting for an `execute_result` (or starting one later) end `cancelled`, each with
    /// an `execute_cancel`.
    pub fn close_asks(&self) {
        self.dispatcher.pipeline().close_asks();
        self.client_tools.exchange().close();
    }

    /// Finishes everything in flight, runs SessionEnd hooks, gives async hooks still running
    /// a few seconds, stops the stages and closes the message stream.
    pub async fn shutdown(self) {
        self.dispatcher.drain().await;
        let pipeline = self.dispatcher.pipeline();
        pipeline
            .hooks
            .session_end(
                crate::supervisor::mode_name(pipeline.mode),
                ASYNC_HOOK_GRACE,
                &self.dispatcher.cancelled_all(),
            )
            .await;
        // After every call has its result: no MCP call is in flight any more.
        self.mcp.shutdown().await;
        if let Some(cluster) = &self.cluster {
            cluster.stop();
        }
        pipeline.stop();
        // Background tasks end with the session.
        self.tool_state.shutdown();
        // Every call has ended: its spans are queued; send them.
        #[cfg(feature = "otel")]
        if let Some(tracer) = &pipeline.tracer {
            tracer.shutdown(OTEL_FLUSH_GRACE).await;
        }
    }
}

/// The Bash sandbox proxy's way to ask about a host: the pipeline's ask path (held weakly: the
/// sandbox lives in the session, which the pipeline holds).
fn network_asker(pipeline: &Arc<Pipeline>) -> crate::sandbox::proxy::NetworkAsker {
    let weak = Arc::downgrade(pipeline);
    Arc::new(move |ask| {
        let pipeline = weak.upgrade();
        Box::pin(async move {
            match pipeline {
                Some(p) => {
                    crate::supervisor::ask_network(
                        &p,
                        &ask.tool_use_id,
                        &ask.host,
                        ask.port,
                        &ask.cancel,
                    )
                    .await
                }
                None => false,
            }
        })
    })
}
