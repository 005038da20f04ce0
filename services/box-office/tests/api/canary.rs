//! The invariant canary and the sales report over a sale planted by SQL: a clean sale
//! has no violation and reports exact counts and money; each kind of violation, planted
//! without dropping or disabling anything, is found with its rows.

use stadium_kit::Reason;
use std::collections::BTreeSet;
use std::time::Duration;

use sqlx::PgPool;
use stadium_proto::box_office::v1 as pb;
use uuid::Uuid;

use crate::support::{Office, PATIENCE};

/// Seat ids of the test venue's two sections.
struct Layout {
    event_id: i64,
    section_a: i64,
    section_b: i64,
    a: Vec<i64>,
    b: Vec<i64>,
}

async fn layout(pool: &PgPool, event_id: i64) -> Layout {
    let seats: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT sc.code, s.section_id, s.seat_id FROM catalog.event_seats s
         JOIN catalog.sections sc USING (section_id) WHERE s.event_id = $1 ORDER BY s.seat_id",
    )
    .bind(event_id)
    .fetch_all(pool)
    .await
    .unwrap();
    let pick = |code: &str| -> (i64, Vec<i64>) {
        let rows: Vec<_> = seats.iter().filter(|s| s.0 == code).collect();
        (rows[0].1, rows.iter().map(|s| s.2).collect())
    };
    let (section_a, a) = pick("A");
    let (section_b, b) = pick("B");
    Layout {
        event_id,
        section_a,
        section_b,
        a,
        b,
    }
}

async fn hold(
    pool: &PgPool,
    l: &Layout,
    section: i64,
    seats: &[i64],
    status: &str,
    kind: &str,
    expires_in_s: i64,
) -> Uuid {
    let key = Uuid::new_v4();
    for seat in seats {
        sqlx::query(
            "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, status, kind, expires_at)
             VALUES ($1, $2, $3, $4, 'fan-1', $5, $6, now() + make_interval(secs => $7))",
        )
        .bind(key)
        .bind(l.event_id)
        .bind(section)
        .bind(seat)
        .bind(status)
        .bind(kind)
        .bind(expires_in_s as f64)
        .execute(pool)
        .await
        .unwrap();
    }
    key
}

async fn payment(
    pool: &PgPool,
    l: &Layout,
    hold_key: Uuid,
    amount: i64,
    status: &str,
    refunded: i64,
) -> Uuid {
    let id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO payments.payments (payment_id, hold_key, event_id, fan_id, amount_minor, currency, status, refunded_minor)
         VALUES ($1, $2, $3, 'fan-1', $4, 'EUR', $5, $6)",
    )
    .bind(id)
    .bind(hold_key)
    .bind(l.event_id)
    .bind(amount)
    .bind(status)
    .bind(refunded)
    .execute(pool)
    .await
    .unwrap();
    id
}

async fn ticket(
    pool: &PgPool,
    l: &Layout,
    payment_id: Uuid,
    section: i64,
    seat: i64,
    status: &str,
) {
    sqlx::query(
        "INSERT INTO payments.tickets (ticket_id, payment_id, event_id, section_id, seat_id, fan_id, code, status)
         VALUES ($1, $2, $3, $4, $5, 'fan-1', $6, $7)",
    )
    .bind(Uuid::new_v4())
    .bind(payment_id)
    .bind(l.event_id)
    .bind(section)
    .bind(seat)
    .bind(Uuid::new_v4().to_string())
    .bind(status)
    .execute(pool)
    .await
    .unwrap();
}

/// A sale that keeps every invariant: a paid order of two seats in A, a comp in B, a
/// live hold in A, a block in B, a refunded order in B, a lapsed hold in A.
async fn clean_sale(pool: &PgPool, l: &Layout) {
    let paid = hold(pool, l, l.section_a, &l.a[0..2], "booked", "fan", 300).await;
    let p = payment(pool, l, paid, 10_000, "captured", 0).await;
    for seat in &l.a[0..2] {
        ticket(pool, l, p, l.section_a, *seat, "valid").await;
    }
    let comp = hold(pool, l, l.section_b, &l.b[0..1], "booked", "comp", 300).await;
    let c = payment(pool, l, comp, 0, "comp", 0).await;
    ticket(pool, l, c, l.section_b, l.b[0], "valid").await;
    hold(pool, l, l.section_a, &l.a[2..3], "held", "fan", 300).await;
    hold(pool, l, l.section_b, &l.b[1..2], "blocked", "block", 86_400).await;
    let refunded = hold(pool, l, l.section_b, &l.b[2..3], "released", "fan", 300).await;
    let r = payment(pool, l, refunded, 2_500, "refunded", 2_500).await;
    ticket(pool, l, r, l.section_b, l.b[2], "void").await;
    hold(pool, l, l.section_a, &l.a[3..4], "held", "fan", -60).await;
}

