//! The per-fan limits with sections on two databases: one hold per admission and the
//! seats per fan are counted on both under concurrent claims (each database alone would
//! let a fan past them), a claim refused for them is withdrawn whole (its retry is
//! claimed anew), a claim whose caller goes away is checked all the same, a database
//! that is down is left out of the count rather than stopping every claim, and one
//! that is up but slow makes the claim retry rather than pass uncounted.

use std::time::Duration;

use stadium_kit::Reason;
use stadium_testkit::all_at_once;
use stadium_testkit::grpc::metadata;
use tonic::Code;

use crate::request_ids;
use crate::returns;
use crate::shards::{sharded, sharded_with};
use crate::support::{EventSettings, Fan, TestApp, assert_invariants, reason};

/// The live holds of `fan` of `event` on every one of `pools`: hold key and seats,
/// sorted by key.
pub(crate) async fn live_holds(
    pools: &[&sqlx::PgPool],
    event: &str,
    fan: &str,
) -> Vec<(String, i64)> {
    let mut live = Vec::new();
    for pool in pools {
        let rows: Vec<(String, i64)> = sqlx::query_as(
            "SELECT hold_key::text, count(*) FROM holds.seat_holds \
             WHERE event_id = $1::bigint AND fan_id = $2 AND status = 'held' \
               AND expires_at > now() GROUP BY hold_key",
        )
        .bind(event)
        .bind(fan)
        .fetch_all(*pool)
        .await
        .unwrap();
        live.extend(rows);
    }
    live.sort();
    live
}

/// `n` claims at once by `fans[i % fans.len()]`, of one seat each (`seats` of them),
/// alternating between section A on the main database and section B on `east`.
async fn claims_on_both(
    app: &TestApp,
    fans: &[Fan],
    n: usize,
    seats: usize,
) -> Vec<Result<stadium_proto::holds::v1::Hold, tonic::Status>> {
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());
    all_at_once(n, |i| {
        let fan = &fans[i % fans.len()];
        let mut fan = Fan {
            name: fan.name.clone(),
            session: fan.session.clone(),
            admission: fan.admission.clone(),
            event: fan.event.clone(),
            client: fan.client.clone(),
        };
        let section = if i % 2 == 0 { &a } else { &b };
        let picked = section.seats[i * seats..(i + 1) * seats].to_vec();
        let id = section.id;
        async move { fan.claim(id, &picked).await }
    })
    .await
}

/// The holds the answers gave, sorted by key, after checking that every refusal is
/// `LIMIT_EXCEEDED` for `limit` (or `UNAVAILABLE`, to be retried).
pub(crate) fn answered(
    answers: &[Result<stadium_proto::holds::v1::Hold, tonic::Status>],
    limit: &str,
) -> Vec<(String, i64)> {
    let mut held = Vec::new();
    for answer in answers {
        match answer {
            Ok(hold) => held.push((hold.hold_key.clone(), hold.seat_ids.len() as i64)),
            // A database slow to give its count on a loaded machine: retryable, and the
            // hold was withdrawn (the rows say so below).
            Err(status) if status.code() == Code::Unavailable => {}
            Err(status) => {
                assert_eq!(
                    reason(status, Code::ResourceExhausted),
                    Reason::LimitExceeded
                );
                assert_eq!(
                    metadata(status, "limit").as_deref(),
                    Some(limit),
                    "{status:?}"
                );
            }
        }
    }
    held.sort();
    held
}

/// One admission, sixteen claims at once on two databases: the one-hold-per-admission
/// rule holds across them (each database alone would let one through), every other
/// claim is refused naming the limit, and the answers match the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_admission_keeps_one_hold_across_shards_under_concurrent_claims() {
    let (app, east, event) = sharded(1).await;
    let fan = app.fan("fan-1", &event);
    let answers = claims_on_both(&app, std::slice::from_ref(&fan), 16, 1).await;
    let held = answered(&answers, "holds_per_admission");
    let live = live_holds(&[app.pool(), &east.pool], &event, "fan-1").await;
    assert!(live.len() <= 1, "{live:?}");
    assert_eq!(held, live);
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}

