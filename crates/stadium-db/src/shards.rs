//! The databases seats live on: the main database and named shards, and the routes of
//! an event's sections to them (`catalog.section_shards` on the main database,
//! migration `20261210000000`). Every service that reads or writes seat rows routes
//! through one [`Shards`].
//!
//! A section with no route is on [`MAIN`]; with no shard configured, every call goes
//! to the main database without looking a route up. Routes are read per event and kept
//! for [`ROUTE_TTL`]: a stale route can only fail, because every shard checks that it
//! owns the sections written to it (SQLSTATE SS001/SS002, see
//! [`DbFailure::SectionElsewhere`](crate::DbFailure)), and [`Shards::forget`] drops an
//! event's routes so a retry reads them anew.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;

use crate::pool::{PoolOptions, connect};

/// The main database's name as a shard.
pub const MAIN: &str = "main";

/// How long an event's routes are trusted before they are read again.
pub const ROUTE_TTL: Duration = Duration::from_secs(1);

/// One shard's name and PostgreSQL URL, as `--shard NAME=URL` gives it.
#[derive(Clone, PartialEq, Eq)]
pub struct ShardUrl {
    /// The shard's name, as routes give it.
    pub name: String,
    /// Its PostgreSQL URL (never logged).
    pub url: String,
}

impl std::fmt::Debug for ShardUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}=<redacted>", self.name)
    }
}

/// Parses `NAME=URL`: NAME a lowercase letter, then up to 62 lowercase letters, digits,
/// `_` or `-`, not `main`; URL a `postgres://` or `postgresql://` URL. For clap's
/// `value_parser`.
///
/// # Errors
/// A message naming what is wrong (never the URL).
pub fn parse_shard(raw: &str) -> Result<ShardUrl, String> {
    let (name, url) = raw
        .split_once('=')
        .ok_or_else(|| "expected NAME=URL".to_owned())?;
    let mut chars = name.chars();
    let well_formed = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && name.len() <= 63
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if !well_formed {
        return Err(format!(
            "shard name {:?}: a lowercase letter, then up to 62 lowercase letters, digits, _ or -",
            name.chars().take(64).collect::<String>()
        ));
    }
    if name == MAIN {
        return Err("shard name main is the main database's URL".to_owned());
    }
    if !url.starts_with("postgres://") && !url.starts_with("postgresql://") {
        return Err(format!("shard {name}: the URL must start with postgres://"));
    }
    Ok(ShardUrl {
        name: name.to_owned(),
        url: url.to_owned(),
    })
}

/// Sections of one event routed off the main database, by shard name.
type Routes = Arc<HashMap<i64, String>>;

/// The main database and the shards, with the routes read so far.
#[derive(Debug, Clone)]
pub struct Shards {
    main: PgPool,
    others: BTreeMap<String, PgPool>,
    routes: moka::future::Cache<i64, Routes>,
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

    /// `main` and a pool per shard of `shards`, each opened with `options`.
    ///
    /// # Errors
    /// As [`connect`], for the first database that cannot be reached.
    pub async fn connect(
        main: PgPool,
        shards: &[ShardUrl],
        options: &PoolOptions,
    ) -> Result<Self, sqlx::Error> {
        let mut others = BTreeMap::new();
        for shard in shards {
            others.insert(shard.name.clone(), connect(&shard.url, options).await?);
        }
        Ok(Self::new(main, others))
    }

    /// The main database (the catalog, and every section no route sends elsewhere).
    pub fn main(&self) -> &PgPool {
        &self.main
    }

    /// Whether the main database is the only one.
    pub fn is_single(&self) -> bool {
        self.others.is_empty()
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
    /// The routes cannot be read from the main database.
    pub async fn shard_of(&self, event: i64, section: i64) -> Result<String, sqlx::Error> {
        if self.others.is_empty() {
            return Ok(MAIN.to_owned());
        }
        let routes = self
            .routes
            .try_get_with(event, read_routes(&self.main, event))
            .await
            .map_err(|shared| {
                Arc::try_unwrap(shared)
                    .unwrap_or_else(|shared| sqlx::Error::Protocol(shared.to_string()))
            })?;
        Ok(routes
            .get(&section)
            .cloned()
            .unwrap_or_else(|| MAIN.to_owned()))
    }

    /// The database of `section` of `event`.
    ///
    /// # Errors
    /// As [`Self::shard_of`]; as [`Self::named`].
    pub async fn for_section(&self, event: i64, section: i64) -> Result<&PgPool, sqlx::Error> {
        let name = self.shard_of(event, section).await?;
        self.named(&name)
    }

    /// The database named `name`.
    ///
    /// # Errors
    /// `sqlx::Error::Configuration` when this process has no URL for it (a route to a
    /// shard it was not given): services answer it as an unavailable database.
    pub fn named(&self, name: &str) -> Result<&PgPool, sqlx::Error> {
        if name == MAIN {
            return Ok(&self.main);
        }
        self.others.get(name).ok_or_else(|| {
            sqlx::Error::Configuration(format!("no URL for shard {name} (--shard)").into())
        })
    }

    /// Drops the routes kept for `event`, so the next call reads them again.
    pub async fn forget(&self, event: i64) {
        self.routes.invalidate(&event).await;
    }
}

/// The sections of `event` routed off the main database.
async fn read_routes(main: &PgPool, event: i64) -> Result<Routes, sqlx::Error> {
    let rows: Vec<(i64, String)> = sqlx::query_as(
        "SELECT section_id, shard FROM catalog.section_shards \
         WHERE event_id = $1 AND shard <> 'main'",
    )
    .bind(event)
    .fetch_all(main)
    .await?;
    Ok(Arc::new(rows.into_iter().collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_urls_are_named_and_never_logged() {
        let shard = parse_shard("west-2=postgresql://b/y").unwrap();
        assert_eq!(shard.name, "west-2");
        assert!(!format!("{shard:?}").contains("postgresql"));
        for bad in [
            "east",
            "main=postgres://a",
            "East=postgres://a",
            "1=postgres://a",
            "e=http://a",
        ] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }
}
