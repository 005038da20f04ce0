//! `catalog.admin_audit`: who changed what, with the state before and after, written in
//! the transaction of the change so a change and its record commit or vanish together.

use serde_json::Value;
use sqlx::PgConnection;

use crate::error::Result;

/// One audit record.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry<'a> {
    /// The token's `sub`.
    pub actor: &'a str,
    /// What was done, e.g. `create_event`, `open_sale`, `import_venue`.
    pub action: &'a str,
    /// What it was done to, e.g. `event:7`, `venue:3`, `hold:<uuid>`.
    pub target: String,
    /// The state before (`None` for a creation).
    pub before: Option<Value>,
    /// The state after.
    pub after: Option<Value>,
}

/// Writes `entry` on `conn` (the caller's transaction).
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn record(conn: &mut PgConnection, entry: AuditEntry<'_>) -> Result<()> {
    sqlx::query!(
        "INSERT INTO catalog.admin_audit (actor, action, target, before, after)
         VALUES ($1, $2, $3, $4, $5)",
        entry.actor,
        entry.action,
        &entry.target,
        entry.before,
        entry.after
    )
    .execute(conn)
    .await?;
    Ok(())
}
