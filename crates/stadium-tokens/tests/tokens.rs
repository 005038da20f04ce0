//! Token round trips for every kind and the refusals the contracts promise: `alg: none`,
//! algorithm confusion, time window, audience, issuer, `typ`, tampering, unknown `kid`,
//! rotation and JWKS export/import.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use stadium_tokens::{
    AdminIssuer, AdminVerifier, AdmissionIssuer, AdmissionVerifier, DEV_ISSUER, DevIssuer,
    Ed25519Key, FanSessionIssuer, FanSessionVerifier, MAX_FAN_ID_BYTES, OFFER_JTI_PREFIX,
    QueueTicketKeys, QueueTickets, Role, SigningKeyRing, TokenError, VerificationKeys,
    WAITING_ROOM_ISSUER, audience,
};

const T0: u64 = 1_800_000_000;
/// Every service that verifies fan sessions.
const FAN_AUDIENCES: [&str; 4] = [
    audience::WAITING_ROOM,
    audience::SEAT_MAP,
    audience::HOLDS,
    audience::PAYMENTS,
];
const WR: &str = WAITING_ROOM_ISSUER;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn ring(kid: &str) -> SigningKeyRing {
    SigningKeyRing::generate(kid).unwrap()
}

fn admission_pair(ring: &SigningKeyRing) -> (AdmissionIssuer, AdmissionVerifier) {
    let issuer = AdmissionIssuer::new(ring.clone(), WR).unwrap();
    let verifier = AdmissionVerifier::new(ring.verification_keys(), WR, audience::HOLDS).unwrap();
    (issuer, verifier)
}

/// Signs arbitrary header fields and payload with `key`, bypassing the issuers, to
/// build tokens the issuers would never produce.
fn forge_ed(key: &Ed25519Key, typ: &str, payload: &Value) -> String {
    let mut header = Header::new(Algorithm::EdDSA);
    header.typ = Some(typ.into());
    header.kid = Some(key.kid().into());
    let enc = EncodingKey::from_ed_der(&key.to_pkcs8_der());
    jsonwebtoken::encode(&header, payload, &enc).unwrap()
}

fn good_payload(event: &str) -> Value {
    json!({
        "iss": WR, "sub": "fan-1", "aud": ["holds", "payments"],
        "exp": T0 + 600, "nbf": T0, "iat": T0, "jti": "j-1", "event_id": event,
    })
}

fn b64(v: &Value) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
}

fn parts(token: &str) -> Vec<String> {
    token.split('.').map(String::from).collect()
}

#[test]
fn fan_session_round_trip() {
    let ring = ring("login-1");
    let issuer = FanSessionIssuer::new(ring.clone(), "stadium-login").unwrap();
    let issued = issuer.issue("fan-9", at(T0)).unwrap();
    for aud in FAN_AUDIENCES {
        let verifier =
            FanSessionVerifier::new(ring.verification_keys(), "stadium-login", aud).unwrap();
        let claims = verifier.verify(&issued.token, at(T0 + 10)).unwrap();
        assert_eq!(claims, issued.claims);
        assert_eq!(claims.fan_id(), "fan-9");
    }
    let c = &issued.claims.registered;
    assert_eq!((c.iat, c.nbf, c.exp), (T0, T0, T0 + 3600));
    assert_eq!(c.iss, "stadium-login");
}

#[test]
fn one_fan_id_limit_for_every_service_named_in_the_refusal() {
    let key = Ed25519Key::generate("login-1").unwrap();
    let ring =
        SigningKeyRing::new(Ed25519Key::from_pkcs8_der("login-1", &key.to_pkcs8_der()).unwrap());
    let session = |sub: &str| {
        forge_ed(
            &key,
            "fan-session",
            &json!({
                "iss": "stadium-login", "sub": sub, "aud": ["waiting-room", "seat-map", "holds", "payments"],
                "exp": T0 + 600, "nbf": T0, "iat": T0, "jti": "s-1",
            }),
        )
    };
    let longest = "é".repeat(MAX_FAN_ID_BYTES / 2);
    assert_eq!(longest.len(), 128);
    let too_long = format!("{longest}x");
    for aud in FAN_AUDIENCES {
        let verifier =
            FanSessionVerifier::new(ring.verification_keys(), "stadium-login", aud).unwrap();
        let claims = verifier.verify(&session(&longest), at(T0)).unwrap();
        assert_eq!(claims.fan_id(), longest);
        for bad in [too_long.as_str(), "fan\u{7}bell"] {
            match verifier.verify(&session(bad), at(T0)) {
                Err(TokenError::InvalidClaim {
                    claim: "sub",
                    reason,
                }) => {
                    assert!(
                        reason.contains("128 bytes") || reason.contains("control"),
                        "{reason}"
                    );
                }
                other => panic!("{aud}: {other:?}"),
            }
        }
    }
    // The issuer refuses to mint what no service would accept.
    let issuer = FanSessionIssuer::new(ring, "stadium-login").unwrap();
    assert!(matches!(
        issuer.issue(&too_long, at(T0)),
        Err(TokenError::InvalidInput {
            field: "fan_id",
            ..
        })
    ));
}

