//! Who is calling: a fan (session token, whose signature is verified once per token and
//! trusted until it expires, so a poll costs one HMAC for the ticket and no Ed25519
//! verification), staff or a service (admin token with roles), or the holder of an
//! admission token reporting its own completion.

use std::sync::Arc;
use std::time::Duration;

use stadium_kit::auth::bearer_token;
use stadium_kit::caller::{Caller, ServiceRecognition};
use stadium_tokens::{Access, AdminVerifier, AdmissionVerifier, FanSessionVerifier, TokenError};
use tonic::metadata::MetadataMap;
use tonic::{Request, Status};

use crate::clock::{Clock, unix_ms};
use crate::domain::{EventId, FanId};
use crate::error::Error;

/// How many verified fan sessions one replica remembers.
const SESSIONS_KEPT: u64 = 200_000;
/// How long a verified session is remembered at most (its own `exp` ends it sooner).
const SESSION_MEMORY: Duration = Duration::from_secs(15 * 60);

/// Verifies the credentials of every call.
pub struct Authenticator {
    sessions: FanSessionVerifier,
    /// Sessions verified on this replica, by token: `(fan, exp in Unix seconds)`.
    sessions_seen: moka::sync::Cache<String, (FanId, u64)>,
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
            sessions_seen: moka::sync::Cache::builder()
                .max_capacity(SESSIONS_KEPT)
                .time_to_live(SESSION_MEMORY)
                .build(),
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
        let now = self.clock.now();
        let now_secs = unix_ms(now) / 1000;
        let leeway = self.sessions.leeway().as_secs();
        // A signature that verified once still verifies; only the time window moves.
        if let Some((fan, exp)) = self.sessions_seen.get(token)
            && now_secs < exp.saturating_add(leeway)
        {
            return Ok(fan);
        }
        let claims = self
            .sessions
            .verify(token, now)
            .map_err(Error::Credential)?;
        let fan = FanId::parse(claims.fan_id()).map_err(|reason| {
            Error::Credential(TokenError::InvalidClaim {
                claim: "sub",
                reason,
            })
        })?;
        self.sessions_seen
            .insert(token.to_owned(), (fan.clone(), claims.registered.exp));
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
