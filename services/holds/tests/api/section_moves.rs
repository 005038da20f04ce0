//! Moving a section between databases while fans claim it (`stadium_db::move_section`):
//! holds, bookings, blocks and history go along, no seat is ever active on two
//! databases, claims during the move are refused as retryable and then land on the new
//! shard, fans of other sections are never refused, and a move cut off half-way is
//! finished by running it again.

use std::collections::BTreeSet;
use std::time::Duration;

use stadium_db::{MoveError, Moved, move_section};
use stadium_kit::Reason;
use stadium_proto::holds::v1::{BlockSeatsRequest, ConfirmHoldRequest, GetHoldRequest};
use stadium_tokens::Role;
use tonic::Code;

use crate::support::{EventSettings, TestApp, assert_invariants, bearer};

/// Fans claiming and booking in section A while it moves, and fans of section B: 64
/// clients in all.
const MOVERS: usize = 48;
const OTHERS: usize = 16;

/// The app with a second, empty database as shard `east`.
async fn with_east() -> (TestApp, stadium_testkit::TestDatabase, String) {
    let east = stadium_testkit::fresh_database().await;
    let flag = format!("east={}", east.url);
    let app = TestApp::start_with(&["--shard", &flag], None).await;
    let event = app.event(EventSettings::default()).await;
    holds::catalog_copy::Copies::default()
        .refresh(app.parts.service.shards())
        .await
        .unwrap();
    (app, east, event)
}

/// Seat ids of `section` with an active claim (held unexpired, booked, blocked) on `pool`.
async fn active(pool: &sqlx::PgPool, event: &str, section: u64) -> BTreeSet<i64> {
    sqlx::query_scalar(
        "SELECT seat_id FROM holds.seat_holds WHERE event_id = $1::bigint AND section_id = $2 \
           AND (status IN ('booked', 'blocked') OR (status = 'held' AND expires_at > now()))",
    )
    .bind(event)
    .bind(i64::try_from(section).unwrap())
    .fetch_all(pool)
    .await
    .unwrap()
    .into_iter()
    .collect()
}

async fn state(pool: &sqlx::PgPool, event: &str, section: u64) -> Option<String> {
    sqlx::query_scalar(
        "SELECT state FROM holds.section_owners WHERE event_id = $1::bigint AND section_id = $2",
    )
    .bind(event)
    .bind(i64::try_from(section).unwrap())
    .fetch_optional(pool)
    .await
    .unwrap()
}

/// What one fan's claims came to.
#[derive(Debug, Default)]
struct Outcome {
    /// The hold key and seat of the claim that succeeded (then booked).
    held: Option<(String, u64)>,
    /// Claims and bookings refused as retryable while the section moved.
    moving: u32,
}

impl Outcome {
    /// Counts a refusal of fan `i`'s call, which must say the section is moving or
    /// moved (retryable); anything else fails the test.
    fn refused(&mut self, status: &tonic::Status, i: usize) {
        let reason = crate::support::reason(status, Code::Unavailable);
        assert!(
            matches!(reason, Reason::SectionMoving | Reason::SectionMoved),
            "fan-{i}: {status:?}"
        );
        self.moving += 1;
    }
}

