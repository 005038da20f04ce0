//! Moving a section of an event, with its holds, bookings, blocks and seat history,
//! from the database it is on to another while its sale runs (migration
//! `20261211000000`, one function per step, each its own transaction):
//!
//! 0. copy the event's catalog rows, channels and presale codes to the new database
//!    (a shard);
//! 1. fence it on the old database: from then on a claim, release or booking of the
//!    section there is refused with a retryable `UNAVAILABLE` (`SECTION_MOVING`, with
//!    a retry-after hint of [`RETRY_AFTER_MS`]), once the writes in flight committed;
//! 2. read its rows there; 3. write them to the new database, fenced there too (and
//!    the marks of its holds' passed checks across shards);
//! 4. give it away on the old database (`gone`: callers there are told
//!    `SECTION_MOVED` and route anew) and retire its rows;
//! 5. own it on the new database; 6. flip the route on the main database.
//!
//! At every moment at most one database takes writes of the section, so no seat is
//! ever active on two; a booking written before the fence is among the rows copied,
//! and one tried during the move is refused and retried against the new database. A
//! move cut off after step 1 leaves the section fenced (no fence lapses by itself):
//! running it again finishes it. Other sections are held up only by step 1's table lock,
//! which waits for the writes in flight (each one statement) and lasts one statement.

use std::time::Instant;

use sqlx::PgPool;

use crate::code_copy::copy_presale_codes;
use crate::shards::{MAIN, Shards};

/// The retry-after hint, in ms, given to callers of a fenced section.
pub const RETRY_AFTER_MS: i32 = 500;

/// A section's move, as done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    /// The database the section was on.
    pub from: String,
    /// The database it is on now.
    pub to: String,
    /// Seat rows copied (holds, bookings, blocks, and lapsed or released ones).
    pub seat_rows: u64,
    /// Seat history rows copied.
    pub history_rows: u64,
    /// How long the section refused writes, in ms (fence to ownership).
    pub fenced_ms: u64,
}

/// Why a section was not moved.
#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    /// The section is already on the shard asked for.
    #[error("section {section} is on shard {shard} already")]
    AlreadyThere {
        /// The section.
        section: i64,
        /// Its shard.
        shard: String,
    },
    /// The shard asked for is not configured here.
    #[error("no shard named {0} is configured")]
    UnknownShard(String),
    /// The section's route names a database that does not have it, and no move of it
    /// is half done there.
    #[error("section {section} is not on shard {shard}, where its route points")]
    NotOnRoute {
        /// The section.
        section: i64,
        /// The shard its route names.
        shard: String,
    },
    /// A database failed; the move can be run again.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Moves `section` of `event` to the database `to` (`main` or a shard of `shards`),
