//! Admissions given back (ReleaseAdmission), taken back (RevokeAdmission, the no-show
//! deadline) and used (MarkAdmissionsUsed): the token's jti is listed as revoked
//! (ListRevokedAdmissions, what holds refuses), the fan gets no token again, the place
//! goes to the next fan, and the frontier never outruns the rate.

use std::sync::Arc;
use std::time::Duration;

use stadium_kit::Reason;
use stadium_proto::waiting_room::v1 as pb;
use stadium_tokens::Role;
use tonic::Code;
use waiting_room::Clock;
use waiting_room::domain::poll::ADMISSION_PICKUP_MS;

use crate::helpers::{EVENT, Room, bearer, reason};

/// Configures [`EVENT`] open now with a cap, a 60 s admission lifetime and a no-show
/// timeout (0 = off).
async fn open(room: &Room, fans_per_minute: u32, cap: u32, no_show_ms: u64) {
    let request = pb::ConfigureEventRequest {
        event_id: EVENT.into(),
        state: pb::SaleState::Open as i32,
        fans_per_minute,
        active_fan_cap: cap,
        admission_ttl_ms: 60_000,
        admission_no_show_ms: no_show_ms,
        ..Default::default()
    };
    room.client(0)
        .configure_event(bearer(request, &room.service("box-office")))
        .await
        .expect("configure");
}

/// Joins `n` fans (`fan-1`…); their queue tickets by fan name, in queue order.
async fn join(room: &Room, n: usize) -> Vec<(String, String)> {
    let mut fans = Vec::new();
    for i in 1..=n {
        let fan = format!("fan-{i}");
        let status = room.join(i, &fan).await.expect("join");
        assert_eq!(status.queue_number, i as u64);
        fans.push((fan, status.queue_ticket));
    }
    fans
}

/// The fan's admission token, `None` while waiting.
async fn token(room: &Room, fan: &(String, String)) -> Result<Option<String>, tonic::Status> {
    let status = room.status(0, &fan.0, &fan.1).await?;
    Ok(Some(status.admission_token).filter(|t| !t.is_empty()))
}

async fn jti(room: &Room, token: &str) -> String {
    room.admission_verifier(0)
        .await
        .verify(token, room.clock.now())
        .expect("a valid admission token")
        .registered
        .jti
}

async fn release(room: &Room, fan: &str, token: &str) -> Result<bool, tonic::Status> {
    let request = pb::ReleaseAdmissionRequest {
        admission_token: token.into(),
    };
    room.client(1)
        .release_admission(bearer(request, &room.fan(fan)))
        .await
        .map(|r| r.into_inner().freed)
}

async fn revoke(
    room: &Room,
    credential: &str,
    fan_id: &str,
    jti: &str,
) -> Result<pb::RevokeAdmissionResponse, tonic::Status> {
    let request = pb::RevokeAdmissionRequest {
        event_id: EVENT.into(),
        fan_id: fan_id.into(),
        jti: jti.into(),
        reason: "bot: 40 claims a second".into(),
    };
    room.client(2)
        .revoke_admission(bearer(request, credential))
        .await
        .map(|r| r.into_inner())
}

/// The revoked jtis, read from the start as a fresh holds replica does.
async fn revoked(room: &Room) -> Vec<String> {
    let request = pb::ListRevokedAdmissionsRequest {
        event_id: EVENT.into(),
        ..Default::default()
    };
    let page = room
        .client(0)
        .list_revoked_admissions(request)
        .await
        .expect("list")
        .into_inner();
    assert!(page.full && !page.more);
    page.revoked.into_iter().map(|r| r.jti).collect()
}

async fn mark_used(room: &Room, jtis: &[String]) -> u64 {
    let request = pb::MarkAdmissionsUsedRequest {
        event_id: EVENT.into(),
        jtis: jtis.to_vec(),
    };
    room.client(0)
        .mark_admissions_used(bearer(request, &room.service("holds")))
        .await
        .expect("mark used")
        .into_inner()
        .marked
}

