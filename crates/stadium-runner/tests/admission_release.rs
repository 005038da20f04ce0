//! Admissions given back and wasted, through the real stack (mutual TLS, Redis,
//! PostgreSQL): a fan who releases its admission, or an admitted fan who claims nothing
//! within the event's no-show timeout, loses it — holds refuses the token
//! (ADMISSION_REVOKED, within its documented 1 s refresh plus a fetch) and the place
//! under the cap goes to the next fan; a fan who claimed in time (holds reported it
//! used) keeps its admission.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loadtest::{Clients, Credentials, EventOptions, EventSetup, VenueSource};
use sqlx::PgPool;
use stadium_kit::Reason;
use stadium_proto::holds::v1::{ClaimSeatsRequest, Hold, ReleaseHoldRequest};
use stadium_proto::waiting_room::v1::{GetStatusRequest, JoinRequest, ReleaseAdmissionRequest};
use stadium_testkit::grpc::bearer;
use tonic::{Code, Status};

mod support;

use support::stack_on_fresh_database;

/// Past holds' bound on a revocation: its copy's 1 s age plus one fetch.
const REFRESH_BOUND: Duration = Duration::from_millis(1_600);

/// A fan of the test: session, queue ticket, admission token once admitted.
struct Fan {
    session: String,
    ticket: String,
    admission: String,
}

async fn join(clients: &Clients, creds: &Credentials, event: &EventSetup, name: &str) -> Fan {
    let session = creds.fan_token(name).expect("session");
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
    Fan {
        session,
        ticket: status.queue_ticket,
        admission: String::new(),
    }
}

