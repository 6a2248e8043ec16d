//! The `Tool` trait: what a tool is to the pipeline, and what it gets when it runs.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::call::Input;
use crate::session::Session;

/// How a tool run ended, before the output budget shapes it into a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolStatus {
    /// The tool did what was asked.
    Success,
    /// The tool ran and reported an error the model can act on.
    Failed,
    /// The tool ran past its time limit and was stopped.
    TimedOut,
    /// The tool saw its cancellation token and stopped.
    Cancelled,
}

/// What a tool hands back.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// How the run ended.
    pub status: ToolStatus,
    /// The text the model should see (before the output budget).
    pub content: String,
    /// A file already holding the complete output, when the tool kept only a window of it in
    /// memory (Bash spills long output as it arrives); the budget points at it instead of
    /// writing a second copy.
    pub full_output: Option<FullOutput>,
    /// What hooks are told of the run, built only when [`ToolContext::hook_response`] is set:
    /// on success the PostToolUse `tool_response` object, in the field names of the reference
    /// CLI's published output type of this tool (docs/SEMANTICS.md §4.3); on failure a string,
    /// the PostToolUseFailure `error`. `None`: hooks are given `content`.
    pub response: Option<Value>,
    /// Parts that are not plain text (an MCP server's images, audio, resources, structured
    /// content), passed to the client beside `content`; None for every built-in tool.
    pub attachments: Option<Box<Attachments>>,
}

/// What an output carries besides its text (docs/PROTOCOL.md, "MCP results").
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Attachments {
    /// Content blocks as the MCP server sent them (`content_blocks` on the wire); empty when
    /// every block was text.
    pub blocks: Vec<Value>,
    /// The server's `structuredContent` (`structured_content` on the wire).
    pub structured: Option<Value>,
}

impl Attachments {
    /// What they add to a result of `text_bytes` against its budget, in bytes of JSON: every
    /// block, and the structured content as far as it is longer than the text (servers
    /// usually send the same data both ways).
    pub fn extra_size(&self, text_bytes: usize) -> usize {
        let size = |v: &Value| serde_json::to_string(v).map_or(0, |s| s.len());
        let blocks: usize = self.blocks.iter().map(size).sum();
        blocks
            + self
                .structured
                .as_ref()
                .map_or(0, |v| size(v).saturating_sub(text_bytes))
    }
}

/// A complete output a tool has already written to disk.
#[derive(Debug, Clone, PartialEq)]
pub struct FullOutput {
    /// Where it is.
    pub path: PathBuf,
    /// Its length in characters.
    pub chars: u64,
    /// Its number of lines.
    pub lines: u64,
}

impl ToolOutput {
    /// A successful output.
    pub fn success(content: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Success,
            content: content.into(),
            full_output: None,
            response: None,
            attachments: None,
        }
    }

    /// A failed output: the tool ran and reports an error.
    pub fn failed(content: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Failed,
            content: content.into(),
            full_output: None,
            response: None,
            attachments: None,
        }
    }

    /// An output ended by the call's cancellation.
    pub fn cancelled(content: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::Cancelled,
            content: content.into(),
            full_output: None,
            response: None,
            attachments: None,
        }
    }

    /// An output ended by the call's time limit.
    pub fn timed_out(content: impl Into<String>) -> Self {
        Self {
            status: ToolStatus::TimedOut,
            content: content.into(),
            full_output: None,
            response: None,
            attachments: None,
        }
    }

    /// This output with `response` as what hooks are told (see [`ToolOutput::response`]).
    pub fn with_response(mut self, response: Option<Value>) -> Self {
        self.response = response;
        self
    }
}

/// Which output budget applies to a tool (docs/SEMANTICS.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetClass {
    /// Bash: 30,000 characters on success.
    Shell,
    /// MCP tools: 25,000 tokens (100,000 characters).
    Mcp,
    /// Every other tool: 50,000 characters.
    Other,
}

/// What the permission engine needs to know about a tool (docs/SEMANTICS.md §3): which rules'
/// specifiers speak about its calls, where in the input their subject is, and whether it needs
/// no permission at all. A tool that says nothing ([`Access::default`]) is matched by its name
/// only: a bare `Tool` rule covers it, a deny or ask rule with a specifier covers every call
/// of it, and an allow rule with a specifier approves nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access<'a> {
    /// What the tool's calls act on, as rules see it.
    pub subject: Subject<'a>,
    /// Calls need no permission (deny and ask rules still apply), as `TaskOutput`'s. A path's
    /// or a command's tool is always judged by what it touches, so this does not apply to it.
    pub allowed_by_default: bool,
}

