//! `Bash`: runs a command with `bash -c` in its own process group, streams and spills its
//! output, and decides success from the exit code.
//!
//! stdout and stderr are merged in arrival order (each read as it comes, so lines from the two
//! streams interleave as the command wrote them, give or take pipe buffering).

use super::limits;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::background::{Task, Tasks};
use super::capture::{Capture, Captured};
use super::shell_run::{Ending, run_captured, spawn_shell};
use super::{bool_field, str_field, u64_field};
use crate::call::Input;
use crate::session::{SandboxedCall, Session, ShellPlan, UNSANDBOXED_FIELD};
use crate::tool::{
    Access, BudgetClass, FullOutput, StateKey, Subject, Tool, ToolContext, ToolOutput, ToolStatus,
    Verdict,
};

/// Default timeout in milliseconds.
pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest timeout a call may ask for, in milliseconds.
pub(crate) const MAX_TIMEOUT_MS: u64 = 600_000;
/// Outputs up to this many characters are returned whole and their spill file removed; larger
/// ones keep the file so the output budget can point at it instead of writing a copy.
const KEEP_FILE_OVER_CHARS: u64 = 10_000;

/// Commands whose exit code 1 means "nothing found / differs", not failure.
const EXIT1_OK: &[&str] = &["grep", "rg", "egrep", "fgrep", "find", "diff", "test", "["];

/// Commands that print nothing when they succeed: a command made only of these has
/// `noOutputExpected` in its hook response (the reference CLI's list).
const SILENT: &[&str] = &[
    "mv", "cp", "rm", "mkdir", "rmdir", "chmod", "chown", "chgrp", "touch", "ln", "cd", "export",
    "unset", "wait",
];

/// The `Bash` tool.
#[derive(Debug)]
pub(crate) struct Bash {
    tasks: Arc<Tasks>,
}

impl Bash {
    /// A Bash whose background tasks join `tasks` (read by TaskOutput, stopped by TaskStop).
    pub(crate) fn new(tasks: Arc<Tasks>) -> Self {
        Self { tasks }
    }
}

#[async_trait]
impl Tool for Bash {
    fn access(&self) -> Access<'_> {
        Access {
            subject: Subject::Command { field: "command" },
            allowed_by_default: false,
        }
    }

    fn name(&self) -> &str {
        "Bash"
    }

    fn description(&self) -> &str {
        "Runs a bash command (`bash -c`) in the working directory, in its own process group, with \
         stdin closed. stdout and stderr are returned merged. `timeout` is in milliseconds \
         (default 120000, at most 600000); on timeout the command and everything it started is \
         killed, and so is anything it leaves running when it exits. Long output is saved whole \
         to a file and shown as head and tail. Set `run_in_background` to start a long-running \
         command (a server, a watcher) and get a task id at once; read it with TaskOutput and \
         stop it with TaskStop."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "maxLength": limits::COMMAND_CHARS, "description": "The command to run"},
                "timeout": {"type": "integer", "description": "Timeout in milliseconds (default 120000, max 600000)"},
                "description": {"type": "string", "maxLength": limits::TEXT_CHARS, "description": "What the command does, in a few words"},
                "run_in_background": {"type": "boolean", "description": "Start the command in the background and return a task id at once"},
                "dangerouslyDisableSandbox": {"type": "boolean", "description": "Run outside the sandbox (when one is configured and allows it); such a call always needs permission"}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, input: &Input) -> bool {
        !bool_field(input, "run_in_background", false)
            && str_field(input, "command").is_some_and(crate::shell::is_concurrency_safe)
    }

    fn budget_class(&self) -> BudgetClass {
        BudgetClass::Shell
    }

    fn validate(&self, input: &Input, _session: &Session, _state: StateKey) -> Verdict {
        Verdict::Now(match str_field(input, "command") {
            Some(c) if c.len() > limits::COMMAND_CHARS as usize => Err(format!(
                "the command is {} bytes; Linux passes at most {} bytes to bash in one argument: \
                 write a script file and run that instead",
                c.len(),
                limits::COMMAND_CHARS
            )),
            // An argument of a program cannot hold a NUL: bash would never start.
            Some(c) if c.contains('\0') => Err(
                "the command holds a NUL character (\\u0000), which no shell command can hold"
                    .to_string(),
            ),
            Some(c) if !c.trim().is_empty() => Ok(()),
            _ => Err("command is empty: give the shell command to run".to_string()),
        })
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        let command = str_field(&input, "command").unwrap_or_default().to_string();
        let launch = match &ctx.session.sandbox {
            None => None,
            Some(sandbox) => {
                match sandbox.plan(&command, bool_field(&input, UNSANDBOXED_FIELD, false)) {
                    ShellPlan::Direct => None,
                    ShellPlan::Sandboxed(launch) => Some(sandbox.enter(launch, &ctx.tool_use_id)),
                    ShellPlan::Refused(why) => return ToolOutput::failed(why),
                }
            }
        };
        let sandboxed = ctx.session.sandbox.as_ref().map(|_| launch.is_some());
        if bool_field(&input, "run_in_background", false) {
            let started_task = super::background::start(
                &self.tasks,
                &command,
                &ctx.session,
                shell(&launch),
                ctx.state,
                &ctx.cancel,
            );
            return match started_task.await {
                Ok(task) => mark_sandboxed(
                    started(&task, ctx.hook_response, ctx.session.output_dir_temporary),
                    sandboxed,
                    &[],
                ),
                Err(why) => ToolOutput::failed(why),
            };
        }
        let describe = ctx.hook_response;
        let timeout_ms = u64_field(&input, "timeout")
            .filter(|t| *t > 0)
            .unwrap_or(DEFAULT_TIMEOUT_MS)
            .clamp(1, MAX_TIMEOUT_MS);
        let session = &ctx.session;
        // Lazy: small outputs never touch the disk.
        let capture = Capture::lazy(
            &session.output_dir,
            &format!("bash-{}", ctx.tool_use_id),
            KEEP_FILE_OVER_CHARS,
        );
        let (child, group) = match spawn_shell(&command, session, shell(&launch)).await {
            Ok(spawned) => spawned,
            Err(err) => {
                return ToolOutput::failed(format!(
                    "could not start bash in {}: {err}",
                    session.cwd.display()
                ));
            }
        };
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let (ending, captured) = run_captured(
            child,
            group,
            capture,
            Some(deadline),
            ctx.cancel.clone(),
            Some(&ctx.progress),
        )
        .await;
        let refused = launch.map(|l| l.refusals()).unwrap_or_default();
        mark_sandboxed(
            finish(&command, timeout_ms, ending, captured, describe),
            sandboxed,
            &refused,
        )
    }
}

