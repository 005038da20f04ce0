//! Availability: a thousand concurrent cold reads cost one query, a claim shows within
//! the staleness bound, every hold status counts as the holds view says, and a
//! suggestion near a lost seat follows that seat.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use stadium_kit::status::error_info;
use stadium_proto::seat_map::v1::seat_map_client::SeatMapClient;
use stadium_proto::seat_map::v1::suggest_seats_request::Scope;
use stadium_proto::seat_map::v1::{GetAvailabilityRequest, SuggestSeatsRequest};

use crate::support::{Harness, SCREENSHOTS, STADIUM, is_free, plant_hold};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_concurrent_reads_of_a_cold_section_cost_one_query() {
    // A long bound, so no entry can expire while the thousand requests are in flight.
    let h = Arc::new(Harness::start(60_000).await);
    let event = h.event_on(STADIUM).await;
    let layout = h.layout(event).await;
    let section = layout.sections[2].section_id;
    h.hold(event, section, layout.sections[2].first_seat_id + 3, 10)
        .await;
    let before = h.parts.service.metrics().totals();

    let barrier = Arc::new(tokio::sync::Barrier::new(1000));
    let mut tasks = Vec::new();
    for i in 0..1000 {
        // Ten connections, so the requests really arrive in parallel.
        let channel = if i % 100 == 0 {
            Some(stadium_kit::testing::connect(h.addr).await)
        } else {
            None
        };
        let h = h.clone();
        let barrier = barrier.clone();
        tasks.push((channel, h, barrier));
    }
    let mut handles = Vec::new();
    let mut current = None;
    for (channel, h, barrier) in tasks {
        if let Some(c) = channel {
            current = Some(c);
        }
        let channel = current.clone().unwrap();
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            SeatMapClient::new(channel)
                .get_availability(h.authed(GetAvailabilityRequest {
                    event_id: event.to_string(),
                    section_id: section,
                }))
                .await
                .unwrap()
                .into_inner()
        }));
    }
    let mut bitmaps = HashSet::new();
    for handle in handles {
        let answer = handle.await.unwrap();
        assert_eq!(answer.sections.len(), 1);
        bitmaps.insert(answer.sections[0].available_bitmap.clone());
    }
    let after = h.parts.service.metrics().totals();
    assert_eq!(
        after.availability_loads - before.availability_loads,
        1,
        "one database query for 1,000 reads"
    );
    assert_eq!(bitmaps.len(), 1, "every reader saw the same snapshot");
    assert_eq!(
        after.availability_hits + after.availability_misses
            - before.availability_hits
            - before.availability_misses,
        1000
    );
    let answer = h.availability(event, section).await;
    assert!(!is_free(
        &answer.sections[0],
        layout.sections[2].first_seat_id + 3
    ));
}

