//! Ed25519 keys: a signing key ring that rotates, and the public key sets (JWKS,
//! RFC 7517 with the OKP key type of RFC 8037) that verifiers are built from.
//!
//! Rotation without a failed verification: [`SigningKeyRing::insert`] a new key (it
//! is published in the JWKS but does not sign yet), let verifiers refresh, then
//! [`SigningKeyRing::promote`] it; once the old key's tokens have expired,
//! [`SigningKeyRing::retire`] it. [`SigningKeyRing::rotate`] does insert + promote at
//! once for verifiers that refresh on [`crate::TokenError::UnknownKeyId`].

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::pkcs8::{DecodePrivateKey as _, EncodePrivateKey as _};
use ed25519_dalek::{SigningKey, VerifyingKey};
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm,
    OctetKeyPairParameters, OctetKeyPairType, PublicKeyUse, ThumbprintHash,
};
use jsonwebtoken::{DecodingKey, EncodingKey};

use crate::TokenError;

/// Longest accepted key id, in bytes.
pub const MAX_KID_LEN: usize = 64;

/// Checks a key id: 1..=[`MAX_KID_LEN`] bytes of `A-Z a-z 0-9 . _ -`, so it can sit in
/// logs, metrics labels and file names without escaping.
pub fn validate_kid(kid: &str) -> Result<(), TokenError> {
    let ok = !kid.is_empty()
        && kid.len() <= MAX_KID_LEN
        && kid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(TokenError::InvalidKey(format!(
            "key id {kid:?} must be 1..={MAX_KID_LEN} characters of A-Z a-z 0-9 . _ -"
        )))
    }
}

/// The RFC 7638 thumbprint of an Ed25519 public key's JWK (SHA-256 over `crv`, `kty`
/// and `x`, base64url without padding: 43 characters). Keys loaded from configuration
/// take it as their kid (RFC 7638 §1), so one kid always names one key: a verifier
/// never mistakes a replaced key for the old one of the same name.
///
/// Errors: [`TokenError::InvalidKey`] if the JWK cannot be serialised (not in practice).
pub fn thumbprint_kid(public: &[u8; 32]) -> Result<String, TokenError> {
    public_jwk("thumbprint", public)
        .thumbprint(ThumbprintHash::SHA256)
        .map_err(|e| TokenError::InvalidKey(e.to_string()))
}

/// One Ed25519 private key with its key id, ready to sign EdDSA JWTs.
///
/// `Debug` never prints the private key.
pub struct Ed25519Key {
    kid: String,
    public: [u8; 32],
    encoding: EncodingKey,
    decoding: Arc<DecodingKey>,
}

impl std::fmt::Debug for Ed25519Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ed25519Key")
            .field("kid", &self.kid)
            .field("public_x", &URL_SAFE_NO_PAD.encode(self.public))
            .finish_non_exhaustive()
    }
}

impl Ed25519Key {
    /// A fresh key from the operating system's random source.
    ///
    /// Errors: [`TokenError::InvalidKey`] for a bad `kid` (see [`validate_kid`]).
    pub fn generate(kid: impl Into<String>) -> Result<Self, TokenError> {
        Self::from_signing_key(kid.into(), SigningKey::generate(&mut rand::rngs::OsRng))
    }

    /// The key whose 32-byte secret seed (RFC 8032 §5.1.5) is `seed`. Deterministic:
    /// the same seed always gives the same key (useful for dev stacks and tests).
    ///
    /// Errors: [`TokenError::InvalidKey`] for a bad `kid`.
    pub fn from_seed(kid: impl Into<String>, seed: &[u8; 32]) -> Result<Self, TokenError> {
        Self::from_signing_key(kid.into(), SigningKey::from_bytes(seed))
    }

