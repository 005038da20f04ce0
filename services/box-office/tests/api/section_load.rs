//! TopSections and ListShards' load read what holds processes wrote to
//! `holds.section_load` (planted here by SQL; holds' own tests write it with real
//! claims): summed over processes and databases, within the window, per event.

use stadium_kit::Reason;
use stadium_proto::box_office::v1 as pb;
use tonic::Code;

use crate::support::{Office, reason};

/// Adds a row of `process` for `section` of `event` on `pool`, `at_s` seconds from now,
/// with `[held, seat_taken, refused, errors, shed]` claims, all of at most 1 ms.
async fn wrote(
    pool: &sqlx::PgPool,
    (event, section): (i64, u64),
    process: u8,
    at_s: i64,
    [held, seat_taken, refused, errors, shed]: [i64; 5],
) {
    sqlx::query(
        "INSERT INTO holds.section_load (event_id, section_id, process_id, at, held, seat_taken, \
             refused, errors, shed, latency_buckets) \
         VALUES ($1, $2, ('00000000-0000-0000-0000-0000000000' || lpad($3::text, 2, '0'))::uuid, \
                 date_trunc('second', now()) + make_interval(secs => $4), $5, $6, $7, $8, $9, \
                 ARRAY[0, $5 + $6 + $7 + $8 + $9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]::bigint[])",
    )
    .bind(event)
    .bind(i64::try_from(section).unwrap())
    .bind(i32::from(process))
    .bind(at_s as f64)
    .bind(held)
    .bind(seat_taken)
    .bind(refused)
    .bind(errors)
    .bind(shed)
    .execute(pool)
    .await
    .unwrap();
}

/// A new venue and an event of it whose section A is routed to the shard `east` (B
/// stays on main); the ids of A and B.
async fn event_with_a_on_east(office: &mut Office) -> (pb::Venue, pb::Event, u64, u64) {
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    let section = |code: &str| {
        venue
            .sections
            .iter()
            .find(|s| s.code == code)
            .unwrap()
            .section_id
    };
    let (a, b) = (section("A"), section("B"));
    sqlx::query(
        "INSERT INTO catalog.section_shards (event_id, section_id, shard) VALUES ($1, $2, 'east')",
    )
    .bind(event.event_id.parse::<i64>().unwrap())
    .bind(i64::try_from(a).unwrap())
    .execute(office.pool())
    .await
    .unwrap();
    (venue, event, a, b)
}

