//! Per-section load for SREs: this process counts the claims it answers per (event,
//! section, database) — outcome, lazy expiries and a latency histogram — and a
//! background task adds the counts to `holds.section_load` on the database the claims
//! ran on, about once a second, and deletes rows past [`KEEP`] about once a minute.
//! The box office sums every process's rows (`TopSections`), so replicas add up.
//!
//! Observability, not sale correctness: the counts sit behind a short std mutex, a
//! write that fails is logged and its counts dropped, and nothing here ever blocks or
//! fails a claim.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use sqlx::PgPool;
use stadium_db::{LATENCY_BUCKETS, latency_bucket};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::metrics::{Metrics, Place};
use crate::shards::{MAIN, Shards};
use crate::store::section_load::{SectionCounts, add_section_load, trim_section_load};

/// How long rows of `holds.section_load` are kept.
pub const KEEP: Duration = Duration::from_secs(15 * 60);

/// Writes between two deletions of old rows (the first write deletes).
const TRIM_EVERY: u32 = 60;

/// How long the last write at shutdown may take (a database that does not answer must
/// not hold the shutdown up).
const LAST_WRITE: Duration = Duration::from_secs(2);

/// Counts by database name (the claim's shard), then by (event, section): looked up by
/// `&str`, so a claim allocates nothing once its section has a count.
type Counts = HashMap<String, HashMap<(i64, i64), SectionCounts>>;

/// This process's counts since the last write, and its id in `holds.section_load`.
#[derive(Debug)]
pub struct SectionLoad {
    process: Uuid,
    counts: Mutex<Counts>,
}

impl Default for SectionLoad {
    fn default() -> Self {
        Self::new()
    }
}

impl SectionLoad {
    /// Empty counts under a fresh process id (a random UUID).
    pub fn new() -> Self {
        Self {
            process: Uuid::new_v4(),
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// This process's id in the table's rows.
    pub fn process(&self) -> Uuid {
        self.process
    }

    /// Counts one claim answered at `place` after `elapsed_ms` milliseconds: `outcome`
    /// is `held`, `seat_taken`, `refused`, `shed` or `error`. A claim without a section (a
    /// price category that found none) has no section to count under and is skipped.
    pub fn claim(&self, outcome: &str, elapsed_ms: f64, place: &Place) {
        self.with(place, |c| {
            match outcome {
                "held" => c.held += 1,
                "seat_taken" => c.seat_taken += 1,
                "refused" => c.refused += 1,
                "shed" => c.shed += 1,
                _ => c.errors += 1,
            }
            c.latency[latency_bucket(elapsed_ms)] += 1;
        });
    }

    /// Counts `n` seat rows at `place` marked expired, by a claim on its way or by the
    /// sweeper.
    pub fn expired(&self, n: u64, place: &Place) {
        if n > 0 {
            self.with(place, |c| {
                c.expired += i64::try_from(n).unwrap_or(i64::MAX);
            });
        }
    }

    fn with(&self, place: &Place, change: impl FnOnce(&mut SectionCounts)) {
        let Some(section) = place.section else {
            return;
        };
        let mut counts = self.lock();
        let on_shard = match counts.get_mut(place.shard.as_str()) {
            Some(on_shard) => on_shard,
            None => counts.entry(place.shard.clone()).or_default(),
        };
        let entry = on_shard
            .entry((place.event, section))
            .or_insert_with(|| SectionCounts {
                event: place.event,
                section,
                held: 0,
                seat_taken: 0,
                refused: 0,
                shed: 0,
                errors: 0,
                expired: 0,
                latency: [0; LATENCY_BUCKETS],
            });
        change(entry);
    }

    /// Takes the counts so far, by database: its name, its pool, one entry per (event,
    /// section). A place whose database is not one of `shards` (`unknown`: the route
    /// could not be read) counts on the main one.
    pub fn take<'s>(&self, shards: &'s Shards) -> Vec<(String, &'s PgPool, Vec<SectionCounts>)> {
        let taken = std::mem::take(&mut *self.lock());
        type Rows<'p> = (&'p PgPool, BTreeMap<(i64, i64), SectionCounts>);
        let mut by_db: BTreeMap<String, Rows<'s>> = BTreeMap::new();
        for (shard, sections) in taken {
            let (db, pool) = match shards.named(&shard) {
                Ok(pool) => (shard, pool),
                Err(_) => (MAIN.to_owned(), shards.main()),
            };
            let rows = &mut by_db.entry(db).or_insert_with(|| (pool, BTreeMap::new())).1;
            for (key, counts) in sections {
                match rows.get_mut(&key) {
                    Some(sum) => add(sum, &counts),
                    None => {
                        rows.insert(key, counts);
                    }
                }
            }
        }
        by_db
            .into_iter()
            .map(|(db, (pool, rows))| (db, pool, rows.into_values().collect()))
            .collect()
    }