#[test]
fn queue_ticket_round_trip_including_pre_queue() {
    let tickets = QueueTickets::new(QueueTicketKeys::generate("q1").unwrap());
    for number in [0, 1, 987_654] {
        let issued = tickets.issue("fan-1", "ev-1", number, at(T0)).unwrap();
        let claims = tickets.verify(&issued.token, at(T0 + 1)).unwrap();
        assert_eq!(claims, issued.claims);
        assert_eq!(
            (
                claims.fan_id(),
                claims.event_id.as_str(),
                claims.queue_number
            ),
            ("fan-1", "ev-1", number)
        );
    }
    let header: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(parts(&tickets.issue("f", "e", 1, at(T0)).unwrap().token)[0].as_bytes())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        header,
        json!({"typ": "queue-ticket", "alg": "HS256", "kid": "q1"})
    );
}

#[test]
fn admission_round_trip_for_holds_and_payments() {
    let ring = ring("wr-1");
    let (issuer, _) = admission_pair(&ring);
    let issued = issuer.issue("fan-1", "ev-1", at(T0)).unwrap();
    assert_eq!(issued.claims.registered.aud, ["holds", "payments"]);
    assert_eq!(issued.claims.registered.exp, T0 + 600);
    for aud in [audience::HOLDS, audience::PAYMENTS] {
        let v = AdmissionVerifier::new(ring.verification_keys(), WR, aud).unwrap();
        assert_eq!(v.verify(&issued.token, at(T0)).unwrap(), issued.claims);
    }
    let header: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(parts(&issued.token)[0].as_bytes())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        header,
        json!({"typ": "admission", "alg": "EdDSA", "kid": "wr-1"})
    );

    let short = issuer
        .issue_with_ttl("fan-1", "ev-1", Duration::from_millis(120_000), at(T0))
        .unwrap();
    assert_eq!(short.claims.registered.exp, T0 + 120);
    assert_eq!(
        short.claims.registered.expires_in(at(T0 + 20)),
        Duration::from_secs(100)
    );
}

#[test]
fn an_offer_admission_verifies_with_its_prefixed_jti() {
    let ring = ring("wr-1");
    let (issuer, verifier) = admission_pair(&ring);
    let offer = issuer
        .issue_offer("fan-1", "ev-1", Duration::from_secs(300), at(T0))
        .unwrap();
    let jti = &offer.claims.registered.jti;
    let random = jti.strip_prefix(OFFER_JTI_PREFIX).expect("an offer's jti");
    assert!(uuid::Uuid::parse_str(random).is_ok(), "{jti}");
    assert_eq!(verifier.verify(&offer.token, at(T0)).unwrap(), offer.claims);
    assert_eq!(offer.claims.registered.exp, T0 + 300);
    let plain = issuer.issue("fan-1", "ev-1", at(T0)).unwrap();
    assert!(!plain.claims.registered.jti.starts_with(OFFER_JTI_PREFIX));
}

#[test]
fn admin_round_trip_with_roles() {
    let ring = ring("bo-1");
    let issuer = AdminIssuer::new(ring.clone(), "stadium-staff").unwrap();
    let issued = issuer
        .issue(
            "payments",
            &[Role::Service, Role::Sre, Role::Service],
            at(T0),
        )
        .unwrap();
    assert_eq!(issued.claims.roles, [Role::Sre, Role::Service]);
    let v = AdminVerifier::new(ring.verification_keys(), "stadium-staff", audience::HOLDS).unwrap();
    let claims = v.verify(&issued.token, at(T0)).unwrap();
    assert_eq!(claims, issued.claims);
    assert!(claims.has_role(Role::Service));
    assert!(!claims.has_role(Role::BoxOffice));
    assert!(claims.has_any_role(&[Role::BoxOffice, Role::Sre]));
}

#[test]
fn unknown_roles_grant_nothing_and_missing_roles_is_refused() {
    let key = Ed25519Key::generate("bo-1").unwrap();
    let ring =
        SigningKeyRing::new(Ed25519Key::from_pkcs8_der("bo-1", &key.to_pkcs8_der()).unwrap());
    let v = AdminVerifier::new(ring.verification_keys(), "staff", audience::HOLDS).unwrap();
    let mut p = json!({"iss": "staff", "sub": "x", "aud": "holds", "exp": T0 + 60, "nbf": T0,
                       "iat": T0, "jti": "j", "roles": ["superuser", "sre"]});
    let claims = v.verify(&forge_ed(&key, "admin", &p), at(T0)).unwrap();
    assert_eq!(claims.roles, [Role::Sre]);
    // A single-string `aud` (RFC 7519 allows it) is read as a one-element list.
    assert_eq!(claims.registered.aud, ["holds"]);
    p.as_object_mut().unwrap().remove("roles");
    assert_eq!(
        v.verify(&forge_ed(&key, "admin", &p), at(T0)),
        Err(TokenError::MissingClaim("roles".into()))
    );
}

