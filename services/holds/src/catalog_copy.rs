//! Copies of the catalog on the shards: what a claim reads (the event's status and
//! limits, the section's seats and prices) must be on the claim's shard, so the claim
//! stays one statement with no call to another database.
//!
//! Every [`COPY_PERIOD`] each shard gets, for every event with a section routed to it,
//! the venue's rows once (venue, sections, seats, categories: fixed once imported) and
//! the event's rows (event, price categories, cancellation, channels) whenever they
//! differ from what was last written there, and the event's presale codes whenever
//! their count on the main database changed (codes never change): a pause or close on the main database reaches every
//! shard within one period and a round trip (`catalog.copy_all`, migration
//! `20261210000002`). Copies are idempotent, so several holds replicas copying at once
//! write the same rows.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use stadium_db::{copy_presale_codes, presale_code_count};

use crate::error::Error;
use crate::shards::Shards;

/// How often the shards' copies are brought up to date.
pub const COPY_PERIOD: Duration = Duration::from_millis(200);

/// What this process last wrote to each shard.
#[derive(Debug, Default)]
pub struct Copies {
    /// (shard, venue) whose rows are on the shard.
    venues: HashSet<(String, i64)>,
    /// (shard, event) → the event's rows as last written there.
    events: HashMap<(String, i64), String>,
    /// (shard, event) → how many presale codes the event had on the main database when
    /// all of them were last copied there.
    codes: HashMap<(String, i64), i64>,
}

impl Copies {
    /// Brings every shard's copy up to date; returns the shards' catalog rows written
    /// (codes aside).
    ///
    /// # Errors
    /// [`Error::Database`] from the main database or a shard (the others are still
    /// brought up to date first; the first failure is returned).
    pub async fn refresh(&mut self, shards: &Shards) -> Result<u64, Error> {
        let mut written = 0;
        let mut failure = None;
        for (name, pool) in shards.others() {
            match self.refresh_shard(shards, name, pool).await {
                Ok(n) => written += n,
                Err(error) => {
                    tracing::warn!(shard = name, %error, "catalog copy failed");
                    failure.get_or_insert(error);
                }
            }
        }
        failure.map_or(Ok(written), Err)
    }

    async fn refresh_shard(
        &mut self,
        shards: &Shards,
        name: &str,
        pool: &sqlx::PgPool,
    ) -> Result<u64, Error> {
        let events: Vec<(i64, i64, String)> = sqlx::query_as(
            "SELECT r.event_id, e.venue_id, catalog.event_rows(r.event_id)::text \
             FROM (SELECT DISTINCT event_id FROM catalog.section_shards WHERE shard = $1) r \
             JOIN catalog.events e ON e.event_id = r.event_id",
        )
        .bind(name)
        .fetch_all(shards.main())
        .await?;
        let mut written = 0;
        for (event, venue, rows) in events {
            if !self.venues.contains(&(name.to_owned(), venue)) {
                let present: bool = sqlx::query_scalar(
                    "SELECT EXISTS (SELECT 1 FROM catalog.venues WHERE venue_id = $1)",
                )
                .bind(venue)
                .fetch_one(pool)
                .await?;
                if !present {
                    let venue_rows: String =
                        sqlx::query_scalar("SELECT catalog.venue_rows($1)::text")
                            .bind(venue)
                            .fetch_one(shards.main())
                            .await?;
                    written += copy(pool, &venue_rows).await?;
                }
                self.venues.insert((name.to_owned(), venue));
            }
            let key = (name.to_owned(), event);
            if self.events.get(&key) != Some(&rows) {
                written += copy(pool, &rows).await?;
                self.events.insert(key.clone(), rows);
            }
            let count = presale_code_count(shards.main(), event).await?;
            if self.codes.get(&key) != Some(&count) {
                copy_presale_codes(shards.main(), pool, event, 0).await?;
                self.codes.insert(key, count);
            }
        }
        Ok(written)
    }
}

/// Writes rows as `catalog.venue_rows` / `catalog.event_rows` give them to `pool`;
/// answers the rows written.
///
/// # Errors
/// [`Error::Database`].
async fn copy(pool: &sqlx::PgPool, rows: &str) -> Result<u64, Error> {
    let written: i64 = sqlx::query_scalar("SELECT catalog.copy_all($1::jsonb)")
        .bind(rows)
        .fetch_one(pool)
        .await?;
    Ok(u64::try_from(written).unwrap_or(0))
}

/// Refreshes the shards' copies every [`COPY_PERIOD`] until `stop` is cancelled; does
/// nothing when there is no shard.
pub fn spawn(shards: Arc<Shards>, stop: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        if shards.others().next().is_none() {
            return;
        }
        let mut copies = Copies::default();
        let mut tick = tokio::time::interval(COPY_PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {
                    // A failure is logged and tried again next period.
                    let _ = copies.refresh(&shards).await;
                }
            }
        }
    })
}
