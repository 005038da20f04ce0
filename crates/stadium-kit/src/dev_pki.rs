//! A certificate authority generated for one development run (the runner, the tests):
//! it issues each service a certificate naming it by SPIFFE ID, valid for the loopback
//! addresses, so the services speak mutual TLS exactly as in production. Its key lives
//! in memory only; nothing it signs outlives the run that trusts it.

use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};

use crate::caller::spiffe_id;
use crate::tls::{Tls, TlsArgs};

/// A development certificate authority (ECDSA P-256).
pub struct DevPki {
    ca: CertifiedIssuer<'static, KeyPair>,
}

impl std::fmt::Debug for DevPki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DevPki(<development certificate authority>)")
    }
}

/// A certificate and its private key, PEM.
#[derive(Debug, Clone)]
pub struct ServiceCert {
    /// The certificate (PEM).
    pub cert_pem: String,
    /// Its private key (PEM, PKCS#8).
    pub key_pem: String,
}

impl DevPki {
    /// A new authority with a fresh key.
    ///
    /// # Errors
    /// When key generation or signing fails.
    pub fn generate() -> Result<Self, rcgen::Error> {
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, "stadium development CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        Ok(Self { ca })
    }

    /// The authority's certificate (PEM): what every service trusts.
    pub fn ca_pem(&self) -> String {
        self.ca.pem()
    }

    /// A certificate for the service called `service`: URI SAN
    /// `spiffe://stadium/<service>`, DNS names `localhost` and `<service>`, IP addresses
    /// 127.0.0.1 and ::1; usable as a server and as a client.
    ///
    /// # Errors
    /// When `service` is not a valid DNS name or signing fails.
    pub fn issue(&self, service: &str) -> Result<ServiceCert, rcgen::Error> {
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, service);
        params.subject_alt_names = vec![
            SanType::URI(spiffe_id(service).try_into()?),
            SanType::DnsName("localhost".try_into()?),
            SanType::DnsName(service.try_into()?),
            SanType::IpAddress([127, 0, 0, 1].into()),
            SanType::IpAddress(std::net::Ipv6Addr::LOCALHOST.into()),
        ];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.ca)?;
        Ok(ServiceCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// [`issue`](Self::issue)d material for `service` as [`Tls`].
    ///
    /// # Errors
    /// As [`issue`](Self::issue).
    pub fn tls(&self, service: &str) -> Result<Tls, rcgen::Error> {
        let issued = self.issue(service)?;
        Ok(Tls::from_pem(
            issued.cert_pem,
            issued.key_pem,
            self.ca_pem(),
        ))
    }

    /// Writes `service`'s certificate, key and the authority into the folder `dir`
    /// (created if missing) as `tls.crt`, `tls.key` and `ca.crt`, the names a
    /// Kubernetes TLS Secret uses, and returns the flags naming them. Give each service
    /// its own folder: files are rewritten, not shared.
    ///
    /// # Errors
    /// When issuing fails or a file cannot be written.
    pub fn write(&self, dir: &Path, service: &str) -> std::io::Result<TlsArgs> {
        let issued = self.issue(service).map_err(std::io::Error::other)?;
        std::fs::create_dir_all(dir)?;
        let cert = dir.join("tls.crt");
        let key = dir.join("tls.key");
        let ca = dir.join("ca.crt");
        std::fs::write(&cert, issued.cert_pem)?;
        write_private(&key, issued.key_pem.as_bytes())?;
        std::fs::write(&ca, self.ca_pem())?;
        Ok(TlsArgs {
            tls_cert_file: Some(cert),
            tls_key_file: Some(key),
            tls_ca_file: Some(ca),
        })
    }
}

/// Writes a private key readable by its owner only.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issues_certificates_naming_the_service() {
        let pki = DevPki::generate().unwrap();
        let issued = pki.issue("payments").unwrap();
        let der = rustls_pki_types::pem::PemObject::from_pem_slice(issued.cert_pem.as_bytes())
            .map(|c: rustls_pki_types::CertificateDer<'static>| c)
            .unwrap();
        assert_eq!(
            crate::caller::certificate_service(&der).as_deref(),
            Some("payments")
        );
        let dir = tempfile::tempdir().unwrap();
        let args = pki.write(dir.path(), "holds").unwrap();
        assert!(args.load("holds").unwrap().is_some());
    }
}
