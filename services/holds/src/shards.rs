//! Holds' side of the shards (`stadium_db::Shards` routes): naming a database as a
//! shard, finding a hold's database from its key, and placing a section that has no
//! holds yet on a shard.

pub use stadium_db::{MAIN, Shards};

use sqlx::PgPool;

use crate::domain::{EventId, HoldKey, SectionId};
use crate::error::Error;

/// The database of the hold `key`: its section's, or the main one for a key that
/// carries no section (a hold made before shards existed).
///
/// # Errors
/// [`Error::Database`] when the routes cannot be read or name a shard this process has
/// no URL for.
pub async fn for_key(shards: &Shards, key: HoldKey) -> Result<&PgPool, Error> {
    match key.route() {
        Some((event, section)) if !shards.is_single() => {
            Ok(shards.for_section(event.get(), section.get()).await?)
        }
        _ => Ok(shards.main()),
    }
}

/// `result` of a call by hold key on `pool`, with a `HoldNotFound` told apart: when
/// `pool` no longer owns the key's section (gone, or fenced for a move: a section's
/// rows leave with it), the route was stale, and the answer is
/// [`Error::SectionMoved`] (retryable, the event's routes forgotten) rather than a
/// "not found" that a payment would take for a lapsed hold.
///
/// # Errors
/// `result`'s error, or [`Error::SectionMoved`]; [`Error::Database`] from the check.
pub async fn moved_or<T>(
    shards: &Shards,
    pool: &PgPool,
    key: HoldKey,
    result: Result<T, Error>,
) -> Result<T, Error> {
    let (Err(Error::HoldNotFound), Some((event, section))) = (&result, key.route()) else {
        return result;
    };
    if shards.is_single() {
        return result;
    }
    let state: Option<String> = sqlx::query_scalar(
        "SELECT state FROM holds.section_owners WHERE event_id = $1 AND section_id = $2",
    )
    .bind(event.get())
    .bind(section.get())
    .fetch_optional(pool)
    .await?;
    let main = std::ptr::eq(pool, shards.main());
    let owned = match state.as_deref() {
        Some(state) => state == "owned",
        None => main,
    };
    if owned {
        return result;
    }
    shards.forget(event.get()).await;
    Err(Error::SectionMoved(section))
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
/// [`Error::SectionNotEmpty`] when the main database has rows of the section (it must
/// be moved instead; the shard's ownership is taken back); [`Error::Database`] (also
/// for a shard this process has no URL for).
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
    let mut tx = shards.main().begin().await?;
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
    shards.forget(event.get()).await;
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
