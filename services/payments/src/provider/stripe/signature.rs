//! Stripe's webhook signatures (Stripe's docs, "Check the webhook signatures"): the
//! `Stripe-Signature` header is `t=<unix seconds>,v1=<hex>[,v1=<hex>…]` (other
//! schemes, such as `v0`, are ignored); each `v1` is the hex HMAC-SHA256, keyed with
//! the endpoint's signing secret (the whole `whsec_…` text), of `"{t}.{raw body}"`.
//! Any one matching `v1` is enough (several appear while a secret is being rolled),
//! compared in constant time. A `t` further than the tolerance from now (300 s by
//! default, as Stripe's own libraries) is refused, so a captured delivery cannot be
//! replayed later; past and future alike, since a future `t` is a wrong clock or a
//! forgery.

use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The tolerance Stripe's libraries use between `t` and now.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);

/// Why a delivery's signature was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No `Stripe-Signature` header.
    #[error("no Stripe-Signature header")]
    Missing,
    /// The header is not `key=value` pairs separated by commas, or `t` is not a number.
    #[error("malformed Stripe-Signature header")]
    Malformed,
    /// No `t=` in the header.
    #[error("Stripe-Signature has no timestamp")]
    NoTimestamp,
    /// No `v1=` in the header.
    #[error("Stripe-Signature has no v1 signature")]
    NoSignature,
    /// `t` is further from now than the tolerance.
    #[error("Stripe-Signature timestamp outside the tolerance")]
    OutsideTolerance,
    /// No `v1` matches the body under the secret.
    #[error("no Stripe-Signature v1 matches the payload")]
    Mismatch,
}

/// A parsed `Stripe-Signature` header.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Header {
    timestamp: i64,
    v1: Vec<Vec<u8>>,
}

