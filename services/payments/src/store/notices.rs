//! Provider notices already applied, for deduplication by notice id.

use sqlx::PgConnection;
use uuid::Uuid;

use crate::error::Error;
use crate::provider::NoticeKind;

stadium_db::text_enum!(NoticeKind);

/// A provider notice to mark as applied, in the same transaction as what it changed.
#[derive(Debug, Clone)]
pub struct NoticeMark {
    /// The provider's notice id.
    pub notice_id: String,
    /// What the notice told.
    pub kind: NoticeKind,
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
    sqlx::query!(
        "INSERT INTO payments.provider_notices (notice_id, kind, idempotency_key, payment_id,
             outcome)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (notice_id) DO NOTHING",
        mark.notice_id,
        // `as`: sqlx's parameter type override; the kind binds as its text.
        mark.kind as NoticeKind,
        mark.idempotency_key,
        payment,
        outcome,
    )
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Whether notice `id` was already applied.
///
/// # Errors
/// [`Error::Database`].
pub async fn notice_seen(conn: &mut PgConnection, id: &str) -> Result<bool, Error> {
    Ok(sqlx::query_scalar!(
        r#"SELECT 1 AS "seen!" FROM payments.provider_notices WHERE notice_id = $1"#,
        id,
    )
    .fetch_optional(&mut *conn)
    .await?
    .is_some())
}
