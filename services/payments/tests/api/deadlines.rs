//! Deadlines that fit the work: a Confirm waits as long as its provider and holds calls
//! may take, not the server's general request budget; a caller who gives up does not
//! cut the flow in half, and its retry gets the flow's one outcome.

use std::time::Duration;

use payments::provider::sim::Faults;
use stadium_proto::payments::v1::{ConfirmRequest, OrderStatus, PaymentMethod};
use tonic::Code;

use crate::support::{Options, Stack, bearer};

#[tokio::test]
async fn a_slow_provider_gets_a_final_answer_past_the_request_budget() {
    let stack = Stack::start_with(Options {
        request_timeout_ms: 300,
        ..Options::default()
    })
    .await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &stack.seats[0..2]).await;
    stack.sim.set_faults(Faults {
        latency: Duration::from_millis(1_000),
        ..Faults::default()
    });
    let order = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    stack.assert_consistent().await;
}

#[tokio::test]
async fn a_caller_who_gives_up_leaves_a_finished_payment_its_retry_gets() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &stack.seats[0..2]).await;
    stack.sim.set_faults(Faults {
        latency: Duration::from_millis(1_000),
        ..Faults::default()
    });
    let mut request = bearer(
        ConfirmRequest {
            hold_key: key.clone(),
            payment_method: Some(PaymentMethod {
                token: "tok_visa".into(),
            }),
        },
        &stack.issuers.session("fan-a"),
    );
    request.set_timeout(Duration::from_millis(200));
    let gave_up = stack.client().confirm(request).await.unwrap_err();
    assert!(
        matches!(gave_up.code(), Code::DeadlineExceeded | Code::Cancelled),
        "{gave_up:?}"
    );
    // The flow goes on without the caller, books, and gives its lease back.
    stack.wait_for_status(&key, "captured").await;
    let leased: bool = sqlx::query_scalar(
        "SELECT lease_until > now() FROM payments.payments WHERE hold_key = $1::uuid",
    )
    .bind(&key)
    .fetch_one(stack.pool())
    .await
    .unwrap_or(false);
    assert!(!leased, "the finished flow handed its lease back");
    stack.sim.set_faults(Faults::default());
    let retried = stack.confirm("fan-a", &key, "tok_visa").await.unwrap();
    assert_eq!(retried.status(), OrderStatus::Paid);
    assert_eq!(stack.sim.charges_for(&key), 1, "charged once");
    stack.assert_consistent().await;
}
