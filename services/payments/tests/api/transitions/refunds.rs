//! Refunds: captured → refund_pending by the box office, and refund_pending → refunded
//! by whoever drives the decided refund next (the request that decided it, the
//! reconciler, a repeated Confirm, a repeated RefundOrder).

use payments::provider::sim::Faults;
use stadium_kit::Reason;
use stadium_proto::payments::v1::{OrderStatus, RefundReason};
use tonic::Code;

use super::{confirm_at_the_gate, outage, refund_order, refused, stored};
use crate::support::Stack;

/// A paid order of `fan` on `seat` whose box-office refund was decided while the
/// provider was down: refund_pending, reason box office, tickets void, seats released.
async fn box_office_refund_pending(stack: &Stack, fan: &str, event: &str, seat: u64) -> String {
    let key = stack.claim(fan, event, &[seat]).await;
    stack.confirm(fan, &key, "tok_visa").await.unwrap();
    outage(stack);
    let err = refund_order(stack, &key).await.unwrap_err();
    refused(&err, Code::Unavailable, Reason::ProviderUnavailable);
    stack.sim.set_faults(Faults::default());
    key
}

/// A hold of `fan` on `seat` charged after it was gone, its refund decided while the
/// provider was down: refund_pending, reason hold expired.
async fn hold_gone_refund_pending(stack: &Stack, fan: &str, event: &str, seat: u64) -> String {
    let key = stack.claim(fan, event, &[seat]).await;
    let confirming = confirm_at_the_gate(stack, fan, &key, "tok_visa").await;
    stack.age_hold(&key, 11).await;
    outage(stack);
    stack.sim.open_gate();
    confirming.await.unwrap().unwrap_err();
    stack.sim.set_faults(Faults::default());
    assert_eq!(stored(stack, &key).await.status, "refund_pending");
    key
}

/// Asserts the payment of `key` refunded in full for `reason`, the lease cleared, once
/// at the provider.
async fn assert_refunded(stack: &Stack, key: &str, reason: &str) {
    let refunded = stored(stack, key).await;
    assert_eq!(refunded.status, "refunded");
    assert_eq!(refunded.refund_reason.as_deref(), Some(reason));
    assert_eq!(refunded.refunded_minor, refunded.amount_minor);
    assert!(refunded.provider_refund_id.is_some() && refunded.refunded_at.is_some());
    assert_eq!((refunded.lease_owner, refunded.lease_until), (None, None));
    assert_eq!(refunded.valid_tickets, 0);
    assert_eq!(stack.sim.refunds_for(&format!("refund:{key}")), 1);
}

/// captured → refund_pending, by RefundOrder: the tickets are void and holds was told
/// to release the seats before the provider is asked; with the provider down, the
/// refund stays decided, the lease given back.
#[tokio::test]
async fn refund_order_decides_the_refund_of_a_captured_payment() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = box_office_refund_pending(&stack, "fan-a", &event, stack.seats[0]).await;
    let deciding = stored(&stack, &key).await;
    assert_eq!(deciding.status, "refund_pending");
    assert_eq!(deciding.refund_reason.as_deref(), Some("box_office"));
    assert!(deciding.refund_id.is_some());
    assert_eq!((deciding.valid_tickets, deciding.void_tickets), (0, 1));
    assert!(deciding.lease_owner.is_some() && deciding.lease_until.is_none());
    assert_eq!(deciding.refunded_minor, 0);
    assert_eq!(stack.hold_statuses(&key).await, ["released"]);
    assert_eq!(stack.sim.refunds_for(&format!("refund:{key}")), 0);
    stack.stop().await;
}

/// captured → refund_pending → refunded, by one RefundOrder.
#[tokio::test]
async fn refund_order_refunds_a_captured_payment() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    let order = refund_order(&stack, &key).await.unwrap();
    assert_eq!(order.status(), OrderStatus::Refunded);
    assert_refunded(&stack, &key, "box_office").await;
    assert_eq!(stack.hold_statuses(&key).await, ["released"]);
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn the_reconciler_finishes_a_decided_refund() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = hold_gone_refund_pending(&stack, "fan-a", &event, stack.seats[0]).await;
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(report.refunded, 1, "{report:?}");
    assert_refunded(&stack, &key, "hold_expired").await;
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn a_repeated_confirm_finishes_a_decided_refund() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = hold_gone_refund_pending(&stack, "fan-a", &event, stack.seats[0]).await;
    let order = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Refunded);
    assert_eq!(order.refund.unwrap().reason(), RefundReason::HoldExpired);
    assert_refunded(&stack, &key, "hold_expired").await;
    assert_eq!(stack.sim.charges_for(&key), 1);
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn a_repeated_refund_order_finishes_a_decided_refund() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = box_office_refund_pending(&stack, "fan-a", &event, stack.seats[0]).await;
    let order = refund_order(&stack, &key).await.unwrap();
    assert_eq!(order.status(), OrderStatus::Refunded);
    assert_refunded(&stack, &key, "box_office").await;
    stack.assert_consistent().await;
    stack.stop().await;
}
