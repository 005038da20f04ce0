//! A [`PaymentProvider`] over Stripe's PaymentIntents API, and the verification and
//! reading of Stripe's webhooks.
//!
//! - Charge: one `POST /v1/payment_intents` that creates and confirms the intent
//!   (`confirm=true`): amount in minor units, lower-case currency, the fan's token
//!   (`pm_…` as `payment_method`, a legacy `tok_…` as `payment_method_data[card][token]`),
//!   `payment_method_types[]=card`, `error_on_requires_action=true` (no fan is there to
//!   authenticate a 3-D Secure challenge: it is a decline, `authentication_required`),
//!   and metadata `idempotency_key` (the charge's key) and `hold_key`, so the intent
//!   can be found again. The request's `Idempotency-Key` is the charge's key.
//! - Capture is automatic (`capture_method=automatic`): the flow's contract is that a
//!   charge either took the money or did not, and a hold that died meanwhile is
//!   refunded (DESIGN invariant 3). Manual capture would add an authorised-uncaptured
//!   state that every path (the reconciler, notices, box-office refunds) must capture
//!   or cancel before the authorisation lapses (7 days for most cards), for no gain at
//!   a box office where the booking follows the charge within seconds.
//! - The payment's provider charge id is the PaymentIntent's id (`pi_…`): refunds,
//!   searches and webhooks all name it.
//! - Refund: `POST /v1/refunds` with `payment_intent`, `amount` and metadata
//!   `idempotency_key`, under the refund's own `Idempotency-Key` (`refund:<hold key>`).
//! - Lookup: Stripe keeps idempotency keys for 24 hours and has no lookup by them, so a
//!   charge key is found with the Search API
//!   (`GET /v1/payment_intents/search?query=metadata['idempotency_key']:'<key>'`), and a
//!   refund key `refund:<hold key>` by searching the hold's intents
//!   (`metadata['hold_key']`) and listing their refunds (`GET /v1/refunds?payment_intent=`)
//!   for the one whose metadata carries the key (refunds cannot be searched). Stripe's
//!   search is not read-after-write: new objects are usually searchable within a
//!   minute. A charge not found yet is "nothing yet" to the reconciler, which gives a
//!   payment up only after `--abandon-after-ms` (10 minutes by default), and a charge
//!   found after that is still booked or refunded (the late-charge path).

mod client;
pub mod events;
pub mod signature;
mod wire;

use std::time::Duration;

use secrecy::SecretString;

use self::client::HttpClient;
pub use self::client::{ClientError, STRIPE_VERSION};
use self::wire::{HOLD_METADATA, KEY_METADATA, Page, PaymentIntent, Refund};
use super::{
    ChargeOutcome, ChargeRequest, LedgerRecord, PaymentProvider, ProviderError, ProviderName,
    RefundRequest,
};
use crate::domain::parse_charge_key;

/// Stripe's API, at `https://api.stripe.com` unless configured otherwise.
pub const DEFAULT_API_URL: &str = "https://api.stripe.com";

/// The Stripe adapter. Cheap to clone (clones share the connection pool).
#[derive(Debug, Clone)]
pub struct StripeProvider {
    http: HttpClient,
}

impl StripeProvider {
    /// A provider calling the API at `api_url` with `secret_key` (`sk_live_…` or
    /// `sk_test_…`), each call bounded by `timeout` (past it: the outcome is unknown).
    ///
    /// # Errors
    /// [`ClientError`]: a URL that would send the key in clear, or no TLS setup.
    pub fn new(
        api_url: &http::Uri,
        secret_key: &SecretString,
        timeout: Duration,
    ) -> Result<Self, ClientError> {
        Ok(Self {
            http: HttpClient::new(api_url, secret_key, timeout)?,
        })
    }

    /// The PaymentIntents whose metadata `field` is `value`.
    async fn search_intents(
        &self,
        field: &str,
        value: &str,
    ) -> Result<Vec<PaymentIntent>, ProviderError> {
        let query = format!("metadata['{field}']:'{}'", search_quoted(value));
        let answer = self
            .http
            .get(
                "/v1/payment_intents/search",
                &[("query", &query), ("limit", "10")],
            )
            .await?;
        if !answer.status.is_success() {
            return Err(lookup_error(&answer));
        }
        Ok(wire::parse::<Page<PaymentIntent>>(&answer)?.data)
    }

    /// The refund recorded under `key` (`refund:<hold key>`), among the refunds of the
    /// hold's PaymentIntents.
    async fn find_refund(&self, key: &str) -> Result<Option<LedgerRecord>, ProviderError> {
        let Some(hold) = key.strip_prefix("refund:") else {
            return Ok(None);
        };
        for intent in self.search_intents(HOLD_METADATA, hold).await? {
            let answer = self
                .http
                .get(
                    "/v1/refunds",
                    &[("payment_intent", &intent.id), ("limit", "100")],
                )
                .await?;
            if !answer.status.is_success() {
                return Err(lookup_error(&answer));
            }
            let refunds: Page<Refund> = wire::parse(&answer)?;
            if let Some(refund) = refunds
                .data
                .into_iter()
                .find(|r| r.metadata.get(KEY_METADATA).map(String::as_str) == Some(key))
            {
                return Ok(Some(LedgerRecord::Refund {
                    refund_id: refund.id,
                }));
            }
        }
        Ok(None)
    }
}

