//! Interim Bash analysis: a command is read-only when it is one simple command from the
//! read-only set with no shell metacharacters. The permission-engine issue replaces this with a
//! real shell parse.

const READ_ONLY: &[&str] = &[
    "ls", "cat", "echo", "pwd", "head", "tail", "grep", "find", "wc", "which", "diff", "stat",
    "du", "cd",
];
const READ_ONLY_GIT: &[&str] = &["status", "log", "diff", "show", "branch"];

/// Whether `command` may run beside other read-only calls.
pub fn is_concurrency_safe(command: &str) -> bool {
    if command.chars().any(|c| {
        matches!(
            c,
            ';' | '&'
                | '|'
                | '>'
                | '<'
                | '$'
                | '`'
                | '\n'
                | '('
                | ')'
                | '{'
                | '}'
                | '\\'
                | '\''
                | '"'
        )
    }) {
        return false;
    }
    let mut words = command.split_whitespace();
    match words.next() {
        Some("git") => words.next().is_some_and(|sub| READ_ONLY_GIT.contains(&sub)),
        Some("find") => !command
            .split_whitespace()
            .any(|w| matches!(w, "-exec" | "-execdir" | "-delete" | "-ok" | "-fprint")),
        Some(w) => READ_ONLY.contains(&w),
        None => false,
    }
}
