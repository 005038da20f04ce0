//! Who is calling: fan sessions and admin tokens, verified with the identity provider's
//! public keys given at start, for the audience `payments`.

use std::time::SystemTime;

use stadium_kit::caller::{Caller as ServiceCaller, ServiceRecognition};
use stadium_tokens::{
    Access, AccessRefused, AdminVerifier, FanSessionVerifier, Role, TokenError, VerificationKeys,
    audience,
};

use crate::error::Error;
use tonic::{Request, Status};

/// Staff who may read any fan's orders: box office or operators.
const STAFF: Access = Access::any_of(&[Role::BoxOffice, Role::Sre]);

/// Verifies every credential the service accepts.
#[derive(Debug)]
pub struct Authenticator {
    fan: FanSessionVerifier,
    admin: AdminVerifier,
    services: ServiceRecognition,
}

/// The caller of a call that fans and staff may both make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// A fan (session `sub`).
    Fan(String),
    /// Staff with an admin token.
    Admin(String),
}

impl Authenticator {
    /// Trusts `identity` keys for tokens from `issuer`, and recognises calling
    /// services as `services` says.
    ///
    /// # Errors
    /// [`TokenError::InvalidInput`] for an empty issuer.
    pub fn new(
        identity: VerificationKeys,
        issuer: &str,
        services: ServiceRecognition,
    ) -> Result<Self, TokenError> {
        Ok(Self {
            fan: FanSessionVerifier::new(identity.clone(), issuer, audience::PAYMENTS)?,
            admin: AdminVerifier::new(identity, issuer, audience::PAYMENTS)?,
            services,
        })
    }

    /// The caller of an RPC that staff or other services make, if `access` lets them
    /// (see [`ServiceRecognition::caller`]).
    ///
    /// # Errors
    /// The refusal's status (`UNAUTHENTICATED`, `PERMISSION_DENIED`/`ROLE_REQUIRED`).
    pub fn caller<T>(&self, request: &Request<T>, access: Access) -> Result<ServiceCaller, Status> {
        self.services.caller(request, access, |token| {
            self.admin.verify(token, SystemTime::now())
        })
    }

    /// The fan id of a session token.
    ///
    /// # Errors
    /// [`Error::Token`] (which `session`).
    pub fn fan(&self, token: &str, now: SystemTime) -> Result<String, Error> {
        let claims = self.fan.verify(token, now).map_err(|source| Error::Token {
            which: "session",
            source,
        })?;
        Ok(claims.fan_id().to_owned())
    }

    /// The verifier of admin tokens addressed to payments: a call checks its roles with
    /// [`AdminVerifier::verify_access`] (a refusal is an [`Error::Access`]).
    pub fn admin(&self) -> &AdminVerifier {
        &self.admin
    }

    /// A fan session or, failing that, an admin token with role `box_office` or `sre`.
    ///
    /// # Errors
    /// The fan session's refusal when the token is neither.
    pub fn fan_or_staff(&self, token: &str, now: SystemTime) -> Result<Caller, Error> {
        match self.fan(token, now) {
            Ok(fan) => Ok(Caller::Fan(fan)),
            Err(fan_error) => match self.admin.verify_access(token, STAFF, now) {
                Ok(claims) => Ok(Caller::Admin(claims.registered.sub)),
                Err(refused @ AccessRefused::RoleRequired(_)) => Err(refused.into()),
                Err(_) => Err(fan_error),
            },
        }
    }
}
