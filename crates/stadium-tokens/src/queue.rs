//! Queue tickets: HS256 JWTs (`typ` `queue-ticket`) that only the waiting room reads.
//!
//! Every position poll verifies one, so they use HMAC-SHA256 (about 3 µs) rather than
//! Ed25519 (about 50 µs to verify). The secret is shared by the waiting-room replicas
//! and rotates by `kid`: several secrets verify at once, the current one signs.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use rand::RngCore as _;

use crate::claims::{Issued, QueueTicketClaims, WireClaims, non_empty, take_string};
use crate::ed::{audience_list, ttl_secs};
use crate::jwt::{Pins, sign};
use crate::keys::validate_kid;
use crate::{DEFAULT_LEEWAY, TokenError, audience};

/// Shortest accepted HMAC secret, in bytes (RFC 7518 §3.2: at least the hash size).
pub const MIN_HMAC_SECRET_BYTES: usize = 32;

/// Default `iss` of queue tickets (and of admission tokens issued by the waiting room).
pub const WAITING_ROOM_ISSUER: &str = "stadium-waiting-room";

struct HmacKey {
    encoding: EncodingKey,
    decoding: DecodingKey,
}

struct HmacState {
    current: String,
    current_key: Arc<HmacKey>,
    keys: BTreeMap<String, Arc<HmacKey>>,
}

/// The HMAC secrets of queue tickets by kid: the current one signs, all verify.
///
/// A cheap handle: clones share the same secrets, so a rotation is seen by every
/// [`QueueTickets`] built on it. `Debug` never prints a secret.
#[derive(Clone)]
pub struct QueueTicketKeys {
    inner: Arc<RwLock<HmacState>>,
}

impl std::fmt::Debug for QueueTicketKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueTicketKeys")
            .field("current", &self.current_kid())
            .field("kids", &self.kids())
            .finish()
    }
}

fn hmac_key(kid: &str, secret: &[u8]) -> Result<HmacKey, TokenError> {
    validate_kid(kid)?;
    if secret.len() < MIN_HMAC_SECRET_BYTES {
        return Err(TokenError::InvalidKey(format!(
            "queue ticket secret {kid:?} has {} bytes, needs at least {MIN_HMAC_SECRET_BYTES}",
            secret.len()
        )));
    }
    let bad = |e: jsonwebtoken::errors::Error| TokenError::InvalidKey(e.to_string());
    Ok(HmacKey {
        encoding: EncodingKey::from_secret(secret).map_err(bad)?,
        decoding: DecodingKey::from_secret(secret).map_err(bad)?,
    })
}

impl QueueTicketKeys {
    /// Secrets holding one secret, which signs.
    ///
    /// Errors: [`TokenError::InvalidKey`] for a bad kid or a secret shorter than
    /// [`MIN_HMAC_SECRET_BYTES`].
    pub fn new(kid: &str, secret: &[u8]) -> Result<Self, TokenError> {
        let key = Arc::new(hmac_key(kid, secret)?);
        Ok(QueueTicketKeys {
            inner: Arc::new(RwLock::new(HmacState {
                current: kid.to_owned(),
                current_key: Arc::clone(&key),
                keys: BTreeMap::from([(kid.to_owned(), key)]),
            })),
        })
    }

    /// Secrets from `secrets`, in order: the first signs, the others verify. Each is
    /// named by its [`secret_kid`], so a replaced secret never reuses an old kid.
    ///
    /// Errors: [`TokenError::InvalidKey`] for no secret, one shorter than
    /// [`MIN_HMAC_SECRET_BYTES`], or one listed twice.
    pub fn from_secrets<S: AsRef<[u8]>>(secrets: &[S]) -> Result<Self, TokenError> {
        let (first, others) = secrets
            .split_first()
            .ok_or_else(|| TokenError::InvalidKey("no queue ticket secret".into()))?;
        let keys = Self::new(&secret_kid(first.as_ref()), first.as_ref())?;
        for secret in others {
            let kid = secret_kid(secret.as_ref());
            if keys.get(&kid).is_some() {
                return Err(TokenError::InvalidKey(format!(
                    "queue ticket secret {kid} is listed twice"
                )));
            }
            keys.insert(&kid, secret.as_ref())?;
        }
        Ok(keys)
    }

    /// Secrets holding one fresh random 32-byte secret (single replica, tests).
    ///
    /// Errors: [`TokenError::InvalidKey`] for a bad kid.
    pub fn generate(kid: &str) -> Result<Self, TokenError> {
        Self::new(kid, &random_secret())
    }

    // Writers never panic while holding the lock, so a poisoned lock is still consistent.
    fn read(&self) -> RwLockReadGuard<'_, HmacState> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, HmacState> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The kid that signs new tickets.
    pub fn current_kid(&self) -> String {
        self.read().current.clone()
    }

