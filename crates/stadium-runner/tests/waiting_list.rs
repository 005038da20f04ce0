//! The waiting list through the real stack (mutual TLS, Redis, PostgreSQL): with every
//! seat blocked the event is sold out and fans join its waiting list; when staff
//! release a block of two seats, the box office's inventory report makes two offers,
//! to the first two fans in join order; both claim at once at holds with their offer's
//! admission, holds reports the claims, the box office counts two offers used, and
//! once both pay, the sales report counts two seats sold through the list.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use loadtest::{Credentials, EventOptions, VenueSource};
use stadium_kit::Reason;
use stadium_proto::box_office::v1::{
    BlockSeatsRequest, GetSalesReportRequest, GetWaitingListRequest, ReleaseSeatsRequest,
};
use stadium_proto::holds::v1::ClaimSeatsRequest;
use stadium_proto::payments::v1::{ConfirmRequest, PaymentMethod};
use stadium_proto::waiting_room::v1::{
    GetWaitingListStatusRequest, JoinWaitingListRequest, QueueState, QueueStatus,
};
use stadium_testkit::grpc::bearer;

mod support;

use support::stack_on_fresh_database;

/// Long enough for any report, claim or batch of used admissions to come through.
const PATIENCE: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn returned_seats_go_to_the_waiting_list_in_order_and_count_as_its_sales() {
    let (stack, db) = stack_on_fresh_database().await;
    let targets = stack.endpoints.targets();
    let creds = Credentials::new(Arc::clone(&stack.issuer));
    let options = EventOptions {
        onsale_lead: Duration::from_secs(1),
        max_seats_per_claim: 1,
        max_seats_per_fan: 1,
        ..EventOptions::default()
    };
    let venue = VenueSource::generated(1_000, 4).expect("venue");
    let event = loadtest::setup_event(&targets, &creds, venue, &options)
        .await
        .expect("event set up");
    let clients = targets.clients().expect("clients");
    let admin = creds.admin_token().expect("admin token");
    let seats: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT section_id, seat_id FROM catalog.event_seats \
         WHERE event_id = $1::bigint ORDER BY section_id, seat_id",
    )
    .bind(&event.event_id)
    .fetch_all(&db.pool)
    .await
    .expect("seats");
    let open_at = event.onsale_at + Duration::from_millis(500);
    if let Ok(wait) = open_at.duration_since(std::time::SystemTime::now()) {
        tokio::time::sleep(wait).await;
    }

    // Every seat blocked, two of them in a block of their own.
    let block = |chunk: &[(i64, i64)]| BlockSeatsRequest {
        event_id: event.event_id.clone(),
        section_id: chunk[0].0 as u64,
        seat_ids: chunk.iter().map(|s| s.1 as u64).collect(),
        reason: "held back for the test".into(),
    };
    let (returned, rest) = seats.split_at(2);
    let returned_block = clients
        .box_office
        .clone()
        .block_seats(bearer(block(returned), &admin))
        .await
        .expect("block")
        .into_inner();
    // The rest in blocks of up to 50 seats of one section each.
    let mut start = 0;
    while start < rest.len() {
        let section = rest[start].0;
        let mut end = start;
        while end < rest.len() && rest[end].0 == section && end - start < 50 {
            end += 1;
        }
        clients
            .box_office
            .clone()
            .block_seats(bearer(block(&rest[start..end]), &admin))
            .await
            .expect("block");
        start = end;
    }

    // Sold out once the box office reports it: the list takes the first fan.
    let join = |name: String| {
        let mut room = clients.waiting_room.clone();
        let session = creds.fan_token(&name).expect("session");
        let event_id = event.event_id.clone();
        async move {
            room.join_waiting_list(bearer(JoinWaitingListRequest { event_id }, &session))
                .await
                .map(|r| r.into_inner().status.expect("status"))
        }
    };
    let deadline = Instant::now() + PATIENCE;
    loop {
        match join("fan-0".into()).await {
            Ok(status) => {
                assert_eq!(status.position, 1);
                break;
            }
            Err(status) if Reason::of(&status) == Some(Reason::NotSoldOut) => {
                assert!(Instant::now() < deadline, "never sold out");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(status) => panic!("join: {status:?}"),
        }
    }
    let others: Vec<QueueStatus> = join_all((1..6).map(|f| join(format!("fan-{f}"))))
        .await
        .into_iter()
        .map(|r| r.expect("join"))
        .collect();
    let mut order = vec![(1, "fan-0".to_owned())];
    order.extend(
        others
            .iter()
            .enumerate()
            .map(|(i, s)| (s.position, format!("fan-{}", i + 1))),
    );
    order.sort();
    assert_eq!(
        order.iter().map(|o| o.0).collect::<Vec<_>>(),
        (1..=6).collect::<Vec<_>>()
    );

    // Two seats come back: the first two fans get offers, the others wait.
    clients
        .box_office
        .clone()
        .release_seats(bearer(
            ReleaseSeatsRequest {
                hold_key: returned_block.hold_key,
                reason: "returned".into(),
            },
            &admin,
        ))
        .await
        .expect("release");
    let status = |name: String| {
        let mut room = clients.waiting_room.clone();
        let session = creds.fan_token(&name).expect("session");
        let event_id = event.event_id.clone();
        async move {
            room.get_waiting_list_status(bearer(GetWaitingListStatusRequest { event_id }, &session))
                .await
                .expect("status")
                .into_inner()
                .status
                .expect("status")
        }
    };
    let mut tokens = Vec::new();
    for (_, name) in &order[..2] {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let s = status(name.clone()).await;
            if !s.admission_token.is_empty() {
                assert_eq!(s.state, QueueState::WaitingListOffer as i32);
                tokens.push(s.admission_token);
                break;
            }
            assert!(Instant::now() < deadline, "{name} never got an offer");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    for (position, name) in &order[2..] {
        let s = status(name.clone()).await;
        assert_eq!(
            (s.state, s.position),
            (QueueState::WaitingList as i32, position - 2)
        );
    }

    // Both claim at once with their offers, each one returned seat.
    let claims = order[..2]
        .iter()
        .zip(&tokens)
        .zip(returned)
        .map(|((o, token), seat)| {
            let mut holds = clients.holds.clone();
            let session = creds.fan_token(&o.1).expect("session");
            let request = ClaimSeatsRequest {
                admission_token: token.clone(),
                event_id: event.event_id.clone(),
                section_id: seat.0 as u64,
                seat_ids: vec![seat.1 as u64],
                request_id: String::new(),
                presale_code: String::new(),
                accept_similar: false,
            };
            async move { holds.claim_seats(bearer(request, &session)).await }
        });
    let mut hold_keys = Vec::new();
    for claimed in join_all(claims).await {
        let hold = claimed.expect("an offer claims at holds").into_inner().hold;
        hold_keys.push(hold.expect("hold").hold_key);
    }
    let held: Vec<(String,)> = sqlx::query_as(
        "SELECT fan_id FROM holds.seat_holds WHERE event_id = $1::bigint \
         AND status = 'held' ORDER BY fan_id",
    )
    .bind(&event.event_id)
    .fetch_all(&db.pool)
    .await
    .expect("holds");
    let mut first_two: Vec<String> = order[..2].iter().map(|o| o.1.clone()).collect();
    first_two.sort();
    assert_eq!(held.into_iter().map(|h| h.0).collect::<Vec<_>>(), first_two);

    // Holds reports the claims; the box office counts two sales through the list.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let list = clients
            .box_office
            .clone()
            .get_waiting_list(bearer(
                GetWaitingListRequest {
                    event_id: event.event_id.clone(),
                },
                &admin,
            ))
            .await
            .expect("waiting list")
            .into_inner();
        if list.offers_used == 2 {
            assert_eq!(
                (list.offers_made, list.open_offers, list.waiting),
                (2, 0, 4)
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the sales never counted: {list:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Both pay: the sales report counts their seats as sold through the list.
    for ((_, name), hold_key) in order[..2].iter().zip(hold_keys) {
        let session = creds.fan_token(name).expect("session");
        let request = ConfirmRequest {
            hold_key,
            payment_method: Some(PaymentMethod {
                token: "tok_visa".into(),
            }),
        };
        clients
            .payments
            .clone()
            .confirm(bearer(request, &session))
            .await
            .expect("confirm");
    }
    let report = clients
        .box_office
        .clone()
        .get_sales_report(bearer(
            GetSalesReportRequest {
                event_id: event.event_id.clone(),
                csv: true,
                ..Default::default()
            },
            &admin,
        ))
        .await
        .expect("sales report")
        .into_inner();
    let total = report.total.expect("total");
    assert_eq!((total.sold, total.waiting_list_sold), (2, 2));
    assert_eq!(
        report.rows.iter().map(|r| r.waiting_list_sold).sum::<u32>(),
        2
    );
    let header = report.csv.lines().next().expect("csv header");
    assert!(header.contains(",comps,waiting_list_sold,"), "{header}");
    stack.stop().await.expect("clean stop");
}
