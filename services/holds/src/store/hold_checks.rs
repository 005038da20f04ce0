//! Which holds passed their check across shards (migration `20261220000100`): a mark
//! per hold key on the hold's database, written when the check passes; what the
//! sweeper finds unchecked it checks.

use sqlx::PgExecutor;

use crate::domain::{EventId, FanId, HoldKey};
use crate::error::Error;

/// Records that hold `key` passed its check (idempotent).
///
/// # Errors
/// [`Error::Database`].
pub async fn mark_checked<'e>(db: impl PgExecutor<'e>, key: HoldKey) -> Result<(), Error> {
    sqlx::query!(
        "INSERT INTO holds.hold_checks (hold_key) VALUES ($1) ON CONFLICT DO NOTHING",
        key.uuid(),
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Where hold `key`'s check stands on its database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckState {
    /// Its check passed.
    pub checked: bool,
    /// Milliseconds since it was claimed (0 when no row of it is left).
    pub age_ms: i64,
}

/// Whether hold `key` passed its check, and its age.
///
/// # Errors
/// [`Error::Database`].
pub async fn check_state<'e>(db: impl PgExecutor<'e>, key: HoldKey) -> Result<CheckState, Error> {
    let row = sqlx::query!(
        r#"SELECT EXISTS (SELECT 1 FROM holds.hold_checks c WHERE c.hold_key = $1) AS "checked!",
                  coalesce((extract(epoch FROM now() - min(h.created_at)) * 1000)::bigint, 0)
                      AS "age_ms!"
           FROM holds.seat_holds h WHERE h.hold_key = $1"#,
        key.uuid(),
    )
    .fetch_one(db)
    .await?;
    Ok(CheckState {
        checked: row.checked,
        age_ms: row.age_ms,
    })
}

/// A fan's live hold that was never marked checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unchecked {
    /// The hold.
    pub key: HoldKey,
    /// Its event.
    pub event: EventId,
    /// Its fan.
    pub fan: FanId,
    /// The admission it was claimed with.
    pub admission_jti: String,
    /// The SHA-256 of the presale code or channel key it was claimed with, if any.
    pub code_sha256: Option<[u8; 32]>,
}

/// Up to `limit` fans' holds on this database, held and unexpired, claimed more than
/// `older_than_ms` ago and never marked checked, oldest first.
///
/// # Errors
/// [`Error::Database`]; [`Error::CorruptRow`] for a row the domain refuses.
pub async fn unchecked<'e>(
    db: impl PgExecutor<'e>,
    older_than_ms: i64,
    limit: i64,
) -> Result<Vec<Unchecked>, Error> {
    let rows = sqlx::query!(
        r#"SELECT h.hold_key, min(h.event_id) AS "event_id!", min(h.fan_id) AS "fan_id!",
                  min(h.admission_jti) AS "admission_jti!",
                  (array_agg(pc.code_sha256) FILTER (WHERE pc.code_sha256 IS NOT NULL))[1]
                      AS code_sha256
           FROM holds.seat_holds h
           LEFT JOIN holds.presale_codes pc ON pc.code_id = h.presale_code_id
           WHERE h.status = 'held' AND h.expires_at > now() AND h.kind = 'fan'
             AND h.admission_jti IS NOT NULL
             AND h.created_at < now() - make_interval(secs => $1 / 1000.0)
             AND NOT EXISTS (SELECT 1 FROM holds.hold_checks c WHERE c.hold_key = h.hold_key)
           GROUP BY h.hold_key
           ORDER BY min(h.created_at)
           LIMIT $2"#,
        older_than_ms as f64,
        limit,
    )
    .fetch_all(db)
    .await?;
    let corrupt = |what: &str, e: &dyn std::fmt::Display| {
        Error::CorruptRow(format!("unchecked hold: {what}: {e}"))
    };
    rows.into_iter()
        .map(|row| {
            Ok(Unchecked {
                key: HoldKey::from(row.hold_key),
                event: EventId::try_from(row.event_id).map_err(|e| corrupt("event", &e))?,
                fan: FanId::try_from(row.fan_id.as_str()).map_err(|e| corrupt("fan", &e))?,
                admission_jti: row.admission_jti,
                code_sha256: row
                    .code_sha256
                    .map(|c| <[u8; 32]>::try_from(c.as_slice()))
                    .transpose()
                    .map_err(|e| corrupt("code", &e))?,
            })
        })
        .collect()
}

/// Deletes up to `limit` marks older than a day (a hold lives far less); answers how
/// many.
///
/// # Errors
/// [`Error::Database`].
pub async fn forget_old_checks<'e>(db: impl PgExecutor<'e>, limit: i64) -> Result<u64, Error> {
    let done = sqlx::query!(
        "DELETE FROM holds.hold_checks WHERE hold_key IN ( \
             SELECT hold_key FROM holds.hold_checks \
             WHERE checked_at < now() - interval '1 day' LIMIT $1)",
        limit,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected())
}
