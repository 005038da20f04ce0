//! Issuers and verifiers of the three EdDSA (Ed25519) kinds: fan session, admission
//! token and admin token. One generic type per side, pinned to a kind by a marker
//! type, so a verifier of one kind can never be handed another kind's token and
//! accept it.

use std::marker::PhantomData;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use jsonwebtoken::{Algorithm, DecodingKey};

use crate::access::{Access, AccessRefused};
use crate::claims::{
    AdminClaims, AdmissionClaims, FanSessionClaims, Issued, RegisteredClaims, Role, WireClaims,
    check_fan_id, non_empty, take_string,
};
use crate::jwt::{Pins, sign};
use crate::keys::{SigningKeyRing, VerificationKeys};
use crate::verified::{Verified, VerifiedTokens};
use crate::{DEFAULT_LEEWAY, TokenError, audience};

mod sealed {
    pub trait Sealed {}
}

/// A kind of EdDSA token: its header `typ` and defaults. Implemented only by
/// [`FanSession`], [`Admission`] and [`Admin`].
pub trait EdKind: sealed::Sealed + Send + Sync + 'static {
    /// The header `typ` of this kind.
    const TYP: &'static str;
    /// Lifetime of a token when the issuer is not told otherwise.
    const DEFAULT_TTL: Duration;
    /// `aud` of a token when the issuer is not told otherwise.
    fn default_audience() -> Vec<String>;
}

/// Marker for fan session tokens (`typ` `fan-session`; default TTL 1 h; default `aud`
/// every fan-facing service).
#[derive(Debug)]
pub enum FanSession {}
/// Marker for admission tokens (`typ` `admission`; default TTL 600 s; default `aud`
/// `["holds", "payments"]`).
#[derive(Debug)]
pub enum Admission {}
/// Marker for admin tokens (`typ` `admin`; default TTL 1 h; default `aud` every service).
#[derive(Debug)]
pub enum Admin {}

impl sealed::Sealed for FanSession {}
impl sealed::Sealed for Admission {}
impl sealed::Sealed for Admin {}

impl EdKind for FanSession {
    const TYP: &'static str = crate::TYP_FAN_SESSION;
    const DEFAULT_TTL: Duration = Duration::from_secs(3600);
    fn default_audience() -> Vec<String> {
        [
            audience::WAITING_ROOM,
            audience::SEAT_MAP,
            audience::HOLDS,
            audience::PAYMENTS,
        ]
        .map(String::from)
        .to_vec()
    }
}

impl EdKind for Admission {
    const TYP: &'static str = crate::TYP_ADMISSION;
    const DEFAULT_TTL: Duration = Duration::from_secs(600);
    fn default_audience() -> Vec<String> {
        [audience::HOLDS, audience::PAYMENTS]
            .map(String::from)
            .to_vec()
    }
}

impl EdKind for Admin {
    const TYP: &'static str = crate::TYP_ADMIN;
    const DEFAULT_TTL: Duration = Duration::from_secs(3600);
    fn default_audience() -> Vec<String> {
        audience::ALL.map(String::from).to_vec()
    }
}

/// Issues tokens of kind `K`, signed by the current key of a [`SigningKeyRing`].
///
/// Every token gets `iss`, `aud`, `sub`, `iat` = `nbf` = the given `now` (whole
/// seconds), `exp` = `iat` + TTL, a random `jti`, and header `typ`, `alg` EdDSA, `kid`.
/// Cost: about one Ed25519 signature (tens of µs); see the `tokens` bench.
pub struct EdIssuer<K> {
    ring: SigningKeyRing,
    issuer: String,
    audience: Vec<String>,
    ttl_secs: u64,
    kind: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for EdIssuer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdIssuer")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("ttl_secs", &self.ttl_secs)
            .field("ring", &self.ring)
            .finish()
    }
}

