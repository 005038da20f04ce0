//! Writing this process's per-section claim counts into `holds.section_load` (one
//! statement for every section of a database) and deleting rows past their retention.
//! Observability only: the caller logs and drops a failed write.

use std::time::Duration;

use sqlx::PgConnection;
use stadium_db::LATENCY_BUCKETS;
use uuid::Uuid;

use crate::error::Error;

/// One section's counts of claims answered by this process since the last write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionCounts {
    /// The event.
    pub event: i64,
    /// The section.
    pub section: i64,
    /// Claims that created a hold.
    pub held: i64,
    /// Claims refused `SEAT_TAKEN` (best available: no block left).
    pub seat_taken: i64,
    /// Claims refused for any other reason than `SEAT_TAKEN` or shedding.
    pub refused: i64,
    /// Claims the claims gate shed (`OVERLOADED`, nothing written).
    pub shed: i64,
    /// Claims that failed (database, contention).
    pub errors: i64,
    /// Seat rows marked expired, by the claims on their way (lazy expiry) or by the
    /// sweeper.
    pub expired: i64,
    /// Claim latency, counts per bucket of `stadium_db::CLAIM_LATENCY_BOUNDS_MS`
    /// ([`LATENCY_BUCKETS`] long, the last above every bound).
    pub latency: [i64; LATENCY_BUCKETS],
}

/// Adds `rows` to this database's rows of `process` for the current second (the
/// database clock, truncated), in one statement; rows of a second already written add
/// up. Returns the rows written.
///
/// # Errors
/// [`Error::Database`].
pub async fn add_section_load(
    conn: &mut PgConnection,
    process: Uuid,
    rows: &[SectionCounts],
) -> Result<u64, Error> {
    if rows.is_empty() {
        return Ok(0);
    }
    let column = |f: fn(&SectionCounts) -> i64| rows.iter().map(f).collect::<Vec<i64>>();
    // The histograms travel flat, LATENCY_BUCKETS per row in row order, and are cut
    // back into one array per row by the row's ordinal (unnest flattens 2-D arrays).
    let latency: Vec<i64> = rows.iter().flat_map(|r| r.latency).collect();
    let done = sqlx::query(
        "INSERT INTO holds.section_load AS l \
             (event_id, section_id, process_id, at, held, seat_taken, refused, shed, errors, \
              expired, latency_buckets) \
         SELECT u.event_id, u.section_id, $1, date_trunc('second', now()), \
                u.held, u.seat_taken, u.refused, u.shed, u.errors, u.expired, \
                ($10::bigint[])[((u.n - 1) * $11 + 1)::int : (u.n * $11)::int] \
           FROM unnest($2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], \
                       $7::bigint[], $8::bigint[], $9::bigint[]) \
                WITH ORDINALITY AS u(event_id, section_id, held, seat_taken, refused, shed, \
                                     errors, expired, n) \
         ON CONFLICT (event_id, at, section_id, process_id) DO UPDATE SET \
             held = l.held + EXCLUDED.held, \
             seat_taken = l.seat_taken + EXCLUDED.seat_taken, \
             refused = l.refused + EXCLUDED.refused, \
             shed = l.shed + EXCLUDED.shed, \
             errors = l.errors + EXCLUDED.errors, \
             expired = l.expired + EXCLUDED.expired, \
             latency_buckets = ARRAY(SELECT a + b FROM unnest(l.latency_buckets, \
                                     EXCLUDED.latency_buckets) WITH ORDINALITY AS z(a, b, i) \
                                     ORDER BY z.i)",
    )
    .bind(process)
    .bind(column(|r| r.event))
    .bind(column(|r| r.section))
    .bind(column(|r| r.held))
    .bind(column(|r| r.seat_taken))
    .bind(column(|r| r.refused))
    .bind(column(|r| r.shed))
    .bind(column(|r| r.errors))
    .bind(column(|r| r.expired))
    .bind(latency)
    .bind(i64::try_from(LATENCY_BUCKETS).unwrap_or(i64::MAX))
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected())
}

/// Deletes this database's `holds.section_load` rows older than `keep` (every
/// process's); returns how many.
///
/// # Errors
/// [`Error::Database`].
pub async fn trim_section_load(conn: &mut PgConnection, keep: Duration) -> Result<u64, Error> {
    let done =
        sqlx::query("DELETE FROM holds.section_load WHERE at < now() - make_interval(secs => $1)")
            .bind(keep.as_secs_f64())
            .execute(&mut *conn)
            .await?;
    Ok(done.rows_affected())
}
