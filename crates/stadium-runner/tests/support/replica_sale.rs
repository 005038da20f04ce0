//! The small on-sale through replicas that the replica and fault tests run: about
//! 2,000 fans for the 500-seat arena, fast enough for CI.

use std::time::Duration;

use stadium_runner::replicas::{self, ProcessOptions, ProcessStack, ReplicaCounts};
use stadium_runner::{OnSaleConfig, ShardStores};

/// The replicas (default counts) over a private PostgreSQL and Redis of the run's
/// own, which a fault may restart and which go with the stack, and the holds' `shards`.
pub async fn start(shards: ShardStores) -> ProcessStack {
    let bin_dir = replicas::binaries_beside_this_program()
        .expect("the service binaries are built with the tests (cargo test --workspace)");
    ProcessStack::start(ProcessOptions {
        database_url: None,
        redis_url: None,
        shards,
        replicas: ReplicaCounts::default(),
        bin_dir,
    })
    .await
    .expect("every replica starts in production mode")
}

/// The sale of `venue` (the arena's CSV) with the fans' random choices from `seed`.
pub fn config(venue: &std::path::Path, seed: u64) -> OnSaleConfig {
    OnSaleConfig {
        venue: Some(venue.to_owned()),
        seats: 500,
        sections: 4,
        fans: 2_000,
        admission_rate: 30_000,
        hold_ttl: Duration::from_secs(20),
        onsale_lead: Duration::from_secs(2),
        time_scale: 10.0,
        best_available_share: 0.8,
        seed,
        progress: false,
        floor: None,
    }
}

/// The sale sold out with every invariant kept: no seat claimed twice, no hold paid
/// twice, one valid ticket per sold seat, no timely payment refunded, and the report
/// agreeing with the database.
pub fn assert_sold_out_clean(report: &loadtest::RunReport, check: &stadium_runner::DatabaseCheck) {
    assert_eq!(check.seats_claimed_twice, 0, "a seat has two active claims");
    assert_eq!(check.payments_per_hold_over_one, 0, "a hold was paid twice");
    assert_eq!(check.tickets, check.sold, "one valid ticket per sold seat");
    assert_eq!(check.sold, check.seats, "the on-sale sold out");
    assert_eq!(
        report.unexpected_refunds, 0,
        "a timely payment was refunded"
    );
    assert!(check.is_ok(), "{:?}", check.disagreements);
    assert!(report.is_ok(), "{}", report.to_text());
}