/// Issues fan session tokens.
pub type FanSessionIssuer = EdIssuer<FanSession>;
/// Issues admission tokens.
pub type AdmissionIssuer = EdIssuer<Admission>;
/// Issues admin tokens.
pub type AdminIssuer = EdIssuer<Admin>;

/// Converts a TTL into whole seconds, refusing anything under one second.
pub(crate) fn ttl_secs(ttl: Duration) -> Result<u64, TokenError> {
    match ttl.as_secs() {
        0 => Err(TokenError::InvalidInput {
            field: "ttl",
            reason: "must be at least one second".into(),
        }),
        s => Ok(s),
    }
}

/// Collects a non-empty list of non-empty audience names.
pub(crate) fn audience_list<I, S>(audience: I) -> Result<Vec<String>, TokenError>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let list: Vec<String> = audience.into_iter().map(Into::into).collect();
    if list.is_empty() || list.iter().any(String::is_empty) {
        return Err(TokenError::InvalidInput {
            field: "audience",
            reason: "needs at least one non-empty name".into(),
        });
    }
    Ok(list)
}

impl<K: EdKind> EdIssuer<K> {
    /// An issuer named `issuer` (the `iss` claim) with the kind's default audience and TTL.
    ///
    /// Errors: [`TokenError::InvalidInput`] for an empty `issuer`.
    pub fn new(ring: SigningKeyRing, issuer: impl Into<String>) -> Result<Self, TokenError> {
        let issuer = issuer.into();
        non_empty("issuer", &issuer)?;
        Ok(EdIssuer {
            ring,
            issuer,
            audience: K::default_audience(),
            ttl_secs: K::DEFAULT_TTL.as_secs(),
            kind: PhantomData,
        })
    }

    /// Replaces the `aud` written into tokens.
    ///
    /// Errors: [`TokenError::InvalidInput`] for an empty list or an empty name.
    pub fn with_audience<I, S>(mut self, audience: I) -> Result<Self, TokenError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.audience = audience_list(audience)?;
        Ok(self)
    }

    /// Replaces the default lifetime (whole seconds; fractions are dropped).
    ///
    /// Errors: [`TokenError::InvalidInput`] for less than one second.
    pub fn with_ttl(mut self, ttl: Duration) -> Result<Self, TokenError> {
        self.ttl_secs = ttl_secs(ttl)?;
        Ok(self)
    }

    /// The key ring that signs (clone it to publish the JWKS or rotate keys).
    pub fn ring(&self) -> &SigningKeyRing {
        &self.ring
    }

    /// The `iss` written into tokens.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The `aud` written into tokens.
    pub fn audience(&self) -> &[String] {
        &self.audience
    }

    /// The default lifetime of a token.
    pub fn ttl(&self) -> Duration {
        Duration::from_secs(self.ttl_secs)
    }

    fn sign_with(
        &self,
        sub: &str,
        now: SystemTime,
        ttl_secs: u64,
        fill: impl FnOnce(&mut WireClaims),
    ) -> Result<(String, RegisteredClaims), TokenError> {
        let (mut wire, registered) =
            WireClaims::new(&self.issuer, sub, &self.audience, now, ttl_secs);
        fill(&mut wire);
        let key = self.ring.signing_key();
        let token = sign(
            K::TYP,
            Algorithm::EdDSA,
            key.kid(),
            key.encoding_key(),
            &wire,
        )?;
        Ok((token, registered))
    }
}

impl EdIssuer<FanSession> {
    /// A fan session for `fan_id` (the `sub`), valid from `now` for the issuer's TTL.
    ///
    /// Errors: [`TokenError::InvalidInput`] for a `fan_id` that
    /// [`crate::check_fan_id`] refuses; [`TokenError::Signing`].
    pub fn issue(
        &self,
        fan_id: &str,
        now: SystemTime,
    ) -> Result<Issued<FanSessionClaims>, TokenError> {
        check_fan_id(fan_id).map_err(|reason| TokenError::InvalidInput {
            field: "fan_id",
            reason,
        })?;
        let (token, registered) = self.sign_with(fan_id, now, self.ttl_secs, |_| {})?;
        Ok(Issued {
            token,
            claims: FanSessionClaims { registered },
        })
    }
}