impl<'a> Access<'a> {
    /// A tool acting on the one file named in `field` (Read's, Write's, Edit's): a call
    /// without the field has no path.
    pub const fn file(field: &'a str, read_only: bool) -> Self {
        Self {
            subject: Subject::Path {
                field,
                read_only,
                default_cwd: false,
            },
            allowed_by_default: false,
        }
    }

    /// A search that only reads, under the folder named in `field` or, without it, the
    /// working directory (Glob's, Grep's).
    pub const fn search(field: &'a str) -> Self {
        Self {
            subject: Subject::Path {
                field,
                read_only: true,
                default_cwd: true,
            },
            allowed_by_default: false,
        }
    }

    /// A tool matched by its name only; `allowed_by_default`: its calls need no permission.
    pub const fn by_name(allowed_by_default: bool) -> Self {
        Self {
            subject: Subject::Name,
            allowed_by_default,
        }
    }
}

/// What an MCP client is told about a tool's effects (MCP's tool annotations: `readOnlyHint`,
/// `destructiveHint`, `idempotentHint`, `openWorldHint`). None is "not known": MCP's defaults
/// for an absent hint are the cautious ones (may write, may destroy, may reach the world).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hints {
    /// The tool changes nothing.
    pub read_only: Option<bool>,
    /// A change may destroy or overwrite what was there (meaningful when not read-only).
    pub destructive: Option<bool>,
    /// The same call twice has no further effect.
    pub idempotent: Option<bool>,
    /// The tool reaches outside the workspace (the network, any program).
    pub open_world: Option<bool>,
}

impl Hints {
    /// What a tool's [`Access`] says of its effects, and nothing more: a path tool reads or
    /// writes files of the workspace, a command runs any program, a URL reaches the network; a
    /// tool matched by name only is not known.
    pub fn from_access(access: Access<'_>) -> Self {
        match access.subject {
            Subject::Path {
                read_only: true, ..
            } => Self {
                read_only: Some(true),
                destructive: Some(false),
                idempotent: Some(true),
                open_world: Some(false),
            },
            Subject::Path {
                read_only: false, ..
            } => Self {
                read_only: Some(false),
                destructive: Some(true),
                idempotent: None,
                open_world: Some(false),
            },
            Subject::Command { .. } => Self {
                read_only: Some(false),
                destructive: Some(true),
                idempotent: Some(false),
                open_world: Some(true),
            },
            Subject::Url { .. } => Self {
                read_only: Some(true),
                destructive: Some(false),
                idempotent: Some(true),
                open_world: Some(true),
            },
            Subject::Subagent { .. } => Self {
                read_only: None,
                destructive: None,
                idempotent: Some(false),
                open_world: Some(true),
            },
            Subject::Name => Self::default(),
        }
    }
}

/// What a tool's calls act on, and so which rules govern them beside rules naming the tool.
/// Each field names the input field that holds the subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Subject<'a> {
    /// Nothing rules can look into: the tool is matched by name.
    #[default]
    Name,
    /// A file or folder path. A read-only tool is governed by `Read(…)` rules (an `Edit` allow
    /// grants it too; inside the workspace it needs no rule; plan mode allows it); any other by
    /// `Edit(…)` rules (acceptEdits allows it inside the workspace; protected paths always
    /// ask). Relative paths are taken from the working directory; a call without the field
    /// acts on the working directory when `default_cwd` is set, else it has no path.
    Path {
        /// The input field holding the path.
        field: &'a str,
        /// The tool only reads.
        read_only: bool,
        /// A call without the field acts on the working directory (a search's folder).
        default_cwd: bool,
    },
    /// A shell command, judged part by part and matched by `Bash(…)` rules.
    Command {
        /// The input field holding the command.
        field: &'a str,
    },
    /// A URL, matched by `WebFetch(domain:…)` rules.
    Url {
        /// The input field holding the URL.
        field: &'a str,
    },
    /// A subagent type, matched by `Agent(…)` rules.
    Subagent {
        /// The input field holding the type.
        field: &'a str,
    },
}

/// Where the progress updates of running calls go. The runtime's target sends each to the client
/// as a `progress` event of the call; the tool API does not know the wire format.
pub trait ProgressTarget: Send + Sync {
    /// Delivers `data` for call `id`; false if it was dropped (progress is best effort: the
    /// client may be reading slowly).
    fn send(&self, id: &Arc<str>, data: Value) -> bool;
    /// Whether an update of about `bytes` would be delivered now rather than dropped.
    fn has_room(&self, bytes: usize) -> bool;
}

