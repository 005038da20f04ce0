//! What the runner's end-to-end tests share.

use stadium_runner::{Stack, StackOptions};
use stadium_testkit::TestDatabase;

/// All five services on a fresh migrated database and the tests' Redis. Keep the
/// database handle as long as the stack runs.
pub async fn stack_on_fresh_database() -> (Stack, TestDatabase) {
    let db = stadium_testkit::fresh_database().await;
    let stack = Stack::start(StackOptions {
        database_url: Some(db.url.clone()),
        redis_url: Some(stadium_testkit::redis_url().await),
        ..StackOptions::default()
    })
    .await
    .expect("stack starts");
    (stack, db)
}
