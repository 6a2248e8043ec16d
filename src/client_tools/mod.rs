//! Client tools: tools the orchestrator defines and runs itself (docs/SEMANTICS.md, "Client
//! tools"). A call of one walks the whole pipeline like any tool's — coercion, schema,
//! PreToolUse hooks, the permission decision, PostToolUse hooks, the output budget — and only
//! its execution is the client's: toolrt writes `execute` and waits for `execute_result`
//! (`exchange`). A library user registers an async function instead ([`ToolFn`]).
//!
//! Registration is all or nothing: a tool whose name is invalid or taken (a built-in, an MCP
//! tool, an alias, another client tool), whose schema does not compile, or that would pass the
//! bounds below refuses the whole list, and the refusal names each such tool and why.
//! `--tools` does not filter client tools (registering one selects it); a bare-name deny rule
//! removes one as it removes any tool.

pub(crate) mod exchange;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::Value;

pub(crate) use exchange::Exchange;

use crate::call::Input;
use crate::deadlines::Deadlines;
use crate::protocol::ClientToolSpec;
use crate::registry::{GroupChange, Registry, Selected};
use crate::tool::{Tool, ToolContext, ToolOutput};

/// How long toolrt waits for the answer to one call of a client tool registered without
/// `timeout_ms`: ten minutes.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// The longest `timeout_ms` a client tool may ask for: a day.
pub(crate) const MAX_TIMEOUT_MS: u64 = 24 * 60 * 60 * 1000;

/// Most client tools registered at once.
pub(crate) const MAX_TOOLS: usize = 1_000;

/// Most bytes the registered client tools' descriptions and schemas may hold together.
pub(crate) const MAX_TOTAL_BYTES: usize = 64 << 20;

/// Longest client tool name, in characters (the model APIs' own limit).
pub(crate) const MAX_NAME_CHARS: usize = 64;

/// The registry group of client tools.
const GROUP: &str = "client";

/// An async function that runs a client tool's calls inside the library user's process. It
/// gets the input as checked, hooked and approved; cancellation and the time limit are
/// toolrt's (the future is dropped), and its output goes through the output budget.
pub(crate) type ToolFn =
    Arc<dyn Fn(Input, ToolContext) -> BoxFuture<'static, ToolOutput> + Send + Sync>;

/// Who runs a client tool's calls.
enum Runner {
    /// The client, through `execute` / `execute_result`.
    Wire(Arc<Exchange>),
    /// A function of the library user's; its time limits are kept with the wire calls'.
    Fn(ToolFn, Arc<Deadlines>),
}

/// A client tool as a toolrt tool. Its calls are matched by permission rules by name only
/// (toolrt cannot know what they act on), so they ask unless a rule allows them.
pub(crate) struct ClientTool {
    spec: ClientToolSpec,
    timeout: Duration,
    runner: Runner,
}

impl std::fmt::Debug for ClientTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTool")
            .field("name", &self.spec.name)
            .finish()
    }
}

#[async_trait]
impl Tool for ClientTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn input_schema(&self) -> Value {
        self.spec.input_schema.clone()
    }

    /// A call the client runs only awaits its answer; a library user's function may compute.
    fn awaits_io_only(&self) -> bool {
        matches!(self.runner, Runner::Wire(_))
    }

    /// As registered; by default what `read_only` says.
    fn is_concurrency_safe(&self, _input: &Input) -> bool {
        self.spec.concurrency_safe.unwrap_or(self.spec.read_only)
    }

    /// `read_only` as registered; nothing else is known of what the client does.
    fn hints(&self) -> crate::tool::Hints {
        crate::tool::Hints {
            read_only: self.spec.read_only.then_some(true),
            ..Default::default()
        }
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        match &self.runner {
            Runner::Wire(exchange) => {
                exchange
                    .execute(&self.spec.name, input, &ctx, self.timeout)
                    .await
            }
            Runner::Fn(run, deadlines) => {
                let name = &self.spec.name;
                let deadline = deadlines.start(self.timeout);
                tokio::select! {
                    biased;
                    out = run(input, ctx.clone()) => out,
                    _ = ctx.cancel.cancelled() => ToolOutput::cancelled(format!("The call was cancelled while {name} ran.")),
                    _ = deadline.expired() => ToolOutput::timed_out(format!("{name} timed out after {} ms.", self.timeout.as_millis())),
                }
            }
        }
    }
}

