//! Where each event's queue stood when the box office last heard from the waiting room
//! (`catalog.queue_marks`): sent back with the configuration, so a queue the waiting
//! room has to create again after Redis lost it starts from there, not from zero.

use sqlx::PgConnection;

use crate::error::Result;

/// An event's queue as last seen: its frontier and the highest queue number handed out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueMarks {
    /// Fans admitted (the frontier).
    pub admitted: u64,
    /// Highest queue number handed out (>= `admitted`).
    pub numbered: u64,
}

/// The marks of `event_id`; zero when none were recorded.
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn load(conn: &mut PgConnection, event_id: i64) -> Result<QueueMarks> {
    let row: Option<(i64, i64)> =
        sqlx::query_as("SELECT admitted, numbered FROM catalog.queue_marks WHERE event_id = $1")
            .bind(event_id)
            .fetch_optional(conn)
            .await?;
    let unsigned = |n: i64| u64::try_from(n).unwrap_or(0);
    Ok(
        row.map_or_else(QueueMarks::default, |(admitted, numbered)| QueueMarks {
            admitted: unsigned(admitted),
            numbered: unsigned(numbered),
        }),
    )
}

/// Raises `event_id`'s marks to `seen` (never lowers either).
///
/// # Errors
/// [`crate::error::Error::Database`].
pub async fn raise(conn: &mut PgConnection, event_id: i64, seen: QueueMarks) -> Result<()> {
    let signed = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let numbered = seen.numbered.max(seen.admitted);
    sqlx::query(
        "INSERT INTO catalog.queue_marks AS m (event_id, admitted, numbered)
         VALUES ($1, $2, $3)
         ON CONFLICT (event_id) DO UPDATE
            SET admitted = GREATEST(m.admitted, EXCLUDED.admitted),
                numbered = GREATEST(m.numbered, EXCLUDED.numbered, EXCLUDED.admitted),
                seen_at = now()",
    )
    .bind(event_id)
    .bind(signed(seen.admitted))
    .bind(signed(numbered))
    .execute(conn)
    .await?;
    Ok(())
}
