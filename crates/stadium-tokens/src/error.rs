//! The one error type of this crate and its mapping from `jsonwebtoken` errors.

use thiserror::Error;

/// Why a token could not be issued or was refused.
///
/// Messages name what was wrong (expected `typ`, unknown `kid`, …) but never echo a
/// secret. Services map every variant to `UNAUTHENTICATED` with the reason from
/// [`TokenError::reason`]; [`TokenError::UnknownKeyId`] is distinct so a verifier can
/// refresh its JWKS once and try again.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Not a compact JWS (three base64url parts), not JSON, a claim of the wrong JSON
    /// type (e.g. `exp` as a string), or longer than [`crate::MAX_TOKEN_BYTES`].
    #[error("malformed token: {0}")]
    Malformed(String),
    /// `exp` (plus the verifier's leeway) is not after the verification instant.
    #[error("token expired")]
    Expired,
    /// `nbf` or `iat` lies after the verification instant plus the leeway.
    #[error("token not yet valid")]
    NotYetValid,
    /// The signature does not verify under the key named by `kid`.
    #[error("token signature does not verify")]
    BadSignature,
    /// The header `typ` is absent or names another kind of token (RFC 8725 §3.11).
    #[error("token type is {found:?}, expected {expected:?}")]
    WrongType {
        /// The `typ` this verifier accepts, e.g. `"admission"`.
        expected: &'static str,
        /// The `typ` the token carried, if any.
        found: Option<String>,
    },
    /// `aud` does not contain the verifier's audience.
    #[error("token audience does not include {expected:?}")]
    WrongAudience {
        /// The audience this verifier stands for, e.g. `"holds"`.
        expected: String,
    },
    /// `iss` is not the issuer this verifier trusts.
    #[error("token issuer is not {expected:?}")]
    WrongIssuer {
        /// The trusted issuer.
        expected: String,
    },
    /// The header `kid` names no key this verifier holds. Refresh the JWKS (once) and retry.
    #[error("unknown key id {kid:?}")]
    UnknownKeyId {
        /// The key id the token named.
        kid: String,
    },
    /// A required claim (or the `kid` header parameter) is absent or empty.
    #[error("missing claim {0:?}")]
    MissingClaim(String),
    /// A claim is present but unusable, e.g. a `sub` longer than
    /// [`crate::MAX_FAN_ID_BYTES`].
    #[error("invalid claim {claim:?}: {reason}")]
    InvalidClaim {
        /// The claim, e.g. `"sub"`.
        claim: &'static str,
        /// Why, naming the limit.
        reason: String,
    },
    /// The header `alg` is not the one algorithm pinned for this kind (this is how
    /// `alg: none` and HS256-signed-with-the-public-key forgeries end).
    #[error("token algorithm is {found:?}, expected {expected:?}")]
    Algorithm {
        /// The pinned algorithm, `"EdDSA"` or `"HS256"`.
        expected: &'static str,
        /// The algorithm the token named, if any.
        found: Option<String>,
    },
    /// A value given to an issuer or builder is unusable (empty fan id, no roles, zero TTL).
    #[error("invalid {field}: {reason}")]
    InvalidInput {
        /// Which input, e.g. `"fan_id"` or `"ttl"`.
        field: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// A key or key set is unusable: bad PKCS#8 or JWK, wrong curve, short HMAC secret,
    /// duplicate or empty `kid`, retiring the current signing key.
    #[error("invalid key: {0}")]
    InvalidKey(String),
    /// Signing failed inside the JWT library.
    #[error("signing failed: {0}")]
    Signing(String),
}

impl TokenError {
    /// Maps a `jsonwebtoken` verification error; `expected_iss`/`expected_aud` fill the
    /// variants that name what the verifier wanted.
    pub(crate) fn from_jwt(err: &jsonwebtoken::errors::Error, iss: &str, aud: &str) -> Self {
        use jsonwebtoken::errors::ErrorKind as K;
        match err.kind() {
            K::InvalidSignature => TokenError::BadSignature,
            K::ExpiredSignature => TokenError::Expired,
            K::ImmatureSignature => TokenError::NotYetValid,
            K::InvalidIssuer => TokenError::WrongIssuer {
                expected: iss.to_owned(),
            },
            K::InvalidAudience => TokenError::WrongAudience {
                expected: aud.to_owned(),
            },
            K::MissingRequiredClaim(claim) => TokenError::MissingClaim(claim.clone()),
            K::InvalidAlgorithm | K::MissingAlgorithm | K::UnsupportedAlgorithm => {
                TokenError::Algorithm {
                    expected: "pinned",
                    found: None,
                }
            }
            K::InvalidEddsaKey | K::InvalidKeyFormat => TokenError::InvalidKey(err.to_string()),
            _ => TokenError::Malformed(err.to_string()),
        }
    }
}