/// A fan with eight admissions claims two seats with each, all at once, half on each
/// database, with four seats allowed per fan: at most four stay held (each database
/// alone would allow four), the rest are refused naming `seats_per_fan`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_seats_per_fan_limit_counts_every_shard_under_concurrent_claims() {
    let settings = EventSettings {
        max_seats_per_claim: 2,
        max_seats_per_fan: 4,
        ..EventSettings::default()
    };
    let (app, east, event) = sharded_with(1, settings).await;
    let fans: Vec<Fan> = (0..8).map(|_| app.fan("fan-1", &event)).collect();
    let answers = claims_on_both(&app, &fans, 8, 2).await;
    let held = answered(&answers, "seats_per_fan");
    let live = live_holds(&[app.pool(), &east.pool], &event, "fan-1").await;
    let seats: i64 = live.iter().map(|(_, n)| n).sum();
    assert!(seats <= 4, "{live:?}");
    assert_eq!(held, live);
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}

/// Ten fans in line for section B (on the shard) each claim a pair of section A (on the
/// main database) by hand while a server serves the line, all at once. The line's claim
/// and the fan's run on two databases, whose locks cannot see each other: still no fan
/// ends with two live holds, and no fan holding seats stays in the line.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fans_claiming_on_another_database_while_served_keep_one_hold() {
    let (app, east, event) = sharded(1).await;
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());
    let holders = returns::fill_the_house(&app, &event).await;
    let mut fans = Vec::new();
    for i in 0..10_u64 {
        let mut fan = app.fan(&format!("waiter-{i}"), &event);
        let answer = returns::ask(&mut fan, b.id, &format!("req-{i}"))
            .await
            .unwrap();
        assert_eq!(returns::position(&answer), i + 1);
        fans.push(fan);
    }
    // The box office gives back the first twenty seats of A; B's holds lapse.
    sqlx::query(
        "UPDATE holds.seat_holds SET status = 'released' \
         WHERE event_id = $1::bigint AND section_id = $2 AND seat_id = ANY($3::bigint[])",
    )
    .bind(&event)
    .bind(i64::try_from(a.id).unwrap())
    .bind(a.seats[..20].iter().map(|s| *s as i64).collect::<Vec<_>>())
    .execute(app.pool())
    .await
    .unwrap();
    returns::lapse(&east.pool, &holders).await;

    let pairs: Vec<Vec<u64>> = a.seats[..20].chunks(2).map(<[u64]>::to_vec).collect();
    let fans = returns::claim_by_hand_while_served(&app, fans, a.id, pairs).await;
    for mut fan in fans {
        let live = live_holds(&[app.pool(), &east.pool], &event, &fan.name).await;
        assert!(live.len() <= 1, "{}: {live:?}", fan.name);
        let listed = returns::holds_of(&mut fan).await;
        let in_line: i64 =
            sqlx::query_scalar("SELECT count(*) FROM holds.return_queue WHERE fan_id = $1")
                .bind(&fan.name)
                .fetch_one(app.pool())
                .await
                .unwrap();
        assert!(
            live.is_empty() || in_line == 0,
            "{} holds {live:?} and is still in line ({listed:?})",
            fan.name
        );
    }
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}

/// Whether connections to the database `name` are allowed; refusing them also ends the
/// open ones (a database down, as far as its clients can tell).
async fn allow_connections(app: &TestApp, name: &str, allowed: bool) {
    sqlx::query(&format!(
        "ALTER DATABASE \"{name}\" ALLOW_CONNECTIONS {allowed}"
    ))
    .execute(app.pool())
    .await
    .unwrap();
    if !allowed {
        sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
            .bind(name)
            .execute(app.pool())
            .await
            .unwrap();
    }
}

/// A shard that cannot be reached does not stop claims of sections elsewhere, though
/// the per-fan limits read every database: it is left out of the count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_down_does_not_stop_claims_elsewhere() {
    let (app, east, event) = sharded(1).await;
    let a = app.sections[0].clone();
    allow_connections(&app, &east.name, false).await;
    let mut fan = app.fan("fan-1", &event);
    let held = fan.claim(a.id, &a.seats[..2]).await;
    allow_connections(&app, &east.name, true).await;
    let held = held.expect("a claim on the main database while the shard is down");
    let live = live_holds(&[app.pool(), &east.pool], &event, "fan-1").await;
    assert_eq!(live, [(held.hold_key, 2)]);
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}

/// Four seats allowed per fan, and the fan holds four on the main database.
pub(crate) async fn a_fan_at_the_limit() -> (TestApp, stadium_testkit::TestDatabase, String, String)
{
    let settings = EventSettings {
        max_seats_per_claim: 4,
        max_seats_per_fan: 4,
        ..EventSettings::default()
    };
    let (app, east, event) = sharded_with(1, settings).await;
    let a = app.sections[0].clone();
    let mut fan = app.fan("fan-1", &event);
    let first = fan.claim(a.id, &a.seats[..4]).await.unwrap();
    (app, east, event, first.hold_key)
}

