//! Sections on shards. A shard's own record of the sections it owns is checked by the
//! database on every write: a claim routed to a shard that does not own its section (a
//! stale route) is refused and writes nothing, whichever path wrote it; a fenced
//! section refuses every write but expiry and names when to retry. With a second
//! database as a shard, claims go to their section's shard, holds are found by key,
//! and a pause on the main database reaches the shard's copy of the catalog.

use holds::catalog_copy::Copies;
use holds::domain::{Claim, Claimant, EventId, FanId, SeatSet, SectionId};
use holds::shards::place_section;
use stadium_kit::Reason;
use stadium_proto::holds::v1::{BlockSeatsRequest, ClaimBestAvailableRequest};
use stadium_testkit::all_at_once;
use stadium_testkit::grpc::metadata;
use stadium_tokens::Role;
use tonic::Code;

use crate::returns;
use crate::support::{
    EventSettings, TestApp, active_counts, assert_invariants, bearer, reason, snapshot,
};

/// Records `state` for (`event`, `section`) in this database's own section record.
async fn own(app: &TestApp, event: &str, section: u64, state: &str, fenced_ms: i64) {
    sqlx::query(
        "INSERT INTO holds.section_owners (event_id, section_id, state, fenced_until) \
         VALUES ($1::bigint, $2, $3, CASE WHEN $4 > 0 THEN now() + $4 * interval '1 ms' END) \
         ON CONFLICT (event_id, section_id) \
         DO UPDATE SET state = EXCLUDED.state, fenced_until = EXCLUDED.fenced_until",
    )
    .bind(event)
    .bind(i64::try_from(section).unwrap())
    .bind(state)
    .bind(fenced_ms)
    .execute(app.pool())
    .await
    .unwrap();
}

