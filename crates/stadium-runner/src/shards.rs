//! The on-sale's sections spread over the holds' shards, and the seats each shard holds
//! after the sale.
//!
//! Sections go to the shards in turn, in the plan's order, so that neighbouring
//! sections — the best ones sit together near the stage or the halfway line — do not
//! share a shard; the main database keeps the catalog and the payments.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;
use holds::domain::{EventId, SectionId};
use sqlx::PgPool;
use stadium_db::Shards;
use tokio_util::sync::CancellationToken;

/// How often the main database is asked whether the sale's event exists yet.
const WATCH: Duration = Duration::from_millis(50);

/// Waits for the sale's event (the first after `events_before`) and places its
/// sections on the shards besides the main database in turn; returns the sections
/// placed per shard. Gives up, placing nothing, when `sale_over` is cancelled first.
///
/// # Errors
/// A section that cannot be placed (for one that already has holds: the sale opened
/// before the sections were spread), or the database.
pub async fn spread(
    shards: &Shards,
    events_before: i64,
    sale_over: &CancellationToken,
) -> anyhow::Result<BTreeMap<String, usize>> {
    let names: Vec<String> = shards.others().map(|(name, _)| name.to_owned()).collect();
    let mut placed = BTreeMap::new();
    if names.is_empty() {
        return Ok(placed);
    }
    let event = loop {
        if let Some(event) = sale_event(shards.main(), events_before).await? {
            break event;
        }
        tokio::select! {
            () = sale_over.cancelled() => return Ok(placed),
            () = tokio::time::sleep(WATCH) => {}
        }
    };
    let sections: Vec<i64> = sqlx::query_scalar(
        "SELECT sc.section_id FROM catalog.events e \
           JOIN catalog.sections sc ON sc.venue_id = e.venue_id \
          WHERE e.event_id = $1 ORDER BY sc.sort_order",
    )
    .bind(event)
    .fetch_all(shards.main())
    .await
    .context("read the sale's sections")?;
    let event_id = EventId::try_from(event).context("event id")?;
    for (i, section) in sections.into_iter().enumerate() {
        let shard = &names[i % names.len()];
        let section_id = SectionId::try_from(section).context("section id")?;
        holds::shards::place_section(shards, event_id, section_id, shard)
            .await
            .with_context(|| format!("place section {section} on shard {shard}"))?;
        *placed.entry(shard.clone()).or_insert(0) += 1;
    }
    Ok(placed)
}

/// The first event created after `events_before`, once it exists.
async fn sale_event(main: &PgPool, events_before: i64) -> anyhow::Result<Option<i64>> {
    sqlx::query_scalar::<_, Option<i64>>(
        "SELECT min(event_id) FROM catalog.events WHERE event_id > $1",
    )
    .bind(events_before)
    .fetch_one(main)
    .await
    .context("look for the sale's event")
}

/// What one database holds of an event after the sale.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShardSeats {
    /// The shard's name (`main` for the main database).
    pub shard: String,
    /// Seats booked by fans.
    pub sold: i64,
    /// Seats held and not yet expired.
    pub held: i64,
    /// Seats blocked, or booked as comps.
    pub blocked: i64,
    /// Seats with more than one active claim on this database.
    pub claimed_twice: i64,
    /// Seat ids unavailable here (held unexpired, booked, blocked), ascending.
    pub unavailable: Vec<i64>,
    /// Seat ids with an active claim here (a lapsed hold included), ascending.
    pub active: Vec<i64>,
}

/// The seats of `event` on the database `pool`, named `shard`.
///
/// # Errors
/// A query failed.
pub async fn seats_on(pool: &PgPool, shard: &str, event: i64) -> anyhow::Result<ShardSeats> {
    let (sold, held, blocked, claimed_twice, unavailable, active): (
        i64,
        i64,
        i64,
        i64,
        Vec<i64>,
        Vec<i64>,
    ) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE status = 'booked' AND kind = 'fan'), \
                count(*) FILTER (WHERE status = 'held' AND expires_at > now()), \
                count(*) FILTER (WHERE status = 'blocked' OR (status = 'booked' AND kind <> 'fan')), \
                (SELECT count(*) FROM catalog.invariant_violations($1, 0, 'two_active_claims')), \
                coalesce(array_agg(seat_id ORDER BY seat_id) \
                    FILTER (WHERE status <> 'held' OR expires_at > now()), '{}'), \
                coalesce(array_agg(seat_id ORDER BY seat_id), '{}') \
           FROM holds.seat_holds \
          WHERE event_id = $1 AND status IN ('held', 'booked', 'blocked')",
    )
    .bind(event)
    .fetch_one(pool)
    .await
    .with_context(|| format!("count the seats on shard {shard}"))?;
    Ok(ShardSeats {
        shard: shard.to_owned(),
        sold,
        held,
        blocked,
        claimed_twice,
        unavailable,
        active,
    })
}

/// Seats active on more than one of `databases` at once.
pub fn active_on_two(databases: &[ShardSeats]) -> i64 {
    let mut seen: BTreeMap<i64, usize> = BTreeMap::new();
    for seat in databases.iter().flat_map(|d| d.active.iter()) {
        *seen.entry(*seat).or_insert(0) += 1;
    }
    i64::try_from(seen.values().filter(|n| **n > 1).count()).unwrap_or(i64::MAX)
}

/// Seats unavailable on at least one of `databases`.
pub fn unavailable_anywhere(databases: &[ShardSeats]) -> i64 {
    let mut all: Vec<i64> = databases
        .iter()
        .flat_map(|d| d.unavailable.iter().copied())
        .collect();
    all.sort_unstable();
    all.dedup();
    i64::try_from(all.len()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(active: &[i64], unavailable: &[i64]) -> ShardSeats {
        ShardSeats {
            active: active.to_vec(),
            unavailable: unavailable.to_vec(),
            ..ShardSeats::default()
        }
    }

    #[test]
    fn a_seat_active_on_two_databases_is_counted_once_as_taken_and_once_as_twice() {
        let dbs = [db(&[1, 2, 3], &[1, 2]), db(&[3, 4], &[3, 4])];
        assert_eq!(active_on_two(&dbs), 1);
        assert_eq!(unavailable_anywhere(&dbs), 4);
        assert_eq!(active_on_two(&[db(&[1], &[1]), db(&[2], &[])]), 0);
    }
}
