//! Sale changes reach the waiting room after they commit: with the service token, the
//! full state each time, retried through failures, and in the background when the
//! answered attempts run out. Seat counts reach it every interval.

use std::time::Duration;

use stadium_proto::box_office::v1 as pb;
use stadium_proto::waiting_room::v1 as wr;
use tokio_util::sync::CancellationToken;

use crate::fake_room::{Call, FakeWaitingRoom, office_with_fake, office_with_fake_and};
use crate::support::{Office, PATIENCE, config};

#[tokio::test]
async fn every_sale_change_is_pushed_with_the_service_token() {
    let (mut office, fake, service_token, stop) = office_with_fake(0, "3").await;
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    assert!(fake.calls().is_empty(), "a draft is not pushed");
    let id = event.event_id.clone();

    let opened = office
        .client
        .open_sale(office.office(pb::OpenSaleRequest {
            event_id: id.clone(),
        }))
        .await
        .unwrap()
        .into_inner();
    let push = opened.waiting_room.unwrap();
    assert_eq!(
        (push.outcome, push.attempts),
        (pb::PushOutcome::Delivered as i32, 1)
    );
    office
        .client
        .pause_sale(office.office(pb::PauseSaleRequest {
            event_id: id.clone(),
        }))
        .await
        .unwrap();
    office
        .client
        .set_admission_rate(office.sre(pb::SetAdmissionRateRequest {
            event_id: id.clone(),
            fans_per_minute: 90,
            active_fan_cap: None,
        }))
        .await
        .unwrap();
    // A cap changes the whole configuration: sent as such, rate and all.
    office
        .client
        .set_admission_rate(office.sre(pb::SetAdmissionRateRequest {
            event_id: id.clone(),
            fans_per_minute: 120,
            active_fan_cap: Some(40),
        }))
        .await
        .unwrap();
    office
        .client
        .close_sale(office.office(pb::CloseSaleRequest {
            event_id: id.clone(),
        }))
        .await
        .unwrap();

    let calls = fake.calls();
    let seen: Vec<(&str, i32, u32, u32)> = calls
        .iter()
        .map(|c| (c.method, c.state, c.fans_per_minute, c.active_fan_cap))
        .collect();
    let (scheduled, paused, closed) = (
        wr::SaleState::Scheduled as i32,
        wr::SaleState::Paused as i32,
        wr::SaleState::Closed as i32,
    );
    assert_eq!(
        seen,
        [
            ("ConfigureEvent", scheduled, 600, 0),
            ("ConfigureEvent", paused, 600, 0),
            ("SetAdmissionRate", 0, 90, 0),
            ("ConfigureEvent", paused, 120, 40),
            ("ConfigureEvent", closed, 120, 40),
        ]
    );
    for call in &calls {
        assert_eq!(call.event_id, id);
        assert_eq!(call.bearer, format!("Bearer {service_token}"));
    }
    office.stop().await;
    stop.cancel();
}

