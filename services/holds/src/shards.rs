//! The databases holds writes seats to: the main database and named shards, and the
//! routes of an event's sections to them (`catalog.section_shards` on the main
//! database, migration `20261210000000`).
//!
//! A section with no route is on `main`; with no shard configured, every call goes to
//! the main database without looking a route up. Routes are read per event and kept for
//! [`ROUTE_TTL`]: a stale route can only fail, because every shard checks that it owns
//! the sections written to it (`UNAVAILABLE/SECTION_MOVED`), and such a failure drops
//! the event's routes so the retry reads them anew. A hold is found from its key, which
//! carries its event and section ([`HoldKey::route`]); keys that carry none are of holds
//! made before shards existed, on the main database.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;

use crate::domain::{EventId, HoldKey, SectionId};
use crate::error::Error;

/// The main database's name as a shard.
pub const MAIN: &str = "main";

/// How long an event's routes are trusted before they are read again.
pub const ROUTE_TTL: Duration = Duration::from_secs(1);

/// Sections of one event routed off the main database, by shard name.
type Routes = Arc<HashMap<SectionId, String>>;

/// The main database and the shards, with the routes read so far.
#[derive(Debug, Clone)]
pub struct Shards {
    main: PgPool,
    others: BTreeMap<String, PgPool>,
    routes: moka::future::Cache<EventId, Routes>,
}

impl Shards {
    /// The main database alone: every section is there.
    pub fn single(main: PgPool) -> Self {
        Self::new(main, BTreeMap::new())
    }

    /// The main database and `others` by name (never `main`).
    pub fn new(main: PgPool, others: BTreeMap<String, PgPool>) -> Self {
        Self {
            main,
            others,
            routes: moka::future::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(ROUTE_TTL)
                .build(),
        }
    }

    /// The main database (the catalog, and every section no route sends elsewhere).
    pub fn main(&self) -> &PgPool {
        &self.main
    }

    /// Every database, the main one first, with its shard name.
    pub fn all(&self) -> impl Iterator<Item = (&str, &PgPool)> {
        std::iter::once((MAIN, &self.main)).chain(self.others.iter().map(|(n, p)| (n.as_str(), p)))
    }

    /// The shards besides the main database, by name.
    pub fn others(&self) -> impl Iterator<Item = (&str, &PgPool)> {
        self.others.iter().map(|(n, p)| (n.as_str(), p))
    }

    /// The name of the shard `section` of `event` is routed to.
    ///
    /// # Errors
    /// [`Error::Database`] when the routes cannot be read.
    pub async fn shard_of(&self, event: EventId, section: SectionId) -> Result<String, Error> {
        if self.others.is_empty() {
            return Ok(MAIN.to_owned());
        }
        let routes = self
            .routes
            .try_get_with(event, read_routes(&self.main, event))
            .await
            .map_err(crate::service::unshared)?;
        Ok(routes
            .get(&section)
            .cloned()
            .unwrap_or_else(|| MAIN.to_owned()))
    }

    /// The database of `section` of `event`.
    ///
    /// # Errors
    /// As [`Self::shard_of`]; [`Error::ShardNotConfigured`] when the route names a
    /// shard this process has no URL for.
    pub async fn for_section(&self, event: EventId, section: SectionId) -> Result<&PgPool, Error> {
        let name = self.shard_of(event, section).await?;
        self.named(&name)
    }

    /// The database of the hold `key`: its section's, or the main one for a key that
    /// carries no section.
    ///
    /// # Errors
    /// As [`Self::for_section`].
    pub async fn for_key(&self, key: HoldKey) -> Result<&PgPool, Error> {
        match key.route() {
            Some((event, section)) if !self.others.is_empty() => {
                self.for_section(event, section).await
            }
            _ => Ok(&self.main),
        }
    }

    /// The database named `name`.
    ///
    /// # Errors
    /// [`Error::ShardNotConfigured`].
    pub fn named(&self, name: &str) -> Result<&PgPool, Error> {
        if name == MAIN {
            return Ok(&self.main);
        }
        self.others
            .get(name)
            .ok_or_else(|| Error::ShardNotConfigured(name.to_owned()))
    }