fn shell(call: &Option<SandboxedCall>) -> Option<&crate::session::ShellLaunch> {
    call.as_ref().map(|c| &*c.launch)
}

/// Says in the hooks' `tool_response` whether the command ran sandboxed (a toolrt field), and
/// when a sandboxed command failed on a refused write, says that the sandbox refused it: the
/// kernel tells only the command (`EACCES`, `EROFS`), so toolrt goes by its words.
/// `sandboxed`: `None` when no sandbox is configured (the response keeps the reference's shape).
/// `refused`: what the network proxy refused the command, always said.
fn mark_sandboxed(mut out: ToolOutput, sandboxed: Option<bool>, refused: &[String]) -> ToolOutput {
    let Some(sandboxed) = sandboxed else {
        return out;
    };
    if let Some(fields) = out.response.as_mut().and_then(Value::as_object_mut) {
        fields.insert("sandboxed".into(), Value::Bool(sandboxed));
    }
    let words = [
        "Permission denied",
        "Read-only file system",
        "Operation not permitted",
    ];
    if sandboxed
        && out.status == ToolStatus::Failed
        && words.iter().any(|w| out.content.contains(w))
    {
        out.content.push_str(
            "\n(sandbox: this command ran in the sandbox, which refuses writes outside the \
             workspace, $TMPDIR and sandbox.filesystem.allowWrite, reads of denyRead paths, and \
             network access except through its proxy)",
        );
    }
    for line in refused {
        out.content.push_str(&format!("\n(sandbox: {line})"));
    }
    out
}

/// What Bash answers for a command it started in the background: the task's id and output
/// file, and for hooks the `BashOutput` shape with `backgroundTaskId`.
fn started(task: &Task, describe: bool, temporary: bool) -> ToolOutput {
    let id = &task.id;
    let response = describe.then(|| {
        let mut response = response("", &task.command, false);
        if let Some(fields) = response.as_object_mut() {
            fields.insert("backgroundTaskId".into(), Value::from(id.clone()));
        }
        response
    });
    ToolOutput::success(format!(
        "Started in the background with task id {id}.\nOutput file: {}{}\nRead its output and \
         status with TaskOutput {{\"task_id\": \"{id}\"}}; stop it with TaskStop {{\"task_id\": \
         \"{id}\"}}.",
        task.output_path.display(),
        if temporary {
            crate::session::TEMPORARY_NOTE
        } else {
            ""
        }
    ))
    .with_response(response)
}

/// The shape of the reference CLI's `BashOutput`, as a PostToolUse hook receives it: the
/// merged output as `stdout` (`stderr` is empty, since the two are merged), trimmed as the
/// reference trims it.
fn response(stdout: &str, command: &str, interrupted: bool) -> Value {
    json!({
        "stdout": trim_output(stdout),
        "stderr": "",
        "interrupted": interrupted,
        "isImage": false,
        "noOutputExpected": no_output_expected(command),
    })
}