/// A registration that was refused: nothing of it was registered. `Display` names every
/// refused tool and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} refused, nothing was changed: {}", reasons.join("; "))]
pub struct RegisterError {
    /// `register_tools` or `unregister_tools`.
    pub what: &'static str,
    /// One line per refused tool, each starting with its name.
    pub reasons: Vec<String>,
}

/// The client tools of a runtime: registration and the wire exchange.
pub(crate) struct ClientTools {
    registry: Arc<Registry>,
    exchange: Arc<Exchange>,
    /// Each registered tool's size (description and schema), for [`MAX_TOTAL_BYTES`]; the lock
    /// also serialises registrations.
    sizes: Mutex<HashMap<String, usize>>,
}

impl std::fmt::Debug for ClientTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTools")
            .field("exchange", &self.exchange)
            .finish()
    }
}

impl ClientTools {
    /// Client tools joining `registry`, executed on the wire through `exchange`.
    pub(crate) fn new(registry: Arc<Registry>, exchange: Arc<Exchange>) -> Self {
        Self {
            registry,
            exchange,
            sizes: Mutex::new(HashMap::new()),
        }
    }

    /// The wire exchange (answers, closing).
    pub(crate) fn exchange(&self) -> &Arc<Exchange> {
        &self.exchange
    }

    /// Registers tools the client runs (`register_tools`): all of them, or none.
    pub(crate) fn register(
        &self,
        specs: Vec<ClientToolSpec>,
    ) -> Result<GroupChange, RegisterError> {
        let tools = specs
            .into_iter()
            .map(|spec| (spec, Runner::Wire(self.exchange.clone())))
            .collect();
        self.add(tools)
    }

    /// Registers a tool whose calls `run` executes in this process.
    pub(crate) fn register_fn(
        &self,
        spec: ClientToolSpec,
        run: ToolFn,
    ) -> Result<GroupChange, RegisterError> {
        let deadlines = self.exchange.deadlines().clone();
        self.add(vec![(spec, Runner::Fn(run, deadlines))])
    }

    fn add(&self, tools: Vec<(ClientToolSpec, Runner)>) -> Result<GroupChange, RegisterError> {
        let refuse = |reasons| RegisterError {
            what: "register_tools",
            reasons,
        };
        let mut sizes = self.sizes.lock().unwrap_or_else(|e| e.into_inner());
        let mut reasons = Vec::new();
        let mut named: Vec<(String, usize)> = Vec::with_capacity(tools.len());
        let mut built: Vec<Arc<dyn Tool>> = Vec::with_capacity(tools.len());
        for (spec, runner) in tools {
            if let Err(why) = check(&spec) {
                reasons.push(format!("{}: {why}", shown_name(&spec.name)));
                continue;
            }
            named.push((
                spec.name.clone(),
                spec.description.len() + spec.input_schema.to_string().len(),
            ));
            let timeout = Duration::from_millis(
                spec.timeout_ms
                    .unwrap_or(DEFAULT_TIMEOUT.as_millis() as u64),
            );
            built.push(Arc::new(ClientTool {
                spec,
                timeout,
                runner,
            }));
        }
        if !reasons.is_empty() {
            return Err(refuse(reasons));
        }
        if sizes.len() + built.len() > MAX_TOOLS {
            return Err(refuse(vec![format!(
                "at most {MAX_TOOLS} client tools may be registered at once ({} are, {} more asked for)",
                sizes.len(),
                built.len()
            )]));
        }
        let added_bytes: usize = named.iter().map(|(_, bytes)| bytes).sum();
        let total: usize = sizes.values().sum::<usize>() + added_bytes;
        if total > MAX_TOTAL_BYTES {
            return Err(refuse(vec![format!(
                "the client tools' descriptions and schemas may hold at most {MAX_TOTAL_BYTES} bytes together; with these they would hold {total}"
            )]));
        }
        let change = self
            .registry
            .add_to_group(GROUP, built, Selected::Always)
            .map_err(refuse)?;
        sizes.extend(named);
        tracing::debug!(added = ?change.added, "client tools registered");
        Ok(change)
    }

