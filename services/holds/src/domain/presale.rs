//! Presale codes and channel keys: what a fan types, what is stored (its SHA-256
//! only), and how new ones are drawn.

use rand::Rng;
use sha2::{Digest, Sha256};

/// Crockford's base32 alphabet (no I, L, O, U: nothing to misread when typed).
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Characters of a presale code (60 bits).
pub const CODE_LENGTH: usize = 12;
/// Characters of a channel's key (120 bits).
pub const KEY_LENGTH: usize = 24;

/// A code as typed, normalized: upper case, without spaces and hyphens.
#[derive(Clone, PartialEq, Eq)]
pub struct PresaleCode(String);

impl std::fmt::Debug for PresaleCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A code is a credential: never in logs.
        f.write_str("PresaleCode(<redacted>)")
    }
}

impl PresaleCode {
    /// Reads a code as a fan typed it: case, spaces and hyphens do not matter.
    ///
    /// # Errors
    /// What is wrong, for an `INVALID_FIELD` answer: empty, longer than 64
    /// characters, or a character outside letters and digits.
    pub fn parse(typed: &str) -> Result<Self, &'static str> {
        if typed.len() > 128 {
            return Err("must be at most 64 letters and digits");
        }
        let code: String = typed
            .chars()
            .filter(|c| !matches!(c, ' ' | '-'))
            .map(|c| c.to_ascii_uppercase())
            .collect();
        if code.is_empty() {
            return Err("must not be empty");
        }
        if code.len() > 64 {
            return Err("must be at most 64 letters and digits");
        }
        if !code.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err("must be letters and digits (spaces and hyphens are ignored)");
        }
        Ok(Self(code))
    }

    /// Draws a new code of `length` characters from the operating system's generator.
    pub fn generate(length: usize) -> Self {
        let mut rng = rand::rngs::OsRng;
        Self(
            (0..length)
                .map(|_| char::from(ALPHABET[rng.gen_range(0..ALPHABET.len())]))
                .collect(),
        )
    }

    /// What is stored and looked up: SHA-256 of the normalized code.
    pub fn sha256(&self) -> [u8; 32] {
        Sha256::digest(self.0.as_bytes()).into()
    }

    /// The code itself, to hand to the box office once.
    pub fn reveal(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_differences_do_not_matter_and_bad_input_is_refused() {
        let a = PresaleCode::parse("ab12-cd34 ef56").unwrap();
        let b = PresaleCode::parse("AB12CD34EF56").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.sha256(), b.sha256());
        assert_eq!(a.reveal(), "AB12CD34EF56");
        for bad in ["", " - ", "abc!", "é123", &"A".repeat(65)] {
            assert!(PresaleCode::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(format!("{a:?}"), "PresaleCode(<redacted>)");
    }

    #[test]
    fn generated_codes_are_long_distinct_and_read_back() {
        let codes: std::collections::HashSet<String> = (0..1000)
            .map(|_| PresaleCode::generate(CODE_LENGTH).reveal().to_owned())
            .collect();
        assert_eq!(codes.len(), 1000);
        for code in &codes {
            assert_eq!(code.len(), CODE_LENGTH);
            assert_eq!(PresaleCode::parse(code).unwrap().reveal(), code);
            assert!(!code.contains(['I', 'L', 'O', 'U']), "{code}");
        }
    }
}
