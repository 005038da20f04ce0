//! Cancelling an event through the replicas (issue 18, point 5): about 2,000 fans buy
//! the 500-seat arena, then box-office staff cancel the event. The box office refunds
//! every paid order through payments at a set rate in the background; it is killed
//! with SIGKILL part way and started again, and the refunds carry on once its lease
//! lapses. At the end every charge the provider took has exactly one refund, for the
//! charge's amount, with reason `event_cancelled`; no ticket is valid; the box office's
//! figures add up to the ledger; and the waiting room tells fans the event is off.

#[path = "support/arena.rs"]
mod arena;
#[path = "support/replica_sale.rs"]
mod replica_sale;

use stadium_runner::ShardStores;
use std::time::{Duration, Instant, SystemTime};

use stadium_kit::Reason;
use stadium_proto::box_office::v1 as pb;
use stadium_proto::box_office::v1::box_office_client::BoxOfficeClient;
use stadium_proto::payments::v1::simulated_provider_client::SimulatedProviderClient;
use stadium_proto::waiting_room::v1::JoinRequest;
use stadium_runner::faults::ledger;
use stadium_testkit::grpc::bearer;
use stadium_tokens::Role;
use tonic::Code;
use tonic::transport::Channel;

/// Refunds started per second: slow enough that the kill lands mid-way.
const RATE: u32 = 20;
/// How long the refunds may take in all: the orders at [`RATE`], the lapsed lease of
/// the killed replica (30 s) and a margin for a loaded machine.
const PATIENCE: Duration = Duration::from_secs(180);

async fn cancellation(
    client: &mut BoxOfficeClient<Channel>,
    token: &str,
    event_id: &str,
) -> pb::Cancellation {
    client
        .get_cancellation(bearer(
            pb::GetCancellationRequest {
                event_id: event_id.to_owned(),
            },
            token,
        ))
        .await
        .expect("GetCancellation answers")
        .into_inner()
        .cancellation
        .expect("a cancellation")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancellation_killed_halfway_refunds_every_order_exactly_once() {
    let mut stack = replica_sale::start(ShardStores::None).await;
    let manifest = arena::arena_csv();
    let config = replica_sale::config(manifest.path(), 17);
    let deployment = stack.deployment();
    let (report, check, _, _) = stadium_runner::onsale::run(&deployment, &config, None)
        .await
        .expect("the on-sale runs");
    replica_sale::assert_sold_out_clean(&report, &check);

    let pool = stadium_db::connect(&deployment.database_url, &Default::default())
        .await
        .expect("database");
    let event: i64 = sqlx::query_scalar("SELECT max(event_id) FROM catalog.events")
        .fetch_one(&pool)
        .await
        .expect("the event");
    let event_id = event.to_string();
    let (orders, charged): (i64, i64) = sqlx::query_as(
        "SELECT count(*), coalesce(sum(amount_minor), 0)::bigint FROM payments.payments
          WHERE event_id = $1 AND status = 'captured'",
    )
    .bind(event)
    .fetch_one(&pool)
    .await
    .expect("paid orders");
    assert!(orders > 2 * i64::from(RATE), "only {orders} paid orders");

    let clients = deployment.endpoints.targets().clients().expect("clients");
    let mut office = clients.box_office.clone();
    let token = deployment
        .issuer
        .admin("ann", &[Role::BoxOffice], SystemTime::now())
        .expect("admin token")
        .token;
    let answer = office
        .cancel_event(bearer(
            pb::CancelEventRequest {
                event_id: event_id.clone(),
                reason: "the roof came down".into(),
                refunds_per_second: RATE,
            },
            &token,
        ))
        .await
        .expect("CancelEvent answers")
        .into_inner();
    assert!(answer.newly_cancelled);
    assert_eq!(
        answer.event.expect("event").status,
        pb::EventStatus::Cancelled as i32
    );

    // Part way: at least a few refunds done, most still to do.
    let started = Instant::now();
    loop {
        let c = cancellation(&mut office, &token, &event_id).await;
        if c.orders_refunded >= 10 {
            assert!(
                i64::from(c.orders_refunded) < orders,
                "all {orders} refunded before the kill"
            );
            break;
        }
        assert!(started.elapsed() < PATIENCE, "no refund started: {c:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let restarts = stack
        .kill_and_restart(&["box-office"])
        .await
        .expect("the box office restarts");
    println!("box office killed and serving again: {restarts:?}");
    // Asked again after the restart: the same cancellation, nothing new.
    let again = office
        .cancel_event(bearer(
            pb::CancelEventRequest {
                event_id: event_id.clone(),
                reason: "asked twice".into(),
                refunds_per_second: 0,
            },
            &token,
        ))
        .await
        .expect("CancelEvent answers again")
        .into_inner();
    assert!(!again.newly_cancelled);
    let kept = again.cancellation.expect("cancellation");
    assert_eq!(kept.reason, "the roof came down");
    assert_eq!(kept.refunds_per_second, RATE);

    let finished = loop {
        let c = cancellation(&mut office, &token, &event_id).await;
        if c.finished_at.is_some() {
            break c;
        }
        assert!(started.elapsed() < PATIENCE, "not finished: {c:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    println!("{finished:?}");

    // The box office's figures are the ledger's.
    assert_eq!(i64::from(finished.orders_refunded), orders);
    assert_eq!(
        finished.amount_refunded.as_ref().map(|m| m.amount_minor),
        Some(charged)
    );
    assert_eq!(
        (
            finished.orders_to_refund,
            finished.orders_refunding,
            finished.payments_pending,
            finished.tickets_valid,
        ),
        (0, 0, 0, 0)
    );
    let (refunded, cancelled, valid): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE status = 'refunded'),
                count(*) FILTER (WHERE status = 'refunded' AND refund_reason = 'event_cancelled'),
                (SELECT count(*) FROM payments.tickets WHERE event_id = $1 AND status = 'valid')
           FROM payments.payments WHERE event_id = $1",
    )
    .bind(event)
    .fetch_one(&pool)
    .await
    .expect("refunds");
    assert_eq!(cancelled, orders, "every paid order refunded as cancelled");
    assert_eq!(valid, 0, "a ticket is still valid");

    // The provider: one refund per charge, each for the charge's amount.
    let provider = deployment
        .endpoints
        .endpoint(stack.provider_url())
        .expect("provider endpoint")
        .connect_lazy();
    let mut provider = SimulatedProviderClient::new(provider);
    let ledgers = ledger::check(&pool, &mut provider, event)
        .await
        .expect("the ledgers compared");
    println!("{}", ledgers.to_text());
    assert!(ledgers.is_ok(), "{}", ledgers.to_text());
    assert_eq!(ledgers.captured, 0);
    assert_eq!(ledgers.refunds, ledgers.charges, "one refund per charge");
    assert_eq!(ledgers.refunded as i64, refunded);

    // Fans arriving now are told the event is off.
    let session = deployment
        .issuer
        .fan_session("late-fan", SystemTime::now())
        .expect("session")
        .token;
    let join = clients
        .waiting_room
        .clone()
        .join(bearer(
            JoinRequest {
                event_id: event_id.clone(),
            },
            &session,
        ))
        .await
        .expect_err("a cancelled event takes no joins");
    assert_eq!(join.code(), Code::FailedPrecondition, "{join:?}");
    assert_eq!(Reason::of(&join), Some(Reason::EventCancelled));

    stack.stop().await;
}
