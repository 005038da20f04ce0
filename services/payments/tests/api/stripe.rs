//! Payments charging through Stripe's API (a local fake of it, `fake_stripe`): a
//! confirm books and Stripe's ledger agrees; declines; box-office refunds through the
//! refunds endpoint under their own key; a charge retried after a lost answer charges
//! once; the reconciler finds a lost charge by search; and each payment is only ever
//! asked about at its own provider.

use payments::domain::Money;
use payments::provider::stripe::StripeProvider;
use payments::provider::{
    ChargeOutcome, ChargeRequest, LedgerRecord, PaymentProvider, ProviderError, RefundRequest,
};
use secrecy::SecretString;
use stadium_kit::Reason;
use stadium_proto::payments::v1::{OrderStatus, RefundOrderRequest};
use stadium_tokens::Role;
use std::time::Duration;
use tonic::Code;

use crate::fake_stripe::{self, FakeStripe, Faults};
use crate::support::{Options, SEAT_PRICE, Stack, bearer, reason};

pub async fn stripe_stack(fake: &FakeStripe) -> Stack {
    Stack::start_with(Options {
        stripe_api_url: Some(fake.url.clone()),
        ..Options::default()
    })
    .await
}

/// The stored payment of a hold: (status, provider, provider charge id).
pub async fn stored(stack: &Stack, hold_key: &str) -> (String, String, Option<String>) {
    sqlx::query_as(
        "SELECT status, provider, provider_charge_id FROM payments.payments \
         WHERE hold_key = $1::uuid",
    )
    .bind(hold_key)
    .fetch_one(stack.pool())
    .await
    .unwrap()
}

/// A claim of `seat` whose Stripe charge went through but whose answer was lost: the
/// payment stays pending (lease given back) and Stripe has the succeeded intent.
/// Returns the hold key and the intent's id.
pub async fn charged_answer_lost(
    stack: &Stack,
    fake: &FakeStripe,
    fan: &str,
    event: &str,
    seat: u64,
) -> (String, String) {
    let key = stack.claim(fan, event, &[seat]).await;
    fake.set_faults(Faults {
        sever_after_charge: 1,
        ..Faults::default()
    });
    let lost = stack.confirm(fan, &key, "pm_card_visa").await.unwrap_err();
    assert_eq!(
        reason(&lost, Code::Unavailable),
        Reason::ProviderUnavailable
    );
    fake.set_faults(Faults::default());
    assert_eq!(stored(stack, &key).await.0, "pending");
    let intents = fake.intents_of_hold(&key);
    assert_eq!(intents.len(), 1);
    (key, intents[0]["id"].as_str().unwrap().to_owned())
}

/// Stripe's ledger and the database agree: a captured payment has one succeeded
/// intent of its amount and no refund, a refunded one a full refund under
/// `refund:<hold key>`, a failed one no money taken; every row names Stripe.
pub async fn assert_agrees(stack: &Stack, fake: &FakeStripe) {
    let rows: Vec<(uuid::Uuid, String, String, i64, Option<String>)> = sqlx::query_as(
        "SELECT hold_key, status, provider, amount_minor, provider_charge_id \
         FROM payments.payments WHERE status <> 'comp'",
    )
    .fetch_all(stack.pool())
    .await
    .unwrap();
    for (key, status, provider, amount, charge) in rows {
        let key = key.to_string();
        assert_eq!(provider, "stripe", "{key}");
        let charged: Vec<_> = fake
            .intents_of_hold(&key)
            .into_iter()
            .filter(|i| i["status"] == "succeeded")
            .collect();
        match status.as_str() {
            "captured" | "refunded" => {
                assert_eq!(charged.len(), 1, "{key} {status}");
                assert_eq!(charged[0]["amount"], amount);
                assert_eq!(charged[0]["currency"], "eur");
                assert_eq!(charge.as_deref(), charged[0]["id"].as_str());
                let refunds = fake.refunds_of(charged[0]["id"].as_str().unwrap());
                if status == "captured" {
                    assert!(refunds.is_empty(), "{key} captured and refunded");
                    assert_eq!(
                        stack.valid_tickets(&key).await as usize,
                        stack.hold_statuses(&key).await.len()
                    );
                } else {
                    assert_eq!(refunds.len(), 1, "{key} refunds");
                    assert_eq!(refunds[0]["amount"], amount);
                    assert_eq!(
                        refunds[0]["metadata"]["idempotency_key"],
                        format!("refund:{key}")
                    );
                    assert_eq!(stack.valid_tickets(&key).await, 0);
                }
            }
            "failed" => assert!(charged.is_empty(), "{key} failed but charged"),
            other => panic!("{key} left {other}"),
        }
    }
}

