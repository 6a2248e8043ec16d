//! How every HTTP client of toolrt starts (WebFetch, HTTP hooks, MCP servers over HTTP, the
//! OTLP exporter): the crypto provider chosen once, toolrt named in `User-Agent`. Each caller
//! adds what its requests need (redirects, proxies, time limits).

use std::sync::OnceLock;

/// A client builder with toolrt's common settings.
pub(crate) fn builder() -> reqwest::ClientBuilder {
    // reqwest is built without a default crypto provider; install ring's unless the process
    // already chose one (then that one is used).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().user_agent(concat!("toolrt/", env!("CARGO_PKG_VERSION")))
}

/// The client kept in `cell`, built at first use from [`builder`] with `settings` applied (its
/// connections are pooled for every later request); a client that cannot be built is the same
/// error every time.
pub(crate) fn kept(
    cell: &OnceLock<Result<reqwest::Client, String>>,
    settings: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
) -> Result<&reqwest::Client, String> {
    cell.get_or_init(|| {
        settings(builder())
            .build()
            .map_err(|e| format!("could not set up the HTTP client: {e}"))
    })
    .as_ref()
    .map_err(Clone::clone)
}