#[test]
fn dev_issuer_mints_for_any_fan_and_roles() {
    let dev = DevIssuer::generate().unwrap();
    let fan = dev.fan_session("anyone-123", at(T0)).unwrap();
    let admin = dev.admin("alice", &[Role::BoxOffice], at(T0)).unwrap();
    let fv = dev.fan_session_verifier(audience::SEAT_MAP).unwrap();
    let av = dev.admin_verifier(audience::BOX_OFFICE).unwrap();
    assert_eq!(
        fv.verify(&fan.token, at(T0)).unwrap().fan_id(),
        "anyone-123"
    );
    assert_eq!(
        av.verify(&admin.token, at(T0)).unwrap().roles,
        [Role::BoxOffice]
    );
    assert_eq!(fan.claims.registered.iss, DEV_ISSUER);

    // Its JWKS alone lets another process verify.
    let keys = VerificationKeys::from_jwks_json(&dev.jwks_json().unwrap()).unwrap();
    let remote = AdminVerifier::new(keys, DEV_ISSUER, audience::HOLDS).unwrap();
    assert!(remote.verify(&admin.token, at(T0)).is_ok());

    // The same seed gives the same key and kid; another seed another kid.
    let a = DevIssuer::from_seed(&[7; 32]).unwrap();
    let b = DevIssuer::from_seed(&[7; 32]).unwrap();
    let c = DevIssuer::from_seed(&[8; 32]).unwrap();
    assert_eq!(a.jwks(), b.jwks());
    assert_ne!(a.ring().current_kid(), c.ring().current_kid());
    let t = a.fan_session("f", at(T0)).unwrap().token;
    assert!(
        b.fan_session_verifier("holds")
            .unwrap()
            .verify(&t, at(T0))
            .is_ok()
    );
    assert!(matches!(
        c.fan_session_verifier("holds").unwrap().verify(&t, at(T0)),
        Err(TokenError::UnknownKeyId { .. })
    ));
}

#[test]
fn alg_none_is_refused() {
    let ring = ring("wr-1");
    let (_, verifier) = admission_pair(&ring);
    let payload = good_payload("ev-1");
    for alg in ["none", "None", "NONE"] {
        let header = json!({"alg": alg, "typ": "admission", "kid": "wr-1"});
        for sig in ["", "AAAA"] {
            let token = format!("{}.{}.{sig}", b64(&header), b64(&payload));
            assert!(
                matches!(
                    verifier.verify(&token, at(T0)),
                    Err(TokenError::Algorithm { .. })
                ),
                "{alg} {sig:?}"
            );
        }
    }
    // No alg at all.
    let token = format!(
        "{}.{}.",
        b64(&json!({"typ": "admission", "kid": "wr-1"})),
        b64(&payload)
    );
    assert_eq!(
        verifier.verify(&token, at(T0)),
        Err(TokenError::Algorithm {
            expected: "EdDSA",
            found: None
        })
    );
}

#[test]
fn hs256_signed_with_the_public_key_is_refused() {
    let ring = ring("wr-1");
    let (_, verifier) = admission_pair(&ring);
    let jwks = ring.jwks_json().unwrap();
    let x = ring.jwks().keys[0].clone();
    let x = match &x.algorithm {
        jsonwebtoken::jwk::AlgorithmParameters::OctetKeyPair(p) => p.x.clone(),
        other => panic!("unexpected key {other:?}"),
    };
    let public = URL_SAFE_NO_PAD.decode(&x).unwrap();
    // Every form an attacker could take the public key in: raw bytes, the JWK `x`, the JWKS.
    for secret in [public.as_slice(), x.as_bytes(), jwks.as_bytes()] {
        for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
            let mut header = Header::new(alg);
            header.typ = Some("admission".into());
            header.kid = Some("wr-1".into());
            let token = jsonwebtoken::encode(
                &header,
                &good_payload("ev-1"),
                &EncodingKey::from_secret(secret).unwrap(),
            )
            .unwrap();
            assert!(matches!(
                verifier.verify(&token, at(T0)),
                Err(TokenError::Algorithm {
                    expected: "EdDSA",
                    ..
                })
            ));
        }
    }
}

