//! Best available, decided by the server: truly parallel requests on one section,
//! blocks by price category across sections, the fallback when seats need not be
//! together, and bad requests that write nothing.

use std::collections::BTreeMap;

use stadium_kit::Reason;
use stadium_kit::status::error_info;
use stadium_proto::holds::v1::claim_best_available_request::Target;
use stadium_proto::holds::v1::holds_client::HoldsClient;
use stadium_proto::holds::v1::{ClaimBestAvailableRequest, Hold};
use stadium_testkit::{all_at_once, catalog};
use tonic::{Code, Status};

use crate::support::{EventSettings, Fan, TestApp, assert_invariants, bearer, reason, snapshot};

async fn best(
    fan: &mut Fan,
    target: Target,
    quantity: u32,
    together: bool,
) -> Result<Hold, Status> {
    let request = ClaimBestAvailableRequest {
        admission_token: fan.admission.clone(),
        event_id: fan.event.clone(),
        target: Some(target),
        quantity,
        together,
        request_id: String::new(),
        wait_for_returns: false,
        also_price_categories: Vec::new(),
        presale_code: String::new(),
    };
    fan.client
        .claim_best_available(bearer(request, &fan.session))
        .await
        .map(|r| r.into_inner().hold.expect("a hold"))
}

/// `fans` fans of `event` each ask at once for 2 adjacent seats of `target`; the answers.
async fn all_at_once_best(
    app: &TestApp,
    event: &str,
    fans: usize,
    target: Target,
) -> Vec<Result<Hold, Status>> {
    let fans: Vec<Fan> = (0..fans)
        .map(|i| app.fan(&format!("fan-{i}"), event))
        .collect();
    let count = fans.len();
    let fans = std::sync::Arc::new(std::sync::Mutex::new(
        fans.into_iter().map(Some).collect::<Vec<_>>(),
    ));
    all_at_once(count, move |i| {
        let mut fan = fans.lock().unwrap()[i].take().expect("one task per fan");
        let target = target.clone();
        async move { best(&mut fan, target, 2, true).await }
    })
    .await
}

/// The holds among `results`, and the refusals, each checked to be `SEAT_TAKEN`.
fn holds_and_seat_taken(results: &[Result<Hold, Status>]) -> (Vec<&Hold>, Vec<&Status>) {
    let mut holds = Vec::new();
    let mut refusals = Vec::new();
    for result in results {
        match result {
            Ok(hold) => holds.push(hold),
            Err(status) => {
                assert_eq!(
                    reason(status, Code::AlreadyExists),
                    Reason::SeatTaken,
                    "{status:?}"
                );
                refusals.push(status);
            }
        }
    }
    (holds, refusals)
}

/// (row, seat index) of each seat of the venue.
async fn places(app: &TestApp) -> BTreeMap<u64, (i32, i32)> {
    let rows: Vec<(i64, i32, i32)> = sqlx::query_as(
        "SELECT seat_id, row_index, seat_index FROM catalog.seats WHERE venue_id = $1",
    )
    .bind(app.venue)
    .fetch_all(app.pool())
    .await
    .unwrap();
    rows.into_iter()
        .map(|(seat, row, index)| (seat as u64, (row, index)))
        .collect()
}

fn adjacent(seats: &[u64], places: &BTreeMap<u64, (i32, i32)>) -> bool {
    seats.windows(2).all(|w| {
        let (a, b) = (places[&w[0]], places[&w[1]]);
        a.0 == b.0 && b.1 == a.1 + 1
    })
}