/// Section `section` of `event` moved to the shard `east` by a box-office clerk.
pub(crate) async fn moved_to_east(app: &TestApp, event: &str, section: u64) -> Moved {
    move_section(
        app.parts.service.shards(),
        event.parse().unwrap(),
        i64::try_from(section).unwrap(),
        "east",
        "box-office:test",
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_section_moves_to_a_shard_while_fans_claim_it_and_no_seat_is_active_twice() {
    let (app, east, event) = with_east().await;
    let (a, b) = (app.sections[0].clone(), app.sections[1].clone());
    // Before the move: a hold, a booking and a block in section A.
    let mut first = app.fan("fan-first", &event);
    let kept = first.claim(a.id, &[a.seats[0], a.seats[1]]).await.unwrap();
    let mut buyer = app.fan("fan-buyer", &event);
    let bought = buyer.claim(a.id, &[a.seats[2]]).await.unwrap();
    app.client()
        .confirm_hold(bearer(
            ConfirmHoldRequest {
                hold_key: bought.hold_key.clone(),
                fan_id: "fan-buyer".into(),
            },
            &app.issuers.service("payments"),
        ))
        .await
        .unwrap();
    app.client()
        .block_seats(bearer(
            BlockSeatsRequest {
                event_id: event.clone(),
                section_id: a.id,
                seat_ids: vec![a.seats[3]],
                reason: "camera".into(),
            },
            &app.issuers.admin(&[Role::BoxOffice]),
        ))
        .await
        .unwrap();

    // Fans claim one seat each among 60 of A (so they collide) and book it, retrying a
    // refusal that says the section is moving or moved; others do the same in B.
    let mut fans = Vec::new();
    for i in 0..MOVERS + OTHERS {
        let mut fan = app.fan(&format!("fan-{i}"), &event);
        let (section, seats) = if i < MOVERS {
            (a.id, a.seats[4..64].to_vec())
        } else {
            (b.id, b.seats.clone())
        };
        let client = app.client();
        let service = app.issuers.service("payments");
        fans.push(tokio::spawn(async move {
            let mut outcome = Outcome::default();
            let mut attempt = 0usize;
            while outcome.held.is_none() {
                assert!(attempt < 500, "fan-{i} never got a seat");
                let seat = seats[(i * 7 + attempt * 13) % seats.len()];
                attempt += 1;
                match fan.claim(section, &[seat]).await {
                    Ok(hold) => outcome.held = Some((hold.hold_key, seat)),
                    Err(status) if status.code() == Code::AlreadyExists => {}
                    Err(status) => {
                        outcome.refused(&status, i);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            }
            let key = outcome.held.as_ref().map(|(key, _)| key.clone()).unwrap();
            loop {
                let booking = ConfirmHoldRequest {
                    hold_key: key.clone(),
                    fan_id: format!("fan-{i}"),
                };
                match client.clone().confirm_hold(bearer(booking, &service)).await {
                    Ok(_) => break,
                    Err(status) => {
                        outcome.refused(&status, i);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            }
            outcome
        }));
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let moved = moved_to_east(&app, &event, a.id).await;
    let mut outcomes = Vec::new();
    for fan in fans {
        outcomes.push(fan.await.unwrap());
    }
    assert_eq!((moved.from.as_str(), moved.to.as_str()), ("main", "east"));
    assert!(moved.seat_rows >= 4, "{moved:?}");

    // Section A is on east alone: owned there, gone from main, no row left on main.
    assert_eq!(
        state(&east.pool, &event, a.id).await.as_deref(),
        Some("owned")
    );
    assert_eq!(
        state(app.pool(), &event, a.id).await.as_deref(),
        Some("gone")
    );
    assert!(active(app.pool(), &event, a.id).await.is_empty());
    let on_east = active(&east.pool, &event, a.id).await;
    // Every claim answered OK holds its seat on east, each seat once.
    let claimed: Vec<i64> = outcomes[..MOVERS]
        .iter()
        .filter_map(|o| o.held.as_ref())
        .map(|(_, seat)| i64::try_from(*seat).unwrap())
        .collect();
    assert_eq!(
        claimed.len(),
        MOVERS,
        "every fan of A got a seat in the end"
    );
    let distinct: BTreeSet<i64> = claimed.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        claimed.len(),
        "a seat was given to two fans"
    );
    for seat in &claimed {
        assert!(on_east.contains(seat), "seat {seat} is not on east");
    }
    // Every booking, made before, during or after the move, is on east exactly once.
    let booked: Vec<(String, i64)> = sqlx::query_as(
        "SELECT hold_key::text, count(*) FROM holds.seat_holds \
          WHERE event_id = $1::bigint AND section_id = $2 AND status = 'booked' \
          GROUP BY hold_key",
    )
    .bind(&event)
    .bind(i64::try_from(a.id).unwrap())
    .fetch_all(&east.pool)
    .await
    .unwrap();
    assert_eq!(booked.len(), MOVERS + 1, "{booked:?}");
    assert!(booked.iter().all(|(_, seats)| *seats == 1));
    assert!(booked.iter().any(|(key, _)| *key == bought.hold_key));
    for seat in &a.seats[..4] {
        assert!(on_east.contains(&i64::try_from(*seat).unwrap()));
    }
    assert_eq!(on_east.len(), MOVERS + 4);
    // Fans of B were never refused.
    assert!(
        outcomes[MOVERS..]
            .iter()
            .all(|o| o.held.is_some() && o.moving == 0)
    );

    // The hold made before the move is found by its key on east, and its history says
    // it moved.
    let read = app
        .client()
        .get_hold(bearer(
            GetHoldRequest {
                hold_key: kept.hold_key.clone(),
            },
            &first.session,
        ))
        .await
        .unwrap()
        .into_inner()
        .hold
        .unwrap();
    assert_eq!(read.seat_ids, kept.seat_ids);
    let changes: Vec<String> = sqlx::query_scalar(
        "SELECT change FROM holds.seat_history WHERE hold_key = $1::uuid AND seat_id = $2 \
         ORDER BY history_id",
    )
    .bind(&kept.hold_key)
    .bind(i64::try_from(a.seats[0]).unwrap())
    .fetch_all(&east.pool)
    .await
    .unwrap();
    assert_eq!(changes, ["claimed", "moved"]);
    // And it is released there, as any hold.
    app.release(&kept.hold_key, &first.session).await.unwrap();
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_cut_off_half_way_is_finished_by_running_it_again() {
    let (app, east, event) = with_east().await;
    let a = app.sections[0].clone();
    let mut fan = app.fan("fan-1", &event);
    let held = fan.claim(a.id, &[a.seats[0]]).await.unwrap();
    let (event_id, section) = (event.parse::<i64>().unwrap(), i64::try_from(a.id).unwrap());

    // Cut off after step 1: the section is fenced on main, claims told to retry.
    sqlx::query("SELECT holds.fence_section($1, $2, 500)")
        .bind(event_id)
        .bind(section)
        .execute(app.pool())
        .await
        .unwrap();
    let status = app
        .fan("fan-2", &event)
        .claim(a.id, &[a.seats[1]])
        .await
        .unwrap_err();
    assert_eq!(
        crate::support::reason(&status, Code::Unavailable),
        Reason::SectionMoving
    );
    let shards = app.parts.service.shards();
    let moved = move_section(shards, event_id, section, "east", "sre")
        .await
        .unwrap();
    assert_eq!(moved.seat_rows, 1);
    assert_eq!(
        active(&east.pool, &event, a.id).await,
        BTreeSet::from([i64::try_from(a.seats[0]).unwrap()])
    );

    // Back to main, cut off after step 4 (east gave it away, main holds it fenced).
    let sql = |statement: &'static str| sqlx::query(statement).bind(event_id).bind(section);
    sql("SELECT holds.fence_section($1, $2, 500)")
        .execute(&east.pool)
        .await
        .unwrap();
    let (holds, history): (String, String) = sqlx::query_as(
        "SELECT seat_holds::text, seat_history::text FROM holds.section_rows($1, $2)",
    )
    .bind(event_id)
    .bind(section)
    .fetch_one(&east.pool)
    .await
    .unwrap();
    sql("SELECT * FROM holds.take_section($1, $2, $3::jsonb, $4::jsonb, 'sre', 500)")
        .bind(holds)
        .bind(history)
        .execute(app.pool())
        .await
        .unwrap();
    sql("SELECT holds.give_section_away($1, $2)")
        .execute(&east.pool)
        .await
        .unwrap();
    // Owned by nobody: refused as moved, never taken twice.
    let status = app
        .fan("fan-3", &event)
        .claim(a.id, &[a.seats[2]])
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    // The fan's hold, looked up where its stale route points, is said to have moved
    // (retry), never "not found" (which a payment would take for a lapsed hold).
    let status = app
        .client()
        .get_hold(bearer(
            GetHoldRequest {
                hold_key: held.hold_key.clone(),
            },
            &fan.session,
        ))
        .await
        .unwrap_err();
    assert_eq!(
        crate::support::reason(&status, Code::Unavailable),
        Reason::SectionMoved
    );
    let moved = move_section(shards, event_id, section, "main", "sre")
        .await
        .unwrap();
    assert_eq!((moved.from.as_str(), moved.seat_rows), ("east", 0));
    assert_eq!(
        state(app.pool(), &event, a.id).await.as_deref(),
        Some("owned")
    );
    assert!(active(&east.pool, &event, a.id).await.is_empty());
    app.release(&held.hold_key, &fan.session).await.unwrap();
    app.fan("fan-4", &event)
        .claim(a.id, &[a.seats[0]])
        .await
        .unwrap();

    // Nothing to do, or nowhere to go: said, and nothing changes.
    assert!(matches!(
        move_section(shards, event_id, section, "main", "sre").await,
        Err(MoveError::AlreadyThere { .. })
    ));
    assert!(matches!(
        move_section(shards, event_id, section, "west", "sre").await,
        Err(MoveError::UnknownShard(_))
    ));
    // A route pointed by hand at a database that has neither the section nor a half-done
    // move of it: refused, and the section stays where it is.
    sqlx::query(
        "INSERT INTO catalog.section_shards (event_id, section_id, shard) VALUES ($1, $2, 'east') \
         ON CONFLICT (event_id, section_id) DO UPDATE SET shard = 'east'",
    )
    .bind(event_id)
    .bind(section)
    .execute(app.pool())
    .await
    .unwrap();
    assert!(matches!(
        move_section(shards, event_id, section, "main", "sre").await,
        Err(MoveError::NotOnRoute { shard, .. }) if shard == "east"
    ));
    assert_eq!(
        state(app.pool(), &event, a.id).await.as_deref(),
        Some("owned")
    );
    assert_invariants(app.pool()).await;
    assert_invariants(&east.pool).await;
    app.stop().await;
}
