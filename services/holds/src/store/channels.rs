//! Channels and presale codes (migration `…_holds_channels.sql`): a channel's seats are
//! `blocked` rows of kind `channel` under its own hold key, so the one unique index
//! keeps them from everyone else; a fan with one of its codes claims them with
//! `holds.claim_with_code`, one statement like every claim.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor};

use super::claim::{ClaimRow, Claimed, claim_row, decide};
use crate::domain::{Claim, Claimant, EventId, HoldKey, Limit, PresaleCode, SeatId, SectionId};
use crate::error::Error;

/// A channel and its seats by state now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelState {
    /// Its id.
    pub channel_id: i64,
    /// Its event.
    pub event_id: i64,
    /// Its name, unique per event.
    pub name: String,
    /// When the remaining seats go to general sale, if set.
    pub release_at: Option<DateTime<Utc>>,
    /// When they did; `None` while live.
    pub released_at: Option<DateTime<Utc>>,
    /// Seats ever given to it.
    pub seats: i64,
    /// Seats still set aside for it.
    pub available: i64,
    /// Seats held (unexpired) by its fans.
    pub held: i64,
    /// Seats sold to its fans.
    pub booked: i64,
    /// Presale codes (its key aside).
    pub codes: i64,
    /// Seats in live holds and bookings made with those codes.
    pub code_seats_in_use: i64,
}

impl ChannelState {
    /// Adds the seat counts of the same channel on another database (`other`'s own
    /// fields aside: the main database's record of the channel is the one kept).
    pub fn add_counts(&mut self, other: &ChannelState) {
        self.seats += other.seats;
        self.available += other.available;
        self.held += other.held;
        self.booked += other.booked;
        self.code_seats_in_use += other.code_seats_in_use;
    }
}

fn seat_ids(ids: Option<Vec<i64>>) -> Vec<SeatId> {
    ids.unwrap_or_default()
        .into_iter()
        .filter_map(|s| SeatId::try_from(s).ok())
        .collect()
}

/// Creates channel `name` of `event` with its key (`key`'s SHA-256 stored) and
/// returns its id and the key's code id.
///
/// # Errors
/// [`Error::EventNotFound`]; [`Error::ChannelExists`]; [`Error::Database`].
pub async fn create_channel(
    conn: &mut PgConnection,
    event: EventId,
    name: &str,
    release_at: Option<DateTime<Utc>>,
    created_by: &str,
    key: &PresaleCode,
) -> Result<(i64, i64), Error> {
    let known = sqlx::query_scalar!(
        r#"SELECT 1 AS "one!" FROM catalog.event_settings WHERE event_id = $1"#,
        event.get()
    )
    .fetch_optional(&mut *conn)
    .await?;
    if known.is_none() {
        return Err(Error::EventNotFound);
    }
    let channel = sqlx::query_scalar!(
        "INSERT INTO holds.channels (event_id, name, block_key, release_at, created_by) \
         VALUES ($1, $2, gen_random_uuid(), $3, $4) \
         ON CONFLICT (event_id, name) DO NOTHING RETURNING channel_id",
        event.get(),
        name,
        release_at,
        created_by,
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(Error::ChannelExists)?;
    let key_code = sqlx::query_scalar!(
        "INSERT INTO holds.presale_codes (channel_id, event_id, code_sha256, kind) \
         VALUES ($1, $2, $3, 'key') RETURNING code_id",
        channel,
        event.get(),
        &key.sha256()[..],
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok((channel, key_code))
}

/// What an assignment asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assignment {
    /// These seats.
    Seats(Vec<i64>),
    /// The best free seats of a price category.
    Best {
        /// The category code.
        category: String,
        /// How many.
        quantity: i32,
    },
}

/// Gives `seats` to the live channel `channel` on this database, all or nothing (the
/// seats of the sections this database holds; the service splits an assignment over
/// databases); returns the seats given.
///
/// # Errors
/// [`Error::ChannelNotFound`]; [`Error::SeatsNotInSection`] (not seats of the event's
/// venue); [`Error::SeatsInAnotherChannel`]; [`Error::SeatTaken`] (the taken seats, no
/// alternatives); [`Error::Database`].
pub async fn assign(
    conn: &mut PgConnection,
    channel: i64,
    seats: &[i64],
) -> Result<Vec<SeatId>, Error> {
    let row = sqlx::query!(
        r#"SELECT outcome AS "outcome!", seat_ids FROM holds.assign_channel_seats($1, $2)"#,
        channel,
        seats,
    )
    .fetch_one(&mut *conn)
    .await?;
    let seats = row.seat_ids;
    match row.outcome.as_str() {
        "assigned" => Ok(seat_ids(seats)),
        "channel_not_found" => Err(Error::ChannelNotFound),
        "seats_not_in_event" => Err(Error::SeatsNotInSection(seat_ids(seats))),
        "in_another_channel" => Err(Error::SeatsInAnotherChannel(seat_ids(seats))),
        "taken" => Err(Error::SeatTaken {
            taken: seat_ids(seats),
            alternatives: Vec::new(),
        }),
        other => Err(Error::CorruptRow(format!(
            "assign: unknown outcome {other}"
        ))),
    }
}

/// The `quantity` best free seats of price category `category` among `sections` of
/// `event` on this database that no channel has, each with its squared distance to its
/// section's best-view point, nearest first (`holds.channel_candidates`).
///
/// # Errors
/// [`Error::Database`].
pub async fn candidates<'e>(
    db: impl PgExecutor<'e>,
    event: EventId,
    sections: &[i64],
    category: &str,
    quantity: i32,
) -> Result<Vec<(i64, f64)>, Error> {
    let rows = sqlx::query!(
        r#"SELECT seat_id AS "seat_id!", distance AS "distance!"
           FROM holds.channel_candidates($1, $2, $3, $4)"#,
        event.get(),
        sections,
        category,
        quantity,
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.seat_id, r.distance)).collect())
}