#[tokio::test]
async fn a_push_is_retried_then_finished_in_the_background() {
    let (mut office, fake, _, stop) = office_with_fake(2, "3").await;
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    let push = office
        .client
        .open_sale(office.office(pb::OpenSaleRequest {
            event_id: event.event_id.clone(),
        }))
        .await
        .unwrap()
        .into_inner()
        .waiting_room
        .unwrap();
    assert_eq!(
        (push.outcome, push.attempts),
        (pb::PushOutcome::Delivered as i32, 3)
    );
    assert_eq!(fake.calls().len(), 1);
    office.stop().await;
    stop.cancel();

    let (mut office, fake, _, stop) = office_with_fake(3, "1").await;
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    let answer = office
        .client
        .open_sale(office.office(pb::OpenSaleRequest {
            event_id: event.event_id.clone(),
        }))
        .await
        .unwrap()
        .into_inner();
    let push = answer.waiting_room.unwrap();
    assert_eq!(push.outcome, pb::PushOutcome::Failed as i32);
    assert!(push.detail.contains("Unavailable"), "{}", push.detail);
    assert_eq!(
        answer.event.unwrap().status,
        pb::EventStatus::OnSale as i32,
        "the change is stored whatever the push"
    );
    tokio::time::timeout(PATIENCE, async {
        while fake.calls().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the background retry gets through");
    assert_eq!(fake.calls()[0].state, wr::SaleState::Scheduled as i32);
    office.stop().await;
    stop.cancel();
}

#[tokio::test]
async fn a_waiting_room_without_a_service_token_is_a_configuration_error() {
    let db = stadium_testkit::fresh_database().await;
    let dev = stadium_tokens::DevIssuer::generate().unwrap();
    let config = config(&db, &dev, &["--waiting-room-url", "http://127.0.0.1:1"]);
    let result = box_office::build(&config, &CancellationToken::new()).await;
    assert!(
        matches!(result, Err(stadium_kit::StartError::Config(_))),
        "{:?}",
        result.err()
    );
}

/// Inserts one hold row of `status` for `seat_id` (section 1), lapsing in `secs`.
async fn hold_row(
    office: &Office,
    event_id: i64,
    key: &str,
    seat_id: i64,
    status: &str,
    secs: i64,
) {
    sqlx::query(
        "INSERT INTO holds.seat_holds
             (hold_key, event_id, section_id, seat_id, fan_id, status, kind, expires_at)
         VALUES ($1::uuid, $2, 1, $3, 'fan-1', $4,
                 CASE WHEN $4 = 'blocked' THEN 'block' ELSE 'fan' END,
                 now() + make_interval(secs => $5))",
    )
    .bind(key)
    .bind(event_id)
    .bind(seat_id)
    .bind(status)
    .bind(secs as f64)
    .execute(office.pool())
    .await
    .expect("hold row");
}

#[tokio::test]
async fn seat_counts_reach_the_waiting_room_every_interval() {
    let (mut office, fake, service_token, stop) =
        office_with_fake_and(0, "3", &["--inventory-interval-ms", "50"]).await;
    let venue = office.venue().await;
    let draft = office.event(&venue.venue_id).await;
    let id: i64 = draft.event_id.parse().unwrap();
    let seats: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM catalog.seats s JOIN catalog.events e USING (venue_id)
          WHERE e.event_id = $1",
    )
    .bind(id)
    .fetch_one(office.pool())
    .await
    .unwrap();
    assert!(seats >= 8, "the test venue has {seats} seats");
    // Two live holds (2 + 1 seats), a lapsed one, a booking, a block, a release.
    let a = "00000000-0000-0000-0000-00000000000a";
    let b = "00000000-0000-0000-0000-00000000000b";
    hold_row(&office, id, a, 1, "held", 60).await;
    hold_row(&office, id, a, 2, "held", 60).await;
    hold_row(&office, id, b, 3, "held", 60).await;
    hold_row(
        &office,
        id,
        "00000000-0000-0000-0000-00000000000c",
        4,
        "held",
        -5,
    )
    .await;
    hold_row(
        &office,
        id,
        "00000000-0000-0000-0000-00000000000d",
        5,
        "booked",
        60,
    )
    .await;
    hold_row(
        &office,
        id,
        "00000000-0000-0000-0000-00000000000e",
        6,
        "blocked",
        60,
    )
    .await;
    hold_row(
        &office,
        id,
        "00000000-0000-0000-0000-00000000000f",
        7,
        "released",
        60,
    )
    .await;
    let reports = |fake: &FakeWaitingRoom| -> Vec<Call> {
        fake.calls()
            .into_iter()
            .filter(|c| c.method == "ReportInventory")
            .collect()
    };
    // A draft is not on sale: nothing is reported.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(reports(&fake).is_empty());

    office
        .client
        .open_sale(office.office(pb::OpenSaleRequest {
            event_id: draft.event_id.clone(),
        }))
        .await
        .unwrap();
    tokio::time::timeout(PATIENCE, async {
        while reports(&fake).len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("reports arrive every interval");
    // Each report's answer raises where the queue stood, not only the pushes.
    fake.set_queue(120, 300);
    let before = reports(&fake).len();
    tokio::time::timeout(PATIENCE, async {
        while reports(&fake).len() < before + 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("more reports");
    let event_id: i64 = draft.event_id.parse().unwrap();
    let mut conn = office.pool().acquire().await.unwrap();
    assert_eq!(
        box_office::store::queue_marks::load(&mut conn, event_id)
            .await
            .unwrap(),
        box_office::store::queue_marks::QueueMarks {
            admitted: 120,
            numbered: 300,
        }
    );
    drop(conn);
    let report = reports(&fake).pop().unwrap();
    assert_eq!(report.event_id, draft.event_id);
    assert_eq!(report.bearer, format!("Bearer {service_token}"));
    let inventory = report.inventory.expect("counts");
    // Free: every seat but the 3 held, the booked and the blocked one; the lapsed
    // hold and the released seat are free again.
    assert_eq!(
        (inventory.free_seats, inventory.held_seats, inventory.holds),
        (seats as u64 - 5, 3, 2)
    );
    assert!(inventory.as_of.is_some());
    let per_claim = draft.settings.as_ref().unwrap().max_seats_per_claim;
    assert_eq!(inventory.max_seats_per_claim, per_claim);
    office.stop().await;
    stop.cancel();
}