fn parse(header: &str) -> Result<Header, SignatureError> {
    let mut timestamp = None;
    let mut v1 = Vec::new();
    for item in header.split(',') {
        let (key, value) = item
            .trim()
            .split_once('=')
            .ok_or(SignatureError::Malformed)?;
        match key {
            "t" => {
                let t = value
                    .parse::<i64>()
                    .map_err(|_| SignatureError::Malformed)?;
                if timestamp.replace(t).is_some() {
                    return Err(SignatureError::Malformed);
                }
            }
            // A v1 that is not hex can match nothing: skip it, as Stripe's libraries
            // compare it and fail.
            "v1" => {
                if let Ok(bytes) = hex::decode(value) {
                    v1.push(bytes);
                }
            }
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::NoTimestamp)?;
    if v1.is_empty() {
        return Err(SignatureError::NoSignature);
    }
    Ok(Header { timestamp, v1 })
}

fn mac(secret: &[u8], timestamp: i64, payload: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    mac
}

/// Checks the `Stripe-Signature` `header` (`None`: absent) of `payload` (the raw body,
/// as received) under the endpoint secret `secret`, at `now` (Unix seconds), allowing
/// `tolerance` between the header's `t` and `now` either way (inclusive). Returns `t`.
///
/// # Errors
/// [`SignatureError`]; the timestamp is checked only once a signature matched, so a
/// forged header is told it is forged whatever its `t`.
pub fn verify(
    secret: &[u8],
    header: Option<&str>,
    payload: &[u8],
    now: i64,
    tolerance: Duration,
) -> Result<i64, SignatureError> {
    let header = parse(header.ok_or(SignatureError::Missing)?)?;
    let expected = mac(secret, header.timestamp, payload);
    let matched = header
        .v1
        .iter()
        .any(|candidate| expected.clone().verify_slice(candidate).is_ok());
    if !matched {
        return Err(SignatureError::Mismatch);
    }
    if now.abs_diff(header.timestamp) > tolerance.as_secs() {
        return Err(SignatureError::OutsideTolerance);
    }
    Ok(header.timestamp)
}

/// The `Stripe-Signature` header Stripe would send for `payload` at `timestamp` (Unix
/// seconds) under `secret`: `t=<timestamp>,v1=<hex>`. For tests and local fakes.
pub fn header(secret: &[u8], timestamp: i64, payload: &[u8]) -> String {
    let signature = hex::encode(mac(secret, timestamp, payload).finalize().into_bytes());
    format!("t={timestamp},v1={signature}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"whsec_test";
    const BODY: &[u8] = br#"{"id":"evt_1"}"#;
    const NOW: i64 = 1_700_000_000;

    fn check(header: &str) -> Result<i64, SignatureError> {
        verify(SECRET, Some(header), BODY, NOW, DEFAULT_TOLERANCE)
    }

    #[test]
    fn a_signed_delivery_verifies() {
        assert_eq!(check(&header(SECRET, NOW, BODY)), Ok(NOW));
    }

    #[test]
    fn any_matching_v1_is_enough_and_other_schemes_are_ignored() {
        let good = header(SECRET, NOW, BODY);
        let good_v1 = good.split_once(",v1=").unwrap().1;
        let other = header(b"whsec_old", NOW, BODY);
        let other_v1 = other.split_once(",v1=").unwrap().1;
        let both = format!("t={NOW},v1={other_v1},v0=abcd,v1={good_v1}");
        assert_eq!(check(&both), Ok(NOW));
        assert_eq!(
            check(&format!("t={NOW},v1={other_v1},v1=zz")),
            Err(SignatureError::Mismatch)
        );
        // A v0 alone (Stripe's test scheme) is no signature.
        assert_eq!(
            check(&format!("t={NOW},v0={good_v1}")),
            Err(SignatureError::NoSignature)
        );
    }

    #[test]
    fn changed_bodies_and_secrets_do_not_verify() {
        let signed = header(SECRET, NOW, BODY);
        assert_eq!(
            verify(
                SECRET,
                Some(&signed),
                b"{\"id\":\"evt_2\"}",
                NOW,
                DEFAULT_TOLERANCE
            ),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(b"whsec_other", Some(&signed), BODY, NOW, DEFAULT_TOLERANCE),
            Err(SignatureError::Mismatch)
        );
        // The timestamp is signed too: moving it breaks the signature.
        let moved = signed.replace(&format!("t={NOW}"), &format!("t={}", NOW + 1));
        assert_eq!(check(&moved), Err(SignatureError::Mismatch));
    }

    #[test]
    fn malformed_headers_are_refused() {
        let v1 = header(SECRET, NOW, BODY);
        let v1 = v1.split_once(",v1=").unwrap().1;
        assert_eq!(
            verify(SECRET, None, BODY, NOW, DEFAULT_TOLERANCE),
            Err(SignatureError::Missing)
        );
        assert_eq!(check(&format!("v1={v1}")), Err(SignatureError::NoTimestamp));
        assert_eq!(check(&format!("t={NOW}")), Err(SignatureError::NoSignature));
        assert_eq!(check(""), Err(SignatureError::Malformed));
        assert_eq!(
            check(&format!("t=soon,v1={v1}")),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            check(&format!("t={NOW};v1={v1}")),
            Err(SignatureError::Malformed)
        );
        assert_eq!(
            check(&format!("t={NOW},t={NOW},v1={v1}")),
            Err(SignatureError::Malformed)
        );
    }

    #[test]
    fn the_tolerance_holds_at_its_edges() {
        let tolerance = 300;
        for (t, ok) in [
            (NOW - tolerance, true),
            (NOW - tolerance - 1, false),
            (NOW + tolerance, true),
            (NOW + tolerance + 1, false),
        ] {
            let result = check(&header(SECRET, t, BODY));
            if ok {
                assert_eq!(result, Ok(t), "t = now {:+}", t - NOW);
            } else {
                assert_eq!(
                    result,
                    Err(SignatureError::OutsideTolerance),
                    "t = now {:+}",
                    t - NOW
                );
            }
        }
        // A forged late delivery is told it is forged.
        let forged = header(b"whsec_other", NOW - 10_000, BODY);
        assert_eq!(check(&forged), Err(SignatureError::Mismatch));
    }
}
