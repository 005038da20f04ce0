//! What makes the pre-queue shuffle checkable from outside: the commitment to the seed
//! published before opening, and the pseudonyms that stand for fans in the published
//! join order.
//!
//! Fan ids are the site login's `sub`: personal data that the public join order must not
//! list. Each fan appears instead as an HMAC of its id keyed with the event's seed, so
//! the list is unreadable before opening (the seed is secret), cannot be linked across
//! events (every event has its own seed), and each fan can still find itself once the
//! seed is published. Someone who already knows a fan's id can test whether that fan
//! was in the pre-queue; nobody learns ids from the list. The shuffle permutes
//! positions, not values ([`super::shuffle`]), so shuffling the pseudonyms gives the
//! same order as shuffling the ids.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// How the commitment is computed, as published in `GetShuffleCommitmentResponse`.
pub const COMMITMENT: &str = "sha256/v1: the commitment is SHA-256 of the 32 seed bytes \
(the bytes, not their hex), written as 64 lowercase hex digits.";

/// How a fan's entry of the published join order is computed, as published in
/// `GetShuffleSeedResponse.pseudonym_algorithm`.
pub const PSEUDONYM: &str = "hmac-sha256-128/v1: a fan's entry is the first 16 bytes of \
HMAC-SHA256(key = the 32 seed bytes, message = the ASCII bytes \"stadium-prequeue-fan-v1\" \
followed by the fan id (the `sub` of the fan's session) as UTF-8 bytes).";

/// Bytes in a [`pseudonym`]: 128 bits, so a million fans collide with probability
/// below 2^-88.
pub const PSEUDONYM_BYTES: usize = 16;

const FAN_DOMAIN: &[u8] = b"stadium-prequeue-fan-v1";

/// The published commitment to `seed`: SHA-256 of its 32 bytes ([`COMMITMENT`]).
pub fn commitment(seed: &[u8; 32]) -> [u8; 32] {
    Sha256::digest(seed).into()
}

/// The entry standing for the fan `fan_id` in the published join order of the event
/// shuffled with `seed` ([`PSEUDONYM`]).
pub fn pseudonym(seed: &[u8; 32], fan_id: &str) -> [u8; PSEUDONYM_BYTES] {
    // HMAC accepts keys of any length, so `new_from_slice` cannot fail here.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(seed).unwrap_or_else(|_| unreachable!());
    mac.update(FAN_DOMAIN);
    mac.update(fan_id.as_bytes());
    let digest = mac.finalize().into_bytes();
    let mut out = [0u8; PSEUDONYM_BYTES];
    out.copy_from_slice(&digest[..PSEUDONYM_BYTES]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_an_independent_implementation_of_the_published_text() {
        // Computed outside Rust from the wording of COMMITMENT and PSEUDONYM (Python
        // hashlib + hmac), so a change the texts do not describe fails here.
        let seed = [7u8; 32];
        assert_eq!(
            hex::encode(commitment(&seed)),
            "4bb06f8e4e3a7715d201d573d0aa423762e55dabd61a2c02278fa56cc6d294e0"
        );
        assert_eq!(
            hex::encode(pseudonym(&seed, "fan-1")),
            "db0b9d98af6d30a4c42acac6ebe70aba"
        );
        assert_eq!(
            hex::encode(pseudonym(&seed, "ünï-42")),
            "758528ce149d50745735c374fcc0e33d"
        );
    }

    #[test]
    fn pseudonyms_differ_between_events() {
        assert_ne!(pseudonym(&[1; 32], "fan-1"), pseudonym(&[2; 32], "fan-1"));
    }
}
