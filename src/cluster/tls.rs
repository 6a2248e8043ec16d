//! TLS on the link between a coordinator and its workers (ractor_cluster's own TLS streams):
//! a worker proves who it is with a certificate (`toolrt worker --tls-cert --tls-key`), the
//! coordinator checks it against the CA it is given (`serve --tls-ca`), and everything on the
//! link, the cookie challenge included, is encrypted. A worker may also ask coordinators for a
//! certificate of their own (`toolrt worker --tls-client-ca`, `serve --tls-cert --tls-key`);
//! the cookie is asked for in any case.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// A certificate and its key (PEM files): a worker's, or a coordinator's client certificate.
#[derive(Debug, Clone)]
pub struct TlsIdentity {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
}

/// What a coordinator trusts a worker by, and what it shows a worker that asks.
#[derive(Debug, Clone)]
pub struct TlsTrust {
    /// The CA certificates (PEM) a worker's certificate must chain to.
    pub ca: PathBuf,
    /// The name a worker's certificate must hold; None: the IP address it is dialed at.
    pub server_name: Option<String>,
    /// The coordinator's own certificate, for workers that ask for one (`--tls-client-ca`).
    pub client: Option<TlsIdentity>,
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

/// The CA certificates of a PEM file as a root store; `flag` names where the file came from.
fn roots(path: &Path, flag: &str) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in certs(path, &format!("CA file ({flag})"))? {
        roots.add(cert).map_err(|e| {
            format!(
                "the CA file ({flag}) {} holds a certificate that cannot be a root: {e}",
                path.display()
            )
        })?;
    }
    Ok(roots)
}

impl TlsIdentity {
    /// The chain and key, read; errors name the flags they came from.
    fn load(&self) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
        let chain = certs(&self.cert, "certificate file (--tls-cert)")?;
        let key = PrivateKeyDer::from_pem_file(&self.key).map_err(|e| {
            format!(
                "cannot read the private key file (--tls-key) {}: {e}",
                self.key.display()
            )
        })?;
        Ok((chain, key))
    }

    fn unusable(&self, e: rustls::Error) -> String {
        format!(
            "the certificate {} and key {} cannot be used together: {e}",
            self.cert.display(),
            self.key.display()
        )
    }

    /// The acceptor a worker's node server encrypts its incoming links with; with
    /// `client_ca`, a coordinator must present a certificate that CA file signed.
    pub(crate) fn acceptor(
        &self,
        client_ca: Option<&Path>,
    ) -> Result<tokio_rustls::TlsAcceptor, String> {
        let (chain, key) = self.load()?;
        let builder = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| format!("TLS: {e}"))?;
        let builder = match client_ca {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                let roots = Arc::new(roots(ca, "--tls-client-ca")?);
                let verifier =
                    rustls::server::WebPkiClientVerifier::builder_with_provider(roots, provider())
                        .build()
                        .map_err(|e| format!("--tls-client-ca {}: {e}", ca.display()))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let config = builder
            .with_single_cert(chain, key)
            .map_err(|e| self.unusable(e))?;
        Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
    }
}

impl TlsTrust {
    /// The connector a coordinator dials its workers with.
    pub(crate) fn connector(&self) -> Result<tokio_rustls::TlsConnector, String> {
        let builder = rustls::ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| format!("TLS: {e}"))?
            .with_root_certificates(roots(&self.ca, "--tls-ca")?);
        let config = match &self.client {
            None => builder.with_no_client_auth(),
            Some(identity) => {
                let (chain, key) = identity.load()?;
                (builder.with_client_auth_cert(chain, key)).map_err(|e| identity.unusable(e))?
            }
        };
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
        identity.acceptor(None).unwrap();
        identity.acceptor(Some(&fixture("client-ca.pem"))).unwrap();
        let trust = TlsTrust {
            ca: fixture("ca.pem"),
            server_name: None,
            client: None,
        };
        trust.connector().unwrap();
        let with_client = TlsTrust {
            client: Some(TlsIdentity {
                cert: fixture("coordinator.pem"),
                key: fixture("coordinator.key"),
            }),
            ..trust.clone()
        };
        with_client.connector().unwrap();
        let err = identity
            .acceptor(Some(&fixture("README.md")))
            .err()
            .unwrap();
        assert!(
            err.contains("--tls-client-ca") && err.contains("no PEM certificate"),
            "{err}"
        );
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
        let err = missing.acceptor(None).err().unwrap();
        assert!(
            err.contains("--tls-cert") && err.contains("nope.pem"),
            "{err}"
        );
        // A key that is not the certificate's.
        let mismatched = TlsIdentity {
            cert: fixture("ca.pem"),
            key: fixture("worker.key"),
        };
        let err = mismatched.acceptor(None).err().unwrap();
        assert!(err.contains("cannot be used together"), "{err}");
        let not_pem = TlsTrust {
            ca: fixture("README.md"),
            server_name: None,
            client: None,
        };
        let err = not_pem.connector().err().unwrap();
        assert!(err.contains("holds no PEM certificate"), "{err}");
        let bad_name = TlsTrust {
            ca: fixture("ca.pem"),
            server_name: Some("not a name!".into()),
            client: None,
        };
        assert!(bad_name.server_name().is_err());
    }
}