#[test]
fn expired_and_not_yet_valid_at_the_edges_of_the_leeway() {
    let ring = ring("wr-1");
    let (issuer, verifier) = admission_pair(&ring);
    let token = issuer.issue("fan-1", "ev-1", at(T0)).unwrap().token;
    // Default leeway: 5 s either side.
    assert_eq!(verifier.leeway(), Duration::from_secs(5));
    assert!(verifier.verify(&token, at(T0 + 604)).is_ok());
    let err = verifier.verify(&token, at(T0 + 605)).unwrap_err();
    assert_eq!(err, TokenError::Expired);
    assert!(verifier.verify(&token, at(T0 - 5)).is_ok());
    let err = verifier.verify(&token, at(T0 - 6)).unwrap_err();
    assert_eq!(err, TokenError::NotYetValid);

    let strict = AdmissionVerifier::new(ring.verification_keys(), WR, audience::HOLDS)
        .unwrap()
        .with_leeway(Duration::ZERO);
    assert!(strict.verify(&token, at(T0 + 599)).is_ok());
    assert_eq!(
        strict.verify(&token, at(T0 + 600)),
        Err(TokenError::Expired)
    );
    assert_eq!(
        strict.verify(&token, at(T0 - 1)),
        Err(TokenError::NotYetValid)
    );

    // Queue tickets obey the same window.
    let tickets = QueueTickets::new(QueueTicketKeys::generate("q").unwrap())
        .with_ttl(Duration::from_secs(60))
        .unwrap();
    let t = tickets.issue("f", "e", 3, at(T0)).unwrap().token;
    assert_eq!(tickets.verify(&t, at(T0 + 65)), Err(TokenError::Expired));
    assert_eq!(tickets.verify(&t, at(T0 - 6)), Err(TokenError::NotYetValid));
}

#[test]
fn iat_in_the_future_is_not_yet_valid() {
    let key = Ed25519Key::generate("wr-1").unwrap();
    let ring =
        SigningKeyRing::new(Ed25519Key::from_pkcs8_der("wr-1", &key.to_pkcs8_der()).unwrap());
    let (_, verifier) = admission_pair(&ring);
    let mut p = good_payload("ev-1");
    p["iat"] = json!(T0 + 100);
    assert_eq!(
        verifier.verify(&forge_ed(&key, "admission", &p), at(T0)),
        Err(TokenError::NotYetValid)
    );
}

#[test]
fn wrong_audience_and_wrong_issuer_are_refused() {
    let ring = ring("wr-1");
    let (issuer, _) = admission_pair(&ring);
    let token = issuer.issue("fan-1", "ev-1", at(T0)).unwrap().token;
    let box_office =
        AdmissionVerifier::new(ring.verification_keys(), WR, audience::BOX_OFFICE).unwrap();
    assert_eq!(
        box_office.verify(&token, at(T0)),
        Err(TokenError::WrongAudience {
            expected: "box-office".into()
        })
    );
    let other_iss =
        AdmissionVerifier::new(ring.verification_keys(), "someone-else", audience::HOLDS).unwrap();
    assert_eq!(
        other_iss.verify(&token, at(T0)),
        Err(TokenError::WrongIssuer {
            expected: "someone-else".into()
        })
    );
}

#[test]
fn one_kind_never_passes_as_another() {
    // One key signs fan sessions, admission and admin tokens, so only `typ` tells them apart.
    let ring = ring("k");
    let keys = ring.verification_keys();
    let all: Vec<String> = audience::ALL.map(String::from).to_vec();
    let fan = FanSessionIssuer::new(ring.clone(), WR)
        .unwrap()
        .with_audience(all.clone())
        .unwrap();
    let adm = AdmissionIssuer::new(ring.clone(), WR)
        .unwrap()
        .with_audience(all.clone())
        .unwrap();
    let admin = AdminIssuer::new(ring.clone(), WR).unwrap();
    let tickets = QueueTickets::new(QueueTicketKeys::generate("k").unwrap())
        .with_audience(all)
        .unwrap();

    let fan_t = fan.issue("fan-1", at(T0)).unwrap().token;
    let adm_t = adm.issue("fan-1", "ev-1", at(T0)).unwrap().token;
    let admin_t = admin.issue("fan-1", &[Role::Sre], at(T0)).unwrap().token;
    let ticket_t = tickets.issue("fan-1", "ev-1", 1, at(T0)).unwrap().token;

    let fan_v = FanSessionVerifier::new(keys.clone(), WR, audience::HOLDS).unwrap();
    let adm_v = AdmissionVerifier::new(keys.clone(), WR, audience::HOLDS).unwrap();
    let admin_v = AdminVerifier::new(keys, WR, audience::HOLDS).unwrap();

    let wrong = |r: Result<(), TokenError>, expected: &str| match r {
        Err(TokenError::WrongType { expected: e, .. }) => assert_eq!(e, expected),
        other => panic!("expected WrongType({expected}), got {other:?}"),
    };
    for t in [&adm_t, &admin_t, &ticket_t] {
        wrong(fan_v.verify(t, at(T0)).map(drop), "fan-session");
    }
    for t in [&fan_t, &admin_t, &ticket_t] {
        wrong(adm_v.verify(t, at(T0)).map(drop), "admission");
    }
    for t in [&fan_t, &adm_t, &ticket_t] {
        wrong(admin_v.verify(t, at(T0)).map(drop), "admin");
    }
    for t in [&fan_t, &adm_t, &admin_t] {
        wrong(tickets.verify(t, at(T0)).map(drop), "queue-ticket");
    }
}

