//! Who is calling: fan sessions and admin tokens verified with the identity provider's
//! public keys (given at start), admission tokens with the waiting room's published
//! keys, fetched and cached. A token whose `kid` is unknown, or whose signature fails
//! under the cached key of its kid (a key replaced under the same name), triggers one
//! refresh of the admission keys (single flight, at most one fetch per
//! `min_refresh_interval`), so a key rotation costs one fetch and a stream of forged
//! tokens cannot hammer the waiting room. Every fetch happens before any transaction
//! starts.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use stadium_kit::caller::{Caller, ServiceRecognition};
use stadium_tokens::{
    Access, AdminVerifier, AdmissionClaims, AdmissionVerifier, FanSessionVerifier, TokenError,
    VerificationKeys, audience,
};
use tonic::{Request, Status};

use crate::domain::{EventId, FanId, Queue};
use crate::error::Error;
use crate::revocations::Revocations;

/// A boxed future of a JWKS fetch.
pub type JwksFuture<'a> = Pin<Box<dyn Future<Output = Result<String, String>> + Send + 'a>>;

/// Where admission keys come from: JWKS JSON, or a description of why not.
pub trait JwksSource: Send + Sync + 'static {
    /// Fetches the current JWK Set as JSON.
    fn fetch(&self) -> JwksFuture<'_>;
}

/// A fixed JWKS (local runs and tests).
#[derive(Debug, Clone)]
pub struct StaticJwks(pub String);

impl JwksSource for StaticJwks {
    fn fetch(&self) -> JwksFuture<'_> {
        let json = self.0.clone();
        Box::pin(async move { Ok(json) })
    }
}

/// Admission token verification with cached, refreshable keys.
pub struct AdmissionKeys {
    verifier: AdmissionVerifier,
    source: Arc<dyn JwksSource>,
    last_refresh: tokio::sync::Mutex<Option<Instant>>,
    min_refresh_interval: Duration,
    fetches: AtomicU64,
}

