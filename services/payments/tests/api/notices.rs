//! Provider notices that cannot be applied now are not acknowledged, so the provider
//! delivers them again; a notice for another amount than the payment's changes nothing.

use crate::support::{NOTICE_SECRET, Stack, notice_request};

#[tokio::test]
async fn a_deferred_notice_is_not_acknowledged_and_its_redelivery_applies() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack
        .charged_answer_lost("fan-a", &event, stack.seats[0])
        .await;
    // Another driver holds the payment.
    sqlx::query(
        "UPDATE payments.payments SET lease_owner = gen_random_uuid(), \
             lease_until = now() + interval '1 hour' WHERE hold_key = $1::uuid",
    )
    .bind(&key)
    .execute(stack.pool())
    .await
    .unwrap();
    let (notice, signature) = stack
        .sim
        .success_notice(&key, NOTICE_SECRET.as_bytes())
        .unwrap();
    let deliver = || {
        let mut client = stack.client();
        let request = notice_request(notice.clone(), signature.clone());
        async move {
            client
                .provider_notice(request)
                .await
                .unwrap()
                .into_inner()
                .acknowledged
        }
    };
    assert!(!deliver().await, "deferred, so delivered again later");
    assert_eq!(stack.payment(&key).await.unwrap().0, "pending");
    // The driver died; the provider's next delivery books it.
    stack.lapse_leases().await;
    assert!(deliver().await);
    assert_eq!(stack.payment(&key).await.unwrap().0, "captured");
    assert!(deliver().await, "a repeated delivery is acknowledged");
    stack.assert_consistent().await;
    stack.stop().await;
}

#[tokio::test]
async fn a_notice_for_another_amount_changes_nothing() {
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack
        .charged_answer_lost("fan-a", &event, stack.seats[0])
        .await;
    let (mut notice, _) = stack
        .sim
        .success_notice(&key, NOTICE_SECRET.as_bytes())
        .unwrap();
    notice.notice_id.push_str("-altered");
    notice.amount.amount_minor += 1;
    let signature = notice.sign(NOTICE_SECRET.as_bytes());
    let ack = stack
        .client()
        .provider_notice(notice_request(notice, signature))
        .await
        .unwrap()
        .into_inner();
    assert!(ack.acknowledged, "recorded, not to be delivered again");
    assert_eq!(stack.payment(&key).await.unwrap().0, "pending");
    let outcome: String = sqlx::query_scalar(
        "SELECT outcome FROM payments.provider_notices WHERE idempotency_key = $1",
    )
    .bind(&key)
    .fetch_one(stack.pool())
    .await
    .unwrap();
    assert_eq!(outcome, "amount_mismatch");
    // The genuine notice books it.
    let (notice, signature) = stack
        .sim
        .success_notice(&key, NOTICE_SECRET.as_bytes())
        .unwrap();
    stack
        .client()
        .provider_notice(notice_request(notice, signature))
        .await
        .unwrap();
    assert_eq!(stack.payment(&key).await.unwrap().0, "captured");
    stack.assert_consistent().await;
    stack.stop().await;
}
