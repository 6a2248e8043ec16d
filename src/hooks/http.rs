//! Running one `http` hook: POST the input JSON to its URL, read the response body as a command
//! hook's stdout. Header values may use `$VAR` / `${VAR}` only for names the hook lists in
//! `allowedEnvVars`; any other reference becomes empty, so a settings file cannot send a secret
//! it did not name.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

use super::command::CAPTURE_LIMIT;
use super::config::HttpHook;

/// How an HTTP hook run ended.
#[derive(Debug)]
pub(crate) enum HttpRun {
    /// The endpoint answered.
    Answered {
        /// The HTTP status code.
        status: u16,
        /// The body (the first [`CAPTURE_LIMIT`] bytes), read like a command hook's stdout.
        body: String,
        /// Bytes of the body past the limit, read and dropped.
        dropped: u64,
    },
    /// No answer: connection refused, bad TLS, a body that broke off, …
    Failed(String),
    /// No answer within the hook's timeout.
    TimedOut,
    /// The call was cancelled while waiting.
    Cancelled,
}

/// Headers toolrt sets itself; a hook's own value for them is ignored.
const RESERVED: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "content-type",
    "host",
];

fn client() -> Result<&'static reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    crate::http_client::kept(&CLIENT, |b| {
        // A hook's answer is the response to this request, never to another URL.
        b.redirect(reqwest::redirect::Policy::none())
            // A policy service is addressed directly, as the reference CLI does.
            .no_proxy()
            .connect_timeout(Duration::from_secs(10))
    })
}

/// `$VAR` and `${VAR}` (upper-case names, as the reference CLI reads them) replaced by the
/// variable's value when `allowed` names it, by nothing otherwise. CR, LF and NUL are dropped
/// from the result so a value cannot add a header of its own.
pub(crate) fn interpolate(
    value: &str,
    allowed: &[String],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> String {
    static VAR: OnceLock<regex::Regex> = OnceLock::new();
    let re = VAR.get_or_init(|| {
        regex::Regex::new(r"\$\{([A-Z_][A-Z0-9_]*)\}|\$([A-Z_][A-Z0-9_]*)").expect("valid regex")
    });
    let out = re.replace_all(value, |caps: &regex::Captures<'_>| {
        let name = caps
            .get(1)
            .or_else(|| caps.get(2))
            .map_or("", |m| m.as_str());
        if allowed.iter().any(|a| a == name) {
            lookup(name).unwrap_or_default()
        } else {
            tracing::warn!(
                variable = name,
                "http hook header names a variable not in its allowedEnvVars; left empty"
            );
            String::new()
        }
    });
    out.chars()
        .filter(|c| !matches!(c, '\r' | '\n' | '\0'))
        .collect()
}

/// The hook's headers with their variables filled in (see [`interpolate`]); toolrt's own
/// headers (`Content-Type`, `Content-Length`, …) are left out.
pub(crate) fn headers(
    hook: &HttpHook,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    hook.headers
        .iter()
        .filter(|(name, _)| !RESERVED.contains(&name.to_ascii_lowercase().as_str()))
        .map(|(name, value)| {
            (
                name.clone(),
                interpolate(value, &hook.allowed_env_vars, env),
            )
        })
        .collect()
}

/// POSTs `body` to `url` with `headers` (from [`headers`]) and reads the answer, within
/// `timeout`.
pub(crate) async fn run(
    url: &str,
    headers: &[(String, String)],
    body: Vec<u8>,
    timeout: Duration,
    cancel: &CancellationToken,
) -> HttpRun {
    let client = match client() {
        Ok(c) => c,
        Err(e) => return HttpRun::Failed(e),
    };
    let mut request = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    for (name, value) in headers {
        match (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            (Ok(n), Ok(v)) => request = request.header(n, v),
            _ => {
                return HttpRun::Failed(format!("header {name:?} has a value HTTP cannot carry"));
            }
        }
    }
    let exchange = async {
        let mut response = request.send().await.map_err(|e| error_chain(&e))?;
        let status = response.status().as_u16();
        let mut kept = Vec::new();
        let mut dropped = 0u64;
        while let Some(chunk) = response.chunk().await.map_err(|e| error_chain(&e))? {
            let room = CAPTURE_LIMIT.saturating_sub(kept.len());
            let keep = chunk.len().min(room);
            kept.extend_from_slice(&chunk[..keep]);
            dropped += (chunk.len() - keep) as u64;
        }
        Ok::<_, String>((status, kept, dropped))
    };
    tokio::select! {
        biased;
        _ = cancel.cancelled() => HttpRun::Cancelled,
        r = tokio::time::timeout(timeout, exchange) => match r {
            Err(_) => HttpRun::TimedOut,
            Ok(Err(e)) => HttpRun::Failed(e),
            Ok(Ok((status, kept, dropped))) => HttpRun::Answered {
                status,
                body: String::from_utf8_lossy(&kept).into_owned(),
                dropped,
            },
        },
    }
}

/// An error with its causes, one line (reqwest's own Display hides the cause).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::interpolate;

    #[test]
    fn interpolation_table() {
        let env = |name: &str| match name {
            "TOKEN" => Some("s3cret".to_owned()),
            "OTHER" => Some("leak".to_owned()),
            "EVIL" => Some("a\r\nX-Injected: 1".to_owned()),
            _ => None,
        };
        let allowed = vec!["TOKEN".to_owned(), "EVIL".to_owned(), "UNSET".to_owned()];
        for (value, want) in [
            ("Bearer $TOKEN", "Bearer s3cret"),
            ("Bearer ${TOKEN}", "Bearer s3cret"),
            ("${TOKEN}-$TOKEN", "s3cret-s3cret"),
            ("$OTHER", ""),
            ("x ${OTHER} y", "x  y"),
            ("$UNSET", ""),
            ("$EVIL", "aX-Injected: 1"),
            ("plain", "plain"),
            ("$lower stays", "$lower stays"),
            ("cost: $5", "cost: $5"),
        ] {
            assert_eq!(interpolate(value, &allowed, &env), want, "{value}");
        }
    }
}
