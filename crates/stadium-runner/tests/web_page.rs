//! The fan's page in a real browser: headless Chromium driven by Playwright (the
//! stories in `web/tests/`, one per test here), against the stack each test starts. Each story saves its
//! screenshots in `web/screenshots/<story>/` (not committed). Needs Node.js, `npm ci`
//! in `web/` and Debian's `chromium` (`.ci/run` installs them).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use loadtest::{Clients, Credentials, EventOptions, EventSetup, VenueSource};
use stadium_proto::box_office::v1::{
    CloseSaleRequest, EventStatus, GetEventRequest, GetSalesReportRequest, PauseSaleRequest,
};
use stadium_proto::holds::v1::{
    ClaimBestAvailableRequest, ClaimSeatsRequest, claim_best_available_request,
};
use stadium_proto::payments::v1::{
    ConfirmRequest, GetOrderRequest, OrderStatus, PaymentMethod, VerifyTicketRequest,
    get_order_request,
};
use stadium_proto::waiting_room::v1::{GetQueueStatsRequest, GetStatusRequest, JoinRequest};
use stadium_runner::Stack;
use stadium_testkit::grpc::bearer;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

#[path = "support/fan_club.rs"]
mod fan_club;
mod support;

use fan_club::fan_club;

/// How long a story may take to answer before the test gives up on the browser.
const STORY_BOUND: Duration = Duration::from_secs(300);

/// A story running in the browser, and the line-by-line JSON conversation with it.
struct Story {
    child: Child,
    input: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    screenshots: PathBuf,
}

impl Story {
    /// Starts `web/tests/<script>.mjs` and waits until its browser is up.
    async fn start(script: &str) -> Story {
        let web = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../web");
        let screenshots = web.join("screenshots").join(script);
        let _ = std::fs::remove_dir_all(&screenshots);
        let mut child = Command::new("node")
            .arg(web.join(format!("tests/{script}.mjs")))
            .current_dir(&web)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs (Node.js installed, `npm ci` done in web/)");
        let input = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut story = Story {
            child,
            input,
            lines,
            screenshots,
        };
        assert_eq!(story.next().await["ready"], true, "the browser started");
        story
    }

