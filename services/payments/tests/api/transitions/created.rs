//! How a payment comes to be: a Confirm's intent ([*] → pending) and a comp
//! ([*] → comp).

use stadium_proto::payments::v1::{IssueCompRequest, OrderStatus};
use stadium_tokens::Role;

use super::{confirm_at_the_gate, digest, stored};
use crate::support::{SEAT_PRICE, Stack, bearer};

/// [*] → pending, by Confirm: the intent is recorded before the charge, under the
/// Confirm's lease, after holds moved the hold into its payment window.
#[tokio::test]
async fn confirm_records_the_intent_pending_under_its_lease_before_the_charge() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack
        .claim("fan-a", &event, &[stack.seats[0], stack.seats[1]])
        .await;
    let confirming = confirm_at_the_gate(&stack, "fan-a", &key, "tok_visa").await;

    let intent = stored(&stack, &key).await;
    assert_eq!(intent.status, "pending");
    assert!(
        intent.lease_owner.is_some() && intent.lease_held,
        "{intent:?}"
    );
    assert_eq!((intent.charge_attempt, intent.attempts), (1, 1));
    assert_eq!(intent.method_digest, digest("tok_visa"));
    assert_eq!(intent.amount_minor, 2 * SEAT_PRICE);
    assert_eq!(intent.provider_charge_id, None);
    assert!(!intent.declined);
    assert_eq!(intent.valid_tickets, 0);
    assert!(stack.sim.ledger().is_empty(), "nothing charged yet");
    // Holds was told StartPayment: the hold is in its payment window.
    let started: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds \
         WHERE hold_key = $1::uuid AND status = 'held' AND payment_started_at IS NOT NULL",
    )
    .bind(&key)
    .fetch_one(stack.pool())
    .await
    .unwrap();
    assert_eq!(started, 2);

    stack.sim.open_gate();
    assert_eq!(
        confirming.await.unwrap().unwrap().status(),
        OrderStatus::Paid
    );
    stack.assert_consistent().await;
    stack.stop().await;
}

/// [*] → comp, by IssueComp: booked through holds' ClaimComp at price 0, tickets issued,
/// no lease, nothing charged.
#[tokio::test]
async fn issue_comp_records_a_comp_with_tickets_at_price_zero() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let order = stack
        .client()
        .issue_comp(bearer(
            IssueCompRequest {
                event_id: event.clone(),
                section_id: stack.section,
                seat_ids: vec![stack.seats[3], stack.seats[4]],
                recipient: "Press office".into(),
            },
            &stack.issuers.admin(&[Role::BoxOffice]),
        ))
        .await
        .unwrap()
        .into_inner()
        .order
        .unwrap();

    let comp = stored(&stack, &order.hold_key).await;
    assert_eq!(comp.status, "comp");
    assert_eq!((comp.amount_minor, comp.refunded_minor), (0, 0));
    assert_eq!(comp.valid_tickets, 2);
    assert_eq!((comp.lease_owner, comp.lease_until), (None, None));
    assert_eq!(comp.method_digest, None);
    assert_eq!(
        stack.hold_statuses(&order.hold_key).await,
        ["booked", "booked"]
    );
    assert!(stack.sim.ledger().is_empty());
    stack.stop().await;
}