/// Names this database shard `east` and records it as owning only `section` of `event`.
async fn east_owning(app: &TestApp, event: &str, section: u64) {
    sqlx::query("SELECT holds.register_shard('east')")
        .execute(app.pool())
        .await
        .unwrap();
    own(app, event, section, "owned", 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_refuses_claims_for_sections_it_does_not_own_and_writes_nothing() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());
    east_owning(&app, &event, a.id).await;

    let mut fan = app.fan("fan-1", &event);
    let held = fan.claim(a.id, &[a.seats[0], a.seats[1]]).await.unwrap();
    let before = snapshot(app.pool()).await;

    // A section nobody recorded here: refused, retryable, naming the section.
    let mut other = app.fan("fan-2", &event);
    let status = other.claim(b.id, &[b.seats[0]]).await.unwrap_err();
    assert_eq!(reason(&status, Code::Unavailable), Reason::SectionMoved);
    assert_eq!(
        metadata(&status, "section_id").as_deref(),
        Some(b.id.to_string().as_str())
    );
    // Best available and the box office's blocks write through other functions and are
    // refused alike.
    let status = app
        .client()
        .claim_best_available(bearer(
            ClaimBestAvailableRequest {
                admission_token: other.admission.clone(),
                event_id: event.clone(),
                target: Some(
                    stadium_proto::holds::v1::claim_best_available_request::Target::SectionId(b.id),
                ),
                quantity: 2,
                ..Default::default()
            },
            &other.session,
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::Unavailable), Reason::SectionMoved);
    let status = app
        .client()
        .block_seats(bearer(
            BlockSeatsRequest {
                event_id: event.clone(),
                section_id: b.id,
                seat_ids: vec![b.seats[5]],
                reason: "camera".into(),
            },
            &app.issuers.admin(&[Role::BoxOffice]),
        ))
        .await
        .unwrap_err();
    assert_eq!(reason(&status, Code::Unavailable), Reason::SectionMoved);
    assert_eq!(snapshot(app.pool()).await, before);

    // Fenced for a move: every write refused with a retry hint, the hold included.
    own(&app, &event, a.id, "fenced", 5_000).await;
    let status = other.claim(a.id, &[a.seats[5]]).await.unwrap_err();
    assert_eq!(reason(&status, Code::Unavailable), Reason::SectionMoving);
    let retry_after: u64 = metadata(&status, "retry_after_ms")
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry_after > 0 && retry_after <= 5_000, "{retry_after}");
    let status = app.release(&held.hold_key, &fan.session).await.unwrap_err();
    assert_eq!(reason(&status, Code::Unavailable), Reason::SectionMoving);
    assert_eq!(snapshot(app.pool()).await, before);

    // Owned again: the fan's hold is theirs to release, claims go through.
    own(&app, &event, a.id, "owned", 0).await;
    app.release(&held.hold_key, &fan.session).await.unwrap();
    other.claim(a.id, &[a.seats[0]]).await.unwrap();
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// Fans of two sections claim at once, one section owned here and the other not (a
/// stale route). The database refuses a batch that names the stale section whole,
/// writing nothing; the coalescer, which mixes the two sections' claims in its
/// batches, then runs each claim of such a batch alone: every claim of the owned
/// section is held, every claim of the other refused as moved, nothing written for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_batch_mixing_a_stale_route_with_owned_sections_holds_the_owned_claims() {
    // Sections of 20 seats: 16 fans in each, and one seat each for the direct batch.
    const FANS: usize = 32;
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());
    east_owning(&app, &event, a.id).await;

    let claim = |i: usize, section: u64, seat: u64| Claim {
        event: EventId::try_from(event.as_str()).unwrap(),
        section: SectionId::try_from(section).unwrap(),
        seats: SeatSet::from_wire(&[seat]).unwrap(),
        claimant: Claimant::Fan {
            fan: FanId::try_from(format!("direct-{i}").as_str()).unwrap(),
            admission_jti: format!("jti-direct-{i}"),
        },
        request: None,
    };
    let mixed = [claim(0, a.id, a.seats[19]), claim(1, b.id, b.seats[19])];
    let refs: Vec<&Claim> = mixed.iter().collect();
    let error = holds::store::claim_many(app.pool(), &refs)
        .await
        .expect_err("a batch naming a section owned elsewhere");
    assert!(error.is_stale_route(), "{error:?}");
    assert_eq!(active_counts(app.pool(), &event).await, (0, 0, 0));

    let answers = all_at_once(FANS, |i| {
        let mut fan = app.fan(&format!("fan-{i}"), &event);
        let (section, seat) = if i % 2 == 0 {
            (a.id, a.seats[i / 2])
        } else {
            (b.id, b.seats[i / 2])
        };
        async move { fan.claim(section, &[seat]).await }
    })
    .await;
    for (i, answer) in answers.iter().enumerate() {
        match answer {
            Ok(hold) if i % 2 == 0 => assert_eq!(hold.seat_ids, [a.seats[i / 2]]),
            Err(status) if i % 2 == 1 => {
                assert_eq!(reason(status, Code::Unavailable), Reason::SectionMoved);
            }
            other => panic!("fan-{i}: {other:?}"),
        }
    }
    let in_b: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds WHERE event_id = $1::bigint AND section_id = $2",
    )
    .bind(&event)
    .bind(i64::try_from(b.id).unwrap())
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(in_b, 0);
    assert_eq!(
        active_counts(app.pool(), &event).await,
        (i64::try_from(FANS / 2).unwrap(), 0, 0)
    );
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn main_owns_every_section_but_those_it_gave_away() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());
    own(&app, &event, b.id, "gone", 0).await;

    let mut fan = app.fan("fan-1", &event);
    fan.claim(a.id, &[a.seats[0]]).await.unwrap();
    let before = snapshot(app.pool()).await;
    let mut other = app.fan("fan-2", &event);
    let status = other.claim(b.id, &[b.seats[0]]).await.unwrap_err();
    assert_eq!(reason(&status, Code::Unavailable), Reason::SectionMoved);
    assert_eq!(snapshot(app.pool()).await, before);

    // A database that holds seats cannot take another shard's name.
    let renamed = sqlx::query("SELECT holds.register_shard('west')")
        .execute(app.pool())
        .await
        .unwrap_err();
    assert_eq!(
        renamed
            .as_database_error()
            .and_then(|e| e.code())
            .as_deref(),
        Some("SS003")
    );
    let name: String = sqlx::query_scalar("SELECT shard FROM holds.shard_identity")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(name, "main");
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_section_still_lets_lapsed_holds_expire() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let a = app.sections[0].clone();
    let mut fan = app.fan("fan-1", &event);
    let held = fan.claim(a.id, &[a.seats[0], a.seats[1]]).await.unwrap();
    crate::support::lapse(&app, &held.hold_key).await;
    own(&app, &event, a.id, "fenced", 5_000).await;

    assert_eq!(app.parts.service.sweep(100).await.unwrap(), 2);
    let expired: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds WHERE status = 'expired' AND hold_key = $1::uuid",
    )
    .bind(&held.hold_key)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(expired, 2);
    app.stop().await;
}

