//! Out of pending: captured, failed (declined or abandoned), refund_pending; each by
//! every entry point that makes it.

use payments::provider::sim::Faults;
use stadium_kit::Reason;
use stadium_proto::payments::v1::OrderStatus;
use tonic::Code;

use super::{
    age_payment, charge_id, confirm_at_the_gate, deliver_decline, deliver_success, notice_outcome,
    outage, refused, stored, success_notice_id, visits_due,
};
use crate::support::Stack;

/// A pending payment whose charge the provider took, its answer lost: the lease given
/// back, nothing booked.
async fn charged_pending(stack: &Stack, fan: &str, event: &str, seat: u64) -> String {
    let key = stack.charged_answer_lost(fan, event, seat).await;
    let pending = stored(stack, &key).await;
    assert_eq!(pending.status, "pending");
    assert!(pending.lease_owner.is_some() && pending.lease_until.is_none());
    assert_eq!(stack.sim.charges_for(&key), 1);
    key
}

/// A pending payment the provider declined, the answer lost.
async fn declined_pending(stack: &Stack, fan: &str, event: &str, seat: u64) -> String {
    let key = stack.claim(fan, event, &[seat]).await;
    stack.sim.set_faults(Faults {
        timeout_after_charge: 1,
        ..Faults::default()
    });
    let lost = stack.confirm(fan, &key, "tok_decline").await.unwrap_err();
    refused(&lost, Code::Unavailable, Reason::ProviderUnavailable);
    stack.sim.set_faults(Faults::default());
    assert_eq!(stored(stack, &key).await.status, "pending");
    key
}

/// Asserts the payment of `key` captured with the provider's charge, one valid ticket
/// per seat of its hold (booked), the lease cleared.
async fn assert_captured(stack: &Stack, key: &str, seats: usize) {
    let captured = stored(stack, key).await;
    assert_eq!(captured.status, "captured");
    assert_eq!(captured.provider_charge_id, charge_id(stack, key));
    assert_eq!((captured.lease_owner, captured.lease_until), (None, None));
    assert_eq!(captured.valid_tickets, seats as i64);
    assert_eq!(stack.hold_statuses(key).await, vec!["booked"; seats]);
    assert_eq!(stack.sim.charges_for(key), 1);
}

/// Asserts the payment of `key` failed because the provider declined it.
async fn assert_declined(stack: &Stack, key: &str) {
    let failed = stored(stack, key).await;
    assert_eq!((failed.status.as_str(), failed.declined), ("failed", true));
    assert_eq!((failed.lease_owner, failed.lease_until), (None, None));
    assert_eq!((failed.provider_charge_id, failed.valid_tickets), (None, 0));
    assert_eq!(stack.hold_statuses(key).await, ["held"]);
    assert_eq!(stack.sim.charges_for(key), 0);
}

#[tokio::test]
async fn confirm_captures_the_payment_it_charged() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack
        .claim("fan-a", &event, &[stack.seats[0], stack.seats[1]])
        .await;
    let order = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    assert_captured(&stack, &key, 2).await;
    assert_eq!(stored(&stack, &key).await.attempts, 1);
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn a_charge_notice_captures_a_pending_payment() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = charged_pending(&stack, "fan-a", &event, stack.seats[0]).await;
    assert!(deliver_success(&stack, &key).await);
    assert_captured(&stack, &key, 1).await;
    let notice = success_notice_id(&stack, &key);
    assert_eq!(
        notice_outcome(&stack, &notice).await.as_deref(),
        Some("captured")
    );
    assert_eq!(
        stored(&stack, &key).await.attempts,
        2,
        "the notice took the lease"
    );
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn the_reconciler_captures_a_pending_payment_the_provider_charged() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = charged_pending(&stack, "fan-a", &event, stack.seats[0]).await;
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!((report.captured, report.errors), (1, 0), "{report:?}");
    assert_captured(&stack, &key, 1).await;
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn a_repeated_confirm_captures_a_pending_payment_without_charging_again() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = charged_pending(&stack, "fan-a", &event, stack.seats[0]).await;
    let order = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    assert_captured(&stack, &key, 1).await;
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn confirm_fails_a_payment_the_provider_declined() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    let err = stack
        .confirm("fan-a", &key, "tok_decline")
        .await
        .unwrap_err();
    refused(&err, Code::FailedPrecondition, Reason::PaymentDeclined);
    assert_declined(&stack, &key).await;
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn a_decline_notice_fails_a_pending_payment() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = declined_pending(&stack, "fan-a", &event, stack.seats[0]).await;
    assert!(deliver_decline(&stack, &key, "ntc_declined").await);
    assert_declined(&stack, &key).await;
    assert_eq!(
        notice_outcome(&stack, "ntc_declined").await.as_deref(),
        Some("failed")
    );
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn the_reconciler_fails_a_pending_payment_the_provider_declined() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = declined_pending(&stack, "fan-a", &event, stack.seats[0]).await;
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(report.failed, 1, "{report:?}");
    assert_declined(&stack, &key).await;
    stack.assert_consistent().await;
    stack.stop().await;
}

