//! The hold around its payment, each step one call of a function of migration
//! `20261201000002` run as its own transaction (one round trip): start the payment
//! window, extend within the absolute lifetime, book. Each function locks the hold's
//! rows in ascending seat order (the claim path's lock order) and decides on what it
//! locked, so no decision rests on an earlier read.

use sqlx::PgExecutor;

use crate::domain::{EventId, Hold, HoldKey, HoldStatus, SeatId, SectionId};
use crate::error::Error;

/// A hold whose payment has started, with its price fixed at the claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentStarted {
    /// The hold, held, with the time left in its payment window.
    pub hold: Hold,
    /// Sum of the seats' prices, minor units of `currency`.
    pub total_minor: i64,
    /// ISO 4217 code.
    pub currency: String,
}

/// An extended hold and the lifetime cap that applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extended {
    /// The hold with its new time left.
    pub hold: Hold,
    /// The event's absolute hold lifetime, milliseconds from the claim.
    pub max_hold_lifetime_ms: u64,
}

/// The columns every function of this module returns.
#[derive(Debug)]
struct HoldCall {
    outcome: String,
    event_id: Option<i64>,
    section_id: Option<i64>,
    seat_ids: Option<Vec<i64>>,
    ttl_ms: Option<i64>,
}

impl HoldCall {
    /// The refusal for a state other than the one asked for.
    fn refusal(&self, extra: Option<Error>) -> Error {
        match self.outcome.as_str() {
            "hold_not_found" => Error::HoldNotFound,
            "expired" => Error::HoldExpired,
            "released" => Error::HoldReleased,
            "booked" => Error::HoldBooked,
            "event_cancelled" => Error::EventCancelled,
            other => extra.unwrap_or_else(|| {
                Error::CorruptRow(format!("hold call: unknown outcome {other}"))
            }),
        }
    }

    fn hold(
        &self,
        key: HoldKey,
        fan: &str,
        status: HoldStatus,
        expires_in_ms: i64,
    ) -> Result<Hold, Error> {
        let corrupt = |what: &str| Error::CorruptRow(format!("hold {key}: {what}"));
        let event = self.event_id.ok_or_else(|| corrupt("no event"))?;
        let section = self.section_id.ok_or_else(|| corrupt("no section"))?;
        Ok(Hold {
            key,
            event: EventId::try_from(event).map_err(|_| corrupt("event id"))?,
            section: SectionId::try_from(section).map_err(|_| corrupt("section id"))?,
            seats: self
                .seat_ids
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|&s| SeatId::try_from(s).map_err(|_| corrupt("seat id")))
                .collect::<Result<_, _>>()?,
            status,
            expires_in_ms: u64::try_from(expires_in_ms).unwrap_or(0),
            ttl_ms: self.ttl_ms.and_then(|t| u64::try_from(t).ok()).unwrap_or(0),
            owner: fan.to_owned(),
        })
    }
}

/// The [`HoldCall`] in a checked query's record that has its five columns.
macro_rules! hold_call {
    ($record:expr) => {
        HoldCall {
            outcome: $record.outcome,
            event_id: $record.event_id,
            section_id: $record.section_id,
            seat_ids: $record.seat_ids,
            ttl_ms: $record.ttl_ms,
        }
    };
}

/// Moves `fan`'s held, unexpired hold `key` into its payment window of `window_ms`
/// (expiry at least now + window), once; a started hold is answered unchanged.
///
/// # Errors
/// [`Error::HoldNotFound`] (absent or another fan's); [`Error::HoldExpired`] (expired or
/// reclaimed); [`Error::HoldReleased`]; [`Error::HoldBooked`]; [`Error::EventCancelled`];
/// [`Error::PriceMissing`]; [`Error::Database`].
pub async fn start_payment<'e>(
    db: impl PgExecutor<'e>,
    key: HoldKey,
    fan: &str,
    window_ms: u32,
) -> Result<PaymentStarted, Error> {
    let row = sqlx::query_file!(
        "src/store/sql/start_payment.sql",
        key.uuid(),
        fan,
        i32::try_from(window_ms).unwrap_or(i32::MAX),
    )
    .fetch_one(db)
    .await?;
    let (expires_in_ms, total_minor, currency) = (row.expires_in_ms, row.total_minor, row.currency);
    let call = hold_call!(row);
    if call.outcome != "started" {
        let missing = (call.outcome == "price_missing").then_some(Error::PriceMissing);
        return Err(call.refusal(missing));
    }
    let hold = call.hold(key, fan, HoldStatus::Held, expires_in_ms)?;
    let (Some(total_minor), Some(currency)) = (total_minor, currency) else {
        return Err(Error::CorruptRow(format!(
            "hold {key}: started without a price"
        )));
    };
    Ok(PaymentStarted {
        hold,
        total_minor,
        currency: currency.trim().to_owned(),
    })
}

/// Extends `fan`'s held hold `key` by the event's hold TTL from now, capped at its
/// creation + the event's absolute hold lifetime.
///
/// # Errors
/// [`Error::HoldNotFound`]; [`Error::HoldExpired`]; [`Error::HoldReleased`];
/// [`Error::HoldBooked`]; [`Error::PaymentStarted`]; [`Error::HoldLifetimeReached`] (nothing changed);
/// [`Error::Database`].
pub async fn extend<'e>(
    db: impl PgExecutor<'e>,
    key: HoldKey,
    fan: &str,
) -> Result<Extended, Error> {
    let row = sqlx::query!(
        r#"SELECT outcome AS "outcome!", event_id, section_id, seat_ids,
               expires_in_ms AS "expires_in_ms!", ttl_ms, lifetime_ms
           FROM holds.extend_hold($1, $2)"#,
        key.uuid(),
        fan,
    )
    .fetch_one(db)
    .await?;
    let max_hold_lifetime_ms = row
        .lifetime_ms
        .and_then(|m| u64::try_from(m).ok())
        .unwrap_or(0);
    let expires_in_ms = row.expires_in_ms;
    let call = hold_call!(row);
    match call.outcome.as_str() {
        "extended" => Ok(Extended {
            hold: call.hold(key, fan, HoldStatus::Held, expires_in_ms)?,
            max_hold_lifetime_ms,
        }),
        "payment_started" => Err(Error::PaymentStarted),
        "lifetime_reached" => Err(Error::HoldLifetimeReached {
            max_hold_lifetime_ms,
        }),
        _ => Err(call.refusal(None)),
    }
}

/// Books `fan`'s held, unexpired hold `key`, all seats or none; a hold booked under
/// this key before is answered with the same seats.
///
/// # Errors
/// [`Error::HoldNotFound`] (absent, another fan's, a block or comp);
/// [`Error::HoldExpired`] (expired, released, reclaimed: the caller refunds);
/// [`Error::Database`].
pub async fn confirm<'e>(db: impl PgExecutor<'e>, key: HoldKey, fan: &str) -> Result<Hold, Error> {
    let record = sqlx::query_file!("src/store/sql/confirm_hold.sql", key.uuid(), fan)
        .fetch_one(db)
        .await?;
    let row = hold_call!(record);
    match row.outcome.as_str() {
        "booked" => row.hold(key, fan, HoldStatus::Booked, 0),
        "held" => Err(Error::CorruptRow(format!("hold {key}: held after booking"))),
        // Zero rows booked either way: the caller refunds.
        "released" => Err(Error::HoldExpired),
        _ => Err(row.refusal(None)),
    }
}
