//! A request id's holds on one database. Every claim of a fan's request id gets a key
//! of one family (`HoldKey::for_request`: the same first 12 bytes), so whether the
//! request made a hold here is one probe of the hold key index (migration
//! `20261210000001`).

use sqlx::PgExecutor;

use crate::domain::HoldKey;
use crate::error::Error;

/// A hold of `family`'s family on this database other than `except`, whatever its
/// status, if any.
///
/// # Errors
/// [`Error::Database`].
pub async fn other_of_family<'e>(
    db: impl PgExecutor<'e>,
    family: HoldKey,
    except: Option<HoldKey>,
) -> Result<Option<HoldKey>, Error> {
    let found = sqlx::query_scalar!(
        r#"SELECT h.hold_key AS "hold_key!" FROM holds.seat_holds h
           WHERE h.hold_key BETWEEN holds.hold_key_family_first($1)
                                AND holds.hold_key_family_last($1)
             AND h.hold_key IS DISTINCT FROM $2
           LIMIT 1"#,
        family.uuid(),
        except.map(HoldKey::uuid) as Option<uuid::Uuid>,
    )
    .fetch_optional(db)
    .await?;
    Ok(found.map(HoldKey::from))
}
