//! The parts of Stripe's JSON this adapter reads, and what an answer means for a
//! charge, a refund or a lookup. Field names are those of Stripe's API reference
//! ("The PaymentIntent object", "The Refund object", "Errors"); unknown fields are
//! ignored, so newer API versions' additions change nothing.

use std::collections::HashMap;

use http::StatusCode;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::client::Answer;
use crate::provider::{ChargeOutcome, ProviderError};

/// The metadata key under which a PaymentIntent or Refund carries our idempotency key,
/// so it can be found again (Stripe has no lookup by `Idempotency-Key`).
pub const KEY_METADATA: &str = "idempotency_key";
/// The metadata key under which a PaymentIntent carries its hold key, so the refunds
/// of a hold can be found from `refund:<hold key>`.
pub const HOLD_METADATA: &str = "hold_key";

/// A PaymentIntent, as far as payments reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct PaymentIntent {
    /// `pi_…`: what payments records as the provider's charge id.
    pub id: String,
    /// `requires_payment_method`, `requires_confirmation`, `requires_action`,
    /// `processing`, `requires_capture`, `canceled` or `succeeded`.
    pub status: String,
    /// Amount in minor units.
    pub amount: i64,
    /// Lower-case ISO currency.
    pub currency: String,
    /// The metadata set at creation.
    #[serde(default)]
    pub metadata: HashMap<String, String>,
    /// Why the last confirmation failed (a decline), if it did.
    #[serde(default)]
    pub last_payment_error: Option<ApiError>,
}

/// A Refund, as far as payments reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct Refund {
    /// `re_…`.
    pub id: String,
    /// `pending`, `requires_action`, `succeeded`, `failed` or `canceled`.
    pub status: String,
    /// Amount in minor units.
    pub amount: i64,
    /// Lower-case ISO currency.
    pub currency: String,
    /// The PaymentIntent refunded.
    #[serde(default)]
    pub payment_intent: Option<String>,
    /// The metadata set at creation.
    #[serde(default)]
    pub metadata: HashMap<String, String>,
}

/// A list or search page (`{"data": [...], …}`): one page is enough, as a key has one
/// PaymentIntent and a PaymentIntent one refund of ours.
#[derive(Debug, Clone, Deserialize)]
pub struct Page<T> {
    /// The objects.
    pub data: Vec<T>,
}

/// Stripe's error object (`{"error": {...}}`, or a PaymentIntent's
/// `last_payment_error`).
#[derive(Debug, Clone, Deserialize)]
pub struct ApiError {
    /// `card_error`, `invalid_request_error`, `idempotency_error`, `api_error`, …
    #[serde(rename = "type", default)]
    pub kind: String,
    /// e.g. `card_declined`, `expired_card`.
    #[serde(default)]
    pub code: Option<String>,
    /// The issuer's reason for a card decline, e.g. `insufficient_funds`.
    #[serde(default)]
    pub decline_code: Option<String>,
    /// A human-readable message.
    #[serde(default)]
    pub message: Option<String>,
}

impl ApiError {
    /// The reason a fan is told for a decline: the decline code, else the code.
    pub fn decline_reason(&self) -> String {
        self.decline_code
            .clone()
            .or_else(|| self.code.clone())
            .unwrap_or_else(|| "card_declined".to_owned())
    }
}

#[derive(Debug, Deserialize)]
struct Envelope {
    error: ApiError,
}

/// Parses a 2xx answer's body as `T`.
///
/// # Errors
/// [`ProviderError::Rejected`] when the body is not a `T` (not Stripe's API, or a
/// changed shape): nothing to trust in it.
pub fn parse<T: DeserializeOwned>(answer: &Answer) -> Result<T, ProviderError> {
    serde_json::from_slice(&answer.body)
        .map_err(|e| ProviderError::Rejected(format!("unreadable Stripe answer: {e}")))
}

/// What a non-2xx answer means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A card error (HTTP 402, type `card_error`): declined, nothing taken.
    Declined(String),
    /// Any other failure.
    Error(ProviderError),
}

/// Sorts a non-2xx answer (Stripe's "Errors" and "Idempotent requests"):
///
/// - 402 or `card_error`: declined, with the decline code (else the code);
/// - 409 (`idempotency_key_in_use`: a request with this key is still running) and 500
///   (Stripe: treat a 500's result as indeterminate): [`ProviderError::Timeout`];
/// - 429 and every other 5xx: [`ProviderError::Unavailable`], nothing happened;
/// - any other 4xx (bad parameters, an `idempotency_error` for a key reused with other
///   parameters, a bad key): [`ProviderError::Rejected`].
pub fn failure(answer: &Answer) -> Failure {
    let error = serde_json::from_slice::<Envelope>(&answer.body)
        .map(|e| e.error)
        .ok();
    let detail = || match &error {
        Some(e) => format!(
            "{} {}: {}",
            answer.status.as_u16(),
            e.code.as_deref().unwrap_or(&e.kind),
            e.message.as_deref().unwrap_or("")
        ),
        None => format!("HTTP {}", answer.status.as_u16()),
    };
    let status = answer.status;
    if status == StatusCode::PAYMENT_REQUIRED
        || error.as_ref().is_some_and(|e| e.kind == "card_error")
    {
        let reason = error
            .as_ref()
            .map_or_else(|| "card_declined".to_owned(), ApiError::decline_reason);
        return Failure::Declined(reason);
    }
    Failure::Error(match status {
        StatusCode::CONFLICT | StatusCode::INTERNAL_SERVER_ERROR => {
            tracing::warn!(detail = detail(), "stripe outcome indeterminate");
            ProviderError::Timeout
        }
        StatusCode::TOO_MANY_REQUESTS => ProviderError::Unavailable(detail()),
        s if s.is_server_error() => ProviderError::Unavailable(detail()),
        _ => ProviderError::Rejected(detail()),
    })
}