#[test]
fn typ_is_covered_by_the_signature() {
    let ring = ring("k");
    let (issuer, _) = admission_pair(&ring);
    let admin_v = AdminVerifier::new(ring.verification_keys(), WR, audience::HOLDS).unwrap();
    let p = parts(&issuer.issue("fan-1", "ev-1", at(T0)).unwrap().token);
    let relabelled = json!({"typ": "admin", "alg": "EdDSA", "kid": "k"});
    let token = format!("{}.{}.{}", b64(&relabelled), p[1], p[2]);
    assert_eq!(
        admin_v.verify(&token, at(T0)),
        Err(TokenError::BadSignature)
    );
}

#[test]
fn tampered_payload_or_signature_is_refused() {
    let ring = ring("wr-1");
    let (issuer, verifier) = admission_pair(&ring);
    let p = parts(&issuer.issue("fan-1", "ev-1", at(T0)).unwrap().token);
    let mut claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p[1].as_bytes()).unwrap()).unwrap();
    claims["sub"] = json!("fan-2");
    let token = format!("{}.{}.{}", p[0], b64(&claims), p[2]);
    assert_eq!(
        verifier.verify(&token, at(T0)),
        Err(TokenError::BadSignature)
    );

    claims["sub"] = json!("fan-1");
    claims["exp"] = json!(T0 + 100_000);
    let token = format!("{}.{}.{}", p[0], b64(&claims), p[2]);
    assert_eq!(
        verifier.verify(&token, at(T0)),
        Err(TokenError::BadSignature)
    );

    let mut sig = URL_SAFE_NO_PAD.decode(p[2].as_bytes()).unwrap();
    sig[10] ^= 1;
    let token = format!("{}.{}.{}", p[0], p[1], URL_SAFE_NO_PAD.encode(sig));
    assert_eq!(
        verifier.verify(&token, at(T0)),
        Err(TokenError::BadSignature)
    );

    let tickets = QueueTickets::new(QueueTicketKeys::generate("q").unwrap());
    let q = parts(&tickets.issue("fan-1", "ev-1", 500, at(T0)).unwrap().token);
    let mut claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(q[1].as_bytes()).unwrap()).unwrap();
    claims["queue_number"] = json!(1);
    let token = format!("{}.{}.{}", q[0], b64(&claims), q[2]);
    assert_eq!(
        tickets.verify(&token, at(T0)),
        Err(TokenError::BadSignature)
    );
}

#[test]
fn unknown_kid_is_distinct_and_a_jwks_refresh_fixes_it() {
    let ring = ring("wr-1");
    let (_, verifier) = admission_pair(&ring);
    let other = SigningKeyRing::generate("wr-2").unwrap();
    let token = AdmissionIssuer::new(other.clone(), WR)
        .unwrap()
        .issue("fan-1", "ev-1", at(T0))
        .unwrap()
        .token;
    let err = verifier.verify(&token, at(T0)).unwrap_err();
    assert_eq!(err, TokenError::UnknownKeyId { kid: "wr-2".into() });

    verifier.replace_keys(VerificationKeys::from_jwks_json(&other.jwks_json().unwrap()).unwrap());
    assert!(verifier.verify(&token, at(T0)).is_ok());

    // A known kid with another key behind it is a bad signature, not an unknown key.
    let impostor = SigningKeyRing::generate("wr-2").unwrap();
    let forged = AdmissionIssuer::new(impostor, WR)
        .unwrap()
        .issue("fan-1", "ev-1", at(T0))
        .unwrap()
        .token;
    assert_eq!(
        verifier.verify(&forged, at(T0)),
        Err(TokenError::BadSignature)
    );

    // No kid at all.
    let key = Ed25519Key::generate("wr-2").unwrap();
    let p = parts(&forge_ed(&key, "admission", &good_payload("e")));
    let token = format!(
        "{}.{}.{}",
        b64(&json!({"typ": "admission", "alg": "EdDSA"})),
        p[1],
        p[2]
    );
    assert_eq!(
        verifier.verify(&token, at(T0)),
        Err(TokenError::MissingClaim("kid".into()))
    );
}

