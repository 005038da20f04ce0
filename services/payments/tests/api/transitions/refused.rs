//! The transitions the state machine refuses, each tried through the entry point that
//! would make it, each leaving the stored payment exactly as it was and the provider's
//! ledger untouched.

use payments::lifecycle::MAX_CHARGE_ATTEMPTS;
use payments::provider::sim::Faults;
use stadium_kit::Reason;
use stadium_proto::payments::v1::{IssueCompRequest, OrderStatus};
use stadium_tokens::Role;
use tonic::Code;

use super::{
    age_payment, deliver_decline, deliver_success, notice_outcome, outage, refund_order, refused,
    stored, success_notice_id, visits_due,
};
use crate::support::{Stack, bearer};

#[tokio::test]
async fn captured_never_becomes_failed() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    let before = stored(&stack, &key).await;

    assert!(deliver_decline(&stack, &key, "ntc_late_decline").await);
    assert_eq!(
        notice_outcome(&stack, "ntc_late_decline").await.as_deref(),
        Some("already_captured")
    );
    visits_due(&stack).await;
    assert_eq!(
        stack.core().reconcile_once(100).await.unwrap(),
        Default::default()
    );
    assert_eq!(stored(&stack, &key).await, before);
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn captured_is_never_captured_a_second_time() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    let order = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    let before = stored(&stack, &key).await;

    assert!(deliver_success(&stack, &key).await);
    let notice = success_notice_id(&stack, &key);
    assert_eq!(
        notice_outcome(&stack, &notice).await.as_deref(),
        Some("already_captured")
    );
    let again = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(again.order_id, order.order_id);
    assert_eq!(
        again.tickets, order.tickets,
        "the same tickets, none issued again"
    );
    assert_eq!(stored(&stack, &key).await, before);
    assert_eq!(stack.sim.charges_for(&key), 1);
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn refunded_never_becomes_captured_nor_refunds_again() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    let refunded = refund_order(&stack, &key).await.unwrap();
    let before = stored(&stack, &key).await;
    assert_eq!(before.status, "refunded");

    assert!(deliver_success(&stack, &key).await);
    let notice = success_notice_id(&stack, &key);
    assert_eq!(
        notice_outcome(&stack, &notice).await.as_deref(),
        Some("already_refunded")
    );
    let confirmed = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(confirmed.status(), OrderStatus::Refunded);
    let again = refund_order(&stack, &key).await.unwrap();
    assert_eq!(again.refund, refunded.refund, "the same refund");
    assert_eq!(stored(&stack, &key).await, before);
    assert_eq!(stack.hold_statuses(&key).await, ["released"]);
    assert_eq!(stack.sim.refunds_for(&format!("refund:{key}")), 1);
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn refund_pending_never_becomes_captured() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    outage(&stack);
    refund_order(&stack, &key).await.unwrap_err();
    stack.sim.set_faults(Faults::default());
    let before = stored(&stack, &key).await;
    assert_eq!(before.status, "refund_pending");

    assert!(deliver_success(&stack, &key).await);
    let notice = success_notice_id(&stack, &key);
    assert_eq!(
        notice_outcome(&stack, &notice).await.as_deref(),
        Some("already_refund_pending")
    );
    assert_eq!(stored(&stack, &key).await, before);
    stack.stop().await;
}