/// A function as a progress target: every update delivered.
struct FnTarget<F>(F);

impl<F: Fn(Value) + Send + Sync> ProgressTarget for FnTarget<F> {
    fn send(&self, _id: &Arc<str>, data: Value) -> bool {
        (self.0)(data);
        true
    }
    fn has_room(&self, _bytes: usize) -> bool {
        true
    }
}

/// Where progress updates of one running call go: a shared target and the call's id, so a
/// call's sink costs no allocation (most calls never report progress).
#[derive(Clone)]
pub struct ProgressSink {
    to: Option<(Arc<dyn ProgressTarget>, Arc<str>)>,
}

impl ProgressSink {
    /// A sink calling `emit` with each update's `data`.
    pub fn new(emit: impl Fn(Value) + Send + Sync + 'static) -> Self {
        Self::to(Arc::new(FnTarget(emit)), Arc::from(""))
    }

    /// A sink sending the updates of call `id` to `target`.
    pub fn to(target: Arc<dyn ProgressTarget>, id: Arc<str>) -> Self {
        Self {
            to: Some((target, id)),
        }
    }

    /// A sink that drops every update.
    pub fn discard() -> Self {
        Self { to: None }
    }

    /// Report progress; `data` becomes the event's `data` field. Progress is best effort: while
    /// the client reads slowly and queued progress events fill their budget, an update is
    /// dropped and this returns false. A tool that streams text should check
    /// [`ProgressSink::has_room`] first and keep its text for a later update instead.
    pub fn send(&self, data: Value) -> bool {
        match &self.to {
            Some((target, id)) => target.send(id, data),
            None => true,
        }
    }

    /// Whether an update of about `bytes` would be sent now rather than dropped.
    pub fn has_room(&self, bytes: usize) -> bool {
        self.to
            .as_ref()
            .is_none_or(|(target, _)| target.has_room(bytes))
    }
}

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// Whose tool state a call reads and changes (which files it read, the checkpoints of its
/// changes): the session's, or one agent scope's. Opaque to tools: the runtime makes one per
/// scope from the scope's unique key, so an agent id used again after `agent_end` is a fresh
/// state, and a call without an agent uses [`StateKey::SESSION`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StateKey(Option<u64>);

impl StateKey {
    /// The session's own state: calls made without an agent.
    pub const SESSION: StateKey = StateKey(None);

    /// The state of the scope with this unique key.
    pub fn scope(key: u64) -> Self {
        StateKey(Some(key))
    }

    /// Whether this is the session's own state.
    pub fn is_session(self) -> bool {
        self.0.is_none()
    }
}

/// What a running tool gets besides its input.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The id of the call being run.
    pub tool_use_id: Arc<str>,
    /// Cancelled when the call (or its batch, or the server) is cancelled.
    pub cancel: CancellationToken,
    /// Progress updates for the client.
    pub progress: ProgressSink,
    /// State shared by every call of this server session (cwd, output dir, …).
    pub session: Arc<Session>,
    /// The agent whose call this is (its `agent_id`), for a call made in an agent scope.
    pub agent: Option<Arc<str>>,
    /// Whose tool state the call uses: its scope's, else the session's.
    pub state: StateKey,
    /// The most characters of this call's output the result shows inline on success (its output
    /// budget, docs/SEMANTICS.md §6): a tool that bounds its own output keeps within it, so the
    /// budget never has to cut what the tool chose to return.
    pub output_chars: usize,
    /// Whether a PostToolUse or PostToolUseFailure hook will read this run's
    /// [`ToolOutput::response`]; tools build it only then, as it can cost a diff or a copy of
    /// the output.
    pub hook_response: bool,
    /// For a path tool: the paths its permission decision judged (the call's path and each path
    /// it resolved to then). A tool that opens the file checks that the file it opened is one
    /// of them, so a symlink swapped after the decision cannot lead it to another file. None:
    /// nothing to check against (no decision about a path, or a tool run without one).
    pub decided_paths: Option<Arc<[PathBuf]>>,
}

impl ToolContext {
    /// The working directory tools run in.
    pub fn cwd(&self) -> &Path {
        &self.session.cwd
    }
}

