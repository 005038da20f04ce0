//! The holds cases C01–C04 of the shared case list, each asserted on stored rows.

use holds::domain::{Claim, Claimant, EventId, FanId, SeatSet, SectionId};
use holds::error::Error;
use holds::store::Claimed;
use stadium_kit::Reason;
use stadium_proto::holds::v1::{
    ConfirmHoldRequest, GetHoldRequest, HoldStatus, SweepExpiredRequest,
};
use stadium_tokens::Role;
use tonic::Code;

use crate::support::{
    EventSettings, Section, TestApp, active_counts, assert_invariants, bearer, reason,
};
use stadium_testkit::all_at_once;

/// C01: 10 free seats, 12 fans each claiming one, all in flight together, 100 times:
/// exactly 10 holds and 2 SEAT_TAKEN every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn c01_twelve_fans_ten_seats_a_hundred_times() {
    let app = TestApp::start().await;
    let section = app.sections[1].clone();
    assert_eq!(section.seats.len(), 20);
    for round in 0..100 {
        let event = app.event(EventSettings::default()).await;
        let seats: Vec<u64> = section.seats[..10].to_vec();
        let results = all_at_once(12, |i| {
            let mut fan = app.fan(&format!("fan-{i}"), &event);
            let seat = seats[i % 10];
            async move { fan.claim(section.id, &[seat]).await }
        })
        .await;
        let held = results.iter().filter(|r| r.is_ok()).count();
        let refused: Vec<Reason> = results
            .iter()
            .filter_map(|r| r.as_ref().err())
            .map(|s| reason(s, Code::AlreadyExists))
            .collect();
        assert_eq!(held, 10, "round {round}");
        assert_eq!(refused, vec![Reason::SeatTaken; 2], "round {round}");
        assert_eq!(
            active_counts(app.pool(), &event).await,
            (10, 0, 0),
            "round {round}"
        );
    }
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// C02: per-fan limit 4; the same fan sends three claims of two different seats at
/// once; at most 4 seats end up held, decided inside the claiming transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn c02_one_fan_three_claims_limit_four() {
    let app = TestApp::start().await;
    let section = app.sections[0].clone();
    let settings = EventSettings {
        max_seats_per_claim: 2,
        max_seats_per_fan: 4,
        ..EventSettings::default()
    };
    for round in 0..20 {
        let event = app.event(settings).await;
        // Three admissions of the same fan, so the seat limit (not the one-hold-per-
        // admission rule) is what stops the third claim.
        let results = all_at_once(3, |i| {
            let mut fan = app.fan("same-fan", &event);
            let seats = [section.seats[2 * i], section.seats[2 * i + 1]];
            async move { fan.claim(section.id, &seats).await }
        })
        .await;
        let held = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(held, 2, "round {round}: {results:?}");
        let refused = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert_eq!(
            reason(refused, Code::ResourceExhausted),
            Reason::LimitExceeded
        );
        let info = stadium_kit::status::error_info(refused).unwrap();
        assert_eq!(info.metadata["limit"], "seats_per_fan");
        assert_eq!(info.metadata["max"], "4");
        let (active, _, _) = active_counts(app.pool(), &event).await;
        assert_eq!(active, 4, "round {round}");

        // One admission token, three claims at once: one hold, the rest refused.
        let event = app.event(settings).await;
        let template = app.fan("solo", &event);
        let results = all_at_once(3, |i| {
            let mut fan = app.fan("solo", &event);
            fan.admission = template.admission.clone();
            let seats = [section.seats[2 * i], section.seats[2 * i + 1]];
            async move { fan.claim(section.id, &seats).await }
        })
        .await;
        assert_eq!(
            results.iter().filter(|r| r.is_ok()).count(),
            1,
            "{results:?}"
        );
        for refused in results.iter().filter_map(|r| r.as_ref().err()) {
            let info = stadium_kit::status::error_info(refused).unwrap();
            assert_eq!(info.metadata["limit"], "holds_per_admission");
        }
    }
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// C03: fan A holds 2 of 5 seats and walks away; with the sweeper stopped, after the
/// TTL fan B claims all 5; A can no longer confirm or release; the sweeper then tidies
/// what is left and the counts agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn c03_lapsed_hold_is_reclaimed_without_the_sweeper() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[0].clone();
    let five: Vec<u64> = section.seats[20..25].to_vec();
    let mut a = app.fan("fan-a", &event);
    let mut b = app.fan("fan-b", &event);
    let mut c = app.fan("fan-c", &event);
    let held_a = a.claim(section.id, &five[..2]).await.unwrap();
    let held_c = c.claim(section.id, &[section.seats[60]]).await.unwrap();

    // Before the TTL, B is refused and nothing changes.
    let early = b.claim(section.id, &five).await.unwrap_err();
    assert_eq!(reason(&early, Code::AlreadyExists), Reason::SeatTaken);

    // The TTL passes (plus a second) for A and C: moved by SQL instead of waiting.
    sqlx::query(
        "UPDATE holds.seat_holds SET created_at = created_at - interval '601 seconds', \
             expires_at = expires_at - interval '601 seconds' \
         WHERE hold_key = ANY($1::uuid[])",
    )
    .bind(vec![held_a.hold_key.clone(), held_c.hold_key.clone()])
    .execute(app.pool())
    .await
    .unwrap();

    let held_b = b.claim(section.id, &five).await.unwrap();
    assert_eq!(held_b.seat_ids, five);
    assert_eq!(app.parts.service.metrics().totals().expired_lazily, 2);

    let service = app.issuers.service("payments");
    let confirm = app
        .client()
        .confirm_hold(bearer(
            ConfirmHoldRequest {
                hold_key: held_a.hold_key.clone(),
                fan_id: "fan-a".into(),
            },
            &service,
        ))
        .await
        .unwrap_err();
    assert_eq!(
        reason(&confirm, Code::FailedPrecondition),
        Reason::HoldExpired
    );
    let release = app.release(&held_a.hold_key, &a.session).await.unwrap_err();
    assert_eq!(
        reason(&release, Code::FailedPrecondition),
        Reason::HoldExpired
    );
    let seen = app
        .client()
        .get_hold(bearer(
            GetHoldRequest {
                hold_key: held_a.hold_key.clone(),
            },
            &a.session,
        ))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    assert_eq!(seen.status(), HoldStatus::Expired);
    assert_eq!(seen.expires_in_ms, 0);

    // C's lapsed row is still `held` until the sweeper runs; it already counts as free.
    let sre = app.issuers.admin(&[Role::Sre]);
    let swept = app
        .client()
        .sweep_expired(bearer(SweepExpiredRequest { batch_size: 1 }, &sre))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(swept.expired, 1);
    let (held, expired, lapsed): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE status = 'held' AND expires_at > now()), \
                count(*) FILTER (WHERE status = 'expired'), \
                count(*) FILTER (WHERE status = 'held' AND expires_at <= now()) \
         FROM holds.seat_holds WHERE event_id = $1::bigint",
    )
    .bind(&event)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!((held, expired, lapsed), (5, 3, 0));
    let totals = app.parts.service.metrics().totals();
    assert_eq!(totals.expired_lazily + totals.expired_by_sweeper, 3);
    // Invariant 6: unavailable + available = seats of the venue.
    let (seats, unavailable, available): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*), count(u.seat_id), count(*) - count(u.seat_id) \
         FROM catalog.event_seats s \
         LEFT JOIN holds.unavailable_seats u ON u.event_id = s.event_id AND u.seat_id = s.seat_id \
         WHERE s.event_id = $1::bigint",
    )
    .bind(&event)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!((seats, unavailable, available), (120, 5, 115));
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// An event where one fan may claim without limit, and its first section (for the C04
/// pair tests, which reuse A1 and A2 round after round).
async fn pair_event(app: &TestApp) -> (String, Section) {
    let settings = EventSettings {
        max_seats_per_fan: 10_000,
        ..EventSettings::default()
    };
    (app.event(settings).await, app.sections[0].clone())
}

