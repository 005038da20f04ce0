//! The seat history: one row per status change of a seat, in the order the changes
//! happened, written by whichever path made the change; nothing for a claim that lost.

use std::time::Duration;

use stadium_proto::holds::v1::{
    BlockSeatsRequest, ClaimCompRequest, ConfirmHoldRequest, ExtendHoldRequest,
    ReleaseSeatsRequest, StartPaymentRequest, SweepExpiredRequest,
};
use stadium_testkit::all_at_once;
use stadium_tokens::Role;

use crate::support::{EventSettings, TestApp, assert_invariants, bearer, lapse};

/// One seat's history as `(change, actor, hold key)`, in order.
async fn history(app: &TestApp, event: &str, seat: u64) -> Vec<(String, String, String)> {
    sqlx::query_as(
        "SELECT change, actor, hold_key::text FROM holds.seat_history \
         WHERE event_id = $1::bigint AND seat_id = $2 ORDER BY history_id",
    )
    .bind(event)
    .bind(seat as i64)
    .fetch_all(app.pool())
    .await
    .unwrap()
}

fn row(change: &str, actor: &str, key: &str) -> (String, String, String) {
    (change.to_owned(), actor.to_owned(), key.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seat_through_claim_lapse_claim_book_refund_block_and_release() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    sqlx::query(
        "INSERT INTO catalog.price_categories (event_id, category_code, name, price_minor, currency) \
         VALUES ($1::bigint, 'std', 'Standard', 4500, 'EUR')",
    )
    .bind(&event)
    .execute(app.pool())
    .await
    .unwrap();
    let a = app.sections[0].clone();
    let (seat, other) = (a.seats[7], a.seats[8]);

    let mut first = app.fan("fan-1", &event);
    let lapsed = first.claim(a.id, &[seat, other]).await.unwrap();
    lapse(&app, &lapsed.hold_key).await;

    // The next claim finds the hold lapsed, marks it expired and takes the seat.
    let mut second = app.fan("fan-2", &event);
    let held = second.claim(a.id, &[seat]).await.unwrap();
    app.client()
        .extend_hold(bearer(
            ExtendHoldRequest {
                hold_key: held.hold_key.clone(),
            },
            &second.session,
        ))
        .await
        .unwrap();
    let payments = app.issuers.service("payments");
    app.client()
        .start_payment(bearer(
            StartPaymentRequest {
                hold_key: held.hold_key.clone(),
                fan_id: "fan-2".into(),
                window_ms: 60_000,
            },
            &payments,
        ))
        .await
        .unwrap();
    let confirm = ConfirmHoldRequest {
        hold_key: held.hold_key.clone(),
        fan_id: "fan-2".into(),
    };
    // Confirmed, then released by payments after its refund; each retried once, which
    // changes nothing, so records nothing.
    let release = ReleaseSeatsRequest {
        hold_key: held.hold_key.clone(),
        reason: "refund".into(),
    };
    for _ in 0..2 {
        app.client()
            .confirm_hold(bearer(confirm.clone(), &payments))
            .await
            .unwrap();
    }
    for _ in 0..2 {
        app.client()
            .release_seats(bearer(release.clone(), &payments))
            .await
            .unwrap();
    }

    // Box-office staff block the seat, then give it back.
    let clerk = app.issuers.admin(&[Role::BoxOffice]);
    let block = app
        .client()
        .block_seats(bearer(
            BlockSeatsRequest {
                event_id: event.clone(),
                section_id: a.id,
                seat_ids: vec![seat],
                reason: "camera".into(),
            },
            &clerk,
        ))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    app.client()
        .release_seats(bearer(
            ReleaseSeatsRequest {
                hold_key: block.hold_key.clone(),
                reason: "camera moved".into(),
            },
            &clerk,
        ))
        .await
        .unwrap();

    let clerk_sub = "staff-1";
    assert_eq!(
        history(&app, &event, seat).await,
        vec![
            row("claimed", "fan-1", &lapsed.hold_key),
            row("expired", "system", &lapsed.hold_key),
            row("claimed", "fan-2", &held.hold_key),
            row("extended", "fan-2", &held.hold_key),
            row("payment_started", "fan-2", &held.hold_key),
            row("booked", "fan-2", &held.hold_key),
            row("refunded", "payments", &held.hold_key),
            row("blocked", clerk_sub, &block.hold_key),
            row("released", clerk_sub, &block.hold_key),
        ]
    );
    // The other seat of the lapsed hold: a claim expires only the seats it takes, so
    // that one is marked expired by the sweeper.
    assert_eq!(
        history(&app, &event, other).await,
        vec![row("claimed", "fan-1", &lapsed.hold_key)]
    );
    app.client()
        .sweep_expired(bearer(
            SweepExpiredRequest { batch_size: 10 },
            &app.issuers.admin(&[Role::Sre]),
        ))
        .await
        .unwrap();
    assert_eq!(
        history(&app, &event, other).await,
        vec![
            row("claimed", "fan-1", &lapsed.hold_key),
            row("expired", "system", &lapsed.hold_key),
        ]
    );
    // An expiry is dated when the hold lapsed; every other change when it was made.
    let dated_at_expiry: bool = sqlx::query_scalar(
        "SELECT h.at = s.expires_at FROM holds.seat_history h \
         JOIN holds.seat_holds s ON s.hold_key = h.hold_key AND s.seat_id = h.seat_id \
         WHERE h.change = 'expired' AND h.seat_id = $1",
    )
    .bind(seat as i64)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert!(dated_at_expiry);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comp_and_its_void_are_recorded() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let a = app.sections[0].clone();
    let clerk = app.issuers.admin(&[Role::BoxOffice]);
    let comp = app
        .client()
        .claim_comp(bearer(
            ClaimCompRequest {
                event_id: event.clone(),
                section_id: a.id,
                seat_ids: vec![a.seats[20]],
                recipient: "band".into(),
            },
            &clerk,
        ))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    app.client()
        .release_seats(bearer(
            ReleaseSeatsRequest {
                hold_key: comp.hold_key.clone(),
                reason: "comp cancelled".into(),
            },
            &app.issuers.service("payments"),
        ))
        .await
        .unwrap();
    assert_eq!(
        history(&app, &event, a.seats[20]).await,
        vec![
            row("comped", "staff-1", &comp.hold_key),
            row("voided", "payments", &comp.hold_key),
        ]
    );

    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_claims_that_won_are_recorded() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let a = app.sections[0].clone();
    let wanted = [a.seats[40], a.seats[41], a.seats[42]];
    // 30 fans claim overlapping pairs of the same three seats at once.
    let outcomes = all_at_once(30, |i| {
        let mut fan = app.fan(&format!("racer-{i}"), &event);
        let pair = [wanted[i % 3], wanted[(i + 1) % 3]];
        let section = a.id;
        async move { fan.claim(section, &pair).await }
    })
    .await;
    let won: Vec<_> = outcomes.into_iter().filter_map(Result::ok).collect();
    assert!(!won.is_empty());
    let (rows, claimed_seats): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM holds.seat_history WHERE event_id = $1::bigint), \
                (SELECT count(*) FROM holds.seat_holds WHERE event_id = $1::bigint)",
    )
    .bind(&event)
    .fetch_one(app.pool())
    .await
    .unwrap();
    let won_seats: usize = won.iter().map(|h| h.seat_ids.len()).sum();
    assert_eq!(claimed_seats as usize, won_seats);
    assert_eq!(rows as usize, won_seats, "one 'claimed' row per seat won");
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweeper_trims_the_history_past_its_retention() {
    let app = TestApp::start_with(
        &[
            "--sweep-interval-ms",
            "20",
            "--seat-history-retention-days",
            "30",
        ],
        None,
    )
    .await;
    let event = app.event(EventSettings::default()).await;
    let a = app.sections[0].clone();
    let mut fan = app.fan("fan-1", &event);
    fan.claim(a.id, &[a.seats[50], a.seats[51]]).await.unwrap();
    // Age one of the two rows past the retention.
    sqlx::query(
        "UPDATE holds.seat_history SET at = now() - interval '31 days' \
         WHERE event_id = $1::bigint AND seat_id = $2",
    )
    .bind(&event)
    .bind(a.seats[50] as i64)
    .execute(app.pool())
    .await
    .unwrap();
    // Poll for the outcome; the deadline only turns a hang into a failure.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let left: Vec<i64> = sqlx::query_scalar(
            "SELECT seat_id FROM holds.seat_history WHERE event_id = $1::bigint ORDER BY seat_id",
        )
        .bind(&event)
        .fetch_all(app.pool())
        .await
        .unwrap();
        if left == [a.seats[51] as i64] {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the old row was never trimmed: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    app.stop().await;
}