/// What a tool's own validation says ([`Tool::validate`]).
pub enum Verdict {
    /// Decided at once: valid, or the text for the model.
    Now(Result<(), String>),
    /// Decided by this future, which owns what it needs; the validate stage runs it on a task
    /// of its own, so other calls go on meanwhile.
    Later(Pin<Box<dyn Future<Output = Result<(), String>> + Send>>),
}

impl Verdict {
    /// The decision, waiting for it if it comes later.
    pub async fn decided(self) -> Result<(), String> {
        match self {
            Verdict::Now(verdict) => verdict,
            Verdict::Later(verdict) => verdict.await,
        }
    }
}

impl From<Result<(), String>> for Verdict {
    fn from(verdict: Result<(), String>) -> Self {
        Verdict::Now(verdict)
    }
}

impl std::fmt::Debug for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Now(verdict) => f.debug_tuple("Now").field(verdict).finish(),
            Verdict::Later(_) => f.write_str("Later"),
        }
    }
}

/// A tool the runtime can execute.
///
/// The pipeline calls, in order: [`Tool::normalize`] (during coercion), schema validation against
/// [`Tool::input_schema`], [`Tool::validate`], hooks and the permission decision, then
/// [`Tool::call`]. [`Tool::is_concurrency_safe`] decides whether a call may run beside its
/// neighbours in a batch.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The canonical name, as rules and hooks see it.
    fn name(&self) -> &str;

    /// One paragraph for the model.
    fn description(&self) -> &str;

    /// The JSON schema of the input object (with `additionalProperties: false`).
    fn input_schema(&self) -> Value;

    /// Whether this call only reads, so it may run in parallel with other such calls.
    fn is_concurrency_safe(&self, _input: &Input) -> bool {
        false
    }

    /// What permission rules need to know about the tool's calls (by default: match it by
    /// name only).
    fn access(&self) -> Access<'_> {
        Access::default()
    }

    /// What an MCP client is told about the tool's effects (`toolrt mcp-serve`'s tool
    /// annotations); by default what [`Tool::access`] says.
    fn hints(&self) -> Hints {
        Hints::from_access(self.access())
    }

    /// Which output budget applies.
    fn budget_class(&self) -> BudgetClass {
        BudgetClass::Other
    }

    /// Tool-specific rewriting during coercion, before schema validation: Read and Write make
    /// `file_path` absolute here so hooks, rules and the tool all see the same path.
    fn normalize(&self, _input: &mut Input, _session: &Session) {}

    /// Tool-specific checks after schema validation; the error text goes to the model as a
    /// `validation_error`. For a call of a batch this runs at the call's turn, after every
    /// earlier call it could depend on, so it may look at files and session state. Checks that
    /// touch the file system answer [`Verdict::Later`] with a future that does that work on the
    /// blocking pool: the pipeline's thread must never wait on a file. `state` is the caller's
    /// (what [`ToolContext::state`] will be when the call runs).
    fn validate(&self, _input: &Input, _session: &Session, _state: StateKey) -> Verdict {
        Verdict::Now(Ok(()))
    }

    /// Whether `call` only awaits I/O (it never blocks the thread nor computes at length, as an
    /// MCP tool that awaits its server): it then runs on its call's own supervisor task,
    /// without the execute stage's hop, which buys such a tool nothing.
    fn awaits_io_only(&self) -> bool {
        false
    }

    /// Run the call. Do blocking work (file I/O, CPU-heavy work) on the blocking pool: on a
    /// current-thread runtime the execute stage gives `call` its first poll on its own task,
    /// so a first poll that blocks holds up every other call's execution.
    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_follow_what_access_says() {
        let path = |read_only| Subject::Path {
            field: "file_path",
            read_only,
            default_cwd: false,
        };
        let h = |ro, de, id, ow| Hints {
            read_only: ro,
            destructive: de,
            idempotent: id,
            open_world: ow,
        };
        let (t, f) = (Some(true), Some(false));
        for (subject, want) in [
            (path(true), h(t, f, t, f)),
            (path(false), h(f, t, None, f)),
            (Subject::Command { field: "command" }, h(f, t, f, t)),
            (Subject::Url { field: "url" }, h(t, f, t, t)),
            (
                Subject::Subagent {
                    field: "subagent_type",
                },
                h(None, None, f, t),
            ),
            (Subject::Name, Hints::default()),
        ] {
            let access = Access {
                subject,
                allowed_by_default: false,
            };
            assert_eq!(Hints::from_access(access), want, "{subject:?}");
        }
    }
}
