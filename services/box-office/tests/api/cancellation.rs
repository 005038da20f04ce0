//! Cancelling an event: the status and the record in one audited transaction, the
//! refunds carried out in the background through payments (a fake here, which refunds
//! by a conditional update of the planted payments and counts the calls it gets) as
//! the box office's service identity, resumable and single across replicas, and the
//! progress counted from the payments tables. The whole path through the real
//! services, with a replica killed mid-way, is the runner's `cancellation` test.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use sqlx::PgPool;
use stadium_kit::Reason;
use stadium_kit::testing::loopback_listener;
use stadium_proto::box_office::v1 as pb;
use stadium_proto::payments::v1 as payments;
use stadium_proto::payments::v1::payments_server::{Payments, PaymentsServer};
use stadium_tokens::{DevIssuer, Role};
use tokio_util::sync::CancellationToken;
use tonic::{Code, Request, Response, Status};

use crate::support::{Office, PATIENCE, config, reason};

/// Paid orders planted per test (one seat each; the venue has 10 seats).
const PAID: usize = 7;

/// Payments that refunds planted rows and remembers every call.
#[derive(Clone)]
struct FakePayments {
    pool: PgPool,
    calls: Arc<Mutex<Vec<(String, i32, String)>>>,
    /// Orders whose first refund call fails with UNAVAILABLE.
    fail_once: Arc<Mutex<Vec<String>>>,
}

impl FakePayments {
    fn calls_per_order(&self) -> HashMap<String, usize> {
        let mut per = HashMap::new();
        for (order, ..) in self.calls.lock().unwrap().iter() {
            *per.entry(order.clone()).or_default() += 1;
        }
        per
    }
}

fn unused<T>() -> Result<Response<T>, Status> {
    Err(Status::unimplemented("not used by these tests"))
}

#[tonic::async_trait]
impl Payments for FakePayments {
    async fn confirm(
        &self,
        _: Request<payments::ConfirmRequest>,
    ) -> Result<Response<payments::ConfirmResponse>, Status> {
        unused()
    }
    async fn get_order(
        &self,
        _: Request<payments::GetOrderRequest>,
    ) -> Result<Response<payments::GetOrderResponse>, Status> {
        unused()
    }
    async fn list_orders(
        &self,
        _: Request<payments::ListOrdersRequest>,
    ) -> Result<Response<payments::ListOrdersResponse>, Status> {
        unused()
    }
    async fn refund_order(
        &self,
        request: Request<payments::RefundOrderRequest>,
    ) -> Result<Response<payments::RefundOrderResponse>, Status> {
        let bearer = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body = request.into_inner();
        self.calls
            .lock()
            .unwrap()
            .push((body.order_id.clone(), body.refund_reason, bearer));
        {
            let mut fail = self.fail_once.lock().unwrap();
            if let Some(i) = fail.iter().position(|o| *o == body.order_id) {
                fail.remove(i);
                return Err(Status::unavailable("provider down"));
            }
        }
        let id =
            uuid::Uuid::parse_str(&body.order_id).map_err(|_| Status::invalid_argument("id"))?;
        sqlx::query(
            "UPDATE payments.payments
                SET status = 'refunded', refund_reason = 'event_cancelled',
                    refunded_minor = amount_minor, refund_id = gen_random_uuid()
              WHERE payment_id = $1 AND status = 'captured'",
        )
        .bind(id)
        .execute(&self.pool)
        .await
        .map_err(|e| Status::internal(e.to_string()))?;
        sqlx::query("UPDATE payments.tickets SET status = 'void' WHERE payment_id = $1")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(payments::RefundOrderResponse { order: None }))
    }
    async fn issue_comp(
        &self,
        _: Request<payments::IssueCompRequest>,
    ) -> Result<Response<payments::IssueCompResponse>, Status> {
        unused()
    }
    async fn provider_notice(
        &self,
        _: Request<payments::ProviderNoticeRequest>,
    ) -> Result<Response<payments::ProviderNoticeResponse>, Status> {
        unused()
    }
    async fn verify_ticket(
        &self,
        _: Request<payments::VerifyTicketRequest>,
    ) -> Result<Response<payments::VerifyTicketResponse>, Status> {
        unused()
    }
}

