//! The replica run on shards (issue 16): the services as separate processes, as in
//! `replicas.rs`, with the holds' sections on two more PostgreSQL servers named to
//! holds, the seat maps and the box office through the manifests' `database-shards`.
//! Its own test binary, so that its eleven processes do not share the machine with
//! another replica run.

#[path = "support/arena.rs"]
mod arena;
#[path = "support/replica_sale.rs"]
mod replica_sale;
#[path = "support/shard_check.rs"]
mod shard_check;

use stadium_runner::ShardStores;

/// The same replicas with the holds' sections on two more PostgreSQL servers, named to holds,
/// the seat maps and the box office through the manifests' `database-shards`: the
/// sale sells out on the shards, and the database check covers every one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_on_sale_through_replicas_across_two_shards_sells_out_on_them() {
    // Private servers: a shared one's 100 connections do not cover eleven replicas'
    // pools on three databases.
    let stack = replica_sale::start(ShardStores::Private(2)).await;
    let manifest = arena::arena_csv();
    let config = replica_sale::config(manifest.path(), 19);
    let outcome = stadium_runner::onsale::run(&stack.deployment(), &config, None).await;
    stack.stop().await;
    let (report, check, _, _) = outcome.expect("the on-sale runs");
    println!("{}\n{}", report.to_text(), check.to_text());

    shard_check::assert_sold_on_the_two_shards(&check);
    replica_sale::assert_sold_out_clean(&report, &check);
}
