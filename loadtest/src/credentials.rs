//! How the load test authenticates: fan sessions and admin tokens minted by a
//! [`DevIssuer`] whose seed the deployment shares, so services verify them exactly as
//! they verify real ones.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use stadium_kit::outbound::{Bearer, authorized};
use stadium_tokens::{DevIssuer, Role};
use tonic::Request;

use crate::error::{LoadtestError, Result};

/// `sub` of the admin tokens the load test mints.
pub const ADMIN_SUBJECT: &str = "loadtest";

/// Token source of a run; cheap to clone. Tokens are minted when asked for (valid one
/// hour from then), so a run longer than an hour never presents an expired one.
#[derive(Clone)]
pub struct Credentials {
    issuer: Arc<DevIssuer>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The issuer is every fan and every admin: never print it.
        f.debug_struct("Credentials").finish_non_exhaustive()
    }
}

impl Credentials {
    /// Credentials from an existing dev issuer (e.g. the runner's own).
    pub fn new(issuer: Arc<DevIssuer>) -> Self {
        Credentials { issuer }
    }

    /// Credentials from the dev issuer seed the services were started with: 64 hex
    /// digits (32 bytes).
    ///
    /// Errors: [`LoadtestError::InvalidSeed`] when it is not 32 bytes of hex;
    /// [`LoadtestError::Token`] if the key cannot be built.
    pub fn from_seed_hex(seed_hex: &str) -> Result<Self> {
        let bytes = hex::decode(seed_hex.trim())
            .map_err(|e| LoadtestError::InvalidSeed(format!("not hex: {e}")))?;
        let seed: [u8; 32] = bytes.try_into().map_err(|b: Vec<u8>| {
            LoadtestError::InvalidSeed(format!("{} bytes, expected 32", b.len()))
        })?;
        Ok(Self::new(Arc::new(DevIssuer::from_seed(&seed)?)))
    }

    /// A fresh admin token (roles `box_office` and `sre`, subject [`ADMIN_SUBJECT`]).
    ///
    /// Errors: [`LoadtestError::Token`] if signing fails.
    pub fn admin_token(&self) -> Result<String> {
        Ok(self
            .issuer
            .admin(
                ADMIN_SUBJECT,
                &[Role::BoxOffice, Role::Sre],
                SystemTime::now(),
            )?
            .token)
    }

    /// A fresh fan session token for `fan_id`.
    ///
    /// Errors: [`LoadtestError::Token`] for an empty `fan_id`.
    pub fn fan_token(&self, fan_id: &str) -> Result<String> {
        Ok(self.issuer.fan_session(fan_id, SystemTime::now())?.token)
    }
}

/// `message` as a request carrying `authorization: Bearer <token>`.
///
/// A token that is not valid metadata (never the case for a JWT) is sent without the
/// header, so the service answers `UNAUTHENTICATED` and the report counts it.
pub(crate) fn authed<T>(message: T, token: &str) -> Request<T> {
    match Bearer::new(token) {
        Ok(bearer) => authorized(message, &bearer, None),
        Err(_) => Request::new(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

    #[test]
    fn tokens_verify_with_the_same_seed() {
        let creds = Credentials::from_seed_hex(SEED).unwrap();
        let issuer = DevIssuer::from_seed(&hex::decode(SEED).unwrap().try_into().unwrap()).unwrap();
        let token = creds.fan_token("fan-1").unwrap();
        let claims = issuer
            .fan_session_verifier(stadium_tokens::audience::HOLDS)
            .unwrap()
            .verify(&token, SystemTime::now());
        assert!(claims.is_ok(), "{claims:?}");
        assert!(creds.admin_token().is_ok());
    }

    #[test]
    fn bad_seeds_are_typed_errors() {
        assert!(matches!(
            Credentials::from_seed_hex("zz"),
            Err(LoadtestError::InvalidSeed(_))
        ));
        assert!(matches!(
            Credentials::from_seed_hex("0011"),
            Err(LoadtestError::InvalidSeed(_))
        ));
        let creds = Credentials::from_seed_hex(SEED).unwrap();
        assert!(matches!(creds.fan_token(""), Err(LoadtestError::Token(_))));
    }

    #[test]
    fn authed_sets_the_bearer() {
        let request = authed((), "abc");
        assert_eq!(
            request.metadata().get("authorization").unwrap(),
            "Bearer abc"
        );
    }
}
