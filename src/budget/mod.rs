//! Output-budget stage: a result over its limit is written whole to a file and the model gets a
//! notice (size, path) and a preview; a failure keeps its head and tail. Nothing is dropped
//! silently (docs/SEMANTICS.md §6).
//!
//! [`plan`] is the pure decision; [`BudgetActor`] carries it out (file writes happen off the
//! actor, on the blocking pool).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};

use crate::call::Outcome;
use crate::settings::Limits;
use crate::stage::{StageFault, request};
use crate::tool::{Attachments, BudgetClass, FullOutput, ToolOutput, ToolStatus};

/// The budgeted result content.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shaped {
    /// The outcome from the tool status.
    pub outcome: Outcome,
    /// What the model sees.
    pub content: String,
    /// Where the complete output is, when `content` holds only part of it.
    pub output_file: Option<PathBuf>,
    /// Non-text parts, passed on when the whole output is within budget (else they are in the
    /// file with the rest).
    pub attachments: Option<Box<Attachments>>,
}

/// What to do with one output.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Plan {
    /// Within budget: send as is.
    Inline,
    /// Over budget: `content` for the model; the complete text is `write` (to be written to a
    /// new file) or already in `existing`.
    External {
        /// Text to write to a new file (None when the tool already wrote the full output).
        write: Option<String>,
        /// The tool's own full-output file.
        existing: Option<PathBuf>,
        /// Builds the content once the path is known.
        notice: Notice,
    },
}

/// The pieces of an over-budget content; rendered once the file path is known.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Notice {
    /// Total characters of the complete output.
    pub chars: u64,
    /// Total lines of the complete output.
    pub lines: u64,
    /// A prefix of the output (success), or its head (failure).
    pub head: String,
    /// For failures: a suffix of the output.
    pub tail: Option<String>,
}

/// What a notice adds after the path of a file in a temporary output folder.
use crate::session::TEMPORARY_NOTE;

impl Notice {
    /// The content the model sees: the notice first, then the preview. `temporary`: the file
    /// is in a folder deleted when the session ends, and the notice says so.
    pub(crate) fn render(&self, path: &Path, temporary: bool) -> String {
        let kept = if temporary { TEMPORARY_NOTE } else { "" };
        match &self.tail {
            None => format!(
                "Output too large ({} characters, {} lines); the full output was saved to {}{kept}\nRead that file (with offset/limit) to see the rest.\n\nPreview (first {} characters):\n{}",
                self.chars,
                self.lines,
                path.display(),
                self.head.chars().count(),
                self.head
            ),
            Some(tail) => {
                let omitted = self
                    .chars
                    .saturating_sub((self.head.chars().count() + tail.chars().count()) as u64);
                format!(
                    "Output too large ({} characters, {} lines); the full output was saved to {}{kept}\n\n{}\n\n... [{} characters omitted] ...\n\n{}",
                    self.chars,
                    self.lines,
                    path.display(),
                    self.head,
                    omitted,
                    tail
                )
            }
        }
    }
}

/// The character limit for a successful output of this class.
pub(crate) fn success_limit(class: BudgetClass, limits: &Limits) -> usize {
    match class {
        BudgetClass::Shell => limits.bash_chars,
        BudgetClass::Mcp => limits.mcp_chars,
        BudgetClass::Other => limits.tool_chars,
    }
}

/// The character limit for a successful output of `tool`: its own `limits.per_tool` entry if
/// it has one, else its class's.
pub(crate) fn success_limit_for(tool: &str, class: BudgetClass, limits: &Limits) -> usize {
    limits
        .per_tool
        .get(tool)
        .copied()
        .unwrap_or_else(|| success_limit(class, limits))
}

/// Decides how to present an output of a tool of `class` (pure). The stage itself goes through
/// `plan_within`; this whole-call form is for the bench's inline floor and the tests.
#[cfg(any(test, feature = "cli"))]
pub(crate) fn plan(output: &ToolOutput, class: BudgetClass, limits: &Limits) -> Plan {
    plan_within(output, success_limit(class, limits), limits)
}