/// `value` as a quoted string of Stripe's search query language (a `'` or `\`
/// escaped by a backslash).
fn search_quoted(value: &str) -> String {
    value.replace('\\', "\\\\").replace('\'', "\\'")
}

/// A failed GET: no decline can come of a read.
fn lookup_error(answer: &client::Answer) -> ProviderError {
    match wire::failure(answer) {
        wire::Failure::Declined(reason) => ProviderError::Rejected(reason),
        wire::Failure::Error(error) => error,
    }
}

/// The create-and-confirm parameters of `request`, in Stripe's form encoding.
fn charge_form(request: &ChargeRequest, currency: &str, amount: &str) -> Vec<(String, String)> {
    let mut form = vec![
        ("amount".to_owned(), amount.to_owned()),
        ("currency".to_owned(), currency.to_owned()),
        ("confirm".to_owned(), "true".to_owned()),
        ("capture_method".to_owned(), "automatic".to_owned()),
        ("payment_method_types[]".to_owned(), "card".to_owned()),
        ("error_on_requires_action".to_owned(), "true".to_owned()),
    ];
    if request.method_token.starts_with("tok_") {
        form.push(("payment_method_data[type]".to_owned(), "card".to_owned()));
        form.push((
            "payment_method_data[card][token]".to_owned(),
            request.method_token.clone(),
        ));
    } else {
        form.push(("payment_method".to_owned(), request.method_token.clone()));
    }
    form.push((
        format!("metadata[{KEY_METADATA}]"),
        request.idempotency_key.clone(),
    ));
    if let Some((hold, _)) = parse_charge_key(&request.idempotency_key) {
        form.push((
            format!("metadata[{HOLD_METADATA}]"),
            hold.uuid().to_string(),
        ));
    }
    form
}

fn pairs(form: &[(String, String)]) -> Vec<(&str, &str)> {
    form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

#[tonic::async_trait]
impl PaymentProvider for StripeProvider {
    fn name(&self) -> ProviderName {
        ProviderName::Stripe
    }

    async fn charge(&self, request: &ChargeRequest) -> Result<ChargeOutcome, ProviderError> {
        if request.amount.amount_minor <= 0 {
            return Err(ProviderError::Rejected("a charge must be positive".into()));
        }
        let amount = request.amount.amount_minor.to_string();
        let currency = request.amount.currency.to_ascii_lowercase();
        let form = charge_form(request, &currency, &amount);
        let answer = self
            .http
            .post(
                "/v1/payment_intents",
                &pairs(&form),
                &request.idempotency_key,
            )
            .await?;
        wire::charge_outcome(&answer)
    }

    async fn refund(&self, request: &RefundRequest) -> Result<String, ProviderError> {
        let amount = request.amount.amount_minor.to_string();
        let form = [
            ("payment_intent", request.charge_id.as_str()),
            ("amount", amount.as_str()),
            (
                "metadata[idempotency_key]",
                request.idempotency_key.as_str(),
            ),
        ];
        let answer = self
            .http
            .post("/v1/refunds", &form, &request.idempotency_key)
            .await?;
        wire::refund_id(&answer)
    }

    async fn lookup(&self, idempotency_key: &str) -> Result<Option<LedgerRecord>, ProviderError> {
        if idempotency_key.starts_with("refund:") {
            return self.find_refund(idempotency_key).await;
        }
        let intents = self.search_intents(KEY_METADATA, idempotency_key).await?;
        // One create per key (Stripe honours the Idempotency-Key), so at most one
        // intent; if a key ever had more, a charged one must win.
        let outcomes: Vec<ChargeOutcome> =
            intents.iter().filter_map(wire::intent_outcome).collect();
        let charged = outcomes
            .iter()
            .find(|o| matches!(o, ChargeOutcome::Succeeded { .. }));
        Ok(charged
            .or(outcomes.first())
            .cloned()
            .map(LedgerRecord::Charge))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Money;

    fn request(token: &str) -> ChargeRequest {
        ChargeRequest {
            idempotency_key: "7f3c1a52-0e1b-4b8e-9a53-2d3c8f0e4b11:2".into(),
            amount: Money {
                amount_minor: 2500,
                currency: "EUR".into(),
            },
            method_token: token.into(),
        }
    }

    fn value<'a>(form: &'a [(String, String)], key: &str) -> Option<&'a str> {
        form.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    #[test]
    fn charges_carry_their_keys_and_the_method_by_kind() {
        let form = charge_form(&request("pm_card_visa"), "eur", "2500");
        assert_eq!(value(&form, "payment_method"), Some("pm_card_visa"));
        assert_eq!(
            value(&form, "metadata[idempotency_key]"),
            Some("7f3c1a52-0e1b-4b8e-9a53-2d3c8f0e4b11:2")
        );
        assert_eq!(
            value(&form, "metadata[hold_key]"),
            Some("7f3c1a52-0e1b-4b8e-9a53-2d3c8f0e4b11")
        );
        assert_eq!(value(&form, "capture_method"), Some("automatic"));
        let form = charge_form(&request("tok_visa"), "eur", "2500");
        assert_eq!(value(&form, "payment_method"), None);
        assert_eq!(
            value(&form, "payment_method_data[card][token]"),
            Some("tok_visa")
        );
    }

    #[test]
    fn search_values_are_quoted() {
        assert_eq!(search_quoted("a'b\\c"), "a\\'b\\\\c");
    }
}
