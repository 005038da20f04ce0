//! The waiting list of a sold-out event: a fan joins it and watches its entry; an
//! offer's admission token is signed here and stored once by the store's script, so
//! every replica hands out the same token for an offer.

use std::time::Duration;

use crate::domain::{EventId, FanId, ListEntry, ListStats, SaleState, Standing};
use crate::error::Error;
use crate::store::ListJoin;

use super::{FanStatus, WaitingRoomService};

impl WaitingRoomService {
    /// Joins `fan` to `event`'s waiting list (joining again keeps the entry) and
    /// answers its entry, with the offer's admission token when one is open.
    ///
    /// # Errors
    /// [`Error::NotSoldOut`]; [`Error::EventCancelled`] or [`Error::NotOnSale`] when
    /// the sale is not open; as the store ([`Error::EventNotFound`], Redis).
    pub async fn join_waiting_list(
        &self,
        event: &EventId,
        fan: &FanId,
    ) -> Result<ListEntry, Error> {
        let mut joined = self.store.join_waiting_list(event, fan).await?;
        if joined == ListJoin::Closed {
            // A sale whose on-sale time passed opens at its first snapshot (the
            // pre-queue's shuffle is computed here, not in a script): open it, then
            // join again.
            let snap = self.store.snapshot(event).await?;
            if snap.state == SaleState::Open {
                joined = self.store.join_waiting_list(event, fan).await?;
            }
        }
        match joined {
            ListJoin::Entry(entry) => self.with_token(event, fan, entry).await,
            ListJoin::NotSoldOut => Err(Error::NotSoldOut(event.to_string())),
            ListJoin::Closed if self.store.is_cancelled(event).await? => {
                Err(Error::EventCancelled(event.to_string()))
            }
            ListJoin::Closed => Err(Error::NotOnSale(event.to_string())),
        }
    }

    /// `fan`'s entry on `event`'s waiting list, with the offer's admission token when
    /// one is open; [`ListEntry::Cancelled`] instead of a wait or an offer once the
    /// event is cancelled.
    ///
    /// # Errors
    /// [`Error::NotOnWaitingList`] when the fan never joined; as the store.
    pub async fn waiting_list_entry(
        &self,
        event: &EventId,
        fan: &FanId,
    ) -> Result<ListEntry, Error> {
        match self.store.waiting_list_entry(event, fan).await? {
            ListEntry::Absent => Err(Error::NotOnWaitingList(event.to_string())),
            ListEntry::Waiting { .. } | ListEntry::Offer { .. }
                if self.store.is_cancelled(event).await? =>
            {
                Ok(ListEntry::Cancelled)
            }
            entry => self.with_token(event, fan, entry).await,
        }
    }

    /// `fan`'s waiting-list entry when it tells more than the queue `status`: the queue
    /// has nothing for the fan (sold out), or offers cover seats the queue leaves to
    /// the list. `None` when neither, or when the fan is not on the list; so a queue
    /// poll costs a Redis call only while the list is in play.
    ///
    /// # Errors
    /// As the store.
    pub async fn entry_beside(
        &self,
        fan: &FanId,
        status: &FanStatus,
    ) -> Result<Option<ListEntry>, Error> {
        let in_play = match status.standing {
            Standing::SoldOut { .. } => true,
            Standing::Waiting { .. } | Standing::Paused { .. } => self
                .cache
                .get(&status.event)
                .await?
                .inventory
                .is_some_and(|i| i.covered_seats > 0),
            _ => false,
        };
        if !in_play {
            return Ok(None);
        }
        match self.waiting_list_entry(&status.event, fan).await {
            Ok(entry) => Ok(Some(entry)),
            Err(Error::NotOnWaitingList(_)) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// `event`'s waiting list in figures.
    ///
    /// # Errors
    /// As the store.
    pub async fn waiting_list_stats(&self, event: &EventId) -> Result<ListStats, Error> {
        self.store.waiting_list_stats(event).await
    }

    /// Signs and stores the admission token of an open offer that has none yet. The
    /// token lives whole seconds and ends no later than the offer (the store then ends
    /// the offer at the token's `exp`); with less than a second left none is issued.
    async fn with_token(
        &self,
        event: &EventId,
        fan: &FanId,
        entry: ListEntry,
    ) -> Result<ListEntry, Error> {
        let ListEntry::Offer {
            ends_ms,
            token: None,
        } = entry
        else {
            return Ok(entry);
        };
        let now = self.clock.now();
        let now_ms = crate::clock::unix_ms(now);
        // `exp` is the issue second plus whole seconds: end it at or before the offer.
        let left_secs = ends_ms.saturating_sub(now_ms - now_ms % 1000) / 1000;
        if left_secs == 0 {
            return Ok(entry);
        }
        let fresh = self
            .admission
            .issue_offer(
                fan.as_str(),
                event.as_str(),
                Duration::from_secs(left_secs),
                now,
            )
            .map_err(|e| Error::Internal(format!("signing an offer's admission: {e}")))?;
        let exp_ms = fresh.claims.registered.exp.saturating_mul(1000);
        let stored = self
            .store
            .store_offer_token(
                event,
                fan,
                &fresh.claims.registered.jti,
                exp_ms,
                &fresh.token,
            )
            .await?;
        if let ListEntry::Offer { token: Some(t), .. } = &stored
            && *t == fresh.token
        {
            tracing::debug!(event_id = %event, "waiting-list offer's admission handed out");
        }
        Ok(stored)
    }
}