    /// Loads a PKCS#8 DER private key (RFC 8410; v1 or v2 with the public key).
    ///
    /// Errors: [`TokenError::InvalidKey`] when the DER is not an Ed25519 private key or
    /// its embedded public key does not match.
    pub fn from_pkcs8_der(kid: impl Into<String>, der: &[u8]) -> Result<Self, TokenError> {
        let key = SigningKey::from_pkcs8_der(der)
            .map_err(|e| TokenError::InvalidKey(format!("not an Ed25519 PKCS#8 key: {e}")))?;
        Self::from_signing_key(kid.into(), key)
    }

    /// Loads a PEM `PRIVATE KEY` block (PKCS#8, as written by `openssl genpkey -algorithm ed25519`).
    ///
    /// Errors: [`TokenError::InvalidKey`] when it is not an Ed25519 PKCS#8 PEM.
    pub fn from_pkcs8_pem(kid: impl Into<String>, pem: &str) -> Result<Self, TokenError> {
        let key = EncodingKey::from_ed_pem(pem.as_bytes())
            .map_err(|e| TokenError::InvalidKey(format!("not an Ed25519 PEM key: {e}")))?;
        Self::from_pkcs8_der(kid, key.as_bytes())
    }

    fn from_signing_key(kid: String, key: SigningKey) -> Result<Self, TokenError> {
        validate_kid(&kid)?;
        let der = key
            .to_pkcs8_der()
            .map_err(|e| TokenError::InvalidKey(format!("cannot encode PKCS#8: {e}")))?;
        let public = key.verifying_key().to_bytes();
        Ok(Ed25519Key {
            kid,
            public,
            encoding: EncodingKey::from_ed_der(der.as_bytes()),
            decoding: Arc::new(
                DecodingKey::from_ed_components(&URL_SAFE_NO_PAD.encode(public))
                    .map_err(|e| TokenError::InvalidKey(e.to_string()))?,
            ),
        })
    }

    /// The same key named by its [`thumbprint_kid`].
    ///
    /// Errors: as [`thumbprint_kid`].
    pub fn with_thumbprint_kid(self) -> Result<Self, TokenError> {
        Ok(Self {
            kid: thumbprint_kid(&self.public)?,
            ..self
        })
    }

    /// The key id written into the `kid` header of every token this key signs.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The 32-byte public key (RFC 8032 encoding).
    pub fn public_key(&self) -> [u8; 32] {
        self.public
    }

    /// The private key as PKCS#8 v2 DER, for storing it in a secret store. Handle as a secret.
    pub fn to_pkcs8_der(&self) -> Vec<u8> {
        self.encoding.as_bytes().to_vec()
    }

    /// The private key as one PEM `PRIVATE KEY` block (RFC 7468 §10), the form
    /// [`SigningKeyRing::from_pkcs8_pems`] reads. Handle as a secret.
    pub fn to_pkcs8_pem(&self) -> String {
        use base64::Engine as _;
        let body = base64::engine::general_purpose::STANDARD.encode(self.to_pkcs8_der());
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|line| std::str::from_utf8(line).unwrap_or_default())
            .collect();
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            lines.join("\n")
        )
    }

    /// The public JWK: `kty` OKP, `crv` Ed25519, `x` (base64url), `kid`, `alg` EdDSA, `use` sig.
    pub fn public_jwk(&self) -> Jwk {
        public_jwk(&self.kid, &self.public)
    }

    pub(crate) fn encoding_key(&self) -> &EncodingKey {
        &self.encoding
    }
}

fn public_jwk(kid: &str, public: &[u8; 32]) -> Jwk {
    Jwk {
        common: CommonParameters {
            public_key_use: Some(PublicKeyUse::Signature),
            key_algorithm: Some(KeyAlgorithm::EdDSA),
            key_id: Some(kid.to_owned()),
            ..CommonParameters::default()
        },
        algorithm: AlgorithmParameters::OctetKeyPair(OctetKeyPairParameters {
            key_type: OctetKeyPairType::OctetKeyPair,
            curve: EllipticCurve::Ed25519,
            x: URL_SAFE_NO_PAD.encode(public),
        }),
    }
}

struct RingState {
    current: Arc<Ed25519Key>,
    keys: BTreeMap<String, Arc<Ed25519Key>>,
}