#[test]
fn rotation_keeps_old_kids_until_retired() {
    let ring = ring("wr-1");
    let (issuer, _) = admission_pair(&ring);
    let live = AdmissionVerifier::for_ring(&ring, WR, audience::HOLDS).unwrap();
    let old = issuer.issue("fan-1", "ev-1", at(T0)).unwrap().token;

    ring.rotate(Ed25519Key::generate("wr-2").unwrap()).unwrap();
    let new = issuer.issue("fan-1", "ev-1", at(T0)).unwrap().token;
    assert_eq!(
        jsonwebtoken::decode_header(&new).unwrap().kid.as_deref(),
        Some("wr-2")
    );

    let snapshot = AdmissionVerifier::new(
        VerificationKeys::from_jwks_json(&ring.jwks_json().unwrap()).unwrap(),
        WR,
        audience::HOLDS,
    )
    .unwrap();
    for v in [&live, &snapshot] {
        assert!(v.verify(&old, at(T0)).is_ok());
        assert!(v.verify(&new, at(T0)).is_ok());
    }

    ring.retire("wr-1").unwrap();
    let unknown = Err(TokenError::UnknownKeyId { kid: "wr-1".into() });
    assert_eq!(live.verify(&old, at(T0)).map(drop), unknown);
    assert!(live.verify(&new, at(T0)).is_ok());
    snapshot.replace_keys(VerificationKeys::from_jwks_json(&ring.jwks_json().unwrap()).unwrap());
    assert_eq!(snapshot.verify(&old, at(T0)).map(drop), unknown);
    assert!(snapshot.verify(&new, at(T0)).is_ok());

    // Staged rotation: a key published before it signs.
    ring.insert(Ed25519Key::generate("wr-3").unwrap()).unwrap();
    assert_eq!(ring.current_kid(), "wr-2");
    assert_eq!(ring.kids(), ["wr-2", "wr-3"]);
    ring.promote("wr-3").unwrap();
    let third = issuer.issue("fan-1", "ev-1", at(T0)).unwrap().token;
    assert!(live.verify(&third, at(T0)).is_ok());
}

#[test]
fn queue_ticket_secret_rotation() {
    let keys = QueueTicketKeys::new("q1", &[1; 32]).unwrap();
    let tickets = QueueTickets::new(keys.clone());
    let old = tickets.issue("f", "e", 7, at(T0)).unwrap().token;
    keys.rotate("q2", &[2; 32]).unwrap();
    let new = tickets.issue("f", "e", 7, at(T0)).unwrap().token;
    assert!(tickets.verify(&old, at(T0)).is_ok());
    assert!(tickets.verify(&new, at(T0)).is_ok());

    // A second replica configured with the same secrets verifies the first one's tickets.
    let replica_keys = QueueTicketKeys::new("q2", &[2; 32]).unwrap();
    let replica = QueueTickets::new(replica_keys.clone());
    assert!(replica.verify(&new, at(T0)).is_ok());
    assert_eq!(
        replica.verify(&old, at(T0)),
        Err(TokenError::UnknownKeyId { kid: "q1".into() })
    );
    // Same kid, another secret: forged.
    let forger = QueueTickets::new(QueueTicketKeys::new("q2", &[3; 32]).unwrap());
    let forged = forger.issue("f", "e", 1, at(T0)).unwrap().token;
    assert_eq!(
        replica.verify(&forged, at(T0)),
        Err(TokenError::BadSignature)
    );

    keys.retire("q1").unwrap();
    assert_eq!(
        tickets.verify(&old, at(T0)),
        Err(TokenError::UnknownKeyId { kid: "q1".into() })
    );
    assert!(matches!(keys.retire("q2"), Err(TokenError::InvalidKey(_))));
    assert!(matches!(
        QueueTicketKeys::new("short", &[1; 31]),
        Err(TokenError::InvalidKey(_))
    ));
    assert!(matches!(
        keys.insert("q2", &[9; 32]),
        Err(TokenError::InvalidKey(_))
    ));
    keys.insert("q2", &[2; 32]).unwrap();
}

#[test]
fn jwks_export_then_import_then_verify() {
    let ring = ring("wr-1");
    ring.rotate(Ed25519Key::generate("wr-2").unwrap()).unwrap();
    let json = ring.jwks_json().unwrap();
    let parsed: Value = serde_json::from_str(&json).unwrap();
    let keys = parsed["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    for (k, kid) in keys.iter().zip(["wr-1", "wr-2"]) {
        let obj = k.as_object().unwrap();
        let mut names: Vec<&str> = obj.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["alg", "crv", "kid", "kty", "use", "x"]);
        assert_eq!(k["kty"], "OKP");
        assert_eq!(k["crv"], "Ed25519");
        assert_eq!(k["alg"], "EdDSA");
        assert_eq!(k["use"], "sig");
        assert_eq!(k["kid"], kid);
        assert_eq!(
            URL_SAFE_NO_PAD
                .decode(k["x"].as_str().unwrap())
                .unwrap()
                .len(),
            32
        );
    }

    let imported = VerificationKeys::from_jwks_json(&json).unwrap();
    assert_eq!(imported.kids(), ["wr-1", "wr-2"]);
    assert_eq!(imported.to_jwks(), ring.jwks());
    let token = AdmissionIssuer::new(ring.clone(), WR)
        .unwrap()
        .issue("fan-1", "ev-1", at(T0))
        .unwrap()
        .token;
    let v = AdmissionVerifier::new(imported, WR, audience::PAYMENTS).unwrap();
    assert_eq!(v.verify(&token, at(T0)).unwrap().event_id, "ev-1");
}

