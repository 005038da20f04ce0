//! Stripe's webhooks at payments' `POST /webhooks/stripe`, signed by the fake: a valid
//! one is recorded; a replay is acknowledged and applied once; reordered events leave
//! the right final state; forged, unsigned, late and oversized deliveries are refused
//! and change nothing.

use http::StatusCode;
use serde_json::{Value, json};

use crate::fake_stripe::{FakeStripe, deliver, signed, unix_now};
use crate::stripe::{assert_agrees, charged_answer_lost, stored, stripe_stack};
use crate::support::Stack;

async fn notices(stack: &Stack) -> Vec<(String, String, String)> {
    sqlx::query_as(
        "SELECT notice_id, kind, outcome FROM payments.provider_notices ORDER BY notice_id",
    )
    .fetch_all(stack.pool())
    .await
    .unwrap()
}

fn endpoint(stack: &Stack) -> String {
    stack
        .payments
        .webhook_url
        .clone()
        .expect("a webhook endpoint")
}

/// `payment_intent.payment_failed` for the intent, as Stripe would send it after a
/// failed confirmation.
fn failed(intent: &Value) -> Value {
    let mut object = intent.clone();
    object["status"] = json!("requires_payment_method");
    object["last_payment_error"] =
        json!({"type": "card_error", "code": "card_declined", "decline_code": "generic_decline"});
    object
}

#[tokio::test]
async fn a_signed_success_is_recorded_and_a_replay_applies_once() {
    let fake = FakeStripe::start().await;
    let stack = stripe_stack(&fake).await;
    let event = stack.event().await;
    let (key, intent) = charged_answer_lost(&stack, &fake, "fan-a", &event, stack.seats[0]).await;
    let (id, body) = fake.event("payment_intent.succeeded", &fake.intent(&intent));
    let url = endpoint(&stack);
    assert_eq!(
        deliver(&url, &body, Some(&signed(&body, unix_now()))).await,
        StatusCode::OK
    );
    assert_eq!(stored(&stack, &key).await.0, "captured");
    let tickets = stack.valid_tickets(&key).await;
    assert_eq!(tickets, 1);
    // Redelivered (Stripe signs each delivery anew): acknowledged, nothing again.
    for _ in 0..2 {
        assert_eq!(
            deliver(&url, &body, Some(&signed(&body, unix_now()))).await,
            StatusCode::OK
        );
    }
    assert_eq!(
        notices(&stack).await,
        [(id, "charge_succeeded".into(), "captured".into())]
    );
    assert_eq!(stack.valid_tickets(&key).await, tickets);
    assert_agrees(&stack, &fake).await;
    stack.stop().await;
}

#[tokio::test]
async fn reordered_events_leave_the_right_final_state() {
    let fake = FakeStripe::start().await;
    let stack = stripe_stack(&fake).await;
    let event = stack.event().await;
    let url = endpoint(&stack);
    let send = |body: String| {
        let url = url.clone();
        async move { deliver(&url, &body, Some(&signed(&body, unix_now()))).await }
    };

    // A failure notice arriving after the success: the payment stays captured.
    let (first, intent) = charged_answer_lost(&stack, &fake, "fan-a", &event, stack.seats[0]).await;
    let (_, success) = fake.event("payment_intent.succeeded", &fake.intent(&intent));
    let (_, failure) = fake.event(
        "payment_intent.payment_failed",
        &failed(&fake.intent(&intent)),
    );
    assert_eq!(send(success).await, StatusCode::OK);
    assert_eq!(send(failure).await, StatusCode::OK);
    assert_eq!(stored(&stack, &first).await.0, "captured");

    // A refund event before the success it follows (another payment's refund record,
    // delivered out of order): noted, and the success still books.
    let (second, intent) =
        charged_answer_lost(&stack, &fake, "fan-b", &event, stack.seats[1]).await;
    let refund = json!({"id": "re_early", "object": "refund", "status": "succeeded",
        "amount": 2500, "currency": "eur", "payment_intent": intent,
        "metadata": {"idempotency_key": format!("refund:{second}")}});
    let (_, refunded) = fake.event("refund.created", &refund);
    let (_, success) = fake.event("payment_intent.succeeded", &fake.intent(&intent));
    assert_eq!(send(refunded).await, StatusCode::OK);
    assert_eq!(send(success).await, StatusCode::OK);
    assert_eq!(stored(&stack, &second).await.0, "captured");

    let kinds: Vec<(String, String)> = notices(&stack)
        .await
        .into_iter()
        .map(|(_, kind, outcome)| (kind, outcome))
        .collect();
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    assert!(
        kinds.contains(&("charge_failed".into(), "already_captured".into())),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&("refund_succeeded".into(), "noted".into())),
        "{kinds:?}"
    );
    assert_agrees(&stack, &fake).await;
    stack.stop().await;
}

#[tokio::test]
async fn forged_unsigned_late_and_oversized_deliveries_change_nothing() {
    let fake = FakeStripe::start().await;
    let stack = stripe_stack(&fake).await;
    let event = stack.event().await;
    let (key, intent) = charged_answer_lost(&stack, &fake, "fan-a", &event, stack.seats[0]).await;
    let (_, body) = fake.event("payment_intent.succeeded", &fake.intent(&intent));
    let url = endpoint(&stack);
    let now = unix_now();
    let forged =
        payments::provider::stripe::signature::header(b"whsec_guess", now, body.as_bytes());
    assert_eq!(
        deliver(&url, &body, Some(&forged)).await,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(deliver(&url, &body, None).await, StatusCode::BAD_REQUEST);
    assert_eq!(
        deliver(&url, &body, Some("t=abc,v1=00")).await,
        StatusCode::BAD_REQUEST
    );
    // Signed for another body.
    let other = body.replace("\"amount\":2500", "\"amount\":1");
    assert_ne!(other, body);
    assert_eq!(
        deliver(&url, &other, Some(&signed(&body, now))).await,
        StatusCode::BAD_REQUEST
    );
    // Genuinely signed, but older than the tolerance (a captured delivery replayed).
    assert_eq!(
        deliver(&url, &body, Some(&signed(&body, now - 301))).await,
        StatusCode::BAD_REQUEST
    );
    let huge = format!("{{\"pad\":\"{}\"}}", "x".repeat(70 * 1024));
    assert_eq!(
        deliver(&url, &huge, Some(&signed(&huge, now))).await,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    assert_eq!(stored(&stack, &key).await.0, "pending");
    assert!(notices(&stack).await.is_empty());
    // Irrelevant events are acknowledged, so Stripe stops sending them.
    let (_, other_kind) = fake.event("customer.created", &json!({"id": "cus_1"}));
    assert_eq!(
        deliver(&url, &other_kind, Some(&signed(&other_kind, now))).await,
        StatusCode::OK
    );
    // The genuine delivery, on time, still applies.
    assert_eq!(
        deliver(&url, &body, Some(&signed(&body, unix_now()))).await,
        StatusCode::OK
    );
    assert_eq!(stored(&stack, &key).await.0, "captured");
    assert_agrees(&stack, &fake).await;
    stack.stop().await;
}
