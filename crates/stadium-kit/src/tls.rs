//! Transport security: TLS on every gRPC listener, and mutual TLS between services.
//!
//! Every service is given three PEM files: its certificate chain, its private key, and
//! the certificate authority that signs every service's certificate. It serves with its
//! certificate, asks each caller for one (optional: a fan's browser has none) and
//! verifies it against the authority; it calls other services over `https://` with the
//! same certificate as its client identity, verifying theirs against the same authority.
//! A service's name is the SPIFFE ID in its certificate (see [`crate::caller`]).
//!
//! Without the files a service speaks plaintext gRPC: a development convenience
//! ([`PLAINTEXT`]), refused in production.

use std::path::{Path, PathBuf};

use rustls_pki_types::pem::PemObject;
use tonic::transport::{
    Certificate, CertificateDer, ClientTlsConfig, Endpoint, Identity, ServerTlsConfig,
};

use crate::StartError;
use crate::mode::Convenience;

/// Serving and calling without TLS (and service calls recognised by role-service
/// tokens, see [`crate::caller`]).
pub const PLAINTEXT: Convenience = Convenience::new(
    "plaintext gRPC (no TLS; services then recognised by role-service tokens)",
    "--tls-cert-file, --tls-key-file and --tls-ca-file",
);

/// Calling other services with a role-service admin token (`--service-token`) instead
/// of being named by a client certificate.
pub const SERVICE_TOKEN: Convenience = Convenience::new(
    "a role-service admin token standing for this service (--service-token)",
    "--tls-cert-file, --tls-key-file and --tls-ca-file, and no --service-token",
);

/// The TLS flags every service shares (flattened into
/// [`CommonArgs`](crate::args::CommonArgs)); all three or none.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TlsArgs {
    /// This service's certificate chain (PEM, leaf first), presented to its callers and,
    /// as its client identity, to the services it calls. Its URI subject alternative
    /// name `spiffe://stadium/<service>` names the service.
    #[arg(long, env = "TLS_CERT_FILE", value_name = "FILE")]
    pub tls_cert_file: Option<PathBuf>,

    /// The private key of `--tls-cert-file` (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, env = "TLS_KEY_FILE", value_name = "FILE")]
    pub tls_key_file: Option<PathBuf>,

    /// The certificate authority (PEM) that signs every service's certificate: servers
    /// called and service callers are verified against it.
    #[arg(long, env = "TLS_CA_FILE", value_name = "FILE")]
    pub tls_ca_file: Option<PathBuf>,
}

/// A service's TLS material, read once at start; cheap to clone.
#[derive(Debug, Clone)]
pub struct Tls {
    identity: Identity,
    ca: Certificate,
    cert_pem: Vec<u8>,
    ca_pem: Vec<u8>,
}

impl TlsArgs {
    /// The files of these flags, read and checked, for the service called `service`;
    /// `None` when none is set (plaintext).
    ///
    /// # Errors
    /// [`StartError::Config`] naming the flag and file when only some are set, a file
    /// cannot be read, holds no certificate or key, the key does not match the
    /// certificate, or the certificate names another service than `service` (a
    /// swapped Secret would otherwise let one service act as another).
    pub fn load(&self, service: &str) -> Result<Option<Tls>, StartError> {
        match (&self.tls_cert_file, &self.tls_key_file, &self.tls_ca_file) {
            (None, None, None) => Ok(None),
            (Some(cert), Some(key), Some(ca)) => {
                let tls = Tls::from_pem(
                    read("--tls-cert-file", cert)?,
                    read("--tls-key-file", key)?,
                    read("--tls-ca-file", ca)?,
                );
                tls.check(service, cert, key, ca)?;
                Ok(Some(tls))
            }
            _ => Err(StartError::Config(
                "--tls-cert-file, --tls-key-file and --tls-ca-file go together: set all three, or none for plaintext (development only)".into(),
            )),
        }
    }
}

fn read(flag: &str, path: &Path) -> Result<String, StartError> {
    std::fs::read_to_string(path)
        .map_err(|e| StartError::Config(format!("{flag} {}: {e}", path.display())))
}

impl Tls {
    /// TLS material from PEM text: the certificate chain, its key, the authority.
    pub fn from_pem(cert: impl AsRef<[u8]>, key: impl AsRef<[u8]>, ca: impl AsRef<[u8]>) -> Self {
        Self {
            identity: Identity::from_pem(&cert, key),
            ca: Certificate::from_pem(&ca),
            cert_pem: cert.as_ref().to_vec(),
            ca_pem: ca.as_ref().to_vec(),
        }
    }

    /// Checks, before anything is served, what the TLS stack would only find at the
    /// first handshake or with a misleading message: a certificate and an authority in
    /// their files, a key matching the certificate, and the certificate naming
    /// `service`.
    fn check(&self, service: &str, cert: &Path, key: &Path, ca: &Path) -> Result<(), StartError> {
        let wrong = |flag: &str, path: &Path, why: &dyn std::fmt::Display| {
            StartError::Config(format!("{flag} {}: {why}", path.display()))
        };
        let leaf = CertificateDer::pem_slice_iter(&self.cert_pem)
            .next()
            .and_then(Result::ok)
            .ok_or_else(|| wrong("--tls-cert-file", cert, &"no PEM certificate in it"))?;
        if CertificateDer::pem_slice_iter(&self.ca_pem)
            .next()
            .and_then(Result::ok)
            .is_none()
        {
            return Err(wrong("--tls-ca-file", ca, &"no PEM certificate in it"));
        }
        let named = crate::caller::certificate_service(&leaf);
        if named.as_deref() != Some(service) {
            let names = named.map_or("no stadium service".to_owned(), |n| {
                crate::caller::spiffe_id(&n)
            });
            return Err(wrong(
                "--tls-cert-file",
                cert,
                &format!(
                    "names {names}, not {}: each service needs its own certificate",
                    crate::caller::spiffe_id(service)
                ),
            ));
        }
        tonic::transport::Server::builder()
            .tls_config(self.server_config())
            .map_err(|e| wrong("--tls-key-file", key, &describe(&e)))?;
        Ok(())
    }

