//! The verification pipeline shared by every kind: cheap header checks first (size,
//! shape, `typ`, pinned `alg`, known `kid`), then the JWT library verifies the
//! signature and `iss`/`aud`, then the time window is checked against the caller's
//! clock.

use std::time::SystemTime;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::Deserialize;

use crate::TokenError;
use crate::claims::{RegisteredClaims, WireClaims};

/// The header parameters read before the signature is checked. Everything here is
/// attacker-controlled; it only ever narrows what is accepted.
#[derive(Deserialize)]
struct PeekHeader {
    alg: Option<String>,
    typ: Option<String>,
    kid: Option<String>,
}

/// What one verifier pins: kind, algorithm, trusted issuer, own audience, leeway.
#[derive(Debug, Clone)]
pub(crate) struct Pins {
    pub typ: &'static str,
    pub alg_name: &'static str,
    pub issuer: String,
    pub audience: String,
    pub leeway_secs: u64,
    validation: Validation,
}

impl Pins {
    pub(crate) fn new(
        typ: &'static str,
        alg: Algorithm,
        alg_name: &'static str,
        issuer: String,
        audience: String,
        leeway_secs: u64,
    ) -> Self {
        let mut validation = Validation::new(alg);
        // The library reads the system clock; time is checked in `WireClaims::registered`
        // against the caller's `now` instead.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.leeway = 0;
        validation.set_required_spec_claims(&["exp", "nbf", "aud", "iss", "sub"]);
        validation.set_issuer(&[&issuer]);
        validation.set_audience(&[&audience]);
        Pins {
            typ,
            alg_name,
            issuer,
            audience,
            leeway_secs,
            validation,
        }
    }

    /// Checks shape, `typ` and `alg`; returns the `kid` to look the key up by.
    pub(crate) fn check_header(&self, token: &str) -> Result<String, TokenError> {
        if token.len() > crate::MAX_TOKEN_BYTES {
            return Err(TokenError::Malformed(format!(
                "longer than {} bytes",
                crate::MAX_TOKEN_BYTES
            )));
        }
        let mut parts = token.split('.');
        let (Some(header), Some(_), Some(_), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed(
                "not three dot-separated parts".into(),
            ));
        };
        let json = URL_SAFE_NO_PAD
            .decode(header)
            .map_err(|e| TokenError::Malformed(format!("header is not base64url: {e}")))?;
        let header: PeekHeader = serde_json::from_slice(&json)
            .map_err(|e| TokenError::Malformed(format!("header is not a JSON object: {e}")))?;
        // RFC 7515 §4.1.9: typ compares case-insensitively.
        if !header
            .typ
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case(self.typ))
        {
            return Err(TokenError::WrongType {
                expected: self.typ,
                found: header.typ,
            });
        }
        if header.alg.as_deref() != Some(self.alg_name) {
            return Err(TokenError::Algorithm {
                expected: self.alg_name,
                found: header.alg,
            });
        }
        match header.kid {
            Some(kid) if !kid.is_empty() => Ok(kid),
            _ => Err(TokenError::MissingClaim("kid".into())),
        }
    }

    /// Verifies signature, `iss`, `aud`, presence of every registered claim and the
    /// time window at `now`; returns the whole payload with the registered part split off.
    pub(crate) fn verify(
        &self,
        token: &str,
        key: &DecodingKey,
        now: SystemTime,
    ) -> Result<(RegisteredClaims, WireClaims), TokenError> {
        let mut wire = self.decode(token, key)?;
        let registered = self.registered(&mut wire, now)?;
        Ok((registered, wire))
    }

    /// Verifies signature, `iss` and `aud`; the payload is still to be checked with
    /// [`Pins::registered`] (claims present, time window).
    pub(crate) fn decode(&self, token: &str, key: &DecodingKey) -> Result<WireClaims, TokenError> {
        let data =
            jsonwebtoken::decode::<WireClaims>(token, key, &self.validation).map_err(|e| {
                match TokenError::from_jwt(&e, &self.issuer, &self.audience) {
                    TokenError::Algorithm { found, .. } => TokenError::Algorithm {
                        expected: self.alg_name,
                        found,
                    },
                    other => other,
                }
            })?;
        Ok(data.claims)
    }

    /// Splits the registered claims off a decoded payload, checking that each is
    /// present and the time window at `now` with this verifier's leeway.
    pub(crate) fn registered(
        &self,
        wire: &mut WireClaims,
        now: SystemTime,
    ) -> Result<RegisteredClaims, TokenError> {
        wire.registered(now, self.leeway_secs)
    }
}

/// Signs `claims` with header `typ`, `alg` and `kid`.
pub(crate) fn sign(
    typ: &str,
    alg: Algorithm,
    kid: &str,
    key: &EncodingKey,
    claims: &WireClaims,
) -> Result<String, TokenError> {
    let mut header = Header::new(alg);
    header.typ = Some(typ.to_owned());
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, key).map_err(|e| TokenError::Signing(e.to_string()))
}
