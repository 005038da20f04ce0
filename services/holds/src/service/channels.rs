//! Channels in the service: each change is one short transaction (retried on
//! 40001/40P01); keys and codes are drawn here and leave only in the answer.

use chrono::{DateTime, Utc};

use super::HoldsService;
use crate::domain::presale::{CODE_LENGTH, KEY_LENGTH};
use crate::domain::{EventId, PresaleCode, SeatId};
use crate::error::Error;
use crate::store;
use crate::store::{Assignment, ChannelState};

/// Codes drawn again when one collides with a stored code (60 bits: practically never).
const CODE_DRAWS: u32 = 3;

impl HoldsService {
    /// Creates channel `name` of `event`; answers it with its key (shown once).
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
        let id =
            store::channels::create_channel(&mut tx, event, name, release_at, actor, &key).await?;
        let channel = one(store::channels::channels(&mut tx, None, Some(id)).await?)?;
        tx.commit().await?;
        Ok((channel, key))
    }

    /// Gives seats to channel `channel`; answers the channel and the seats given.
    ///
    /// # Errors
    /// As `store::channels::assign`.
    pub async fn assign_channel_seats(
        &self,
        channel: i64,
        assignment: &Assignment,
        actor: &str,
    ) -> Result<(ChannelState, Vec<SeatId>), Error> {
        let mut tx = self.shards.main().begin().await?;
        store::record_actor(&mut tx, actor).await?;
        let seats = store::channels::assign(&mut tx, channel, assignment).await?;
        let state = one(store::channels::channels(&mut tx, None, Some(channel)).await?)?;
        tx.commit().await?;
        Ok((state, seats))
    }

    /// Draws `count` presale codes for channel `channel` and stores their hashes.
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
                Ok(()) => return Ok(codes),
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

    /// Releases channel `channel`'s remaining seats to general sale; answers the channel
    /// and how many seats this call released.
    ///
    /// # Errors
    /// [`Error::ChannelNotFound`]; [`Error::Database`].
    pub async fn release_channel(
        &self,
        channel: i64,
        actor: &str,
    ) -> Result<(ChannelState, u64), Error> {
        let mut tx = self.shards.main().begin().await?;
        store::record_actor(&mut tx, actor).await?;
        let released = store::channels::release(&mut tx, channel).await?;
        let state = one(store::channels::channels(&mut tx, None, Some(channel)).await?)?;
        tx.commit().await?;
        Ok((state, released))
    }

    /// Releases every channel past its `release_at`; answers the seats released.
    ///
    /// # Errors
    /// [`Error::Database`].
    pub async fn release_due_channels(&self) -> Result<u64, Error> {
        let mut tx = self.shards.main().begin().await?;
        store::record_actor(&mut tx, "system").await?;
        let released = store::channels::release_due(&mut tx).await?;
        tx.commit().await?;
        Ok(released)
    }

    /// The channels of `event`.
    ///
    /// # Errors
    /// [`Error::Database`].
    pub async fn channels(&self, event: EventId) -> Result<Vec<ChannelState>, Error> {
        let mut conn = self.shards.main().acquire().await?;
        store::channels::channels(&mut conn, Some(event), None).await
    }
}

fn one(mut channels: Vec<ChannelState>) -> Result<ChannelState, Error> {
    channels.pop().ok_or(Error::ChannelNotFound)
}