/// 200 concurrent best-available claims of 2 seats on a section of 100 free seats in
/// rows of 10: exactly 100 seats held, every hold adjacent, and no answer but
/// `SEAT_TAKEN` once the section is full — each refusal saw no free seat at all, so
/// none came while a block of 2 was still free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_fans_fill_a_section_in_adjacent_pairs() {
    let app = TestApp::start().await;
    let section = catalog::section(app.pool(), app.venue, "C", 3, 10, 10).await;
    let event = app.event(EventSettings::default()).await;
    let results = all_at_once_best(&app, &event, 200, Target::SectionId(section.id)).await;

    let places = places(&app).await;
    let (holds, refusals) = holds_and_seat_taken(&results);
    for hold in &holds {
        assert_eq!(hold.section_id, section.id);
        assert_eq!(hold.seat_ids.len(), 2);
        assert!(adjacent(&hold.seat_ids, &places), "{hold:?}");
    }
    for status in refusals {
        let info = error_info(status).unwrap();
        assert_eq!(info.metadata["fewer_seats"], "0", "{status:?}");
        assert_eq!(info.metadata["not_together"], "false", "{status:?}");
    }
    assert_eq!(holds.len(), 50);
    let in_section: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds WHERE event_id = $1::bigint AND section_id = $2 \
           AND status = 'held'",
    )
    .bind(&event)
    .bind(section.id as i64)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(in_section, 100);
    let split: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT hold_key FROM holds.seat_holds s \
             JOIN catalog.seats c USING (seat_id) WHERE s.event_id = $1::bigint \
             GROUP BY hold_key \
             HAVING count(DISTINCT c.row_index) <> 1 \
                 OR max(c.seat_index) - min(c.seat_index) <> count(*) - 1) x",
    )
    .bind(&event)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(split, 0, "holds that are not one adjacent block");
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// A block another claim is taking at this moment (its seats' advisory locks held by a
/// transaction in flight) is passed over for the best free block, not waited for:
/// waiting would outlast the pool's statement timeout and fail the claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_being_claimed_is_passed_over_for_the_best_free_one() {
    let app = TestApp::start().await;
    // One row of ten seats, the best at the front left.
    let section = catalog::section(app.pool(), app.venue, "C", 3, 1, 10).await;
    let event = app.event(EventSettings::default()).await;
    let seats: Vec<i64> = section.seats.iter().map(|&s| s as i64).collect();
    let mut in_flight = app.pool().begin().await.unwrap();
    sqlx::query(
        "SELECT pg_advisory_xact_lock(hashint8($1::bigint), hashint8(s)) \
         FROM unnest($2::bigint[]) AS s",
    )
    .bind(&event)
    .bind(&seats[..8])
    .execute(&mut *in_flight)
    .await
    .unwrap();

    let mut fan = app.fan("fan-1", &event);
    let hold = best(&mut fan, Target::SectionId(section.id), 2, true)
        .await
        .unwrap();
    assert_eq!(hold.seat_ids, section.seats[8..].to_vec());
    in_flight.rollback().await.unwrap();

    // Once that claim is gone, the best block is the best again.
    let mut fan = app.fan("fan-2", &event);
    let hold = best(&mut fan, Target::SectionId(section.id), 2, true)
        .await
        .unwrap();
    assert_eq!(hold.seat_ids, section.seats[..2].to_vec());
    assert_invariants(app.pool()).await;
    app.stop().await;
}