/// The Ed25519 keys of one issuer: the current key signs, every key in the ring
/// (current, newly inserted, not yet retired) verifies and is published in the JWKS.
///
/// A cheap handle: clones share the same ring, so an issuer, a verifier built with
/// [`crate::EdVerifier::for_ring`] and a JWKS endpoint all see a rotation at once.
#[derive(Clone)]
pub struct SigningKeyRing {
    inner: Arc<RwLock<RingState>>,
}

impl std::fmt::Debug for SigningKeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKeyRing")
            .field("current", &self.current_kid())
            .field("kids", &self.kids())
            .finish()
    }
}

impl SigningKeyRing {
    /// A ring holding one key, which signs.
    pub fn new(current: Ed25519Key) -> Self {
        let current = Arc::new(current);
        let keys = BTreeMap::from([(current.kid.clone(), Arc::clone(&current))]);
        SigningKeyRing {
            inner: Arc::new(RwLock::new(RingState { current, keys })),
        }
    }

    /// A ring from one or more PEM `PRIVATE KEY` blocks (PKCS#8 Ed25519, as written by
    /// `openssl genpkey -algorithm ed25519`), one after another: the first signs, the
    /// others verify. Each key is named by its [`thumbprint_kid`].
    ///
    /// Errors: [`TokenError::InvalidKey`] when there is no block, a block is not an
    /// Ed25519 key or has no END line, text sits outside the blocks, or a key is listed
    /// twice.
    pub fn from_pkcs8_pems(text: &str) -> Result<Self, TokenError> {
        const BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
        const END: &str = "-----END PRIVATE KEY-----";
        let mut ring: Option<SigningKeyRing> = None;
        let mut rest = text;
        while let Some(start) = rest.find(BEGIN) {
            if !rest[..start].trim().is_empty() {
                return Err(TokenError::InvalidKey(
                    "text outside the PEM PRIVATE KEY blocks".into(),
                ));
            }
            let block = &rest[start..];
            let end = block
                .find(END)
                .ok_or_else(|| TokenError::InvalidKey("a PEM block has no END line".into()))?
                + END.len();
            let key = Ed25519Key::from_pkcs8_pem("pem", &block[..end])?.with_thumbprint_kid()?;
            match &ring {
                None => ring = Some(SigningKeyRing::new(key)),
                Some(ring) if ring.kids().contains(&key.kid) => {
                    return Err(TokenError::InvalidKey(format!(
                        "key {} is listed twice",
                        key.kid
                    )));
                }
                Some(ring) => ring.insert(key)?,
            }
            rest = &block[end..];
        }
        if !rest.trim().is_empty() {
            return Err(TokenError::InvalidKey(
                "text outside the PEM PRIVATE KEY blocks".into(),
            ));
        }
        ring.ok_or_else(|| TokenError::InvalidKey("no PEM PRIVATE KEY block".into()))
    }

    /// A ring with one freshly generated key named `kid`.
    ///
    /// Errors: [`TokenError::InvalidKey`] for a bad `kid`.
    pub fn generate(kid: impl Into<String>) -> Result<Self, TokenError> {
        Ok(Self::new(Ed25519Key::generate(kid)?))
    }

    // Writers never panic while holding the lock, so a poisoned lock still guards a
    // consistent state and is safe to keep using.
    fn read(&self) -> RwLockReadGuard<'_, RingState> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, RingState> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The kid that signs new tokens.
    pub fn current_kid(&self) -> String {
        self.read().current.kid.clone()
    }

    /// Every kid in the ring, sorted.
    pub fn kids(&self) -> Vec<String> {
        self.read().keys.keys().cloned().collect()
    }

    /// Adds a key that verifies (and is published) but does not sign until promoted.
    /// Inserting the same key again is a no-op.
    ///
    /// Errors: [`TokenError::InvalidKey`] when the kid is taken by a different key.
    pub fn insert(&self, key: Ed25519Key) -> Result<(), TokenError> {
        let mut state = self.write();
        if let Some(existing) = state.keys.get(&key.kid) {
            if existing.public == key.public {
                return Ok(());
            }
            return Err(TokenError::InvalidKey(format!(
                "key id {:?} is already used by another key",
                key.kid
            )));
        }
        state.keys.insert(key.kid.clone(), Arc::new(key));
        Ok(())
    }

