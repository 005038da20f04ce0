//! Who is calling a service-role RPC: another stadium service, named by its client
//! certificate, or staff, by their admin token.
//!
//! A service is named by the SPIFFE ID in the URI subject alternative name of its
//! certificate, `spiffe://stadium/<service>` (SPIFFE ID standard §2; X.509-SVID §2), the
//! certificate verified against the services' authority during the TLS handshake
//! ([`crate::tls`]). Without TLS (development mode only) a service is recognised by an
//! admin token with the role `service` whose `sub` is the service's name.

use stadium_tokens::{Access, AccessRefused, AdminClaims, Role, TokenError};
use tonic::transport::CertificateDer;
use tonic::{Request, Status};
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::auth::bearer_token;
use crate::service_error::{access_metadata, access_row};
use crate::status::error_status;

/// The names of the stadium services, as in their SPIFFE IDs (the same names as their
/// token audiences).
pub use stadium_tokens::audience as service;

/// The SPIFFE trust domain of every stadium service.
pub const TRUST_DOMAIN: &str = "stadium";

/// The SPIFFE ID of the service called `service`: `spiffe://stadium/<service>`.
pub fn spiffe_id(service: &str) -> String {
    format!("spiffe://{TRUST_DOMAIN}/{service}")
}

/// The service a certificate (DER) names: the `<service>` of its URI SAN
/// `spiffe://stadium/<service>`, a non-empty name of `a`–`z`, `0`–`9` and `-`; `None`
/// when the certificate does not parse or names no stadium service.
pub fn certificate_service(cert: &CertificateDer<'_>) -> Option<String> {
    let (_, parsed) = X509Certificate::from_der(cert.as_ref()).ok()?;
    let names = parsed.subject_alternative_name().ok()??;
    let prefix = format!("spiffe://{TRUST_DOMAIN}/");
    names
        .value
        .general_names
        .iter()
        .find_map(|name| match name {
            GeneralName::URI(uri) => uri.strip_prefix(prefix.as_str()),
            _ => None,
        })
        .filter(|name| {
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
        .map(str::to_owned)
}

/// The service named by the client certificate of `request`'s connection (verified
/// during the handshake); `None` without TLS or without a client certificate.
pub fn peer_service<T>(request: &Request<T>) -> Option<String> {
    let certs = request.peer_certs()?;
    certificate_service(certs.first()?)
}

/// Who made a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// Another stadium service, by name (`payments`, `box-office`, …).
    Service(String),
    /// Staff, with their verified admin token.
    Admin(AdminClaims),
}

impl Caller {
    /// Who, for logs and records: the service's name or the admin token's `sub`.
    pub fn name(&self) -> &str {
        match self {
            Caller::Service(name) => name,
            Caller::Admin(claims) => &claims.registered.sub,
        }
    }

    /// Whether the caller is the service called `service`.
    pub fn is_service(&self, service: &str) -> bool {
        matches!(self, Caller::Service(name) if name == service)
    }
}

/// How a server recognises the services calling it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceRecognition {
    /// By client certificate only (TLS configured; always so in production).
    Certificates,
    /// Also by an admin token with the role `service` naming the service in `sub`
    /// (plaintext, development mode only: [`crate::tls::PLAINTEXT`]).
    DevelopmentTokens,
}

impl ServiceRecognition {
    /// Certificates when the server has TLS, development tokens when it has none.
    pub fn for_transport(tls: bool) -> Self {
        if tls {
            Self::Certificates
        } else {
            Self::DevelopmentTokens
        }
    }

