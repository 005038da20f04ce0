//! A presale through the real stack (mutual TLS, Redis, PostgreSQL): staff start the
//! presale of an event whose general on-sale is a minute away and give a fan club two
//! seats with a code, and pause and resume it; the event's presale queue (`<event>-presale`) admits at once while
//! its general queue only takes the pre-queue; a fan admitted from the presale claims
//! a channel seat with the code, and is refused without it; opening the general sale
//! closes the presale queue.

use std::sync::Arc;
use std::time::{Duration, Instant};

use loadtest::{Clients, Credentials, EventOptions, VenueSource};
use stadium_kit::Reason;
use stadium_proto::box_office::v1::{
    EventStatus, OpenSaleRequest, PauseSaleRequest, PushOutcome, ResumeSaleRequest,
};
use stadium_proto::holds::v1::{ClaimSeatsRequest, Hold};
use stadium_proto::waiting_room::v1::{GetStatusRequest, JoinRequest, QueueState, QueueStatus};
use stadium_testkit::grpc::bearer;
use tonic::{Code, Status};

#[path = "support/fan_club.rs"]
mod fan_club;
mod support;

use fan_club::fan_club;

use support::stack_on_fresh_database;

const PATIENCE: Duration = Duration::from_secs(30);

async fn join(clients: &Clients, queue: &str, session: &str) -> Result<QueueStatus, Status> {
    clients
        .waiting_room
        .clone()
        .join(bearer(
            JoinRequest {
                event_id: queue.to_owned(),
            },
            session,
        ))
        .await
        .map(|r| r.into_inner().status.expect("status"))
}

/// Polls until the fan's ticket brings an admission token.
async fn admission(clients: &Clients, mut status: QueueStatus, session: &str) -> String {
    let deadline = Instant::now() + PATIENCE;
    while status.admission_token.is_empty() {
        assert!(Instant::now() < deadline, "never admitted: {status:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
        status = clients
            .waiting_room
            .clone()
            .get_status(bearer(
                GetStatusRequest {
                    queue_ticket: status.queue_ticket.clone(),
                    event_id: String::new(),
                },
                session,
            ))
            .await
            .expect("status")
            .into_inner()
            .status
            .expect("status");
    }
    status.admission_token
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_presale_admits_from_its_own_queue_and_claims_only_with_a_code() {
    let (stack, db) = stack_on_fresh_database().await;
    let targets = stack.endpoints.targets();
    let creds = Credentials::new(Arc::clone(&stack.issuer));
    let options = EventOptions {
        onsale_lead: Duration::from_secs(60),
        presale: true,
        ..EventOptions::default()
    };
    let venue = VenueSource::generated(1_000, 4).expect("venue");
    let event = loadtest::setup_event(&targets, &creds, venue, &options)
        .await
        .expect("presale started");
    let clients = targets.clients().expect("clients");
    let admin = creds.admin_token().expect("admin token");
    let id = event.event_id.clone();
    let club = fan_club(&stack, &db.pool, &id, 2, 2).await;
    let (section, club_seats) = (club.seats[0].0, [club.seats[0].1, club.seats[1].1]);
    let code = club.code;

    // A pause and a resume before the on-sale time leave both queues as they were.
    let mut office = clients.box_office.clone();
    office
        .pause_sale(bearer(
            PauseSaleRequest {
                event_id: id.clone(),
            },
            &admin,
        ))
        .await
        .expect("pause");
    let resumed = office
        .resume_sale(bearer(
            ResumeSaleRequest {
                event_id: id.clone(),
            },
            &admin,
        ))
        .await
        .expect("resume")
        .into_inner();
    assert_eq!(
        resumed.event.expect("event").status,
        EventStatus::Presale as i32
    );
    let push = resumed.waiting_room.expect("push report");
    assert_eq!(push.outcome, PushOutcome::Delivered as i32, "{push:?}");

    // The general queue takes the pre-queue; the presale's admits.
    let session = creds.fan_token("club-member").expect("session");
    let general = join(&clients, &id, &session).await.expect("general join");
    assert_eq!(general.state, QueueState::PreQueue as i32, "{general:?}");
    let presale_queue = stadium_tokens::presale_queue(&id);
    let joined = join(&clients, &presale_queue, &session)
        .await
        .expect("presale join");
    let admission = admission(&clients, joined, &session).await;

    let claim = |seat: u64, code: &str| {
        let request = ClaimSeatsRequest {
            admission_token: admission.clone(),
            event_id: id.clone(),
            section_id: section,
            seat_ids: vec![seat],
            presale_code: code.to_owned(),
            ..Default::default()
        };
        let mut holds = clients.holds.clone();
        let session = session.clone();
        async move {
            holds
                .claim_seats(bearer(request, &session))
                .await
                .map(|r| r.into_inner().hold.expect("hold"))
        }
    };
    let refused: Status = claim(club_seats[0], "").await.unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    let info = stadium_kit::status::error_info(&refused).expect("error info");
    assert_eq!(info.reason, Reason::PresaleCodeRequired.as_str());
    let held: Hold = claim(club_seats[0], &code)
        .await
        .expect("claimed with the code");
    assert_eq!(held.seat_ids, [club_seats[0]]);

    // Opening the general sale ends the presale and closes its queue.
    let opened = clients
        .box_office
        .clone()
        .open_sale(bearer(
            OpenSaleRequest {
                event_id: id.clone(),
            },
            &admin,
        ))
        .await
        .expect("open")
        .into_inner()
        .event
        .expect("event");
    assert_eq!(opened.status, EventStatus::OnSale as i32);
    let late = creds.fan_token("late").expect("session");
    let closed = join(&clients, &presale_queue, &late).await.unwrap_err();
    assert_eq!(closed.code(), Code::FailedPrecondition, "{closed:?}");
    stack.stop().await.expect("clean stop");
}
