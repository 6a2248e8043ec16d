//! Where and how traces are exported, from the standard OpenTelemetry environment variables.

use std::time::Duration;

/// Where and how call spans are exported (OTLP/HTTP, JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpConfig {
    /// The full URL spans are POSTed to (`…/v1/traces`).
    pub endpoint: String,
    /// Extra request headers (authentication, tenant).
    pub headers: Vec<(String, String)>,
    /// How long one export request may take.
    pub timeout: Duration,
    /// Resource attributes: `service.name` first, then `OTEL_RESOURCE_ATTRIBUTES`.
    pub resource: Vec<(String, String)>,
}

/// A tracing variable that cannot be used: naming it, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var}: {why}")]
pub struct OtlpConfigError {
    /// The environment variable.
    pub var: &'static str,
    /// What is wrong with it.
    pub why: String,
}

/// The default per-request time limit (the OTLP exporter specification's).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl OtlpConfig {
    /// Reads the standard variables from the process environment: None when traces are not
    /// wanted (no endpoint, `OTEL_SDK_DISABLED=true`, `OTEL_TRACES_EXPORTER=none`).
    pub fn from_env() -> Result<Option<Self>, OtlpConfigError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// [`OtlpConfig::from_env`] over any source of variables.
    pub fn from_vars(
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, OtlpConfigError> {
        let get = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if get("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        if let Some(exporter) = get("OTEL_TRACES_EXPORTER") {
            match exporter.trim() {
                "none" => return Ok(None),
                "otlp" => {}
                other => {
                    return Err(OtlpConfigError {
                        var: "OTEL_TRACES_EXPORTER",
                        why: format!(
                            "{other:?} is not supported (toolrt exports `otlp` or `none`)"
                        ),
                    });
                }
            }
        }
        let endpoint = match (
            get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            get("OTEL_EXPORTER_OTLP_ENDPOINT"),
        ) {
            (Some(url), _) => checked_url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url)?,
            (None, Some(base)) => {
                let base = checked_url("OTEL_EXPORTER_OTLP_ENDPOINT", base)?;
                format!("{}/v1/traces", base.trim_end_matches('/'))
            }
            (None, None) => return Ok(None),
        };
        for name in [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ] {
            if let Some(protocol) = get(name) {
                // OTLP/HTTP receivers take both encodings at the same URL, so a setting
                // meant for protobuf exporters is served by JSON too; gRPC is another protocol.
                if !matches!(protocol.trim(), "http/json" | "http/protobuf") {
                    return Err(OtlpConfigError {
                        var: if name.contains("TRACES") {
                            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
                        } else {
                            "OTEL_EXPORTER_OTLP_PROTOCOL"
                        },
                        why: format!(
                            "{protocol:?} is not supported: toolrt exports OTLP over HTTP (as JSON); unset it or set `http/json`"
                        ),
                    });
                }
                break;
            }
        }
        let mut headers = Vec::new();
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            if let Some(list) = get(name) {
                let var = if name.contains("TRACES") {
                    "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
                } else {
                    "OTEL_EXPORTER_OTLP_HEADERS"
                };
                for (k, v) in pairs(var, &list)? {
                    // The traces-specific list overrides the general one, key by key.
                    headers.retain(|(key, _): &(String, String)| !key.eq_ignore_ascii_case(&k));
                    headers.push((k, v));
                }
            }
        }
        let timeout = match (
            get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"),
            get("OTEL_EXPORTER_OTLP_TIMEOUT"),
        ) {
            (Some(ms), _) => millis("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", &ms)?,
            (None, Some(ms)) => millis("OTEL_EXPORTER_OTLP_TIMEOUT", &ms)?,
            (None, None) => DEFAULT_TIMEOUT,
        };
        let mut resource = match get("OTEL_RESOURCE_ATTRIBUTES") {
            Some(list) => pairs("OTEL_RESOURCE_ATTRIBUTES", &list)?,
            None => Vec::new(),
        };
        let service = get("OTEL_SERVICE_NAME")
            .or_else(|| {
                resource
                    .iter()
                    .find(|(k, _)| k == "service.name")
                    .map(|(_, v)| v.clone())
            })
            .unwrap_or_else(|| "toolrt".into());
        resource.retain(|(k, _)| k != "service.name");
        resource.insert(0, ("service.name".into(), service));
        Ok(Some(Self {
            endpoint,
            headers,
            timeout,
            resource,
        }))
    }
}

/// An `http://` or `https://` URL.
fn checked_url(var: &'static str, url: String) -> Result<String, OtlpConfigError> {
    let url = url.trim().to_string();
    match reqwest::Url::parse(&url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(url),
        Ok(u) => Err(OtlpConfigError {
            var,
            why: format!(
                "{url:?} is not an http:// or https:// URL (scheme {:?})",
                u.scheme()
            ),
        }),
        Err(e) => Err(OtlpConfigError {
            var,
            why: format!("{url:?} is not a URL ({e})"),
        }),
    }
}