async fn serve(fake: FakePayments, stop: CancellationToken) -> String {
    let (listener, addr) = loopback_listener().await;
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(PaymentsServer::new(fake))
            .serve_with_incoming_shutdown(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                stop.cancelled_owned(),
            )
            .await
    });
    format!("http://{addr}")
}

/// The box office's development service token (role `service`, `sub` box-office).
fn service_token(dev: &DevIssuer) -> String {
    dev.admin("box-office", &[Role::Service], SystemTime::now())
        .unwrap()
        .token
}

/// An office on a fresh database whose refunds go to a fake payments; the fake, its
/// stop and the service token.
async fn office_with_payments(extra: &[&str]) -> (Office, FakePayments, CancellationToken, String) {
    let db = stadium_testkit::fresh_database().await;
    let dev = DevIssuer::generate().unwrap();
    let fake = FakePayments {
        pool: db.pool.clone(),
        calls: Arc::default(),
        fail_once: Arc::default(),
    };
    let stop = CancellationToken::new();
    let url = serve(fake.clone(), stop.clone()).await;
    let token = service_token(&dev);
    let mut args = vec![
        "--payments-url",
        &url,
        "--service-token",
        &token,
        "--cancellation-interval-ms",
        "50",
    ];
    args.extend_from_slice(extra);
    let config = config(&db, &dev, &args);
    let office = Office::start_with(db, dev, config).await;
    (office, fake, stop, token)
}

/// A venue and an event on sale; its id.
async fn event_on_sale(office: &mut Office) -> String {
    let venue = office.venue().await;
    let event = office.event(&venue.venue_id).await;
    office
        .client
        .open_sale(office.office(pb::OpenSaleRequest {
            event_id: event.event_id.clone(),
        }))
        .await
        .unwrap();
    event.event_id
}

/// Plants `PAID` captured orders (one ticket each, 1,000 minor units), a comp of two
/// seats, a pending payment and a failed one; the ids of the paid orders, the comp and
/// the pending one.
async fn plant_orders(pool: &PgPool, event_id: &str) -> (Vec<String>, String, String) {
    let seats: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT s.section_id, s.seat_id FROM catalog.seats s
           JOIN catalog.events e ON e.venue_id = s.venue_id
          WHERE e.event_id = $1::bigint ORDER BY s.seat_id",
    )
    .bind(event_id)
    .fetch_all(pool)
    .await
    .unwrap();
    let mut paid = Vec::new();
    let insert = |status: &'static str, amount: i64, tickets: &[(i64, i64)]| {
        let id = uuid::Uuid::new_v4();
        let tickets = tickets.to_vec();
        let event_id = event_id.to_owned();
        async move {
            sqlx::query(
                "INSERT INTO payments.payments
                    (payment_id, hold_key, event_id, fan_id, amount_minor, currency, status,
                     provider_charge_id)
                 VALUES ($1, gen_random_uuid(), $2::bigint, 'fan', $3, 'EUR', $4, 'ch')",
            )
            .bind(id)
            .bind(&event_id)
            .bind(amount)
            .bind(status)
            .execute(pool)
            .await
            .unwrap();
            for (section, seat) in tickets {
                sqlx::query(
                    "INSERT INTO payments.tickets
                        (ticket_id, payment_id, event_id, section_id, seat_id, fan_id, code)
                     VALUES (gen_random_uuid(), $1, $2::bigint, $3, $4, 'fan', gen_random_uuid()::text)",
                )
                .bind(id)
                .bind(&event_id)
                .bind(section)
                .bind(seat)
                .execute(pool)
                .await
                .unwrap();
            }
            id.to_string()
        }
    };
    for seat in &seats[..PAID] {
        paid.push(insert("captured", 1_000, &[*seat]).await);
    }
    let comp = insert("comp", 0, &seats[PAID..PAID + 2]).await;
    let pending = insert("pending", 1_000, &[]).await;
    insert("failed", 1_000, &[]).await;
    (paid, comp, pending)
}

async fn progress(office: &mut Office, event_id: &str) -> pb::Cancellation {
    office
        .client
        .get_cancellation(office.sre(pb::GetCancellationRequest {
            event_id: event_id.to_owned(),
        }))
        .await
        .expect("GetCancellation answers")
        .into_inner()
        .cancellation
        .expect("a cancellation")
}