/// The section of each of `seats` that is a seat of `event`'s venue, as
/// (seat, section); seats of no section of it are left out.
///
/// # Errors
/// [`Error::Database`].
pub async fn seat_sections<'e>(
    db: impl PgExecutor<'e>,
    event: EventId,
    seats: &[i64],
) -> Result<Vec<(i64, i64)>, Error> {
    let rows = sqlx::query!(
        r#"SELECT seat_id AS "seat_id!", section_id AS "section_id!"
           FROM catalog.event_seats WHERE event_id = $1 AND seat_id = ANY($2)"#,
        event.get(),
        seats,
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.seat_id, r.section_id))
        .collect())
}

/// The channels of `event` as `catalog.copy_all` takes them (the copy of them on a
/// shard, `catalog.event_rows`).
///
/// # Errors
/// [`Error::Database`].
pub async fn channel_rows<'e>(db: impl PgExecutor<'e>, event: EventId) -> Result<String, Error> {
    let rows = sqlx::query_scalar!(
        r#"SELECT jsonb_build_object('holds.channels', catalog.event_rows($1) -> 'holds.channels')::text
              AS "rows!""#,
        event.get(),
    )
    .fetch_one(db)
    .await?;
    Ok(rows)
}

/// Writes the channels of `rows` (as [`channel_rows`] gives them) that `db` does not
/// have yet, leaving those it has as they are (`holds.copy_new_channel_rows`: no row
/// rewritten, none locked that an assignment or a claim holds).
///
/// # Errors
/// [`Error::Database`].
pub async fn copy_new_channels<'e>(db: impl PgExecutor<'e>, rows: &str) -> Result<(), Error> {
    sqlx::query("SELECT holds.copy_new_channel_rows($1::jsonb)")
        .bind(rows)
        .execute(db)
        .await?;
    Ok(())
}