/// Rows of `section` of `event` in `pool`, by status.
async fn rows(pool: &sqlx::PgPool, event: &str, section: u64) -> Vec<(String, i64)> {
    sqlx::query_as(
        "SELECT status, count(*) FROM holds.seat_holds \
         WHERE event_id = $1::bigint AND section_id = $2 GROUP BY status ORDER BY status",
    )
    .bind(event)
    .bind(i64::try_from(section).unwrap())
    .fetch_all(pool)
    .await
    .unwrap()
}

/// The app with a second database as shard `east`, `section` of a new event placed
/// there and the catalog copied to it.
pub(crate) async fn sharded(
    section_index: usize,
) -> (TestApp, stadium_testkit::TestDatabase, String) {
    sharded_with(section_index, EventSettings::default()).await
}

/// [`sharded`] with the event's `settings`.
pub(crate) async fn sharded_with(
    section_index: usize,
    settings: EventSettings,
) -> (TestApp, stadium_testkit::TestDatabase, String) {
    let east = stadium_testkit::fresh_database().await;
    let flag = format!("east={}", east.url);
    let app = TestApp::start_with(&["--shard", &flag], None).await;
    let event = app.event(settings).await;
    let shards = app.parts.service.shards();
    place_section(
        shards,
        EventId::try_from(event.as_str()).unwrap(),
        SectionId::try_from(app.sections[section_index].id).unwrap(),
        "east",
    )
    .await
    .unwrap();
    Copies::default().refresh(shards).await.unwrap();
    (app, east, event)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_go_to_their_sections_shard_and_holds_are_found_by_their_key() {
    let (app, east, event) = sharded(1).await;
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());

    let mut one = app.fan("fan-1", &event);
    let mut two = app.fan("fan-2", &event);
    let on_main = one.claim(a.id, &[a.seats[0]]).await.unwrap();
    let on_east = two.claim(b.id, &[b.seats[0], b.seats[1]]).await.unwrap();
    assert_eq!(
        rows(app.pool(), &event, a.id).await,
        [("held".to_owned(), 1)]
    );
    assert_eq!(rows(app.pool(), &event, b.id).await, []);
    assert_eq!(
        rows(&east.pool, &event, b.id).await,
        [("held".to_owned(), 2)]
    );

    // The seat is taken on its shard: another fan is refused with alternatives.
    let mut three = app.fan("fan-3", &event);
    let taken = three.claim(b.id, &[b.seats[1]]).await.unwrap_err();
    assert_eq!(reason(&taken, Code::AlreadyExists), Reason::SeatTaken);

    // Found by key alone, wherever it is: read, extended, released.
    let read = app
        .client()
        .get_hold(bearer(
            stadium_proto::holds::v1::GetHoldRequest {
                hold_key: on_east.hold_key.clone(),
            },
            &two.session,
        ))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    assert_eq!(read.seat_ids, on_east.seat_ids);
    app.release(&on_east.hold_key, &two.session).await.unwrap();
    assert_eq!(
        rows(&east.pool, &event, b.id).await,
        [("released".to_owned(), 2)]
    );
    app.release(&on_main.hold_key, &one.session).await.unwrap();
    three.claim(b.id, &[b.seats[1]]).await.unwrap();

    // A claim that reaches the main database for the placed section is refused there.
    let stale = sqlx::query(
        "SELECT * FROM holds.claim(gen_random_uuid(), $1::bigint, $2, ARRAY[$3]::bigint[], \
         'fan-9', 'jti-9', 'fan', NULL)",
    )
    .bind(&event)
    .bind(i64::try_from(b.id).unwrap())
    .bind(i64::try_from(b.seats[5]).unwrap())
    .execute(app.pool())
    .await
    .unwrap_err();
    assert_eq!(
        stale.as_database_error().and_then(|e| e.code()).as_deref(),
        Some("SS001")
    );
    assert_eq!(rows(app.pool(), &event, b.id).await, []);
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_section_with_holds_is_not_placed_elsewhere() {
    let east = stadium_testkit::fresh_database().await;
    let flag = format!("east={}", east.url);
    let app = TestApp::start_with(&["--shard", &flag], None).await;
    let event = app.event(EventSettings::default()).await;
    let a = app.sections[0].clone();
    app.fan("fan-1", &event)
        .claim(a.id, &[a.seats[0]])
        .await
        .unwrap();
    let refused = place_section(
        app.parts.service.shards(),
        EventId::try_from(event.as_str()).unwrap(),
        SectionId::try_from(a.id).unwrap(),
        "east",
    )
    .await
    .unwrap_err();
    assert!(
        matches!(refused, holds::error::Error::SectionNotEmpty(_)),
        "{refused}"
    );
    // Still on main, owned by nobody else.
    app.fan("fan-2", &event)
        .claim(a.id, &[a.seats[1]])
        .await
        .unwrap();
    let owned: Vec<String> = sqlx::query_scalar("SELECT state FROM holds.section_owners")
        .fetch_all(&east.pool)
        .await
        .unwrap();
    assert_eq!(owned, ["gone"]);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_on_the_main_database_reaches_every_shard() {
    let (app, _east, event) = sharded(1).await;
    let b = app.sections[1].clone();
    let mut fan = app.fan("fan-1", &event);
    fan.claim(b.id, &[b.seats[0]]).await.unwrap();

    sqlx::query("UPDATE catalog.events SET status = 'paused' WHERE event_id = $1::bigint")
        .bind(&event)
        .execute(app.pool())
        .await
        .unwrap();
    let paused = std::time::Instant::now();
    let mut seat = 1;
    let refused = loop {
        // A new fan each time (one hold per admission), until the pause arrives.
        let mut other = app.fan(&format!("fan-{}", seat + 1), &event);
        match other.claim(b.id, &[b.seats[seat]]).await {
            Ok(_) => seat += 1,
            Err(status) => break status,
        }
        assert!(
            paused.elapsed() < std::time::Duration::from_secs(30),
            "the pause never arrived"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert_eq!(
        reason(&refused, Code::FailedPrecondition),
        Reason::EventNotOnSale
    );
    eprintln!(
        "pause reached the shard after {} ms ({} claims taken meanwhile)",
        paused.elapsed().as_millis(),
        seat - 1
    );
    app.stop().await;
}

/// The returns queue lives on the main database, the seats that can come back on the
/// shards: a best-available request that finds the house full while seats are held only
/// on a shard waits in line (it used to be answered `SEAT_TAKEN`), and is served from
/// the shard when a hold there lapses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_returns_queue_waits_for_seats_held_on_a_shard() {
    let (app, east, event) = sharded(1).await;
    let b = app.sections[1].id;
    let holders = returns::fill_the_house(&app, &event).await;
    assert_eq!(
        rows(app.pool(), &event, b).await,
        [],
        "section B is held on the shard only"
    );

    let mut fan = app.fan("waiter", &event);
    let answer = returns::ask(&mut fan, b, "req-1").await.unwrap();
    assert_eq!(returns::position(&answer), 1);

    returns::lapse(&east.pool, &holders[..1]).await;
    app.parts.service.serve_returns(100).await.unwrap();
    let answer = returns::ask(&mut fan, b, "req-1").await.unwrap();
    let hold = answer.hold.expect("served from the lapsed hold's seats");
    assert_eq!(hold.seat_ids.len(), 2);
    assert_eq!(returns::queued(&app).await, 0);
    let on_east: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds WHERE hold_key = $1::uuid AND status = 'held'",
    )
    .bind(&hold.hold_key)
    .fetch_one(&east.pool)
    .await
    .unwrap();
    assert_eq!(on_east, 2);
    assert_eq!(rows(app.pool(), &event, b).await, []);
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}

/// A fan in the main database's line who gets seats by hand on a shard (where the
/// trigger that takes such a fan out of the line cannot reach) is taken out at the next
/// pass, not served a second hold once the first is given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_holding_seats_on_a_shard_leaves_the_line() {
    let (app, east, event) = sharded(1).await;
    let section = app.sections[1].clone();
    let holders = returns::fill_the_house(&app, &event).await;
    let mut fan = app.fan("waiter", &event);
    let answer = returns::ask(&mut fan, section.id, "r1").await.unwrap();
    assert_eq!(returns::position(&answer), 1);

    returns::lapse(&east.pool, &holders[..1]).await;
    let picked = fan.claim(section.id, &section.seats[..2]).await.unwrap();
    app.release(&picked.hold_key, &fan.session).await.unwrap();

    returns::lapse(&east.pool, &holders[1..2]).await;
    let pass = app.parts.service.serve_returns(100).await.unwrap();
    assert_eq!(pass.served, 0, "{pass:?}");
    assert_eq!(returns::queued(&app).await, 0, "out of the line");
    let holds = returns::holds_of(&mut fan).await;
    assert!(
        holds.iter().all(|h| h.hold_key == picked.hold_key),
        "{holds:?}"
    );
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}
