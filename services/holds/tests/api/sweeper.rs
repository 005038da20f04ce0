//! The sweeper only tidies: in the background until shutdown, and harmlessly when
//! several run at once.

use std::time::Duration;

use holds::domain::{EventId, HoldKey, SectionId};

use crate::support::{EventSettings, TestApp, assert_invariants};
use stadium_testkit::all_at_once;

/// Inserts `n` lapsed `held` rows of distinct seats for `event` (as abandoned claims
/// leave them), one hold key per 4 seats.
async fn lapsed_rows(app: &TestApp, event: &str, n: usize) {
    let section = &app.sections[0];
    for chunk in section.seats[..n].chunks(4) {
        let key = HoldKey::generate(
            EventId::try_from(event).unwrap(),
            SectionId::try_from(section.id).unwrap(),
        )
        .uuid();
        sqlx::query(
            "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, \
                 admission_jti, status, created_at, expires_at) \
             SELECT $1, $2::bigint, $3, s, 'gone', 'jti', 'held', now() - interval '20 minutes', \
                    now() - interval '10 minutes' \
             FROM unnest($4::bigint[]) AS s",
        )
        .bind(key)
        .bind(event)
        .bind(section.id as i64)
        .bind(chunk.iter().map(|s| *s as i64).collect::<Vec<_>>())
        .execute(app.pool())
        .await
        .unwrap();
    }
}

async fn lapsed_count(app: &TestApp) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds WHERE status = 'held' AND expires_at <= now()",
    )
    .fetch_one(app.pool())
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_sweeper_tidies_until_shutdown() {
    let app = TestApp::start_with(&["--sweep-interval-ms", "20", "--sweep-batch", "7"], None).await;
    let event = app.event(EventSettings::default()).await;
    lapsed_rows(&app, &event, 40).await;
    // Poll for the outcome; the deadline only turns a hang into a failure.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while lapsed_count(&app).await > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the sweeper never ran"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let expired: i64 =
        sqlx::query_scalar("SELECT count(*) FROM holds.seat_holds WHERE status = 'expired'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(expired, 40);
    assert_eq!(app.parts.service.metrics().totals().expired_by_sweeper, 40);
    assert_invariants(app.pool()).await;
    // `stop` fails the test unless serve returns, which waits for the sweeper task.
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn several_sweepers_at_once_do_no_harm() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    lapsed_rows(&app, &event, 100).await;
    // A live hold among them must survive every sweep.
    let mut fan = app.fan("fan-1", &event);
    let live = fan
        .claim(app.sections[1].id, &[app.sections[1].seats[0]])
        .await
        .unwrap();
    let swept = all_at_once(4, |_| {
        let service = app.parts.service.clone();
        async move { service.sweep(9).await }
    })
    .await;
    let total: u64 = swept.into_iter().map(|r| r.unwrap()).sum();
    assert_eq!(total, 100, "each lapsed row is marked exactly once");
    assert_eq!(lapsed_count(&app).await, 0);
    let status: String = sqlx::query_scalar(
        "SELECT DISTINCT status FROM holds.seat_holds WHERE hold_key = $1::uuid",
    )
    .bind(&live.hold_key)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(status, "held");
    assert_eq!(app.parts.service.sweep(50).await.unwrap(), 0);
    assert_invariants(app.pool()).await;
    app.stop().await;
}
