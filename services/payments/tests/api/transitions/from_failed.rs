//! Out of failed: a declined payment's new attempt (→ pending); an abandoned payment's
//! charge that landed after all (→ captured, or → refund_pending when the hold is
//! gone); an abandoned payment's late decline (→ failed, declined).

use stadium_kit::Reason;
use stadium_proto::payments::v1::{OrderStatus, RefundReason};
use tonic::Code;

use super::{
    abandoned_while_charging, charge_id, confirm_at_the_gate, deliver_success, digest,
    notice_outcome, refused, stored, success_notice_id, visits_due,
};
use crate::support::Stack;

/// Asserts the payment of `key` captured with the charge of its first attempt.
async fn assert_captured(stack: &Stack, key: &str) {
    let captured = stored(stack, key).await;
    assert_eq!(captured.status, "captured");
    assert_eq!(captured.provider_charge_id, charge_id(stack, key));
    assert_eq!((captured.lease_owner, captured.lease_until), (None, None));
    assert_eq!(captured.valid_tickets, 1);
    assert_eq!(stack.hold_statuses(key).await, ["booked"]);
}

/// Asserts the payment of `key` refunded because its hold was gone.
async fn assert_refunded(stack: &Stack, key: &str) {
    let refunded = stored(stack, key).await;
    assert_eq!(refunded.status, "refunded");
    assert_eq!(refunded.refund_reason.as_deref(), Some("hold_expired"));
    assert_eq!(refunded.refunded_minor, refunded.amount_minor);
    assert!(refunded.provider_refund_id.is_some() && refunded.refunded_at.is_some());
    assert_eq!((refunded.lease_owner, refunded.lease_until), (None, None));
    assert_eq!(stack.sim.refunds_for(&format!("refund:{key}")), 1);
}

/// failed (declined) → pending, by Confirm with another payment method: the next
/// attempt under its own idempotency key, the lease taken.
#[tokio::test]
async fn another_method_after_a_decline_starts_the_next_attempt() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    let err = stack
        .confirm("fan-a", &key, "tok_decline")
        .await
        .unwrap_err();
    refused(&err, Code::FailedPrecondition, Reason::PaymentDeclined);

    let confirming = confirm_at_the_gate(&stack, "fan-a", &key, "tok_mastercard").await;
    let attempt = stored(&stack, &key).await;
    assert_eq!(
        (attempt.status.as_str(), attempt.declined),
        ("pending", false)
    );
    assert_eq!((attempt.charge_attempt, attempt.attempts), (2, 2));
    assert_eq!(attempt.method_digest, digest("tok_mastercard"));
    assert!(attempt.lease_owner.is_some() && attempt.lease_held);
    stack.sim.open_gate();
    let order = confirming.await.unwrap().unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    let keys: Vec<String> = stack
        .sim
        .ledger()
        .into_iter()
        .map(|e| e.idempotency_key)
        .collect();
    assert_eq!(keys, [key.clone(), format!("{key}:2")]);
    stack.assert_consistent().await;
    stack.stop().await;
}

/// failed (abandoned) → captured, by the Confirm whose charge lands after the
/// reconciler gave the payment up.
#[tokio::test]
async fn a_confirm_whose_charge_lands_late_captures_an_abandoned_payment() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let (key, confirming) =
        abandoned_while_charging(&stack, "fan-a", &event, stack.seats[0], "tok_visa", false).await;
    stack.sim.open_gate();
    let order = confirming.await.unwrap().unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    assert_captured(&stack, &key).await;
    stack.assert_consistent().await;
    stack.stop().await;
}

/// failed (abandoned) → captured, by the late charge's notice.
#[tokio::test]
async fn a_late_charge_notice_captures_an_abandoned_payment() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let (key, confirming) =
        abandoned_while_charging(&stack, "fan-a", &event, stack.seats[0], "tok_visa", true).await;
    stack.sim.open_gate();
    let lost = confirming.await.unwrap().unwrap_err();
    refused(&lost, Code::Unavailable, Reason::ProviderUnavailable);
    assert_eq!(stored(&stack, &key).await.status, "failed");
    assert!(deliver_success(&stack, &key).await);
    assert_captured(&stack, &key).await;
    let notice = success_notice_id(&stack, &key);
    assert_eq!(
        notice_outcome(&stack, &notice).await.as_deref(),
        Some("captured")
    );
    stack.assert_consistent().await;
    stack.stop().await;
}

