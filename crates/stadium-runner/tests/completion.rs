//! The cap on active admitted fans gets a place back when a fan's order is paid:
//! payments tells the waiting room (`CompleteAdmission` as the service), so the next
//! fan is admitted without the paying fan's client reporting anything and without
//! waiting for the first admission token to expire.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loadtest::{Credentials, EventOptions, VenueSource};
use stadium_proto::holds::v1::ClaimSeatsRequest;
use stadium_proto::payments::v1::{ConfirmRequest, PaymentMethod};
use stadium_proto::waiting_room::v1::{GetQueueStatsRequest, GetStatusRequest, JoinRequest};
mod support;

use support::stack_on_fresh_database;

use stadium_testkit::grpc::bearer;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_paid_order_gives_the_fans_place_under_the_cap_back() {
    let (stack, db) = stack_on_fresh_database().await;
    let targets = stack.endpoints.targets();
    let creds = Credentials::new(Arc::clone(&stack.issuer));
    let options = EventOptions {
        onsale_lead: Duration::from_secs(1),
        admission_rate_per_min: 60_000,
        active_fan_cap: 1,
        ..EventOptions::default()
    };
    let venue = VenueSource::generated(1_000, 4).expect("venue");
    let event = loadtest::setup_event(&targets, &creds, venue, &options)
        .await
        .expect("event set up");
    let clients = targets.clients().expect("clients");

    // Two fans join; with a cap of 1 only one is admitted.
    let mut fans = Vec::new();
    for fan in ["fan-a", "fan-b"] {
        let session = creds.fan_token(fan).expect("session");
        let status = clients
            .waiting_room
            .clone()
            .join(bearer(
                JoinRequest {
                    event_id: event.event_id.clone(),
                },
                &session,
            ))
            .await
            .expect("join")
            .into_inner()
            .status
            .expect("status");
        fans.push((session, status.queue_ticket));
    }
    let admission = |i: usize| {
        let (session, ticket) = fans[i].clone();
        let mut client = clients.waiting_room.clone();
        async move {
            client
                .get_status(bearer(
                    GetStatusRequest {
                        queue_ticket: ticket,
                        event_id: String::new(),
                    },
                    &session,
                ))
                .await
                .expect("status")
                .into_inner()
                .status
                .expect("status")
                .admission_token
        }
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let first = loop {
        let tokens = [admission(0).await, admission(1).await];
        if let Some(i) = tokens.iter().position(|t| !t.is_empty()) {
            assert!(tokens[1 - i].is_empty(), "the cap of 1 admitted both fans");
            break (i, tokens[i].clone());
        }
        assert!(Instant::now() < deadline, "nobody was admitted");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let (winner, admission_token) = first;
    let other = 1 - winner;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        admission(other).await.is_empty(),
        "the cap holds while the first fan shops"
    );

    // The admitted fan claims one seat and pays; nobody calls CompleteAdmission.
    let (section_id, seat_id): (i64, i64) = sqlx::query_as(
        "SELECT section_id, seat_id FROM catalog.event_seats \
         WHERE event_id = $1::bigint ORDER BY seat_id LIMIT 1",
    )
    .bind(&event.event_id)
    .fetch_one(&db.pool)
    .await
    .expect("a seat");
    let session = &fans[winner].0;
    let hold = clients
        .holds
        .clone()
        .claim_seats(bearer(
            ClaimSeatsRequest {
                admission_token,
                event_id: event.event_id.clone(),
                section_id: section_id as u64,
                seat_ids: vec![seat_id as u64],
                request_id: String::new(),
                presale_code: String::new(),
                accept_similar: false,
            },
            session,
        ))
        .await
        .expect("claim")
        .into_inner()
        .hold
        .expect("hold");
    clients
        .payments
        .clone()
        .confirm(bearer(
            ConfirmRequest {
                hold_key: hold.hold_key,
                payment_method: Some(PaymentMethod {
                    token: "tok_visa".into(),
                }),
            },
            session,
        ))
        .await
        .expect("confirm");

    // The other fan is admitted within seconds, long before a 10-minute token lapses.
    let deadline = Instant::now() + Duration::from_secs(20);
    while admission(other).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the paid fan's place never came back"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let admin = creds.admin_token().expect("admin token");
    let stats = clients
        .waiting_room
        .clone()
        .get_queue_stats(bearer(
            GetQueueStatsRequest {
                event_id: event.event_id.clone(),
            },
            &admin,
        ))
        .await
        .expect("stats")
        .into_inner();
    assert_eq!((stats.admitted, stats.active_admitted), (2, 1), "{stats:?}");
    stack.stop().await.expect("clean stop");
}