impl EdIssuer<Admission> {
    /// An admission token for `fan_id` (the `sub`) to `event_id`, valid from `now` for
    /// the issuer's TTL.
    ///
    /// Errors: [`TokenError::InvalidInput`] for an empty id; [`TokenError::Signing`].
    pub fn issue(
        &self,
        fan_id: &str,
        event_id: &str,
        now: SystemTime,
    ) -> Result<Issued<AdmissionClaims>, TokenError> {
        self.issue_with_ttl(fan_id, event_id, Duration::from_secs(self.ttl_secs), now)
    }

    /// As [`EdIssuer::<Admission>::issue`] with this token's own lifetime (e.g. the
    /// event's configured admission TTL; whole seconds).
    ///
    /// Errors: as `issue`, plus [`TokenError::InvalidInput`] for a TTL under one second.
    pub fn issue_with_ttl(
        &self,
        fan_id: &str,
        event_id: &str,
        ttl: Duration,
        now: SystemTime,
    ) -> Result<Issued<AdmissionClaims>, TokenError> {
        self.admission(fan_id, event_id, ttl, now, "")
    }

    /// As [`EdIssuer::<Admission>::issue_with_ttl`] for the admission a waiting-list
    /// offer gives: its `jti` begins with [`crate::OFFER_JTI_PREFIX`].
    ///
    /// Errors: as `issue_with_ttl`.
    pub fn issue_offer(
        &self,
        fan_id: &str,
        event_id: &str,
        ttl: Duration,
        now: SystemTime,
    ) -> Result<Issued<AdmissionClaims>, TokenError> {
        self.admission(fan_id, event_id, ttl, now, crate::OFFER_JTI_PREFIX)
    }

    /// An admission whose jti is `jti_prefix` followed by the random one.
    fn admission(
        &self,
        fan_id: &str,
        event_id: &str,
        ttl: Duration,
        now: SystemTime,
        jti_prefix: &str,
    ) -> Result<Issued<AdmissionClaims>, TokenError> {
        non_empty("fan_id", fan_id)?;
        non_empty("event_id", event_id)?;
        let ttl = ttl_secs(ttl)?;
        let mut prefixed = None;
        let (token, mut registered) = self.sign_with(fan_id, now, ttl, |w| {
            w.event_id = Some(event_id.to_owned());
            if !jti_prefix.is_empty() {
                let jti = format!("{jti_prefix}{}", w.jti.as_deref().unwrap_or_default());
                w.jti = Some(jti.clone());
                prefixed = Some(jti);
            }
        })?;
        if let Some(jti) = prefixed {
            registered.jti = jti;
        }
        Ok(Issued {
            token,
            claims: AdmissionClaims {
                registered,
                event_id: event_id.to_owned(),
            },
        })
    }
}

impl EdIssuer<Admin> {
    /// An admin token for `subject` (staff member or service name) granting `roles`.
    ///
    /// Errors: [`TokenError::InvalidInput`] for an empty `subject` or no role;
    /// [`TokenError::Signing`].
    pub fn issue(
        &self,
        subject: &str,
        roles: &[Role],
        now: SystemTime,
    ) -> Result<Issued<AdminClaims>, TokenError> {
        non_empty("subject", subject)?;
        let roles = normalise_roles(roles.iter().copied());
        if roles.is_empty() {
            return Err(TokenError::InvalidInput {
                field: "roles",
                reason: "an admin token needs at least one role".into(),
            });
        }
        let (token, registered) = self.sign_with(subject, now, self.ttl_secs, |w| {
            w.roles = Some(roles.iter().map(|r| r.as_str().to_owned()).collect());
        })?;
        Ok(Issued {
            token,
            claims: AdminClaims { registered, roles },
        })
    }
}