    /// Makes the key `kid` (already in the ring) the one that signs.
    ///
    /// Errors: [`TokenError::UnknownKeyId`] when the ring has no such key.
    pub fn promote(&self, kid: &str) -> Result<(), TokenError> {
        let mut state = self.write();
        let key = state
            .keys
            .get(kid)
            .cloned()
            .ok_or_else(|| TokenError::UnknownKeyId { kid: kid.into() })?;
        state.current = key;
        Ok(())
    }

    /// Inserts `key` and makes it sign at once; older keys keep verifying.
    ///
    /// Errors: as [`SigningKeyRing::insert`].
    pub fn rotate(&self, key: Ed25519Key) -> Result<(), TokenError> {
        let kid = key.kid.clone();
        self.insert(key)?;
        self.promote(&kid)
    }

    /// Removes a key: tokens it signed no longer verify (they fail with
    /// [`TokenError::UnknownKeyId`]) and it leaves the JWKS.
    ///
    /// Errors: [`TokenError::UnknownKeyId`] when absent; [`TokenError::InvalidKey`]
    /// when it is the current signing key (promote another first).
    pub fn retire(&self, kid: &str) -> Result<(), TokenError> {
        let mut state = self.write();
        if state.current.kid == kid {
            return Err(TokenError::InvalidKey(format!(
                "key id {kid:?} signs; promote another key before retiring it"
            )));
        }
        state
            .keys
            .remove(kid)
            .map(|_| ())
            .ok_or_else(|| TokenError::UnknownKeyId { kid: kid.into() })
    }

    /// The public keys of the ring as a JWK Set (sorted by kid).
    pub fn jwks(&self) -> JwkSet {
        JwkSet {
            keys: self.read().keys.values().map(|k| k.public_jwk()).collect(),
        }
    }

    /// [`SigningKeyRing::jwks`] as JSON, e.g. for `GetSigningKeysResponse.jwks_json`.
    ///
    /// Errors: [`TokenError::InvalidKey`] if serialisation fails (it does not for these keys).
    pub fn jwks_json(&self) -> Result<String, TokenError> {
        serde_json::to_string(&self.jwks()).map_err(|e| TokenError::InvalidKey(e.to_string()))
    }

    /// A snapshot of the ring's public keys for a verifier in another process or task.
    pub fn verification_keys(&self) -> VerificationKeys {
        let state = self.read();
        VerificationKeys {
            keys: state
                .keys
                .values()
                .map(|k| {
                    (
                        k.kid.clone(),
                        PublicEntry {
                            public: k.public,
                            decoding: Arc::clone(&k.decoding),
                        },
                    )
                })
                .collect(),
        }
    }

    pub(crate) fn signing_key(&self) -> Arc<Ed25519Key> {
        Arc::clone(&self.read().current)
    }

    pub(crate) fn decoding_key(&self, kid: &str) -> Option<Arc<DecodingKey>> {
        self.read().keys.get(kid).map(|k| Arc::clone(&k.decoding))
    }
}

#[derive(Clone)]
struct PublicEntry {
    public: [u8; 32],
    decoding: Arc<DecodingKey>,
}

/// Ed25519 public keys by kid: what a verifier trusts. Built from a JWKS (another
/// service's `GetSigningKeys`), from a [`SigningKeyRing`], or key by key.
#[derive(Clone, Default)]
pub struct VerificationKeys {
    keys: BTreeMap<String, PublicEntry>,
}