#[tokio::test]
async fn a_confirm_through_stripe_books_and_the_ledger_agrees() {
    let fake = FakeStripe::start().await;
    let stack = stripe_stack(&fake).await;
    let event = stack.event().await;
    let seats = [stack.seats[0], stack.seats[1]];
    let key = stack.claim("fan-a", &event, &seats).await;
    let order = stack.confirm("fan-a", &key, "pm_card_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    assert_eq!(order.tickets.len(), 2);
    let (status, provider, charge) = stored(&stack, &key).await;
    assert_eq!((status.as_str(), provider.as_str()), ("captured", "stripe"));
    let intents = fake.intents_of_hold(&key);
    assert_eq!(intents.len(), 1);
    let intent = &intents[0];
    assert_eq!(charge.as_deref(), intent["id"].as_str());
    assert_eq!(intent["amount"], 2 * SEAT_PRICE);
    assert_eq!(intent["metadata"]["idempotency_key"], key.as_str());
    assert_eq!(intent["capture_method"], "automatic");
    let creates: Vec<_> = fake
        .seen()
        .into_iter()
        .filter(|s| s.call == "POST /v1/payment_intents")
        .collect();
    assert_eq!(creates.len(), 1);
    assert_eq!(creates[0].idempotency_key.as_deref(), Some(key.as_str()));
    assert_eq!(stack.hold_statuses(&key).await, ["booked", "booked"]);
    // A repeated confirm answers the same order without calling Stripe again.
    let again = stack.confirm("fan-a", &key, "pm_card_visa").await.unwrap();
    assert_eq!(again.order_id, order.order_id);
    assert_eq!(fake.calls("POST /v1/payment_intents"), 1);
    assert_agrees(&stack, &fake).await;
    stack.stop().await;
}

#[tokio::test]
async fn stripe_declines_fail_the_payment_and_each_new_method_has_its_own_key() {
    let fake = FakeStripe::start().await;
    let stack = stripe_stack(&fake).await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    let declined = stack
        .confirm("fan-a", &key, "pm_card_chargeDeclined")
        .await
        .unwrap_err();
    assert_eq!(
        reason(&declined, Code::FailedPrecondition),
        Reason::PaymentDeclined
    );
    assert!(
        declined.message().contains("generic_decline"),
        "{declined:?}"
    );
    assert_eq!(stored(&stack, &key).await.0, "failed");
    let declined = stack
        .confirm("fan-a", &key, "tok_chargeDeclined")
        .await
        .unwrap_err();
    assert_eq!(
        reason(&declined, Code::FailedPrecondition),
        Reason::PaymentDeclined
    );
    let order = stack.confirm("fan-a", &key, "pm_card_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    let keys: Vec<Option<String>> = fake
        .seen()
        .into_iter()
        .filter(|s| s.call == "POST /v1/payment_intents")
        .map(|s| s.idempotency_key)
        .collect();
    assert_eq!(
        keys,
        [
            Some(key.clone()),
            Some(format!("{key}:2")),
            Some(format!("{key}:3"))
        ]
    );
    assert_eq!(fake.charges_of_hold(&key), 1);
    assert_agrees(&stack, &fake).await;
    stack.stop().await;
}

#[tokio::test]
async fn a_box_office_refund_goes_to_stripe_refunds_under_its_own_key() {
    let fake = FakeStripe::start().await;
    let stack = stripe_stack(&fake).await;
    let event = stack.event().await;
    let key = stack.claim("fan-a", &event, &[stack.seats[0]]).await;
    let order = stack.confirm("fan-a", &key, "pm_card_visa").await.unwrap();
    let refund = |id: String| {
        bearer(
            RefundOrderRequest {
                order_id: id,
                reason: "event cancelled".into(),
                ..Default::default()
            },
            &stack.issuers.admin(&[Role::BoxOffice]),
        )
    };
    let refunded = stack
        .client()
        .refund_order(refund(order.order_id.clone()))
        .await
        .unwrap()
        .into_inner()
        .order
        .unwrap();
    assert_eq!(refunded.status(), OrderStatus::Refunded);
    // Asked again: the same answer, nothing sent to Stripe again.
    stack
        .client()
        .refund_order(refund(order.order_id.clone()))
        .await
        .unwrap();
    let refunds: Vec<_> = fake
        .seen()
        .into_iter()
        .filter(|s| s.call == "POST /v1/refunds")
        .collect();
    assert_eq!(refunds.len(), 1);
    assert_eq!(
        refunds[0].idempotency_key.as_deref(),
        Some(format!("refund:{key}").as_str())
    );
    assert!(
        !stack
            .hold_statuses(&key)
            .await
            .iter()
            .any(|s| s == "booked" || s == "held"),
        "the seat is free again"
    );
    assert_eq!(stored(&stack, &key).await.0, "refunded");
    assert_agrees(&stack, &fake).await;
    stack.stop().await;
}

#[tokio::test]
async fn a_charge_retried_after_a_lost_answer_charges_once() {
    let fake = FakeStripe::start().await;
    let stack = stripe_stack(&fake).await;
    let event = stack.event().await;
    let (key, intent) = charged_answer_lost(&stack, &fake, "fan-a", &event, stack.seats[0]).await;
    let order = stack.confirm("fan-a", &key, "pm_card_visa").await.unwrap();
    assert_eq!(order.status(), OrderStatus::Paid);
    assert_eq!(
        fake.calls("POST /v1/payment_intents"),
        2,
        "the retry went to Stripe"
    );
    assert_eq!(
        fake.intents_of_hold(&key).len(),
        1,
        "and charged nothing new"
    );
    assert_eq!(
        stored(&stack, &key).await.2.as_deref(),
        Some(intent.as_str())
    );
    assert_agrees(&stack, &fake).await;
    stack.stop().await;
}

#[tokio::test]
async fn the_reconciler_finds_a_lost_charge_and_refunds_it_when_the_hold_is_gone() {
    let fake = FakeStripe::start().await;
    let stack = stripe_stack(&fake).await;
    let event = stack.event().await;
    let (kept, _) = charged_answer_lost(&stack, &fake, "fan-a", &event, stack.seats[0]).await;
    let (gone, intent) = charged_answer_lost(&stack, &fake, "fan-b", &event, stack.seats[1]).await;
    stack.age_hold(&gone, 11).await;
    stack.lapse_leases().await;
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!((report.captured, report.refunded), (1, 1), "{report:?}");
    assert_eq!(stored(&stack, &kept).await.0, "captured");
    assert_eq!(stored(&stack, &gone).await.0, "refunded");
    assert_eq!(fake.refunds_of(&intent).len(), 1);
    assert!(fake.calls("GET /v1/payment_intents/search") >= 2);
    assert_agrees(&stack, &fake).await;
    stack.stop().await;
}

async fn set_provider(stack: &Stack, hold_key: &str, provider: &str) {
    sqlx::query("UPDATE payments.payments SET provider = $2 WHERE hold_key = $1::uuid")
        .bind(hold_key)
        .bind(provider)
        .execute(stack.pool())
        .await
        .unwrap();
}

#[tokio::test]
async fn the_reconciler_asks_only_the_payments_own_provider() {
    let fake = FakeStripe::start().await;
    let stack = stripe_stack(&fake).await;
    let event = stack.event().await;
    let (key, _) = charged_answer_lost(&stack, &fake, "fan-a", &event, stack.seats[0]).await;
    // As if the payment had been made through the simulator, by another deployment.
    set_provider(&stack, &key, "sim").await;
    stack.lapse_leases().await;
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(report.other_provider, 1, "{report:?}");
    assert_eq!(
        fake.calls("GET /v1/payment_intents/search"),
        0,
        "Stripe not asked"
    );
    assert_eq!(stored(&stack, &key).await.0, "pending", "left alone");
    // A fan's retry is not charged through the wrong provider either.
    let refused = stack
        .confirm("fan-a", &key, "pm_card_visa")
        .await
        .unwrap_err();
    assert_eq!(
        reason(&refused, Code::Unavailable),
        Reason::ProviderUnavailable
    );
    assert_eq!(fake.calls("POST /v1/payment_intents"), 1);
    // Its own provider, once configured, finishes it.
    set_provider(&stack, &key, "stripe").await;
    sqlx::query("UPDATE payments.payments SET reconcile_at = now()")
        .execute(stack.pool())
        .await
        .unwrap();
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(
        (report.captured, report.other_provider),
        (1, 0),
        "{report:?}"
    );
    assert_agrees(&stack, &fake).await;
    stack.stop().await;

    // And the other way round: a simulator process leaves Stripe's payments.
    let stack = Stack::start().await;
    let event = stack.event().await;
    let key = stack
        .charged_answer_lost("fan-a", &event, stack.seats[0])
        .await;
    assert_eq!(
        stored(&stack, &key).await.1,
        "sim",
        "the simulator's payments say so"
    );
    set_provider(&stack, &key, "stripe").await;
    stack.lapse_leases().await;
    let report = stack.core().reconcile_once(100).await.unwrap();
    assert_eq!(
        (report.other_provider, report.captured),
        (1, 0),
        "{report:?}"
    );
    assert_eq!(stored(&stack, &key).await.0, "pending");
    stack.stop().await;
}

#[tokio::test]
async fn the_adapter_honours_stripes_idempotency_and_finds_records_again() {
    let fake = FakeStripe::start().await;
    let stripe = StripeProvider::new(
        &fake.url.parse().unwrap(),
        &SecretString::from(fake_stripe::SECRET_KEY),
        Duration::from_secs(10),
    )
    .unwrap();
    let hold = uuid::Uuid::new_v4().to_string();
    let charge = |minor: i64| ChargeRequest {
        idempotency_key: hold.clone(),
        amount: Money {
            amount_minor: minor,
            currency: "EUR".into(),
        },
        method_token: "pm_card_visa".into(),
    };
    let first = stripe.charge(&charge(500)).await.unwrap();
    assert_eq!(stripe.charge(&charge(500)).await.unwrap(), first);
    assert_eq!(fake.intents_of_hold(&hold).len(), 1);
    let ChargeOutcome::Succeeded { charge_id } = first.clone() else {
        panic!("charged: {first:?}");
    };
    // The same key with other parameters: Stripe's idempotency_error, refused.
    assert!(matches!(
        stripe.charge(&charge(600)).await,
        Err(ProviderError::Rejected(m)) if m.contains("idempotency_key_reused")
    ));
    assert_eq!(
        stripe.lookup(&hold).await.unwrap(),
        Some(LedgerRecord::Charge(first))
    );
    assert_eq!(
        stripe
            .lookup(&uuid::Uuid::new_v4().to_string())
            .await
            .unwrap(),
        None
    );
    let refund = RefundRequest {
        idempotency_key: format!("refund:{hold}"),
        charge_id: charge_id.clone(),
        amount: Money {
            amount_minor: 500,
            currency: "EUR".into(),
        },
    };
    let refund_id = stripe.refund(&refund).await.unwrap();
    assert_eq!(stripe.refund(&refund).await.unwrap(), refund_id);
    assert_eq!(fake.refunds_of(&charge_id).len(), 1);
    assert_eq!(
        stripe.lookup(&format!("refund:{hold}")).await.unwrap(),
        Some(LedgerRecord::Refund { refund_id })
    );
    // A refund of an unknown intent is refused; an outage is unavailable; a bad key
    // is refused.
    let unknown = RefundRequest {
        idempotency_key: "refund:other".into(),
        charge_id: "pi_nope".into(),
        ..refund.clone()
    };
    assert!(matches!(
        stripe.refund(&unknown).await,
        Err(ProviderError::Rejected(_))
    ));
    fake.set_faults(Faults {
        unavailable: true,
        ..Faults::default()
    });
    assert!(matches!(
        stripe.lookup(&hold).await,
        Err(ProviderError::Unavailable(_))
    ));
    fake.set_faults(Faults::default());
    let wrong = StripeProvider::new(
        &fake.url.parse().unwrap(),
        &SecretString::from("sk_test_wrong"),
        Duration::from_secs(10),
    )
    .unwrap();
    assert!(matches!(
        wrong.charge(&charge(500)).await,
        Err(ProviderError::Rejected(_))
    ));
}
