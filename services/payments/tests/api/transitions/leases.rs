//! The lease: while a driver holds it, no other entry point moves the payment; a driver
//! that fails gives it back at once; one that dies lets it lapse, and the next driver
//! takes over.

use payments::provider::sim::Faults;
use stadium_kit::Reason;
use stadium_proto::payments::v1::OrderStatus;
use tonic::Code;

use super::{deliver_success, outage, refused, stored};
use crate::support::{Options, Stack};

#[tokio::test]
async fn a_payment_under_another_drivers_lease_is_left_alone_until_the_lease_lapses() {
    let stack = Stack::start_with(Options {
        duplicate_wait_ms: 200,
        ..Options::default()
    })
    .await;
    let event = stack.event().await;
    let key = stack
        .charged_answer_lost("fan-a", &event, stack.seats[0])
        .await;
    // Another driver, alive, holds the payment.
    sqlx::query(
        "UPDATE payments.payments SET lease_owner = gen_random_uuid(), \
             lease_until = now() + interval '1 hour' WHERE hold_key = $1::uuid",
    )
    .bind(&key)
    .execute(stack.pool())
    .await
    .unwrap();
    let leased = stored(&stack, &key).await;

    assert!(!deliver_success(&stack, &key).await, "a notice is deferred");
    let pass = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(pass, Default::default(), "a leased payment is not due");
    let err = stack.confirm("fan-a", &key, "tok_visa").await.unwrap_err();
    refused(&err, Code::Aborted, Reason::InProgress);
    assert_eq!(stored(&stack, &key).await, leased, "nothing moved");

    // The driver died: its lease lapses and the next driver takes the payment over.
    stack.lapse_leases().await;
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(report.captured, 1, "{report:?}");
    let captured = stored(&stack, &key).await;
    assert_eq!(captured.status, "captured");
    assert_eq!(captured.attempts, leased.attempts + 1);
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn a_driver_that_fails_gives_the_lease_back_for_the_next_at_once() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    outage(&stack);
    let err = stack.confirm("fan-a", &key, "tok_visa").await.unwrap_err();
    refused(&err, Code::Unavailable, Reason::ProviderUnavailable);
    let given_back = stored(&stack, &key).await;
    assert_eq!(given_back.status, "pending");
    assert!(given_back.lease_owner.is_some());
    assert_eq!(
        (given_back.lease_until, given_back.lease_held),
        (None, false)
    );

    // No lapse to wait for: the retry takes the lease and charges the same attempt.
    stack.sim.set_faults(Faults::default());
    let order = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    let paid = stored(&stack, &key).await;
    assert_eq!((paid.charge_attempt, paid.attempts), (1, 2));
    stack.assert_consistent().await;
    stack.stop().await;
}
