//! A stadium-sized sale minutes after it started: 50,000 seats and thousands of claims
//! in tables the planner has no statistics for yet. The report and the canary must
//! answer within the database's statement timeout (a plan comparing every seat with
//! every claim took minutes here), and count every seat. The request timeout is raised
//! so a busy machine fails this only through the statement timeout.

use stadium_proto::box_office::v1 as pb;
use stadium_venues::{SourceFormat, StadiumParams, generate_stadium};

use crate::support::{Office, create_request};

#[tokio::test]
async fn fifty_thousand_seats_report_and_check() {
    let mut office = Office::start(&["--request-timeout-ms", "30000"]).await;
    let plan = generate_stadium(StadiumParams::default()).expect("default stadium");
    let mut conn = office.pool().acquire().await.unwrap();
    let stored = stadium_venues::store_plan(
        &mut conn,
        "Bowl",
        SourceFormat::Generated,
        &"ab".repeat(32),
        &plan,
    )
    .await
    .expect("stored");
    drop(conn);
    let codes: Vec<String> = plan.categories.iter().map(|c| c.code.clone()).collect();
    let mut request = create_request(&stored.venue_id.to_string());
    request.price_categories = codes
        .iter()
        .map(|code| pb::PriceCategory {
            code: code.clone(),
            name: String::new(),
            price: crate::support::eur(1000),
        })
        .collect();
    let event = office.create_event(request).await;
    let event_id: i64 = event.event_id.parse().unwrap();
    // Every tenth seat held, every seventh booked with its payment.
    sqlx::query(
        "WITH s AS (SELECT section_id, seat_id, row_number() OVER (ORDER BY seat_id) AS n
                    FROM catalog.event_seats WHERE event_id = $1)
         INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, status, expires_at)
         SELECT gen_random_uuid(), $1, section_id, seat_id, 'fan-' || n,
                CASE WHEN n % 7 = 0 THEN 'booked' ELSE 'held' END, now() + interval '5 minutes'
         FROM s WHERE n % 7 = 0 OR n % 10 = 0",
    )
    .bind(event_id)
    .execute(office.pool())
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO payments.payments (payment_id, hold_key, event_id, fan_id, amount_minor, currency, status)
         SELECT gen_random_uuid(), hold_key, event_id, fan_id, 1000, 'EUR', 'captured'
         FROM holds.seat_holds WHERE event_id = $1 AND status = 'booked'",
    )
    .bind(event_id)
    .execute(office.pool())
    .await
    .unwrap();

    let report = office
        .client
        .get_sales_report(office.sre(pb::GetSalesReportRequest {
            event_id: event.event_id.clone(),
            group_by: pb::ReportGrouping::Section as i32,
            csv: true,
        }))
        .await
        .unwrap()
        .into_inner();
    let total = report.total.unwrap();
    assert_eq!(total.seats, stored.seats);
    assert_eq!(
        total.seats,
        total.available + total.held + total.sold + total.blocked
    );
    assert_eq!(
        u64::from(total.sold) * 1000,
        total.revenue.unwrap().amount_minor as u64
    );

    let check = office
        .client
        .check_invariants(office.sre(pb::CheckInvariantsRequest {
            event_id: event.event_id.clone(),
        }))
        .await
        .unwrap()
        .into_inner();
    assert!(check.violations.is_empty(), "{:?}", check.violations);
    office.stop().await;
}
