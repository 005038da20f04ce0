//! Tokens already verified, kept until they expire, so a fan's session and admission
//! token cost one Ed25519 verification each rather than one per call (about 50 µs per
//! core each; a cache hit is a SHA-256 of the token and a map lookup).
//!
//! Keyed by the SHA-256 digest of the token's exact bytes (FIPS 180-4): a token that
//! differs in any byte has another digest (finding two tokens with one digest is
//! infeasible), so it is verified from scratch, and the token itself is not kept: a
//! million fans' sessions cost their claims, not their 0.3–0.5 KiB of text. An entry
//! keeps the decoding key that verified it; a hit counts only while the verifier still
//! trusts that same key under that `kid` (pointer-equal), so replacing or retiring keys
//! ends the hits of every token they signed at once. The payload's time window is
//! checked again at each hit's `now`, exactly as on a first verification, and entries
//! leave the cache once past `exp`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::DecodingKey;
use sha2::{Digest as _, Sha256};

use crate::claims::{Audience, WireClaims};

/// Most bytes of verified tokens one verifier keeps, counting each entry as the text of
/// its claims plus [`ENTRY_OVERHEAD_BYTES`]: about 48,000 fans' sessions fit, and memory
/// stays bounded whatever sizes arrive (tokens are at most
/// [`MAX_TOKEN_BYTES`](crate::MAX_TOKEN_BYTES)). The least used entries leave first.
pub const MAX_VERIFIED_TOKEN_BYTES: u64 = 48 * 1024 * 1024;

/// What an entry costs beyond the text of its claims: the digest, the claims' fixed
/// fields and string headers, the key handle, the allocator's rounding and the map's
/// own bookkeeping. Measured: 10,000 and 50,000 fan sessions verified into one
/// verifier (release build) raised its process's resident memory by 1,042 and 1,051
/// bytes per session, of which about 100 are the claims' text.
pub const ENTRY_OVERHEAD_BYTES: u32 = 944;

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

impl moka::Expiry<TokenDigest, Arc<Verified>> for UntilExp {
    fn expire_after_create(
        &self,
        _token: &TokenDigest,
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

/// SHA-256 of a token's bytes.
type TokenDigest = [u8; 32];

fn digest(token: &str) -> TokenDigest {
    Sha256::digest(token.as_bytes()).into()
}

/// The text an entry keeps, bytes (what [`ENTRY_OVERHEAD_BYTES`] does not count).
fn text_bytes(verified: &Verified) -> usize {
    const HEADER: usize = std::mem::size_of::<String>();
    let wire = &verified.wire;
    let strings = [&wire.iss, &wire.sub, &wire.jti, &wire.event_id]
        .into_iter()
        .flatten()
        .map(String::len)
        .sum::<usize>();
    let audience = match &wire.aud {
        Some(Audience::One(one)) => one.len(),
        Some(Audience::Many(many)) => many.iter().map(|a| a.len() + HEADER).sum(),
        None => 0,
    };
    let roles = wire
        .roles
        .iter()
        .flatten()
        .map(|r| r.len() + HEADER)
        .sum::<usize>();
    verified.kid.len() + strings + audience + roles
}

/// A bounded map from a token's digest to [`Verified`].
#[derive(Clone)]
pub(crate) struct VerifiedTokens {
    cache: moka::sync::Cache<TokenDigest, Arc<Verified>>,
}

impl VerifiedTokens {
    pub(crate) fn new() -> Self {
        Self {
            cache: moka::sync::Cache::builder()
                .max_capacity(MAX_VERIFIED_TOKEN_BYTES)
                .weigher(|_: &TokenDigest, verified: &Arc<Verified>| {
                    u32::try_from(text_bytes(verified))
                        .unwrap_or(u32::MAX)
                        .saturating_add(ENTRY_OVERHEAD_BYTES)
                })
                .expire_after(UntilExp)
                .build(),
        }
    }

    /// The entry for `token`, if any.
    pub(crate) fn get(&self, token: &str) -> Option<Arc<Verified>> {
        self.cache.get(&digest(token))
    }

    /// Keeps `verified` for `token`.
    pub(crate) fn insert(&self, token: &str, verified: Verified) {
        self.cache.insert(digest(token), Arc::new(verified));
    }

    /// Forgets `token`.
    pub(crate) fn forget(&self, token: &str) {
        self.cache.invalidate(&digest(token));
    }
}
