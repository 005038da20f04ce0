//! Tokens already verified, kept until they expire, so a fan's session and admission
//! token cost one Ed25519 verification each rather than one per call (about 50 µs per
//! core each; a cache hit is a hash of the token and a map lookup).
//!
//! Keyed by the token's exact bytes: a token that differs in any byte is a different
//! key and is verified from scratch. An entry keeps the decoding key that verified it;
//! a hit counts only while the verifier still trusts that same key under that `kid`
//! (pointer-equal), so replacing or retiring keys ends the hits of every token they
//! signed at once. The payload's time window is checked again at each hit's `now`,
//! exactly as on a first verification, and entries leave the cache once past `exp`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::DecodingKey;

use crate::claims::WireClaims;

/// Most bytes of tokens one verifier keeps, counting each entry as its token's length
/// plus [`ENTRY_OVERHEAD_BYTES`]: about 100,000 fans' tokens (0.3–0.5 KiB each) fit, and
/// memory stays bounded whatever sizes arrive (tokens are at most
/// [`MAX_TOKEN_BYTES`](crate::MAX_TOKEN_BYTES)). The least used entries leave first.
pub const MAX_VERIFIED_TOKEN_BYTES: u64 = 64 * 1024 * 1024;

/// What an entry costs beyond its token: the payload, the key handle, the map's own.
pub const ENTRY_OVERHEAD_BYTES: u32 = 384;

/// What a verified token was checked with.
#[derive(Clone)]
pub(crate) struct Verified {
    /// The `kid` of the header.
    pub(crate) kid: String,
    /// The key that verified the signature.
    pub(crate) key: Arc<DecodingKey>,
    /// The payload as verified (signature, `iss`, `aud`), before the time checks.
    pub(crate) wire: WireClaims,
}

struct UntilExp;

impl moka::Expiry<Arc<str>, Arc<Verified>> for UntilExp {
    fn expire_after_create(
        &self,
        _token: &Arc<str>,
        verified: &Arc<Verified>,
        _created_at: Instant,
    ) -> Option<Duration> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        Some(Duration::from_secs(
            verified.wire.exp.unwrap_or(0).saturating_sub(now),
        ))
    }
}

/// A bounded map from token to [`Verified`].
#[derive(Clone)]
pub(crate) struct VerifiedTokens {
    cache: moka::sync::Cache<Arc<str>, Arc<Verified>>,
}

impl VerifiedTokens {
    pub(crate) fn new() -> Self {
        Self {
            cache: moka::sync::Cache::builder()
                .max_capacity(MAX_VERIFIED_TOKEN_BYTES)
                .weigher(|token: &Arc<str>, _: &Arc<Verified>| {
                    u32::try_from(token.len())
                        .unwrap_or(u32::MAX)
                        .saturating_add(ENTRY_OVERHEAD_BYTES)
                })
                .expire_after(UntilExp)
                .build(),
        }
    }

    /// The entry for `token`, if any.
    pub(crate) fn get(&self, token: &str) -> Option<Arc<Verified>> {
        self.cache.get(token)
    }

    /// Keeps `verified` for `token`.
    pub(crate) fn insert(&self, token: &str, verified: Verified) {
        self.cache.insert(Arc::from(token), Arc::new(verified));
    }

    /// Forgets `token`.
    pub(crate) fn forget(&self, token: &str) {
        self.cache.invalidate(token);
    }
}