/// Decides how to present an output whose success limit is `success_limit` (pure).
pub(crate) fn plan_within(output: &ToolOutput, success_limit: usize, limits: &Limits) -> Plan {
    if clearly_inline(output, success_limit, limits) {
        return Plan::Inline;
    }
    let success = output.status == ToolStatus::Success;
    let limit = char_limit(output, success_limit, limits);
    let extra = output
        .attachments
        .as_ref()
        .map_or(0, |a| a.extra_size(output.content.len())) as u64;
    let (chars, lines) = match &output.full_output {
        Some(FullOutput { chars, lines, .. }) => (*chars, *lines),
        None => {
            let chars = output.content.chars().count() as u64 + extra;
            if chars as usize <= limit {
                return Plan::Inline;
            }
            (chars, count_lines(&output.content))
        }
    };
    if output.full_output.is_some()
        && chars as usize <= limit
        && output.content.chars().count() as u64 == chars
    {
        return Plan::Inline;
    }
    let notice = if success {
        Notice {
            chars,
            lines,
            head: take_chars(&output.content, limits.preview_chars.min(limit)).to_string(),
            tail: None,
        }
    } else {
        let half = limit / 2;
        Notice {
            chars,
            lines,
            head: take_chars(&output.content, half).to_string(),
            tail: Some(last_chars(&output.content, half).to_string()),
        }
    };
    match &output.full_output {
        Some(full) => Plan::External {
            write: None,
            existing: Some(full.path.clone()),
            notice,
        },
        None => Plan::External {
            write: Some(match &output.attachments {
                None => output.content.clone(),
                Some(att) => with_attachments(&output.content, att),
            }),
            existing: None,
            notice,
        },
    }
}

/// The text of an externalized output that has non-text parts: its text, then the parts as
/// JSON, so the file holds everything the result would have.
fn with_attachments(content: &str, att: &Attachments) -> String {
    let parts = serde_json::json!({
        "content_blocks": att.blocks,
        "structured_content": att.structured,
    });
    format!(
        "{content}\n\n--- content blocks and structured content (JSON) ---\n{}",
        serde_json::to_string_pretty(&parts).unwrap_or_default()
    )
}

/// The character limit that applies to this output: a success's limit is its tool's, a
/// failure's the error budget (`limits.error_chars`), whatever its tool's success limit is.
fn char_limit(output: &ToolOutput, success_limit: usize, limits: &Limits) -> usize {
    if output.status == ToolStatus::Success {
        success_limit
    } else {
        limits.error_chars
    }
}

/// True when an output is inline without counting anything: held wholly in memory and no longer
/// in bytes than the limit in characters (a character is at least one byte).
pub(crate) fn clearly_inline(output: &ToolOutput, success_limit: usize, limits: &Limits) -> bool {
    output.full_output.is_none()
        && output.attachments.is_none()
        && output.content.len() <= char_limit(output, success_limit, limits)
}

/// Lines in a text (a last line without a newline counts).
pub(crate) fn count_lines(s: &str) -> u64 {
    let n = s.bytes().filter(|&b| b == b'\n').count() as u64;
    if s.is_empty() || s.ends_with('\n') {
        n
    } else {
        n + 1
    }
}

/// The first `n` characters of `s`.
pub(crate) fn take_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// The last `n` characters of `s`.
pub(crate) fn last_chars(s: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    match s.char_indices().rev().nth(n - 1) {
        Some((i, _)) => &s[i..],
        None => s,
    }
}

fn outcome_of(status: ToolStatus) -> Outcome {
    match status {
        ToolStatus::Success => Outcome::Success,
        ToolStatus::Failed => Outcome::Failed,
        ToolStatus::TimedOut => Outcome::TimedOut,
        ToolStatus::Cancelled => Outcome::Cancelled,
    }
}

/// Writes a call's externalized output into `dir` as a new file of its own: the id made safe,
/// then random characters, created exclusively with mode 0600 (`tempfile`), so a name planted
/// in advance (a symlink, another session's file in a shared `--output-dir`) is never written
/// through or overwritten.
fn write_output_file(dir: &Path, id: &str, text: &str) -> std::io::Result<PathBuf> {
    use std::io::Write;
    crate::paths::create_private_dir(dir)?;
    let (mut file, path) = tempfile::Builder::new()
        .prefix(&format!("{}-", crate::paths::file_safe(id)))
        .suffix(".txt")
        .tempfile_in(dir)?
        .keep()
        .map_err(|e| e.error)?;
    file.write_all(text.as_bytes())?;
    Ok(path)
}

