//! The marks of checks across shards: a hold whose claim committed but whose check never
//! ran (its process killed in between) is checked by the sweeper once older than a
//! check takes, and withdrawn when it takes the fan past a limit; a retry of a request
//! is answered its hold once checked, told to ask again while the hold's own check may
//! still run, and checks an old unmarked hold itself.

use holds::domain::{EventId, HoldKey, SectionId};
use stadium_kit::Reason;
use stadium_testkit::grpc::metadata;
use tonic::Code;

use crate::limits_across_shards::{a_fan_at_the_limit, live_holds};
use crate::request_ids;
use crate::section_moves::moved_to_east;
use crate::support::{assert_invariants, reason};

/// A hold of `seats` of `section` for `fan` written on `pool` as a claim writes it
/// (`holds.claim`, one statement), as if the process died before its check; answers
/// its key.
async fn claim_never_checked(
    pool: &sqlx::PgPool,
    event: &str,
    fan: &str,
    section: u64,
    seats: &[u64],
) -> HoldKey {
    let key = HoldKey::generate(
        EventId::try_from(event).unwrap(),
        SectionId::try_from(section).unwrap(),
    );
    let seats: Vec<i64> = seats.iter().map(|&s| s as i64).collect();
    let outcome: String = sqlx::query_scalar(
        "SELECT outcome FROM holds.claim($1, $2::bigint, $3, $4, $5, 'admission-of-a-dead-call', \
         'fan', NULL)",
    )
    .bind(key.uuid())
    .bind(event)
    .bind(section as i64)
    .bind(&seats)
    .bind(fan)
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(outcome, "held");
    key
}

/// Makes hold `key` on `pool` look claimed `seconds` earlier.
async fn age(pool: &sqlx::PgPool, key: &str, seconds: i32) {
    sqlx::query(
        "UPDATE holds.seat_holds SET created_at = created_at - make_interval(secs => $2) \
         WHERE hold_key = $1::uuid",
    )
    .bind(key)
    .bind(f64::from(seconds))
    .execute(pool)
    .await
    .unwrap();
}

async fn marked(pool: &sqlx::PgPool, key: &str) -> bool {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM holds.hold_checks WHERE hold_key = $1::uuid)")
        .bind(key)
        .fetch_one(pool)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_whose_check_never_ran_is_checked_by_the_sweeper() {
    // The fan holds four seats on the main database, four allowed; a claim of two more
    // committed on the shard and its process died before the check.
    let (app, east, event, first) = a_fan_at_the_limit().await;
    assert!(marked(app.pool(), &first).await);
    let b = app.sections[1].clone();
    let dead = claim_never_checked(&east.pool, &event, "fan-1", b.id, &b.seats[..2]).await;
    let service = &app.parts.service;

    // Young, its own check may still be running: left alone.
    assert_eq!(service.check_unchecked_holds(100).await.unwrap(), (0, 0));
    // Older than a check takes: checked, and withdrawn as past the limit.
    age(&east.pool, &dead.to_string(), 20).await;
    assert_eq!(service.check_unchecked_holds(100).await.unwrap(), (1, 1));
    let pools = [app.pool(), &east.pool];
    assert_eq!(
        live_holds(&pools, &event, "fan-1").await,
        [(first.clone(), 4)]
    );
    assert_eq!(service.check_unchecked_holds(100).await.unwrap(), (0, 0));

    // One within the limit passes its late check and is marked.
    let session = app.issuers.session("fan-1");
    app.release(&first, &session).await.unwrap();
    let late = claim_never_checked(&east.pool, &event, "fan-1", b.id, &b.seats[2..4]).await;
    age(&east.pool, &late.to_string(), 20).await;
    assert_eq!(service.check_unchecked_holds(100).await.unwrap(), (1, 0));
    assert!(marked(&east.pool, &late.to_string()).await);
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_waits_for_its_holds_check_and_is_answered_the_hold_once_checked() {
    let (app, east, event, first) = a_fan_at_the_limit().await;
    let session = app.issuers.session("fan-1");
    app.release(&first, &session).await.unwrap();
    let b = app.sections[1].clone();
    let asked = || request_ids::claim(&app, &event, "fan-1", b.id, &b.seats[..2], "try-1");
    let held = asked().await.unwrap();
    assert!(marked(&east.pool, &held.hold_key).await);
    assert_eq!(asked().await.unwrap().hold_key, held.hold_key);

    // Unmarked and young, as while its own check runs: the retry is told to ask again,
    // naming the hold, and nothing is withdrawn.
    sqlx::query("DELETE FROM holds.hold_checks WHERE hold_key = $1::uuid")
        .bind(&held.hold_key)
        .execute(&east.pool)
        .await
        .unwrap();
    let wait = asked().await.unwrap_err();
    assert_eq!(reason(&wait, Code::Aborted), Reason::InProgress);
    assert_eq!(
        metadata(&wait, "hold_key").as_deref(),
        Some(held.hold_key.as_str())
    );
    // Unmarked and older than a check takes (its check never finished): the retry
    // checks it and is answered it.
    age(&east.pool, &held.hold_key, 20).await;
    assert_eq!(asked().await.unwrap().hold_key, held.hold_key);
    assert!(marked(&east.pool, &held.hold_key).await);
    let pools = [app.pool(), &east.pool];
    assert_eq!(
        live_holds(&pools, &event, "fan-1").await,
        [(held.hold_key.clone(), 2)]
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_section_takes_the_marks_of_its_holds_along() {
    // The fan's four seats in section A on the main database passed their check.
    let (app, east, event, first) = a_fan_at_the_limit().await;
    let a = app.sections[0].clone();
    moved_to_east(&app, &event, a.id).await;
    assert!(marked(&east.pool, &first).await);
    // So the sweeper of its new database does not take it for a hold never checked.
    age(&east.pool, &first, 20).await;
    let service = &app.parts.service;
    assert_eq!(service.check_unchecked_holds(100).await.unwrap(), (0, 0));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_check_that_cannot_count_every_database_leaves_the_hold_alone() {
    let (app, east, event, first) = a_fan_at_the_limit().await;
    let session = app.issuers.session("fan-1");
    app.release(&first, &session).await.unwrap();
    let a = app.sections[0].clone();
    let dead = claim_never_checked(app.pool(), &event, "fan-1", a.id, &a.seats[10..12]).await;
    age(app.pool(), &dead.to_string(), 20).await;

    // The shard is up but its holds cannot be read: the late check counts nothing, and
    // the hold, whose fan was answered long ago, stays for a later pass.
    let mut lock = east.pool.begin().await.unwrap();
    sqlx::query("LOCK TABLE holds.seat_holds IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *lock)
        .await
        .unwrap();
    let service = app.parts.service.clone();
    let pass = tokio::spawn(async move { service.check_unchecked_holds(100).await });
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    lock.rollback().await.unwrap();
    assert_eq!(pass.await.unwrap().unwrap(), (0, 0));
    let pools = [app.pool(), &east.pool];
    assert_eq!(
        live_holds(&pools, &event, "fan-1").await,
        [(dead.to_string(), 2)]
    );
    // Once it can count: checked, within the limit, marked.
    let service = &app.parts.service;
    assert_eq!(service.check_unchecked_holds(100).await.unwrap(), (1, 0));
    assert!(marked(app.pool(), &dead.to_string()).await);
    app.stop().await;
}
