//! `WebFetch`: fetches a URL over HTTP and returns its text (HTML as Markdown). Redirects are
//! followed by hand so every hop passes the permission rules again.
//!
//! TLS is rustls with the `ring` provider (reqwest's default, aws-lc-rs, needs a much heavier C
//! build); certificates are checked against the platform's trust store.

use super::limits;
use std::sync::OnceLock;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::Url;
use serde_json::{Value, json};

use super::str_field;
use crate::call::Input;
use crate::session::Session;
use crate::tool::{Access, StateKey, Subject, Tool, ToolContext, ToolOutput, Verdict};

/// Whether this build can fetch `https` URLs.
pub(crate) const TLS: bool = true;
/// Time for the whole fetch, redirects included.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of body read at most; the rest is cut with a note.
pub(crate) const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
/// Redirects followed at most.
pub(crate) const MAX_REDIRECTS: usize = 10;

/// The `WebFetch` tool. Holds one HTTP client (connection pool) for the whole session.
#[derive(Debug, Default)]
pub(crate) struct WebFetch {
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl WebFetch {
    fn client(&self) -> Result<&reqwest::Client, String> {
        crate::http_client::kept(&self.client, |b| {
            b.redirect(reqwest::redirect::Policy::none())
                .timeout(TIMEOUT)
                .connect_timeout(Duration::from_secs(10))
        })
    }
}

/// Checks that `raw` is an absolute http(s) URL this build can fetch.
pub(crate) fn check_url(raw: &str) -> Result<Url, String> {
    let url = Url::parse(raw.trim()).map_err(|e| {
        format!(
            "{raw:?} is not a valid URL ({e}); give a full URL such as https://example.com/page"
        )
    })?;
    match url.scheme() {
        "http" => {}
        "https" if TLS => {}
        "https" => {
            return Err(format!(
                "{raw} uses https, which this toolrt build cannot fetch (it was built without TLS); \
                 fetch an http URL, or use Bash with curl if that is allowed"
            ));
        }
        other => {
            return Err(format!(
                "{raw} uses the {other:?} scheme; WebFetch fetches only http and https URLs"
            ));
        }
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("{raw} has no host name"));
    }
    Ok(url)
}

#[async_trait]
impl Tool for WebFetch {
    fn access(&self) -> Access<'_> {
        Access {
            subject: Subject::Url { field: "url" },
            allowed_by_default: false,
        }
    }

    fn name(&self) -> &str {
        "WebFetch"
    }

    fn description(&self) -> &str {
        "Fetches a URL and returns its content as text (HTML converted to Markdown), headed by \
         the final URL and your `prompt`. toolrt runs no model: apply the prompt to the content \
         yourself. Redirects are followed only to hosts the permission rules allow; bodies over \
         10 MB are cut; the fetch times out after 30 s."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "maxLength": limits::URL_CHARS, "description": "The http(s) URL to fetch"},
                "prompt": {"type": "string", "maxLength": limits::TEXT_CHARS, "description": "What to look for in the page"}
            },
            "required": ["url", "prompt"],
            "additionalProperties": false
        })
    }

    fn is_concurrency_safe(&self, _input: &Input) -> bool {
        true
    }

    fn validate(&self, input: &Input, _session: &Session, _state: StateKey) -> Verdict {
        Verdict::Now(check_url(str_field(input, "url").unwrap_or_default()).map(|_| ()))
    }

    async fn call(&self, input: Input, ctx: ToolContext) -> ToolOutput {
        let prompt = str_field(&input, "prompt").unwrap_or_default().to_string();
        let url = match check_url(str_field(&input, "url").unwrap_or_default()) {
            Ok(u) => u,
            Err(e) => return ToolOutput::failed(e),
        };
        let client = match self.client() {
            Ok(c) => c,
            Err(e) => return ToolOutput::failed(e),
        };
        tokio::select! {
            out = fetch(client, url, &prompt, &ctx) => out,
            _ = tokio::time::sleep(TIMEOUT) => ToolOutput::timed_out(format!("the fetch did not finish within {} s", TIMEOUT.as_secs())),
            _ = ctx.cancel.cancelled() => ToolOutput::cancelled("cancelled"),
        }
    }
}

