//! The fault suite (issue 15, point 5) at a small size: about 2,000 fans buy 500 seats
//! through the replicas, every section on a shard of its own PostgreSQL, while holds
//! and then payments are killed mid-request, the main PostgreSQL, the shard's and Redis
//! restart under them, the provider loses the answers of charges
//! it took and stalls past payments' timeout, and notices arrive twice, out of order
//! and late. The sale must recover from each, sell out with no seat sold twice and no
//! timely payment refunded, give every fan who confirmed a final answer within the
//! bound, and the provider's ledger must equal ours before the late notices and after.
//! Half of the fans whose Confirm is left open walk away and only look their order up
//! later, so with payments' reconciler switched off (`RECONCILE_INTERVAL_MS=0`) this
//! test fails: their charged payments stay pending.

#[path = "support/arena.rs"]
mod arena;
#[path = "support/replica_sale.rs"]
mod replica_sale;

use stadium_runner::ShardStores;
use stadium_runner::faults::{Fault, Plan};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_sale_recovers_from_every_fault_and_the_ledgers_agree() {
    // The run's own stores, a shard among them: the suite restarts them.
    let mut stack = replica_sale::start(ShardStores::Private(1)).await;
    let manifest = arena::arena_csv();
    let config = replica_sale::config(manifest.path(), 13);
    let deployment = stack.deployment();
    let plan = Plan::fault_suite(stack.provider_timeout, &stack.private_shards());
    assert!(
        plan.faults.contains(&Fault::RestartShard("s1".to_owned())),
        "{plan:?}"
    );
    let outcome =
        stadium_runner::onsale::run(&deployment, &config, Some((&mut stack, &plan))).await;
    stack.stop().await;
    let (report, check, _, disruption) = outcome.expect("the on-sale runs");
    let disruption = disruption.expect("faults were asked for");
    println!(
        "{}\n{}\n{}",
        report.to_text(),
        disruption.to_text(),
        check.to_text()
    );

    assert_eq!(
        disruption.faults.len(),
        plan.faults.len(),
        "every fault injected"
    );
    for fault in &disruption.faults {
        assert!(
            fault.failure.is_none(),
            "{}: {:?}",
            fault.fault,
            fault.failure
        );
    }
    assert!(
        report.final_answers.walked_away > 0,
        "no fan walked away from an open Confirm: the reconciler went untested"
    );
    let ledger = disruption.ledger.as_ref().expect("the ledgers compared");
    assert!(ledger.is_ok(), "{}", ledger.to_text());
    assert!(ledger.charges > 0, "nothing charged");
    assert!(disruption.is_ok(), "{}", disruption.to_text());

    replica_sale::assert_sold_out_clean(&report, &check);
}