/// What a PaymentIntent's state says about its charge: `succeeded` → charged;
/// `requires_payment_method` after a failed confirmation, or `canceled` → declined;
/// anything else (`processing`, `requires_action`, …) → not settled yet (`None`).
pub fn intent_outcome(intent: &PaymentIntent) -> Option<ChargeOutcome> {
    match intent.status.as_str() {
        "succeeded" => Some(ChargeOutcome::Succeeded {
            charge_id: intent.id.clone(),
        }),
        "requires_payment_method" => {
            intent
                .last_payment_error
                .as_ref()
                .map(|e| ChargeOutcome::Declined {
                    reason: e.decline_reason(),
                })
        }
        "canceled" => Some(ChargeOutcome::Declined {
            reason: "canceled".to_owned(),
        }),
        _ => None,
    }
}

/// The outcome of a create-and-confirm answer (see [`failure`], [`intent_outcome`]); a
/// PaymentIntent not settled yet (`processing`) is a [`ProviderError::Timeout`]: the
/// webhook or the reconciler learns the outcome later.
///
/// # Errors
/// [`ProviderError`] as [`failure`] sorts it.
pub fn charge_outcome(answer: &Answer) -> Result<ChargeOutcome, ProviderError> {
    if !answer.status.is_success() {
        return match failure(answer) {
            Failure::Declined(reason) => Ok(ChargeOutcome::Declined { reason }),
            Failure::Error(error) => Err(error),
        };
    }
    let intent: PaymentIntent = parse(answer)?;
    intent_outcome(&intent).ok_or_else(|| {
        tracing::warn!(payment_intent = %intent.id, status = %intent.status, "stripe charge not settled yet");
        ProviderError::Timeout
    })
}

/// The refund id of a refund answer: `succeeded` and `pending` refunds are taken (a
/// pending one completes at Stripe on its own).
///
/// # Errors
/// As [`failure`] sorts a non-2xx answer (a card error is [`ProviderError::Rejected`]
/// here); [`ProviderError::Rejected`] for a `failed` or `canceled` refund.
pub fn refund_id(answer: &Answer) -> Result<String, ProviderError> {
    if !answer.status.is_success() {
        return Err(match failure(answer) {
            Failure::Declined(reason) => ProviderError::Rejected(reason),
            Failure::Error(error) => error,
        });
    }
    let refund: Refund = parse(answer)?;
    match refund.status.as_str() {
        "failed" | "canceled" => Err(ProviderError::Rejected(format!(
            "refund {} {}",
            refund.id, refund.status
        ))),
        _ => Ok(refund.id),
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            body: Bytes::from(body.to_owned()),
        }
    }

    #[test]
    fn declines_carry_the_decline_code_else_the_code() {
        let declined = answer(
            402,
            r#"{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds"}}"#,
        );
        assert_eq!(
            charge_outcome(&declined),
            Ok(ChargeOutcome::Declined {
                reason: "insufficient_funds".into()
            })
        );
        let expired = answer(
            402,
            r#"{"error":{"type":"card_error","code":"expired_card"}}"#,
        );
        assert_eq!(
            charge_outcome(&expired),
            Ok(ChargeOutcome::Declined {
                reason: "expired_card".into()
            })
        );
    }

    #[test]
    fn statuses_sort_into_unavailable_unknown_and_rejected() {
        let unavailable = |s| {
            matches!(
                charge_outcome(&answer(s, "{}")),
                Err(ProviderError::Unavailable(_))
            )
        };
        let unknown = |s| charge_outcome(&answer(s, "")) == Err(ProviderError::Timeout);
        let rejected = |s| {
            matches!(
                charge_outcome(&answer(s, "{}")),
                Err(ProviderError::Rejected(_))
            )
        };
        assert!(unavailable(429) && unavailable(502) && unavailable(503));
        assert!(unknown(500) && unknown(409));
        assert!(rejected(400) && rejected(401) && rejected(404));
        let mismatch = answer(
            400,
            r#"{"error":{"type":"idempotency_error","message":"Keys for idempotent requests can only be used with the same parameters"}}"#,
        );
        assert!(
            matches!(charge_outcome(&mismatch), Err(ProviderError::Rejected(m)) if m.contains("idempotency_error"))
        );
    }

    #[test]
    fn intents_map_by_status() {
        let ok = answer(
            200,
            r#"{"id":"pi_1","status":"succeeded","amount":2500,"currency":"eur","extra":1}"#,
        );
        assert_eq!(
            charge_outcome(&ok),
            Ok(ChargeOutcome::Succeeded {
                charge_id: "pi_1".into()
            })
        );
        let processing = answer(
            200,
            r#"{"id":"pi_2","status":"processing","amount":1,"currency":"eur"}"#,
        );
        assert_eq!(charge_outcome(&processing), Err(ProviderError::Timeout));
        assert!(matches!(
            charge_outcome(&answer(200, "not json")),
            Err(ProviderError::Rejected(_))
        ));
    }

    #[test]
    fn failed_refunds_are_refused() {
        let ok = answer(
            200,
            r#"{"id":"re_1","status":"pending","amount":1,"currency":"eur"}"#,
        );
        assert_eq!(refund_id(&ok), Ok("re_1".into()));
        let failed = answer(
            200,
            r#"{"id":"re_2","status":"failed","amount":1,"currency":"eur"}"#,
        );
        assert!(matches!(
            refund_id(&failed),
            Err(ProviderError::Rejected(_))
        ));
    }
}
