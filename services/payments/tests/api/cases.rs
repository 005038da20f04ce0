//! The payment cases of the shared case list (C05–C09), each asserting the result a
//! correct system gives, on the stored data and the provider's ledger.

use std::time::Duration;

use payments::provider::sim::Faults;
use stadium_kit::Reason;
use stadium_proto::payments::v1::{
    GetOrderRequest, OrderStatus, ProviderNoticeRequest, RefundOrderRequest, RefundReason,
    get_order_request,
};
use stadium_tokens::Role;
use tonic::Code;

use crate::support::{NOTICE_SECRET, Stack, bearer, confirm_with, notice_request, reason};
use stadium_testkit::all_at_once;

fn success_notice_of(stack: &Stack, key: &str) -> ProviderNoticeRequest {
    let (notice, signature) = stack
        .sim
        .success_notice(key, NOTICE_SECRET.as_bytes())
        .expect("a charge to notify");
    notice_request(notice, signature)
}

/// C05: hold TTL 10 min; the payment succeeds at minute 16; the provider's success
/// notice is delivered 3 times → one refund keyed by the payment, the order reads
/// expired/refunded, every delivery acknowledged, none re-runs the refund.
#[tokio::test]
async fn c05_a_late_success_notice_delivered_three_times_refunds_once() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    stack.sim.set_faults(Faults {
        timeout_after_charge: 1,
        ..Faults::default()
    });
    let err = stack.confirm("fan-a", &key, "tok_visa").await.unwrap_err();
    assert_eq!(reason(&err, Code::Unavailable), Reason::ProviderUnavailable);
    stack.age_hold(&key, 16).await;

    let notice = success_notice_of(&stack, &key);
    for _ in 0..3 {
        let ack = stack
            .client()
            .provider_notice(notice.clone())
            .await
            .unwrap()
            .into_inner();
        assert!(ack.acknowledged);
    }
    assert_eq!(stack.sim.refunds_for(&format!("refund:{key}")), 1);
    let order = stack
        .client()
        .get_order(bearer(
            GetOrderRequest {
                key: Some(get_order_request::Key::HoldKey(key.clone())),
            },
            &stack.issuers.session("fan-a"),
        ))
        .await
        .unwrap()
        .into_inner()
        .order
        .unwrap();
    assert_eq!(order.status(), OrderStatus::Refunded);
    assert_eq!(order.refund.unwrap().reason(), RefundReason::HoldExpired);
    let marks: Vec<String> = sqlx::query_scalar("SELECT outcome FROM payments.provider_notices")
        .fetch_all(stack.pool())
        .await
        .unwrap();
    assert_eq!(marks, ["refunded"]);

    // A notice without a charge id is refused before its signature is even checked.
    let mut bare = success_notice_of(&stack, &key);
    bare.provider_charge_id.clear();
    let err = stack.client().provider_notice(bare).await.unwrap_err();
    assert_eq!(reason(&err, Code::InvalidArgument), Reason::InvalidField);

    // A forged notice is refused, not acknowledged.
    let mut forged = success_notice_of(&stack, &key);
    forged.notice_id = "ntc_forged".into();
    let err = stack.client().provider_notice(forged).await.unwrap_err();
    assert_eq!(
        reason(&err, Code::Unauthenticated),
        Reason::NoticeSignatureInvalid
    );
    stack.assert_consistent().await;
    stack.stop().await;
}

/// C06: "confirm and pay" sent 4 times within 1 s for one hold → 1 charge, 1 order;
/// the duplicates return the first result (or "in progress" while it runs).
#[tokio::test]
async fn c06_four_quick_confirms_charge_once_and_make_one_order() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    stack.sim.set_faults(Faults {
        latency: Duration::from_millis(150),
        ..Faults::default()
    });
    let session = stack.issuers.session("fan-a");
    let tasks: Vec<_> = (0..4u64)
        .map(|i| {
            let client = stack.client();
            let session = session.clone();
            let key = key.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(i * 200)).await;
                confirm_with(client, session, key, "tok_visa").await
            })
        })
        .collect();
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        match task.await.unwrap() {
            Ok(order) => {
                assert_eq!(order.status(), OrderStatus::Paid);
                ids.insert(order.order_id);
            }
            Err(status) => assert_eq!(reason(&status, Code::Aborted), Reason::InProgress),
        }
    }
    assert_eq!(ids.len(), 1);
    assert_eq!(stack.sim.charges_for(&key), 1);
    let orders: i64 = sqlx::query_scalar("SELECT count(*) FROM payments.payments")
        .fetch_one(stack.pool())
        .await
        .unwrap();
    assert_eq!(orders, 1);
    stack.assert_consistent().await;
    stack.stop().await;
}

