//! The hold around its payment: StartPayment's window (once, before any charge, with
//! the price fixed at the claim), ExtendHold's absolute cap, and what each refuses at
//! its boundaries. Boundaries are set on the stored rows (created_at, expires_at), so
//! nothing here waits on the clock.

use stadium_kit::Reason;
use stadium_proto::holds::v1::{
    ConfirmHoldRequest, ExtendHoldRequest, Hold, HoldStatus, StartPaymentRequest,
    StartPaymentResponse,
};
use stadium_testkit::all_at_once;
use stadium_tokens::Role;
use tonic::{Code, Status};

use crate::support::{EventSettings, TestApp, assert_invariants, bearer, reason};

const WINDOW_MS: u64 = 60_000;

async fn price(app: &TestApp, event: &str, minor: i64) {
    sqlx::query(
        "INSERT INTO catalog.price_categories (event_id, category_code, name, price_minor, currency) \
         VALUES ($1::bigint, 'std', 'Standard', $2, 'EUR') \
         ON CONFLICT (event_id, category_code) DO UPDATE SET price_minor = EXCLUDED.price_minor",
    )
    .bind(event)
    .bind(minor)
    .execute(app.pool())
    .await
    .unwrap();
}

async fn start(
    app: &TestApp,
    key: &str,
    fan: &str,
    window_ms: u64,
) -> Result<StartPaymentResponse, Status> {
    let request = StartPaymentRequest {
        hold_key: key.to_owned(),
        fan_id: fan.to_owned(),
        window_ms,
    };
    app.client()
        .start_payment(bearer(request, &app.issuers.service("payments")))
        .await
        .map(|r| r.into_inner())
}

async fn extend(app: &TestApp, key: &str, session: &str) -> Result<Hold, Status> {
    app.client()
        .extend_hold(bearer(
            ExtendHoldRequest {
                hold_key: key.to_owned(),
            },
            session,
        ))
        .await
        .map(|r| r.into_inner().hold.expect("a hold"))
}

