//! The on-sale end to end against an in-memory fake of the five services: setup,
//! fans, report and invariant check agree with what the fake recorded.

mod fake;

use std::time::Duration;

use loadtest::{
    BehaviourShares, Credentials, EventOptions, OnSaleOptions, Targets, VenueFormat, VenueSource,
    run_scenario,
};

const SEED: [u8; 32] = [7; 32];

/// Runs the scenario against a fake with the given late-confirm policy, its queue
/// answering QUEUE_RESTORING during `restoring` (from, to) after the start.
async fn onsale(
    late: fake::Late,
    restoring: Option<(Duration, Duration)>,
) -> (loadtest::RunReport, fake::Fake) {
    let (addr, fake) = fake::start(&SEED, late).await;
    let now = std::time::Instant::now();
    fake.state.lock().unwrap().restoring = restoring.map(|(from, to)| (now + from, now + to));
    let url = format!("http://{addr}");
    let targets = Targets {
        waiting_room: url.clone(),
        seat_map: url.clone(),
        holds: url.clone(),
        payments: url.clone(),
        box_office: url,
        ca_pem: None,
    };
    let creds = Credentials::from_seed_hex(&hex::encode(SEED)).unwrap();
    let venue = VenueSource::Import {
        name: "fake".into(),
        format: VenueFormat::CsvManifest,
        content: b"section,row,seat,category\n".to_vec(),
    };
    let event = EventOptions {
        onsale_lead: Duration::from_millis(1_500),
        hold_ttl: fake::HOLD_TTL,
        ..EventOptions::default()
    };
    let options = OnSaleOptions {
        fans: 120,
        seed: 5,
        time_scale: 100.0,
        shares: BehaviourShares {
            pay: 0.5,
            abandon: 0.2,
            pay_late: 0.15,
            double_confirm: 0.15,
        },
        map_refresh: Duration::from_millis(50),
        sample_every: Duration::from_millis(100),
        ..OnSaleOptions::default()
    };

    let report = tokio::time::timeout(
        Duration::from_secs(60),
        run_scenario(&targets, &creds, venue, &event, &options, false),
    )
    .await
    .expect("the run ends")
    .expect("the run succeeds");

    println!("{}", report.to_text());
    (report, fake)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_onsale_sells_out_and_agrees_with_the_services() {
    let (report, fake) = onsale(fake::Late::Refund, None).await;
    let check = report.invariants.as_ref().expect("checked");
    assert!(report.is_ok(), "{}", report.to_text());
    assert!(check.disagreements.is_empty(), "{:?}", check.disagreements);
    assert_eq!(report.fans, 120);
    assert_eq!(report.joined, 120);
    assert_eq!(report.seats_sold, fake::SEATS);
    assert!(report.sold_out_after_s.is_some());
    assert!(report.holds_made > 0);
    assert!(report.claim_attempts >= report.holds_made);
    assert_eq!(report.seats_held_at_end, 0);
    assert!(report.late.payments > 0);
    assert_eq!(report.late.refunded, report.late.payments);
    assert_eq!(
        report.double_confirm.same_order,
        report.double_confirm.pairs
    );
    assert!(!report.timeline.is_empty());
    assert!(report.latency.iter().any(|l| l.rpc == "Holds/ClaimSeats"));
    assert!(
        report
            .latency
            .iter()
            .any(|l| l.rpc == "Holds/ClaimBestAvailable")
    );

    let state = fake.state.lock().unwrap();
    // One charge per hold confirmed, however often it was confirmed.
    assert_eq!(
        state.charges,
        report.orders_paid + report.late.refunded + report.unexpected_refunds
    );
    assert_eq!(state.completed, report.admitted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_confirms_refused_before_any_charge_also_pass() {
    let (report, fake) = onsale(fake::Late::Reject, None).await;
    assert!(report.is_ok(), "{}", report.to_text());
    assert!(report.late.payments > 0);
    assert_eq!(report.late.rejected, report.late.payments);
    assert_eq!(report.late.refunded_seats, 0);
    assert_eq!(fake.state.lock().unwrap().charges, report.orders_paid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fans_keep_their_place_while_the_queue_restores() {
    // Longer than a fan's retries of a passing failure (five joins, about 3 to 6 s;
    // four polls): fans joined before it poll through it, the others join through it.
    let window = (Duration::from_millis(500), Duration::from_millis(8_000));
    let (report, fake) = onsale(fake::Late::Refund, Some(window)).await;
    assert!(report.is_ok(), "{}", report.to_text());
    let (joins, polls) = fake.state.lock().unwrap().restoring_answers;
    assert!(joins > 0 && polls > 0, "joins {joins}, polls {polls}");
    assert_eq!(report.joined, report.fans, "every fan joined");
    assert_eq!(report.seats_sold, fake::SEATS);
}