async fn violations(office: &mut Office, event_id: i64) -> Vec<pb::Violation> {
    office
        .client
        .check_invariants(office.sre(pb::CheckInvariantsRequest {
            event_id: event_id.to_string(),
        }))
        .await
        .unwrap()
        .into_inner()
        .violations
}

fn names(found: &[pb::Violation]) -> BTreeSet<&str> {
    found.iter().map(|v| v.invariant.as_str()).collect()
}

fn rows_of<'a>(found: &'a [pb::Violation], invariant: &str) -> &'a [String] {
    &found
        .iter()
        .find(|v| v.invariant == invariant)
        .expect("violation present")
        .rows
}

async fn event_on_sale(office: &mut Office) -> Layout {
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    let id: i64 = event.event_id.parse().unwrap();
    layout(office.pool(), id).await
}

#[tokio::test]
async fn a_clean_sale_has_no_violation_and_each_planted_one_is_found() {
    let office = Office::start(&[]).await;
    planted_violations_are_found(office).await;
}

/// With a shard configured the canary reads every database and joins them itself:
/// with every seat still on the main database it finds exactly what the database
/// function finds.
#[tokio::test]
async fn the_canary_across_shards_finds_what_the_one_database_check_finds() {
    let east = stadium_testkit::fresh_database().await;
    let flag = format!("east={}", east.url);
    let office = Office::start(&["--shard", &flag]).await;
    planted_violations_are_found(office).await;
}

async fn planted_violations_are_found(mut office: Office) {
    let l = event_on_sale(&mut office).await;
    clean_sale(office.pool(), &l).await;
    let found = violations(&mut office, l.event_id).await;
    assert!(found.is_empty(), "{found:?}");

    // A booked seat with no payment at all.
    hold(
        office.pool(),
        &l,
        l.section_a,
        &l.a[4..5],
        "booked",
        "fan",
        300,
    )
    .await;
    let found = violations(&mut office, l.event_id).await;
    assert_eq!(names(&found), BTreeSet::from(["booked_without_payment"]));
    assert!(rows_of(&found, "booked_without_payment")[0].contains(&format!("seat_id={}", l.a[4])));

    // A captured payment whose hold was released.
    let gone = hold(
        office.pool(),
        &l,
        l.section_a,
        &l.a[5..6],
        "released",
        "fan",
        300,
    )
    .await;
    payment(office.pool(), &l, gone, 5_000, "captured", 0).await;
    let found = violations(&mut office, l.event_id).await;
    assert_eq!(
        names(&found),
        BTreeSet::from(["booked_without_payment", "payment_without_seats"])
    );
    assert!(rows_of(&found, "payment_without_seats")[0].contains(&gone.to_string()));

    // A valid ticket of another order on a seat someone holds.
    let old = hold(office.pool(), &l, l.section_a, &[], "released", "fan", 0).await;
    let stale = payment(office.pool(), &l, old, 5_000, "refunded", 5_000).await;
    ticket(office.pool(), &l, stale, l.section_a, l.a[2], "valid").await;
    let found = violations(&mut office, l.event_id).await;
    assert!(names(&found).contains("two_active_claims"), "{found:?}");
    assert!(rows_of(&found, "two_active_claims")[0].contains(&format!("seat_id={}", l.a[2])));

    // A claim naming the wrong section: section counts no longer add up.
    hold(
        office.pool(),
        &l,
        l.section_a,
        &l.b[3..4],
        "blocked",
        "block",
        300,
    )
    .await;
    let found = violations(&mut office, l.event_id).await;
    assert_eq!(
        names(&found),
        BTreeSet::from([
            "booked_without_payment",
            "counts_do_not_add_up",
            "payment_without_seats",
            "two_active_claims"
        ])
    );
    let rows = rows_of(&found, "counts_do_not_add_up");
    assert_eq!(rows.len(), 2, "both sections disagree: {rows:?}");

    let status = office
        .client
        .check_invariants(office.sre(pb::CheckInvariantsRequest {
            event_id: "999999".into(),
        }))
        .await
        .unwrap_err();
    assert_eq!(
        crate::support::reason(&status).1,
        Some(Reason::EventNotFound)
    );
    office.stop().await;
}

