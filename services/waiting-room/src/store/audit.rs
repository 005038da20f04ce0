//! Reading what makes an event's pre-queue shuffle checkable: the seed (its commitment
//! at any time, the seed itself once open) and the pre-queue in join order (the `pre`
//! list, see [`super::scripts`]). Nothing here writes: the seed is written once, when
//! `CONFIGURE` creates the event, and the list only by `JOIN` before opening.

use super::{Store, decode_seed};
use crate::domain::EventId;
use crate::error::Error;

/// The published shuffle seed of an opened event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedInfo {
    /// The 32-byte seed.
    pub seed: [u8; 32],
    /// Fans in the pre-queue at opening.
    pub pre_queue_size: u64,
    /// When the seed was drawn (the event's creation), Unix ms; `None` for an event
    /// created before the store recorded it.
    pub committed_at_ms: Option<u64>,
}

/// The seed behind an event's commitment, and whether it may be published yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShuffleCommitment {
    /// The 32-byte seed: secret until `opened`.
    pub seed: [u8; 32],
    /// When the seed was drawn, Unix ms (see [`SeedInfo::committed_at_ms`]).
    pub committed_at_ms: Option<u64>,
    /// Whether the event has opened (its pre-queue is numbered).
    pub opened: bool,
}

/// Part of an opened event's pre-queue in join order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreQueueSlice {
    /// The event's seed (published, since the event has opened).
    pub seed: [u8; 32],
    /// Fans in the pre-queue at opening: the length of the whole join order.
    pub pre_queue_size: u64,
    /// Fan ids from the requested index on, at most the requested count; empty when
    /// the index is at or past `pre_queue_size`.
    pub fans: Vec<String>,
}

/// The `cfg` fields the audit reads, and the slice of `pre` read with them.
struct Read {
    seed: [u8; 32],
    pre_queue_size: u64,
    committed_at_ms: Option<u64>,
    opened: bool,
    fans: Vec<String>,
}

fn number(raw: Option<&str>, name: &str) -> Result<Option<u64>, Error> {
    raw.map(|v| {
        v.parse()
            .map_err(|_| Error::Internal(format!("bad {name} {v:?} in queue state")))
    })
    .transpose()
}

impl Store {
    /// One atomic read of the seed fields and of `count` entries of `pre` from `start`
    /// (none when `count` is 0).
    async fn read_audit(&self, event: &EventId, start: u64, count: u64) -> Result<Read, Error> {
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("HMGET")
            .arg(self.key(event, "cfg"))
            .arg(&["seed", "prequeue", "opened_at", "committed_at"]);
        let range_end = start.saturating_add(count).saturating_sub(1);
        // LRANGE counts from the end for negative indexes; both fit an i64 here.
        let in_range = count > 0 && i64::try_from(range_end).is_ok();
        if in_range {
            pipe.cmd("LRANGE")
                .arg(self.key(event, "pre"))
                .arg(start)
                .arg(range_end);
        }
        let mut conn = self.conn.clone();
        let (fields, fans): (Vec<Option<String>>, Vec<String>) = if in_range {
            pipe.query_async(&mut conn).await?
        } else {
            let (fields,): (Vec<Option<String>>,) = pipe.query_async(&mut conn).await?;
            (fields, Vec::new())
        };
        let [seed, size, opened, committed] = fields.as_slice() else {
            return Err(Error::Internal(format!("audit read answered {fields:?}")));
        };
        let Some(seed) = seed else {
            return Err(Error::EventNotFound(event.to_string()));
        };
        let opened = opened.is_some();
        let pre_queue_size = number(size.as_deref(), "prequeue")?.unwrap_or_default();
        let mut fans = fans;
        // `pre` does not change after opening; bound the answer by the size anyway.
        fans.truncate(usize::try_from(pre_queue_size.saturating_sub(start)).unwrap_or(usize::MAX));
        Ok(Read {
            seed: decode_seed(Some(seed))?,
            pre_queue_size,
            committed_at_ms: number(committed.as_deref(), "committed_at")?,
            opened,
            fans,
        })
    }

    /// As [`Store::read_audit`], first opening the event if its on-sale time has
    /// come (opening is lazy: the first script to see the time does it).
    async fn read_audit_opening(
        &self,
        event: &EventId,
        start: u64,
        count: u64,
    ) -> Result<Read, Error> {
        let read = self.read_audit(event, start, count).await?;
        if read.opened {
            return Ok(read);
        }
        self.snapshot(event).await?;
        self.read_audit(event, start, count).await
    }

    /// The seed behind `event`'s commitment, and whether the event has opened. The
    /// caller publishes the commitment, never the seed, until it has.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Redis`]; [`Error::Internal`] for corrupt state.
    pub async fn shuffle_commitment(&self, event: &EventId) -> Result<ShuffleCommitment, Error> {
        let read = self.read_audit_opening(event, 0, 0).await?;
        Ok(ShuffleCommitment {
            seed: read.seed,
            committed_at_ms: read.committed_at_ms,
            opened: read.opened,
        })
    }

    /// The shuffle seed, once the event has opened.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::NotYetOpen`]; [`Error::Redis`];
    /// [`Error::Internal`] for corrupt state.
    pub async fn shuffle_seed(&self, event: &EventId) -> Result<SeedInfo, Error> {
        let read = self.read_audit_opening(event, 0, 0).await?;
        if !read.opened {
            return Err(Error::NotYetOpen(event.to_string()));
        }
        Ok(SeedInfo {
            seed: read.seed,
            pre_queue_size: read.pre_queue_size,
            committed_at_ms: read.committed_at_ms,
        })
    }

    /// At most `count` fan ids of `event`'s pre-queue in join order, from the 0-based
    /// index `start`, once the event has opened.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::NotYetOpen`]; [`Error::Redis`];
    /// [`Error::Internal`] for corrupt state.
    pub async fn pre_queue(
        &self,
        event: &EventId,
        start: u64,
        count: u64,
    ) -> Result<PreQueueSlice, Error> {
        let read = self.read_audit_opening(event, start, count).await?;
        if !read.opened {
            return Err(Error::NotYetOpen(event.to_string()));
        }
        Ok(PreQueueSlice {
            seed: read.seed,
            pre_queue_size: read.pre_queue_size,
            fans: read.fans,
        })
    }
}