async fn fetch(client: &reqwest::Client, url: Url, prompt: &str, ctx: &ToolContext) -> ToolOutput {
    let started = std::time::Instant::now();
    let (mut response, url) = match follow(client, url, ctx).await {
        Ok(r) => r,
        Err(failed) => return failed,
    };
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let (body, cut) = match read_body(&mut response, &url).await {
        Ok(b) => b,
        Err(failed) => return failed,
    };
    let is_html =
        content_type.contains("html") || (content_type.is_empty() && looks_like_html(&body));
    let textual = is_html
        || content_type.is_empty()
        || content_type.starts_with("text/")
        || content_type.contains("json")
        || content_type.contains("xml")
        || content_type.contains("javascript");
    if !textual {
        return ToolOutput::failed(format!(
            "{url} returned {content_type} ({} bytes), not text; WebFetch returns text only",
            body.len()
        ));
    }
    let text = String::from_utf8_lossy(&body).into_owned();
    let text = if is_html {
        match tokio::task::spawn_blocking(move || html_to_markdown(&text)).await {
            Ok(t) => t,
            Err(e) => return ToolOutput::failed(format!("converting the page failed: {e}")),
        }
    } else {
        text
    };
    let mut content = format!(
        "URL: {url}\nPrompt: {prompt}\nStatus: {status}\nContent-Type: {}\n\n{text}",
        if content_type.is_empty() {
            "(none)"
        } else {
            &content_type
        }
    );
    if cut {
        content.push_str(&format!(
            "\n\n[The body was cut at {MAX_BODY_BYTES} bytes; the rest was not fetched.]"
        ));
    }
    if status.is_success() {
        // The shape of the reference CLI's `WebFetchOutput`; toolrt runs no model, so `result`
        // is the page itself, as the model sees it.
        let response = ctx.hook_response.then(|| {
            json!({
                "bytes": body.len(),
                "code": status.as_u16(),
                "codeText": status.canonical_reason().unwrap_or_default(),
                "result": content,
                "durationMs": started.elapsed().as_millis() as u64,
                "url": url.as_str(),
            })
        });
        ToolOutput::success(content).with_response(response)
    } else {
        ToolOutput::failed(format!("HTTP {status} from {url}\n\n{content}"))
    }
}

/// Sends the request and follows redirects the permission rules allow: the response and the
/// URL it came from.
async fn follow(
    client: &reqwest::Client,
    mut url: Url,
    ctx: &ToolContext,
) -> Result<(reqwest::Response, Url), ToolOutput> {
    let mut hops = 0;
    let response = loop {
        let response = match client
            .get(url.clone())
            .header(
                "accept",
                "text/markdown, text/html;q=0.9, text/plain;q=0.8, */*;q=0.5",
            )
            .send()
            .await
        {
            Ok(r) => r,
            Err(e) => {
                return Err(ToolOutput::failed(format!(
                    "could not fetch {url}: {}",
                    error_chain(&e)
                )));
            }
        };
        if !response.status().is_redirection() {
            break response;
        }
        let Some(location) = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
        else {
            break response;
        };
        let next = match url.join(location) {
            Ok(n) => n,
            Err(e) => {
                return Err(ToolOutput::failed(format!(
                    "{url} redirects to {location:?}, which is not a valid URL ({e})"
                )));
            }
        };
        if !ctx.session.guard.judges_fetches() {
            return Err(ToolOutput::failed(format!(
                "{url} redirects ({}) to {next}, which was not followed: on a worker node the \
                 permission rules that judge a redirect are the coordinator's. Call WebFetch \
                 again with {next} if that is the page you want; that call is decided on its own",
                response.status()
            )));
        }
        if let Err(e) = check_url(next.as_str()) {
            return Err(ToolOutput::failed(format!(
                "{url} redirects to {next}, which cannot be followed: {e}"
            )));
        }
        if !ctx.session.guard.fetch_allowed(next.as_str()) {
            return Err(ToolOutput::failed(format!(
                "redirect to {} is not allowed by the permission rules ({url} redirects to {next}); \
                 the redirect was not followed",
                next.host_str().unwrap_or_default()
            )));
        }
        hops += 1;
        if hops > MAX_REDIRECTS {
            return Err(ToolOutput::failed(format!(
                "more than {MAX_REDIRECTS} redirects starting from {url}; stopped at {next}"
            )));
        }
        url = next;
    };
    Ok((response, url))
}

/// Reads the body, at most [`MAX_BODY_BYTES`]; whether it was cut.
async fn read_body(
    response: &mut reqwest::Response,
    url: &Url,
) -> Result<(Vec<u8>, bool), ToolOutput> {
    let mut body: Vec<u8> = Vec::new();
    let mut cut = false;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = MAX_BODY_BYTES - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    cut = true;
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => {
                return Err(ToolOutput::failed(format!(
                    "reading the body of {url} failed: {}",
                    error_chain(&e)
                )));
            }
        }
    }
    Ok((body, cut))
}

fn looks_like_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    head.contains("<!doctype html") || head.contains("<html")
}

