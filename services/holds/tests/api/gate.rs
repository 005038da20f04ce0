//! The fans' claims gate: fans' claims — batched, best available, or run alone after
//! finding a seat busy — never take the connections kept for the payment step, and a
//! claim that finds no room within the claim wait is answered
//! `RESOURCE_EXHAUSTED`/`OVERLOADED` with `retry_after_ms`, having written nothing.

use std::time::Duration;

use stadium_kit::Reason;
use stadium_proto::holds::v1::claim_best_available_request::Target;
use stadium_proto::holds::v1::{
    ClaimBestAvailableRequest, ConfirmHoldRequest, Hold, HoldStatus, StartPaymentRequest,
};
use tokio::task::JoinSet;
use tonic::{Code, Status};

use crate::returns::{ask, fill_the_house, holds_of, lapse, position, queued};
use crate::support::{
    EventSettings, Fan, Section, TestApp, active_counts, assert_invariants, bearer,
};

/// Connections of the service's pool: 1 batch, 4 kept for the payment step, 2 at the
/// claims gate.
const POOL: &str = "7";
/// Connections fans' claims may hold at most: the batch and the gate.
const CLAIMS_AT_MOST: i64 = 3;
const WAIT_MS: &str = "300";

async fn best_pair(mut fan: Fan, section: u64) -> Result<Hold, Status> {
    let request = ClaimBestAvailableRequest {
        admission_token: fan.admission.clone(),
        event_id: fan.event.clone(),
        target: Some(Target::SectionId(section)),
        quantity: 2,
        together: true,
        ..ClaimBestAvailableRequest::default()
    };
    fan.client
        .claim_best_available(bearer(request, &fan.session))
        .await
        .map(|r| r.into_inner().hold.expect("a hold"))
}

/// Holds on a pool of [`POOL`] connections, one claim batch, a claim wait of
/// [`WAIT_MS`], and `more` flags.
async fn small_pool(more: &[&str]) -> TestApp {
    let mut flags = vec![
        "--database-max-connections",
        POOL,
        "--claim-batches",
        "1",
        "--claim-wait-ms",
        WAIT_MS,
    ];
    flags.extend_from_slice(more);
    TestApp::start_with(&flags, None).await
}

/// A transaction holding the advisory locks of `seats` of `event`, as a claim in flight
/// holds them, until it ends.
async fn lock_seats(
    pool: &sqlx::PgPool,
    event: &str,
    seats: &[u64],
) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut in_flight = pool.begin().await.unwrap();
    let seats: Vec<i64> = seats.iter().map(|&s| s as i64).collect();
    sqlx::query(
        "SELECT pg_advisory_xact_lock(hashint8($1::bigint), hashint8(s)) \
         FROM unnest($2::bigint[]) AS s",
    )
    .bind(event)
    .bind(&seats)
    .execute(&mut *in_flight)
    .await
    .unwrap();
    in_flight
}

/// Twelve fans of `event` claiming pairs of `section` at once: half by best
/// available, half the seats themselves.
fn twelve_claims(app: &TestApp, event: &str, section: &Section) -> JoinSet<Result<Hold, Status>> {
    let mut claims = JoinSet::new();
    for i in 0..12 {
        let fan = app.fan(&format!("fan-{i}"), event);
        if i % 2 == 0 {
            claims.spawn(best_pair(fan, section.id));
        } else {
            let (id, pair) = (section.id, [section.seats[i - 1], section.seats[i]]);
            claims.spawn(async move {
                let mut fan = fan;
                fan.claim(id, &pair).await
            });
        }
    }
    claims
}

/// Backends of the test's database waiting for a lock: claims stuck behind the
/// transaction that holds every seat of the section.
async fn waiting_on_locks(app: &TestApp) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity \
         WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap()
}

/// Section `section`'s claims shed and refused for another reason, as this test's
/// holds process wrote them to `holds.section_load` (about every 100 ms).
async fn shed_and_refused(app: &TestApp, event: &str, section: u64) -> (i64, i64) {
    sqlx::query_as(
        "SELECT coalesce(sum(shed), 0)::bigint, coalesce(sum(refused), 0)::bigint \
           FROM holds.section_load WHERE event_id = $1::bigint AND section_id = $2",
    )
    .bind(event)
    .bind(i64::try_from(section).unwrap())
    .fetch_one(app.pool())
    .await
    .unwrap()
}

