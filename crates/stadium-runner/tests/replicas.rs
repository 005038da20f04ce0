//! The replica run (issue 14, point 6): the services as separate processes started
//! from the Kubernetes manifests — 3 waiting rooms, 2 seat maps, 2 holds, 2 payments,
//! a box office and one shared simulated provider — in production mode over mutual
//! TLS, balanced on the client side. About 2,000 fans buy 500 seats through them while
//! one replica of every service is killed with SIGKILL a fifth of the way into the sale
//! and restarted; then the stored data is checked as after any on-sale.

#[path = "support/arena.rs"]
mod arena;
#[path = "support/replica_sale.rs"]
mod replica_sale;

use stadium_runner::ShardStores;
use stadium_runner::faults::Plan;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_on_sale_through_replicas_ends_clean_with_one_of_each_killed_mid_sale() {
    let mut stack = replica_sale::start(ShardStores::None).await;
    let logs = stack.dir.join("logs");
    let manifest = arena::arena_csv();
    let config = replica_sale::config(manifest.path(), 11);
    let deployment = stack.deployment();
    let plan = Plan::kill_mid_sale();
    let outcome =
        stadium_runner::onsale::run(&deployment, &config, Some((&mut stack, &plan))).await;
    let mut modes = Vec::new();
    for entry in std::fs::read_dir(&logs).expect("the run's logs") {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        modes.push((name, text.contains("starting in production mode")));
    }
    stack.stop().await;
    let (report, check, _, disruption) = outcome.expect("the on-sale runs");
    let disruption = disruption.expect("kills were asked for");
    println!(
        "{}\n{}\n{}",
        report.to_text(),
        disruption.to_text(),
        check.to_text()
    );

    // Every service replica ran in production mode; the provider stand-in is the one
    // development process.
    for (log, production) in &modes {
        assert_eq!(*production, !log.starts_with("sim-provider"), "{log}");
    }
    assert_eq!(modes.len(), 11, "{modes:?}");
    assert!(disruption.is_ok(), "{}", disruption.to_text());
    let mut killed: Vec<&str> = disruption.restarts().map(|r| r.replica.as_str()).collect();
    killed.sort_unstable();
    assert_eq!(
        killed,
        [
            "box-office#0",
            "holds#0",
            "payments#0",
            "seat-map#0",
            "waiting-room#0"
        ]
    );
    let (sold, seats) = disruption.faults[0].sold_at;
    assert!(0 < sold && sold < seats, "killed at {sold} of {seats}");

    replica_sale::assert_sold_out_clean(&report, &check);
}