impl std::fmt::Debug for VerificationKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerificationKeys")
            .field("kids", &self.keys.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl VerificationKeys {
    /// An empty set (every token fails with [`TokenError::UnknownKeyId`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one public key (32 bytes, RFC 8032 encoding) under `kid`.
    ///
    /// Errors: [`TokenError::InvalidKey`] for a bad kid, a kid already present, or bytes
    /// that are not a usable Ed25519 point (not on the curve, or of small order).
    pub fn insert(&mut self, kid: &str, public: [u8; 32]) -> Result<(), TokenError> {
        validate_kid(kid)?;
        if self.keys.contains_key(kid) {
            return Err(TokenError::InvalidKey(format!("duplicate key id {kid:?}")));
        }
        let point = VerifyingKey::from_bytes(&public)
            .map_err(|_| TokenError::InvalidKey(format!("key {kid:?} is not an Ed25519 point")))?;
        // A small-order key admits signatures that verify for many messages.
        if point.is_weak() {
            return Err(TokenError::InvalidKey(format!(
                "key {kid:?} is a weak Ed25519 key"
            )));
        }
        let decoding = DecodingKey::from_ed_components(&URL_SAFE_NO_PAD.encode(public))
            .map_err(|e| TokenError::InvalidKey(e.to_string()))?;
        self.keys.insert(
            kid.to_owned(),
            PublicEntry {
                public,
                decoding: Arc::new(decoding),
            },
        );
        Ok(())
    }

    /// Imports the Ed25519 signing keys of a JWK Set.
    ///
    /// Keys that are not `kty` OKP / `crv` Ed25519, or say `use` other than `sig`, or
    /// `alg` other than EdDSA, or have no `kid`, are skipped (RFC 7517 §5: ignore what
    /// is not understood).
    ///
    /// Errors: [`TokenError::InvalidKey`] when an Ed25519 key is broken (bad base64url
    /// `x`, not 32 bytes, not a point, duplicate kid) or no usable key remains.
    pub fn from_jwks(set: &JwkSet) -> Result<Self, TokenError> {
        let mut out = VerificationKeys::new();
        for jwk in &set.keys {
            let AlgorithmParameters::OctetKeyPair(okp) = &jwk.algorithm else {
                continue;
            };
            let usable = okp.curve == EllipticCurve::Ed25519
                && jwk
                    .common
                    .public_key_use
                    .as_ref()
                    .is_none_or(|u| *u == PublicKeyUse::Signature)
                && jwk
                    .common
                    .key_algorithm
                    .is_none_or(|a| a == KeyAlgorithm::EdDSA);
            let Some(kid) = jwk.common.key_id.as_deref().filter(|_| usable) else {
                continue;
            };
            let bytes = URL_SAFE_NO_PAD.decode(&okp.x).map_err(|e| {
                TokenError::InvalidKey(format!("key {kid:?}: x is not base64url: {e}"))
            })?;
            let public: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
                TokenError::InvalidKey(format!(
                    "key {kid:?}: x is {} bytes, expected 32",
                    bytes.len()
                ))
            })?;
            out.insert(kid, public)?;
        }
        if out.is_empty() {
            return Err(TokenError::InvalidKey(
                "the JWK Set holds no Ed25519 signing key".into(),
            ));
        }
        Ok(out)
    }

    /// Parses JWKS JSON (`{"keys":[…]}`) and imports it as [`VerificationKeys::from_jwks`].
    ///
    /// Errors: [`TokenError::InvalidKey`] for JSON that is not a JWK Set, and as `from_jwks`.
    pub fn from_jwks_json(json: &str) -> Result<Self, TokenError> {
        let set: JwkSet = serde_json::from_str(json)
            .map_err(|e| TokenError::InvalidKey(format!("not a JWK Set: {e}")))?;
        Self::from_jwks(&set)
    }

    /// The keys as a JWK Set, sorted by kid.
    pub fn to_jwks(&self) -> JwkSet {
        JwkSet {
            keys: self
                .keys
                .iter()
                .map(|(kid, e)| public_jwk(kid, &e.public))
                .collect(),
        }
    }

    /// The kids in the set, sorted.
    pub fn kids(&self) -> Vec<String> {
        self.keys.keys().cloned().collect()
    }

    /// How many keys the set holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the set holds no key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub(crate) fn decoding_key(&self, kid: &str) -> Option<Arc<DecodingKey>> {
        self.keys.get(kid).map(|e| Arc::clone(&e.decoding))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kid_rules() {
        assert!(validate_kid("wr-2025-06.a_1").is_ok());
        for bad in ["", "has space", "slash/", &"k".repeat(MAX_KID_LEN + 1)] {
            assert!(validate_kid(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn pkcs8_round_trip_keeps_the_key() {
        let key = Ed25519Key::generate("a").unwrap();
        let again = Ed25519Key::from_pkcs8_der("a", &key.to_pkcs8_der()).unwrap();
        assert_eq!(key.public_key(), again.public_key());
        assert!(Ed25519Key::from_pkcs8_der("a", b"not der").is_err());
    }

    #[test]
    fn the_thumbprint_kid_is_rfc_8037s() {
        // RFC 8037 appendix A.1 (the RFC 8032 test key) and A.3 (its RFC 7638 thumbprint).
        let d = URL_SAFE_NO_PAD
            .decode("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A")
            .unwrap();
        let key = Ed25519Key::from_seed("a", &d.try_into().unwrap())
            .unwrap()
            .with_thumbprint_kid()
            .unwrap();
        assert_eq!(key.kid(), "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
    }

    #[test]
    fn a_ring_loads_from_pem_blocks_in_order() {
        let (a, b) = (
            Ed25519Key::generate("a").unwrap(),
            Ed25519Key::generate("b").unwrap(),
        );
        let ring =
            SigningKeyRing::from_pkcs8_pems(&format!("{}\n{}", b.to_pkcs8_pem(), a.to_pkcs8_pem()))
                .unwrap();
        let kid_a = thumbprint_kid(&a.public_key()).unwrap();
        let kid_b = thumbprint_kid(&b.public_key()).unwrap();
        assert_eq!(ring.current_kid(), kid_b, "the first block signs");
        let mut kids = vec![kid_a, kid_b];
        kids.sort();
        assert_eq!(ring.kids(), kids);
        for bad in [
            String::new(),
            "junk".to_owned(),
            format!("{}{}", a.to_pkcs8_pem(), a.to_pkcs8_pem()),
            format!("junk {}", a.to_pkcs8_pem()),
            format!("{} junk", a.to_pkcs8_pem()),
            a.to_pkcs8_pem().replace("-----END PRIVATE KEY-----", ""),
        ] {
            assert!(SigningKeyRing::from_pkcs8_pems(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn pem_from_openssl_loads() {
        // RFC 8410 §10.3 example private key.
        let pem = "-----BEGIN PRIVATE KEY-----\n\
                   MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n\
                   -----END PRIVATE KEY-----\n";
        let key = Ed25519Key::from_pkcs8_pem("rfc", pem).unwrap();
        // RFC 8410 §10.1's public key for it.
        assert_eq!(
            URL_SAFE_NO_PAD.encode(key.public_key()),
            "Gb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE"
        );
    }

    #[test]
    fn ring_rotation_rules() {
        let ring = SigningKeyRing::generate("k1").unwrap();
        ring.rotate(Ed25519Key::generate("k2").unwrap()).unwrap();
        assert_eq!(ring.current_kid(), "k2");
        assert_eq!(ring.kids(), ["k1", "k2"]);
        assert!(matches!(ring.retire("k2"), Err(TokenError::InvalidKey(_))));
        ring.retire("k1").unwrap();
        assert_eq!(
            ring.retire("k1"),
            Err(TokenError::UnknownKeyId { kid: "k1".into() })
        );
        assert!(ring.insert(Ed25519Key::generate("k2").unwrap()).is_err());
        assert_eq!(ring.jwks().keys.len(), 1);
    }

    #[test]
    fn weak_and_off_curve_keys_are_refused() {
        let mut keys = VerificationKeys::new();
        // The identity point (small order).
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert!(keys.insert("weak", identity).is_err());
        // y = 0 is a point of order 4.
        assert!(keys.insert("order4", [0u8; 32]).is_err());
        assert!(keys.is_empty());
    }
}