#[tokio::test]
async fn a_claim_shows_within_the_staleness_bound() {
    let bound = 150;
    let h = Harness::start(bound).await;
    let event = h.event_on(SCREENSHOTS).await;
    let layout = h.layout(event).await;
    let section = &layout.sections[1];
    let (claimed, lapsed) = (section.first_seat_id + 5, section.first_seat_id + 6);
    let first = h.availability(event, section.section_id).await;
    assert!(is_free(&first.sections[0], claimed));
    assert_eq!(first.staleness_bound_ms, bound);

    h.hold(event, section.section_id, claimed, 10).await;
    // A hold already past its expiry counts as free, exactly as a claim treats it.
    h.hold(event, section.section_id, lapsed, -1).await;
    let committed: sqlx::types::chrono::DateTime<sqlx::types::chrono::Utc> =
        sqlx::query_scalar("SELECT clock_timestamp()")
            .fetch_one(&h.pool)
            .await
            .unwrap();
    let committed = SystemTime::from(committed);

    // Poll: every answer is within the bound, and the first answer read after the claim
    // committed shows it. The loop ends by itself once the cache refreshes; the
    // deadline only turns a hang into a failure.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let answer = h.availability(event, section.section_id).await;
        let s = &answer.sections[0];
        assert!(s.age_ms <= bound, "age {} exceeds the bound", s.age_ms);
        let as_of = SystemTime::try_from(s.as_of.unwrap()).unwrap();
        if as_of > committed {
            assert!(!is_free(s, claimed), "a read after the claim must show it");
            assert!(is_free(s, lapsed), "a lapsed hold is free");
            assert_eq!(s.available, section.seat_count - 1);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cache never refreshed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn every_status_counts_as_the_holds_view_says_and_near_seat_suggestions_follow_the_seat() {
    let h = Harness::start(60_000).await;
    let event = h.event_on(SCREENSHOTS).await;
    let layout = h.layout(event).await;
    let section = &layout.sections[0];
    let seat = |offset: u64| section.first_seat_id + offset;
    let lost = section.rows[10].seats[12].clone();
    h.hold(event, section.section_id, lost.seat_id, 10).await;
    for (offset, status, minutes) in [
        (0, "held", 10),
        (1, "booked", 10),
        (2, "blocked", 10),
        (3, "expired", 10),
        (4, "released", 10),
        (5, "held", -1),
    ] {
        sqlx::query(
            "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, status, expires_at)
             VALUES (gen_random_uuid(), $1, $2, $3, 'fan-x', $4, now() + make_interval(mins => $5))",
        )
        .bind(event)
        .bind(section.section_id as i64)
        .bind(seat(offset) as i64)
        .bind(status)
        .bind(minutes)
        .execute(&h.pool)
        .await
        .unwrap();
    }
    let all = h.availability(event, 0).await;
    assert_eq!(all.sections.len(), layout.sections.len());
    for s in &all.sections {
        assert!(s.age_ms <= all.staleness_bound_ms);
        let expected = if s.section_id == section.section_id {
            s.seat_count - 4
        } else {
            s.seat_count
        };
        assert_eq!(s.available, expected, "section {}", s.section_id);
    }
    let first = &all.sections[0];
    let free: Vec<bool> = (0..6).map(|o| is_free(first, seat(o))).collect();
    assert_eq!(
        free,
        [false, false, false, true, true, true],
        "held, booked, blocked are taken; the rest are free"
    );

    // After losing a seat, a free seat right next to it (same or adjacent row, within
    // two seat widths) is suggested first.
    let answer = h
        .client()
        .suggest_seats(h.authed(SuggestSeatsRequest {
            event_id: event.to_string(),
            quantity: 1,
            preference: 3,
            near_seat_id: lost.seat_id,
            limit: 1,
            ..Default::default()
        }))
        .await
        .unwrap()
        .into_inner();
    let best = answer.suggestions[0].seat_ids[0];
    assert_ne!(best, lost.seat_id);
    assert!(is_free(first, best));
    let row = section
        .rows
        .iter()
        .position(|r| r.seats.iter().any(|x| x.seat_id == best))
        .expect("same section");
    assert!((9..=11).contains(&row), "row {row}");
    let at = section.rows[row]
        .seats
        .iter()
        .find(|x| x.seat_id == best)
        .unwrap()
        .position
        .unwrap();
    let from = lost.position.unwrap();
    assert!(
        (at.x - from.x).hypot(at.y - from.y) <= 60.0,
        "{at:?} is far from {from:?}"
    );

    let status = h
        .client()
        .suggest_seats(h.authed(SuggestSeatsRequest {
            event_id: event.to_string(),
            quantity: 2,
            scope: Some(Scope::CategoryCode("Stehplatz".into())),
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(
        error_info(&status).unwrap().metadata["field"],
        "category_code"
    );
}

#[tokio::test]
async fn a_section_on_a_shard_is_read_there() {
    let east = stadium_testkit::fresh_database().await;
    let flag = format!("east={}", east.url);
    let h = Harness::start_with(60_000, &["--shard", &flag]).await;
    let event = h.event_on(SCREENSHOTS).await;
    let layout = h.layout(event).await;
    let (placed, stayed) = (&layout.sections[0], &layout.sections[1]);
    sqlx::query(
        "INSERT INTO catalog.section_shards (event_id, section_id, shard) VALUES ($1, $2, 'east')",
    )
    .bind(event)
    .bind(placed.section_id as i64)
    .execute(&h.pool)
    .await
    .unwrap();
    // The placed section's seat is held on the shard; a row left on the main database
    // for it is not the section's any more. The other section is still read on main.
    plant_hold(
        &east.pool,
        event,
        placed.section_id,
        placed.first_seat_id,
        10,
    )
    .await;
    plant_hold(
        &h.pool,
        event,
        placed.section_id,
        placed.first_seat_id + 1,
        10,
    )
    .await;
    plant_hold(&h.pool, event, stayed.section_id, stayed.first_seat_id, 10).await;

    let all = h.availability(event, 0).await;
    let by_id = |id: u64| all.sections.iter().find(|s| s.section_id == id).unwrap();
    let first = by_id(placed.section_id);
    assert!(!is_free(first, placed.first_seat_id));
    assert!(is_free(first, placed.first_seat_id + 1));
    assert_eq!(first.available, first.seat_count - 1);
    let second = by_id(stayed.section_id);
    assert!(!is_free(second, stayed.first_seat_id));
}
