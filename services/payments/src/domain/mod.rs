//! The payments domain: ids, money, payment states and orders, with no wire or
//! database types. Wire messages become these at the gRPC edge ([`crate::grpc`]);
//! rows become these in [`crate::store`].

pub mod ticket_code;

use std::fmt;

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// The key of a hold (a UUID), which is also the idempotency key of its first charge
/// attempt (see [`Payment::charge_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HoldKey(Uuid);

impl HoldKey {
    /// The UUID.
    pub fn uuid(self) -> Uuid {
        self.0
    }

    /// The provider idempotency key of the refund for this hold: `refund:<hold key>`,
    /// distinct from the charge's so a refund is never mistaken for a repeated charge.
    pub fn refund_key(self) -> String {
        format!("refund:{}", self.0)
    }
}

impl From<Uuid> for HoldKey {
    fn from(uuid: Uuid) -> Self {
        Self(uuid)
    }
}

impl TryFrom<&str> for HoldKey {
    type Error = String;

    /// Parses a UUID in any of its usual spellings.
    fn try_from(text: &str) -> Result<Self, String> {
        Uuid::parse_str(text.trim())
            .map(Self)
            .map_err(|_| "not a UUID".to_owned())
    }
}

impl fmt::Display for HoldKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// An amount in minor units of an ISO 4217 currency (cents for EUR). Never a float.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Money {
    /// Minor units, never negative.
    pub amount_minor: i64,
    /// Three upper-case letters, e.g. `EUR`.
    pub currency: String,
}

/// Where a payment is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentStatus {
    /// Intent recorded; the charge or the booking is under way (or was interrupted).
    Pending,
    /// Charged and booked; tickets issued.
    Captured,
    /// A refund is decided (tickets void) and not yet confirmed by the provider.
    RefundPending,
    /// The money went back.
    Refunded,
    /// The provider declined; nothing charged.
    Failed,
    /// Booked at price 0 by the box office.
    Comp,
}

impl PaymentStatus {
    /// The `payments.payments.status` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Captured => "captured",
            Self::RefundPending => "refund_pending",
            Self::Refunded => "refunded",
            Self::Failed => "failed",
            Self::Comp => "comp",
        }
    }

    /// Parses a stored status; `None` for a value this version does not know.
    pub fn from_db(text: &str) -> Option<Self> {
        Some(match text {
            "pending" => Self::Pending,
            "captured" => Self::Captured,
            "refund_pending" => Self::RefundPending,
            "refunded" => Self::Refunded,
            "failed" => Self::Failed,
            "comp" => Self::Comp,
            _ => return None,
        })
    }

    /// Whether nothing more will happen to the payment without a new request.
    pub fn is_final(self) -> bool {
        !matches!(self, Self::Pending | Self::RefundPending)
    }
}

/// Why money went back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefundReason {
    /// The hold had expired or was reclaimed when the money arrived.
    HoldExpired,
    /// The box office refunded the order.
    BoxOffice,
    /// The event was cancelled.
    EventCancelled,
}

impl RefundReason {
    /// The `payments.payments.refund_reason` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HoldExpired => "hold_expired",
            Self::BoxOffice => "box_office",
            Self::EventCancelled => "event_cancelled",
        }
    }

    /// Parses a stored reason; `None` for a value this version does not know.
    pub fn from_db(text: &str) -> Option<Self> {
        Some(match text {
            "hold_expired" => Self::HoldExpired,
            "box_office" => Self::BoxOffice,
            "event_cancelled" => Self::EventCancelled,
            _ => return None,
        })
    }
}