/// recording `actor` in each moved seat's history.
///
/// # Errors
/// As [`MoveError`]. After a [`MoveError::Database`] the section may be left fenced:
/// run the move again.
pub async fn move_section(
    shards: &Shards,
    event: i64,
    section: i64,
    to: &str,
    actor: &str,
) -> Result<Moved, MoveError> {
    let target = shards
        .named(to)
        .map_err(|_| MoveError::UnknownShard(to.to_owned()))?;
    shards.forget(event).await;
    let from = shards.shard_of(event, section).await?;
    if from == to {
        return Err(MoveError::AlreadyThere {
            section,
            shard: from,
        });
    }
    let source = shards
        .named(&from)
        .map_err(|_| MoveError::UnknownShard(from.clone()))?;
    if to != MAIN {
        // The shard knows its own name (as holds names it at start; refused, SS003,
        // when the database holds seats under another name).
        sqlx::query("SELECT holds.register_shard($1)")
            .bind(to)
            .execute(target)
            .await?;
        copy_catalog(shards.main(), target, event).await?;
    }
    let started = Instant::now();
    let before: String = sqlx::query_scalar("SELECT holds.fence_section($1, $2, $3)")
        .bind(event)
        .bind(section)
        .bind(RETRY_AFTER_MS)
        .fetch_one(source)
        .await?;
    let (seat_rows, history_rows) = if before == "gone" {
        // Cut off after giving the section away: its rows wait, fenced, on the target.
        let fenced: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM holds.section_owners \
              WHERE event_id = $1 AND section_id = $2 AND state = 'fenced')",
        )
        .bind(event)
        .bind(section)
        .fetch_one(target)
        .await?;
        if !fenced {
            return Err(MoveError::NotOnRoute {
                section,
                shard: from,
            });
        }
        (0, 0)
    } else {
        let (holds, history): (String, String) = sqlx::query_as(
            "SELECT seat_holds::text, seat_history::text FROM holds.section_rows($1, $2)",
        )
        .bind(event)
        .bind(section)
        .fetch_one(source)
        .await?;
        let (seat_rows, history_rows): (i64, i64) = sqlx::query_as(
            "SELECT seat_holds, seat_history \
               FROM holds.take_section($1, $2, $3::jsonb, $4::jsonb, $5, $6)",
        )
        .bind(event)
        .bind(section)
        .bind(holds)
        .bind(history)
        .bind(actor)
        .bind(RETRY_AFTER_MS)
        .fetch_one(target)
        .await?;
        copy_check_marks(source, target, event, section).await?;
        sqlx::query("SELECT holds.give_section_away($1, $2)")
            .bind(event)
            .bind(section)
            .execute(source)
            .await?;
        (seat_rows, history_rows)
    };
    sqlx::query("SELECT holds.own_section($1, $2)")
        .bind(event)
        .bind(section)
        .execute(target)
        .await?;
    let fenced_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    sqlx::query(
        "INSERT INTO catalog.section_shards (event_id, section_id, shard) VALUES ($1, $2, $3) \
         ON CONFLICT (event_id, section_id) DO UPDATE SET shard = EXCLUDED.shard, changed_at = now()",
    )
    .bind(event)
    .bind(section)
    .bind(to)
    .execute(shards.main())
    .await?;
    shards.forget(event).await;
    tracing::info!(
        event,
        section,
        from,
        to,
        seat_rows,
        history_rows,
        fenced_ms,
        "section moved"
    );
    Ok(Moved {
        from,
        to: to.to_owned(),
        seat_rows: u64::try_from(seat_rows).unwrap_or(0),
        history_rows: u64::try_from(history_rows).unwrap_or(0),
        fenced_ms,
    })
}

/// Copies the marks of the section's holds whose checks across shards passed
/// (`holds.hold_checks`, migration `20261220000100`) from `source` to `target`, so the
/// new database does not take them for holds never checked.
async fn copy_check_marks(
    source: &PgPool,
    target: &PgPool,
    event: i64,
    section: i64,
) -> Result<(), sqlx::Error> {
    let marks: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.hold_key::text, c.checked_at::text FROM holds.hold_checks c \
          WHERE EXISTS (SELECT 1 FROM holds.seat_holds h WHERE h.hold_key = c.hold_key \
                          AND h.event_id = $1 AND h.section_id = $2)",
    )
    .bind(event)
    .bind(section)
    .fetch_all(source)
    .await?;
    let (keys, at): (Vec<String>, Vec<String>) = marks.into_iter().unzip();
    sqlx::query(
        "INSERT INTO holds.hold_checks (hold_key, checked_at) \
         SELECT k::uuid, a::timestamptz FROM unnest($1::text[], $2::text[]) AS m(k, a) \
         ON CONFLICT DO NOTHING",
    )
    .bind(&keys)
    .bind(&at)
    .execute(target)
    .await?;
    Ok(())
}

/// Copies what a claim reads of `event` from the catalog (its venue's rows, its own,
/// its channels and presale codes) onto the shard `target` before it takes the section, so the first claim there finds
/// them (holds keeps the copy up to date after, `catalog.copy_all`, migration
/// `20261210000002`).
async fn copy_catalog(main: &PgPool, target: &PgPool, event: i64) -> Result<(), sqlx::Error> {
    let (venue, rows): (String, String) = sqlx::query_as(
        "SELECT catalog.venue_rows(e.venue_id)::text, catalog.event_rows(e.event_id)::text \
           FROM catalog.events e WHERE e.event_id = $1",
    )
    .bind(event)
    .fetch_one(main)
    .await?;
    for rows in [venue, rows] {
        sqlx::query("SELECT catalog.copy_all($1::jsonb)")
            .bind(rows)
            .execute(target)
            .await?;
    }
    copy_presale_codes(main, target, event, 0).await?;
    Ok(())
}