    /// The story's next message.
    async fn next(&mut self) -> serde_json::Value {
        let line = tokio::time::timeout(STORY_BOUND, self.lines.next_line())
            .await
            .expect("the story answers in time")
            .expect("read the story")
            .expect("the story ended early (its errors are above)");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    /// Tells the story `value`.
    async fn send(&mut self, value: serde_json::Value) {
        self.input
            .write_all(format!("{value}\n").as_bytes())
            .await
            .expect("write to the story");
    }

    /// Sends the page's address, the event and the screenshots' folder.
    async fn begin(&mut self, stack: &Stack, event: &EventSetup) {
        self.begin_with(stack, event, serde_json::json!({})).await;
    }

    /// As [`Story::begin`], with the story's own fields from `extra` (an object).
    async fn begin_with(&mut self, stack: &Stack, event: &EventSetup, extra: serde_json::Value) {
        let mut value = serde_json::json!({
            "page_url": stack.page_url,
            "event_id": event.event_id,
            "screenshots": self.screenshots,
        });
        if let (Some(value), Some(extra)) = (value.as_object_mut(), extra.as_object()) {
            value.extend(extra.clone());
        }
        self.send(value).await;
    }

    /// Waits for the story to end, and says where its screenshots are.
    async fn finish(mut self) {
        let status = self.child.wait().await.expect("the story ends");
        assert!(status.success(), "the story failed: {status}");
        println!("screenshots: {}", self.screenshots.display());
    }
}

/// An on-sale of a generated 1,000-seat venue opening `lead` from now.
async fn event(stack: &Stack, lead: Duration) -> EventSetup {
    event_with(
        stack,
        EventOptions {
            onsale_lead: lead,
            ..EventOptions::default()
        },
    )
    .await
}

/// An on-sale of a generated 1,000-seat venue with these options.
async fn event_with(stack: &Stack, options: EventOptions) -> EventSetup {
    event_of(stack, 1_000, options).await
}

/// An on-sale of a generated venue of `seats` seats in four sections.
async fn event_of(stack: &Stack, seats: u32, options: EventOptions) -> EventSetup {
    let creds = Credentials::new(Arc::clone(&stack.issuer));
    let venue = VenueSource::generated(seats, 4).expect("venue");
    loadtest::setup_event(&stack.endpoints.targets(), &creds, venue, &options)
        .await
        .expect("event set up")
}

#[tokio::test]
async fn a_fan_queues_before_opening_buys_best_available_and_gets_verifiable_tickets() {
    let (stack, _db) = support::stack_on_fresh_database().await;
    let mut story = Story::start("fan-buys-best-available").await;
    // Set up only now, with the browser ready, so the fan joins in the pre-queue
    // whatever the browser's start took; the lead covers loading, signing in, joining.
    let event = event(&stack, Duration::from_secs(15)).await;
    story.begin(&stack, &event).await;

    let answer = story.next().await;
    let codes: Vec<String> = answer["tickets"]
        .as_array()
        .unwrap_or_else(|| panic!("no tickets in {answer}"))
        .iter()
        .map(|c| c.as_str().expect("a ticket code").to_owned())
        .collect();
    assert_eq!(codes.len(), 2, "two seats bought, two tickets: {codes:?}");
    story.finish().await;

    let mut payments = stack.endpoints.targets().clients().unwrap().payments;
    for code in &codes {
        let verified = payments
            .verify_ticket(VerifyTicketRequest {
                ticket_code: code.clone(),
            })
            .await
            .expect("VerifyTicket")
            .into_inner();
        assert!(verified.signature_valid, "{code}: signature");
        assert!(verified.valid, "{code}: not valid");
        assert_eq!(verified.event_id, event.event_id, "{code}: event");
    }
    stack.stop().await.expect("clean stop");
}

/// A fan admitted over gRPC, as any client: its session and admission token.
async fn admitted_fan(
    clients: &Clients,
    creds: &Credentials,
    event: &str,
    name: &str,
) -> (String, String) {
    let session = creds.fan_token(name).expect("session");
    let mut status = clients
        .waiting_room
        .clone()
        .join(bearer(
            JoinRequest {
                event_id: event.to_owned(),
            },
            &session,
        ))
        .await
        .expect("join")
        .into_inner()
        .status
        .expect("status");
    while status.admission_token.is_empty() {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let request = GetStatusRequest {
            queue_ticket: status.queue_ticket.clone(),
            event_id: String::new(),
        };
        status = clients
            .waiting_room
            .clone()
            .get_status(bearer(request, &session))
            .await
            .expect("status")
            .into_inner()
            .status
            .expect("status");
    }
    (session, status.admission_token)
}

/// Another fan, admitted, who claims `seat` of `section`.
async fn other_fan_claims(
    clients: &Clients,
    creds: &Credentials,
    event: &str,
    section: u64,
    seat: u64,
) {
    let (session, admission) = admitted_fan(clients, creds, event, "other-fan").await;
    let claim = ClaimSeatsRequest {
        admission_token: admission,
        event_id: event.to_owned(),
        section_id: section,
        seat_ids: vec![seat],
        ..ClaimSeatsRequest::default()
    };
    clients
        .holds
        .clone()
        .claim_seats(bearer(claim, &session))
        .await
        .expect("the other fan claims the seat");
}

#[tokio::test]
async fn seats_taken_meanwhile_are_answered_with_alternatives_on_the_map() {
    let (stack, _db) = support::stack_on_fresh_database().await;
    let mut story = Story::start("fan-meets-seat-taken").await;
    let event = event(&stack, Duration::from_secs(1)).await;
    story.begin(&stack, &event).await;

    let picked = story.next().await;
    let first = &picked["picked"][0];
    let number = |v: &serde_json::Value| -> u64 {
        v.as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not an id: {picked}"))
    };
    let clients = stack.endpoints.targets().clients().unwrap();
    let creds = Credentials::new(Arc::clone(&stack.issuer));
    other_fan_claims(
        &clients,
        &creds,
        &event.event_id,
        number(&first["section_id"]),
        number(&first["seat_id"]),
    )
    .await;
    story.send(serde_json::json!({ "taken": true })).await;

    let answer = story.next().await;
    assert_eq!(answer["released"], true, "{answer}");
    assert!(answer["held"].as_u64().unwrap_or(0) >= 1, "{answer}");
    story.finish().await;
    stack.stop().await.expect("clean stop");
}

#[tokio::test]
async fn two_fans_in_two_browsers_click_the_same_seat_and_one_holds_it() {
    let (stack, _db) = support::stack_on_fresh_database().await;
    let mut story = Story::start("two-fans-click-the-same-seat").await;
    let event = event(&stack, Duration::from_secs(1)).await;
    story.begin(&stack, &event).await;

    let answer = story.next().await;
    assert!(answer["seat_id"].is_string(), "{answer}");
    assert!(
        answer["alternatives"].as_u64().unwrap_or(0) >= 1,
        "{answer}"
    );
    story.finish().await;
    // One seat held, by one of them: the second press took nothing.
    let admin = Credentials::new(Arc::clone(&stack.issuer))
        .admin_token()
        .expect("admin token");
    let total = sales_total(&stack, &event, &admin).await;
    assert_eq!((total.held, total.sold), (1, 0));
    stack.stop().await.expect("clean stop");
}

/// The event's sales report's total line.
async fn sales_total(
    stack: &Stack,
    event: &EventSetup,
    admin: &str,
) -> stadium_proto::box_office::v1::ReportRow {
    let request = GetSalesReportRequest {
        event_id: event.event_id.clone(),
        ..GetSalesReportRequest::default()
    };
    let clients = stack.endpoints.targets().clients().unwrap();
    clients
        .box_office
        .clone()
        .get_sales_report(bearer(request, admin))
        .await
        .expect("report")
        .into_inner()
        .total
        .expect("total")
}

#[tokio::test]
async fn a_waiting_fan_sees_position_then_a_paused_and_a_closed_sale() {
    let (stack, _db) = support::stack_on_fresh_database().await;
    let mut story = Story::start("fan-waits-through-pause-and-close").await;
    // One admitted fan at a time, and another fan is it: the page's fan waits.
    let event = event_with(
        &stack,
        EventOptions {
            onsale_lead: Duration::from_secs(1),
            active_fan_cap: 1,
            ..EventOptions::default()
        },
    )
    .await;
    let clients = stack.endpoints.targets().clients().unwrap();
    let creds = Credentials::new(Arc::clone(&stack.issuer));
    admitted_fan(&clients, &creds, &event.event_id, "first-fan").await;
    story.begin(&stack, &event).await;

    let admin = creds.admin_token().expect("admin token");
    let mut office = clients.box_office.clone();
    assert_eq!(story.next().await["waiting"], true);
    let event_id = event.event_id.clone();
    office
        .pause_sale(bearer(PauseSaleRequest { event_id }, &admin))
        .await
        .expect("PauseSale");
    story.send(serde_json::json!({ "done": true })).await;

    assert_eq!(story.next().await["paused"], true);
    let event_id = event.event_id.clone();
    office
        .close_sale(bearer(CloseSaleRequest { event_id }, &admin))
        .await
        .expect("CloseSale");
    story.send(serde_json::json!({ "done": true })).await;

    assert_eq!(story.next().await["closed"], true);
    story.finish().await;
    stack.stop().await.expect("clean stop");
}

#[tokio::test]
async fn a_hold_lapses_on_screen_at_the_servers_time_and_its_seats_return() {
    let (stack, _db) = support::stack_on_fresh_database().await;
    let mut story = Story::start("fan-hold-lapses").await;
    let event = event_with(
        &stack,
        EventOptions {
            onsale_lead: Duration::from_secs(1),
            hold_ttl: Duration::from_secs(6),
            ..EventOptions::default()
        },
    )
    .await;
    story.begin(&stack, &event).await;

    let answer = story.next().await;
    assert_eq!(answer["lapsed"], true, "{answer}");
    assert_eq!(answer["free_after"], answer["free_before"], "{answer}");
    println!(
        "the page left the hold {} ms after showing it",
        answer["lapsed_after_ms"]
    );
    story.finish().await;
    // As the page showed it: no seat of the event is held any more.
    let admin = Credentials::new(Arc::clone(&stack.issuer))
        .admin_token()
        .expect("admin token");
    let total = sales_total(&stack, &event, &admin).await;
    assert_eq!((total.held, total.sold), (0, 0));
    assert_eq!(u64::from(total.available), event.seats);
    stack.stop().await.expect("clean stop");
}

/// A fan, admitted, who buys two seats of the best category: the order's id.
async fn fan_buys_two(
    clients: &Clients,
    creds: &Credentials,
    event: &EventSetup,
    name: &str,
) -> String {
    let (session, admission) = admitted_fan(clients, creds, &event.event_id, name).await;
    let claim = ClaimBestAvailableRequest {
        admission_token: admission,
        event_id: event.event_id.clone(),
        target: Some(claim_best_available_request::Target::PriceCategory(
            event.categories[0].code.clone(),
        )),
        quantity: 2,
        ..ClaimBestAvailableRequest::default()
    };
    let hold = clients
        .holds
        .clone()
        .claim_best_available(bearer(claim, &session))
        .await
        .expect("best available")
        .into_inner()
        .hold
        .expect("a hold");
    let confirm = ConfirmRequest {
        hold_key: hold.hold_key,
        payment_method: Some(PaymentMethod {
            token: "tok_visa".to_owned(),
        }),
    };
    let order = clients
        .payments
        .clone()
        .confirm(bearer(confirm, &session))
        .await
        .expect("paid")
        .into_inner()
        .order
        .expect("an order");
    assert_eq!(order.status, OrderStatus::Paid as i32);
    order.order_id
}

/// `count` fans join the queue at once, so admissions keep flowing for minutes.
async fn queue_fans(clients: &Clients, creds: &Credentials, event: &str, count: usize) {
    futures::stream::iter(0..count)
        .map(|i| {
            let session = creds
                .fan_token(&format!("queued-fan-{i}"))
                .expect("session");
            let mut room = clients.waiting_room.clone();
            let request = JoinRequest {
                event_id: event.to_owned(),
            };
            async move { room.join(bearer(request, &session)).await.expect("join") }
        })
        .buffer_unordered(32)
        .for_each(|_| async {})
        .await;
}

#[tokio::test]
async fn staff_watch_the_sale_change_its_rate_pause_it_and_refund_a_fans_order() {
    let (stack, _db) = support::stack_on_fresh_database().await;
    let mut story = Story::start("staff-console").await;
    // Seats enough that the inventory never caps the admitted fans while the story
    // watches the frontier (about one active fan per claim's worth of seats).
    let event = event_of(
        &stack,
        20_000,
        EventOptions {
            onsale_lead: Duration::from_secs(1),
            admission_rate_per_min: 60,
            active_fan_cap: 0,
            ..EventOptions::default()
        },
    )
    .await;
    let clients = stack.endpoints.targets().clients().unwrap();
    let creds = Credentials::new(Arc::clone(&stack.issuer));
    let order_id = fan_buys_two(&clients, &creds, &event, "Grace Hopper").await;
    queue_fans(&clients, &creds, &event.event_id, 3_000).await;
    let extra = serde_json::json!({ "fan_with_order": "Grace Hopper", "order_id": order_id });
    story.begin_with(&stack, &event, extra).await;

    // The console set 600 fans a minute and its dashboard saw the frontier speed up.
    let answer = story.next().await;
    let followed = answer["rate_followed"].as_f64().unwrap_or(0.0);
    assert!(
        followed >= 5.0,
        "admitted per second after the change: {answer}"
    );
    let admin = creds.admin_token().expect("admin token");
    let request = GetQueueStatsRequest {
        event_id: event.event_id.clone(),
    };
    let stats = clients
        .waiting_room
        .clone()
        .get_queue_stats(bearer(request, &admin))
        .await
        .expect("queue stats")
        .into_inner();
    assert_eq!(stats.fans_per_minute, 600);

    // The console paused the sale and the fan's page showed it.
    let answer = story.next().await;
    println!(
        "the fan's page showed the pause {} ms after the click",
        answer["paused_after_ms"]
    );
    let request = GetEventRequest {
        event_id: event.event_id.clone(),
    };
    let paused = clients
        .box_office
        .clone()
        .get_event(bearer(request, &admin))
        .await
        .expect("GetEvent")
        .into_inner()
        .event
        .expect("event");
    assert_eq!(paused.status, EventStatus::Paused as i32);

    // The console found the fan's order and refunded it.
    let answer = story.next().await;
    assert_eq!(answer["refunded"], order_id.as_str(), "{answer}");
    story.finish().await;
    let request = GetOrderRequest {
        key: Some(get_order_request::Key::OrderId(order_id)),
    };
    let order = clients
        .payments
        .clone()
        .get_order(bearer(request, &admin))
        .await
        .expect("GetOrder")
        .into_inner()
        .order
        .expect("order");
    assert_eq!(order.status, OrderStatus::Refunded as i32);
    stack.stop().await.expect("clean stop");
}

#[tokio::test]
async fn a_fan_club_member_enters_a_presale_code_and_buys_the_clubs_seats() {
    let (stack, db) = support::stack_on_fresh_database().await;
    let mut story = Story::start("fan-presale").await;
    let event = event_with(
        &stack,
        EventOptions {
            onsale_lead: Duration::from_secs(600),
            presale: true,
            ..EventOptions::default()
        },
    )
    .await;
    let club = fan_club(&stack, &db.pool, &event.event_id, 4, 2).await;
    let category: String =
        sqlx::query_scalar("SELECT category_code FROM catalog.seats WHERE seat_id = $1")
            .bind(club.seats[0].1 as i64)
            .fetch_one(&db.pool)
            .await
            .expect("the club's category");
    story
        .begin_with(
            &stack,
            &event,
            serde_json::json!({ "code": club.code, "category": category }),
        )
        .await;
    let answer = story.next().await;
    let tickets = answer["tickets"].as_array().map_or(0, Vec::len);
    assert_eq!(tickets, 2, "{answer}");
    story.finish().await;

    // The two seats sold are the club's, sold with its code, in the presale.
    let club_seats: Vec<i64> = club.seats.iter().map(|(_, s)| *s as i64).collect();
    let sold: Vec<i64> = sqlx::query_scalar(
        "SELECT seat_id FROM holds.seat_holds WHERE event_id = $1::bigint \
         AND status = 'booked' AND presale_code_id IS NOT NULL ORDER BY seat_id",
    )
    .bind(&event.event_id)
    .fetch_all(&db.pool)
    .await
    .expect("sold seats");
    assert_eq!(sold.len(), 2, "{sold:?}");
    assert!(sold.iter().all(|s| club_seats.contains(s)), "{sold:?}");
    let mut office = stack.endpoints.targets().clients().unwrap().box_office;
    let creds = Credentials::new(Arc::clone(&stack.issuer));
    let status = office
        .get_event(bearer(
            GetEventRequest {
                event_id: event.event_id.clone(),
            },
            &creds.admin_token().unwrap(),
        ))
        .await
        .expect("event")
        .into_inner()
        .event
        .expect("event")
        .status;
    assert_eq!(status, EventStatus::Presale as i32);
    stack.stop().await.expect("clean stop");
}
