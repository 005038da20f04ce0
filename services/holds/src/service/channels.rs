//! Channels in the service: each change is one short transaction per database; keys and
//! codes are drawn here and leave only in the answer.
//!
//! The main database is the record of channels and codes (created there, copied to the
//! shards with the same ids: `catalog_copy`); a channel's seats are rows on the database
//! of their section, so giving, releasing and counting them runs on every database
//! concerned (migration `20261220000000`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use stadium_db::{MAIN, copy_presale_codes};

use super::HoldsService;
use crate::domain::best::Target;
use crate::domain::presale::{CODE_LENGTH, KEY_LENGTH};
use crate::domain::{EventId, PresaleCode, SeatId};
use crate::error::Error;
use crate::store;
use crate::store::{Assignment, ChannelState};

/// Codes drawn again when one collides with a stored code (60 bits: practically never).
const CODE_DRAWS: u32 = 3;

/// How many times best seats for a channel are chosen again when a seat chosen was
/// claimed meanwhile.
const ASSIGN_ROUNDS: u32 = 3;

impl HoldsService {
    /// Creates channel `name` of `event`; answers it with its key (shown once). The
    /// channel and its key are copied to every shard as codes are
    /// ([`Self::create_presale_codes`]).
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::ChannelExists`]; [`Error::Database`].
    pub async fn create_channel(
        &self,
        event: EventId,
        name: &str,
        release_at: Option<DateTime<Utc>>,
        actor: &str,
    ) -> Result<(ChannelState, PresaleCode), Error> {
        let key = PresaleCode::generate(KEY_LENGTH);
        let mut tx = self.shards.main().begin().await?;
        let (id, key_code) =
            store::channels::create_channel(&mut tx, event, name, release_at, actor, &key).await?;
        let channel = one(store::channels::channels(&mut tx, None, Some(id)).await?)?;
        tx.commit().await?;
        self.copy_codes(event, key_code - 1).await;
        Ok((channel, key))
    }

    /// Gives seats to channel `channel`; answers the channel and the seats given. The
    /// seats of sections on several databases are given on each (the channel copied
    /// there first), in one transaction per database committed once every database
    /// gave its seats: a refusal anywhere gives none.
    ///
    /// # Errors
    /// [`Error::ChannelNotFound`]; [`Error::SeatsNotInSection`];
    /// [`Error::SeatsInAnotherChannel`]; [`Error::SeatTaken`]; [`Error::NotEnoughSeats`]
    /// (best seats: fewer of the category free); [`Error::InvalidField`] naming
    /// `best.price_category` (no seat of the venue has it); [`Error::Database`].
    pub async fn assign_channel_seats(
        &self,
        channel: i64,
        assignment: &Assignment,
        actor: &str,
    ) -> Result<(ChannelState, Vec<SeatId>), Error> {
        let mut conn = self.shards.main().acquire().await?;
        let event = one(store::channels::channels(&mut conn, None, Some(channel)).await?)?.event_id;
        drop(conn);
        let event = EventId::try_from(event).map_err(|e| Error::CorruptRow(e.to_string()))?;
        let seats = match assignment {
            Assignment::Seats(seats) => self.assign_spread(event, channel, seats, actor).await?,
            Assignment::Best { category, quantity } => {
                self.assign_best(event, channel, category, *quantity, actor)
                    .await?
            }
        };
        Ok((self.channel_state(channel).await?, seats))
    }

    /// Gives `seats` of `event` to `channel` on the databases of their sections, all or
    /// nothing; answers them ascending.
    async fn assign_spread(
        &self,
        event: EventId,
        channel: i64,
        seats: &[i64],
        actor: &str,
    ) -> Result<Vec<SeatId>, Error> {
        let placed = store::channels::seat_sections(self.shards.main(), event, seats).await?;
        let mut unknown: Vec<i64> = seats
            .iter()
            .copied()
            .filter(|seat| !placed.iter().any(|(s, _)| s == seat))
            .collect();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            unknown.dedup();
            return Err(Error::SeatsNotInSection(
                unknown
                    .into_iter()
                    .filter_map(|s| SeatId::try_from(s).ok())
                    .collect(),
            ));
        }
        // One order of databases (by name) for every assignment, and seats in order on
        // each, so two assignments never wait for each other across databases.
        let mut by_database: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for (seat, section) in placed {
            let shard = self.shards.shard_of(event.get(), section).await?;
            by_database.entry(shard).or_default().push(seat);
        }
        for shard in by_database.keys().filter(|name| *name != MAIN) {
            let pool = self.shards.named(shard)?;
            let rows = store::channels::channel_rows(self.shards.main(), event).await?;
            store::channels::copy_new_channels(pool, &rows).await?;
        }
        let mut open = Vec::with_capacity(by_database.len());
        let mut given = Vec::with_capacity(seats.len());
        for (shard, seats) in &by_database {
            let mut tx = self.shards.named(shard)?.begin().await?;
            store::record_actor(&mut tx, actor).await?;
            given.extend(store::channels::assign(&mut tx, channel, seats).await?);
            open.push(tx);
        }
        for tx in open {
            tx.commit().await?;
        }
        given.sort_unstable();
        Ok(given)
    }

    /// Gives `channel` the `quantity` best free seats of price category `category` of
    /// `event` over every database (each offers its best; the nearest to their section's
    /// best-view point win); a seat claimed meanwhile makes it choose again, up to
    /// [`ASSIGN_ROUNDS`] times.
    async fn assign_best(
        &self,
        event: EventId,
        channel: i64,
        category: &str,
        quantity: i32,
        actor: &str,
    ) -> Result<Vec<SeatId>, Error> {
        let layout = self.event_layout(event).await?;
        let sections = layout
            .sections_for(&Target::Category(category.to_owned()))
            .map_err(|_| {
                Error::invalid(
                    "best.price_category",
                    "no seat of the event's venue has this price category",
                )
            })?;
        let mut by_database: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for section in sections {
            let shard = self.shards.shard_of(event.get(), section.get()).await?;
            by_database.entry(shard).or_default().push(section.get());
        }
        let wanted = usize::try_from(quantity).unwrap_or(0);
        let mut round = 1;
        loop {
            let mut offered = Vec::new();
            for (shard, sections) in &by_database {
                let pool = self.shards.named(shard)?;
                offered.extend(
                    store::channels::candidates(pool, event, sections, category, quantity).await?,
                );
            }
            if offered.len() < wanted {
                return Err(Error::NotEnoughSeats);
            }
            offered.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            let chosen: Vec<i64> = offered.iter().take(wanted).map(|(seat, _)| *seat).collect();
            match self.assign_spread(event, channel, &chosen, actor).await {
                Err(Error::SeatTaken { .. }) if round < ASSIGN_ROUNDS => round += 1,
                answer => return answer,
            }
        }
    }

    /// Draws `count` presale codes for channel `channel` and stores their hashes, on
    /// the main database and then on every shard (a shard that cannot take them now
    /// gets them from the catalog copy, within its period).
    ///
    /// # Errors
    /// [`Error::ChannelNotFound`]; [`Error::Database`].
    pub async fn create_presale_codes(
        &self,
        channel: i64,
        count: usize,
        max_seats: Option<i32>,
        max_seats_per_fan: Option<i32>,
    ) -> Result<Vec<PresaleCode>, Error> {
        let mut draws = 0;
        loop {
            let codes: Vec<PresaleCode> = (0..count)
                .map(|_| PresaleCode::generate(CODE_LENGTH))
                .collect();
            let mut conn = self.shards.main().acquire().await?;
            match store::channels::create_codes(
                &mut conn,
                channel,
                &codes,
                max_seats,
                max_seats_per_fan,
            )
            .await
            {
                Ok((event, first)) => {
                    drop(conn);
                    self.copy_codes(event, first - 1).await;
                    return Ok(codes);
                }
                Err(Error::Database(e))
                    if draws + 1 < CODE_DRAWS
                        && e.as_database_error()
                            .is_some_and(|d| d.is_unique_violation()) =>
                {
                    draws += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Releases channel `channel`'s remaining seats to general sale, on every database;
    /// answers the channel and how many seats this call released. A shard that cannot
    /// be reached now releases its seats at its next sweep after the copy brings it
    /// the release.
    ///
    /// # Errors
    /// [`Error::ChannelNotFound`]; [`Error::Database`] (the main database).
    pub async fn release_channel(
        &self,
        channel: i64,
        actor: &str,
    ) -> Result<(ChannelState, u64), Error> {
        let mut tx = self.shards.main().begin().await?;
        store::record_actor(&mut tx, actor).await?;
        let mut released = store::channels::release(&mut tx, channel).await?;
        tx.commit().await?;
        for (shard, pool) in self.shards.others() {
            match release_on(pool, channel, actor).await {
                Ok(seats) => released += seats,
                // Never copied there: none of its seats are there either.
                Err(Error::ChannelNotFound) => {}
                Err(error) => {
                    tracing::warn!(shard, channel, %error, "channel release on a shard failed; its sweep will");
                }
            }
        }
        Ok((self.channel_state(channel).await?, released))
    }

    /// Releases every channel past its `release_at`, on every database; answers the
    /// seats released.
    ///
    /// # Errors
    /// [`Error::Database`]: the first database that failed (the others released theirs).
    pub async fn release_due_channels(&self) -> Result<u64, Error> {
        let mut released = 0;
        let mut failure = None;
        for (shard, pool) in self.shards.all() {
            let due = async {
                let mut tx = pool.begin().await?;
                store::record_actor(&mut tx, "system").await?;
                let seats = store::channels::release_due(&mut tx).await?;
                tx.commit().await?;
                Ok::<_, Error>(seats)
            };
            match due.await {
                Ok(seats) => released += seats,
                Err(error) => {
                    tracing::warn!(shard, %error, "releasing due channels failed");
                    failure.get_or_insert(error);
                }
            }
        }
        failure.map_or(Ok(released), Err)
    }

    /// The channels of `event`, their seats counted on every database.
    ///
    /// # Errors
    /// [`Error::Database`].
    pub async fn channels(&self, event: EventId) -> Result<Vec<ChannelState>, Error> {
        let mut listed = self.channels_on_every_database(Some(event), None).await?;
        listed.sort_by_key(|c| c.channel_id);
        Ok(listed)
    }

    /// Channel `channel`, its seats counted on every database.
    async fn channel_state(&self, channel: i64) -> Result<ChannelState, Error> {
        one(self.channels_on_every_database(None, Some(channel)).await?)
    }

    /// The main database's record of the channels asked for, with every shard's seat
    /// counts of them added.
    async fn channels_on_every_database(
        &self,
        event: Option<EventId>,
        channel: Option<i64>,
    ) -> Result<Vec<ChannelState>, Error> {
        let mut conn = self.shards.main().acquire().await?;
        let mut listed = store::channels::channels(&mut conn, event, channel).await?;
        drop(conn);
        for (_, pool) in self.shards.others() {
            let mut conn = pool.acquire().await?;
            for there in store::channels::channels(&mut conn, event, channel).await? {
                if let Some(state) = listed.iter_mut().find(|c| c.channel_id == there.channel_id) {
                    state.add_counts(&there);
                }
            }
        }
        Ok(listed)
    }

    /// Copies `event`'s channels and its codes after code id `after` to every shard;
    /// a failure is logged (the catalog copy brings them within its period).
    async fn copy_codes(&self, event: EventId, after: i64) {
        for (shard, pool) in self.shards.others() {
            let copied = async {
                let rows = store::channels::channel_rows(self.shards.main(), event).await?;
                store::channels::copy_new_channels(pool, &rows).await?;
                copy_presale_codes(self.shards.main(), pool, event.get(), after).await?;
                Ok::<_, Error>(())
            };
            if let Err(error) = copied.await {
                tracing::warn!(shard, %error, "presale codes not copied to a shard yet; the catalog copy will");
            }
        }
    }
}

/// Releases `channel`'s seats on the database `pool`; answers how many.
async fn release_on(pool: &PgPool, channel: i64, actor: &str) -> Result<u64, Error> {
    let mut tx = pool.begin().await?;
    store::record_actor(&mut tx, actor).await?;
    let released = store::channels::release(&mut tx, channel).await?;
    tx.commit().await?;
    Ok(released)
}

fn one(mut channels: Vec<ChannelState>) -> Result<ChannelState, Error> {
    channels.pop().ok_or(Error::ChannelNotFound)
}
