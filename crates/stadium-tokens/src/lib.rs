//! Signed tokens of stadium (docs/architecture.md "Tokens"): four kinds of JWT, each with
//! its own header `typ` so one kind can never pass as another (RFC 8725 §3.11).
//!
//! | kind | `typ` | alg | who issues | who verifies |
//! |---|---|---|---|---|
//! | fan session | `fan-session` | EdDSA | the site's login ([`DevIssuer`] locally) | every fan-facing service |
//! | queue ticket | `queue-ticket` | HS256 | waiting room | waiting room only |
//! | admission token | `admission` | EdDSA | waiting room | holds, payments |
//! | admin token | `admin` | EdDSA | staff login / service identity ([`DevIssuer`] locally) | every service |
//!
//! Every token carries header `kid` and claims `iss`, `aud`, `sub`, `exp`, `nbf`,
//! `iat`, `jti`. Verification, in this order: size and shape; `typ`; `alg` pinned to
//! the kind's one algorithm (so `alg: none` and HS256 signed with an Ed25519 public key
//! fail with [`TokenError::Algorithm`]); `kid` known (else the distinct
//! [`TokenError::UnknownKeyId`], so a verifier refreshes its JWKS once); signature;
//! `iss`; `aud`; every required claim present; then the time window at the `now` the
//! caller passes: valid while `nbf - leeway <= now < exp + leeway` (and `iat` not in
//! the future beyond the leeway). The leeway is explicit and configurable per
//! verifier, default [`DEFAULT_LEEWAY`] = 5 seconds. Times are whole seconds.
//!
//! Why queue tickets are HS256: the waiting room checks one on every position poll,
//! and only the waiting room reads them. An Ed25519 verification costs about 50 µs
//! per core, HMAC-SHA256 about 3 µs, so polls stay cheap; the secret is shared by
//! the waiting-room replicas and rotates by `kid` ([`QueueTicketKeys`]). The `tokens`
//! bench measures issue and verify per kind.
//!
//! Keys rotate: a [`SigningKeyRing`] signs with its current key while older keys keep
//! verifying; its public keys export as a JWKS (RFC 7517; OKP/Ed25519 per RFC 8037)
//! and import into [`VerificationKeys`] on the verifying side.
//!
//! ```
//! use std::time::SystemTime;
//! use stadium_tokens::{AdmissionIssuer, AdmissionVerifier, SigningKeyRing, VerificationKeys, audience};
//!
//! let ring = SigningKeyRing::generate("wr-1")?;
//! let issuer = AdmissionIssuer::new(ring.clone(), "stadium-waiting-room")?;
//! let now = SystemTime::now();
//! let issued = issuer.issue("fan-42", "event-7", now)?;
//!
//! // In the holds service, from the waiting room's GetSigningKeys answer:
//! let keys = VerificationKeys::from_jwks_json(&ring.jwks_json()?)?;
//! let verifier = AdmissionVerifier::new(keys, "stadium-waiting-room", audience::HOLDS)?;
//! let claims = verifier.verify(&issued.token, now)?;
//! assert_eq!((claims.fan_id(), claims.event_id.as_str()), ("fan-42", "event-7"));
//! # Ok::<(), stadium_tokens::TokenError>(())
//! ```

mod access;
mod claims;
mod dev;
mod ed;
mod error;
mod jwt;
mod keys;
mod queue;
mod verified;

use std::time::Duration;

pub use access::{Access, AccessRefused};
pub use claims::{
    AdminClaims, AdmissionClaims, FanSessionClaims, Issued, MAX_FAN_ID_BYTES, OFFER_JTI_PREFIX,
    PRESALE_QUEUE_SUFFIX, QueueTicketClaims, RegisteredClaims, Role, check_fan_id, presale_queue,
    presale_queue_event,
};
pub use dev::{DEV_ISSUER, DevIssuer};
pub use ed::{
    Admin, AdminIssuer, AdminVerifier, Admission, AdmissionIssuer, AdmissionVerifier, EdIssuer,
    EdKind, EdVerifier, FanSession, FanSessionIssuer, FanSessionVerifier,
};
pub use error::TokenError;
pub use jsonwebtoken::jwk::{Jwk, JwkSet};
pub use keys::{
    Ed25519Key, MAX_KID_LEN, SigningKeyRing, VerificationKeys, thumbprint_kid, validate_kid,
};
pub use queue::{
    MIN_HMAC_SECRET_BYTES, QUEUE_TICKET_DEFAULT_TTL, QueueTicketKeys, QueueTickets,
    WAITING_ROOM_ISSUER, random_secret, secret_kid,
};
pub use verified::{ENTRY_OVERHEAD_BYTES, MAX_VERIFIED_TOKEN_BYTES};

/// Header `typ` of fan session tokens.
pub const TYP_FAN_SESSION: &str = "fan-session";
/// Header `typ` of queue tickets.
pub const TYP_QUEUE_TICKET: &str = "queue-ticket";
/// Header `typ` of admission tokens.
pub const TYP_ADMISSION: &str = "admission";
/// Header `typ` of admin tokens.
pub const TYP_ADMIN: &str = "admin";

/// Clock-skew leeway applied to `exp`, `nbf` and `iat` unless a verifier is given
/// another: 5 seconds.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(5);

/// Longest token accepted for verification, in bytes; longer input is
/// [`TokenError::Malformed`] before any decoding work.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// Audience names: each service verifies that a token's `aud` contains its own name.
pub mod audience {
    /// The waiting room.
    pub const WAITING_ROOM: &str = "waiting-room";
    /// The seat map.
    pub const SEAT_MAP: &str = "seat-map";
    /// The holds service.
    pub const HOLDS: &str = "holds";
    /// The payments service.
    pub const PAYMENTS: &str = "payments";
    /// The box office.
    pub const BOX_OFFICE: &str = "box-office";
    /// Every service (the default `aud` of admin tokens).
    pub const ALL: [&str; 5] = [WAITING_ROOM, SEAT_MAP, HOLDS, PAYMENTS, BOX_OFFICE];
}