fn normalise_roles(roles: impl Iterator<Item = Role>) -> Vec<Role> {
    let mut roles: Vec<Role> = roles.collect();
    roles.sort_unstable();
    roles.dedup();
    roles
}

/// Where a verifier finds public keys: a snapshot (e.g. imported from a JWKS) or a
/// live ring of the same process.
enum KeySource {
    Snapshot(Arc<VerificationKeys>),
    Ring(SigningKeyRing),
}

impl KeySource {
    fn lookup(&self, kid: &str) -> Option<Arc<DecodingKey>> {
        match self {
            KeySource::Snapshot(keys) => keys.decoding_key(kid),
            KeySource::Ring(ring) => ring.decoding_key(kid),
        }
    }
}

/// Verifies tokens of kind `K`: pins `typ`, `alg` EdDSA, the trusted `iss`, its own
/// `aud`, requires `kid`, `sub`, `exp`, `nbf`, `iat`, `jti`, and checks the time window
/// at the caller's `now` with a leeway (default [`DEFAULT_LEEWAY`], 5 s).
///
/// Share it behind an `Arc`; [`EdVerifier::replace_keys`] swaps keys in place, e.g.
/// after a JWKS refresh triggered by [`TokenError::UnknownKeyId`].
///
/// A token verified once is kept until its `exp` (at most
/// [`MAX_VERIFIED_TOKEN_BYTES`](crate::MAX_VERIFIED_TOKEN_BYTES) of them) and later checks of
/// the same bytes skip the signature while the key that verified it is still trusted;
/// the time window is checked at every call (see the `verified` module).
pub struct EdVerifier<K> {
    keys: RwLock<KeySource>,
    pins: Pins,
    verified: VerifiedTokens,
    kind: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for EdVerifier<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdVerifier")
            .field("typ", &self.pins.typ)
            .field("issuer", &self.pins.issuer)
            .field("audience", &self.pins.audience)
            .field("leeway_secs", &self.pins.leeway_secs)
            .finish_non_exhaustive()
    }
}

/// Verifies fan session tokens.
pub type FanSessionVerifier = EdVerifier<FanSession>;
/// Verifies admission tokens.
pub type AdmissionVerifier = EdVerifier<Admission>;
/// Verifies admin tokens.
pub type AdminVerifier = EdVerifier<Admin>;