#[tokio::test]
async fn the_report_counts_seats_and_splits_money_exactly() {
    let mut office = Office::start(&[]).await;
    let l = event_on_sale(&mut office).await;
    clean_sale(office.pool(), &l).await;
    // A second order in B, on the seat the refunded order gave back: 501 + 500 cents.
    let odd = hold(
        office.pool(),
        &l,
        l.section_b,
        &l.b[2..4],
        "booked",
        "fan",
        300,
    )
    .await;
    payment(office.pool(), &l, odd, 1_001, "captured", 0).await;
    // Its fan was admitted by a waiting-list offer: a sale through the list.
    sqlx::query("UPDATE holds.seat_holds SET admission_jti = $2 WHERE hold_key = $1")
        .bind(odd)
        .bind(format!(
            "{}{}",
            stadium_tokens::OFFER_JTI_PREFIX,
            Uuid::new_v4()
        ))
        .execute(office.pool())
        .await
        .unwrap();

    let report = office
        .client
        .get_sales_report(office.sre(pb::GetSalesReportRequest {
            event_id: l.event_id.to_string(),
            group_by: pb::ReportGrouping::Section as i32,
            csv: true,
        }))
        .await
        .unwrap()
        .into_inner();
    let row = |key: &str| report.rows.iter().find(|r| r.key == key).unwrap().clone();
    let a = row("A");
    assert_eq!(
        (a.seats, a.available, a.held, a.sold, a.blocked, a.comps),
        (6, 3, 1, 2, 0, 0)
    );
    assert_eq!(a.revenue.unwrap().amount_minor, 10_000);
    let b = row("B");
    assert_eq!(
        (b.seats, b.available, b.held, b.sold, b.blocked, b.comps),
        (4, 0, 0, 3, 1, 1)
    );
    assert_eq!(b.revenue.as_ref().unwrap().amount_minor, 1_001);
    assert_eq!((a.waiting_list_sold, b.waiting_list_sold), (0, 2));
    assert_eq!(b.revenue.unwrap().currency, "EUR");
    assert_eq!((b.refunds, b.refunded.unwrap().amount_minor), (1, 2_500));
    let total = report.total.unwrap();
    assert_eq!(
        total.seats,
        total.available + total.held + total.sold + total.blocked
    );
    assert_eq!(total.revenue.as_ref().unwrap().amount_minor, 11_001);
    assert_eq!(total.waiting_list_sold, 2);
    assert!(
        report.csv.starts_with("key,seats,available"),
        "{}",
        report.csv
    );
    assert!(
        report
            .csv
            .contains("\ntotal,10,3,1,5,1,1,2,11001,1,2500,EUR\n"),
        "{}",
        report.csv
    );

    let by_category = office
        .client
        .get_sales_report(office.sre(pb::GetSalesReportRequest {
            event_id: l.event_id.to_string(),
            group_by: pb::ReportGrouping::PriceCategory as i32,
            csv: false,
        }))
        .await
        .unwrap()
        .into_inner();
    let keys: BTreeSet<&str> = by_category.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, BTreeSet::from(["BACK", "FRONT"]));
    assert!(by_category.csv.is_empty());
    assert_eq!(by_category.total.unwrap(), total);

    let timeline = office
        .client
        .get_sales_timeline(office.sre(pb::GetSalesTimelineRequest {
            event_id: l.event_id.to_string(),
            bucket_ms: 0,
        }))
        .await
        .unwrap()
        .into_inner();
    let sold: u32 = timeline.points.iter().map(|p| p.sold).sum();
    let refunded: u32 = timeline.points.iter().map(|p| p.refunded).sum();
    let revenue: i64 = timeline
        .points
        .iter()
        .map(|p| p.revenue.as_ref().unwrap().amount_minor)
        .sum();
    assert_eq!((sold, refunded, revenue), (4, 1, 12_500));
    office.stop().await;
}

