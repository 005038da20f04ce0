//! The pre-queue shuffle: a Fisher–Yates permutation driven by HMAC-SHA256 keyed with
//! the event's secret 32-byte seed, so the order is unpredictable until the seed is
//! published (after opening) and reproducible by anyone afterwards.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The algorithm, as published in `GetShuffleSeedResponse.algorithm`.
pub const ALGORITHM: &str = "fisher-yates/hmac-sha256/v1: list the pre-queue in join order as \
f[0..n) (the fans, or the entries ListPreQueue publishes for them: the permutation depends \
only on n and the seed). For i = n-1 down to 1: d = HMAC-SHA256(key = the 32 seed bytes, message = \
the ASCII bytes \"stadium-prequeue-v1\" followed by i as an 8-byte big-endian integer); \
j = (the first 16 bytes of d read as a big-endian unsigned 128-bit integer) mod (i + 1); \
swap f[i] and f[j]. Then f[k] has queue number k + 1.";

const DOMAIN: &[u8] = b"stadium-prequeue-v1";

/// The index `i` swaps with, in `0..=i`.
fn swap_index(seed: &[u8; 32], i: usize) -> usize {
    // HMAC accepts keys of any length, so `new_from_slice` cannot fail here.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(seed).unwrap_or_else(|_| unreachable!());
    mac.update(DOMAIN);
    mac.update(&(i as u64).to_be_bytes());
    let digest = mac.finalize().into_bytes();
    let mut head = [0u8; 16];
    head.copy_from_slice(&digest[..16]);
    // A 128-bit draw reduced mod at most 2^64: the bias is below 2^-64.
    (u128::from_be_bytes(head) % (i as u128 + 1)) as usize
}

/// Shuffles `items` (the pre-queue in join order) in place with [`ALGORITHM`].
pub fn shuffle<T>(seed: &[u8; 32], items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let j = swap_index(seed, i);
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn matches_an_independent_implementation_of_the_published_text() {
        // Computed outside Rust from ALGORITHM's wording (Python hmac + hashlib), so a
        // change to the code that the text does not describe fails here.
        let mut items: Vec<u32> = (0..8).collect();
        shuffle(&[7u8; 32], &mut items);
        assert_eq!(items, [0, 3, 1, 4, 5, 6, 2, 7]);
    }

    proptest! {
        #[test]
        fn is_a_permutation(seed in any::<[u8; 32]>(), n in 0usize..300) {
            let mut items: Vec<usize> = (0..n).collect();
            shuffle(&seed, &mut items);
            let mut sorted = items.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn first_place_is_roughly_uniform() {
        // 4000 seeds, 10 fans: each fan should take first place about 400 times.
        let mut firsts = [0u32; 10];
        for s in 0..4000u32 {
            let mut seed = [0u8; 32];
            seed[..4].copy_from_slice(&s.to_be_bytes());
            let mut items: Vec<usize> = (0..10).collect();
            shuffle(&seed, &mut items);
            firsts[items[0]] += 1;
        }
        // Chi-square with 9 degrees of freedom; 27.9 is the 0.1% critical value.
        let chi2: f64 = firsts
            .iter()
            .map(|&o| (f64::from(o) - 400.0).powi(2) / 400.0)
            .sum();
        assert!(chi2 < 27.9, "chi2 {chi2}, counts {firsts:?}");
    }
}
