//! Which provider each payment was charged through (`payments.payments.provider`).
//! Runtime-checked SQL (`sqlx::query`), so the compile-time query data stays as it is.

use sqlx::{PgConnection, Row as _};
use uuid::Uuid;

use crate::error::Error;
use crate::provider::ProviderName;

/// Records that payment `id` is charged through `provider`: one statement, run in the
/// intent's own transaction (the intent statement leaves the column's default, `sim`).
///
/// # Errors
/// [`Error::Database`].
pub async fn record_provider(
    conn: &mut PgConnection,
    id: Uuid,
    provider: ProviderName,
) -> Result<(), Error> {
    sqlx::query("UPDATE payments.payments SET provider = $2 WHERE payment_id = $1")
        .bind(id)
        .bind(provider.as_str())
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The provider payment `id` was charged through; `None` when there is no such payment.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`] for a name this build does not know.
pub async fn provider_of(conn: &mut PgConnection, id: Uuid) -> Result<Option<ProviderName>, Error> {
    let Some(row) = sqlx::query("SELECT provider FROM payments.payments WHERE payment_id = $1")
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?
    else {
        return Ok(None);
    };
    let name: String = row.try_get("provider")?;
    ProviderName::from_db(&name)
        .map(Some)
        .ok_or_else(|| Error::CorruptRow(format!("payment {id}: unknown provider {name}")))
}
