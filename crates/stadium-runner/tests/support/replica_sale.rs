//! The small on-sale through replicas that the replica and fault tests run: about
//! 2,000 fans for the 500-seat arena, fast enough for CI.

use std::time::Duration;

use stadium_runner::OnSaleConfig;
use stadium_runner::replicas::{self, ProcessOptions, ProcessStack, ReplicaCounts};
use stadium_testkit::TestDatabase;

/// The replicas (default counts) over a fresh database, which lives as long as the
/// returned handle.
pub async fn start() -> (TestDatabase, ProcessStack) {
    let db = stadium_testkit::fresh_database().await;
    let bin_dir = replicas::binaries_beside_this_program()
        .expect("the service binaries are built with the tests (cargo test --workspace)");
    let stack = ProcessStack::start(ProcessOptions {
        database_url: Some(db.url.clone()),
        redis_url: Some(stadium_testkit::redis_url().await),
        replicas: ReplicaCounts::default(),
        bin_dir,
    })
    .await
    .expect("every replica starts in production mode");
    (db, stack)
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