impl std::fmt::Debug for AdmissionKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionKeys")
            .field("verifier", &self.verifier)
            .field("fetches", &self.fetches.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl AdmissionKeys {
    /// Keys for admission tokens from `issuer`, fetched from `source` now (a failure is
    /// logged, not fatal: the waiting room may start after us, and the first unknown
    /// `kid` fetches again).
    ///
    /// # Errors
    /// [`TokenError::InvalidInput`] for an empty issuer.
    pub async fn new(
        source: Arc<dyn JwksSource>,
        issuer: &str,
        min_refresh_interval: Duration,
    ) -> Result<Self, TokenError> {
        let keys = Self {
            verifier: AdmissionVerifier::new(VerificationKeys::new(), issuer, audience::HOLDS)?,
            source,
            last_refresh: tokio::sync::Mutex::new(None),
            min_refresh_interval,
            fetches: AtomicU64::new(0),
        };
        // Not counted against the refresh interval: when the waiting room is not up yet,
        // the first unknown kid fetches at once.
        if let Err(error) = keys.load().await {
            tracing::warn!(%error, "admission keys not loaded yet; will fetch on first use");
        }
        Ok(keys)
    }

    /// How many times keys were fetched.
    pub fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// Fetches unless someone else refreshed since `asked_at` or within the minimum
    /// interval.
    async fn refresh(&self, asked_at: Instant) -> Result<(), Error> {
        let mut last = self.last_refresh.lock().await;
        if let Some(at) = *last
            && (at >= asked_at || at.elapsed() < self.min_refresh_interval)
        {
            return Ok(());
        }
        *last = Some(Instant::now());
        self.load().await
    }

    /// Fetches the key set and verifies with it from now on.
    async fn load(&self) -> Result<(), Error> {
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let json = self.source.fetch().await.map_err(Error::KeysUnavailable)?;
        let keys = VerificationKeys::from_jwks_json(&json)
            .map_err(|e| Error::KeysUnavailable(e.to_string()))?;
        tracing::info!(kids = ?keys.kids(), "admission keys loaded");
        self.verifier.replace_keys(keys);
        Ok(())
    }

    /// Verifies an admission token at `now`, refreshing the keys once (rate-limited) on
    /// an unknown kid or a bad signature.
    ///
    /// # Errors
    /// [`Error::Token`] (which `admission`) for any refusal; [`Error::KeysUnavailable`]
    /// when the keys could not be fetched.
    pub async fn verify(&self, token: &str, now: SystemTime) -> Result<AdmissionClaims, Error> {
        let refused = |source| Error::Token {
            which: "admission",
            source,
        };
        let asked_at = Instant::now();
        match self.verifier.verify(token, now) {
            Err(TokenError::UnknownKeyId { .. } | TokenError::BadSignature) => {
                self.refresh(asked_at).await?;
                self.verifier.verify(token, now).map_err(refused)
            }
            other => other.map_err(refused),
        }
    }
}

/// Verifies every credential the service accepts.
#[derive(Debug)]
pub struct Authenticator {
    fan: FanSessionVerifier,
    admin: AdminVerifier,
    admission: AdmissionKeys,
    revocations: Revocations,
    services: ServiceRecognition,
}

/// A verified fan session and admission token for one event.
#[derive(Debug, Clone)]
pub struct AdmittedFan {
    /// The fan (both tokens' `sub`).
    pub fan: FanId,
    /// The admission token's `jti`.
    pub admission_jti: String,
    /// The admission token's `exp`, Unix seconds.
    pub admission_expires_at: u64,
    /// The queue that admitted the fan: the event's own or its presale's (whose
    /// admissions claim only with a presale code).
    pub queue: Queue,
}

impl Authenticator {
    /// An authenticator trusting `identity` keys for fan sessions and admin tokens from
    /// `identity_issuer`, `admission` for admission tokens unless `revocations` lists
    /// them, and recognising calling services as `services` says.
    ///
    /// # Errors
    /// [`TokenError::InvalidInput`] for an empty issuer.
    pub fn new(
        identity: VerificationKeys,
        identity_issuer: &str,
        admission: AdmissionKeys,
        revocations: Revocations,
        services: ServiceRecognition,
    ) -> Result<Self, TokenError> {
        Ok(Self {
            fan: FanSessionVerifier::new(identity.clone(), identity_issuer, audience::HOLDS)?,
            admin: AdminVerifier::new(identity, identity_issuer, audience::HOLDS)?,
            admission,
            revocations,
            services,
        })
    }

    /// The copies of the events' revoked admissions (for their fetch count).
    pub fn revocations(&self) -> &Revocations {
        &self.revocations
    }

    /// The caller of a service-role RPC, if `access` lets them make it (see
    /// [`ServiceRecognition::caller`]).
    ///
    /// # Errors
    /// The refusal's status (`UNAUTHENTICATED`, `PERMISSION_DENIED`/`ROLE_REQUIRED`).
    pub fn caller<T>(&self, request: &Request<T>, access: Access) -> Result<Caller, Status> {
        self.services.caller(request, access, |token| {
            self.admin.verify(token, SystemTime::now())
        })
    }

    /// The admission key cache (for its fetch count).
    pub fn admission(&self) -> &AdmissionKeys {
        &self.admission
    }

    /// The fan of a session token.
    ///
    /// # Errors
    /// [`Error::Token`] (which `session`); [`Error::InvalidField`] for a `sub` that is
    /// not a usable fan id.
    pub fn fan(&self, session: &str, now: SystemTime) -> Result<FanId, Error> {
        let claims = self
            .fan
            .verify(session, now)
            .map_err(|source| Error::Token {
                which: "session",
                source,
            })?;
        FanId::try_from(claims.fan_id()).map_err(|e| Error::Token {
            which: "session",
            source: TokenError::InvalidClaim {
                claim: "sub",
                reason: e.to_string(),
            },
        })
    }

    /// Checks that `admission` admits `fan` (same `sub`) to `event`, from its queue or
    /// its presale's, and was not revoked (given back, taken back, a no-show: see
    /// [`Revocations`]).
    ///
    /// # Errors
    /// [`Error::MissingToken`] for an empty admission token; as
    /// [`AdmissionKeys::verify`]; [`Error::WrongFan`]; [`Error::WrongEvent`] for an
    /// admission to another event; as [`Revocations::check`].
    pub async fn admitted_fan(
        &self,
        fan: FanId,
        admission: &str,
        event: EventId,
        now: SystemTime,
    ) -> Result<AdmittedFan, Error> {
        if admission.is_empty() {
            return Err(Error::MissingToken("admission_token is empty".into()));
        }
        let claims = self.admission.verify(admission, now).await?;
        if claims.fan_id() != fan.as_str() {
            return Err(Error::WrongFan);
        }
        let queue = Queue::of_admission(event, &claims.event_id).ok_or(Error::WrongEvent)?;
        self.revocations
            .check(queue, &claims.registered.jti)
            .await?;
        Ok(AdmittedFan {
            fan,
            admission_jti: claims.registered.jti,
            admission_expires_at: claims.registered.exp,
            queue,
        })
    }

    /// The verifier of admin tokens addressed to holds: a call checks its roles with
    /// [`AdminVerifier::verify_access`] (a refusal is an [`Error::Access`]).
    pub fn admin(&self) -> &AdminVerifier {
        &self.admin
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use stadium_tokens::{AdmissionIssuer, Ed25519Key, SigningKeyRing};

    use super::*;

    /// Serves the ring's JWKS as of each call and counts calls.
    struct RingSource {
        ring: SigningKeyRing,
        calls: Mutex<u32>,
    }

    impl JwksSource for RingSource {
        fn fetch(&self) -> JwksFuture<'_> {
            *self.calls.lock().unwrap() += 1;
            let json = self.ring.jwks_json().map_err(|e| e.to_string());
            Box::pin(async move { json })
        }
    }

    #[tokio::test]
    async fn unknown_kid_refreshes_once_then_verifies() {
        let ring = SigningKeyRing::generate("wr-1").unwrap();
        let source = Arc::new(RingSource {
            ring: ring.clone(),
            calls: Mutex::new(0),
        });
        let keys = AdmissionKeys::new(source.clone(), "wr", Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(*source.calls.lock().unwrap(), 1);
        let issuer = AdmissionIssuer::new(ring.clone(), "wr").unwrap();
        let now = SystemTime::now();
        let token = issuer.issue("fan", "1", now).unwrap().token;
        keys.verify(&token, now).await.unwrap();
        assert_eq!(
            *source.calls.lock().unwrap(),
            1,
            "a known kid costs no fetch"
        );

        ring.rotate(Ed25519Key::generate("wr-2").unwrap()).unwrap();
        let rotated = issuer.issue("fan", "1", now).unwrap().token;
        keys.verify(&rotated, now).await.unwrap();
        assert_eq!(
            *source.calls.lock().unwrap(),
            2,
            "one refresh for the new kid"
        );
    }

    #[tokio::test]
    async fn a_key_replaced_under_its_kid_refreshes_once_then_verifies() {
        let ring = SigningKeyRing::new(Ed25519Key::from_seed("wr-1", &[1; 32]).unwrap());
        let source = Arc::new(RingSource {
            ring: ring.clone(),
            calls: Mutex::new(0),
        });
        let keys = AdmissionKeys::new(source.clone(), "wr", Duration::ZERO)
            .await
            .unwrap();
        // The waiting room restarted with another key under the same kid.
        ring.rotate(Ed25519Key::generate("swap").unwrap()).unwrap();
        ring.retire("wr-1").unwrap();
        ring.rotate(Ed25519Key::from_seed("wr-1", &[2; 32]).unwrap())
            .unwrap();
        ring.retire("swap").unwrap();
        let restarted = SigningKeyRing::new(Ed25519Key::from_seed("wr-1", &[2; 32]).unwrap());
        let now = SystemTime::now();
        let token = AdmissionIssuer::new(restarted, "wr")
            .unwrap()
            .issue("fan", "1", now)
            .unwrap()
            .token;
        keys.verify(&token, now).await.unwrap();
        assert_eq!(
            *source.calls.lock().unwrap(),
            2,
            "one refresh for the bad signature"
        );
    }

    #[tokio::test]
    async fn forged_kids_are_rate_limited() {
        let ring = SigningKeyRing::generate("wr-1").unwrap();
        let source = Arc::new(RingSource {
            ring: ring.clone(),
            calls: Mutex::new(0),
        });
        let keys = AdmissionKeys::new(source.clone(), "wr", Duration::from_secs(3600))
            .await
            .unwrap();
        // An unknown kid, and a known kid with another key (a bad signature).
        for kid in ["evil", "wr-1"] {
            let stranger = SigningKeyRing::generate(kid).unwrap();
            let forged = AdmissionIssuer::new(stranger, "wr")
                .unwrap()
                .issue("fan", "1", SystemTime::now())
                .unwrap()
                .token;
            for _ in 0..5 {
                let err = keys.verify(&forged, SystemTime::now()).await.unwrap_err();
                assert!(matches!(err, Error::Token { .. }), "{err:?}");
            }
        }
        assert_eq!(
            *source.calls.lock().unwrap(),
            2,
            "the fetch at start, then one fetch within the interval"
        );
    }
}