/// Every seat of section B is locked by another transaction (as claims in flight
/// would lock them), and 12 fans claim there at once, half by best available, half the
/// seats themselves: the claims that get a connection wait on the locks, the others are
/// shed within the claim wait. Meanwhile a fan who holds seats in A starts paying and
/// books: the payment step still has its connections. Once the locks go, the claims
/// that got in settle, and the shed ones wrote nothing. The SRE's section load counts
/// the shed claims as shed, not as refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_past_the_gate_are_shed_and_the_payment_step_keeps_its_connections() {
    let app = small_pool(&["--section-load-interval-ms", "100"]).await;
    let event = app.event(EventSettings::default()).await;
    sqlx::query(
        "INSERT INTO catalog.price_categories (event_id, category_code, name, price_minor, currency) \
         VALUES ($1::bigint, 'std', 'Standard', 2500, 'EUR') \
         ON CONFLICT (event_id, category_code) DO UPDATE SET price_minor = EXCLUDED.price_minor",
    )
    .bind(&event)
    .execute(app.pool())
    .await
    .unwrap();
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());
    let payer = app
        .fan("payer", &event)
        .claim(a.id, &[a.seats[0], a.seats[1]])
        .await
        .unwrap();

    let in_flight = lock_seats(app.pool(), &event, &b.seats).await;
    let mut claims = twelve_claims(&app, &event, &b);

    // Every claim either answers (shed) or waits on the locks; none answers otherwise
    // while they are held.
    let mut shed = Vec::new();
    let stuck = loop {
        let waiting = waiting_on_locks(&app).await;
        assert!(
            waiting <= CLAIMS_AT_MOST,
            "{waiting} claims hold connections"
        );
        if waiting + shed.len() as i64 == 12 {
            break waiting;
        }
        match tokio::time::timeout(Duration::from_millis(100), claims.join_next()).await {
            Ok(Some(answer)) => shed.push(answer.unwrap().unwrap_err()),
            Ok(None) => panic!("every claim answered while the seats were locked"),
            Err(_) => {}
        }
    };
    assert!(stuck >= 1, "no claim reached the database");
    // The section load writer (every 100 ms) gauges them for section B.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let gauged: Vec<_> = app
            .parts
            .service
            .metrics()
            .lock_waits_now()
            .into_iter()
            .map(|w| (w.shard, w.section_id, w.waiting))
            .collect();
        if gauged == [("main".to_owned(), i64::try_from(b.id).unwrap(), stuck)] {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "lock waits gauged {gauged:?}, {stuck} claims waiting in section {}",
            b.id
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for status in &shed {
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        assert_eq!(Reason::of(status), Some(Reason::Overloaded), "{status:?}");
        let info = stadium_kit::status::error_info(status).unwrap();
        assert_eq!(info.metadata["retry_after_ms"], WAIT_MS);
    }

    // The payment step, while the claims hold every connection they may.
    let service = app.issuers.service("payments");
    let started = app
        .client()
        .start_payment(bearer(
            StartPaymentRequest {
                hold_key: payer.hold_key.clone(),
                fan_id: "payer".into(),
                window_ms: 60_000,
            },
            &service,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(started.total_minor, 5_000);
    let booked = app
        .client()
        .confirm_hold(bearer(
            ConfirmHoldRequest {
                hold_key: payer.hold_key.clone(),
                fan_id: "payer".into(),
            },
            &service,
        ))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    assert_eq!(booked.status(), HoldStatus::Booked);
    assert_eq!(
        waiting_on_locks(&app).await,
        stuck,
        "the claims were still waiting"
    );

    in_flight.rollback().await.unwrap();
    let mut held_in_b = 0;
    while let Some(answer) = claims.join_next().await {
        match answer.unwrap() {
            Ok(hold) => {
                assert_eq!(hold.section_id, b.id);
                held_in_b += 1;
            }
            Err(status) => assert_eq!(status.code(), Code::AlreadyExists, "{status:?}"),
        }
    }
    assert!(held_in_b >= 1);
    let (held_seats, booked_seats, _) = active_counts(app.pool(), &event).await;
    assert_eq!((held_seats, booked_seats), (2 * held_in_b, 2));
    assert_invariants(app.pool()).await;
    let shed_claims = i64::try_from(shed.len()).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let counted = shed_and_refused(&app, &event, b.id).await;
        if counted.0 >= shed_claims {
            assert_eq!(counted, (shed_claims, 0));
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "section load never counted {shed_claims} shed claims: {counted:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.stop().await;
}

/// A returns pass that meets a full gate: the house is full, a fan waits in line for
/// returns, three holds lapse, and while claims of another event, stuck on seat locks,
/// fill the batch and the gate (the gate is the database's, whatever the event), the
/// sweeper's pass tries to serve the line. Its claim is shed like a fan's: nothing is
/// written, no connection beyond the gate's waits on a lock, the fan keeps its place.
/// Once the locks go, the next pass serves the fan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_returns_pass_into_a_full_gate_keeps_the_line_and_serves_it_later() {
    let app = small_pool(&[]).await;
    let event = app.event(EventSettings::default()).await;
    let b = app.sections[1].clone();
    let holders = fill_the_house(&app, &event).await;
    let mut waiter = app.fan("waiter", &event);
    assert_eq!(position(&ask(&mut waiter, b.id, "req-1").await.unwrap()), 1);
    lapse(app.pool(), &holders[..3]).await;

    let other = app.event(EventSettings::default()).await;
    let in_flight = lock_seats(app.pool(), &other, &b.seats).await;
    let mut claims = twelve_claims(&app, &other, &b);
    let mut shed = 0;
    while waiting_on_locks(&app).await + shed < 12 {
        if let Ok(Some(answer)) =
            tokio::time::timeout(Duration::from_millis(100), claims.join_next()).await
        {
            let status = answer.unwrap().unwrap_err();
            assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
            shed += 1;
        }
    }
    let stuck = waiting_on_locks(&app).await;
    assert!(stuck >= 1, "no claim reached the database");

    let pass = app.parts.service.serve_returns(100).await.unwrap();
    assert_eq!((pass.served, pass.refused), (0, 0), "{pass:?}");
    assert_eq!(
        waiting_on_locks(&app).await,
        stuck,
        "the pass's claim passed the gate"
    );
    assert_eq!(queued(&app).await, 1);
    assert!(holds_of(&mut waiter).await.is_empty());

    in_flight.rollback().await.unwrap();
    while let Some(answer) = claims.join_next().await {
        if let Err(status) = answer.unwrap() {
            assert_eq!(status.code(), Code::AlreadyExists, "{status:?}");
        }
    }
    let pass = app.parts.service.serve_returns(100).await.unwrap();
    assert_eq!(pass.served, 1, "{pass:?}");
    assert_eq!(queued(&app).await, 0);
    let held = holds_of(&mut waiter).await;
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].seat_ids.len(), 2);
    assert_invariants(app.pool()).await;
    app.stop().await;
}