    /// The caller of `request`, if `access` lets them make the call: a service named
    /// by the connection's client certificate and on the list; otherwise the bearer
    /// admin token, checked by `verify`, granting one of the roles (or, with
    /// [`DevelopmentTokens`](Self::DevelopmentTokens), the role `service` with a listed
    /// service as `sub`).
    ///
    /// # Errors
    /// `UNAUTHENTICATED`/`TOKEN_MISSING` without an accepted certificate or a bearer
    /// token; the refused token's status (`TOKEN_EXPIRED`, …); `PERMISSION_DENIED`/
    /// `ROLE_REQUIRED` with metadata `roles` and `services` otherwise.
    pub fn caller<T>(
        self,
        request: &Request<T>,
        access: Access,
        verify: impl FnOnce(&str) -> Result<AdminClaims, TokenError>,
    ) -> Result<Caller, Status> {
        if let Some(service) = peer_service(request).filter(|s| access.allows_service(s)) {
            return Ok(Caller::Service(service));
        }
        let claims = verify(bearer_token(request.metadata())?)
            .map_err(|e| refusal(&AccessRefused::Token(e)))?;
        if self == Self::DevelopmentTokens
            && claims.has_role(Role::Service)
            && access.allows_service(&claims.registered.sub)
        {
            return Ok(Caller::Service(claims.registered.sub));
        }
        if access.allows(&claims) {
            return Ok(Caller::Admin(claims));
        }
        Err(refusal(&AccessRefused::RoleRequired(access)))
    }
}

/// The status of an access refusal, the same rows every service's error table uses.
fn refusal(refused: &AccessRefused) -> Status {
    let (code, reason) = access_row(refused);
    tracing::debug!(%refused, %reason, "caller refused");
    error_status(code, reason, refused.to_string(), access_metadata(refused))
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use stadium_tokens::DevIssuer;

    use super::*;
    use crate::reason::Reason;

    const CONFIRM: Access = Access::any_of(&[]).or_services(&["payments"]);
    const RELEASE: Access = Access::any_of(&[Role::BoxOffice]).or_services(&["payments"]);

    fn with_token(token: &str) -> Request<()> {
        let mut request = Request::new(());
        let value = format!("Bearer {token}").parse().unwrap();
        request.metadata_mut().insert("authorization", value);
        request
    }

    #[test]
    fn a_role_service_token_names_a_service_in_development_only() {
        let dev = DevIssuer::generate().unwrap();
        let now = SystemTime::now();
        let payments = dev.admin("payments", &[Role::Service], now).unwrap();
        let verify = |claims: AdminClaims| move |_: &str| Ok(claims);
        let request = with_token(&payments.token);
        let dev_caller = ServiceRecognition::DevelopmentTokens
            .caller(&request, CONFIRM, verify(payments.claims.clone()))
            .unwrap();
        assert!(dev_caller.is_service("payments"));
        let refused = ServiceRecognition::Certificates
            .caller(&request, CONFIRM, verify(payments.claims.clone()))
            .unwrap_err();
        assert_eq!(Reason::of(&refused), Some(Reason::RoleRequired));

        let other = dev.admin("box-office", &[Role::Service], now).unwrap();
        let refused = ServiceRecognition::DevelopmentTokens
            .caller(&with_token(&other.token), CONFIRM, verify(other.claims))
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::PermissionDenied);

        let staff = dev.admin("ann", &[Role::BoxOffice], now).unwrap();
        let caller = ServiceRecognition::Certificates
            .caller(&with_token(&staff.token), RELEASE, verify(staff.claims))
            .unwrap();
        assert_eq!(caller.name(), "ann");
        assert!(!caller.is_service("payments"));
    }

    #[test]
    fn no_certificate_and_no_token_is_unauthenticated() {
        let refused = ServiceRecognition::Certificates
            .caller(&Request::new(()), CONFIRM, |_| Err(TokenError::Expired))
            .unwrap_err();
        assert_eq!(Reason::of(&refused), Some(Reason::TokenMissing));
        let refused = ServiceRecognition::Certificates
            .caller(&with_token("x"), CONFIRM, |_| Err(TokenError::Expired))
            .unwrap_err();
        assert_eq!(Reason::of(&refused), Some(Reason::TokenExpired));
    }

    #[test]
    fn reads_the_service_from_the_spiffe_id_only() {
        let pki = crate::dev_pki::DevPki::generate().unwrap();
        let pem = pki.issue("box-office").unwrap().cert_pem;
        let der: CertificateDer<'static> =
            rustls_pki_types::pem::PemObject::from_pem_slice(pem.as_bytes()).unwrap();
        assert_eq!(certificate_service(&der).as_deref(), Some("box-office"));
        assert_eq!(
            certificate_service(&CertificateDer::from(vec![1, 2, 3])),
            None
        );
        assert_eq!(spiffe_id("holds"), "spiffe://stadium/holds");
    }
}