/// Polls until `fan` holds an admission token; false after `within`.
async fn admitted(clients: &Clients, fan: &mut Fan, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while fan.admission.is_empty() && Instant::now() < deadline {
        let status = clients
            .waiting_room
            .clone()
            .get_status(bearer(
                GetStatusRequest {
                    queue_ticket: fan.ticket.clone(),
                    event_id: String::new(),
                },
                &fan.session,
            ))
            .await;
        match status {
            Ok(answer) => fan.admission = answer.into_inner().status.unwrap().admission_token,
            Err(status) => panic!("status: {status:?}"),
        }
        if fan.admission.is_empty() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    !fan.admission.is_empty()
}

async fn claim(
    clients: &Clients,
    event: &EventSetup,
    fan: &Fan,
    (section, seat): (i64, i64),
) -> Result<Hold, Status> {
    clients
        .holds
        .clone()
        .claim_seats(bearer(
            ClaimSeatsRequest {
                admission_token: fan.admission.clone(),
                event_id: event.event_id.clone(),
                section_id: section as u64,
                seat_ids: vec![seat as u64],
                request_id: String::new(),
                presale_code: String::new(),
                accept_similar: false,
            },
            &fan.session,
        ))
        .await
        .map(|r| r.into_inner().hold.expect("hold"))
}

async fn seats(pool: &PgPool, event: &EventSetup) -> Vec<(i64, i64)> {
    sqlx::query_as(
        "SELECT section_id, seat_id FROM catalog.event_seats \
         WHERE event_id = $1::bigint ORDER BY seat_id LIMIT 4",
    )
    .bind(&event.event_id)
    .fetch_all(pool)
    .await
    .expect("seats")
}

/// Waits for the sale to open, so fans joining are numbered in join order (the
/// pre-queue is shuffled).
async fn open_sale(event: &EventSetup) {
    let open_at = event.onsale_at + Duration::from_millis(500);
    if let Ok(wait) = open_at.duration_since(std::time::SystemTime::now()) {
        tokio::time::sleep(wait).await;
    }
}

fn assert_revoked(result: Result<Hold, Status>) {
    let status = result.expect_err("a revoked admission claims nothing");
    assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
    let info = stadium_kit::status::error_info(&status).expect("error info");
    assert_eq!(info.reason, Reason::AdmissionRevoked.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_released_admission_is_refused_at_holds_and_its_place_goes_to_the_next_fan() {
    let (stack, db) = stack_on_fresh_database().await;
    let targets = stack.endpoints.targets();
    let creds = Credentials::new(Arc::clone(&stack.issuer));
    let options = EventOptions {
        onsale_lead: Duration::from_secs(1),
        active_fan_cap: 1,
        ..EventOptions::default()
    };
    let venue = VenueSource::generated(1_000, 4).expect("venue");
    let event = loadtest::setup_event(&targets, &creds, venue, &options)
        .await
        .expect("event set up");
    let clients = targets.clients().expect("clients");
    let seats = seats(&db.pool, &event).await;
    open_sale(&event).await;

    let mut first = join(&clients, &creds, &event, "fan-a").await;
    let mut second = join(&clients, &creds, &event, "fan-b").await;
    assert!(admitted(&clients, &mut first, Duration::from_secs(30)).await);
    assert!(
        !admitted(&clients, &mut second, Duration::from_secs(2)).await,
        "the cap of 1 holds"
    );
    claim(&clients, &event, &first, seats[0])
        .await
        .expect("the admitted fan claims");

    let released = clients
        .waiting_room
        .clone()
        .release_admission(bearer(
            ReleaseAdmissionRequest {
                admission_token: first.admission.clone(),
            },
            &first.session,
        ))
        .await
        .expect("release")
        .into_inner();
    assert!(released.freed);
    assert!(
        admitted(&clients, &mut second, Duration::from_secs(20)).await,
        "the freed place goes to the next fan"
    );
    tokio::time::sleep(REFRESH_BOUND).await;
    assert_revoked(claim(&clients, &event, &first, seats[1]).await);
    claim(&clients, &event, &second, seats[2])
        .await
        .expect("the next fan claims");
    stack.stop().await.expect("clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_no_show_loses_the_admission_and_a_fan_who_claimed_keeps_it() {
    let (stack, db) = stack_on_fresh_database().await;
    let targets = stack.endpoints.targets();
    let creds = Credentials::new(Arc::clone(&stack.issuer));
    let options = EventOptions {
        onsale_lead: Duration::from_secs(1),
        active_fan_cap: 2,
        admission_no_show: Duration::from_secs(4),
        ..EventOptions::default()
    };
    let venue = VenueSource::generated(1_000, 4).expect("venue");
    let event = loadtest::setup_event(&targets, &creds, venue, &options)
        .await
        .expect("event set up");
    let clients = targets.clients().expect("clients");
    let seats = seats(&db.pool, &event).await;
    open_sale(&event).await;

    let mut claimer = join(&clients, &creds, &event, "fan-a").await;
    let mut no_show = join(&clients, &creds, &event, "fan-b").await;
    let mut third = join(&clients, &creds, &event, "fan-c").await;
    assert!(admitted(&clients, &mut claimer, Duration::from_secs(30)).await);
    let hold = claim(&clients, &event, &claimer, seats[0])
        .await
        .expect("a claim in time");
    assert!(admitted(&clients, &mut no_show, Duration::from_secs(5)).await);

    // The no-show's place goes to the third fan once its deadline passes.
    assert!(
        admitted(&clients, &mut third, Duration::from_secs(30)).await,
        "the no-show's place goes to the queue"
    );
    tokio::time::sleep(REFRESH_BOUND).await;
    assert_revoked(claim(&clients, &event, &no_show, seats[1]).await);

    // The fan who claimed in time still claims (after letting its hold go: one hold
    // per admission), and the new fan too.
    clients
        .holds
        .clone()
        .release_hold(bearer(
            ReleaseHoldRequest {
                hold_key: hold.hold_key,
            },
            &claimer.session,
        ))
        .await
        .expect("hold released");
    claim(&clients, &event, &claimer, seats[2])
        .await
        .expect("the fan who claimed in time keeps its admission");
    claim(&clients, &event, &third, seats[3])
        .await
        .expect("the third fan claims");
    stack.stop().await.expect("clean stop");
}