/// A price category over eight sections (two rows of four seats each: 32 pairs) and 60
/// concurrent best-available claims of 2 seats in it: holds picks the sections, one per
/// round; exactly 32 adjacent pairs are held, all in the category; no answer but
/// `SEAT_TAKEN` once it is full, naming only sections of other categories.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_price_category_fills_across_its_sections_in_adjacent_pairs() {
    let app = TestApp::start().await;
    let mut upper = Vec::new();
    for i in 0..8 {
        let section = catalog::section(app.pool(), app.venue, &format!("U{i}"), 10 + i, 2, 4).await;
        upper.push(section.id);
    }
    sqlx::query("UPDATE catalog.seats SET category_code = 'upper' WHERE section_id = ANY($1)")
        .bind(upper.iter().map(|s| *s as i64).collect::<Vec<_>>())
        .execute(app.pool())
        .await
        .unwrap();
    let event = app.event(EventSettings::default()).await;
    let results = all_at_once_best(&app, &event, 60, Target::PriceCategory("upper".into())).await;

    let places = places(&app).await;
    let (holds, refusals) = holds_and_seat_taken(&results);
    for hold in &holds {
        assert!(upper.contains(&hold.section_id), "{hold:?}");
        assert!(adjacent(&hold.seat_ids, &places), "{hold:?}");
    }
    for status in refusals {
        let named = stadium_testkit::grpc::seat_list(status, "other_section_ids");
        assert!(named.iter().all(|s| !upper.contains(s)), "{status:?}");
    }
    assert_eq!(holds.len(), 32);
    let (held_seats, _, _) = crate::support::active_counts(app.pool(), &event).await;
    assert_eq!(held_seats, 64);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn best_seats_first_by_category_and_scattered_when_not_together() {
    let app = TestApp::start().await;
    let b = app.sections[1].clone();
    sqlx::query("UPDATE catalog.seats SET category_code = 'vip' WHERE section_id = $1")
        .bind(b.id as i64)
        .execute(app.pool())
        .await
        .unwrap();
    let event = app.event(EventSettings::default()).await;
    let mut fan = app.fan("fan-1", &event);
    // The front left of B is its best view (focus at the origin).
    let vip = best(&mut fan, Target::PriceCategory("vip".into()), 3, true)
        .await
        .unwrap();
    assert_eq!(vip.section_id, b.id);
    assert_eq!(vip.seat_ids, b.seats[0..3].to_vec());

    // Leave only single seats in B: every other seat taken.
    let others: Vec<u64> = b.seats[3..].iter().copied().step_by(2).collect();
    let staff = app.issuers.admin(&[stadium_tokens::Role::BoxOffice]);
    app.client()
        .block_seats(bearer(
            stadium_proto::holds::v1::BlockSeatsRequest {
                event_id: event.clone(),
                section_id: b.id,
                seat_ids: others,
                reason: "camera".into(),
            },
            &staff,
        ))
        .await
        .unwrap();
    let mut blocker = app.fan("blocker", &event);
    let refused = best(&mut blocker, Target::SectionId(b.id), 2, true)
        .await
        .unwrap_err();
    assert_eq!(reason(&refused, Code::AlreadyExists), Reason::SeatTaken);
    let info = error_info(&refused).unwrap();
    assert_eq!(info.metadata["fewer_seats"], "1");
    assert_eq!(info.metadata["not_together"], "true");
    assert_eq!(
        info.metadata["other_section_ids"],
        app.sections[0].id.to_string()
    );
    let scattered = best(&mut blocker, Target::SectionId(b.id), 2, false)
        .await
        .unwrap();
    assert_eq!(scattered.section_id, b.id);
    assert_eq!(scattered.seat_ids.len(), 2);
    assert_invariants(app.pool()).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_best_available_requests_name_the_field_and_write_nothing() {
    let app = TestApp::start().await;
    let event = app.event(EventSettings::default()).await;
    let mut fan = app.fan("fan-1", &event);
    let a = app.sections[0].id;
    let before = snapshot(app.pool()).await;
    let cases = [
        (Some(Target::SectionId(a)), 0, "quantity"),
        (Some(Target::SectionId(a)), 9, "quantity"),
        (Some(Target::SectionId(999_999)), 2, "section_id"),
        (Some(Target::SectionId(0)), 2, "section_id"),
        (
            Some(Target::PriceCategory("nope".into())),
            2,
            "price_category",
        ),
        (Some(Target::PriceCategory(" ".into())), 2, "price_category"),
        (None, 2, "target"),
    ];
    for (target, quantity, field) in cases {
        let request = ClaimBestAvailableRequest {
            admission_token: fan.admission.clone(),
            event_id: event.clone(),
            target,
            quantity,
            together: true,
            request_id: String::new(),
            wait_for_returns: false,
            also_price_categories: Vec::new(),
            presale_code: String::new(),
        };
        let status = HoldsClient::new(app.channel.clone())
            .claim_best_available(bearer(request, &fan.session))
            .await
            .unwrap_err();
        assert_eq!(reason(&status, Code::InvalidArgument), Reason::InvalidField);
        assert_eq!(error_info(&status).unwrap().metadata["field"], field);
    }
    assert_eq!(snapshot(app.pool()).await, before);
    // A good request still works afterwards.
    best(&mut fan, Target::SectionId(a), 2, true).await.unwrap();
    assert_invariants(app.pool()).await;
    app.stop().await;
}
