//! Redis losing its data mid-sale, through the whole stack: the waiting room tells a
//! queued fan to keep its ticket and retry (QUEUE_RESTORING) until the box office's
//! resync configures the event again, which should take at most one resync interval
//! (5 s) plus one snapshot refresh (250 ms; the windows are printed); then the queue numbers resume above the ticket
//! shown and the fan is admitted. The window is measured, three losses in a row.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loadtest::{Credentials, EventOptions, VenueSource};
use stadium_kit::Reason;
use stadium_proto::waiting_room::v1::{GetStatusRequest, JoinRequest, QueueStatus};
use stadium_testkit::grpc::bearer;
use support::stack_on_fresh_database;
use tonic::Code;

mod support;

/// The box office's default resync interval plus the waiting room's default snapshot
/// refresh: the longest a poll should be told to retry once Redis answers again
/// (printed beside the measured windows; a test asserts no time).
const BOUND: Duration = Duration::from_millis(5_000 + 250);
/// How long the fan keeps polling before the queue counts as never restored.
const PATIENCE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_queued_fan_is_told_to_retry_until_the_resync_brings_the_event_back() {
    let (stack, db) = stack_on_fresh_database().await;
    let targets = stack.endpoints.targets();
    let creds = Credentials::new(Arc::clone(&stack.issuer));
    let options = EventOptions {
        onsale_lead: Duration::from_secs(1),
        admission_rate_per_min: 600,
        ..EventOptions::default()
    };
    let venue = VenueSource::generated(1_000, 4).expect("venue");
    let event = loadtest::setup_event(&targets, &creds, venue, &options)
        .await
        .expect("event set up");
    let clients = targets.clients().expect("clients");
    tokio::time::sleep(options.onsale_lead).await;

    let join = |fan: String| {
        let mut client = clients.waiting_room.clone();
        let request = JoinRequest {
            event_id: event.event_id.clone(),
        };
        let session = creds.fan_token(&fan).expect("session");
        async move { client.join(bearer(request, &session)).await }
    };
    let poll = |fan: &str, ticket: &str| {
        let mut client = clients.waiting_room.clone();
        let request = GetStatusRequest {
            queue_ticket: ticket.to_owned(),
            event_id: event.event_id.clone(),
        };
        let session = creds.fan_token(fan).expect("session");
        async move { client.get_status(bearer(request, &session)).await }
    };
    // The waiting room's keys are under the run's prefix (the database's oid).
    let oid: i64 = sqlx::query_scalar(
        "SELECT oid::bigint FROM pg_database WHERE datname = current_database()",
    )
    .fetch_one(&db.pool)
    .await
    .expect("oid");
    let mut redis = redis::Client::open(stack.redis_url.as_str())
        .expect("redis url")
        .get_multiplexed_async_connection()
        .await
        .expect("redis");

    let mut windows = Vec::new();
    for round in 0..3 {
        // A fan far back in the queue (the rate is 10 fans a second).
        for f in 0..40 {
            join(format!("ahead-{round}-{f}")).await.expect("join");
        }
        let fan = format!("queued-{round}");
        let queued: QueueStatus = join(fan.clone())
            .await
            .expect("join")
            .into_inner()
            .status
            .expect("status");

        // Redis restarts empty: every key of the run's queues is gone.
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("stadium:wr:{oid}:*"))
            .query_async(&mut redis)
            .await
            .expect("keys");
        assert!(!keys.is_empty());
        let lost = Instant::now();
        let _: () = redis::cmd("DEL")
            .arg(keys)
            .query_async(&mut redis)
            .await
            .expect("del");

        // The fan polls with its ticket until the queue answers again.
        let mut told_to_retry = 0;
        let back = loop {
            match poll(&fan, &queued.queue_ticket).await {
                Ok(answer) => break answer.into_inner().status.expect("status"),
                Err(status) => {
                    assert_eq!(
                        (status.code(), Reason::of(&status)),
                        (Code::Unavailable, Some(Reason::QueueRestoring)),
                        "{status:?}"
                    );
                    told_to_retry += 1;
                }
            }
            assert!(lost.elapsed() < PATIENCE, "never restored");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let window = lost.elapsed();
        windows.push(window);
        assert_eq!(back.queue_number, queued.queue_number, "the ticket's place");
        assert!(told_to_retry > 0, "the loss was seen");

        // Numbers resume above the ticket shown, and the fan's turn comes.
        let newcomer = join(format!("newcomer-{round}"))
            .await
            .expect("join")
            .into_inner()
            .status
            .expect("status");
        assert!(newcomer.queue_number > queued.queue_number);
        let deadline = Instant::now() + PATIENCE;
        loop {
            let status = poll(&fan, &queued.queue_ticket)
                .await
                .expect("poll")
                .into_inner()
                .status
                .expect("status");
            if !status.admission_token.is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "never admitted after the loss");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    println!(
        "QUEUE_RESTORING windows after Redis lost its data: {:?} (bound {:?})",
        windows, BOUND
    );
    stack.stop().await.expect("clean stop");
}
