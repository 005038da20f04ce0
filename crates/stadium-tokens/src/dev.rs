//! A stand-in for the site's login and staff directory, for local runs and tests: it
//! mints fan sessions for any fan id and admin tokens for any roles, and publishes its
//! own JWKS so services verify them exactly as they would real ones. Never deploy it
//! where fans can reach it: whoever holds it is every fan and every admin.

use std::time::SystemTime;

use jsonwebtoken::jwk::{JwkSet, ThumbprintHash};

use crate::TokenError;
use crate::claims::{AdminClaims, FanSessionClaims, Issued, Role};
use crate::ed::{AdminIssuer, AdminVerifier, FanSessionIssuer, FanSessionVerifier};
use crate::keys::{Ed25519Key, SigningKeyRing, VerificationKeys};

/// `iss` of every token a [`DevIssuer`] mints.
pub const DEV_ISSUER: &str = "stadium-dev";

/// Mints fan session and admin tokens with one Ed25519 key of its own.
#[derive(Debug)]
pub struct DevIssuer {
    fan: FanSessionIssuer,
    admin: AdminIssuer,
    issuer: String,
}

impl DevIssuer {
    /// A dev issuer with a fresh random key.
    ///
    /// Errors: none in practice ([`TokenError::InvalidKey`] if key setup failed).
    pub fn generate() -> Result<Self, TokenError> {
        Self::from_seed(&crate::queue::random_secret())
    }

    /// A dev issuer whose key comes from `seed`, so several local processes given the
    /// same seed mint and verify the same tokens. The kid is `dev-` plus the start of
    /// the key's RFC 7638 thumbprint, so different seeds never share a kid.
    ///
    /// Errors: none in practice ([`TokenError::InvalidKey`] if key setup failed).
    pub fn from_seed(seed: &[u8; 32]) -> Result<Self, TokenError> {
        Self::from_seed_as(seed, DEV_ISSUER)
    }

    /// As [`from_seed`](Self::from_seed), minting tokens with `iss` = `issuer`: a
    /// stand-in for a real login in a production-mode run on one machine, where
    /// services refuse the development issuer's name.
    ///
    /// Errors: [`TokenError::InvalidInput`] for an empty `issuer`.
    pub fn from_seed_as(seed: &[u8; 32], issuer: &str) -> Result<Self, TokenError> {
        let probe = Ed25519Key::from_seed("dev", seed)?;
        let thumb = probe
            .public_jwk()
            .thumbprint(ThumbprintHash::SHA256)
            .map_err(|e| TokenError::InvalidKey(e.to_string()))?;
        let kid = format!("dev-{}", thumb.get(..12).unwrap_or(&thumb));
        let ring = SigningKeyRing::new(Ed25519Key::from_seed(kid, seed)?);
        Ok(DevIssuer {
            fan: FanSessionIssuer::new(ring.clone(), issuer)?,
            admin: AdminIssuer::new(ring, issuer)?,
            issuer: issuer.to_owned(),
        })
    }

    /// The `iss` of the tokens it mints.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// A fan session for `fan_id`, valid from `now` for one hour.
    ///
    /// Errors: [`TokenError::InvalidInput`] for an empty `fan_id`.
    pub fn fan_session(
        &self,
        fan_id: &str,
        now: SystemTime,
    ) -> Result<Issued<FanSessionClaims>, TokenError> {
        self.fan.issue(fan_id, now)
    }

    /// An admin token for `subject` with `roles`, valid from `now` for one hour, for
    /// every service.
    ///
    /// Errors: [`TokenError::InvalidInput`] for an empty `subject` or no role.
    pub fn admin(
        &self,
        subject: &str,
        roles: &[Role],
        now: SystemTime,
    ) -> Result<Issued<AdminClaims>, TokenError> {
        self.admin.issue(subject, roles, now)
    }

    /// The signing key ring (to publish or to rotate in tests).
    pub fn ring(&self) -> &SigningKeyRing {
        self.fan.ring()
    }

    /// The public key set.
    pub fn jwks(&self) -> JwkSet {
        self.ring().jwks()
    }

    /// The public key set as JSON.
    ///
    /// Errors: as [`SigningKeyRing::jwks_json`].
    pub fn jwks_json(&self) -> Result<String, TokenError> {
        self.ring().jwks_json()
    }

    /// A snapshot of the public keys.
    pub fn verification_keys(&self) -> VerificationKeys {
        self.ring().verification_keys()
    }

    /// A verifier of this issuer's fan sessions for the service named `audience`.
    ///
    /// Errors: [`TokenError::InvalidInput`] for an empty `audience`.
    pub fn fan_session_verifier(&self, audience: &str) -> Result<FanSessionVerifier, TokenError> {
        FanSessionVerifier::new(self.verification_keys(), &self.issuer, audience)
    }

    /// A verifier of this issuer's admin tokens for the service named `audience`.
    ///
    /// Errors: [`TokenError::InvalidInput`] for an empty `audience`.
    pub fn admin_verifier(&self, audience: &str) -> Result<AdminVerifier, TokenError> {
        AdminVerifier::new(self.verification_keys(), &self.issuer, audience)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stand_in_issuer_mints_under_its_own_name() {
        let seed = [7u8; 32];
        let stand_in = DevIssuer::from_seed_as(&seed, "https://login.example").unwrap();
        assert_eq!(stand_in.issuer(), "https://login.example");
        let token = stand_in
            .fan_session("fan-1", SystemTime::now())
            .unwrap()
            .token;
        let own = stand_in
            .fan_session_verifier(crate::audience::HOLDS)
            .unwrap();
        assert!(own.verify(&token, SystemTime::now()).is_ok());
        // Same key, development name: the token's iss does not match.
        let dev = DevIssuer::from_seed(&seed).unwrap();
        let dev_verifier = dev.fan_session_verifier(crate::audience::HOLDS).unwrap();
        assert!(dev_verifier.verify(&token, SystemTime::now()).is_err());
        assert!(DevIssuer::from_seed_as(&seed, "").is_err());
    }
}
