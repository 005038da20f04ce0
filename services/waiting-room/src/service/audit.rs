//! The public audit of the pre-queue shuffle: the commitment to the seed before
//! opening; the seed and the join order, as pseudonyms ([`crate::domain::audit`]),
//! after.

use super::WaitingRoomService;
use crate::domain::EventId;
use crate::domain::audit::{PSEUDONYM_BYTES, pseudonym};
use crate::error::Error;
use crate::store::{SeedInfo, ShuffleCommitment};

/// Most entries one page of the join order holds (18 bytes each on the wire).
pub const MAX_PAGE_SIZE: u32 = 10_000;

/// Entries per page when the caller names no size.
pub const DEFAULT_PAGE_SIZE: u32 = 1_000;

/// A page of an opened event's pre-queue in join order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinOrderPage {
    /// Fans in the pre-queue at opening: the length of the whole join order.
    pub pre_queue_size: u64,
    /// 0-based index in the join order of `entries[0]`.
    pub first_index: u64,
    /// The fans' pseudonyms, in join order.
    pub entries: Vec<[u8; PSEUDONYM_BYTES]>,
}

impl JoinOrderPage {
    /// The index the next page starts at; `None` after the last page.
    pub fn next_index(&self) -> Option<u64> {
        let next = self.first_index + self.entries.len() as u64;
        (next < self.pre_queue_size).then_some(next)
    }
}

impl WaitingRoomService {
    /// The seed behind `event`'s commitment and whether it may be published yet.
    ///
    /// # Errors
    /// As the store.
    pub async fn shuffle_commitment(&self, event: &EventId) -> Result<ShuffleCommitment, Error> {
        self.store.shuffle_commitment(event).await
    }

    /// The pre-queue shuffle's seed of `event`, once revealed.
    ///
    /// # Errors
    /// As the store.
    pub async fn shuffle_seed(&self, event: &EventId) -> Result<SeedInfo, Error> {
        self.store.shuffle_seed(event).await
    }

    /// Up to `page_size` (1 to [`MAX_PAGE_SIZE`]) entries of `event`'s join order from
    /// the 0-based index `start`, once the event has opened.
    ///
    /// # Errors
    /// [`Error::InvalidField`] (`page_token`) when `start` is past the end; as the store.
    pub async fn join_order(
        &self,
        event: &EventId,
        start: u64,
        page_size: u32,
    ) -> Result<JoinOrderPage, Error> {
        let slice = self
            .store
            .pre_queue(event, start, u64::from(page_size))
            .await?;
        if start > slice.pre_queue_size {
            return Err(Error::invalid(
                "page_token",
                format!(
                    "is past the end of the pre-queue ({} fans)",
                    slice.pre_queue_size
                ),
            ));
        }
        Ok(JoinOrderPage {
            pre_queue_size: slice.pre_queue_size,
            first_index: start,
            entries: slice
                .fans
                .iter()
                .map(|fan| pseudonym(&slice.seed, fan))
                .collect(),
        })
    }
}