/// failed (abandoned) → captured, by the reconciler's next look at the provider's
/// record, with nobody telling it.
#[tokio::test]
async fn the_reconciler_captures_an_abandoned_payment_charged_after_all() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let (key, confirming) =
        abandoned_while_charging(&stack, "fan-a", &event, stack.seats[0], "tok_visa", true).await;
    stack.sim.open_gate();
    confirming.await.unwrap().unwrap_err();
    visits_due(&stack).await;
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(report.captured, 1, "{report:?}");
    assert_captured(&stack, &key).await;
    stack.assert_consistent().await;
    stack.stop().await;
}

/// failed (abandoned) → refund_pending → refunded, by the Confirm whose charge lands
/// late on a hold that is gone: the fan is answered with the refunded order.
#[tokio::test]
async fn a_confirm_whose_charge_lands_late_on_a_gone_hold_refunds_an_abandoned_payment() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let (key, confirming) =
        abandoned_while_charging(&stack, "fan-a", &event, stack.seats[0], "tok_visa", false).await;
    stack.age_hold(&key, 11).await;
    stack.sim.open_gate();
    let order = confirming.await.unwrap().unwrap();
    assert_eq!(order.status(), OrderStatus::Refunded);
    assert_eq!(order.refund.unwrap().reason(), RefundReason::HoldExpired);
    assert_refunded(&stack, &key).await;
    stack.assert_consistent().await;
    stack.stop().await;
}

/// failed (abandoned) → refund_pending → refunded, by the late charge's notice.
#[tokio::test]
async fn a_late_charge_notice_on_a_gone_hold_refunds_an_abandoned_payment() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let (key, confirming) =
        abandoned_while_charging(&stack, "fan-a", &event, stack.seats[0], "tok_visa", true).await;
    stack.sim.open_gate();
    confirming.await.unwrap().unwrap_err();
    stack.age_hold(&key, 11).await;
    assert!(deliver_success(&stack, &key).await);
    assert_refunded(&stack, &key).await;
    let notice = success_notice_id(&stack, &key);
    assert_eq!(
        notice_outcome(&stack, &notice).await.as_deref(),
        Some("refunded")
    );
    stack.assert_consistent().await;
    stack.stop().await;
}

/// failed (abandoned) → refund_pending → refunded, by the reconciler.
#[tokio::test]
async fn the_reconciler_refunds_an_abandoned_payment_charged_after_its_hold_was_gone() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let (key, confirming) =
        abandoned_while_charging(&stack, "fan-a", &event, stack.seats[0], "tok_visa", true).await;
    stack.sim.open_gate();
    confirming.await.unwrap().unwrap_err();
    stack.age_hold(&key, 11).await;
    visits_due(&stack).await;
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(report.refunded, 1, "{report:?}");
    assert_refunded(&stack, &key).await;
    stack.assert_consistent().await;
    stack.stop().await;
}

/// failed (abandoned) → failed (declined), by the Confirm whose charge is declined
/// after the payment was given up: the failure is final, and another method may try.
#[tokio::test]
async fn a_confirm_declined_late_makes_an_abandoned_payment_declined() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let (key, confirming) = abandoned_while_charging(
        &stack,
        "fan-a",
        &event,
        stack.seats[0],
        "tok_decline",
        false,
    )
    .await;
    stack.sim.open_gate();
    let err = confirming.await.unwrap().unwrap_err();
    refused(&err, Code::FailedPrecondition, Reason::PaymentDeclined);
    let declined = stored(&stack, &key).await;
    assert_eq!(
        (declined.status.as_str(), declined.declined),
        ("failed", true)
    );
    let order = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    stack.assert_consistent().await;
    stack.stop().await;
}

/// failed (abandoned) → failed (declined), by the reconciler finding the decline in the
/// provider's record.
#[tokio::test]
async fn the_reconciler_makes_an_abandoned_payment_declined_from_the_providers_record() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let (key, confirming) =
        abandoned_while_charging(&stack, "fan-a", &event, stack.seats[0], "tok_decline", true)
            .await;
    stack.sim.open_gate();
    confirming.await.unwrap().unwrap_err();
    assert!(!stored(&stack, &key).await.declined);
    visits_due(&stack).await;
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(report.failed, 1, "{report:?}");
    let declined = stored(&stack, &key).await;
    assert_eq!(
        (declined.status.as_str(), declined.declined),
        ("failed", true)
    );
    assert_eq!((declined.lease_owner, declined.lease_until), (None, None));
    stack.assert_consistent().await;
    stack.stop().await;
}
