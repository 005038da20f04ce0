//! Prices and currencies read from the catalog's published views and tables.

use sqlx::{FromRow, PgConnection};

use crate::domain::Money;
use crate::error::Error;

#[derive(Debug, FromRow)]
struct PriceRow {
    seat_id: i64,
    price_minor: Option<i64>,
    currency: Option<String>,
}

/// The price of `seats` of `event`: the sum of each seat's category price from the
/// catalog, all in one currency.
///
/// # Errors
/// [`Error::PriceMissing`] for a seat without a price (or not of the event's venue);
/// [`Error::CorruptRow`] for mixed currencies or an overflowing sum;
/// [`Error::Database`].
pub async fn price(conn: &mut PgConnection, event: i64, seats: &[i64]) -> Result<Money, Error> {
    let rows = sqlx::query_as::<_, PriceRow>(
        "SELECT s.seat_id, pc.price_minor, pc.currency::text AS currency \
         FROM unnest($2::bigint[]) AS s(seat_id) \
         LEFT JOIN catalog.event_seats es ON es.event_id = $1 AND es.seat_id = s.seat_id \
         LEFT JOIN catalog.price_categories pc \
                ON pc.event_id = es.event_id AND pc.category_code = es.category_code \
         ORDER BY s.seat_id",
    )
    .bind(event)
    .bind(seats)
    .fetch_all(&mut *conn)
    .await?;
    let mut total: i64 = 0;
    let mut currency: Option<String> = None;
    for row in rows {
        let (Some(price), Some(cur)) = (row.price_minor, row.currency) else {
            return Err(Error::PriceMissing(row.seat_id));
        };
        let cur = cur.trim().to_owned();
        match &currency {
            Some(c) if *c != cur => {
                return Err(Error::CorruptRow(format!(
                    "event {event}: mixed currencies"
                )));
            }
            _ => currency = Some(cur),
        }
        total = total
            .checked_add(price)
            .ok_or_else(|| Error::CorruptRow(format!("event {event}: price overflows")))?;
    }
    let currency = currency.ok_or_else(|| Error::invalid("seat_ids", "no seats"))?;
    Ok(Money {
        amount_minor: total,
        currency,
    })
}

/// The event's currency (for comps).
///
/// # Errors
/// [`Error::Database`]; `None` when no such event.
pub async fn event_currency(conn: &mut PgConnection, event: i64) -> Result<Option<String>, Error> {
    let currency: Option<String> =
        sqlx::query_scalar("SELECT currency::text FROM catalog.event_settings WHERE event_id = $1")
            .bind(event)
            .fetch_optional(&mut *conn)
            .await?;
    Ok(currency.map(|c| c.trim().to_owned()))
}