/// Messages of the budget stage.
pub(crate) enum BudgetMsg {
    /// Shape one output.
    Shape {
        /// The call id (names the file).
        id: Arc<str>,
        /// The tool's output.
        output: ToolOutput,
        /// Which limits apply.
        class: BudgetClass,
        /// The canonical tool name (for a per-tool limit).
        tool: Arc<str>,
        /// Where the answer goes.
        reply: RpcReplyPort<Shaped>,
    },
}

// A local-only message: ractor's `cluster` feature (ractor_cluster) asks each message type
// to say whether it crosses nodes; this one never does.
impl ractor::Message for BudgetMsg {}

/// The budget stage actor.
pub(crate) struct BudgetActor;

/// What it owns.
pub(crate) struct BudgetState {
    /// The same limits the handle checks against.
    limits: Arc<Limits>,
    dir: PathBuf,
    /// Whether `dir` is deleted when the session ends.
    temporary: bool,
}

impl Actor for BudgetActor {
    type Msg = BudgetMsg;
    type State = BudgetState;
    type Arguments = (Arc<Limits>, PathBuf, bool);

    async fn pre_start(
        &self,
        _me: ActorRef<BudgetMsg>,
        (limits, dir, temporary): Self::Arguments,
    ) -> Result<BudgetState, ActorProcessingErr> {
        Ok(BudgetState {
            limits,
            dir,
            temporary,
        })
    }

    async fn handle(
        &self,
        _me: ActorRef<BudgetMsg>,
        msg: BudgetMsg,
        state: &mut BudgetState,
    ) -> Result<(), ActorProcessingErr> {
        let BudgetMsg::Shape {
            id,
            output,
            class,
            tool,
            reply,
        } = msg;
        let outcome = outcome_of(output.status);
        match plan_within(
            &output,
            success_limit_for(&tool, class, &state.limits),
            &state.limits,
        ) {
            Plan::Inline => {
                let _ = reply.send(Shaped {
                    outcome,
                    content: output.content,
                    output_file: None,
                    attachments: output.attachments,
                });
            }
            Plan::External {
                write: None,
                existing: Some(path),
                notice,
            } => {
                let _ = reply.send(Shaped {
                    outcome,
                    content: notice.render(&path, state.temporary),
                    output_file: Some(path),
                    attachments: None,
                });
            }
            Plan::External { write, notice, .. } => {
                let text = write.unwrap_or_default();
                let dir = state.dir.clone();
                let temporary = state.temporary;
                // Writing may take a while for a big output: off the actor, so other calls'
                // small outputs are not held up behind it.
                tokio::task::spawn_blocking(move || {
                    let shaped = match write_output_file(&dir, &id, &text) {
                        Ok(path) => Shaped {
                            outcome,
                            content: notice.render(&path, temporary),
                            output_file: Some(path),
                            attachments: None,
                        },
                        Err(e) => Shaped {
                            outcome,
                            // The file could not be written: better an oversized result than a lost one.
                            content: format!(
                                "[toolrt: could not save the full output in {}: {e}; returning it inline]\n{text}",
                                dir.display()
                            ),
                            output_file: None,
                            attachments: None,
                        },
                    };
                    let _ = reply.send(shaped);
                });
            }
        }
        Ok(())
    }
}

/// Typed handle to the budget stage.
#[derive(Clone)]
pub(crate) struct Budget {
    actor: ActorRef<BudgetMsg>,
    limits: Arc<Limits>,
}

impl Budget {
    /// Spawns the stage actor, writing into `dir` (`temporary`: a folder deleted when the
    /// session ends).
    pub(crate) async fn spawn(
        limits: Limits,
        dir: PathBuf,
        temporary: bool,
    ) -> Result<(Self, tokio::task::JoinHandle<()>), ractor::SpawnErr> {
        let limits = Arc::new(limits);
        let (actor, handle) =
            Actor::spawn(None, BudgetActor, (limits.clone(), dir, temporary)).await?;
        Ok((Self { actor, limits }, handle))
    }

    /// The most characters a successful output of `tool` shows inline.
    pub(crate) fn success_limit(&self, tool: &str, class: BudgetClass) -> usize {
        success_limit_for(tool, class, &self.limits)
    }