    /// Drops the routes kept for `event` when `error` says a route was stale, so the
    /// next call reads them again.
    pub async fn forget_if_stale(&self, event: EventId, error: &Error) {
        if error.is_stale_route() {
            self.routes.invalidate(&event).await;
        }
    }
}

/// The sections of `event` routed off the main database.
async fn read_routes(main: &PgPool, event: EventId) -> Result<Routes, Error> {
    let rows: Vec<(i64, String)> = sqlx::query_as(
        "SELECT section_id, shard FROM catalog.section_shards \
         WHERE event_id = $1 AND shard <> 'main'",
    )
    .bind(event.get())
    .fetch_all(main)
    .await?;
    let mut routes = HashMap::with_capacity(rows.len());
    for (section, shard) in rows {
        let section = SectionId::try_from(section)
            .map_err(|_| Error::CorruptRow(format!("section_shards: section {section}")))?;
        routes.insert(section, shard);
    }
    Ok(Arc::new(routes))
}

/// Names the database `pool` as the shard `name` (`holds.register_shard`): a database
/// is one shard, under one name, for good once it holds seats.
///
/// # Errors
/// [`Error::Database`] (SQLSTATE SS003 when it already holds seats under another name).
pub async fn register(pool: &PgPool, name: &str) -> Result<(), Error> {
    sqlx::query("SELECT holds.register_shard($1)")
        .bind(name)
        .execute(pool)
        .await?;
    Ok(())
}

/// Places `section` of `event`, which has no seat rows yet, on the shard `shard`:
/// owned there first, then given away by the main database and routed, in one
/// transaction that locks `holds.seat_holds` against writes for its few milliseconds
/// (so no claim of the section can commit on the main database after it looked).
///
/// # Errors
/// [`Error::ShardNotConfigured`]; [`Error::SectionNotEmpty`] when the main database
/// has rows of the section (it must be moved instead; the shard's ownership is taken
/// back); [`Error::Database`].
pub async fn place_section(
    shards: &Shards,
    event: EventId,
    section: SectionId,
    shard: &str,
) -> Result<(), Error> {
    let target = shards.named(shard)?;
    if shard == MAIN {
        return Err(Error::invalid(
            "shard",
            "sections are on main unless placed elsewhere",
        ));
    }
    set_owner(target, event, section, "owned").await?;
    let mut tx = shards.main.begin().await?;
    sqlx::query("LOCK TABLE holds.seat_holds IN SHARE ROW EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await?;
    let rows: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM holds.seat_holds WHERE event_id = $1 AND section_id = $2",
    )
    .bind(event.get())
    .bind(section.get())
    .fetch_one(&mut *tx)
    .await?;
    if rows > 0 {
        tx.rollback().await?;
        set_owner(target, event, section, "gone").await?;
        return Err(Error::SectionNotEmpty(section));
    }
    set_owner(&mut *tx, event, section, "gone").await?;
    sqlx::query(
        "INSERT INTO catalog.section_shards (event_id, section_id, shard) VALUES ($1, $2, $3) \
         ON CONFLICT (event_id, section_id) DO UPDATE SET shard = EXCLUDED.shard, changed_at = now()",
    )
    .bind(event.get())
    .bind(section.get())
    .bind(shard)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    shards.routes.invalidate(&event).await;
    Ok(())
}

/// Records `state` for (`event`, `section`) in a database's own section record.
async fn set_owner<'e>(
    db: impl sqlx::PgExecutor<'e>,
    event: EventId,
    section: SectionId,
    state: &str,
) -> Result<(), Error> {
    sqlx::query(
        "INSERT INTO holds.section_owners (event_id, section_id, state) VALUES ($1, $2, $3) \
         ON CONFLICT (event_id, section_id) \
         DO UPDATE SET state = EXCLUDED.state, fenced_until = NULL, changed_at = now()",
    )
    .bind(event.get())
    .bind(section.get())
    .bind(state)
    .execute(db)
    .await?;
    Ok(())
}