/// Output as hooks see it: without leading blank lines and trailing whitespace.
fn trim_output(text: &str) -> &str {
    let text = text.trim_end();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        if !line.trim().is_empty() || !line.ends_with('\n') {
            break;
        }
        start += line.len();
    }
    &text[start..]
}

/// Whether every simple command of `command` is one that prints nothing on success.
fn no_output_expected(command: &str) -> bool {
    let parts = split_commands(command);
    !parts.is_empty()
        && parts.iter().all(|part| {
            shell_words(part)
                .first()
                .is_some_and(|w| SILENT.contains(&w.as_str()))
        })
}

/// The PostToolUseFailure `error` of a command that exited with `code`, worded as the reference
/// CLI words it: the exit code first, then the output.
fn failure_error(code: i32, output: &str) -> String {
    let output = trim_output(output);
    if output.is_empty() {
        format!("Exit code {code}")
    } else {
        format!("Exit code {code}\n{output}")
    }
}

/// Shapes a finished foreground run into the tool's output; `describe`: with the response
/// hooks are given.
fn finish(
    command: &str,
    timeout_ms: u64,
    ending: Ending,
    captured: Captured,
    describe: bool,
) -> ToolOutput {
    // The exit status as a shell reports it: 128 + N for a process killed by signal N.
    let mut exit_code = None;
    let (status, note) = match ending {
        Ending::Exited(exit) => match exit.code() {
            Some(0) => (ToolStatus::Success, None),
            Some(1) if exit1_is_success(command) => (ToolStatus::Success, None),
            Some(code) => {
                exit_code = Some(code);
                (ToolStatus::Failed, Some(format!("exit code {code}")))
            }
            None => {
                use std::os::unix::process::ExitStatusExt;
                let signal = exit.signal().unwrap_or_default();
                exit_code = Some(128 + signal);
                (
                    ToolStatus::Failed,
                    Some(format!("killed by signal {signal}")),
                )
            }
        },
        Ending::TimedOut => (
            ToolStatus::TimedOut,
            Some(format!(
                "timed out after {timeout_ms} ms; the command and every process it started were \
                 killed. Use a larger `timeout` (max {MAX_TIMEOUT_MS}) or `run_in_background` for \
                 long commands"
            )),
        ),
        Ending::Cancelled => (
            ToolStatus::Cancelled,
            Some("cancelled; the command and every process it started were killed".to_string()),
        ),
        Ending::Lost(err) => (
            ToolStatus::Failed,
            Some(format!("lost track of the command: {err}")),
        ),
    };
    let response = describe
        .then(|| match (status, exit_code) {
            (ToolStatus::Success, _) => Some(response(&captured.text, command, false)),
            (_, Some(code)) => Some(Value::from(failure_error(code, &captured.text))),
            _ => None,
        })
        .flatten();
    let mut content = captured.text;
    if content.is_empty() && status == ToolStatus::Success {
        content.push_str("(no output)");
    }
    if let Some(err) = &captured.write_error {
        let file = captured
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "of this command".into());
        content.push_str(&format!(
            "\n\n(the output file {file} is incomplete: {err})"
        ));
    }
    if let Some(note) = note {
        if !content.is_empty() && !content.ends_with('\n') {
            content.push('\n');
        }
        if !content.is_empty() {
            content.push('\n');
        }
        content.push_str(&format!("({note})"));
    }
    let keep_file = captured.truncated || captured.chars > KEEP_FILE_OVER_CHARS;
    let full_output = match captured.path {
        Some(path) if keep_file => Some(FullOutput {
            path,
            chars: captured.chars,
            lines: captured.lines,
        }),
        Some(path) => {
            // Small outputs live whole in the result; no file needed (removed on the blocking
            // pool, nobody waits for it).
            tokio::task::spawn_blocking(move || std::fs::remove_file(path));
            None
        }
        None => None,
    };
    let response = response.map(|mut response| {
        // The whole output is in a file: say where, and how large it is.
        if let (Some(full), Some(fields)) = (&full_output, response.as_object_mut()) {
            let bytes = captured.bytes;
            fields.insert(
                "persistedOutputPath".into(),
                Value::from(full.path.to_string_lossy().into_owned()),
            );
            fields.insert("persistedOutputSize".into(), Value::from(bytes));
        }
        response
    });
    ToolOutput {
        status,
        content,
        full_output,
        response,
        attachments: None,
    }
}

