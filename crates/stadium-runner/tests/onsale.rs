//! A small on-sale end to end (issue 8's CI test): about 2,000 fans for 500 seats in
//! compressed time through all five services, then the stored data is checked: every
//! seat sold at most once, the counts add up, one refund per late payment and none
//! otherwise, and the report's numbers equal the database's. The `pgbench` floor then
//! books as many orders on the same database server.

use std::time::Duration;

#[path = "support/arena.rs"]
mod arena;
mod support;

use arena::arena_csv;
use stadium_runner::onsale::FloorConfig;
use stadium_runner::{FloorOutcome, OnSaleConfig};
use support::stack_on_fresh_database;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_small_on_sale_sells_each_seat_once_and_the_report_matches_the_database() {
    let (stack, _db) = stack_on_fresh_database().await;
    let manifest = arena_csv();
    let config = OnSaleConfig {
        venue: Some(manifest.path().to_owned()),
        seats: 500,
        sections: 4,
        fans: 2_000,
        admission_rate: 60_000,
        hold_ttl: Duration::from_secs(20),
        onsale_lead: Duration::from_secs(2),
        time_scale: 20.0,
        best_available_share: 0.8,
        seed: 7,
        progress: false,
        floor: Some(FloorConfig {
            pgbench: std::env::var("PGBENCH").unwrap_or_else(|_| "pgbench".to_owned()),
            clients: 4,
        }),
    };
    let outcome = stadium_runner::onsale::run(&stack.deployment(), &config, None).await;
    stack.stop().await.expect("clean stop");
    let (report, check, floor, _) = outcome.expect("the on-sale runs");
    println!(
        "{}\n{}\n{}",
        report.to_text(),
        check.to_text(),
        floor.to_text(report.sold_out_after_s)
    );

    assert_eq!(check.seats, 500);
    assert_eq!(check.seats_claimed_twice, 0, "a seat has two active claims");
    assert_eq!(check.payments_per_hold_over_one, 0, "a hold was paid twice");
    assert_eq!(
        check.sold + check.held + check.blocked + check.available,
        check.seats,
        "sold + held + blocked + available != seats"
    );
    assert_eq!(check.tickets, check.sold, "one valid ticket per sold seat");
    assert_eq!(
        report.seats_sold as i64, check.sold,
        "report vs database: sold"
    );
    assert!(check.sold > 0, "nothing was sold");
    // One refund per late payment that reached the payment step, none otherwise.
    assert_eq!(
        check.hold_expired_refunds, report.late.refunded as i64,
        "refunds for expired holds must be exactly the late payments'"
    );
    assert_eq!(
        report.unexpected_refunds, 0,
        "a timely payment was refunded"
    );
    assert!(check.is_ok(), "{:?}", check.disagreements);
    match floor {
        FloorOutcome::Measured(floor) => assert_eq!(floor.orders, report.orders_paid),
        other => panic!("the floor did not run: {other:?}"),
    }
    assert!(report.is_ok(), "{}", report.to_text());
}
