//! Wire ↔ domain conversion for the payments API.

use chrono::{DateTime, Utc};
use stadium_proto::common::v1::Money as WireMoney;
use stadium_proto::payments::v1::{
    Order as WireOrder, OrderStatus, Refund, RefundReason as WireReason, Ticket as WireTicket,
};

use crate::domain::{HoldKey, Money, Order, PaymentStatus, RefundReason};
use crate::error::Error;

/// A hold key field.
///
/// # Errors
/// [`Error::InvalidField`] naming `field`.
pub fn hold_key(field: &str, text: &str) -> Result<HoldKey, Error> {
    if text.is_empty() {
        return Err(Error::invalid(field, "required"));
    }
    HoldKey::try_from(text).map_err(|e| Error::invalid(field, e))
}

/// A UUID field.
///
/// # Errors
/// [`Error::InvalidField`] naming `field`.
pub fn uuid(field: &str, text: &str) -> Result<uuid::Uuid, Error> {
    if text.is_empty() {
        return Err(Error::invalid(field, "required"));
    }
    uuid::Uuid::parse_str(text.trim()).map_err(|_| Error::invalid(field, "not a UUID"))
}

/// `RefundOrderRequest.refund_reason`: box office (also for UNSPECIFIED) or event
/// cancelled; a hold's expiry is no reason staff may give.
///
/// # Errors
/// [`Error::InvalidField`] naming `refund_reason`.
pub fn refund_reason(value: i32) -> Result<RefundReason, Error> {
    match WireReason::try_from(value) {
        Ok(WireReason::Unspecified | WireReason::BoxOffice) => Ok(RefundReason::BoxOffice),
        Ok(WireReason::EventCancelled) => Ok(RefundReason::EventCancelled),
        Ok(WireReason::HoldExpired) => Err(Error::invalid(
            "refund_reason",
            "HOLD_EXPIRED is payments' own; use BOX_OFFICE or EVENT_CANCELLED",
        )),
        Err(_) => Err(Error::invalid(
            "refund_reason",
            format!("unknown value {value}"),
        )),
    }
}

/// A positive catalog id field (decimal text or number).
///
/// # Errors
/// [`Error::InvalidField`] naming `field`.
pub fn catalog_id(field: &str, value: u64) -> Result<i64, Error> {
    match i64::try_from(value) {
        Ok(id) if id > 0 => Ok(id),
        _ => Err(Error::invalid(field, "must be a positive id")),
    }
}

/// A positive catalog id given as decimal text.
///
/// # Errors
/// [`Error::InvalidField`] naming `field`.
pub fn catalog_id_text(field: &str, text: &str) -> Result<i64, Error> {
    let value: u64 = text
        .trim()
        .parse()
        .map_err(|_| Error::invalid(field, "must be a decimal id"))?;
    catalog_id(field, value)
}

/// A required text field of at most `max` characters.
///
/// # Errors
/// [`Error::InvalidField`] naming `field`.
pub fn text(field: &str, value: &str, max: usize) -> Result<String, Error> {
    let value = value.trim();
    if value.is_empty() {
        return Err(Error::invalid(field, "required"));
    }
    if value.chars().count() > max {
        return Err(Error::invalid(
            field,
            format!("longer than {max} characters"),
        ));
    }
    Ok(value.to_owned())
}

fn timestamp(at: DateTime<Utc>) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: at.timestamp(),
        nanos: i32::try_from(at.timestamp_subsec_nanos()).unwrap_or(0),
    }
}

fn money(m: &Money) -> WireMoney {
    WireMoney {
        amount_minor: m.amount_minor,
        currency: m.currency.clone(),
    }
}

/// The wire order.
pub fn order(order: &Order) -> WireOrder {
    let p = &order.payment;
    let status = match p.status {
        PaymentStatus::Pending | PaymentStatus::RefundPending => OrderStatus::Pending,
        PaymentStatus::Captured => OrderStatus::Paid,
        PaymentStatus::Refunded => OrderStatus::Refunded,
        PaymentStatus::Failed => OrderStatus::Failed,
        PaymentStatus::Comp => OrderStatus::Comp,
    };
    let refund = (p.status == PaymentStatus::Refunded).then(|| Refund {
        refund_id: p.refund_id.map(|id| id.to_string()).unwrap_or_default(),
        reason: match p.refund_reason {
            Some(RefundReason::HoldExpired) => WireReason::HoldExpired,
            Some(RefundReason::BoxOffice) => WireReason::BoxOffice,
            Some(RefundReason::EventCancelled) => WireReason::EventCancelled,
            None => WireReason::Unspecified,
        } as i32,
        amount: Some(WireMoney {
            amount_minor: p.refunded_minor,
            currency: p.amount.currency.clone(),
        }),
        refunded_at: p.refunded_at.map(timestamp),
    });
    WireOrder {
        order_id: p.id.to_string(),
        hold_key: p.hold_key.to_string(),
        event_id: p.event_id.to_string(),
        fan_id: p.fan_id.clone(),
        status: status as i32,
        amount: Some(money(&p.amount)),
        tickets: order
            .tickets
            .iter()
            .map(|t| WireTicket {
                ticket_id: t.id.to_string(),
                seat_id: u64::try_from(t.seat_id).unwrap_or_default(),
                section_id: u64::try_from(t.section_id).unwrap_or_default(),
                ticket_code: t.code.clone(),
                valid: t.valid,
            })
            .collect(),
        refund,
        created_at: Some(timestamp(p.created_at)),
        updated_at: Some(timestamp(p.updated_at)),
        comp_recipient: p.comp_recipient.clone().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_fields_are_named() {
        for (result, field) in [
            (hold_key("hold_key", "").map(|_| ()), "hold_key"),
            (hold_key("hold_key", "nope").map(|_| ()), "hold_key"),
            (catalog_id("section_id", 0).map(|_| ()), "section_id"),
            (catalog_id("section_id", u64::MAX).map(|_| ()), "section_id"),
            (catalog_id_text("event_id", "x").map(|_| ()), "event_id"),
            (text("recipient", "  ", 10).map(|_| ()), "recipient"),
        ] {
            match result {
                Err(Error::InvalidField { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
        assert_eq!(catalog_id_text("event_id", " 42 ").unwrap(), 42);
    }
}
