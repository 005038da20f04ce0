//! Which provider each payment was charged through (`payments.payments.provider`,
//! written with the intent by [`crate::lifecycle`]).
//! Runtime-checked SQL (`sqlx::query`), so the compile-time query data stays as it is.

use sqlx::{PgConnection, Row as _};
use uuid::Uuid;

use crate::error::Error;
use crate::provider::ProviderName;

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
