//! Rotating the admission key and the queue-ticket secret by the architecture note's
//! procedure (add everywhere, then promote, then retire after the longest admission
//! lifetime), with each step's release running beside the next as in a rolling
//! restart: no fan is locked out on the way, and once a key is retired its tokens stop
//! working. Keys come through the service's own flags.

use std::time::Duration;

use clap::Parser as _;
use stadium_proto::waiting_room::v1 as pb;
use stadium_tokens::Ed25519Key;
use tonic::Code;
use waiting_room::Clock as _;
use waiting_room::config::Config;

use crate::helpers::{Keys, Room, reason};

/// Test-only Ed25519 keys (PKCS#8 PEM, as `openssl genpkey -algorithm ed25519` writes).
const KEY_A: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEILEFi2i/96YnDx2AJChyyyl7zvGyofgyofrC2a4MvB8i
-----END PRIVATE KEY-----";
const KEY_B: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIEkCdZdO9oy3Yg8b8lt/e0RrmuKhsbQadARmAE1SCqbP
-----END PRIVATE KEY-----";

/// The releases of the rotation, in order; instance `i` of the room runs release `i`.
const OLD: usize = 0;
const ADDED: usize = 1;
const PROMOTED: usize = 2;
const RETIRED: usize = 3;

/// The keys a replica loads from `--admission-key-pem` and `--ticket-secrets`.
fn keys(pems: &[&str], secrets: &[String]) -> Keys {
    let pem = format!("--admission-key-pem={}", pems.join("\n"));
    let tickets = format!("--ticket-secrets={}", secrets.join(","));
    let seed = "11".repeat(32);
    let settings = Config::try_parse_from([
        "waiting-room",
        "--mode",
        "development",
        "--dev-issuer-seed",
        &seed,
        &pem,
        &tickets,
    ])
    .expect("flags parse")
    .into_settings()
    .expect("keys load");
    Keys {
        admission: settings.admission_keys,
        tickets: settings.ticket_keys,
    }
}

/// Whether what release `issued` signed must work at release `at` (`None`: the two
/// never meet and nothing is asserted). During the rotation each release runs beside
/// the next, so both must take each other's tokens; the retired release takes only
/// what the promoted key signed.
fn must_work(issued: usize, at: usize) -> Option<bool> {
    if at == RETIRED {
        Some(issued == PROMOTED)
    } else {
        (issued.abs_diff(at) <= 1).then_some(true)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_rotate_with_no_fan_locked_out_and_retired_keys_stop_working() {
    let (secret_a, secret_b) = ("aa".repeat(32), "bb".repeat(32));
    let releases = vec![
        keys(&[KEY_A], std::slice::from_ref(&secret_a)),
        keys(&[KEY_A, KEY_B], &[secret_a.clone(), secret_b.clone()]),
        keys(&[KEY_B, KEY_A], &[secret_b.clone(), secret_a.clone()]),
        keys(&[KEY_B], std::slice::from_ref(&secret_b)),
    ];
    let kid_a = Ed25519Key::from_pkcs8_pem("a", KEY_A)
        .unwrap()
        .with_thumbprint_kid()
        .unwrap();
    assert_eq!(
        releases[OLD].admission.kids(),
        [kid_a.kid()],
        "a key is named by its RFC 7638 thumbprint"
    );
    let room = Room::start_keyed("wr_rotation", releases, Duration::ZERO, false).await;
    room.configure(pb::SaleState::Open, None, 60_000, 0, 0)
        .await;

    // A fan joins on each release before the last, so holds a ticket it signed.
    let mut fans = Vec::new();
    for release in [OLD, ADDED, PROMOTED] {
        let fan = format!("fan-{release}");
        let ticket = room.join(release, &fan).await.expect("join").queue_ticket;
        fans.push((release, fan, ticket));
    }
    room.clock.advance(Duration::from_secs(10));

    // Admitted where they joined: each gets an admission token of that release's key.
    let mut admissions = Vec::new();
    for (release, fan, ticket) in &fans {
        let status = room.status(*release, fan, ticket).await.expect("poll");
        assert_eq!(status.state, pb::QueueState::Admitted as i32, "{fan}");
        admissions.push((*release, status.admission_token));
    }

    for (issued, fan, ticket) in &fans {
        for release in [OLD, ADDED, PROMOTED, RETIRED] {
            let polled = room.status(release, fan, ticket).await;
            match must_work(*issued, release) {
                Some(true) => {
                    polled.unwrap_or_else(|e| panic!("{fan}'s ticket at release {release}: {e:?}"));
                }
                Some(false) => {
                    let refused = polled.expect_err("a retired secret's ticket is refused");
                    assert_eq!(refused.code(), Code::Unauthenticated);
                    assert_eq!(reason(&refused), Some(stadium_kit::Reason::TicketInvalid));
                }
                None => {}
            }
        }
    }

    for release in [OLD, ADDED, PROMOTED, RETIRED] {
        let verifier = room.admission_verifier(release).await;
        for (issued, token) in &admissions {
            let verified = verifier.verify(token, room.clock.now());
            match must_work(*issued, release) {
                Some(true) => {
                    verified.unwrap_or_else(|e| {
                        panic!("release {issued}'s admission at release {release}: {e}")
                    });
                }
                Some(false) => assert!(verified.is_err(), "a retired key's admission verified"),
                None => {}
            }
        }
    }
}
