//! Who is calling: a fan (session token, whose signature the verifier checks once per
//! token and trusts until it expires or its key is retired, so a poll costs no Ed25519
//! verification), staff or a service (admin token with roles), or the holder of an
//! admission token reporting its own completion.

use std::sync::Arc;

use stadium_kit::auth::bearer_token;
use stadium_kit::caller::{Caller, ServiceRecognition};
use stadium_tokens::{Access, AdminVerifier, AdmissionVerifier, FanSessionVerifier, TokenError};
use tonic::metadata::MetadataMap;
use tonic::{Request, Status};

use crate::clock::Clock;
use crate::domain::{EventId, FanId};
use crate::error::Error;

/// Verifies the credentials of every call.
pub struct Authenticator {
    sessions: FanSessionVerifier,
    admins: AdminVerifier,
    admissions: AdmissionVerifier,
    clock: Arc<dyn Clock>,
    services: ServiceRecognition,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator").finish_non_exhaustive()
    }
}

impl Authenticator {
    /// Checks fan sessions with `sessions`, admin tokens with `admins` and admission
    /// tokens with `admissions`, at the time `clock` gives; recognises calling services
    /// as `services` says.
    pub fn new(
        sessions: FanSessionVerifier,
        admins: AdminVerifier,
        admissions: AdmissionVerifier,
        clock: Arc<dyn Clock>,
        services: ServiceRecognition,
    ) -> Self {
        Self {
            sessions,
            admins,
            admissions,
            clock,
            services,
        }
    }

    /// The fan of the call's session token.
    ///
    /// # Errors
    /// `UNAUTHENTICATED` (`TOKEN_MISSING`, `TOKEN_EXPIRED`, `TOKEN_INVALID`).
    pub async fn fan(&self, metadata: &MetadataMap) -> Result<FanId, Status> {
        let token = bearer_token(metadata)?;
        let claims = self
            .sessions
            .verify(token, self.clock.now())
            .map_err(Error::Credential)?;
        let fan = FanId::parse(claims.fan_id()).map_err(|reason| {
            Error::Credential(TokenError::InvalidClaim {
                claim: "sub",
                reason,
            })
        })?;
        Ok(fan)
    }

    /// Checks that the call's admin token is one `access` allows.
    ///
    /// # Errors
    /// `UNAUTHENTICATED` for a missing or refused token; `PERMISSION_DENIED`
    /// (`ROLE_REQUIRED`).
    pub fn admin<T>(&self, request: &Request<T>, access: Access) -> Result<(), Status> {
        self.admin_caller(request, access).map(drop)
    }

    /// As [`Authenticator::admin`], naming the caller (for audit logs).
    ///
    /// # Errors
    /// As [`Authenticator::admin`].
    pub fn admin_caller<T>(&self, request: &Request<T>, access: Access) -> Result<Caller, Status> {
        self.services.caller(request, access, |token| {
            self.admins.verify(token, self.clock.now())
        })
    }

    /// What an admission token says: its event, fan, `jti` and expiry.
    ///
    /// # Errors
    /// [`Error::Credential`] for a token that does not verify or lacks its claims.
    pub fn admission(&self, token: &str) -> Result<AdmissionHeld, Error> {
        let claims = self
            .admissions
            .verify(token, self.clock.now())
            .map_err(Error::Credential)?;
        let event = EventId::parse(&claims.event_id)
            .map_err(|_| Error::Credential(TokenError::MissingClaim("event_id".into())))?;
        let fan = FanId::parse(claims.fan_id()).map_err(|reason| {
            Error::Credential(TokenError::InvalidClaim {
                claim: "sub",
                reason,
            })
        })?;
        Ok(AdmissionHeld {
            event,
            fan,
            exp_ms: claims.registered.exp.saturating_mul(1000),
            jti: claims.registered.jti,
        })
    }
}

/// A verified admission token's claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionHeld {
    /// The event it admits to.
    pub event: EventId,
    /// The fan (`sub`).
    pub fan: FanId,
    /// Its `jti`.
    pub jti: String,
    /// Its `exp`, Unix ms.
    pub exp_ms: u64,
}