/// C07: the first confirm fails on a database error after the provider charged; the
/// same confirm is retried → applied exactly once: seats booked, one charge, no refund.
#[tokio::test]
async fn c07_a_retry_after_a_database_failure_applies_exactly_once() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack
        .claim("fan-a", &event, &[stack.seats[0], stack.seats[1]])
        .await;
    // The first ticket insert fails as a cancelled statement would (57014); the
    // sequence is not rolled back with the transaction, so it fails once only.
    for statement in [
        "CREATE SEQUENCE public.ticket_failures",
        "CREATE FUNCTION public.fail_first_ticket() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF nextval('public.ticket_failures') = 1 THEN \
             RAISE EXCEPTION 'injected failure' USING ERRCODE = '57014'; END IF; \
         RETURN NEW; END $$",
        "CREATE TRIGGER fail_first_ticket BEFORE INSERT ON payments.tickets \
         FOR EACH ROW EXECUTE FUNCTION public.fail_first_ticket()",
    ] {
        sqlx::query(statement).execute(stack.pool()).await.unwrap();
    }
    let err = stack.confirm("fan-a", &key, "tok_visa").await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert_eq!(stack.sim.charges_for(&key), 1);
    // Neither the payment's state nor any ticket moved without the other.
    assert_eq!(stack.payment(&key).await.unwrap().0, "pending");
    assert_eq!(stack.valid_tickets(&key).await, 0);

    let order = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    assert_eq!(order.tickets.len(), 2);
    assert_eq!(stack.sim.charges_for(&key), 1);
    assert_eq!(stack.sim.refunds_for(&format!("refund:{key}")), 0);
    assert_eq!(stack.hold_statuses(&key).await, ["booked", "booked"]);
    stack.assert_consistent().await;
    stack.stop().await;
}

/// C08: an admin presses "refund" twice within 1 s for one paid order → one refund at
/// the provider; the second call returns the existing refund; refunded ≤ captured.
#[tokio::test]
async fn c08_two_refund_presses_refund_once() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack
        .claim("fan-a", &event, &[stack.seats[0], stack.seats[1]])
        .await;
    let order = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    stack.sim.set_faults(Faults {
        latency: Duration::from_millis(100),
        ..Faults::default()
    });
    let admin = stack.issuers.admin(&[Role::BoxOffice]);
    let results = all_at_once(2, |_| {
        let mut client = stack.client();
        let request = bearer(
            RefundOrderRequest {
                order_id: order.order_id.clone(),
                reason: "fan asked".into(),
                ..Default::default()
            },
            &admin,
        );
        async move {
            client
                .refund_order(request)
                .await
                .map(|r| r.into_inner().order.unwrap())
        }
    })
    .await;
    let mut refund_ids = std::collections::HashSet::new();
    for result in results {
        let refunded = result.unwrap();
        assert_eq!(refunded.status(), OrderStatus::Refunded);
        let refund = refunded.refund.unwrap();
        assert_eq!(refund.reason(), RefundReason::BoxOffice);
        refund_ids.insert(refund.refund_id);
    }
    assert_eq!(refund_ids.len(), 1);
    assert_eq!(stack.sim.refunds_for(&format!("refund:{key}")), 1);
    let (status, _, amount, refunded) = stack.payment(&key).await.unwrap();
    assert_eq!((status.as_str(), refunded), ("refunded", amount));
    // The seats are free again and the tickets void.
    assert_eq!(stack.hold_statuses(&key).await, ["released", "released"]);
    assert_eq!(stack.valid_tickets(&key).await, 0);

    // A third press later returns the same refund.
    let third = stack
        .client()
        .refund_order(bearer(
            RefundOrderRequest {
                order_id: order.order_id.clone(),
                reason: String::new(),
                ..Default::default()
            },
            &admin,
        ))
        .await
        .unwrap()
        .into_inner()
        .order
        .unwrap();
    assert!(refund_ids.contains(&third.refund.unwrap().refund_id));
    assert_eq!(stack.sim.refunds_for(&format!("refund:{key}")), 1);
    stack.assert_consistent().await;
    stack.stop().await;
}