/// RefundOrder refunds a captured payment only: not one still pending (its charge may
/// yet be booked), not a failed one (nothing charged), not a comp (nothing charged).
#[tokio::test]
async fn only_a_captured_order_is_refunded_by_the_box_office() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let pending = stack
        .charged_answer_lost("fan-a", &event, stack.seats[0])
        .await;
    let failed = stack.claim("fan-b", &event, &[stack.seats[1]]).await;
    stack
        .confirm("fan-b", &failed, "tok_decline")
        .await
        .unwrap_err();
    let comp = stack
        .client()
        .issue_comp(bearer(
            IssueCompRequest {
                event_id: event.clone(),
                section_id: stack.section,
                seat_ids: vec![stack.seats[2]],
                recipient: "Press office".into(),
            },
            &stack.issuers.admin(&[Role::BoxOffice]),
        ))
        .await
        .unwrap()
        .into_inner()
        .order
        .unwrap()
        .hold_key;
    for key in [&pending, &failed, &comp] {
        let before = stored(&stack, key).await;
        let err = refund_order(&stack, key).await.unwrap_err();
        refused(&err, Code::FailedPrecondition, Reason::NotRefundable);
        assert_eq!(stored(&stack, key).await, before, "{}", before.status);
    }
    assert_eq!(stack.hold_statuses(&comp).await, ["booked"]);
    assert!(
        stack
            .sim
            .ledger()
            .iter()
            .all(|e| !e.idempotency_key.starts_with("refund:"))
    );
    stack.stop().await;
}

/// An abandoned payment (never seen charged) takes no new attempt: its charge may
/// still land, so a second one could charge the fan twice.
#[tokio::test]
async fn an_abandoned_payment_is_never_charged_again() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    outage(&stack);
    stack.confirm("fan-a", &key, "tok_visa").await.unwrap_err();
    stack.sim.set_faults(Faults::default());
    age_payment(&stack, &key).await;
    assert_eq!(stack.core().reconcile_once(100).await.unwrap().failed, 1);
    let before = stored(&stack, &key).await;
    assert_eq!((before.status.as_str(), before.declined), ("failed", false));

    let other = stack
        .confirm("fan-a", &key, "tok_mastercard")
        .await
        .unwrap_err();
    refused(
        &other,
        Code::FailedPrecondition,
        Reason::IdempotencyKeyReused,
    );
    let same = stack.confirm("fan-a", &key, "tok_visa").await.unwrap_err();
    refused(&same, Code::FailedPrecondition, Reason::PaymentAbandoned);
    assert_eq!(stored(&stack, &key).await, before);
    assert!(stack.sim.ledger().is_empty());
    stack.stop().await;
}

/// After the last attempt a hold allows was declined, no method starts another.
#[tokio::test]
async fn no_attempt_follows_the_last_declined_one() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    stack
        .confirm("fan-a", &key, "tok_decline")
        .await
        .unwrap_err();
    // As if the fan had been declined with as many methods as a hold allows.
    sqlx::query("UPDATE payments.payments SET charge_attempt = $2 WHERE hold_key = $1::uuid")
        .bind(&key)
        .bind(i32::try_from(MAX_CHARGE_ATTEMPTS).unwrap())
        .execute(stack.pool())
        .await
        .unwrap();
    let before = stored(&stack, &key).await;

    let err = stack.confirm("fan-a", &key, "tok_visa").await.unwrap_err();
    refused(&err, Code::FailedPrecondition, Reason::PaymentDeclined);
    assert_eq!(stored(&stack, &key).await, before);
    assert_eq!(
        stack.sim.ledger().len(),
        1,
        "only the first, declined charge"
    );
    stack.stop().await;
}

/// A notice about an attempt before the current one changes nothing: that attempt was
/// declined, since a new one starts only after a decline.
#[tokio::test]
async fn a_notice_about_an_earlier_attempt_changes_nothing() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    stack
        .confirm("fan-a", &key, "tok_decline")
        .await
        .unwrap_err();
    stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    let before = stored(&stack, &key).await;
    assert_eq!(
        (before.status.as_str(), before.charge_attempt),
        ("captured", 2)
    );

    assert!(deliver_decline(&stack, &key, "ntc_first_attempt").await);
    assert_eq!(
        notice_outcome(&stack, "ntc_first_attempt").await.as_deref(),
        Some("earlier_attempt")
    );
    assert_eq!(stored(&stack, &key).await, before);
    stack.assert_consistent().await;
    stack.stop().await;
}
