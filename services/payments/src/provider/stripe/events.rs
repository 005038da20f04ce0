//! Stripe events (webhook bodies) read as provider [`Notice`]s, the notice id being the
//! event id (`evt_…`: a redelivery repeats it, so the notice handling applies it once):
//!
//! - `payment_intent.succeeded` → [`NoticeKind::ChargeSucceeded`];
//! - `payment_intent.payment_failed` → [`NoticeKind::ChargeFailed`];
//! - `refund.created` / `refund.updated` of a `succeeded` refund →
//!   [`NoticeKind::RefundSucceeded`] (a Refund carries its own metadata, hence the
//!   refund's idempotency key, which `charge.refunded`'s Charge does not).
//!
//! The idempotency key is the object's `metadata.idempotency_key` (set by
//! [`super::StripeProvider`]); the provider charge id the PaymentIntent's id; the
//! amount the object's, its currency upper-cased as payments stores it. Any other
//! event, or an object without our metadata (made outside payments), is irrelevant.

use serde::Deserialize;

use super::wire::{KEY_METADATA, PaymentIntent, Refund};
use crate::domain::Money;
use crate::provider::{Notice, NoticeKind};

/// What an event means to payments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// A notice to apply.
    Notice(Notice),
    /// Nothing for payments (another event type, or not one of our objects); the
    /// string says why, for the log.
    Irrelevant(String),
}

/// Why an event body could not be read.
#[derive(Debug, thiserror::Error)]
#[error("unreadable Stripe event: {0}")]
pub struct EventError(String);

#[derive(Debug, Deserialize)]
struct Event {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    data: EventData,
}

#[derive(Debug, Deserialize)]
struct EventData {
    object: serde_json::Value,
}

fn object<T: serde::de::DeserializeOwned>(event: &Event) -> Result<T, EventError> {
    T::deserialize(&event.data.object).map_err(|e| EventError(format!("{}: {e}", event.kind)))
}

fn money(amount_minor: i64, currency: &str) -> Money {
    Money {
        amount_minor,
        currency: currency.to_ascii_uppercase(),
    }
}

/// Reads an event body (JSON, as Stripe posts it).
///
/// # Errors
/// [`EventError`] when the body is not an event, or a relevant event's object lacks
/// the fields its type promises.
pub fn read(body: &[u8]) -> Result<Reading, EventError> {
    let event: Event = serde_json::from_slice(body).map_err(|e| EventError(e.to_string()))?;
    let kind = match event.kind.as_str() {
        "payment_intent.succeeded" => NoticeKind::ChargeSucceeded,
        "payment_intent.payment_failed" => NoticeKind::ChargeFailed,
        "refund.created" | "refund.updated" => NoticeKind::RefundSucceeded,
        other => return Ok(Reading::Irrelevant(format!("event type {other}"))),
    };
    let (key, charge_id, amount) = if kind == NoticeKind::RefundSucceeded {
        let refund: Refund = object(&event)?;
        if refund.status != "succeeded" {
            return Ok(Reading::Irrelevant(format!("refund {}", refund.status)));
        }
        let key = refund.metadata.get(KEY_METADATA).cloned();
        let amount = money(refund.amount, &refund.currency);
        (key, refund.payment_intent.unwrap_or_default(), amount)
    } else {
        let intent: PaymentIntent = object(&event)?;
        let key = intent.metadata.get(KEY_METADATA).cloned();
        let amount = money(intent.amount, &intent.currency);
        (key, intent.id, amount)
    };
    let Some(idempotency_key) = key else {
        return Ok(Reading::Irrelevant(format!(
            "{} without metadata {KEY_METADATA}",
            event.kind
        )));
    };
    Ok(Reading::Notice(Notice {
        notice_id: event.id,
        kind,
        idempotency_key,
        provider_charge_id: charge_id,
        amount,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_succeeded_intent_is_a_charge_notice() {
        let body = br#"{"id":"evt_1","object":"event","type":"payment_intent.succeeded",
            "data":{"object":{"id":"pi_1","object":"payment_intent","status":"succeeded",
            "amount":2500,"currency":"eur","metadata":{"idempotency_key":"k","hold_key":"h"}}}}"#;
        assert_eq!(
            read(body).unwrap(),
            Reading::Notice(Notice {
                notice_id: "evt_1".into(),
                kind: NoticeKind::ChargeSucceeded,
                idempotency_key: "k".into(),
                provider_charge_id: "pi_1".into(),
                amount: money(2500, "EUR"),
            })
        );
    }

    #[test]
    fn refunds_count_once_succeeded() {
        let refund = |status: &str| {
            format!(
                r#"{{"id":"evt_2","type":"refund.updated","data":{{"object":{{"id":"re_1",
                "status":"{status}","amount":2500,"currency":"eur","payment_intent":"pi_1",
                "metadata":{{"idempotency_key":"refund:k"}}}}}}}}"#
            )
        };
        let Reading::Notice(notice) = read(refund("succeeded").as_bytes()).unwrap() else {
            panic!("a notice");
        };
        assert_eq!(notice.kind, NoticeKind::RefundSucceeded);
        assert_eq!(notice.idempotency_key, "refund:k");
        assert_eq!(notice.provider_charge_id, "pi_1");
        assert!(matches!(
            read(refund("pending").as_bytes()).unwrap(),
            Reading::Irrelevant(_)
        ));
    }

    #[test]
    fn other_events_and_foreign_objects_are_irrelevant() {
        let other = br#"{"id":"evt_3","type":"customer.created","data":{"object":{}}}"#;
        assert!(matches!(read(other).unwrap(), Reading::Irrelevant(_)));
        let foreign = br#"{"id":"evt_4","type":"payment_intent.succeeded","data":{"object":
            {"id":"pi_9","status":"succeeded","amount":1,"currency":"usd"}}}"#;
        assert!(matches!(read(foreign).unwrap(), Reading::Irrelevant(_)));
        assert!(read(b"not json").is_err());
        let broken =
            br#"{"id":"evt_5","type":"payment_intent.succeeded","data":{"object":{"id":3}}}"#;
        assert!(read(broken).is_err());
    }
}