#[tokio::test]
async fn top_sections_sums_processes_and_databases_within_the_window() {
    let east = stadium_testkit::fresh_database().await;
    let flag = format!("east={}", east.url);
    let mut office = Office::start(&["--shard", &flag]).await;
    let (venue, event, a, b) = event_with_a_on_east(&mut office).await;
    let event_id: i64 = event.event_id.parse().unwrap();
    let other = office.event(&venue.venue_id).await;
    // A was moved to east: rows of it on both databases, from two processes.
    // Stamped a minute ahead, so that they are in "the last 10 s" however slowly the
    // test runs; the hour-old row and the other event's are in no window.
    wrote(office.pool(), (event_id, a), 1, 60, [2, 0, 0, 0, 0]).await;
    wrote(&east.pool, (event_id, a), 2, 60, [3, 1, 0, 0, 4]).await;
    wrote(office.pool(), (event_id, b), 1, 60, [0, 0, 1, 1, 0]).await;
    wrote(office.pool(), (event_id, b), 1, -3600, [100, 0, 0, 0, 0]).await;
    let other_id: i64 = other.event_id.parse().unwrap();
    wrote(office.pool(), (other_id, b), 1, 60, [50, 0, 0, 0, 0]).await;

    // window_s 0: the default 10 s.
    let top = office
        .client
        .top_sections(office.sre(pb::TopSectionsRequest {
            event_id: event.event_id.clone(),
            window_s: 0,
        }))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(top.window_s, 10);
    let rows: Vec<_> = top
        .sections
        .iter()
        .map(|s| {
            (
                s.section_code.as_str(),
                s.shard.as_str(),
                s.held_claims,
                s.seat_taken_claims,
                s.refused_claims,
                s.failed_claims,
                s.shed_claims,
                s.claims_per_s,
            )
        })
        .collect();
    // Neither a failed claim nor a shed one is an answered one: B's load is its one
    // refusal over 10 s, A's its six held or SEAT_TAKEN.
    assert_eq!(
        rows,
        [
            ("A", "east", 5, 1, 0, 0, 4, 0.6),
            ("B", "main", 0, 0, 1, 1, 0, 0.1)
        ]
    );
    let a_top = &top.sections[0];
    assert_eq!(a_top.seat_taken_rate, 1.0 / 6.0);
    assert_eq!(a_top.p99_ms, 1.0);
    assert_eq!((a_top.held, a_top.sold, a_top.free), (0, 0, 6));

    // Each database's load: main A 2 + B 1, east A 4, over 10 s.
    let shards = office
        .client
        .list_shards(office.office(pb::ListShardsRequest {
            event_id: event.event_id.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .shards;
    let loads: Vec<_> = shards
        .iter()
        .map(|s| (s.name.as_str(), s.claims_per_s))
        .collect();
    assert_eq!(loads, [("main", 0.3), ("east", 0.4)]);

    // Bad requests name their field; an unknown event is not found.
    for (event_id, window_s, expected) in [
        (
            "x",
            10,
            (
                Code::InvalidArgument,
                Some(Reason::InvalidField),
                Some("event_id"),
            ),
        ),
        (
            event.event_id.as_str(),
            601,
            (
                Code::InvalidArgument,
                Some(Reason::InvalidField),
                Some("window_s"),
            ),
        ),
        (
            "999999",
            10,
            (Code::NotFound, Some(Reason::EventNotFound), None),
        ),
    ] {
        let refused = office
            .client
            .top_sections(office.sre(pb::TopSectionsRequest {
                event_id: event_id.to_owned(),
                window_s,
            }))
            .await
            .unwrap_err();
        let (code, why, field) = reason(&refused);
        assert_eq!((code, why, field.as_deref()), expected, "{refused:?}");
    }
    office.stop().await;
}

/// Takes the advisory lock a claim takes on `seat` of `event` (holds.lock_seats) in a
/// transaction on `pool`, and keeps it until the transaction ends.
async fn lock_seat(
    pool: &sqlx::PgPool,
    event: i64,
    seat: i64,
) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock(hashint8($1::bigint), hashint8($2::bigint))")
        .bind(event)
        .bind(seat)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}

/// A seat of `section` of `event`.
async fn a_seat(office: &Office, event: i64, section: u64) -> i64 {
    sqlx::query_scalar(
        "SELECT seat_id FROM catalog.event_seats WHERE event_id = $1 AND section_id = $2 \
         ORDER BY seat_id LIMIT 1",
    )
    .bind(event)
    .bind(i64::try_from(section).unwrap())
    .fetch_one(office.pool())
    .await
    .unwrap()
}

/// Claims waiting for a seat another claim in flight has locked, as holds' claims wait
/// (the same advisory locks, taken here by SQL), counted per section on each database:
/// two on A (on east), one on B (on main); none once the locks are given back.
#[tokio::test]
async fn top_sections_counts_the_claims_waiting_on_their_seats_locks() {
    let east = stadium_testkit::fresh_database().await;
    let flag = format!("east={}", east.url);
    let mut office = Office::start(&["--shard", &flag]).await;
    let (_, event, a, b) = event_with_a_on_east(&mut office).await;
    let event_id: i64 = event.event_id.parse().unwrap();
    let (seat_a, seat_b) = (
        a_seat(&office, event_id, a).await,
        a_seat(&office, event_id, b).await,
    );
    let in_flight_a = lock_seat(&east.pool, event_id, seat_a).await;
    let in_flight_b = lock_seat(office.pool(), event_id, seat_b).await;
    let mut waiters = tokio::task::JoinSet::new();
    for (pool, seat) in [
        (east.pool.clone(), seat_a),
        (east.pool.clone(), seat_a),
        (office.pool().clone(), seat_b),
    ] {
        waiters.spawn(async move { lock_seat(&pool, event_id, seat).await.rollback().await });
    }

    let top = |office: &Office| {
        let request = office.sre(pb::TopSectionsRequest {
            event_id: event.event_id.clone(),
            window_s: 0,
        });
        let mut client = office.client.clone();
        async move {
            client
                .top_sections(request)
                .await
                .unwrap()
                .into_inner()
                .sections
                .iter()
                .map(|s| (s.section_code.clone(), s.shard.clone(), s.lock_waits))
                .collect::<Vec<_>>()
        }
    };
    let expected = [
        ("A".to_owned(), "east".to_owned(), 2),
        ("B".to_owned(), "main".to_owned(), 1),
    ];
    // Polled until the waiters are at their locks (never timed).
    let mut seen = top(&office).await;
    for _ in 0..600 {
        if seen == expected {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        seen = top(&office).await;
    }
    assert_eq!(seen, expected);

    in_flight_a.rollback().await.unwrap();
    in_flight_b.rollback().await.unwrap();
    while let Some(done) = waiters.join_next().await {
        done.unwrap().unwrap();
    }
    assert!(top(&office).await.is_empty());
    office.stop().await;
}