/// Whether exit code 1 of `command` means success: true when the command that decides the exit
/// status (the last element of a compound command or pipeline) is one of `grep rg egrep fgrep
/// find diff test [`, `git diff` or `git grep`, after leading `VAR=value` assignments.
pub(crate) fn exit1_is_success(command: &str) -> bool {
    let Some(last) = split_last_command(command) else {
        return false;
    };
    let words = shell_words(&last);
    let mut words = words
        .iter()
        .map(String::as_str)
        .skip_while(|w| is_assignment(w));
    let Some(first) = words.next() else {
        return false;
    };
    let name = first.rsplit('/').next().unwrap_or(first);
    if EXIT1_OK.contains(&name) {
        return true;
    }
    if name != "git" {
        return false;
    }
    // Skip git's global options (`-C dir`, `-c key=value`, `--no-pager`, …) to the subcommand.
    let mut takes_value = false;
    for word in words {
        if takes_value {
            takes_value = false;
            continue;
        }
        if word == "-C" || word == "-c" {
            takes_value = true;
            continue;
        }
        if word.starts_with('-') {
            continue;
        }
        return word == "diff" || word == "grep";
    }
    false
}

/// The last simple command of `command`: the text after the last unquoted `;`, `&`, `|` or
/// newline that is followed by something.
fn split_last_command(command: &str) -> Option<String> {
    split_commands(command).pop()
}

/// The simple commands of `command`: the non-empty pieces between unquoted `;`, `&`, `|` and
/// newlines, with leading `(`, `{` and `!` removed.
fn split_commands(command: &str) -> Vec<String> {
    split_segments(command)
        .unwrap_or_default()
        .into_iter()
        .map(|s| {
            s.trim()
                .trim_start_matches(['(', '{', '!'])
                .trim()
                .to_string()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

fn split_segments(command: &str) -> Option<Vec<String>> {
    let mut segments = vec![String::new()];
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('\''), '\'') | (Some('"'), '"') => {
                quote = None;
                segments.last_mut()?.push(c);
            }
            (Some('"'), '\\') | (None, '\\') => {
                let seg = segments.last_mut()?;
                seg.push(c);
                if let Some(next) = chars.next() {
                    seg.push(next);
                }
            }
            (Some(_), _) => segments.last_mut()?.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                segments.last_mut()?.push(c);
            }
            (None, ';' | '&' | '|' | '\n') => {
                // `2>&1`, `>&2`: a redirect, not a separator.
                let seg = segments.last_mut()?;
                if c == '&'
                    && (seg.ends_with('>') || seg.ends_with('<') || chars.peek() == Some(&'>'))
                {
                    seg.push(c);
                } else {
                    segments.push(String::new());
                }
            }
            (None, _) => segments.last_mut()?.push(c),
        }
    }
    Some(segments)
}

/// Splits a simple command into words, removing quotes (no expansion).
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
                in_word = true;
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit1_table() {
        for (cmd, want) in [
            ("grep foo file", true),
            ("rg -n x", true),
            ("/usr/bin/grep x y", true),
            ("LC_ALL=C grep x y", true),
            ("A=1 B=2 diff a b", true),
            ("find . -name x", true),
            ("test -f x", true),
            ("[ -f x ]", true),
            ("git diff --quiet", true),
            ("git -C repo grep x", true),
            ("git --no-pager diff", true),
            ("git status", false),
            ("cat x | grep y", true),
            ("grep y x | wc -l", false),
            ("cd dir && grep x y", true),
            ("grep x y; false", false),
            ("grep x y 2>&1", true),
            ("grep x y &>/dev/null", true),
            ("grep x y &> out.txt; true", false),
            ("sleep 1 & grep x", true),
            ("echo 'a | b' ; grep q", true),
            ("echo 'grep; x'", false),
            ("ls", false),
            ("false", false),
            ("", false),
            ("fgrep", true),
            ("egrepx y", false),
        ] {
            assert_eq!(exit1_is_success(cmd), want, "{cmd}");
        }
    }

    #[test]
    fn no_output_expected_table() {
        for (cmd, want) in [
            ("mkdir -p made", true),
            ("mkdir a && cd a", true),
            ("rm -f x; touch y", true),
            ("echo hi", false),
            ("mkdir a && ls", false),
            ("'mv' a b", true),
            ("mvx a b", false),
            ("", false),
        ] {
            assert_eq!(no_output_expected(cmd), want, "{cmd}");
        }
    }

    #[test]
    fn hook_text_trimmed_as_the_reference_trims_it() {
        for (text, want) in [
            ("hi\nerr\n", "hi\nerr"),
            ("\n\n  x  \n\n", "  x"),
            ("  \n x\n", " x"),
            ("", ""),
            ("\n\n", ""),
        ] {
            assert_eq!(trim_output(text), want, "{text:?}");
        }
        assert_eq!(failure_error(3, "out\nbad\n"), "Exit code 3\nout\nbad");
        assert_eq!(failure_error(4, ""), "Exit code 4");
    }

    #[test]
    fn words() {
        assert_eq!(
            shell_words(r#"a 'b c' "d\"e" f\ g"#),
            vec!["a", "b c", "d\"e", "f g"]
        );
    }
}