    fn lock(&self) -> MutexGuard<'_, Counts> {
        // A panic while counting leaves counts, not a broken invariant: keep going.
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn add(sum: &mut SectionCounts, more: &SectionCounts) {
    sum.held += more.held;
    sum.seat_taken += more.seat_taken;
    sum.refused += more.refused;
    sum.shed += more.shed;
    sum.errors += more.errors;
    sum.expired += more.expired;
    for (s, m) in sum.latency.iter_mut().zip(more.latency) {
        *s += m;
    }
}

/// Writes the counts taken from `load` to their databases of `shards`, one statement
/// each; a database that fails is logged (WARN) and its counts dropped.
async fn write(load: &SectionLoad, shards: &Shards) {
    for (db, pool, rows) in load.take(shards) {
        let result = async {
            let mut conn = pool.acquire().await?;
            add_section_load(&mut conn, load.process(), &rows).await
        }
        .await;
        if let Err(error) = result {
            tracing::warn!(shard = %db, sections = rows.len(), %error, "section load not written; its counts are dropped");
        }
    }
}

/// Deletes rows older than [`KEEP`] on every database of `shards`; a failure is logged
/// (WARN) and the next trim retries.
async fn trim(shards: &Shards) {
    for (db, pool) in shards.all() {
        let result = async {
            let mut conn = pool.acquire().await?;
            trim_section_load(&mut conn, KEEP).await
        }
        .await;
        match result {
            Ok(0) => {}
            Ok(n) => tracing::debug!(shard = %db, deleted = n, "trimmed the section load"),
            Err(error) => {
                tracing::warn!(shard = %db, %error, "trimming the section load failed; the next trim retries");
            }
        }
    }
}

/// Records, in `metrics`, the claims waiting now for a seat's lock per section on
/// every database of `shards`; a failure is logged (WARN) and the next pass reads
/// again.
async fn gauge_lock_waits(metrics: &Metrics, shards: &Shards) {
    match stadium_db::lock_waits(shards, None).await {
        Ok(waits) => metrics.lock_waits(&waits),
        Err(error) => tracing::warn!(%error, "reading the claims' lock waits failed"),
    }
}

/// Starts the writer: every `interval` it writes what `metrics`' section load counted
/// and gauges the lock waits per section, and every 60th write deletes old rows, until
/// `shutdown` is cancelled; then it writes once more (so the last second's claims are
/// not lost on a clean stop, given up after [`LAST_WRITE`]) and ends.
pub fn spawn(
    metrics: Arc<Metrics>,
    shards: Arc<Shards>,
    interval: Duration,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut pass: u32 = 0;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(interval) => {}
            }
            write(metrics.section_load(), &shards).await;
            gauge_lock_waits(&metrics, &shards).await;
            if pass.is_multiple_of(TRIM_EVERY) {
                trim(&shards).await;
            }
            pass = pass.wrapping_add(1);
        }
        if tokio::time::timeout(LAST_WRITE, write(metrics.section_load(), &shards))
            .await
            .is_err()
        {
            tracing::warn!("the last section load was not written before shutdown");
        }
        tracing::debug!("section load writer stopped");
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(section: Option<i64>, shard: &str) -> Place {
        Place {
            event: 7,
            section,
            shard: shard.to_owned(),
        }
    }

    #[tokio::test]
    async fn counts_are_taken_per_database_and_section_once() {
        // A lazy pool: nothing connects, `named` only needs the names.
        let main = sqlx::postgres::PgPoolOptions::new()
            .connect_lazy("postgres://nobody@127.0.0.1:1/none")
            .unwrap();
        let shards = Shards::single(main);
        let load = SectionLoad::new();
        load.claim("held", 1.5, &place(Some(1), "main"));
        load.claim("seat_taken", 3.0, &place(Some(1), "main"));
        // The route could not be read: counted on the main database, with the rest.
        load.claim("refused", 6000.0, &place(Some(1), "unknown"));
        load.claim("shed", 1000.0, &place(Some(1), "main"));
        load.claim("error", 0.1, &place(Some(2), "main"));
        load.expired(3, &place(Some(2), "main"));
        // No section: nothing to count under.
        load.claim("seat_taken", 1.0, &place(None, "unknown"));

        let mut taken = load.take(&shards);
        assert_eq!(taken.len(), 1);
        let (db, _, mut rows) = taken.remove(0);
        assert_eq!(db, "main");
        rows.sort_by_key(|r| r.section);
        assert_eq!(rows.len(), 2);
        let one = &rows[0];
        assert_eq!(
            (
                one.held,
                one.seat_taken,
                one.refused,
                one.shed,
                one.errors,
                one.expired
            ),
            (1, 1, 1, 1, 0, 0)
        );
        assert_eq!(one.latency[latency_bucket(1.5)], 1);
        assert_eq!(one.latency[latency_bucket(3.0)], 1);
        assert_eq!(one.latency[latency_bucket(1000.0)], 1);
        assert_eq!(one.latency[LATENCY_BUCKETS - 1], 1);
        let two = &rows[1];
        assert_eq!((two.errors, two.expired), (1, 3));
        assert_eq!(two.latency.iter().sum::<i64>(), 1);
        // Taken means gone.
        assert!(load.take(&shards).is_empty());
    }
}