impl<K: EdKind> EdVerifier<K> {
    /// A verifier trusting `keys` for tokens from `issuer` addressed to `audience`
    /// (this service's name, e.g. [`audience::HOLDS`]).
    ///
    /// Errors: [`TokenError::InvalidInput`] for an empty `issuer` or `audience`.
    pub fn new(
        keys: VerificationKeys,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, TokenError> {
        Self::with_source(KeySource::Snapshot(Arc::new(keys)), issuer, audience)
    }

    /// A verifier that follows `ring` live (same process): rotations and retirements
    /// apply to verification at once.
    ///
    /// Errors: as [`EdVerifier::new`].
    pub fn for_ring(
        ring: &SigningKeyRing,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, TokenError> {
        Self::with_source(KeySource::Ring(ring.clone()), issuer, audience)
    }

    fn with_source(
        source: KeySource,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, TokenError> {
        let (issuer, audience) = (issuer.into(), audience.into());
        non_empty("issuer", &issuer)?;
        non_empty("audience", &audience)?;
        Ok(EdVerifier {
            keys: RwLock::new(source),
            pins: Pins::new(
                K::TYP,
                Algorithm::EdDSA,
                "EdDSA",
                issuer,
                audience,
                DEFAULT_LEEWAY.as_secs(),
            ),
            verified: VerifiedTokens::new(),
            kind: PhantomData,
        })
    }

    /// Replaces the clock-skew leeway applied to `exp`, `nbf` and `iat` (whole seconds).
    pub fn with_leeway(mut self, leeway: Duration) -> Self {
        self.pins.leeway_secs = leeway.as_secs();
        self
    }

    /// The leeway in force.
    pub fn leeway(&self) -> Duration {
        Duration::from_secs(self.pins.leeway_secs)
    }

    /// Trusts exactly `keys` from now on (also for a verifier made with `for_ring`).
    pub fn replace_keys(&self, keys: VerificationKeys) {
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = KeySource::Snapshot(Arc::new(keys));
    }

    fn verify_raw(
        &self,
        token: &str,
        now: SystemTime,
    ) -> Result<(RegisteredClaims, WireClaims), TokenError> {
        if let Some(hit) = self.verified.get(token) {
            if self
                .lookup(&hit.kid)
                .is_some_and(|key| Arc::ptr_eq(&key, &hit.key))
            {
                let mut wire = hit.wire.clone();
                let registered = self.pins.registered(&mut wire, now)?;
                return Ok((registered, wire));
            }
            self.verified.forget(token);
        }
        let kid = self.pins.check_header(token)?;
        let key = self
            .lookup(&kid)
            .ok_or(TokenError::UnknownKeyId { kid: kid.clone() })?;
        let mut wire = self.pins.decode(token, &key)?;
        let verified = Verified {
            kid,
            key,
            wire: wire.clone(),
        };
        let registered = self.pins.registered(&mut wire, now)?;
        self.verified.insert(token, verified);
        Ok((registered, wire))
    }

    fn lookup(&self, kid: &str) -> Option<Arc<DecodingKey>> {
        self.keys
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .lookup(kid)
    }
}

impl EdVerifier<FanSession> {
    /// Verifies a fan session token at `now`.
    ///
    /// Errors: any [`TokenError`] verification variant; [`TokenError::InvalidClaim`]
    /// for a `sub` that [`crate::check_fan_id`] refuses (too long, control characters).
    pub fn verify(&self, token: &str, now: SystemTime) -> Result<FanSessionClaims, TokenError> {
        let (registered, _) = self.verify_raw(token, now)?;
        check_fan_id(&registered.sub).map_err(|reason| TokenError::InvalidClaim {
            claim: "sub",
            reason,
        })?;
        Ok(FanSessionClaims { registered })
    }
}

impl EdVerifier<Admission> {
    /// Verifies an admission token at `now`. The caller still compares `sub` with the
    /// fan of the session and `event_id` with the request (WRONG_FAN / WRONG_EVENT).
    ///
    /// Errors: any [`TokenError`] verification variant; `MissingClaim("event_id")`.
    pub fn verify(&self, token: &str, now: SystemTime) -> Result<AdmissionClaims, TokenError> {
        let (registered, mut wire) = self.verify_raw(token, now)?;
        let event_id = take_string(&mut wire.event_id, "event_id")?;
        Ok(AdmissionClaims {
            registered,
            event_id,
        })
    }
}

impl EdVerifier<Admin> {
    /// Verifies an admin token at `now`. Role checks are the caller's (ROLE_REQUIRED).
    ///
    /// Errors: any [`TokenError`] verification variant; `MissingClaim("roles")`.
    pub fn verify(&self, token: &str, now: SystemTime) -> Result<AdminClaims, TokenError> {
        let (registered, wire) = self.verify_raw(token, now)?;
        let names = wire
            .roles
            .ok_or_else(|| TokenError::MissingClaim("roles".into()))?;
        let roles = normalise_roles(names.iter().filter_map(|n| Role::parse(n)));
        Ok(AdminClaims { registered, roles })
    }

    /// Verifies an admin token at `now` and checks that `access` allows it.
    ///
    /// # Errors
    /// [`AccessRefused::Token`] as [`verify`](Self::verify);
    /// [`AccessRefused::RoleRequired`] when no granted role is one `access` accepts.
    pub fn verify_access(
        &self,
        token: &str,
        access: Access,
        now: SystemTime,
    ) -> Result<AdminClaims, AccessRefused> {
        let claims = self.verify(token, now)?;
        if !access.allows(&claims) {
            return Err(AccessRefused::RoleRequired(access));
        }
        Ok(claims)
    }
}