fn refused_as_revoked(result: Result<Option<String>, tonic::Status>) {
    let err = result.expect_err("no token after a revocation");
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert_eq!(reason(&err), Some(Reason::AdmissionRevoked));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_admission_is_revoked_and_its_place_goes_to_the_next_fan() {
    let room = Room::start("wr_release", 3, Duration::ZERO).await;
    open(&room, 600, 2, 0).await;
    let fans = join(&room, 4).await;
    room.clock.advance(Duration::from_secs(5));
    let first = token(&room, &fans[0]).await.unwrap().expect("admitted");
    assert!(token(&room, &fans[2]).await.unwrap().is_none(), "capped");
    let first_jti = jti(&room, &first).await;

    // Another fan's session cannot release it.
    let err = release(&room, "fan-2", &first).await.unwrap_err();
    assert_eq!(reason(&err), Some(Reason::WrongFan));
    assert!(revoked(&room).await.is_empty());

    assert!(release(&room, "fan-1", &first).await.unwrap());
    assert_eq!(revoked(&room).await, vec![first_jti.clone()]);
    refused_as_revoked(token(&room, &fans[0]).await);
    // Asked again from the version it has, holds hears nothing new.
    let request = pb::ListRevokedAdmissionsRequest {
        event_id: EVENT.into(),
        ..Default::default()
    };
    let all = room
        .client(2)
        .list_revoked_admissions(request)
        .await
        .unwrap()
        .into_inner();
    let since = pb::ListRevokedAdmissionsRequest {
        event_id: EVENT.into(),
        epoch: all.epoch.clone(),
        since_version: all.version,
    };
    let news = room
        .client(1)
        .list_revoked_admissions(since)
        .await
        .unwrap()
        .into_inner();
    assert!(!news.full && news.revoked.is_empty(), "{news:?}");
    assert_eq!(news.version, all.version);

    // The freed place goes to the next fan in line (100 ms at 600 fans/min).
    room.clock.advance(Duration::from_millis(200));
    assert!(
        token(&room, &fans[2]).await.unwrap().is_some(),
        "fan 3 admitted"
    );
    assert!(
        token(&room, &fans[3]).await.unwrap().is_none(),
        "capped again"
    );
    let stats = room.stats(0).await;
    assert_eq!((stats.admitted, stats.active_admitted), (3, 2), "{stats:?}");
    assert_eq!((stats.revoked, stats.no_shows), (1, 0), "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_releases_of_one_token_free_exactly_one_place() {
    let room = Arc::new(Room::start("wr_release_race", 2, Duration::ZERO).await);
    open(&room, 600, 1, 0).await;
    let fans = join(&room, 3).await;
    room.clock.advance(Duration::from_secs(5));
    let first = token(&room, &fans[0]).await.unwrap().expect("admitted");
    let mut clients = Vec::new();
    for i in 0..5 {
        clients.push(room.own_connection(i % 2).await);
    }
    let session = room.fan("fan-1");
    let barrier = Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = Vec::new();
    for i in 0..50 {
        let mut client = clients[i % clients.len()].clone();
        let request = bearer(
            pb::ReleaseAdmissionRequest {
                admission_token: first.clone(),
            },
            &session,
        );
        let barrier = Arc::clone(&barrier);
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            client.release_admission(request).await
        }));
    }
    let mut freed = 0;
    for task in tasks {
        if task.await.unwrap().expect("release").into_inner().freed {
            freed += 1;
        }
    }
    assert_eq!(freed, 1, "exactly one call frees the place");
    assert_eq!(revoked(&room).await.len(), 1);
    room.clock.advance(Duration::from_millis(200));
    let stats = room.stats(0).await;
    assert_eq!((stats.admitted, stats.active_admitted), (2, 1), "{stats:?}");
    assert!(token(&room, &fans[1]).await.unwrap().is_some());
    assert!(
        token(&room, &fans[2]).await.unwrap().is_none(),
        "one place, once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staff_revoke_by_fan_or_by_jti_and_the_place_goes_to_the_queue() {
    let room = Room::start("wr_revoke", 3, Duration::ZERO).await;
    open(&room, 600, 2, 0).await;
    let fans = join(&room, 6).await;
    room.clock.advance(Duration::from_secs(5));
    let first = token(&room, &fans[0]).await.unwrap().expect("admitted");
    let second = token(&room, &fans[1]).await.unwrap().expect("admitted");

    // Neither a fan nor a service may revoke; nothing changes.
    for credential in [room.fan("fan-3"), room.service("payments")] {
        let err = revoke(&room, &credential, "fan-1", "").await.unwrap_err();
        assert!(
            matches!(err.code(), Code::PermissionDenied | Code::Unauthenticated),
            "{err:?}"
        );
    }
    let err = revoke(&room, &room.admin(&[Role::Sre]), "fan-1", "x")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "fan_id and jti both set");
    assert!(revoked(&room).await.is_empty());

    // The SRE takes fan 1's admission back by fan, the box office fan 2's by jti.
    let by_fan = revoke(&room, &room.admin(&[Role::Sre]), "fan-1", "")
        .await
        .unwrap();
    assert!(by_fan.freed);
    assert_eq!(by_fan.jti, jti(&room, &first).await);
    let second_jti = jti(&room, &second).await;
    let by_jti = revoke(&room, &room.admin(&[Role::BoxOffice]), "", &second_jti)
        .await
        .unwrap();
    assert!(by_jti.freed);
    let again = revoke(&room, &room.admin(&[Role::Sre]), "fan-1", "")
        .await
        .unwrap();
    assert!(!again.freed, "idempotent");
    let mut listed = revoked(&room).await;
    listed.sort();
    let mut expected = vec![by_fan.jti.clone(), second_jti];
    expected.sort();
    assert_eq!(listed, expected);
    refused_as_revoked(token(&room, &fans[0]).await);
    refused_as_revoked(token(&room, &fans[1]).await);

    // A fan still waiting, taken back by fan, is never handed a token: its place,
    // once admitted, is freed when it asks, and the next fan gets it.
    revoke(&room, &room.admin(&[Role::Sre]), "fan-4", "")
        .await
        .unwrap();
    room.clock.advance(Duration::from_millis(300));
    assert!(
        token(&room, &fans[2]).await.unwrap().is_some(),
        "fan 3 admitted"
    );
    refused_as_revoked(token(&room, &fans[3]).await);
    room.clock.advance(Duration::from_millis(200));
    assert!(
        token(&room, &fans[4]).await.unwrap().is_some(),
        "fan 5 admitted"
    );
    let stats = room.stats(0).await;
    assert_eq!(stats.active_admitted, 2, "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_no_show_loses_the_admission_and_a_fan_who_claimed_keeps_it() {
    let room = Room::start("wr_no_show", 3, Duration::ZERO).await;
    open(&room, 600, 2, 5_000).await;
    let fans = join(&room, 4).await;
    room.clock.advance(Duration::from_millis(500));
    let first = token(&room, &fans[0]).await.unwrap().expect("admitted");
    let second = token(&room, &fans[1]).await.unwrap().expect("admitted");
    let (first_jti, second_jti) = (jti(&room, &first).await, jti(&room, &second).await);

    // Only holds reports use.
    let request = pb::MarkAdmissionsUsedRequest {
        event_id: EVENT.into(),
        jtis: vec![first_jti.clone()],
    };
    let err = room
        .client(0)
        .mark_admissions_used(bearer(request, &room.service("payments")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    // Fan 1 claimed at holds in time; reported twice (the second marks nothing).
    assert_eq!(mark_used(&room, std::slice::from_ref(&first_jti)).await, 1);
    assert_eq!(
        mark_used(&room, &[first_jti.clone(), "unknown".into()]).await,
        0
    );

    room.clock.advance(Duration::from_secs(4));
    assert!(revoked(&room).await.is_empty(), "before the deadline");
    room.clock.advance(Duration::from_millis(1_100));
    assert_eq!(revoked(&room).await, vec![second_jti]);
    refused_as_revoked(token(&room, &fans[1]).await);
    assert_eq!(token(&room, &fans[0]).await.unwrap(), Some(first), "kept");
    assert!(
        token(&room, &fans[2]).await.unwrap().is_some(),
        "fan 3 admitted"
    );
    let stats = room.stats(0).await;
    assert_eq!((stats.admitted, stats.active_admitted), (3, 2), "{stats:?}");
    assert_eq!((stats.revoked, stats.no_shows), (1, 1), "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admission_nobody_collects_gives_its_place_back_after_the_pickup_window() {
    let room = Room::start("wr_pickup", 2, Duration::ZERO).await;
    let request = pb::ConfigureEventRequest {
        event_id: EVENT.into(),
        state: pb::SaleState::Open as i32,
        fans_per_minute: 600,
        active_fan_cap: 2,
        admission_ttl_ms: 600_000,
        ..Default::default()
    };
    room.client(0)
        .configure_event(bearer(request, &room.service("box-office")))
        .await
        .expect("configure");
    let fans = join(&room, 4).await;
    room.clock.advance(Duration::from_millis(500));
    // Fans 1 and 2 are admitted; only fan 1 comes for the token (fan 2 has gone).
    let first = token(&room, &fans[0]).await.unwrap().expect("admitted");
    assert_eq!(
        token(&room, &fans[2]).await.unwrap(),
        None,
        "the cap is full"
    );

    room.clock
        .advance(Duration::from_millis(ADMISSION_PICKUP_MS - 1_000));
    assert_eq!(token(&room, &fans[2]).await.unwrap(), None, "still kept");
    assert_eq!(room.stats(1).await.active_admitted, 2);
    room.clock.advance(Duration::from_millis(1_100));
    assert!(
        token(&room, &fans[2]).await.unwrap().is_some(),
        "fan 2's place went to fan 3"
    );
    let late = token(&room, &fans[1]).await.unwrap_err();
    assert_eq!(reason(&late), Some(Reason::AdmissionExpired), "{late:?}");
    // The collected token keeps its place for its whole lifetime.
    assert_eq!(token(&room, &fans[0]).await.unwrap(), Some(first));
    assert_eq!(
        token(&room, &fans[3]).await.unwrap(),
        None,
        "cap full again"
    );
    let stats = room.stats(1).await;
    assert_eq!((stats.admitted, stats.active_admitted), (3, 2), "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admitted_never_outruns_the_rate_while_places_come_back() {
    const RATE: u64 = 600;
    const CAP: u64 = 5;
    let room = Room::start("wr_release_rate", 3, Duration::from_millis(100)).await;
    open(&room, RATE as u32, CAP as u32, 3_000).await;
    let fans = join(&room, 400).await;
    let mut done = 0usize;
    let (mut released, mut revoked_n, mut used) = (0, 0, 0);
    for step in 1..=120u64 {
        room.clock.advance(Duration::from_millis(250));
        let stats = room.stats(step as usize).await;
        let bound = RATE * step * 250 / 60_000 + 1;
        assert!(
            stats.admitted <= bound,
            "at {} ms: admitted {} > rate x elapsed + 1 = {bound}",
            step * 250,
            stats.admitted
        );
        assert!(stats.active_admitted <= CAP, "{stats:?}");
        // Fans up to the frontier fetch their token; each then releases, is revoked,
        // claims (and is reported used) or never shows up, in turn.
        let upto = (stats.admitted as usize).min(fans.len());
        for (i, fan) in fans.iter().enumerate().take(upto).skip(done) {
            let Ok(Some(token)) = token(&room, fan).await else {
                // A no-show taken back before it asked: nothing to do.
                continue;
            };
            match i % 4 {
                0 => {
                    release(&room, &fan.0, &token).await.expect("release");
                    released += 1;
                }
                1 => {
                    revoke(&room, &room.admin(&[Role::Sre]), &fan.0, "")
                        .await
                        .expect("revoke");
                    revoked_n += 1;
                }
                2 => {
                    // Claimed, then paid: payments completes the admission.
                    mark_used(&room, &[jti(&room, &token).await]).await;
                    let done = pb::CompleteAdmissionRequest {
                        event_id: EVENT.into(),
                        fan_id: fan.0.clone(),
                        ..Default::default()
                    };
                    room.client(0)
                        .complete_admission(bearer(done, &room.service("payments")))
                        .await
                        .expect("complete");
                    used += 1;
                }
                _ => {}
            }
        }
        done = done.max(upto);
    }
    let stats = room.stats(0).await;
    assert!(
        stats.admitted > 4 * CAP,
        "places came back to the queue: {stats:?}"
    );
    assert!(released > 0 && revoked_n > 0 && used > 0);
}