/// The cancellation of `event_id` once finished, asked every 50 ms; fails the test
/// past [`PATIENCE`] from `started`.
async fn finished(office: &mut Office, event_id: &str, started: Instant) -> pb::Cancellation {
    loop {
        let c = progress(office, event_id).await;
        if c.finished_at.is_some() {
            return c;
        }
        assert!(started.elapsed() < PATIENCE, "{c:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn cancel(office: &mut Office, event_id: &str, reason: &str) -> pb::CancelEventResponse {
    office
        .client
        .cancel_event(office.office(pb::CancelEventRequest {
            event_id: event_id.to_owned(),
            reason: reason.to_owned(),
            refunds_per_second: 1_000,
        }))
        .await
        .expect("CancelEvent answers")
        .into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancellation_refunds_every_paid_order_once_and_waits_for_payments_under_way() {
    let (mut office, fake, stop, service) = office_with_payments(&[]).await;
    let event_id = event_on_sale(&mut office).await;
    let (paid, comp, pending) = plant_orders(office.pool(), &event_id).await;
    fake.fail_once.lock().unwrap().push(paid[3].clone());

    let answer = cancel(&mut office, &event_id, "storm damage").await;
    assert!(answer.newly_cancelled);
    assert_eq!(
        answer.event.unwrap().status,
        pb::EventStatus::Cancelled as i32
    );
    let first = answer.cancellation.unwrap();
    assert_eq!(
        (first.reason.as_str(), first.requested_by.as_str()),
        ("storm damage", "ann")
    );

    // Everything paid is refunded; the payment under way keeps it open.
    let started = Instant::now();
    let waiting = loop {
        let c = progress(&mut office, &event_id).await;
        if c.orders_refunded as usize == PAID && c.comps_voided == 1 {
            break c;
        }
        assert!(started.elapsed() < PATIENCE, "{c:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(waiting.payments_pending, 1);
    assert!(
        waiting.finished_at.is_none(),
        "finished with a payment under way"
    );
    assert!(
        waiting.last_error.contains(&paid[3]),
        "{}",
        waiting.last_error
    );
    assert_eq!(
        waiting.amount_refunded.unwrap().amount_minor,
        1_000 * PAID as i64
    );

    // The payment under way ends paid: it is refunded too, then the work is done.
    sqlx::query("UPDATE payments.payments SET status = 'captured' WHERE payment_id = $1::uuid")
        .bind(&pending)
        .execute(office.pool())
        .await
        .unwrap();
    let done = finished(&mut office, &event_id, started).await;
    assert_eq!(done.orders_refunded as usize, PAID + 1);
    assert_eq!(
        (
            done.orders_to_refund,
            done.payments_pending,
            done.tickets_valid
        ),
        (0, 0, 0)
    );

    // One call per order (two for the one refused once), each as the service, each
    // saying why.
    let per = fake.calls_per_order();
    for order in &paid {
        let expected = if *order == paid[3] { 2 } else { 1 };
        assert_eq!(per.get(order), Some(&expected), "order {order}");
    }
    assert_eq!(per.get(&comp), Some(&1));
    assert_eq!(per.get(&pending), Some(&1));
    assert_eq!(
        per.len(),
        PAID + 2,
        "a call for an order with nothing to undo"
    );
    for (_, why, bearer) in fake.calls.lock().unwrap().iter() {
        assert_eq!(*why, payments::RefundReason::EventCancelled as i32);
        assert_eq!(*bearer, format!("Bearer {service}"));
    }

    // Asked again: the same cancellation, nothing new recorded.
    let again = cancel(&mut office, &event_id, "asked twice").await;
    assert!(!again.newly_cancelled);
    assert_eq!(again.cancellation.unwrap().reason, "storm damage");
    let audit = office.audit().await;
    let cancels = audit.iter().filter(|(_, a, _)| a == "cancel_event").count();
    assert_eq!(cancels, 1, "{audit:?}");

    // A cancelled event is final.
    let err = office
        .client
        .resume_sale(office.office(pb::ResumeSaleRequest {
            event_id: event_id.clone(),
        }))
        .await
        .unwrap_err();
    assert_eq!(reason(&err).1, Some(Reason::InvalidTransition));
    office.stop().await;
    stop.cancel();
}

/// A hold being paid for on a shard (its section's seats are on another database)
/// keeps the cancellation open as one on the main database does: the payment under
/// way may still book it. Once the hold is gone the cancellation finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_being_paid_for_on_a_shard_keeps_the_cancellation_open() {
    let east = stadium_testkit::fresh_database().await;
    let flag = format!("east={}", east.url);
    let (mut office, _fake, stop, _) = office_with_payments(&["--shard", &flag]).await;
    let event_id = event_on_sale(&mut office).await;
    let (section, seat): (i64, i64) = sqlx::query_as(
        "SELECT s.section_id, s.seat_id FROM catalog.seats s
           JOIN catalog.events e ON e.venue_id = s.venue_id
          WHERE e.event_id = $1::bigint ORDER BY s.seat_id LIMIT 1",
    )
    .bind(&event_id)
    .fetch_one(office.pool())
    .await
    .unwrap();
    let paying = uuid::Uuid::new_v4();
    sqlx::query(
        "INSERT INTO holds.seat_holds (hold_key, event_id, section_id, seat_id, fan_id, status,
                                       expires_at, payment_started_at)
         VALUES ($1, $2::bigint, $3, $4, 'fan-1', 'held', now() + interval '10 minutes', now())",
    )
    .bind(paying)
    .bind(&event_id)
    .bind(section)
    .bind(seat)
    .execute(&east.pool)
    .await
    .unwrap();

    // Nothing sold: without the shard's hold the cancellation would be done at once.
    let answer = cancel(&mut office, &event_id, "flooded pitch").await;
    let first = answer.cancellation.unwrap();
    assert_eq!(first.holds_paying, 1);
    assert!(first.finished_at.is_none(), "{first:?}");
    // The worker takes it, counts again, and still waits.
    let started = Instant::now();
    loop {
        let taken: Option<String> = sqlx::query_scalar(
            "SELECT lease_owner FROM catalog.event_cancellations WHERE event_id = $1::bigint",
        )
        .bind(&event_id)
        .fetch_one(office.pool())
        .await
        .unwrap();
        if taken.is_some() {
            break;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "no worker took the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let waiting = progress(&mut office, &event_id).await;
    assert_eq!(waiting.holds_paying, 1);
    assert!(waiting.finished_at.is_none(), "{waiting:?}");

    // The payment failed and the fan let the hold go: nothing left to wait for.
    sqlx::query("UPDATE holds.seat_holds SET status = 'released' WHERE hold_key = $1")
        .bind(paying)
        .execute(&east.pool)
        .await
        .unwrap();
    let done = finished(&mut office, &event_id, started).await;
    assert_eq!(done.holds_paying, 0);
    office.stop().await;
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_cancelling_at_once_record_one_cancellation_and_refund_each_order_once() {
    let (mut office, fake, stop, _) = office_with_payments(&[]).await;
    let event_id = event_on_sale(&mut office).await;
    let (paid, ..) = plant_orders(office.pool(), &event_id).await;
    // A second replica on the same database, with its own worker.
    let second = {
        let db = office.db.clone();
        let url = serve(fake.clone(), stop.clone()).await;
        let token = service_token(&office.dev);
        let args = [
            "--payments-url",
            &url,
            "--service-token",
            &token,
            "--cancellation-interval-ms",
            "50",
        ];
        // It trusts the first office's issuer; its own is never used.
        let config = config(&db, &office.dev, &args);
        Office::start_with(db, DevIssuer::generate().unwrap(), config).await
    };
    let mut calls = Vec::new();
    for i in 0..10 {
        let mut client = if i % 2 == 0 {
            office.client.clone()
        } else {
            second.client.clone()
        };
        let request = office.office(pb::CancelEventRequest {
            event_id: event_id.clone(),
            reason: format!("cancel {i}"),
            refunds_per_second: 1_000,
        });
        calls.push(tokio::spawn(
            async move { client.cancel_event(request).await },
        ));
    }
    let mut newly = 0;
    for call in calls {
        let answer = call
            .await
            .unwrap()
            .expect("CancelEvent answers")
            .into_inner();
        newly += usize::from(answer.newly_cancelled);
    }
    assert_eq!(newly, 1, "one call cancelled");
    let started = Instant::now();
    loop {
        let c = progress(&mut office, &event_id).await;
        if c.orders_refunded as usize == PAID && c.comps_voided == 1 {
            break;
        }
        assert!(started.elapsed() < PATIENCE, "{c:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let per = fake.calls_per_order();
    for order in &paid {
        assert_eq!(per.get(order), Some(&1), "order {order} asked {per:?}");
    }
    let (records, audits): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM catalog.event_cancellations),
                (SELECT count(*) FROM catalog.admin_audit WHERE action = 'cancel_event')",
    )
    .fetch_one(office.pool())
    .await
    .unwrap();
    assert_eq!((records, audits), (1, 1));
    second.stop().await;
    office.stop().await;
    stop.cancel();
}

#[tokio::test]
async fn bad_cancellations_are_refused_by_field_and_write_nothing() {
    let (mut office, _fake, stop, _) = office_with_payments(&[]).await;
    let event_id = event_on_sale(&mut office).await;
    let before = office.counts().await;
    let long = "x".repeat(501);
    let cases = [
        ("", "why", 0, Code::InvalidArgument, "event_id"),
        ("abc", "why", 0, Code::InvalidArgument, "event_id"),
        (event_id.as_str(), "", 0, Code::InvalidArgument, "reason"),
        (event_id.as_str(), "   ", 0, Code::InvalidArgument, "reason"),
        (
            event_id.as_str(),
            long.as_str(),
            0,
            Code::InvalidArgument,
            "reason",
        ),
        (
            event_id.as_str(),
            "why",
            1_001,
            Code::InvalidArgument,
            "refunds_per_second",
        ),
    ];
    for (event, why, rate, code, field) in cases {
        let err = office
            .client
            .cancel_event(office.office(pb::CancelEventRequest {
                event_id: event.to_owned(),
                reason: why.to_owned(),
                refunds_per_second: rate,
            }))
            .await
            .unwrap_err();
        assert_eq!(err.code(), code, "{field}: {err:?}");
        assert_eq!(reason(&err).2.as_deref(), Some(field), "{err:?}");
    }
    let err = office
        .client
        .cancel_event(office.office(pb::CancelEventRequest {
            event_id: "999".into(),
            reason: "why".into(),
            refunds_per_second: 0,
        }))
        .await
        .unwrap_err();
    assert_eq!(reason(&err).1, Some(Reason::EventNotFound));
    let err = office
        .client
        .cancel_event(office.sre(pb::CancelEventRequest {
            event_id: event_id.clone(),
            reason: "why".into(),
            refunds_per_second: 0,
        }))
        .await
        .unwrap_err();
    assert_eq!(reason(&err).1, Some(Reason::RoleRequired));
    let err = office
        .client
        .get_cancellation(office.sre(pb::GetCancellationRequest {
            event_id: event_id.clone(),
        }))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), reason(&err).1),
        (Code::FailedPrecondition, Some(Reason::NotCancelled))
    );
    assert_eq!(office.counts().await, before, "refusals wrote nothing");
    office.stop().await;
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_stopping_mid_way_gives_its_lease_back() {
    let (mut office, fake, stop, _) = office_with_payments(&[]).await;
    let event_id = event_on_sale(&mut office).await;
    plant_orders(office.pool(), &event_id).await;
    office
        .client
        .cancel_event(office.office(pb::CancelEventRequest {
            event_id: event_id.clone(),
            reason: "slowly".into(),
            refunds_per_second: 1,
        }))
        .await
        .unwrap();
    let started = Instant::now();
    while fake.calls.lock().unwrap().is_empty() {
        assert!(started.elapsed() < PATIENCE, "no refund started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pool = office.pool().clone();
    office.stop().await;
    let (owner, finished): (Option<String>, bool) = sqlx::query_as(
        "SELECT lease_owner, finished_at IS NOT NULL FROM catalog.event_cancellations",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!((owner, finished), (None, false), "the lease was kept");
    stop.cancel();
}