/// `fan`'s claim of `seats` of `section` with an admission of its own per round.
fn pair_claim(event: &str, section: &Section, fan: &str, seats: [u64; 2], round: usize) -> Claim {
    Claim {
        event: EventId::try_from(event).unwrap(),
        section: SectionId::try_from(section.id).unwrap(),
        seats: SeatSet::from_wire(&seats).unwrap(),
        claimant: Claimant::Fan {
            fan: FanId::try_from(fan).unwrap(),
            admission_jti: format!("{fan}-{round}"),
        },
        request: None,
    }
}

/// C04 at the service layer, 1,000 times: two fans claim {A1, A2} and {A2, A1}
/// together; one always holds both, the other gets SEAT_TAKEN, and no transaction is
/// ever retried for a deadlock. The winner's hold is then ended so the pair is free
/// for the next round (release followed by reclaim, each time).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn c04_opposite_orders_a_thousand_times() {
    let app = TestApp::start().await;
    let (event, section) = pair_event(&app).await;
    let (a1, a2) = (section.seats[0], section.seats[1]);
    let service = app.parts.service.clone();
    let claim =
        |fan: &str, seats: [u64; 2], round: usize| pair_claim(&event, &section, fan, seats, round);
    for round in 0..1000 {
        let claims = [
            claim("fan-a", [a2, a1], round),
            claim("fan-b", [a1, a2], round),
        ];
        let results = all_at_once(2, |i| {
            let service = service.clone();
            let claim = claims[i].clone();
            async move { service.claim(&claim).await }
        })
        .await;
        let winners: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        assert_eq!(winners[0].seats.len(), 2);
        let loser = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert!(
            matches!(loser, Error::SeatTaken { taken, .. } if taken.len() == 2),
            "round {round}: {loser:?}"
        );
        service
            .admin_release(winners[0].key, holds::store::ReleaseScope::Any, "test")
            .await
            .unwrap();
    }
    let totals = service.metrics().totals();
    assert_eq!(totals.retries_40p01, 0);
    assert_eq!((totals.claimed, totals.seat_taken), (1000, 1000));
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// Stores `fan`'s `held` row of `seat`, lapsing `ms` milliseconds from now by the
/// database clock.
async fn insert_held(
    conn: &mut sqlx::PgConnection,
    event: &str,
    section: &Section,
    seat: u64,
    fan: &str,
    ms: f64,
) {
    sqlx::query(
        "INSERT INTO holds.seat_holds \
             (hold_key, event_id, section_id, seat_id, fan_id, admission_jti, status, expires_at) \
         VALUES (gen_random_uuid(), $1::bigint, $2, $3, $4, $4, 'held', \
                 clock_timestamp() + make_interval(secs => $5::double precision / 1000))",
    )
    .bind(event)
    .bind(section.id as i64)
    .bind(seat as i64)
    .bind(fan)
    .bind(ms)
    .execute(conn)
    .await
    .unwrap();
}