    /// Every kid, sorted.
    pub fn kids(&self) -> Vec<String> {
        self.read().keys.keys().cloned().collect()
    }

    /// Adds a secret that verifies but does not sign until promoted. Inserting the same
    /// secret under the same kid again is a no-op.
    ///
    /// Errors: [`TokenError::InvalidKey`] for a bad kid or secret, or a kid already
    /// used by a different secret.
    pub fn insert(&self, kid: &str, secret: &[u8]) -> Result<(), TokenError> {
        let key = hmac_key(kid, secret)?;
        let mut state = self.write();
        if let Some(existing) = state.keys.get(kid) {
            if existing.encoding.as_bytes() == secret {
                return Ok(());
            }
            return Err(TokenError::InvalidKey(format!(
                "key id {kid:?} is already used by another secret"
            )));
        }
        state.keys.insert(kid.to_owned(), Arc::new(key));
        Ok(())
    }

    /// Makes `kid` the secret that signs.
    ///
    /// Errors: [`TokenError::UnknownKeyId`] when absent.
    pub fn promote(&self, kid: &str) -> Result<(), TokenError> {
        let mut state = self.write();
        let key = state
            .keys
            .get(kid)
            .cloned()
            .ok_or_else(|| TokenError::UnknownKeyId { kid: kid.into() })?;
        state.current = kid.to_owned();
        state.current_key = key;
        Ok(())
    }

    /// Inserts a secret and makes it sign at once; older secrets keep verifying.
    ///
    /// Errors: as [`QueueTicketKeys::insert`].
    pub fn rotate(&self, kid: &str, secret: &[u8]) -> Result<(), TokenError> {
        self.insert(kid, secret)?;
        self.promote(kid)
    }

    /// Removes a secret; tickets it signed fail with [`TokenError::UnknownKeyId`].
    ///
    /// Errors: [`TokenError::UnknownKeyId`] when absent; [`TokenError::InvalidKey`] for
    /// the current secret.
    pub fn retire(&self, kid: &str) -> Result<(), TokenError> {
        let mut state = self.write();
        if state.current == kid {
            return Err(TokenError::InvalidKey(format!(
                "key id {kid:?} signs; promote another secret before retiring it"
            )));
        }
        state
            .keys
            .remove(kid)
            .map(|_| ())
            .ok_or_else(|| TokenError::UnknownKeyId { kid: kid.into() })
    }

    fn current(&self) -> (String, Arc<HmacKey>) {
        let state = self.read();
        (state.current.clone(), Arc::clone(&state.current_key))
    }

    fn get(&self, kid: &str) -> Option<Arc<HmacKey>> {
        self.read().keys.get(kid).cloned()
    }
}

/// The kid of a queue-ticket secret: `qt-` and the first 16 characters (96 bits) of
/// the base64url SHA-256 of a fixed label and the secret. One kid names one secret, and
/// the hash of a secret of at least 32 random bytes gives nothing of it away.
pub fn secret_kid(secret: &[u8]) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::new()
        .chain_update(b"stadium queue-ticket kid\0")
        .chain_update(secret)
        .finalize();
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
    format!("qt-{}", &encoded[..16])
}

/// 32 random bytes from the operating system, e.g. a new queue ticket secret.
pub fn random_secret() -> [u8; 32] {
    let mut secret = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut secret);
    secret
}

/// Issues and verifies queue tickets with one set of [`QueueTicketKeys`].
///
/// Defaults: `iss` [`WAITING_ROOM_ISSUER`], `aud` `["waiting-room"]`, TTL 6 h (a queue
/// can be long; a replaced ticket is simply no longer shown), leeway 5 s.
pub struct QueueTickets {
    keys: QueueTicketKeys,
    audience: Vec<String>,
    ttl_secs: u64,
    pins: Pins,
}

impl std::fmt::Debug for QueueTickets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueTickets")
            .field("issuer", &self.pins.issuer)
            .field("audience", &self.audience)
            .field("ttl_secs", &self.ttl_secs)
            .field("leeway_secs", &self.pins.leeway_secs)
            .field("keys", &self.keys)
            .finish()
    }
}

/// Default lifetime of a queue ticket.
pub const QUEUE_TICKET_DEFAULT_TTL: Duration = Duration::from_secs(6 * 3600);

impl QueueTickets {
    /// Tickets signed with `keys`, with the defaults above.
    pub fn new(keys: QueueTicketKeys) -> Self {
        QueueTickets {
            keys,
            audience: vec![audience::WAITING_ROOM.to_owned()],
            ttl_secs: QUEUE_TICKET_DEFAULT_TTL.as_secs(),
            pins: Self::pins(WAITING_ROOM_ISSUER.into(), DEFAULT_LEEWAY.as_secs()),
        }
    }

    fn pins(issuer: String, leeway_secs: u64) -> Pins {
        Pins::new(
            crate::TYP_QUEUE_TICKET,
            Algorithm::HS256,
            "HS256",
            issuer,
            audience::WAITING_ROOM.to_owned(),
            leeway_secs,
        )
    }

