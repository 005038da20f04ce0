//! Contention on the claim path: many fans, few seats, requests in flight together.

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
        assert_eq!(reason(refused, Code::AlreadyExists), "SEAT_TAKEN");
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
        .filter(|r| r == "SEAT_TAKEN")
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
        assert_eq!(reason(loser, Code::AlreadyExists), "SEAT_TAKEN");
    }
    assert_eq!(active_counts(app.pool(), &event).await, (100, 0, 0));
    let totals = app.parts.service.metrics().totals();
    assert_eq!(totals.retries_40p01, 0, "no deadlock was ever retried");
    assert_invariants(app.pool()).await;
    app.stop().await;
}
