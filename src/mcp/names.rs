//! MCP tool names as rules and hooks see them: `mcp__<server>__<tool>`, each part with every
//! character outside `[A-Za-z0-9_-]` replaced by `_` (the reference CLI's convention, case kept,
//! no length cut).

/// `name` with every character outside `[A-Za-z0-9_-]` replaced by `_`.
pub(crate) fn normalize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The registry name of `tool` of `server`.
pub(crate) fn tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{}__{}", normalize(server), normalize(tool))
}

/// The server part of an MCP name: `mcp__srv__tool` and `mcp__srv` both give `srv`; the server
/// ends at the first `__` after the prefix (a tool name may itself hold `__`).
pub(crate) fn server_of(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("mcp__")?;
    let server = rest.split_once("__").map_or(rest, |(s, _)| s);
    (!server.is_empty()).then_some(server)
}

/// Whether two server names name the same server (equal, or equal once normalised).
pub(crate) fn same_server(a: &str, b: &str) -> bool {
    a == b || normalize(a) == normalize(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised_and_parsed_back() {
        for (server, tool, name) in [
            ("memory", "create_entities", "mcp__memory__create_entities"),
            ("my.server", "get data", "mcp__my_server__get_data"),
            ("everything", "get-sum", "mcp__everything__get-sum"),
            ("Srv", "a/b:c", "mcp__Srv__a_b_c"),
            ("é", "ü", "mcp______"),
        ] {
            assert_eq!(tool_name(server, tool), name, "{server} {tool}");
        }
        for (name, server) in [
            ("mcp__srv__tool", Some("srv")),
            ("mcp__srv__a__b", Some("srv")),
            ("mcp__srv", Some("srv")),
            ("mcp__", None),
            ("mcp____x", None),
            ("Bash", None),
        ] {
            assert_eq!(server_of(name), server, "{name}");
        }
        assert!(same_server("my.server", "my_server"));
        assert!(!same_server("a", "b"));
    }
}
