//! The shard phase of the holds benchmark: the uniform claims again with every other
//! section of the venue on a second database (shard `s1`, on the same PostgreSQL
//! server), beside the same claims on one database earlier in the same run.

use holds::domain::{EventId, SectionId};
use loadtest::floor::FloorResult;
use loadtest::floor::seed::{self, Database, Seeded};
use stadium_db::Shards;

/// The second database's name as a shard.
pub const NAME: &str = "s1";

/// Creates and migrates the second database on `server_url` and names it [`NAME`].
///
/// # Errors
/// The database cannot be created, migrated or named.
pub async fn open(server_url: &str) -> FloorResult<Database> {
    let shard = seed::open(None, server_url, "stadium_claim_bench_shard").await?;
    holds::shards::register(&shard.pool, NAME).await?;
    Ok(shard)
}

/// Places the odd sections of `seeded`'s venue (`sections` of them) on `shard` (none
/// may have holds yet) and copies the catalog there; returns the sections placed.
///
/// # Errors
/// A section with holds, or a database.
pub async fn spread(
    main: &Database,
    shard: &Database,
    seeded: &Seeded,
    sections: u64,
) -> FloorResult<u64> {
    let shards = Shards::new(
        main.pool.clone(),
        [(NAME.to_owned(), shard.pool.clone())].into(),
    );
    let event = EventId::try_from(seeded.event)?;
    let mut placed = 0;
    for index in (1..sections).step_by(2) {
        let section = SectionId::try_from(seeded.section_id(index))?;
        holds::shards::place_section(&shards, event, section, NAME).await?;
        placed += 1;
    }
    holds::catalog_copy::Copies::default()
        .refresh(&shards)
        .await?;
    Ok(placed)
}

/// Held rows of the event on both databases.
///
/// # Errors
/// A database.
pub async fn held_rows(main: &Database, shard: &Database, event: i64) -> FloorResult<i64> {
    Ok(seed::held_rows(&main.pool, event).await? + seed::held_rows(&shard.pool, event).await?)
}