/// Elements nested deeper than this are not converted to Markdown but stripped to their text:
/// the converter's work grows faster than the nesting (a page of 200,000 nested `<div>`s kept
/// a core busy for minutes after its call had ended; the blocking work cannot be stopped).
const MAX_CONVERTED_DEPTH: usize = 512;

/// Tags that never hold others, or that pages commonly leave open (the next one closes them):
/// not counted as nesting.
const NOT_NESTING: &[&str] = &[
    "area", "base", "br", "col", "dd", "dt", "embed", "hr", "img", "input", "li", "link", "meta",
    "option", "p", "param", "source", "td", "th", "tr", "track", "wbr",
];

/// Whether `html` nests elements deeper than [`MAX_CONVERTED_DEPTH`], by a linear scan of its
/// tags (an estimate that errs deep: an unclosed tag counts as open to the end).
fn nests_too_deep(html: &str) -> bool {
    let bytes = html.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(at) = bytes[i..].iter().position(|&b| b == b'<') {
        let start = i + at + 1;
        let closing = bytes.get(start) == Some(&b'/');
        let name_start = start + usize::from(closing);
        let name_len = bytes[name_start..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric())
            .count();
        i = name_start + name_len;
        if name_len == 0 {
            continue;
        }
        // The tag's end: scanning goes on after it, so the page is read once.
        let Some(end) = bytes[i..].iter().position(|&b| b == b'>').map(|e| i + e) else {
            break;
        };
        let self_closing = end > 0 && bytes[end - 1] == b'/';
        let name = html[name_start..name_start + name_len].to_ascii_lowercase();
        i = end + 1;
        if NOT_NESTING.contains(&name.as_str()) {
            continue;
        }
        if closing {
            depth = depth.saturating_sub(1);
        } else if !self_closing {
            depth += 1;
            if depth > MAX_CONVERTED_DEPTH {
                return true;
            }
        }
    }
    false
}

/// The text of `html` without its tags, whitespace runs folded: linear in the page's size.
fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut in_tag = false;
    let mut space = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                space = true;
            }
            _ if in_tag => {}
            c if c.is_whitespace() => space = true,
            c => {
                if space && !out.is_empty() {
                    out.push(' ');
                }
                space = false;
                out.push(c);
            }
        }
    }
    out
}

/// Readable Markdown from an HTML page (scripts, styles and other non-content dropped); the
/// page's text alone when it nests too deeply to convert in bounded time.
pub(crate) fn html_to_markdown(html: &str) -> String {
    if nests_too_deep(html) {
        return format!(
            "[toolrt: this page nests its elements more than {MAX_CONVERTED_DEPTH} deep; its text \
             without markup follows]\n{}",
            strip_tags(html)
        );
    }
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "svg", "head",
        ])
        .build();
    match converter.convert(html) {
        Ok(md) => md,
        Err(_) => html.to_string(),
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deeply_nested_page_is_stripped_not_converted() {
        let deep = format!(
            "<html><body>{}x{}</body></html>",
            "<div>".repeat(200_000),
            "</div>".repeat(200_000)
        );
        assert!(nests_too_deep(&deep));
        let text = html_to_markdown(&deep);
        assert!(text.ends_with("\nx"), "{}", &text[..text.len().min(200)]);
        // An ordinary page, with tags left open as pages do, is converted.
        let page = format!(
            "<html><body><ul>{}</ul><p>one<p>two<br><img src=a.png></body></html>",
            "<li>item".repeat(2_000)
        );
        assert!(!nests_too_deep(&page));
        assert!(html_to_markdown(&page).contains("two"));
        // Nesting up to the bound is converted.
        let at_bound = format!("{}y{}", "<div>".repeat(500), "</div>".repeat(500));
        assert!(!nests_too_deep(&at_bound));
    }

    #[test]
    fn url_checks() {
        assert!(check_url("http://127.0.0.1:8080/x").is_ok());
        assert!(check_url("ftp://x.org/").unwrap_err().contains("only http"));
        assert!(
            check_url("not a url")
                .unwrap_err()
                .contains("not a valid URL")
        );
        assert!(check_url("https://example.com/a?b").is_ok());
        assert!(check_url("http://").is_err());
    }

    #[test]
    fn html_becomes_markdown() {
        let md = html_to_markdown(
            "<html><head><title>t</title><script>x()</script></head><body><h1>Hello</h1><p>A <a href=\"/l\">link</a>.</p></body></html>",
        );
        assert!(md.contains("# Hello"), "{md}");
        assert!(md.contains("[link](/l)"), "{md}");
        assert!(!md.contains("x()"), "{md}");
    }
}