/// One row of `payments.payments`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payment {
    /// The payment (and order) id.
    pub id: Uuid,
    /// The hold it pays for.
    pub hold_key: HoldKey,
    /// The event (catalog id).
    pub event_id: i64,
    /// The fan (session `sub`), or a comp's recipient.
    pub fan_id: String,
    /// The price, from the catalog at confirm time.
    pub amount: Money,
    /// Where it is.
    pub status: PaymentStatus,
    /// The provider's id of the charge, once known.
    pub provider_charge_id: Option<String>,
    /// Our id of the refund, once one is decided.
    pub refund_id: Option<Uuid>,
    /// Why, once a refund is decided.
    pub refund_reason: Option<RefundReason>,
    /// Minor units returned so far (never more than `amount`).
    pub refunded_minor: i64,
    /// When the provider confirmed the refund.
    pub refunded_at: Option<DateTime<Utc>>,
    /// For comps: who received them.
    pub comp_recipient: Option<String>,
    /// When the intent was recorded.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Which charge attempt the payment is on: 1, and one more after each decline the
    /// fan answers with another payment method.
    pub charge_attempt: u32,
    /// SHA-256 of the payment method of the current attempt (`None` for comps and for
    /// payments recorded before it was kept).
    pub method_digest: Option<[u8; 32]>,
    /// Failed because the provider declined the charge: another method may try again.
    pub declined: bool,
}

impl Payment {
    /// The provider idempotency key of the current charge attempt: the hold key for the
    /// first, `<hold key>:<n>` for the n-th. Each attempt has its own key, so a new card
    /// is a new charge while a repeat of one attempt never charges twice.
    pub fn charge_key(&self) -> String {
        match self.charge_attempt {
            0 | 1 => self.hold_key.uuid().to_string(),
            n => format!("{}:{n}", self.hold_key.uuid()),
        }
    }
}

/// The hold key and attempt of a charge's provider idempotency key (see
/// [`Payment::charge_key`]); `None` for any other text.
pub fn parse_charge_key(key: &str) -> Option<(HoldKey, u32)> {
    let (hold, attempt) = match key.split_once(':') {
        Some((hold, n)) => (hold, n.parse::<u32>().ok().filter(|&n| n >= 2)?),
        None => (key, 1),
    };
    Some((HoldKey::try_from(hold).ok()?, attempt))
}

/// SHA-256 of a payment method token: what the payment keeps to tell a repeated
/// Confirm from one with another method, without keeping the method.
pub fn method_digest(method: &str) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(method.as_bytes()).into()
}

/// One ticket of an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// The ticket id.
    pub id: Uuid,
    /// Catalog section id.
    pub section_id: i64,
    /// Catalog seat id.
    pub seat_id: i64,
    /// The signed code ([`ticket_code`]).
    pub code: String,
    /// False once voided by a refund.
    pub valid: bool,
}

/// A payment with its tickets: what the fan and the box office see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    /// The payment.
    pub payment: Payment,
    /// Its tickets, by seat.
    pub tickets: Vec<Ticket>,
}

/// A hold as the holds service reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldView {
    /// Its key.
    pub key: HoldKey,
    /// The event (catalog id).
    pub event_id: i64,
    /// The section of all its seats.
    pub section_id: i64,
    /// Its seats, ascending.
    pub seat_ids: Vec<i64>,
    /// Its state.
    pub status: HoldState,
    /// Milliseconds left by the holds service's clock (0 once not held).
    pub expires_in_ms: u64,
}

/// The state of a hold, as far as payments cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldState {
    /// Held and (per `expires_in_ms`) perhaps still unexpired.
    Held,
    /// Booked.
    Booked,
    /// Lapsed or reclaimed.
    Expired,
    /// Released by the fan or the box office.
    Released,
    /// Anything else (a block): not payable.
    Other,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charge_keys_name_the_hold_and_the_attempt() {
        let hold = HoldKey::try_from("7f3c1a52-0e1b-4b8e-9a53-2d3c8f0e4b11").unwrap();
        assert_eq!(
            parse_charge_key("7f3c1a52-0e1b-4b8e-9a53-2d3c8f0e4b11"),
            Some((hold, 1))
        );
        assert_eq!(
            parse_charge_key("7f3c1a52-0e1b-4b8e-9a53-2d3c8f0e4b11:3"),
            Some((hold, 3))
        );
        for bad in [
            "",
            "refund:7f3c1a52-0e1b-4b8e-9a53-2d3c8f0e4b11",
            "x:2",
            "7f3c1a52-0e1b-4b8e-9a53-2d3c8f0e4b11:1",
            "7f3c1a52-0e1b-4b8e-9a53-2d3c8f0e4b11:x",
        ] {
            assert_eq!(parse_charge_key(bad), None, "{bad}");
        }
        assert_ne!(method_digest("tok_visa"), method_digest("tok_mastercard"));
    }
}
