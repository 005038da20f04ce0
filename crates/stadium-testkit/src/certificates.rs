//! Certificates for a service under test: a development authority, and each service's
//! certificate and key written to files the service reads (`TLS_*_FILE`).

use stadium_kit::dev_pki::DevPki;
use stadium_kit::tls::Tls;

/// A development certificate authority and a folder of files it issued.
pub struct TestCertificates {
    pki: DevPki,
    dir: tempfile::TempDir,
}

impl std::fmt::Debug for TestCertificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCertificates")
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

impl TestCertificates {
    /// A fresh authority and folder.
    ///
    /// # Panics
    /// When the key cannot be generated or the folder created.
    pub fn new() -> Self {
        Self {
            pki: DevPki::generate().expect("a development certificate authority"),
            dir: tempfile::tempdir().expect("a folder for certificates"),
        }
    }

    /// `TLS_CERT_FILE`, `TLS_KEY_FILE` and `TLS_CA_FILE` for the service called
    /// `service`, its files written.
    ///
    /// # Panics
    /// When the files cannot be written.
    pub fn env(&self, service: &str) -> Vec<(&'static str, String)> {
        let files = self
            .pki
            .write(&self.dir.path().join(service), service)
            .expect("writing a certificate");
        let path = |p: Option<std::path::PathBuf>| p.expect("a file").display().to_string();
        vec![
            ("TLS_CERT_FILE", path(files.tls_cert_file)),
            ("TLS_KEY_FILE", path(files.tls_key_file)),
            ("TLS_CA_FILE", path(files.tls_ca_file)),
        ]
    }

    /// TLS as the service called `service` (a client calling as it).
    ///
    /// # Panics
    /// When issuing fails.
    pub fn tls(&self, service: &str) -> Tls {
        self.pki.tls(service).expect("a service certificate")
    }
}

impl Default for TestCertificates {
    fn default() -> Self {
        Self::new()
    }
}
