//! An on-sale across two shards of the holds (issue 16): the sections spread over two
//! more databases, about 2,000 fans for 500 seats; the sale sells out with no seat
//! claimed twice on any shard or across them, and the report equals the databases.

use std::time::Duration;

#[path = "support/arena.rs"]
mod arena;
#[path = "support/shard_check.rs"]
mod shard_check;

use arena::arena_csv;
use stadium_db::ShardUrl;
use stadium_runner::{OnSaleConfig, ShardStores, Stack, StackOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_on_sale_across_two_shards_sells_out_with_each_seat_sold_once() {
    let main = stadium_testkit::fresh_database().await;
    let s1 = stadium_testkit::fresh_database().await;
    let s2 = stadium_testkit::fresh_database().await;
    let stack = Stack::start(StackOptions {
        database_url: Some(main.url.clone()),
        redis_url: Some(stadium_testkit::redis_url().await),
        shards: ShardStores::Given(vec![
            ShardUrl {
                name: "s1".into(),
                url: s1.url.clone(),
            },
            ShardUrl {
                name: "s2".into(),
                url: s2.url.clone(),
            },
        ]),
        ..StackOptions::default()
    })
    .await
    .expect("stack starts");
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
        seed: 11,
        progress: false,
        floor: None,
    };
    let outcome = stadium_runner::onsale::run(&stack.deployment(), &config, None).await;
    stack.stop().await.expect("clean stop");
    let (report, check, _, _) = outcome.expect("the on-sale runs");
    println!("{}\n{}", report.to_text(), check.to_text());

    shard_check::assert_sold_on_the_two_shards(&check);
    assert_eq!(check.seats_claimed_twice, 0, "a seat has two active claims");
    assert_eq!(check.payments_per_hold_over_one, 0, "a hold was paid twice");
    assert_eq!(check.sold, check.seats, "the on-sale sold out");
    assert_eq!(check.tickets, check.sold, "one valid ticket per sold seat");
    assert_eq!(report.seats_sold as i64, check.sold, "report vs databases");
    assert_eq!(
        report.unexpected_refunds, 0,
        "a timely payment was refunded"
    );
    assert!(check.is_ok(), "{:?}", check.disagreements);
    assert!(report.is_ok(), "{}", report.to_text());
}
