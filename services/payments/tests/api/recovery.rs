//! Money and seats when things go wrong between the charge and the booking: the hold
//! lapses and is reclaimed, duplicates race, the provider times out after charging, the
//! service dies mid-flow. Afterwards the provider's ledger and the database agree.

use payments::provider::sim::Faults;
use stadium_kit::Reason;
use stadium_proto::payments::v1::{OrderStatus, RefundReason};
use tonic::Code;

use crate::support::{Options, Stack, confirm_with, reason};
use stadium_testkit::all_at_once;

#[tokio::test]
async fn paying_at_minute_11_of_a_reclaimed_hold_refunds_and_the_other_fan_keeps_the_seat() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let seat = stack.seats[0];
    let key = stack.claim("fan-a", &event, &[seat]).await;

    // The charge is held at the provider while the hold's clock runs out and fan B
    // claims the seat (lazy expiry inside B's claim).
    stack.sim.close_gate();
    let confirming = tokio::spawn(confirm_with(
        stack.client(),
        stack.issuers.session("fan-a"),
        key.clone(),
        "tok_visa",
    ));
    stack.sim.charge_waiting().await;
    stack.age_hold(&key, 11).await;
    let theirs = stack.claim("fan-b", &event, &[seat]).await;
    stack.sim.open_gate();

    let order = confirming.await.unwrap().unwrap();
    assert_eq!(order.status(), OrderStatus::Refunded);
    let refund = order.refund.clone().unwrap();
    assert_eq!(refund.reason(), RefundReason::HoldExpired);
    assert_eq!(
        refund.amount.unwrap().amount_minor,
        order.amount.unwrap().amount_minor
    );
    assert!(order.tickets.is_empty());
    assert_eq!(stack.sim.refunds_for(&format!("refund:{key}")), 1);

    // Fan B still holds the seat and can pay for it.
    assert_eq!(stack.hold_statuses(&theirs).await, ["held"]);
    let paid = stack.confirm("fan-b", &theirs, "tok_visa").await.unwrap();
    assert_eq!(paid.status(), OrderStatus::Paid);
    assert_eq!(paid.tickets[0].seat_id, seat);

    // Fan A asking again gets the same refunded order, nothing moves.
    let again = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(again.order_id, order.order_id);
    assert_eq!(again.status(), OrderStatus::Refunded);
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn fifty_concurrent_confirms_of_one_hold_charge_once() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack
        .claim("fan-a", &event, &[stack.seats[0], stack.seats[1]])
        .await;
    stack.sim.set_faults(Faults {
        latency: std::time::Duration::from_millis(50),
        ..Faults::default()
    });
    let session = stack.issuers.session("fan-a");
    let results = all_at_once(50, |_| {
        confirm_with(stack.client(), session.clone(), key.clone(), "tok_visa")
    })
    .await;
    let mut orders = std::collections::HashSet::new();
    for result in results {
        match result {
            Ok(order) => {
                assert_eq!(order.status(), OrderStatus::Paid);
                orders.insert(order.order_id);
            }
            Err(status) => {
                assert_eq!(reason(&status, Code::Aborted), Reason::InProgress);
                let retry_after = stadium_testkit::grpc::metadata(&status, "retry_after_ms");
                assert!(retry_after.is_some_and(|ms| ms.parse::<u64>().is_ok_and(|ms| ms > 0)));
            }
        }
    }
    assert_eq!(orders.len(), 1, "one order whatever the answers");
    assert_eq!(stack.sim.charges_for(&key), 1);
    assert_eq!(stack.valid_tickets(&key).await, 2);
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn a_provider_timeout_after_charging_is_finished_by_the_reconciler() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let booked = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    let lapsed = stack.claim("fan-b", &event, &[stack.seats[1]]).await;
    stack.sim.set_faults(Faults {
        timeout_after_charge: 2,
        ..Faults::default()
    });
    for (fan, key) in [("fan-a", &booked), ("fan-b", &lapsed)] {
        let err = stack.confirm(fan, key, "tok_visa").await.unwrap_err();
        assert_eq!(reason(&err, Code::Unavailable), Reason::ProviderUnavailable);
        assert_eq!(stack.payment(key).await.unwrap().0, "pending");
        assert_eq!(stack.sim.charges_for(key), 1, "the money was taken");
    }
    // Fan B's hold runs out before anyone learns the charge went through.
    stack.age_hold(&lapsed, 11).await;

    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!((report.captured, report.refunded, report.errors), (1, 1, 0));
    assert_eq!(stack.payment(&booked).await.unwrap().0, "captured");
    let (status, why, ..) = stack.payment(&lapsed).await.unwrap();
    assert_eq!(
        (status.as_str(), why.as_deref()),
        ("refunded", Some("hold_expired"))
    );

    // A second pass finds nothing; the fans' retries read the outcome.
    let idle = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(idle, Default::default());
    let order = stack.confirm("fan-a", &booked, "tok_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn a_service_killed_between_charge_and_booking_loses_nothing_after_restart() {
    let mut stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack
        .claim("fan-a", &event, &[stack.seats[0], stack.seats[1]])
        .await;
    let lapsing = stack.claim("fan-b", &event, &[stack.seats[2]]).await;
    // The charge is recorded, then the flow never comes back: as if the process died.
    stack.sim.set_faults(Faults {
        stall_after_charge: 2,
        ..Faults::default()
    });
    let first = tokio::spawn(confirm_with(
        stack.client(),
        stack.issuers.session("fan-a"),
        key.clone(),
        "tok_visa",
    ));
    let second = tokio::spawn(confirm_with(
        stack.client(),
        stack.issuers.session("fan-b"),
        lapsing.clone(),
        "tok_visa",
    ));
    stack.wait_for_charge(&key).await;
    stack.wait_for_charge(&lapsing).await;
    first.abort();
    second.abort();
    stack.sim.set_faults(Faults::default());
    assert_eq!(stack.payment(&key).await.unwrap().0, "pending");
    stack.age_hold(&lapsing, 11).await;

    // The dead process's leases lapse; the new one's start-up pass finishes both.
    stack.lapse_leases().await;
    stack
        .restart_payments(Options {
            reconcile_interval_ms: 3_600_000,
            ..Options::default()
        })
        .await;
    stack.wait_for_status(&key, "captured").await;
    stack.wait_for_status(&lapsing, "refunded").await;
    assert_eq!(stack.sim.charges_for(&key), 1);
    assert_eq!(stack.valid_tickets(&key).await, 2);

    // The fan's retry reads the outcome and charges nothing more.
    let order = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    assert_eq!(stack.sim.charges_for(&key), 1);
    stack.assert_consistent().await;
    stack.stop().await;
}

