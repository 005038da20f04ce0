//! Tokens as a stranger may send them: any text, and tokens whose header and payload are
//! arbitrary JSON yet carry a valid Ed25519 signature by a trusted key (so the claim
//! checks, not only the signature check, see the input). Every verifier refuses or
//! accepts, never panics; what it accepts has the issuer, audience and time window it
//! pins.
#![no_main]

use std::sync::LazyLock;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signer, SigningKey};
use libfuzzer_sys::fuzz_target;
use stadium_tokens::{
    AdminVerifier, AdmissionVerifier, FanSessionVerifier, QueueTicketKeys, QueueTickets,
    VerificationKeys,
};

const ISSUER: &str = "fuzz-issuer";
const AUDIENCE: &str = "holds";

struct Verifiers {
    key: SigningKey,
    fan: FanSessionVerifier,
    admin: AdminVerifier,
    admission: AdmissionVerifier,
    tickets: QueueTickets,
}

static VERIFIERS: LazyLock<Verifiers> = LazyLock::new(|| {
    let key = SigningKey::from_bytes(&[7; 32]);
    let x = URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes());
    let jwks = format!(
        r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{x}","kid":"fuzz","alg":"EdDSA","use":"sig"}}]}}"#
    );
    let keys = VerificationKeys::from_jwks_json(&jwks).expect("the fuzz key set");
    Verifiers {
        key,
        fan: FanSessionVerifier::new(keys.clone(), ISSUER, AUDIENCE).unwrap(),
        admin: AdminVerifier::new(keys.clone(), ISSUER, AUDIENCE).unwrap(),
        admission: AdmissionVerifier::new(keys, ISSUER, AUDIENCE).unwrap(),
        tickets: QueueTickets::new(QueueTicketKeys::from_secrets(&[[9u8; 32]]).unwrap()),
    }
});

fuzz_target!(|data: &[u8]| {
    let v = &*VERIFIERS;
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let token = match data.split_first() {
        // A signed token: header and payload are the input's two halves around 0xFF.
        Some((0, rest)) => {
            let (header, payload) = match rest.iter().position(|&b| b == 0xFF) {
                Some(at) => (&rest[..at], &rest[at + 1..]),
                None => (rest, &b""[..]),
            };
            let signed = format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(header),
                URL_SAFE_NO_PAD.encode(payload)
            );
            let signature = v.key.sign(signed.as_bytes());
            format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
        }
        _ => String::from_utf8_lossy(data).into_owned(),
    };
    let within = |exp: u64| exp + 60 >= 1_800_000_000;
    let addressed = |aud: &[String]| aud.iter().any(|a| a == AUDIENCE);
    if let Ok(claims) = v.fan.verify(&token, now) {
        assert_eq!(claims.registered.iss, ISSUER);
        assert!(within(claims.registered.exp));
        assert!(addressed(&claims.registered.aud));
    }
    if let Ok(claims) = v.admin.verify(&token, now) {
        assert_eq!(claims.registered.iss, ISSUER);
        assert!(within(claims.registered.exp));
        assert!(addressed(&claims.registered.aud));
    }
    if let Ok(claims) = v.admission.verify(&token, now) {
        assert_eq!(claims.registered.iss, ISSUER);
        assert!(within(claims.registered.exp));
        assert!(addressed(&claims.registered.aud));
    }
    let _ = v.tickets.verify(&token, now);
});
