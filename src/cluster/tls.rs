//! TLS on the link between a coordinator and its workers (ractor_cluster's own TLS streams):
//! a worker proves who it is with a certificate (`toolrt worker --tls-cert --tls-key`), the
//! coordinator checks it against the CA it is given (`serve --tls-ca`), and everything on the
//! link, the cookie challenge included, is encrypted. The cookie still decides who may talk to
//! a worker.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// A worker's certificate and key (PEM files).
#[derive(Debug, Clone)]
pub struct TlsIdentity {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
}

/// What a coordinator trusts a worker by.
#[derive(Debug, Clone)]
pub struct TlsTrust {
    /// The CA certificates (PEM) a worker's certificate must chain to.
    pub ca: PathBuf,
    /// The name a worker's certificate must hold; None: the IP address it is dialed at.
    pub server_name: Option<String>,
}

/// The crypto provider, named: rustls picks none by itself when more than one is linked.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Every certificate of a PEM file; none is an error.
fn certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let read = |e: rustls::pki_types::pem::Error| {
        format!("cannot read the {what} {}: {e}", path.display())
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(read)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(read)?;
    if certs.is_empty() {
        return Err(format!(
            "the {what} {} holds no PEM certificate",
            path.display()
        ));
    }
    Ok(certs)
}

impl TlsIdentity {
    /// The acceptor a worker's node server encrypts its incoming links with.
    pub(crate) fn acceptor(&self) -> Result<tokio_rustls::TlsAcceptor, String> {
        let chain = certs(&self.cert, "certificate file (--tls-cert)")?;
        let key = PrivateKeyDer::from_pem_file(&self.key).map_err(|e| {
            format!(
                "cannot read the private key file (--tls-key) {}: {e}",
                self.key.display()
            )
        })?;
        let config = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| format!("TLS: {e}"))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| {
                format!(
                    "the certificate {} and key {} cannot be used together: {e}",
                    self.cert.display(),
                    self.key.display()
                )
            })?;
        Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
    }
}

impl TlsTrust {
    /// The connector a coordinator dials its workers with.
    pub(crate) fn connector(&self) -> Result<tokio_rustls::TlsConnector, String> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in certs(&self.ca, "CA file (--tls-ca)")? {
            roots.add(cert).map_err(|e| {
                format!(
                    "the CA file (--tls-ca) {} holds a certificate that cannot be a root: {e}",
                    self.ca.display()
                )
            })?;
        }
        let config = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| format!("TLS: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
    }

    /// `--tls-server-name`, checked: the name every worker's certificate must hold (None: each
    /// worker's IP address, [`name_for`]).
    pub(crate) fn server_name(&self) -> Result<Option<ServerName<'static>>, String> {
        (self.server_name.clone())
            .map(|name| {
                ServerName::try_from(name.clone())
                    .map_err(|e| format!("--tls-server-name {name:?}: {e}"))
            })
            .transpose()
    }
}

/// The name the certificate of the worker at `addr` must hold: `fixed` (`--tls-server-name`),
/// else the address it is dialed at.
pub(crate) fn name_for(
    fixed: Option<&ServerName<'static>>,
    addr: SocketAddr,
) -> ServerName<'static> {
    fixed
        .cloned()
        .unwrap_or_else(|| ServerName::IpAddress(addr.ip().into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/tls")
            .join(name)
    }

    #[test]
    fn the_test_material_loads_and_bad_files_say_which() {
        let identity = TlsIdentity {
            cert: fixture("worker.pem"),
            key: fixture("worker.key"),
        };
        identity.acceptor().unwrap();
        let trust = TlsTrust {
            ca: fixture("ca.pem"),
            server_name: None,
        };
        trust.connector().unwrap();
        let addr: SocketAddr = "127.0.0.1:7101".parse().unwrap();
        assert_eq!(trust.server_name().unwrap(), None);
        assert_eq!(
            name_for(None, addr),
            ServerName::IpAddress(addr.ip().into())
        );
        let named = ServerName::try_from("toolrt-worker").unwrap();
        assert_eq!(name_for(Some(&named), addr), named);
        let missing = TlsIdentity {
            cert: fixture("nope.pem"),
            key: fixture("worker.key"),
        };
        let err = missing.acceptor().err().unwrap();
        assert!(
            err.contains("--tls-cert") && err.contains("nope.pem"),
            "{err}"
        );
        // A key that is not the certificate's.
        let mismatched = TlsIdentity {
            cert: fixture("ca.pem"),
            key: fixture("worker.key"),
        };
        let err = mismatched.acceptor().err().unwrap();
        assert!(err.contains("cannot be used together"), "{err}");
        let not_pem = TlsTrust {
            ca: fixture("README.md"),
            server_name: None,
        };
        let err = not_pem.connector().err().unwrap();
        assert!(err.contains("holds no PEM certificate"), "{err}");
        let bad_name = TlsTrust {
            ca: fixture("ca.pem"),
            server_name: Some("not a name!".into()),
        };
        assert!(bad_name.server_name().is_err());
    }
}