/// A whole number of milliseconds.
fn millis(var: &'static str, ms: &str) -> Result<Duration, OtlpConfigError> {
    ms.trim()
        .parse::<u64>()
        .map(Duration::from_millis)
        .map_err(|_| OtlpConfigError {
            var,
            why: format!("{ms:?} is not a whole number of milliseconds"),
        })
}

/// `key=value,key2=value2` with percent-encoded values (the W3C Baggage form the variables
/// use).
fn pairs(var: &'static str, list: &str) -> Result<Vec<(String, String)>, OtlpConfigError> {
    let mut out = Vec::new();
    for item in list.split(',').filter(|i| !i.trim().is_empty()) {
        let Some((k, v)) = item.split_once('=') else {
            return Err(OtlpConfigError {
                var,
                why: format!("{:?} is not of the form key=value", item.trim()),
            });
        };
        let key = k.trim();
        if key.is_empty() {
            return Err(OtlpConfigError {
                var,
                why: format!("{:?} has an empty key", item.trim()),
            });
        }
        let value = percent_decode(v.trim()).ok_or_else(|| OtlpConfigError {
            var,
            why: format!("the value of {key:?} has an invalid percent-encoding"),
        })?;
        out.push((key.to_string(), value));
    }
    Ok(out)
}

/// Decodes `%XX` escapes; None for a broken escape or a result that is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Result<Option<OtlpConfig>, OtlpConfigError> {
        OtlpConfig::from_vars(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn no_endpoint_or_disabled_means_no_exporter() {
        for vars in [
            &[][..],
            &[("OTEL_EXPORTER_OTLP_ENDPOINT", "")],
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_SDK_DISABLED", "true"),
            ],
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_TRACES_EXPORTER", "none"),
            ],
        ] {
            assert_eq!(from(vars), Ok(None), "{vars:?}");
        }
    }

    #[test]
    fn endpoints_headers_timeout_service() {
        // (variables, endpoint, headers, timeout ms, service.name)
        type Case<'a> = (
            &'a [(&'a str, &'a str)],
            &'a str,
            &'a [(&'a str, &'a str)],
            u64,
            &'a str,
        );
        let cases: &[Case] = &[
            (
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")],
                "http://127.0.0.1:4318/v1/traces",
                &[],
                10_000,
                "toolrt",
            ),
            (
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/otlp/")],
                "http://collector:4318/otlp/v1/traces",
                &[],
                10_000,
                "toolrt",
            ),
            // The traces endpoint is used as it is, and wins.
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
                    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://b/x"),
                ],
                "https://b/x",
                &[],
                10_000,
                "toolrt",
            ),
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
                    (
                        "OTEL_EXPORTER_OTLP_HEADERS",
                        "Authorization=Bearer%20abc, x-tenant = one",
                    ),
                    ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "X-Tenant=two"),
                    ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
                    ("OTEL_SERVICE_NAME", "agents"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
                ],
                "http://a:4318/v1/traces",
                &[("Authorization", "Bearer abc"), ("X-Tenant", "two")],
                2_500,
                "agents",
            ),
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
                    ("OTEL_RESOURCE_ATTRIBUTES", "service.name=res,team=x"),
                ],
                "http://a:4318/v1/traces",
                &[],
                10_000,
                "res",
            ),
        ];
        for (vars, endpoint, headers, timeout, service) in cases {
            let c = from(vars).expect("valid").expect("on");
            assert_eq!(c.endpoint, *endpoint, "{vars:?}");
            let want: Vec<(String, String)> = headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(c.headers, want, "{vars:?}");
            assert_eq!(c.timeout, Duration::from_millis(*timeout), "{vars:?}");
            assert_eq!(c.resource[0], ("service.name".into(), service.to_string()));
            assert_eq!(
                c.resource
                    .iter()
                    .filter(|(k, _)| k == "service.name")
                    .count(),
                1
            );
        }
    }

    #[test]
    fn bad_variables_are_named() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")],
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ),
            (
                &[("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://x")],
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ),
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"),
                    ("OTEL_EXPORTER_OTLP_HEADERS", "novalue"),
                ],
                "OTEL_EXPORTER_OTLP_HEADERS",
            ),
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"),
                    ("OTEL_EXPORTER_OTLP_HEADERS", "a=%zz"),
                ],
                "OTEL_EXPORTER_OTLP_HEADERS",
            ),
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"),
                    ("OTEL_EXPORTER_OTLP_TIMEOUT", "10s"),
                ],
                "OTEL_EXPORTER_OTLP_TIMEOUT",
            ),
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"),
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ],
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ),
            (
                &[
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"),
                    ("OTEL_TRACES_EXPORTER", "zipkin"),
                ],
                "OTEL_TRACES_EXPORTER",
            ),
        ];
        for (vars, var) in cases {
            let err = from(vars).expect_err("refused");
            assert_eq!(err.var, *var, "{vars:?}");
            assert!(err.to_string().starts_with(var), "{err}");
        }
    }
}