    /// Removes client tools (`unregister_tools`): all of them, or none. Calls in flight finish
    /// with the tool they resolved; later calls are `unavailable`.
    pub(crate) fn unregister(&self, names: &[String]) -> Result<GroupChange, RegisterError> {
        let mut sizes = self.sizes.lock().unwrap_or_else(|e| e.into_inner());
        let change = self
            .registry
            .remove_from_group(GROUP, names)
            .map_err(|reasons| RegisterError {
                what: "unregister_tools",
                reasons,
            })?;
        for name in names {
            sizes.remove(name);
        }
        tracing::debug!(removed = ?change.removed, "client tools unregistered");
        Ok(change)
    }

    #[cfg(test)]
    /// The names of the client tools registered now (whether or not a deny rule removes
    /// them), sorted.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .sizes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect();
        names.sort_unstable();
        names
    }
}

/// A name for an error line: as given when short, else its start.
fn shown_name(name: &str) -> String {
    if name.chars().count() <= MAX_NAME_CHARS {
        format!("{name:?}")
    } else {
        let start: String = name.chars().take(MAX_NAME_CHARS).collect();
        format!("{start:?}…")
    }
}

/// What toolrt checks of a client tool before the registry does (names taken, the schema
/// compiling): the name's form, names the rule language reserves, the schema's top level,
/// the time limit.
fn check(spec: &ClientToolSpec) -> Result<(), String> {
    let name = &spec.name;
    let valid = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid {
        return Err(format!(
            "invalid name: a tool name is 1 to {MAX_NAME_CHARS} characters of A-Z, a-z, 0-9, _ and -"
        ));
    }
    if name.starts_with("mcp__") {
        return Err("invalid name: names starting with mcp__ are MCP servers' tools".into());
    }
    if crate::permission::has_specifier_grammar(name) {
        return Err(format!(
            "the name is reserved: permission rules {name}(…) have a grammar of their own"
        ));
    }
    match spec.input_schema.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        _ => {
            return Err(
                "invalid input schema: its top level must say \"type\": \"object\" (a call's input is an object)"
                    .into(),
            );
        }
    }
    if spec.timeout_ms.is_some_and(|ms| ms > MAX_TIMEOUT_MS) {
        return Err(format!(
            "timeout_ms may be at most {MAX_TIMEOUT_MS} (a day)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Naming, Resolution, Selection};
    use crate::tools::noop::Noop;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn tools(selection: &str) -> ClientTools {
        let aliases: BTreeMap<String, String> = [("Shell".to_string(), "Bash".to_string())].into();
        let registry = Registry::build(
            vec![
                Arc::new(Noop::named("Bash")),
                Arc::new(Noop::named("Read")),
                Arc::new(Noop::named("TaskOutput")),
            ],
            Naming {
                selection: &Selection::parse(selection),
                aliases: &aliases,
                alias_files: &BTreeMap::new(),
                late_prefixes: &["mcp__".to_string()],
            },
            |n| n == "Denied",
        )
        .unwrap();
        let (emitter, _) = crate::emit::Emitter::channel();
        let exchange = Arc::new(Exchange::new(emitter, Arc::default()));
        ClientTools::new(Arc::new(registry), exchange)
    }

    fn spec(name: &str) -> ClientToolSpec {
        ClientToolSpec::new(name, json!({"type": "object"}))
    }

    #[test]
    fn a_schema_error_does_not_quote_a_long_value_whole() {
        let t = tools("Read");
        let long = "s".repeat(1 << 20);
        for schema in [
            json!({"type": "object", "properties": {"a": {"type": long}}}),
            json!({"type": "object", "properties": {"a": {"$ref": long}}}),
        ] {
            let err = t
                .register(vec![ClientToolSpec::new("Big", schema)])
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("tool Big: invalid input schema"),
                "{}",
                &err[..err.len().min(600)]
            );
            assert!(err.contains("bytes cut]"), "{}", &err[..err.len().min(600)]);
            assert!(err.len() < 1000, "{} bytes: {}", err.len(), &err[..600]);
        }
    }

    #[test]
    fn a_refusal_names_each_tool_and_registers_nothing() {
        let t = tools("Read");
        let long = "x".repeat(65);
        for (specs, needles) in [
            (
                vec![spec("Ok"), spec("TaskOutput")],
                vec!["TaskOutput: another tool already has this name"],
            ),
            (vec![spec("Bash")], vec!["\"Bash\": the name is reserved"]),
            (
                vec![spec("Ok"), spec("Shell")],
                vec!["Shell: an alias has this name"],
            ),
            (
                vec![spec("Ok"), spec("Ok")],
                vec!["Ok: another tool already has this name"],
            ),
            (
                vec![spec("Ok"), spec("bad name")],
                vec!["\"bad name\": invalid name"],
            ),
            (vec![spec(&long)], vec!["invalid name", "…"]),
            (vec![spec("")], vec!["invalid name"]),
            (
                vec![spec("mcp__srv__x")],
                vec!["mcp__ are MCP servers' tools"],
            ),
            (
                vec![spec("Agent"), spec("MultiEdit")],
                vec![
                    "\"Agent\": the name is reserved",
                    "\"MultiEdit\": the name is reserved",
                ],
            ),
            (
                vec![ClientToolSpec::new("Arr", json!({"type": "array"}))],
                vec!["\"Arr\": invalid input schema: its top level"],
            ),
            (
                vec![ClientToolSpec::new(
                    "Bad",
                    json!({"type": "object", "properties": {"a": {"type": 12}}}),
                )],
                vec!["tool Bad: invalid input schema"],
            ),
            (
                vec![ClientToolSpec {
                    timeout_ms: Some(MAX_TIMEOUT_MS + 1),
                    ..spec("Slow")
                }],
                vec!["timeout_ms may be at most"],
            ),
        ] {
            let err = t.register(specs.clone()).unwrap_err();
            for needle in needles {
                assert!(err.to_string().contains(needle), "{specs:?}: {err}");
            }
            assert!(
                err.to_string()
                    .starts_with("register_tools refused, nothing was changed"),
                "{err}"
            );
            assert!(t.names().is_empty(), "{specs:?} registered something");
            assert!(matches!(
                t.registry.resolve("Ok"),
                Resolution::Unavailable { .. }
            ));
        }
    }

    #[test]
    fn client_tools_ignore_the_selection_but_not_deny_rules_and_come_and_go() {
        let t = tools("Read");
        let change = t.register(vec![spec("Lookup"), spec("Denied")]).unwrap();
        assert_eq!(change.added, ["Lookup"]);
        assert_eq!(t.names(), ["Denied", "Lookup"]);
        assert!(matches!(t.registry.resolve("Lookup"), Resolution::Found(_)));
        assert!(matches!(
            t.registry.resolve("Denied"),
            Resolution::Unavailable { .. }
        ));
        let err = t.unregister(&["Lookup".into(), "Nope".into()]).unwrap_err();
        assert_eq!(err.reasons, ["Nope: no such tool was registered"]);
        assert!(matches!(t.registry.resolve("Lookup"), Resolution::Found(_)));
        let err = t.unregister(&["Read".into()]).unwrap_err();
        assert_eq!(err.reasons, ["Read: no such tool was registered"]);
        let change = t.unregister(&["Lookup".into(), "Denied".into()]).unwrap();
        assert_eq!(change.removed, ["Lookup"]);
        assert!(t.names().is_empty());
        // The name is free again.
        assert_eq!(t.register(vec![spec("Lookup")]).unwrap().added, ["Lookup"]);
    }

    #[test]
    fn the_number_of_tools_is_bounded() {
        let t = tools("default");
        let many: Vec<ClientToolSpec> = (0..MAX_TOOLS).map(|i| spec(&format!("T{i}"))).collect();
        t.register(many).unwrap();
        let err = t.register(vec![spec("OneMore")]).unwrap_err();
        assert!(
            err.to_string().contains("at most 1000 client tools"),
            "{err}"
        );
    }

    #[test]
    fn concurrency_safety_follows_read_only_unless_given() {
        let tool = |concurrency_safe, read_only| ClientTool {
            spec: ClientToolSpec {
                concurrency_safe,
                read_only,
                ..spec("T")
            },
            timeout: DEFAULT_TIMEOUT,
            runner: Runner::Fn(
                Arc::new(|_, _| Box::pin(async { ToolOutput::success("") })),
                Arc::default(),
            ),
        };
        for (safe, read_only, expected) in [
            (None, false, false),
            (None, true, true),
            (Some(false), true, false),
            (Some(true), false, true),
        ] {
            assert_eq!(
                tool(safe, read_only).is_concurrency_safe(&Input::new()),
                expected,
                "{safe:?} {read_only}"
            );
        }
    }
}
