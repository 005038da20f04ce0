//! The payment provider: a trait the service charges, refunds and asks through, and
//! the signature of the provider's notices.
//!
//! Every call carries an idempotency key; a provider honours it: a repeated key returns
//! the first call's result and moves no money again. Payments uses the hold key for the
//! charge and `refund:<hold key>` for the refund (see [`crate::domain::HoldKey`]).
//!
//! Implementations: [`sim`] (in process), [`remote`] (the simulator in another process,
//! over gRPC) and [`stripe`] (Stripe's PaymentIntents API over HTTPS). Each payment
//! records the [`ProviderName`] it was charged through (`payments.payments.provider`),
//! and only that provider is ever asked about it.
//!
//! Notice signatures (the gRPC `ProviderNotice` path): hex HMAC-SHA256, keyed with the secret shared with the provider,
//! over the UTF-8 text `notice_id \n kind \n idempotency_key \n provider_charge_id \n
//! amount_minor \n currency` (kind as in [`NoticeKind::as_str`], amount in decimal).

pub mod remote;
pub mod server;
pub mod sim;
pub mod stripe;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::domain::Money;

/// A charge to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChargeRequest {
    /// The idempotency key (the hold key).
    pub idempotency_key: String,
    /// How much.
    pub amount: Money,
    /// The fan's payment method token, e.g. `tok_visa`.
    pub method_token: String,
}

/// A refund to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundRequest {
    /// The idempotency key (`refund:<hold key>`).
    pub idempotency_key: String,
    /// The charge to refund (the provider's id).
    pub charge_id: String,
    /// How much (never more than was charged).
    pub amount: Money,
}

/// What the provider did with a charge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChargeOutcome {
    /// The money was taken.
    Succeeded {
        /// The provider's id of the charge.
        charge_id: String,
    },
    /// The provider refused; nothing was taken.
    Declined {
        /// The provider's reason, e.g. `card_declined`.
        reason: String,
    },
}

/// What the provider's ledger says about an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerRecord {
    /// A charge under that key.
    Charge(ChargeOutcome),
    /// A refund under that key, with the provider's refund id.
    Refund {
        /// The provider's id of the refund.
        refund_id: String,
    },
}

/// Why a provider call gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// The provider refused to take the call (down, overloaded): nothing happened.
    #[error("provider unavailable: {0}")]
    Unavailable(String),
    /// No answer in time: the call may or may not have taken effect.
    #[error("provider timed out")]
    Timeout,
    /// The provider refused the request itself (e.g. refund of an unknown charge).
    #[error("provider refused the request: {0}")]
    Rejected(String),
}

/// Which provider a payment was charged through, as `payments.payments.provider`
/// stores it (the column's check constraint lists the same names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderName {
    /// The simulated provider, in process or standalone (`sim`): one ledger per
    /// simulator, so either face of it is the same provider to a payment.
    Sim,
    /// Stripe's PaymentIntents API (`stripe`).
    Stripe,
}

impl ProviderName {
    /// The stored name: `sim` or `stripe`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sim => "sim",
            Self::Stripe => "stripe",
        }
    }

    /// Parses a stored name; `None` for any other text.
    pub fn from_db(text: &str) -> Option<Self> {
        match text {
            "sim" => Some(Self::Sim),
            "stripe" => Some(Self::Stripe),
            _ => None,
        }
    }
}

impl std::fmt::Display for ProviderName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A payment provider. Implementations must honour idempotency keys.
#[tonic::async_trait]
pub trait PaymentProvider: Send + Sync + std::fmt::Debug + 'static {
    /// Which provider this is; recorded on every payment charged through it.
    fn name(&self) -> ProviderName;

    /// Charges `request.amount`.
    ///
    /// # Errors
    /// [`ProviderError`]; a [`ProviderError::Timeout`] leaves the outcome unknown.
    async fn charge(&self, request: &ChargeRequest) -> Result<ChargeOutcome, ProviderError>;

    /// Refunds a charge; returns the provider's refund id.
    ///
    /// # Errors
    /// [`ProviderError`].
    async fn refund(&self, request: &RefundRequest) -> Result<String, ProviderError>;

    /// What the provider recorded under `idempotency_key`; `None` when nothing.
    ///
    /// # Errors
    /// [`ProviderError`].
    async fn lookup(&self, idempotency_key: &str) -> Result<Option<LedgerRecord>, ProviderError>;
}

/// The kinds of provider notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticeKind {
    /// A charge succeeded.
    ChargeSucceeded,
    /// A charge failed.
    ChargeFailed,
    /// A refund succeeded.
    RefundSucceeded,
}

impl NoticeKind {
    /// The kind's name in signatures and in `payments.provider_notices.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ChargeSucceeded => "charge_succeeded",
            Self::ChargeFailed => "charge_failed",
            Self::RefundSucceeded => "refund_succeeded",
        }
    }

    /// Parses a kind spelled as [`NoticeKind::as_str`] spells it (a stored
    /// `payments.provider_notices.kind`); `None` for any other text.
    pub fn from_db(text: &str) -> Option<Self> {
        Some(match text {
            "charge_succeeded" => Self::ChargeSucceeded,
            "charge_failed" => Self::ChargeFailed,
            "refund_succeeded" => Self::RefundSucceeded,
            _ => return None,
        })
    }
}

/// A provider notice (webhook), as delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Unique per notice; a redelivery repeats it.
    pub notice_id: String,
    /// What happened.
    pub kind: NoticeKind,
    /// The idempotency key of the charge or refund.
    pub idempotency_key: String,
    /// The provider's charge id.
    pub provider_charge_id: String,
    /// The amount.
    pub amount: Money,
}

impl Notice {
    fn signed_text(&self) -> String {
        format!(
            "{}\n{}\n{}\n{}\n{}\n{}",
            self.notice_id,
            self.kind.as_str(),
            self.idempotency_key,
            self.provider_charge_id,
            self.amount.amount_minor,
            self.amount.currency
        )
    }

    /// The hex HMAC-SHA256 of this notice under `secret`.
    pub fn sign(&self, secret: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
        mac.update(self.signed_text().as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    /// Whether `signature` (hex) is this notice's under `secret`, compared in constant
    /// time.
    pub fn verify(&self, secret: &[u8], signature: &str) -> bool {
        let Ok(bytes) = hex::decode(signature.trim()) else {
            return false;
        };
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
        mac.update(self.signed_text().as_bytes());
        mac.verify_slice(&bytes).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names_round_trip() {
        for name in [ProviderName::Sim, ProviderName::Stripe] {
            assert_eq!(ProviderName::from_db(name.as_str()), Some(name));
        }
        assert_eq!(ProviderName::from_db("paypal"), None);
    }

    #[test]
    fn notice_signatures_cover_every_field() {
        let notice = Notice {
            notice_id: "ntc_1".into(),
            kind: NoticeKind::ChargeSucceeded,
            idempotency_key: "k".into(),
            provider_charge_id: "ch_1".into(),
            amount: Money {
                amount_minor: 100,
                currency: "EUR".into(),
            },
        };
        let signature = notice.sign(b"secret");
        assert!(notice.verify(b"secret", &signature));
        assert!(!notice.verify(b"other", &signature));
        assert!(!notice.verify(b"secret", "zz"));
        let mut changed = notice.clone();
        changed.amount.amount_minor = 101;
        assert!(!changed.verify(b"secret", &signature));
    }
}