#[test]
fn jwks_import_skips_foreign_keys_and_refuses_broken_ones() {
    let ring = ring("wr-1");
    let mut set: Value = serde_json::from_str(&ring.jwks_json().unwrap()).unwrap();
    let good = set["keys"][0].clone();
    let arr = set["keys"].as_array_mut().unwrap();
    arr.push(json!({"kty": "RSA", "kid": "rsa", "n": "sXch", "e": "AQAB", "alg": "RS256"}));
    arr.push(json!({"kty": "OKP", "crv": "X25519", "kid": "ecdh", "x": good["x"]}));
    arr.push(json!({"kty": "OKP", "crv": "Ed25519", "kid": "enc", "use": "enc", "x": good["x"]}));
    arr.push(json!({"kty": "OKP", "crv": "Ed25519", "x": good["x"]}));
    let keys = VerificationKeys::from_jwks_json(&set.to_string()).unwrap();
    assert_eq!(keys.kids(), ["wr-1"]);

    let broken = |x: &str| {
        let set = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "k", "x": x}]});
        VerificationKeys::from_jwks_json(&set.to_string())
    };
    assert!(matches!(broken("AAAA"), Err(TokenError::InvalidKey(_))));
    assert!(matches!(
        broken("not base64!"),
        Err(TokenError::InvalidKey(_))
    ));
    // 32 zero bytes: a small-order point.
    assert!(matches!(
        broken(&URL_SAFE_NO_PAD.encode([0u8; 32])),
        Err(TokenError::InvalidKey(_))
    ));
    assert!(matches!(
        VerificationKeys::from_jwks_json(r#"{"keys":[]}"#),
        Err(TokenError::InvalidKey(_))
    ));
    assert!(matches!(
        VerificationKeys::from_jwks_json("[]"),
        Err(TokenError::InvalidKey(_))
    ));
    let dup = json!({"keys": [good.clone(), good]});
    assert!(matches!(
        VerificationKeys::from_jwks_json(&dup.to_string()),
        Err(TokenError::InvalidKey(_))
    ));
}

#[test]
fn missing_or_mistyped_claims_are_refused() {
    let key = Ed25519Key::generate("wr-1").unwrap();
    let ring =
        SigningKeyRing::new(Ed25519Key::from_pkcs8_der("wr-1", &key.to_pkcs8_der()).unwrap());
    let (_, verifier) = admission_pair(&ring);
    assert!(
        verifier
            .verify(&forge_ed(&key, "admission", &good_payload("e")), at(T0))
            .is_ok()
    );
    for claim in ["iss", "sub", "aud", "exp", "nbf", "iat", "jti", "event_id"] {
        let mut p = good_payload("e");
        p.as_object_mut().unwrap().remove(claim);
        assert_eq!(
            verifier.verify(&forge_ed(&key, "admission", &p), at(T0)),
            Err(TokenError::MissingClaim(claim.into())),
            "{claim}"
        );
    }
    for (claim, value) in [
        ("exp", json!("1900000000")),
        ("nbf", json!(-1)),
        ("exp", json!(1.9e9)),
        ("sub", json!(42)),
    ] {
        let mut p = good_payload("e");
        p[claim] = value;
        assert!(
            matches!(
                verifier.verify(&forge_ed(&key, "admission", &p), at(T0)),
                Err(TokenError::Malformed(_))
            ),
            "{claim}"
        );
    }
}

#[test]
fn malformed_input_is_a_typed_error() {
    let ring = ring("wr-1");
    let (_, verifier) = admission_pair(&ring);
    let huge = "a".repeat(stadium_tokens::MAX_TOKEN_BYTES + 1);
    for bad in [
        "",
        ".",
        "a.b",
        "a.b.c.d",
        "!!!.b.c",
        "e30.e30.e30",
        "bnVsbA.e30.",
        huge.as_str(),
    ] {
        assert!(
            matches!(
                verifier.verify(bad, at(T0)),
                Err(TokenError::Malformed(_)) | Err(TokenError::WrongType { .. })
            ),
            "{bad:?}"
        );
    }
}