/// C09: the provider's notice and the fan's own confirm for the same hold arrive
/// together, 1,000 times → no deadlock; booked exactly once, tickets issued once,
/// whichever path wins. Every other round the confirm's charge answer is lost, so the
/// notice is what books it.
#[tokio::test]
async fn c09_notice_and_confirm_together_book_once() {
    const ROUNDS: usize = 1000;
    const PARALLEL: usize = 10;
    let stack = Stack::start().await;
    let mut event = stack.event().await;
    let mut next_seat = 0;
    let mut confirm_won = 0;
    for round in 0..ROUNDS / PARALLEL {
        if next_seat + PARALLEL > stack.seats.len() {
            event = stack.event().await;
            next_seat = 0;
        }
        let mut keys = Vec::new();
        for i in 0..PARALLEL {
            let fan = format!("fan-{round}-{i}");
            let key = stack
                .claim(&fan, &event, &[stack.seats[next_seat + i]])
                .await;
            keys.push((fan, key));
        }
        next_seat += PARALLEL;
        stack.sim.set_faults(Faults {
            timeout_after_charge: if round % 2 == 1 { PARALLEL as u32 } else { 0 },
            ..Faults::default()
        });
        let tasks: Vec<_> = keys
            .iter()
            .map(|(fan, key)| {
                let client = stack.client();
                let mut notices = stack.client();
                let session = stack.issuers.session(fan);
                let key = key.clone();
                let sim = stack.sim.clone();
                tokio::spawn(async move {
                    let confirming = tokio::spawn({
                        let key = key.clone();
                        async move { confirm_with(client, session, key, "tok_visa").await }
                    });
                    // The notice goes out the moment the charge exists.
                    let (notice, signature) = loop {
                        if let Some(found) = sim.success_notice(&key, NOTICE_SECRET.as_bytes()) {
                            break found;
                        }
                        tokio::time::sleep(Duration::from_micros(200)).await;
                    };
                    // Delivered again until acknowledged, as a provider does: a notice
                    // deferred while the confirm holds the payment is not acknowledged.
                    let mut deliveries = 0;
                    while !notices
                        .provider_notice(notice_request(notice.clone(), signature.clone()))
                        .await
                        .unwrap()
                        .into_inner()
                        .acknowledged
                    {
                        deliveries += 1;
                        assert!(deliveries < 1000, "never acknowledged");
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    (key, confirming.await.unwrap())
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.push(task.await.unwrap());
        }
        // A notice that arrived while the confirm still held the payment was deferred
        // to the reconciler, as in production.
        let report = stack.core().reconcile_once(100).await.unwrap();
        assert_eq!(report.errors, 0);
        for (key, confirmed) in outcomes {
            match confirmed {
                Ok(order) => {
                    assert_eq!(order.status(), OrderStatus::Paid);
                    confirm_won += 1;
                }
                Err(status) => {
                    assert_eq!(
                        reason(&status, Code::Unavailable),
                        Reason::ProviderUnavailable
                    )
                }
            }
            assert_eq!(stack.payment(&key).await.unwrap().0, "captured", "{key}");
            assert_eq!(stack.valid_tickets(&key).await, 1, "{key}");
            assert_eq!(stack.sim.charges_for(&key), 1, "{key}");
        }
    }
    let notice_won: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM payments.provider_notices WHERE outcome = 'captured'",
    )
    .fetch_one(stack.pool())
    .await
    .unwrap();
    assert!(
        confirm_won > 0 && notice_won > 0,
        "both paths must win sometimes: confirm {confirm_won}, notice {notice_won}"
    );
    stack.assert_consistent().await;
    stack.stop().await;
}
