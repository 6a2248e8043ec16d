//! `${VAR}` expansion in a server's configuration, done once the server is known to be
//! started (an unapproved server's unset variables are no error).

use super::{McpConfigError, ServerConfig, Transport};

/// A variable `${NAME}` that is unset and has no default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unset(pub String);

/// Expands `${VAR}` and `${VAR:-default}` in `text`. A set variable is used even when empty;
/// the default (which runs to the first `}`) only when it is unset. `$VAR` without braces and a
/// `${…}` whose name is not an identifier are left as they are.
pub(crate) fn expand_str(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, Unset> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        let is_ident = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_ident {
            out.push_str("${");
            rest = after;
            continue;
        }
        match (lookup(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(Unset(name.to_string())),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A server ready to start: every `${VAR}` expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Launch {
    /// The configuration it came from (names, file, timeouts).
    pub config: ServerConfig,
    /// The transport with expanded values.
    pub transport: Transport,
}

/// Expands the fields the reference expands — a stdio server's `command`, `args` and `env`
/// values, an http server's `url` and `headers` values — or names the server and field of the
/// first unset variable.
pub(crate) fn expand(
    config: &ServerConfig,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Launch, McpConfigError> {
    let at = format!("mcpServers.{}", config.name);
    let field = |key: String, text: &str| {
        expand_str(text, lookup).map_err(|Unset(var)| McpConfigError {
            file: config.file.display().to_string(),
            key,
            message: format!(
                "${{{var}}} is not set and has no default (write ${{{var}:-default}} for one); server {:?} is not started",
                config.name
            ),
        })
    };
    let transport = match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => Transport::Stdio {
            command: field(format!("{at}.command"), command)?,
            args: args
                .iter()
                .enumerate()
                .map(|(i, a)| field(format!("{at}.args[{i}]"), a))
                .collect::<Result<_, _>>()?,
            env: env
                .iter()
                .map(|(k, v)| Ok((k.clone(), field(format!("{at}.env.{k}"), v)?)))
                .collect::<Result<_, McpConfigError>>()?,
            cwd: cwd.clone(),
        },
        Transport::Http { url, headers } => {
            let url = field(format!("{at}.url"), url)?;
            if url.is_empty() {
                return Err(McpConfigError {
                    file: config.file.display().to_string(),
                    key: format!("{at}.url"),
                    message: "is empty".into(),
                });
            }
            Transport::Http {
                url,
                headers: headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), field(format!("{at}.headers.{k}"), v)?)))
                    .collect::<Result<_, McpConfigError>>()?,
            }
        }
        other => other.clone(),
    };
    Ok(Launch {
        config: config.clone(),
        transport,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `SET` is "value", `EMPTY` is set and empty, anything else is unset (the config tests
    /// use it too).
    pub(in crate::mcp::config) fn lookup(name: &str) -> Option<String> {
        match name {
            "SET" => Some("value".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expansion_table() {
        for (text, want) in [
            ("plain", Ok("plain")),
            ("${SET}", Ok("value")),
            ("a${SET}b${SET}", Ok("avaluebvalue")),
            ("${EMPTY:-d}", Ok("")),
            ("${UNSET:-d}", Ok("d")),
            ("${UNSET:-}", Ok("")),
            ("${UNSET:-a:-b}", Ok("a:-b")),
            ("$SET", Ok("$SET")),
            ("${1X}", Ok("${1X}")),
            ("${not closed", Ok("${not closed")),
            ("Bearer ${UNSET}", Err("UNSET")),
        ] {
            let got = expand_str(text, &lookup);
            match want {
                Ok(w) => assert_eq!(got, Ok(w.to_string()), "{text}"),
                Err(var) => assert_eq!(got, Err(Unset(var.into())), "{text}"),
            }
        }
    }
}