#[test]
fn issuers_refuse_bad_input() {
    let ring = ring("wr-1");
    let (issuer, _) = admission_pair(&ring);
    let input = |r: Result<_, TokenError>| matches!(r, Err(TokenError::InvalidInput { .. }));
    assert!(input(issuer.issue("", "ev", at(T0)).map(drop)));
    assert!(input(issuer.issue("fan", "", at(T0)).map(drop)));
    assert!(input(
        issuer
            .issue_with_ttl("fan", "ev", Duration::from_millis(999), at(T0))
            .map(drop)
    ));
    let admin = AdminIssuer::new(ring.clone(), WR).unwrap();
    assert!(input(admin.issue("bob", &[], at(T0)).map(drop)));
    assert!(input(AdmissionIssuer::new(ring.clone(), "").map(drop)));
    assert!(input(
        AdmissionIssuer::new(ring.clone(), WR)
            .unwrap()
            .with_ttl(Duration::ZERO)
            .map(drop)
    ));
    assert!(input(
        AdmissionIssuer::new(ring.clone(), WR)
            .unwrap()
            .with_audience(Vec::<String>::new())
            .map(drop)
    ));
    assert!(input(
        AdmissionVerifier::new(ring.verification_keys(), WR, "").map(drop)
    ));
    let tickets = QueueTickets::new(QueueTicketKeys::generate("q").unwrap());
    assert!(input(tickets.issue("f", "", 1, at(T0)).map(drop)));
    let tickets = QueueTickets::new(QueueTicketKeys::generate("q").unwrap());
    assert!(input(tickets.with_audience(["holds"]).map(drop)));
    assert!(matches!(
        Ed25519Key::generate("bad kid"),
        Err(TokenError::InvalidKey(_))
    ));
}

#[test]
fn verifiers_and_issuers_are_shareable_across_tasks() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<AdmissionVerifier>();
    shareable::<AdmissionIssuer>();
    shareable::<FanSessionVerifier>();
    shareable::<AdminVerifier>();
    shareable::<QueueTickets>();
    shareable::<DevIssuer>();
    shareable::<SigningKeyRing>();
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/";

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn arbitrary_input_is_refused_without_panic(input in ".{0,400}") {
            let ring = ring("wr-1");
            let (_, verifier) = admission_pair(&ring);
            prop_assert!(verifier.verify(&input, at(T0)).is_err());
            let tickets = QueueTickets::new(QueueTicketKeys::generate("q").unwrap());
            prop_assert!(tickets.verify(&input, at(T0)).is_err());
        }

        #[test]
        fn any_one_character_change_is_refused(pos in any::<prop::sample::Index>(), c in 0..ALPHABET.len()) {
            let ring = ring("wr-1");
            let (issuer, verifier) = admission_pair(&ring);
            let token = issuer.issue("fan-1", "ev-1", at(T0)).unwrap().token;
            // Verified first, so the token is kept: the change must not hit its entry.
            prop_assert!(verifier.verify(&token, at(T0)).is_ok());
            let mut bytes = token.clone().into_bytes();
            let i = pos.index(bytes.len());
            bytes[i] = ALPHABET[c];
            let mutated = String::from_utf8(bytes).unwrap();
            prop_assume!(mutated != token);
            prop_assert!(verifier.verify(&mutated, at(T0)).is_err(), "{mutated}");
        }
    }
}

/// Verified tokens are kept (see `EdVerifier`), but never past the key that verified
/// them: a new key under the same kid, or the kid retired, refuses the very token that
/// passed a moment before; and a kept token still meets the time window at each call.
#[test]
fn a_kept_token_passes_only_while_its_key_is_trusted_and_its_window_is_open() {
    let ring = ring("wr-1");
    let (issuer, verifier) = admission_pair(&ring);
    let token = issuer.issue("fan-1", "ev-1", at(T0)).unwrap().token;
    for _ in 0..3 {
        assert_eq!(verifier.verify(&token, at(T0)).unwrap().fan_id(), "fan-1");
    }
    assert_eq!(
        verifier.verify(&token, at(T0 + 605)).map(drop),
        Err(TokenError::Expired),
        "a kept token is checked against each call's time"
    );
    assert!(verifier.verify(&token, at(T0)).is_ok());

    // Same kid, other key (a replica that generated its own): the kept entry must not
    // stand in for the signature check.
    let impostor = SigningKeyRing::generate("wr-1").unwrap();
    verifier.replace_keys(impostor.verification_keys());
    assert_eq!(
        verifier.verify(&token, at(T0)).map(drop),
        Err(TokenError::BadSignature)
    );
    verifier.replace_keys(ring.verification_keys());
    assert!(verifier.verify(&token, at(T0)).is_ok());

    let live = AdmissionVerifier::for_ring(&ring, WR, audience::HOLDS).unwrap();
    assert!(live.verify(&token, at(T0)).is_ok());
    ring.rotate(Ed25519Key::generate("wr-2").unwrap()).unwrap();
    ring.retire("wr-1").unwrap();
    assert_eq!(
        live.verify(&token, at(T0)).map(drop),
        Err(TokenError::UnknownKeyId { kid: "wr-1".into() })
    );
}