/// Backdates a payment past the reconciler's abandon age (10 minutes by default).
async fn age_payment(stack: &Stack, hold_key: &str) {
    sqlx::query(
        "UPDATE payments.payments SET created_at = now() - interval '11 minutes' \
         WHERE hold_key = $1::uuid",
    )
    .bind(hold_key)
    .execute(stack.pool())
    .await
    .unwrap();
}

#[tokio::test]
async fn a_charge_landing_after_the_reconciler_gave_up_is_booked_or_refunded_never_kept() {
    let stack = Stack::start().await;
    let event = stack.event().await;

    // The charge is still on its way when the reconciler finds no trace of it and gives
    // the payment up; then it lands, and the confirm books it after all.
    let booked = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    stack.sim.close_gate();
    let confirming = tokio::spawn(confirm_with(
        stack.client(),
        stack.issuers.session("fan-a"),
        booked.clone(),
        "tok_visa",
    ));
    stack.sim.charge_waiting().await;
    age_payment(&stack, &booked).await;
    stack.lapse_leases().await;
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(report.failed, 1, "{report:?}");
    stack.sim.open_gate();
    let order = confirming.await.unwrap().unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);

    // The same, but the confirm's answer is lost too and the hold lapses: the late
    // success notice refunds it.
    let refunded = stack.claim("fan-b", &event, &[stack.seats[1]]).await;
    stack.sim.set_faults(Faults {
        timeout_after_charge: 1,
        ..Faults::default()
    });
    stack.sim.close_gate();
    let confirming = tokio::spawn(confirm_with(
        stack.client(),
        stack.issuers.session("fan-b"),
        refunded.clone(),
        "tok_visa",
    ));
    stack.sim.charge_waiting().await;
    age_payment(&stack, &refunded).await;
    stack.lapse_leases().await;
    assert_eq!(stack.core().reconcile_once(100).await.unwrap().failed, 1);
    stack.age_hold(&refunded, 11).await;
    stack.sim.open_gate();
    let err = confirming.await.unwrap().unwrap_err();
    assert_eq!(reason(&err, Code::Unavailable), Reason::ProviderUnavailable);
    assert_eq!(stack.payment(&refunded).await.unwrap().0, "failed");
    // The fan asking again is told the payment was given up, not that a card was
    // declined, and nothing is charged again.
    let again = stack
        .confirm("fan-b", &refunded, "tok_visa")
        .await
        .unwrap_err();
    assert_eq!(
        reason(&again, Code::FailedPrecondition),
        Reason::PaymentAbandoned
    );
    assert_eq!(stack.sim.charges_for(&refunded), 1);
    let (notice, signature) = stack
        .sim
        .success_notice(&refunded, crate::support::NOTICE_SECRET.as_bytes())
        .unwrap();
    let ack = stack
        .client()
        .provider_notice(crate::support::notice_request(notice, signature))
        .await
        .unwrap()
        .into_inner();
    assert!(ack.acknowledged);
    let (status, why, ..) = stack.payment(&refunded).await.unwrap();
    assert_eq!(
        (status.as_str(), why.as_deref()),
        ("refunded", Some("hold_expired"))
    );
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn the_background_reconciler_finishes_what_a_timeout_left_and_stops_on_shutdown() {
    let stack = Stack::start_with(Options {
        reconcile_interval_ms: 50,
        ..Options::default()
    })
    .await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    stack.sim.set_faults(Faults {
        timeout_after_charge: 1,
        ..Faults::default()
    });
    let err = stack.confirm("fan-a", &key, "tok_visa").await.unwrap_err();
    assert_eq!(reason(&err, Code::Unavailable), Reason::ProviderUnavailable);
    // Nobody calls the reconciler here: its background passes must.
    stack.wait_for_status(&key, "captured").await;
    assert_eq!(stack.valid_tickets(&key).await, 1);
    stack.assert_consistent().await;
    stack.stop().await;
}