/// pending → failed (abandoned): never charged, and only once older than the abandon
/// age (the condition is the database's: `created_at` against `now()`).
#[tokio::test]
async fn the_reconciler_abandons_a_pending_payment_never_charged_once_old_enough() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    outage(&stack);
    let err = stack.confirm("fan-a", &key, "tok_visa").await.unwrap_err();
    refused(&err, Code::Unavailable, Reason::ProviderUnavailable);
    stack.sim.set_faults(Faults::default());

    let young = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!((young.skipped, young.failed), (1, 0), "{young:?}");
    assert_eq!(stored(&stack, &key).await.status, "pending");

    age_payment(&stack, &key).await;
    visits_due(&stack).await;
    let old = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(old.failed, 1, "{old:?}");
    let abandoned = stored(&stack, &key).await;
    assert_eq!(
        (abandoned.status.as_str(), abandoned.declined),
        ("failed", false)
    );
    assert_eq!((abandoned.lease_owner, abandoned.lease_until), (None, None));
    assert!(stack.sim.ledger().is_empty());
    stack.assert_consistent().await;
    stack.stop().await;
}

/// pending → refund_pending, by Confirm: charged, then holds answers the hold is gone;
/// the refund is decided (reason hold expired) and, with the provider down, left for
/// later with the lease given back.
#[tokio::test]
async fn confirm_decides_a_refund_when_the_hold_is_gone_after_the_charge() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    let confirming = confirm_at_the_gate(&stack, "fan-a", &key, "tok_visa").await;
    stack.age_hold(&key, 11).await;
    outage(&stack);
    stack.sim.open_gate();
    let err = confirming.await.unwrap().unwrap_err();
    refused(&err, Code::Unavailable, Reason::ProviderUnavailable);

    let deciding = stored(&stack, &key).await;
    assert_eq!(deciding.status, "refund_pending");
    assert_eq!(deciding.refund_reason.as_deref(), Some("hold_expired"));
    assert!(deciding.refund_id.is_some());
    assert_eq!(deciding.provider_charge_id, charge_id(&stack, &key));
    assert!(deciding.lease_owner.is_some() && deciding.lease_until.is_none());
    assert_eq!((deciding.refunded_minor, deciding.valid_tickets), (0, 0));
    assert!(
        !stack
            .hold_statuses(&key)
            .await
            .contains(&"booked".to_owned())
    );
    assert_eq!(stack.sim.charges_for(&key), 1);
    assert_eq!(stack.sim.refunds_for(&format!("refund:{key}")), 0);
    stack.stop().await;
}

/// pending → refund_pending, by a charge notice for a hold that is gone; with the
/// provider down the notice is deferred (not recorded). Its redelivery finds the refund
/// decided and only records itself; the reconciler carries the refund out.
#[tokio::test]
async fn a_charge_notice_decides_a_refund_when_the_hold_is_gone() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = charged_pending(&stack, "fan-a", &event, stack.seats[0]).await;
    stack.age_hold(&key, 11).await;
    outage(&stack);
    assert!(!deliver_success(&stack, &key).await, "deferred");
    let deciding = stored(&stack, &key).await;
    assert_eq!(deciding.status, "refund_pending");
    assert_eq!(deciding.refund_reason.as_deref(), Some("hold_expired"));
    let notice = success_notice_id(&stack, &key);
    assert_eq!(notice_outcome(&stack, &notice).await, None);

    stack.sim.set_faults(Faults::default());
    assert!(deliver_success(&stack, &key).await);
    assert_eq!(
        notice_outcome(&stack, &notice).await.as_deref(),
        Some("already_refund_pending")
    );
    assert_eq!(stored(&stack, &key).await.status, "refund_pending");
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(report.refunded, 1, "{report:?}");
    stack.assert_consistent().await;
    stack.stop().await;
}

/// pending → refund_pending → refunded in one reconciler visit: the provider's record
/// shows the charge and holds answers the hold is gone.
#[tokio::test]
async fn the_reconciler_refunds_a_charged_pending_payment_whose_hold_is_gone() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = charged_pending(&stack, "fan-a", &event, stack.seats[0]).await;
    stack.age_hold(&key, 11).await;
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(report.refunded, 1, "{report:?}");
    let refunded = stored(&stack, &key).await;
    assert_eq!(refunded.status, "refunded");
    assert_eq!(refunded.refund_reason.as_deref(), Some("hold_expired"));
    assert_eq!(refunded.refunded_minor, refunded.amount_minor);
    assert_eq!(stack.sim.refunds_for(&format!("refund:{key}")), 1);
    stack.assert_consistent().await;
    stack.stop().await;
}
