//! The rule grammar: `Tool` or `Tool(specifier)`, parsed once and printed back verbatim.

use std::fmt;

/// Why a rule string is malformed. Every variant carries the rule text so the message stands
/// on its own in an error that also names the file and key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// The rule is empty or only whitespace.
    #[error("empty rule")]
    Empty,
    /// Parentheses do not pair up, or text follows the closing one.
    #[error("unbalanced parentheses in rule {0:?}")]
    UnbalancedParens(String),
    /// Nothing before `(`.
    #[error("empty tool name in rule {0:?}")]
    EmptyToolName(String),
    /// The tool name has characters a tool name cannot have.
    #[error("invalid tool name in rule {0:?}")]
    InvalidToolName(String),
    /// `Tool()`.
    #[error("empty specifier in rule {0:?}")]
    EmptySpecifier(String),
    /// A specifier on an MCP tool (MCP tools take none).
    #[error("tool {tool} takes no specifier, in rule {rule:?}")]
    SpecifierNotAllowed {
        /// The tool name.
        tool: String,
        /// The rule text.
        rule: String,
    },
    /// An allow rule with `*` in an MCP name before `mcp__<server>__`.
    #[error("allow rules may use * in an MCP tool name only after mcp__<server>__, in rule {0:?}")]
    McpAllowGlob(String),
    /// The specifier does not fit the tool (a bad glob, `WebFetch(x)` without `domain:`, …).
    #[error("invalid specifier in rule {rule:?}: {why}")]
    InvalidSpecifier {
        /// The rule text.
        rule: String,
        /// What is wrong with it.
        why: String,
    },
}

/// One parsed permission rule. It displays as exactly the text it was parsed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rule {
    text: String,
    tool_len: usize,
    /// Byte range of the specifier inside `text`, `None` for a bare tool or `Tool(*)`.
    spec: Option<(usize, usize)>,
}

/// Read-family tools (Read rules govern all of them).
pub(crate) const READ_TOOLS: [&str; 3] = ["Read", "Glob", "Grep"];
/// Edit-family tools (Edit rules govern all of them).
pub(crate) const EDIT_TOOLS: [&str; 4] = ["Edit", "Write", "MultiEdit", "NotebookEdit"];

/// Whether rules naming `tool` have a specifier grammar of their own (Bash commands, paths,
/// domains, subagent types), so that its rules speak about what a call acts on rather than
/// about the tool by name. A tool that is not built in must not take one of these names: its
/// rules would be read with a grammar that is not about it.
pub(crate) fn has_specifier_grammar(tool: &str) -> bool {
    matches!(
        tool,
        "Bash"
            | "Read"
            | "Glob"
            | "Grep"
            | "Edit"
            | "Write"
            | "MultiEdit"
            | "NotebookEdit"
            | "Agent"
            | "Task"
            | "WebFetch"
    )
}

impl Rule {
    /// Parses a rule. `Tool(*)` is the same rule as `Tool` (but still prints as written).
    pub(crate) fn parse(text: &str) -> Result<Rule, RuleError> {
        if text.trim().is_empty() {
            return Err(RuleError::Empty);
        }
        let owned = || text.to_string();
        let (tool, spec) = match text.find('(') {
            None => {
                if text.contains(')') {
                    return Err(RuleError::UnbalancedParens(owned()));
                }
                (text, None)
            }
            Some(open) => {
                if !text.ends_with(')') || text.len() < open + 2 {
                    return Err(RuleError::UnbalancedParens(owned()));
                }
                let inner = &text[open + 1..text.len() - 1];
                if !balanced(inner) {
                    return Err(RuleError::UnbalancedParens(owned()));
                }
                (&text[..open], Some((open + 1, text.len() - 1)))
            }
        };
        if tool.is_empty() {
            return Err(RuleError::EmptyToolName(owned()));
        }
        let is_mcp = tool.starts_with("mcp__");
        let valid_char =
            |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || (is_mcp && c == '*');
        if !tool.chars().all(valid_char) || tool.starts_with('-') {
            return Err(RuleError::InvalidToolName(owned()));
        }
        let spec = match spec {
            Some((a, b)) if a == b => return Err(RuleError::EmptySpecifier(owned())),
            Some((a, b)) if text[a..b].trim() == "*" => None,
            other => other,
        };
        if let Some((a, b)) = spec {
            let s = &text[a..b];
            match tool {
                "Bash" | "Read" | "Glob" | "Grep" | "Edit" | "Write" | "MultiEdit"
                | "NotebookEdit" | "Agent" | "Task" => {}
                "WebFetch" => {
                    let ok = s
                        .strip_prefix("domain:")
                        .is_some_and(|h| !h.trim().is_empty());
                    if !ok {
                        return Err(RuleError::InvalidSpecifier {
                            rule: owned(),
                            why: "expected domain:<host>".into(),
                        });
                    }
                }
                _ if is_mcp => {
                    return Err(RuleError::SpecifierNotAllowed {
                        tool: tool.to_string(),
                        rule: owned(),
                    });
                }
                // A tool toolrt does not know the specifier of (`Skill(x)`, `SlashCommand(/x)`):
                // the rule loads and is matched by the tool's name (see `policy`).
                _ => {}
            }
        }
        Ok(Rule {
            text: text.to_string(),
            tool_len: tool.len(),
            spec,
        })
    }