    /// The server side: this certificate, callers' certificates verified against the
    /// authority when they present one.
    pub fn server_config(&self) -> ServerTlsConfig {
        ServerTlsConfig::new()
            .identity(self.identity.clone())
            .client_ca_root(self.ca.clone())
            .client_auth_optional(true)
    }

    /// The client side: servers verified against the authority (by the URL's host),
    /// this certificate presented as the caller's identity.
    pub fn client_config(&self) -> ClientTlsConfig {
        ClientTlsConfig::new()
            .ca_certificate(self.ca.clone())
            .identity(self.identity.clone())
    }
}

/// An error and its causes, `: `-joined (tonic's own text is "transport error").
fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The endpoint of another service at `uri` (the value of `flag`): `https://` with
/// [`Tls::client_config`] when this service has TLS, `http://` when it has none. For a
/// service with several replicas, [`crate::balance::channel`] builds one per URL.
///
/// # Errors
/// [`StartError::Config`] naming `flag` when the scheme does not match (an `http://`
/// URL with TLS configured would send service calls in the clear; an `https://` one
/// without it has no authority to verify the server against), or when the TLS material
/// is unusable.
pub fn endpoint(flag: &str, uri: &http::Uri, tls: Option<&Tls>) -> Result<Endpoint, StartError> {
    let config = |e: &dyn std::fmt::Display| StartError::Config(format!("{flag} {uri}: {e}"));
    let endpoint = Endpoint::from(uri.clone());
    match (uri.scheme_str(), tls) {
        (Some("https"), Some(tls)) => endpoint
            .tls_config(tls.client_config())
            .map_err(|e| config(&e)),
        (Some("http"), None) => Ok(endpoint),
        (_, Some(_)) => Err(config(&"with TLS configured, use an https:// URL")),
        (_, None) => Err(config(
            &"an https:// URL needs --tls-cert-file, --tls-key-file and --tls-ca-file",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_files_go_together() {
        assert!(TlsArgs::default().load("holds").unwrap().is_none());
        let partial = TlsArgs {
            tls_cert_file: Some("cert.pem".into()),
            ..TlsArgs::default()
        };
        let error = partial.load("holds").unwrap_err().to_string();
        assert!(error.contains("go together"), "{error}");
        let missing = TlsArgs {
            tls_cert_file: Some("/nonexistent/cert.pem".into()),
            tls_key_file: Some("/nonexistent/key.pem".into()),
            tls_ca_file: Some("/nonexistent/ca.pem".into()),
        };
        let error = missing.load("holds").unwrap_err().to_string();
        assert!(
            error.contains("--tls-cert-file /nonexistent/cert.pem"),
            "{error}"
        );
    }

    #[test]
    fn refuses_unusable_files_before_serving_naming_the_flag() {
        let pki = crate::dev_pki::DevPki::generate().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let args = pki.write(&dir.path().join("holds"), "holds").unwrap();
        assert!(args.load("holds").unwrap().is_some());
        let error = args.load("payments").unwrap_err().to_string();
        assert!(
            error.contains("names spiffe://stadium/holds, not spiffe://stadium/payments"),
            "{error}"
        );

        let other = pki.write(&dir.path().join("other"), "holds").unwrap();
        let mismatched = TlsArgs {
            tls_key_file: other.tls_key_file.clone(),
            ..args.clone()
        };
        let error = mismatched.load("holds").unwrap_err().to_string();
        assert!(error.contains("--tls-key-file"), "{error}");

        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        for (flag, broken) in [
            (
                "--tls-cert-file",
                TlsArgs {
                    tls_cert_file: Some(empty.clone()),
                    ..args.clone()
                },
            ),
            (
                "--tls-key-file",
                TlsArgs {
                    tls_key_file: Some(empty.clone()),
                    ..args.clone()
                },
            ),
            (
                "--tls-ca-file",
                TlsArgs {
                    tls_ca_file: Some(empty.clone()),
                    ..args.clone()
                },
            ),
        ] {
            let error = broken.load("holds").unwrap_err().to_string();
            assert!(error.contains(flag), "{flag}: {error}");
        }
    }

    #[test]
    fn the_scheme_must_match_the_transport() {
        let pki = crate::dev_pki::DevPki::generate().unwrap();
        let tls = pki.tls("payments").unwrap();
        let http: http::Uri = "http://127.0.0.1:1".parse().unwrap();
        let https: http::Uri = "https://127.0.0.1:1".parse().unwrap();
        assert!(endpoint("--holds-url", &http, None).is_ok());
        assert!(endpoint("--holds-url", &https, Some(&tls)).is_ok());
        let error = endpoint("--holds-url", &http, Some(&tls)).unwrap_err();
        assert!(error.to_string().contains("use an https:// URL"), "{error}");
        let error = endpoint("--holds-url", &https, None).unwrap_err();
        assert!(error.to_string().contains("--holds-url"), "{error}");
    }
}