/// Moves the stored hold: created `age_ms` ago, expiring in `left_ms` (negative: lapsed).
async fn set_times(app: &TestApp, key: &str, age_ms: i64, left_ms: i64) {
    sqlx::query(
        "UPDATE holds.seat_holds SET created_at = now() - $2 * interval '1 millisecond', \
             expires_at = now() + $3 * interval '1 millisecond' WHERE hold_key = $1::uuid",
    )
    .bind(key)
    .bind(age_ms)
    .bind(left_ms)
    .execute(app.pool())
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_payment_keeps_the_hold_for_its_window_at_the_claimed_price() {
    let app = TestApp::start().await;
    let event = app
        .event(EventSettings {
            hold_ttl_ms: 5_000,
            ..EventSettings::default()
        })
        .await;
    price(&app, &event, 4_500).await;
    let a = app.sections[0].clone();
    let mut fan = app.fan("fan-1", &event);
    let held = fan.claim(a.id, &[a.seats[3], a.seats[4]]).await.unwrap();
    // A price change after the claim does not change what the fan pays.
    price(&app, &event, 9_999).await;

    let started = start(&app, &held.hold_key, "fan-1", WINDOW_MS)
        .await
        .unwrap();
    assert_eq!(
        (started.total_minor, started.currency.as_str()),
        (9_000, "EUR")
    );
    let hold = started.hold.unwrap();
    assert_eq!(hold.status(), HoldStatus::Held);
    assert!(hold.expires_in_ms > WINDOW_MS - 5_000, "{hold:?}");

    // Once: a retried start answers the same window, it does not push it further.
    let again = start(&app, &held.hold_key, "fan-1", WINDOW_MS)
        .await
        .unwrap();
    assert!(again.hold.unwrap().expires_in_ms <= hold.expires_in_ms);
    let started_at: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT payment_started_at) FROM holds.seat_holds WHERE hold_key = $1::uuid",
    )
    .bind(&held.hold_key)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(started_at, 1);

    // The fan can neither release nor extend a hold being paid for.
    let release = app.release(&held.hold_key, &fan.session).await.unwrap_err();
    assert_eq!(
        reason(&release, Code::FailedPrecondition),
        Reason::PaymentStarted
    );
    let extended = extend(&app, &held.hold_key, &fan.session)
        .await
        .unwrap_err();
    assert_eq!(
        reason(&extended, Code::FailedPrecondition),
        Reason::PaymentStarted
    );

    // Past the hold's own TTL the window still holds it, and it books.
    set_times(&app, &held.hold_key, 10_000, 1_000).await;
    let booked = app
        .client()
        .confirm_hold(bearer(
            ConfirmHoldRequest {
                hold_key: held.hold_key.clone(),
                fan_id: "fan-1".into(),
            },
            &app.issuers.service("payments"),
        ))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    assert_eq!(booked.status(), HoldStatus::Booked);
    assert_eq!(booked.seat_ids, held.seat_ids);
    let after = start(&app, &held.hold_key, "fan-1", WINDOW_MS)
        .await
        .unwrap_err();
    assert_eq!(reason(&after, Code::FailedPrecondition), Reason::HoldBooked);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_payment_refuses_at_its_boundaries_and_changes_nothing() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let a = app.sections[0].clone();
    let mut fan = app.fan("fan-1", &event);
    let held = fan.claim(a.id, &[a.seats[0]]).await.unwrap();

    // No price for the seat's category: refused, nothing started.
    let missing = start(&app, &held.hold_key, "fan-1", WINDOW_MS)
        .await
        .unwrap_err();
    assert_eq!(
        reason(&missing, Code::FailedPrecondition),
        Reason::PriceMissing
    );

    for window in [0, 999, 900_001] {
        let bad = start(&app, &held.hold_key, "fan-1", window)
            .await
            .unwrap_err();
        assert_eq!(reason(&bad, Code::InvalidArgument), Reason::InvalidField);
    }
    let other = start(&app, &held.hold_key, "fan-2", WINDOW_MS)
        .await
        .unwrap_err();
    assert_eq!(reason(&other, Code::NotFound), Reason::HoldNotFound);
    let as_fan = app
        .client()
        .start_payment(bearer(
            StartPaymentRequest {
                hold_key: held.hold_key.clone(),
                fan_id: "fan-1".into(),
                window_ms: WINDOW_MS,
            },
            &fan.session,
        ))
        .await
        .unwrap_err();
    assert_eq!(as_fan.code(), Code::Unauthenticated);
    let box_office = app
        .client()
        .start_payment(bearer(
            StartPaymentRequest {
                hold_key: held.hold_key.clone(),
                fan_id: "fan-1".into(),
                window_ms: WINDOW_MS,
            },
            &app.issuers.admin(&[Role::BoxOffice]),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        reason(&box_office, Code::PermissionDenied),
        Reason::RoleRequired
    );
    let unstarted: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds WHERE payment_started_at IS NULL",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(unstarted, 1);

    // At the expiry boundary (expires_at <= now by the database clock): too late.
    set_times(&app, &held.hold_key, 700_000, 0).await;
    let lapsed = start(&app, &held.hold_key, "fan-1", WINDOW_MS)
        .await
        .unwrap_err();
    assert_eq!(
        reason(&lapsed, Code::FailedPrecondition),
        Reason::HoldExpired
    );

    // A released hold has nothing to pay for.
    let mut second = app.fan("fan-3", &event);
    let released = second.claim(a.id, &[a.seats[1]]).await.unwrap();
    app.release(&released.hold_key, &second.session)
        .await
        .unwrap();
    let gone = start(&app, &released.hold_key, "fan-3", WINDOW_MS)
        .await
        .unwrap_err();
    assert_eq!(
        reason(&gone, Code::FailedPrecondition),
        Reason::HoldReleased
    );
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extension_stops_at_the_absolute_lifetime() {
    let app = TestApp::start().await;
    let event = app
        .event(EventSettings {
            hold_ttl_ms: 1_000,
            ..EventSettings::default()
        })
        .await;
    sqlx::query(
        "UPDATE catalog.events SET max_hold_lifetime_ms = 2500 WHERE event_id = $1::bigint",
    )
    .bind(&event)
    .execute(app.pool())
    .await
    .unwrap();
    let a = app.sections[0].clone();
    let mut fan = app.fan("fan-1", &event);
    let held = fan.claim(a.id, &[a.seats[5], a.seats[6]]).await.unwrap();

    // Young hold: extended by the TTL from now.
    let extended = extend(&app, &held.hold_key, &fan.session).await.unwrap();
    assert!(extended.expires_in_ms <= 1_000 && extended.expires_in_ms > 0);
    assert_eq!(extended.status(), HoldStatus::Held);

    // 2 s old with 100 ms left: only up to the cap (created + 2.5 s), i.e. ~500 ms.
    set_times(&app, &held.hold_key, 2_000, 100).await;
    let capped = extend(&app, &held.hold_key, &fan.session).await.unwrap();
    assert!(
        capped.expires_in_ms > 100 && capped.expires_in_ms <= 500,
        "{capped:?}"
    );

    // At the cap: refused, nothing changed.
    set_times(&app, &held.hold_key, 2_400, 100).await;
    let before: i64 = sqlx::query_scalar(
        "SELECT (extract(epoch FROM max(expires_at)) * 1e6)::bigint FROM holds.seat_holds \
         WHERE hold_key = $1::uuid",
    )
    .bind(&held.hold_key)
    .fetch_one(app.pool())
    .await
    .unwrap();
    let refused = extend(&app, &held.hold_key, &fan.session)
        .await
        .unwrap_err();
    assert_eq!(
        reason(&refused, Code::FailedPrecondition),
        Reason::HoldLifetimeReached
    );
    let info = stadium_kit::status::error_info(&refused).unwrap();
    assert_eq!(info.metadata["max_hold_lifetime_ms"], "2500");
    let after: i64 = sqlx::query_scalar(
        "SELECT (extract(epoch FROM max(expires_at)) * 1e6)::bigint FROM holds.seat_holds \
         WHERE hold_key = $1::uuid",
    )
    .bind(&held.hold_key)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(before, after);

    // Another fan's hold looks absent; a lapsed hold cannot be revived.
    let other = app.fan("fan-2", &event);
    let theirs = extend(&app, &held.hold_key, &other.session)
        .await
        .unwrap_err();
    assert_eq!(reason(&theirs, Code::NotFound), Reason::HoldNotFound);
    set_times(&app, &held.hold_key, 1_000, 0).await;
    let lapsed = extend(&app, &held.hold_key, &fan.session)
        .await
        .unwrap_err();
    assert_eq!(
        reason(&lapsed, Code::FailedPrecondition),
        Reason::HoldExpired
    );
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// The cap is decided in the database on the locked rows: 32 concurrent extensions of
/// a hold near its cap never carry it past created + lifetime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_extensions_never_pass_the_cap() {
    let app = TestApp::start().await;
    let event = app
        .event(EventSettings {
            hold_ttl_ms: 60_000,
            ..EventSettings::default()
        })
        .await;
    sqlx::query(
        "UPDATE catalog.events SET max_hold_lifetime_ms = 120000 WHERE event_id = $1::bigint",
    )
    .bind(&event)
    .execute(app.pool())
    .await
    .unwrap();
    let a = app.sections[0].clone();
    let mut fan = app.fan("fan-1", &event);
    let held = fan
        .claim(a.id, &[a.seats[7], a.seats[8], a.seats[9]])
        .await
        .unwrap();
    set_times(&app, &held.hold_key, 90_000, 1_000).await;
    let channel = app.channel.clone();
    let session = fan.session.clone();
    let key = held.hold_key.clone();
    let results = all_at_once(32, move |_| {
        let mut client = stadium_proto::holds::v1::holds_client::HoldsClient::new(channel.clone());
        let request = bearer(
            ExtendHoldRequest {
                hold_key: key.clone(),
            },
            &session,
        );
        async move { client.extend_hold(request).await }
    })
    .await;
    for result in &results {
        if let Err(status) = result {
            assert_eq!(
                reason(status, Code::FailedPrecondition),
                Reason::HoldLifetimeReached
            );
        }
    }
    assert!(results.iter().any(Result::is_ok));
    let (lifetime_ms, expiries): (f64, i64) = sqlx::query_as(
        "SELECT extract(epoch FROM max(expires_at - created_at))::float8 * 1000, \
                count(DISTINCT expires_at) \
         FROM holds.seat_holds WHERE hold_key = $1::uuid",
    )
    .bind(&held.hold_key)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert!(
        lifetime_ms <= 120_000.0 + 0.001,
        "lifetime {lifetime_ms} ms"
    );
    assert_eq!(expiries, 1, "every seat of the hold shares one expiry");
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// ReleaseHold and StartPayment fired at once on the same hold, fifty times: exactly one
/// wins, the other is refused with the reason the winner leaves behind, and the stored
/// rows of the hold agree with the winner (all released and never in payment, or all
/// held and in payment). Release locks the rows, then reads them, then decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn release_and_start_payment_racing_leave_one_outcome_on_every_row() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    price(&app, &event, 2_500).await;
    let a = app.sections[0].clone();
    for round in 0..50 {
        let name = format!("racer-{round}");
        let mut fan = app.fan(&name, &event);
        let seats = [a.seats[2 * round], a.seats[2 * round + 1]];
        let key = fan.claim(a.id, &seats).await.unwrap().hold_key;
        let service = app.issuers.service("payments");
        let results = all_at_once(2, |i| {
            let mut client = app.client();
            let (key, name, session, service) = (
                key.clone(),
                name.clone(),
                fan.session.clone(),
                service.clone(),
            );
            async move {
                if i == 0 {
                    let request = stadium_proto::holds::v1::ReleaseHoldRequest { hold_key: key };
                    client
                        .release_hold(bearer(request, &session))
                        .await
                        .map(drop)
                } else {
                    let request = StartPaymentRequest {
                        hold_key: key,
                        fan_id: name,
                        window_ms: WINDOW_MS,
                    };
                    client
                        .start_payment(bearer(request, &service))
                        .await
                        .map(drop)
                }
            }
        })
        .await;
        let (released, started) = (&results[0], &results[1]);
        let (status, in_payment): (Vec<String>, Vec<bool>) = sqlx::query_as::<_, (String, bool)>(
            "SELECT status, payment_started_at IS NOT NULL FROM holds.seat_holds \
             WHERE hold_key = $1::uuid ORDER BY seat_id",
        )
        .bind(&key)
        .fetch_all(app.pool())
        .await
        .unwrap()
        .into_iter()
        .unzip();
        match (released, started) {
            (Ok(()), Err(refused)) => {
                assert_eq!(
                    reason(refused, Code::FailedPrecondition),
                    Reason::HoldReleased
                );
                assert_eq!(status, ["released", "released"], "round {round}");
                assert_eq!(in_payment, [false, false], "round {round}");
            }
            (Err(refused), Ok(())) => {
                assert_eq!(
                    reason(refused, Code::FailedPrecondition),
                    Reason::PaymentStarted
                );
                assert_eq!(status, ["held", "held"], "round {round}");
                assert_eq!(in_payment, [true, true], "round {round}");
            }
            other => panic!("round {round}: not exactly one winner: {other:?}"),
        }
    }
    assert_invariants(app.pool()).await;
    app.stop().await;
}