    /// The tool name part.
    pub(crate) fn tool(&self) -> &str {
        &self.text[..self.tool_len]
    }

    /// The specifier inside the parentheses; `None` for `Tool` and `Tool(*)`.
    pub(crate) fn specifier(&self) -> Option<&str> {
        self.spec.map(|(a, b)| &self.text[a..b])
    }

    /// Whether toolrt can check this rule's specifier against a call (Bash, file, WebFetch and
    /// Agent specifiers). A rule like `Skill(x)` loads, but its specifier is not read.
    pub(crate) fn specifier_is_checked(&self) -> bool {
        self.spec.is_none() || has_specifier_grammar(self.tool())
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for Rule {
    type Err = RuleError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Rule::parse(s)
    }
}

/// Whether parentheses inside a specifier pair up; a backslash escapes the next character.
fn balanced(s: &str) -> bool {
    let mut depth = 0usize;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '(' => depth += 1,
            ')' => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => {}
        }
    }
    depth == 0
}

/// Splits a command-line rule list (`--allowed-tools "Bash(git log:*) Read,Edit"`) on commas and
/// whitespace outside parentheses, as the reference CLI does.
pub(crate) fn split_rule_list(list: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = None;
    for (i, c) in list.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' | ' ' | '\t' | '\n' if depth == 0 => {
                if let Some(s) = start.take() {
                    out.push(&list[s..i]);
                }
                continue;
            }
            _ => {}
        }
        if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push(&list[s..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parse_table() {
        for (text, tool, spec) in [
            ("Bash", "Bash", None),
            ("Bash(*)", "Bash", None),
            ("Bash(npm run test:*)", "Bash", Some("npm run test:*")),
            ("Read(./.env)", "Read", Some("./.env")),
            ("Bash(echo (a))", "Bash", Some("echo (a)")),
            (
                "WebFetch(domain:example.com)",
                "WebFetch",
                Some("domain:example.com"),
            ),
            ("mcp__srv__*", "mcp__srv__*", None),
            ("mcp__srv", "mcp__srv", None),
            ("MyTool", "MyTool", None),
            ("Skill(x)", "Skill", Some("x")),
            (
                "SlashCommand(/deploy prod)",
                "SlashCommand",
                Some("/deploy prod"),
            ),
            ("MyTool(x)", "MyTool", Some("x")),
        ] {
            let r = Rule::parse(text).unwrap();
            assert_eq!(r.tool(), tool, "{text}");
            assert_eq!(r.specifier(), spec, "{text}");
            assert_eq!(r.to_string(), text);
        }
    }

    #[test]
    fn malformed_table() {
        for (text, want) in [
            ("", "empty rule"),
            ("Bash(ls", "unbalanced parentheses in rule \"Bash(ls\""),
            ("Bash(ls))", "unbalanced parentheses in rule \"Bash(ls))\""),
            (
                "Bash(ls) x",
                "unbalanced parentheses in rule \"Bash(ls) x\"",
            ),
            ("Bashls)", "unbalanced parentheses in rule \"Bashls)\""),
            ("(ls)", "empty tool name in rule \"(ls)\""),
            ("Ba sh", "invalid tool name in rule \"Ba sh\""),
            ("Bash()", "empty specifier in rule \"Bash()\""),
            (
                "mcp__srv__tool(x)",
                "tool mcp__srv__tool takes no specifier, in rule \"mcp__srv__tool(x)\"",
            ),
            (
                "WebFetch(example.com)",
                "invalid specifier in rule \"WebFetch(example.com)\": expected domain:<host>",
            ),
            ("Ba*sh", "invalid tool name in rule \"Ba*sh\""),
        ] {
            assert_eq!(Rule::parse(text).unwrap_err().to_string(), want, "{text:?}");
        }
    }

    #[test]
    fn split_table() {
        assert_eq!(
            split_rule_list("Bash(git log:*) Read,Edit"),
            vec!["Bash(git log:*)", "Read", "Edit"]
        );
        assert_eq!(split_rule_list("Bash(a, b c)"), vec!["Bash(a, b c)"]);
        assert_eq!(split_rule_list(" , "), Vec::<&str>::new());
    }

    proptest! {
        #[test]
        fn display_round_trips(tool in "[A-Z][a-zA-Z]{0,8}|Bash|Read|Edit", spec in proptest::option::of("[ -'*-~]{1,20}")) {
            let text = match &spec { Some(s) => format!("{tool}({s})"), None => tool.clone() };
            if let Ok(rule) = Rule::parse(&text) {
                prop_assert_eq!(rule.to_string(), text.clone());
                let again = Rule::parse(&rule.to_string()).unwrap();
                prop_assert_eq!(again, rule);
            }
        }

        #[test]
        fn never_panics(text in "\\PC{0,30}") {
            let _ = Rule::parse(&text);
            let _ = split_rule_list(&text);
        }
    }
}