    /// An output that is clearly within budget needs no shaping and is answered here, at once
    /// (as a hook stage with no hooks is skipped, a round trip with nothing to do is saved); any
    /// other comes back for [`Budget::shape`].
    pub(crate) fn shape_inline(
        &self,
        output: ToolOutput,
        class: BudgetClass,
        tool: &str,
    ) -> Result<Shaped, Box<ToolOutput>> {
        if !clearly_inline(
            &output,
            success_limit_for(tool, class, &self.limits),
            &self.limits,
        ) {
            // Boxed: the rare way, kept out of the caller's future.
            return Err(Box::new(output));
        }
        Ok(Shaped {
            outcome: outcome_of(output.status),
            content: output.content,
            output_file: None,
            attachments: None,
        })
    }

    /// Shapes an output that [`Budget::shape_inline`] gave back: the stage cuts it or puts the
    /// whole of it in a file.
    pub(crate) async fn shape(
        &self,
        id: Arc<str>,
        output: ToolOutput,
        class: BudgetClass,
        tool: Arc<str>,
    ) -> Result<Shaped, StageFault> {
        request("budget", &self.actor, |reply| BudgetMsg::Shape {
            id,
            output,
            class,
            tool,
            reply,
        })
        .await
    }

    /// Stops the actor.
    pub(crate) fn stop(&self) {
        self.actor.stop(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limits() -> Limits {
        Limits {
            per_tool: Default::default(),
            bash_chars: 100,
            error_chars: 40,
            tool_chars: 200,
            mcp_chars: 300,
            preview_chars: 20,
        }
    }

    #[test]
    fn within_budget_is_inline() {
        let out = ToolOutput::success("x".repeat(100));
        assert!(matches!(
            plan(&out, BudgetClass::Shell, &limits()),
            Plan::Inline
        ));
        let out = ToolOutput::success("x".repeat(101));
        assert!(matches!(
            plan(&out, BudgetClass::Shell, &limits()),
            Plan::External { .. }
        ));
        assert!(matches!(
            plan(&out, BudgetClass::Other, &limits()),
            Plan::Inline
        ));
    }

    #[test]
    fn a_failure_has_the_error_budget_whatever_its_tools_success_limit() {
        // A success limit below the error budget does not cut failures sooner.
        let out = ToolOutput::failed("e".repeat(40));
        assert!(matches!(plan_within(&out, 10, &limits()), Plan::Inline));
        let out = ToolOutput::failed("e".repeat(41));
        assert!(matches!(
            plan_within(&out, 10, &limits()),
            Plan::External { .. }
        ));
    }

    #[test]
    fn notice_comes_first_and_names_size_and_path() {
        let out = ToolOutput::success(format!("{}\n", "y".repeat(150)));
        let Plan::External { notice, .. } = plan(&out, BudgetClass::Shell, &limits()) else {
            panic!()
        };
        let text = notice.render(Path::new("/o/x.txt"), false);
        assert!(
            text.starts_with(
                "Output too large (151 characters, 1 lines); the full output was saved to /o/x.txt"
            ),
            "{text}"
        );
        assert!(text.ends_with(&"y".repeat(20)));
    }

    proptest! {
        #[test]
        fn preview_is_prefix_or_head_tail_and_file_is_original(s in "(?s).{0,400}", ok in any::<bool>()) {
            let out = if ok { ToolOutput::success(s.clone()) } else { ToolOutput::failed(s.clone()) };
            match plan(&out, BudgetClass::Shell, &limits()) {
                Plan::Inline => {
                    let limit = if ok { 100 } else { 40 };
                    prop_assert!(s.chars().count() <= limit);
                }
                Plan::External { write, notice, .. } => {
                    prop_assert_eq!(write.as_deref(), Some(s.as_str()));
                    prop_assert!(s.starts_with(&notice.head));
                    if let Some(tail) = &notice.tail {
                        prop_assert!(!ok);
                        prop_assert!(s.ends_with(tail.as_str()));
                        prop_assert!(notice.head.chars().count() + tail.chars().count() <= 40);
                    }
                    prop_assert_eq!(notice.chars, s.chars().count() as u64);
                }
            }
        }
    }
}
