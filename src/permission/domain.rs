//! `WebFetch(domain:host)` patterns (SEMANTICS.md §3.5).

/// A compiled host pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DomainPattern {
    /// `example.com`
    Exact(String),
    /// `*.example.com`: any depth of subdomain, not the apex. Holds `.example.com`.
    Subdomains(String),
    /// `example.*`: one more label. Holds `example.`.
    AnyTld(String),
}

impl DomainPattern {
    /// Compiles the part after `domain:`.
    pub(crate) fn compile(host: &str) -> DomainPattern {
        let h = clean(host.trim());
        if let Some(rest) = h.strip_prefix("*.") {
            DomainPattern::Subdomains(format!(".{rest}"))
        } else if let Some(rest) = h.strip_suffix(".*") {
            DomainPattern::AnyTld(format!("{rest}."))
        } else {
            DomainPattern::Exact(h)
        }
    }

    /// Whether a (cleaned) host matches.
    pub(crate) fn matches(&self, host: &str) -> bool {
        match self {
            DomainPattern::Exact(h) => host == h,
            DomainPattern::Subdomains(suffix) => {
                host.len() > suffix.len() && host.ends_with(suffix.as_str())
            }
            DomainPattern::AnyTld(prefix) => host
                .strip_prefix(prefix.as_str())
                .is_some_and(|label| !label.is_empty() && !label.contains('.')),
        }
    }
}

/// Lowercase, without a trailing dot.
fn clean(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// The host of a URL, cleaned; `None` when there is none.
pub(crate) fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority
        .rsplit_once('@')
        .map(|(_, h)| h)
        .unwrap_or(authority);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    let host = clean(host);
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_table() {
        for (pat, url, want) in [
            ("example.com", "https://example.com/x", true),
            ("example.com", "https://EXAMPLE.com./x", true),
            ("example.com", "https://a.example.com/x", false),
            ("*.example.com", "https://a.b.example.com/", true),
            ("*.example.com", "https://example.com/", false),
            ("*.example.com", "https://badexample.com/", false),
            ("example.*", "https://example.org", true),
            ("example.*", "https://example.evil.com", false),
            ("example.com", "https://user:pw@example.com:8443/p?q", true),
            ("example.com", "https://example.com@evil.com/", false),
        ] {
            let got = host_of(url).is_some_and(|h| DomainPattern::compile(pat).matches(&h));
            assert_eq!(got, want, "{pat} {url}");
        }
    }
}
