//! The event's currency, read from the catalog's published `event_settings` (prices
//! are fixed with the hold, and holds answers them when the payment starts).

use sqlx::PgConnection;

use crate::error::Error;

/// The event's currency (for comps).
///
/// # Errors
/// [`Error::Database`]; `None` when no such event.
pub async fn event_currency(conn: &mut PgConnection, event: i64) -> Result<Option<String>, Error> {
    let currency = sqlx::query_scalar!(
        r#"SELECT currency::text AS "currency!" FROM catalog.event_settings WHERE event_id = $1"#,
        event,
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(currency.map(|c| c.trim().to_owned()))
}
