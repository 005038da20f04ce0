//! Presale codes copied from the main database, where they are drawn, to a shard, where
//! a claim with a code checks them (migration `20261220000000`). Codes never change once
//! drawn: a copy writes those after a code id, and leaves any already there as it is.

use sqlx::PgPool;

/// Codes read and written per statement.
const BATCH: i32 = 5_000;

/// Copies `event`'s presale codes after code id `after` from `main` to `target`, batch
/// by batch; answers the last code id copied (`after` when there was none). The
/// channels must be on `target` already (`catalog.event_rows` carries them). Ids are
/// not committed in id order: a copy from 0 is the one that cannot miss a code.
///
/// # Errors
/// A failure on either database; the codes copied before it stay (a copy is
/// idempotent, the next one starts again from `after`).
pub async fn copy_presale_codes(
    main: &PgPool,
    target: &PgPool,
    event: i64,
    after: i64,
) -> Result<i64, sqlx::Error> {
    let mut last = after;
    loop {
        let (rows, through): (String, i64) = sqlx::query_as(
            "SELECT code_rows::text, last_code_id FROM holds.presale_code_rows($1, $2, $3)",
        )
        .bind(event)
        .bind(last)
        .bind(BATCH)
        .fetch_one(main)
        .await?;
        if through == last {
            return Ok(last);
        }
        sqlx::query("SELECT holds.copy_new_channel_rows($1::jsonb)")
            .bind(rows)
            .execute(target)
            .await?;
        last = through;
    }
}

/// How many presale codes `event` has on `db` (the main database: whether a copy is
/// due).
///
/// # Errors
/// A failure of the read.
pub async fn presale_code_count(db: &PgPool, event: i64) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT count(*) FROM holds.presale_codes WHERE event_id = $1")
        .bind(event)
        .fetch_one(db)
        .await
}