/// The corner a claim's seat-by-seat order closes (C04 with a lapse in the middle): a
/// hold of A2 lapses after the early claim's transaction starts (by its `now()` A2 is
/// still held) and before the late one's (by its `now()` A2 is free). A third
/// transaction holds A1 so both claims queue there; when it gives A1 up, whichever claim
/// takes A1 first goes on. Had the late claim locked the lapsed A2 row before queueing
/// at A1 (expiry for all seats first, then inserts), the early claim taking A1 would
/// wait on that row while the late one waited on A1: a deadlock. Five rounds; each
/// ends with one claim holding both seats, the other SEAT_TAKEN, and no database error.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hold_lapsing_between_two_claims_neither_deadlocks_nor_splits() {
    use std::time::Duration;

    let app = TestApp::start().await;
    let (event, section) = pair_event(&app).await;
    let (a1, a2) = (section.seats[0], section.seats[1]);
    let claim =
        |fan: &str, seats: [u64; 2], round: usize| pair_claim(&event, &section, fan, seats, round);
    for round in 0..5 {
        // A2 held for 600 ms more; the early claim's clock starts now.
        let mut conn = app.pool().acquire().await.unwrap();
        insert_held(
            &mut conn,
            &event,
            &section,
            a2,
            &format!("lapsing-{round}"),
            600.0,
        )
        .await;
        drop(conn);
        let mut early = app.pool().begin().await.unwrap();
        sqlx::query("SELECT now()")
            .execute(&mut *early)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(900)).await;
        // A third fan holds A1, uncommitted, so both claims queue at A1.
        let mut blocker = app.pool().begin().await.unwrap();
        insert_held(
            &mut blocker,
            &event,
            &section,
            a1,
            &format!("blocker-{round}"),
            600_000.0,
        )
        .await;
        let early_claim = claim("fan-early", [a2, a1], round);
        let early_task = tokio::spawn(async move {
            let result = holds::store::claim(&mut *early, &early_claim).await;
            (result, early)
        });
        let mut late = app.pool().begin().await.unwrap();
        let late_claim = claim("fan-late", [a1, a2], round);
        let late_task = tokio::spawn(async move {
            let result = holds::store::claim(&mut *late, &late_claim).await;
            (result, late)
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !early_task.is_finished() && !late_task.is_finished(),
            "round {round}: both claims wait at A1"
        );
        blocker.rollback().await.unwrap();
        // The first to answer ends its transaction before the other is awaited: the
        // other may be waiting on it.
        let mut tasks = vec![early_task, late_task];
        let mut won = 0;
        while !tasks.is_empty() {
            let (finished, _, rest) = futures::future::select_all(tasks).await;
            tasks = rest;
            let (result, tx) = finished.unwrap();
            match result {
                Ok(Claimed::Held(outcome)) => {
                    assert_eq!(outcome.hold.seats.len(), 2, "round {round}");
                    won += 1;
                    tx.commit().await.unwrap();
                }
                Ok(Claimed::Taken { .. }) => tx.rollback().await.unwrap(),
                Ok(repeated @ Claimed::Repeated(_)) => panic!("round {round}: {repeated:?}"),
                Err(other) => panic!("round {round}: {other:?}"),
            }
        }
        assert_eq!(won, 1, "round {round}: exactly one claim holds the pair");
        assert_invariants(app.pool()).await;
        sqlx::query("DELETE FROM holds.seat_holds WHERE event_id = $1::bigint")
            .bind(&event)
            .execute(app.pool())
            .await
            .unwrap();
    }
    app.stop().await;
}