/// Stores presale codes (their SHA-256) for the live channel `channel`; returns the
/// event and the first code id stored (the others follow it).
///
/// # Errors
/// [`Error::ChannelNotFound`]; [`Error::Database`] (a code drawn twice: 23505, for
/// the caller to draw again).
pub async fn create_codes(
    conn: &mut PgConnection,
    channel: i64,
    codes: &[PresaleCode],
    max_seats: Option<i32>,
    max_seats_per_fan: Option<i32>,
) -> Result<(EventId, i64), Error> {
    let hashes: Vec<Vec<u8>> = codes.iter().map(|c| c.sha256().to_vec()).collect();
    let stored = sqlx::query!(
        r#"WITH stored AS (
               INSERT INTO holds.presale_codes
                   (channel_id, event_id, code_sha256, kind, max_seats, max_seats_per_fan)
               SELECT c.channel_id, c.event_id, h, 'code', $3, $4
               FROM holds.channels c, unnest($2::bytea[]) AS h
               WHERE c.channel_id = $1 AND c.released_at IS NULL
               RETURNING event_id, code_id)
           SELECT min(event_id) AS event_id, min(code_id) AS first_code_id FROM stored"#,
        channel,
        &hashes,
        max_seats,
        max_seats_per_fan,
    )
    .fetch_one(&mut *conn)
    .await?;
    match (stored.event_id, stored.first_code_id) {
        (Some(event), Some(first)) => Ok((
            EventId::try_from(event).map_err(|e| Error::CorruptRow(e.to_string()))?,
            first,
        )),
        _ => Err(Error::ChannelNotFound),
    }
}

/// Releases the channel's remaining seats to general sale; returns how many this call
/// released (0 when released before).
///
/// # Errors
/// [`Error::ChannelNotFound`]; [`Error::Database`].
pub async fn release(conn: &mut PgConnection, channel: i64) -> Result<u64, Error> {
    let row = sqlx::query!(
        r#"SELECT outcome AS "outcome!", seats AS "seats!" FROM holds.release_channel($1)"#,
        channel
    )
    .fetch_one(&mut *conn)
    .await?;
    match row.outcome.as_str() {
        "released" => Ok(u64::try_from(row.seats).unwrap_or(0)),
        "channel_not_found" => Err(Error::ChannelNotFound),
        other => Err(Error::CorruptRow(format!(
            "release: unknown outcome {other}"
        ))),
    }
}

