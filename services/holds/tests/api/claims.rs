//! Contention on the claim path: many fans, few seats, requests in flight together.

use stadium_kit::Reason;
use tonic::Code;

use crate::support::{EventSettings, TestApp, active_counts, assert_invariants, reason, seat_list};
use stadium_testkit::all_at_once;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_claims_of_one_seat_make_one_hold() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[0].clone();
    let seat = section.seats[45];
    let results = all_at_once(10, |i| {
        let mut fan = app.fan(&format!("fan-{i}"), &event);
        let section = section.id;
        async move { fan.claim(section, &[seat]).await }
    })
    .await;
    let held: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(held.len(), 1, "{results:?}");
    assert_eq!(held[0].seat_ids, vec![seat]);
    assert!(held[0].expires_in_ms > 590_000 && held[0].expires_in_ms <= 600_000);
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(reason(refused, Code::AlreadyExists), Reason::SeatTaken);
        assert_eq!(seat_list(refused, "taken_seat_ids"), vec![seat]);
        let alternatives = seat_list(refused, "alternative_seat_ids");
        assert_eq!(alternatives.len(), 1);
        assert_ne!(alternatives[0], seat);
        // A nearest free seat: a neighbour in the row, or the same place one row away
        // (rows of 20, one plan unit apart like the seats).
        let neighbours = [seat - 1, seat + 1, seat - 20, seat + 20];
        assert!(neighbours.contains(&alternatives[0]), "{alternatives:?}");
    }
    assert_eq!(active_counts(app.pool(), &event).await, (1, 0, 0));
    let totals = app.parts.service.metrics().totals();
    assert_eq!((totals.claimed, totals.seat_taken), (1, 9));
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_hundred_fans_for_one_hundred_seats() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[0].clone();
    assert_eq!(section.seats.len(), 100);
    let results = all_at_once(300, |i| {
        let mut fan = app.fan(&format!("fan-{i}"), &event);
        let (id, seat) = (section.id, section.seats[i % 100]);
        async move { fan.claim(id, &[seat]).await }
    })
    .await;
    let held = results.iter().filter(|r| r.is_ok()).count();
    let taken = results
        .iter()
        .filter_map(|r| r.as_ref().err())
        .map(|s| reason(s, Code::AlreadyExists))
        .filter(|r| *r == Reason::SeatTaken)
        .count();
    assert_eq!((held, taken), (100, 200));
    assert_eq!(active_counts(app.pool(), &event).await, (100, 0, 0));
    assert_eq!(app.parts.service.metrics().totals().retries_40p01, 0);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// C04 over gRPC (the store-level run in `cases` repeats it 500 times): two fans claim
/// the same two seats in opposite orders; one gets both, the other a clean SEAT_TAKEN.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn opposite_orders_over_grpc_never_split() {
    let app = TestApp::start().await;
    let settings = EventSettings {
        max_seats_per_fan: 1000,
        ..EventSettings::default()
    };
    let event = app.event(settings).await;
    let section = app.sections[0].clone();
    for round in 0..50 {
        let (a1, a2) = (section.seats[2 * round], section.seats[2 * round + 1]);
        let results = all_at_once(2, |i| {
            let mut fan = app.fan(&format!("fan-{i}"), &event);
            let seats = if i == 0 { [a2, a1] } else { [a1, a2] };
            async move { fan.claim(section.id, &seats).await }
        })
        .await;
        let winners: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        assert_eq!(winners[0].seat_ids, vec![a1, a2]);
        let loser = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert_eq!(reason(loser, Code::AlreadyExists), Reason::SeatTaken);
    }
    assert_eq!(active_counts(app.pool(), &event).await, (100, 0, 0));
    let totals = app.parts.service.metrics().totals();
    assert_eq!(totals.retries_40p01, 0, "no deadlock was ever retried");
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// A crowd reclaims lapsed holds: 20 two-seat holds lapsed a second ago, 5 live ones,
/// 5 free pairs, and 120 fans claiming those 30 pairs at once (4 per pair). Every claim
/// first meets the lapsed row in its insert, then takes the seat-by-seat path that
/// expires it. Exactly one fan gets each lapsed or free pair, the live holds stay, each
/// lapsed row is expired once, every other answer is SEAT_TAKEN, and no claim deadlocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_crowd_reclaims_lapsed_holds_once_each() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let section = app.sections[0].clone();
    let seats: Vec<i64> = section.seats[..50].iter().map(|&s| s as i64).collect();
    // Pairs 0–19 lapsed, 20–24 live, each pair one hold.
    sqlx::query(
        "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, \
             admission_jti, status, expires_at) \
         SELECT md5($1 || '-' || (n / 2))::uuid, $1::bigint, $2, ($3::bigint[])[n + 1], \
                'earlier-' || (n / 2), 'jti-earlier-' || (n / 2), 'held', \
                CASE WHEN n < 40 THEN now() - interval '1 second' \
                     ELSE now() + interval '10 minutes' END \
         FROM generate_series(0, cardinality($3::bigint[]) - 1) AS n",
    )
    .bind(&event)
    .bind(section.id as i64)
    .bind(&seats)
    .execute(app.pool())
    .await
    .unwrap();

    let results = all_at_once(120, |i| {
        let mut fan = app.fan(&format!("fan-{i}"), &event);
        let pair = i % 30;
        let (id, block) = (
            section.id,
            [section.seats[2 * pair], section.seats[2 * pair + 1]],
        );
        async move { fan.claim(id, &block).await }
    })
    .await;
    let held: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    let refused: Vec<Reason> = results
        .iter()
        .filter_map(|r| r.as_ref().err())
        .map(|s| reason(s, Code::AlreadyExists))
        .collect();
    assert_eq!(held.len(), 25, "{refused:?}");
    assert!(
        refused.iter().all(|r| *r == Reason::SeatTaken),
        "{refused:?}"
    );
    let mut pairs: Vec<u64> = held.iter().map(|h| h.seat_ids[0]).collect();
    pairs.sort_unstable();
    pairs.dedup();
    assert_eq!(pairs.len(), 25, "a pair was held twice");
    assert!(
        held.iter()
            .all(|h| h.seat_ids[0] < section.seats[40] || h.seat_ids[0] >= section.seats[50]),
        "a live hold was taken"
    );

    let (expired, live_earlier): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE status = 'expired'), \
                count(*) FILTER (WHERE status = 'held' AND fan_id LIKE 'earlier-%') \
         FROM holds.seat_holds WHERE event_id = $1::bigint",
    )
    .bind(&event)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!((expired, live_earlier), (40, 10));
    assert_eq!(active_counts(app.pool(), &event).await, (60, 0, 0));
    let totals = app.parts.service.metrics().totals();
    assert_eq!((totals.expired_lazily, totals.retries_40p01), (40, 0));
    assert_invariants(app.pool()).await;
    app.stop().await;
}