/// A claim on the shard that the count across databases refuses is withdrawn whole:
/// its retry with the same request id is refused again while the fan is at the limit
/// (not answered with the hold that was taken back), and holds once the fan is within
/// it; the seat history keeps the withdrawn attempts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_refused_across_shards_is_claimed_anew_by_its_retry() {
    let (app, east, event, first) = a_fan_at_the_limit().await;
    let b = app.sections[1].clone();
    for _ in 0..2 {
        let retry = request_ids::claim(&app, &event, "fan-1", b.id, &b.seats[..2], "try-1");
        let refused = retry.await.expect_err("past the seats per fan");
        assert_eq!(
            reason(&refused, Code::ResourceExhausted),
            Reason::LimitExceeded
        );
        assert_eq!(
            metadata(&refused, "limit").as_deref(),
            Some("seats_per_fan")
        );
    }
    let pools = [app.pool(), &east.pool];
    assert_eq!(
        live_holds(&pools, &event, "fan-1").await,
        [(first.clone(), 4)]
    );
    let session = app.issuers.session("fan-1");
    app.release(&first, &session).await.unwrap();
    let retry = request_ids::claim(&app, &event, "fan-1", b.id, &b.seats[..2], "try-1");
    let held = retry
        .await
        .expect("within the limit once the first hold is released");
    assert_eq!(
        live_holds(&pools, &event, "fan-1").await,
        [(held.hold_key, 2)]
    );
    let withdrawn: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_history \
         WHERE change = 'released' AND actor = 'holds: over a per-fan limit across shards'",
    )
    .fetch_one(&east.pool)
    .await
    .unwrap();
    assert_eq!(withdrawn, 4, "two attempts of two seats");
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}

/// Claims whose callers go away mid-call are checked all the same: the fan holds its
/// four seats on the main database, and ten claims of a pair on the shard are each cut
/// off by the caller after a few milliseconds (some before, some after their commit):
/// once the service is done with them, the fan holds no more than four seats.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_whose_callers_go_away_are_checked_all_the_same() {
    let (app, east, event, first) = a_fan_at_the_limit().await;
    let b = app.sections[1].clone();
    all_at_once(10, |i| {
        let pair = &b.seats[2 * i..2 * i + 2];
        let claim = request_ids::claim(&app, &event, "fan-1", b.id, pair, &format!("cut-{i}"));
        let cut_after = Duration::from_millis(2 + 3 * i as u64);
        async move { tokio::time::timeout(cut_after, claim).await }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let pools = [app.pool(), &east.pool];
    // The service finishes each claim on its own after its caller left; a claim left
    // unchecked would keep its hold for its TTL (ten minutes).
    let mut live = live_holds(&pools, &event, "fan-1").await;
    for _ in 0..100 {
        if live.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        live = live_holds(&pools, &event, "fan-1").await;
    }
    assert_eq!(live, [(first, 4)]);
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}

/// A shard that is up but does not give its count in time is not left out: the claim
/// on the main database is withdrawn and answered `UNAVAILABLE`, to be retried, and
/// holds once the shard answers again. (The shard's hold table is locked for the
/// moment, as a long migration or a stuck session would.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_that_is_up_but_slow_makes_claims_retry_rather_than_pass_uncounted() {
    let (app, east, event) = sharded(1).await;
    let a = app.sections[0].clone();
    let mut lock = east.pool.begin().await.unwrap();
    sqlx::query("LOCK TABLE holds.seat_holds IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *lock)
        .await
        .unwrap();
    let mut fan = app.fan("fan-1", &event);
    let refused = fan.claim(a.id, &a.seats[..2]).await;
    lock.rollback().await.unwrap();
    let refused = refused.expect_err("the shard did not give its count");
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
    let pools = [app.pool(), &east.pool];
    assert!(live_holds(&pools, &event, "fan-1").await.is_empty());
    let withdrawn: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_history \
         WHERE change = 'released' AND actor = 'holds: over a per-fan limit across shards'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(withdrawn, 2, "claimed, then withdrawn uncounted");
    let held = fan
        .claim(a.id, &a.seats[..2])
        .await
        .expect("counted on both");
    assert_eq!(
        live_holds(&pools, &event, "fan-1").await,
        [(held.hold_key, 2)]
    );
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}