/// Releases every live channel whose `release_at` has passed, and the seats still set
/// aside here for a channel released already (on a shard the copy can bring the release
/// first); returns how many seats went to general sale.
///
/// # Errors
/// [`Error::Database`].
pub async fn release_due(conn: &mut PgConnection) -> Result<u64, Error> {
    let seats = sqlx::query_scalar!(
        r#"SELECT coalesce(sum(r.seats), 0)::bigint AS "seats!"
           FROM holds.channels c, holds.release_channel(c.channel_id) r
           WHERE (c.released_at IS NULL AND c.release_at <= now())
              OR (c.released_at IS NOT NULL
                  AND EXISTS (SELECT 1 FROM holds.seat_holds h
                              WHERE h.hold_key = c.block_key AND h.status = 'blocked'))"#
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(u64::try_from(seats).unwrap_or(0))
}

/// The channels of `event` (or the one channel `channel`), in creation order.
///
/// # Errors
/// [`Error::Database`].
pub async fn channels(
    conn: &mut PgConnection,
    event: Option<EventId>,
    channel: Option<i64>,
) -> Result<Vec<ChannelState>, Error> {
    let rows = sqlx::query_as!(
        ChannelState,
        r#"SELECT c.channel_id, c.event_id, c.name, c.release_at, c.released_at,
                  (SELECT count(*) FROM holds.channel_seats cs
                   WHERE cs.channel_id = c.channel_id) AS "seats!",
                  (SELECT count(*) FROM holds.seat_holds h
                   WHERE h.hold_key = c.block_key AND h.status = 'blocked') AS "available!",
                  (SELECT count(*) FROM holds.seat_holds h
                   WHERE h.event_id = c.event_id AND h.channel_id = c.channel_id
                     AND h.status = 'held' AND h.expires_at > now()) AS "held!",
                  (SELECT count(*) FROM holds.seat_holds h
                   WHERE h.event_id = c.event_id AND h.channel_id = c.channel_id
                     AND h.status = 'booked') AS "booked!",
                  (SELECT count(*) FROM holds.presale_codes pc
                   WHERE pc.channel_id = c.channel_id AND pc.kind = 'code') AS "codes!",
                  (SELECT count(*) FROM holds.presale_codes pc
                   JOIN holds.seat_holds h ON h.presale_code_id = pc.code_id
                   WHERE pc.channel_id = c.channel_id AND pc.kind = 'code'
                     AND h.status IN ('held', 'booked')
                     AND (h.status = 'booked' OR h.expires_at > now()))
                    AS "code_seats_in_use!"
           FROM holds.channels c
           WHERE ($1::bigint IS NULL OR c.event_id = $1)
             AND ($2::bigint IS NULL OR c.channel_id = $2)
           ORDER BY c.channel_id"#,
        event.map(|e| e.get()),
        channel,
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows)
}

/// A fan's claim of channel seats with `code`, in one statement (its own transaction).
///
/// # Errors
/// As `store::claim`, and [`Error::PresaleCodeInvalid`]; [`Error::SeatsNotInChannel`];
/// [`Error::SeatTaken`] (channel seats another fan of the channel holds, no
/// alternatives); [`Error::LimitExceeded`] with [`Limit::CodeSeats`] or
/// [`Limit::CodeSeatsPerFan`].
pub async fn claim_with_code<'e>(
    db: impl PgExecutor<'e>,
    claim: &Claim,
    code: &PresaleCode,
) -> Result<Claimed, Error> {
    let Claimant::Fan { fan, admission_jti } = &claim.claimant else {
        return Err(Error::CorruptRow(
            "a presale claim that is not a fan's".into(),
        ));
    };
    let key = claim.hold_key();
    let record = sqlx::query!(
        r#"SELECT outcome AS "outcome!", detail, limit_max, seat_ids,
                  expires_in_ms AS "expires_in_ms!", ttl_ms AS "ttl_ms!", expired AS "expired!"
           FROM holds.claim_with_code($1, $2, $3, $4, $5, $6, $7)"#,
        key.uuid(),
        claim.event.get(),
        claim.section.get(),
        &claim.seats.raw(),
        fan.as_str(),
        admission_jti,
        &code.sha256()[..],
    )
    .fetch_one(db)
    .await?;
    code_outcome(
        claim_row!(record),
        key,
        claim.event,
        claim.section,
        claim.seats.as_slice(),
        fan.as_str(),
    )
}

/// What a claim with a code came to: its own refusals (the code, the channel, the
/// code's limits), else as every claim (`decide`).
pub(super) fn code_outcome(
    row: ClaimRow,
    key: HoldKey,
    event: EventId,
    section: SectionId,
    seats: &[SeatId],
    fan: &str,
) -> Result<Claimed, Error> {
    let max = row
        .limit_max
        .and_then(|m| u64::try_from(m).ok())
        .unwrap_or(0);
    let code_limit = |limit| Error::LimitExceeded {
        limit,
        max,
        hold: None,
    };
    match (row.outcome.as_str(), row.detail.as_deref()) {
        ("code_invalid", _) => Err(Error::PresaleCodeInvalid),
        ("not_in_channel", _) => Err(Error::SeatsNotInChannel(seat_ids(row.seat_ids))),
        ("channel_seat_taken", _) => Err(Error::SeatTaken {
            taken: seat_ids(row.seat_ids),
            alternatives: Vec::new(),
        }),
        ("limit_exceeded", Some("code_seats")) => Err(code_limit(Limit::CodeSeats)),
        ("limit_exceeded", Some("code_seats_per_fan")) => Err(code_limit(Limit::CodeSeatsPerFan)),
        _ => decide(row, key, event, section, seats, fan),
    }
}