    /// Replaces the `iss` written and required.
    ///
    /// Errors: [`TokenError::InvalidInput`] when empty.
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Result<Self, TokenError> {
        let issuer = issuer.into();
        non_empty("issuer", &issuer)?;
        self.pins = Self::pins(issuer, self.pins.leeway_secs);
        Ok(self)
    }

    /// Replaces the `aud` written; it must still include `"waiting-room"`, which is
    /// what verification requires.
    ///
    /// Errors: [`TokenError::InvalidInput`] otherwise.
    pub fn with_audience<I, S>(mut self, audience: I) -> Result<Self, TokenError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let list = audience_list(audience)?;
        if !list.iter().any(|a| a == audience::WAITING_ROOM) {
            return Err(TokenError::InvalidInput {
                field: "audience",
                reason: format!("must include {:?}", audience::WAITING_ROOM),
            });
        }
        self.audience = list;
        Ok(self)
    }

    /// Replaces the lifetime (whole seconds).
    ///
    /// Errors: [`TokenError::InvalidInput`] under one second.
    pub fn with_ttl(mut self, ttl: Duration) -> Result<Self, TokenError> {
        self.ttl_secs = ttl_secs(ttl)?;
        Ok(self)
    }

    /// Replaces the clock-skew leeway (whole seconds).
    pub fn with_leeway(mut self, leeway: Duration) -> Self {
        self.pins.leeway_secs = leeway.as_secs();
        self
    }

    /// The clock-skew leeway in force.
    pub fn leeway(&self) -> Duration {
        Duration::from_secs(self.pins.leeway_secs)
    }

    /// The secrets (clone to rotate).
    pub fn keys(&self) -> &QueueTicketKeys {
        &self.keys
    }

    /// A ticket for `fan_id` in `event_id`'s queue at `queue_number` (1-based; 0 =
    /// pre-queue), valid from `now` for the TTL.
    ///
    /// Errors: [`TokenError::InvalidInput`] for an empty id; [`TokenError::Signing`].
    pub fn issue(
        &self,
        fan_id: &str,
        event_id: &str,
        queue_number: u64,
        now: SystemTime,
    ) -> Result<Issued<QueueTicketClaims>, TokenError> {
        non_empty("fan_id", fan_id)?;
        non_empty("event_id", event_id)?;
        let (mut wire, registered) = WireClaims::new(
            &self.pins.issuer,
            fan_id,
            &self.audience,
            now,
            self.ttl_secs,
        );
        wire.event_id = Some(event_id.to_owned());
        wire.queue_number = Some(queue_number);
        let (kid, key) = self.keys.current();
        let token = sign(
            crate::TYP_QUEUE_TICKET,
            Algorithm::HS256,
            &kid,
            &key.encoding,
            &wire,
        )?;
        Ok(Issued {
            token,
            claims: QueueTicketClaims {
                registered,
                event_id: event_id.to_owned(),
                queue_number,
            },
        })
    }

    /// Verifies a ticket at `now`. The caller compares `sub` with the session's fan
    /// (WRONG_FAN).
    ///
    /// Errors: any [`TokenError`] verification variant; `MissingClaim("event_id")` or
    /// `MissingClaim("queue_number")`.
    pub fn verify(&self, token: &str, now: SystemTime) -> Result<QueueTicketClaims, TokenError> {
        let kid = self.pins.check_header(token)?;
        let key = self
            .keys
            .get(&kid)
            .ok_or(TokenError::UnknownKeyId { kid })?;
        let (registered, mut wire) = self.pins.verify(token, &key.decoding, now)?;
        let event_id = take_string(&mut wire.event_id, "event_id")?;
        let queue_number = wire
            .queue_number
            .ok_or_else(|| TokenError::MissingClaim("queue_number".into()))?;
        Ok(QueueTicketClaims {
            registered,
            event_id,
            queue_number,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_load_in_order_named_by_their_kid() {
        let (a, b) = ([1u8; 32], [2u8; 32]);
        let keys = QueueTicketKeys::from_secrets(&[b, a]).unwrap();
        assert_eq!(keys.current_kid(), secret_kid(&b), "the first secret signs");
        assert_eq!(keys.kids().len(), 2);
        assert_ne!(secret_kid(&a), secret_kid(&b));
        assert_eq!(secret_kid(&a), secret_kid(&[1u8; 32]), "a kid is stable");
        assert!(secret_kid(&a).starts_with("qt-") && secret_kid(&a).len() == 19);
        assert!(QueueTicketKeys::from_secrets::<[u8; 32]>(&[]).is_err());
        assert!(QueueTicketKeys::from_secrets(&[a, a]).is_err());
        assert!(QueueTicketKeys::from_secrets(&[[1u8; 31]]).is_err());
    }
}