#[tokio::test]
async fn the_periodic_canary_counts_violations_of_live_events() {
    let mut office = Office::start(&["--canary-interval-ms", "50"]).await;
    let l = event_on_sale(&mut office).await;
    office
        .client
        .open_sale(office.office(pb::OpenSaleRequest {
            event_id: l.event_id.to_string(),
        }))
        .await
        .unwrap();
    hold(
        office.pool(),
        &l,
        l.section_a,
        &l.a[0..2],
        "booked",
        "fan",
        300,
    )
    .await;
    let canary = office.parts.canary.clone();
    tokio::time::timeout(PATIENCE, async {
        while canary.violations() == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the canary finds the planted violation");
    assert_eq!(canary.violations(), 1, "one broken invariant on one event");
    office.stop().await;
}

#[tokio::test]
async fn seats_on_a_shard_are_checked_against_payments_on_the_main_database() {
    let east = stadium_testkit::fresh_database().await;
    let flag = format!("east={}", east.url);
    let mut office = Office::start(&["--shard", &flag]).await;
    let l = event_on_sale(&mut office).await;
    // An order whose seats are on the shard and whose payment and tickets are on the
    // main database: nothing to report.
    let paid = hold(
        &east.pool,
        &l,
        l.section_a,
        &l.a[0..2],
        "booked",
        "fan",
        300,
    )
    .await;
    let p = payment(office.pool(), &l, paid, 10_000, "captured", 0).await;
    for seat in &l.a[0..2] {
        ticket(office.pool(), &l, p, l.section_a, *seat, "valid").await;
    }
    let found = violations(&mut office, l.event_id).await;
    assert!(found.is_empty(), "{found:?}");

    // The same seat active on two shards at once.
    hold(
        office.pool(),
        &l,
        l.section_a,
        &l.a[1..2],
        "held",
        "fan",
        300,
    )
    .await;
    let found = violations(&mut office, l.event_id).await;
    assert!(names(&found).contains("two_active_claims"), "{found:?}");
    let row = &rows_of(&found, "two_active_claims")[0];
    assert!(row.contains(&format!("seat_id={}", l.a[1])), "{row}");
    assert!(
        row.contains("shard=main") && row.contains("shard=east"),
        "{row}"
    );
    assert!(names(&found).contains("counts_do_not_add_up"), "{found:?}");
    office.stop().await;
}

/// The sales report of `event_id` by section and by category, without their time.
async fn reports(office: &mut Office, event_id: i64) -> Vec<pb::GetSalesReportResponse> {
    let mut answers = Vec::new();
    for group_by in [
        pb::ReportGrouping::Section,
        pb::ReportGrouping::PriceCategory,
    ] {
        let request = office.sre(pb::GetSalesReportRequest {
            event_id: event_id.to_string(),
            group_by: group_by as i32,
            csv: true,
        });
        let mut answer = office
            .client
            .get_sales_report(request)
            .await
            .unwrap()
            .into_inner();
        answer.as_of = None;
        answers.push(answer);
    }
    answers
}

#[tokio::test]
async fn the_report_with_a_section_on_a_shard_equals_the_report_on_one_database() {
    let east = stadium_testkit::fresh_database().await;
    let flag = format!("east={}", east.url);
    let mut office = Office::start(&["--shard", &flag]).await;
    let l = event_on_sale(&mut office).await;
    clean_sale(office.pool(), &l).await;
    let before = reports(&mut office, l.event_id).await;

    // Section A's claims go to the shard (as a section move writes them there), with
    // the catalog rows a shard keeps; payments and tickets stay on the main database.
    sqlx::query("SELECT holds.register_shard('east')")
        .execute(&east.pool)
        .await
        .unwrap();
    let (venue, event): (String, String) = sqlx::query_as(
        "SELECT catalog.venue_rows(venue_id)::text, catalog.event_rows(event_id)::text \
         FROM catalog.events WHERE event_id = $1",
    )
    .bind(l.event_id)
    .fetch_one(office.pool())
    .await
    .unwrap();
    for rows in [venue, event] {
        sqlx::query("SELECT catalog.copy_all($1::jsonb)")
            .bind(rows)
            .execute(&east.pool)
            .await
            .unwrap();
    }
    let step = |sql: &'static str| sqlx::query(sql).bind(l.event_id).bind(l.section_a);
    step("SELECT holds.fence_section($1, $2, 500)")
        .execute(office.pool())
        .await
        .unwrap();
    let (holds, history): (String, String) = sqlx::query_as(
        "SELECT seat_holds::text, seat_history::text FROM holds.section_rows($1, $2)",
    )
    .bind(l.event_id)
    .bind(l.section_a)
    .fetch_one(office.pool())
    .await
    .unwrap();
    step("SELECT * FROM holds.take_section($1, $2, $3::jsonb, $4::jsonb, 'test', 500)")
        .bind(holds)
        .bind(history)
        .execute(&east.pool)
        .await
        .unwrap();
    step("SELECT holds.give_section_away($1, $2)")
        .execute(office.pool())
        .await
        .unwrap();
    let on_east: i64 = sqlx::query_scalar("SELECT count(*) FROM holds.seat_holds")
        .fetch_one(&east.pool)
        .await
        .unwrap();
    assert!(on_east > 0, "section A's rows are on the shard");

    let after = reports(&mut office, l.event_id).await;
    assert_eq!(after, before);
    office.stop().await;
}
