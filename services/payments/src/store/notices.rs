//! Provider notices already applied, for deduplication by notice id.

use sqlx::PgConnection;
use uuid::Uuid;

use crate::error::Error;

/// A provider notice to mark as applied, in the same transaction as what it changed.
#[derive(Debug, Clone)]
pub struct NoticeMark {
    /// The provider's notice id.
    pub notice_id: String,
    /// `charge_succeeded`, `charge_failed` or `refund_succeeded`.
    pub kind: &'static str,
    /// The notice's idempotency key.
    pub idempotency_key: String,
}

/// Records that a notice was applied with `outcome`; a second record of the same id is
/// a no-op.
///
/// # Errors
/// [`Error::Database`].
pub async fn mark_notice(
    conn: &mut PgConnection,
    mark: &NoticeMark,
    payment: Option<Uuid>,
    outcome: &str,
) -> Result<(), Error> {
    sqlx::query(
        "INSERT INTO payments.provider_notices (notice_id, kind, idempotency_key, payment_id, outcome) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (notice_id) DO NOTHING",
    )
    .bind(&mark.notice_id)
    .bind(mark.kind)
    .bind(&mark.idempotency_key)
    .bind(payment)
    .bind(outcome)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Whether notice `id` was already applied.
///
/// # Errors
/// [`Error::Database`].
pub async fn notice_seen(conn: &mut PgConnection, id: &str) -> Result<bool, Error> {
    Ok(
        sqlx::query_scalar::<_, i32>(
            "SELECT 1 FROM payments.provider_notices WHERE notice_id = $1",
        )
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?
        .is_some(),
    )
}
