//! Which database each section of an event is on, with its active seats there, and
//! moving a section between them (`stadium_db::move_section`) with its audit entry.

use serde_json::json;
use sqlx::PgPool;
use stadium_db::{MoveError, Moved, Shards};

use super::audit::{self, AuditEntry};
use crate::error::{Error, Result};

/// One section of an event on one database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionSeats {
    /// The section.
    pub section_id: i64,
    /// Its code.
    pub code: String,
    /// Seats held and not lapsed there.
    pub held: i64,
    /// Seats booked there (comps included).
    pub sold: i64,
    /// Seats blocked there.
    pub blocked: i64,
}

/// Each database of `shards` (the main one first) with the sections of `event_id`
/// routed to it, in plan order.
///
/// # Errors
/// [`Error::EventNotFound`]; [`Error::Database`].
pub async fn sections_by_shard(
    shards: &Shards,
    event_id: i64,
) -> Result<Vec<(String, Vec<SectionSeats>)>> {
    let sections: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT sc.section_id, sc.code, coalesce(r.shard, 'main') \
           FROM catalog.events e JOIN catalog.sections sc ON sc.venue_id = e.venue_id \
           LEFT JOIN catalog.section_shards r \
                  ON r.event_id = e.event_id AND r.section_id = sc.section_id \
          WHERE e.event_id = $1 ORDER BY sc.sort_order, sc.section_id",
    )
    .bind(event_id)
    .fetch_all(shards.main())
    .await?;
    if sections.is_empty() {
        ensure_event(shards.main(), event_id).await?;
    }
    let mut out = Vec::new();
    for (name, pool) in shards.all() {
        let counts: Vec<(i64, i64, i64, i64)> = sqlx::query_as(
            "SELECT section_id, \
                    count(*) FILTER (WHERE status = 'held' AND expires_at > now()), \
                    count(*) FILTER (WHERE status = 'booked'), \
                    count(*) FILTER (WHERE status = 'blocked') \
               FROM holds.seat_holds \
              WHERE event_id = $1 AND status IN ('held', 'booked', 'blocked') \
              GROUP BY section_id",
        )
        .bind(event_id)
        .fetch_all(pool)
        .await?;
        let on_it = sections
            .iter()
            .filter(|(_, _, shard)| shard == name)
            .map(|(id, code, _)| {
                let (held, sold, blocked) = counts
                    .iter()
                    .find(|c| c.0 == *id)
                    .map_or((0, 0, 0), |c| (c.1, c.2, c.3));
                SectionSeats {
                    section_id: *id,
                    code: code.clone(),
                    held,
                    sold,
                    blocked,
                }
            })
            .collect();
        out.push((name.to_owned(), on_it));
    }
    Ok(out)
}

/// Moves `section_id` of `event_id` to the database `to` for `actor`, and records it
/// in the audit log on the main database.
///
/// # Errors
/// [`Error::EventNotFound`]; [`Error::InvalidField`] (`section_id` not of the event's
/// venue, `to_shard` not configured); [`Error::Database`] (the move can be run again);
/// [`Error::Internal`] when the route names a database without the section.
pub async fn move_section(
    shards: &Shards,
    actor: &str,
    event_id: i64,
    section_id: i64,
    to: &str,
) -> Result<Moved> {
    let of_venue: Option<bool> = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM catalog.sections sc \
                         WHERE sc.venue_id = e.venue_id AND sc.section_id = $2) \
           FROM catalog.events e WHERE e.event_id = $1",
    )
    .bind(event_id)
    .bind(section_id)
    .fetch_optional(shards.main())
    .await?;
    match of_venue {
        None => return Err(Error::EventNotFound(event_id)),
        Some(false) => {
            return Err(Error::invalid(
                "section_id",
                "not a section of the event's venue",
            ));
        }
        Some(true) => {}
    }
    let moved = match stadium_db::move_section(shards, event_id, section_id, to, actor).await {
        Ok(moved) => moved,
        Err(MoveError::AlreadyThere { shard, .. }) => {
            return Ok(Moved {
                from: shard.clone(),
                to: shard,
                seat_rows: 0,
                history_rows: 0,
                fenced_ms: 0,
            });
        }
        Err(MoveError::UnknownShard(name)) => {
            return Err(Error::invalid(
                "to_shard",
                format!("no shard named {name:?} is configured"),
            ));
        }
        Err(MoveError::NotOnRoute { section, shard }) => {
            return Err(Error::SectionOffRoute { section, shard });
        }
        Err(MoveError::Database(error)) => return Err(Error::Database(error)),
    };
    let mut conn = shards.main().acquire().await?;
    audit::record(
        &mut conn,
        AuditEntry {
            actor,
            action: "move_section",
            target: format!("event:{event_id}/section:{section_id}"),
            before: Some(json!({ "shard": moved.from })),
            after: Some(json!({
                "shard": moved.to,
                "seat_rows": moved.seat_rows,
                "history_rows": moved.history_rows,
                "fenced_ms": moved.fenced_ms,
            })),
        },
    )
    .await?;
    Ok(moved)
}

async fn ensure_event(main: &PgPool, event_id: i64) -> Result<()> {
    let found: Option<i64> =
        sqlx::query_scalar("SELECT event_id FROM catalog.events WHERE event_id = $1")
            .bind(event_id)
            .fetch_optional(main)
            .await?;
    found.map(|_| ()).ok_or(Error::EventNotFound(event_id))
}
