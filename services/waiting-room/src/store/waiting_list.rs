//! The store's side of the waiting list: typed calls of the scripts in
//! [`super::waiting_list_scripts`].

use super::{Store, field};
use crate::domain::{EventId, FanId, ListEntry, ListStats, OfferEnd};
use crate::error::Error;

/// The outcome of joining the waiting list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListJoin {
    /// The fan's entry (new, or the one it had).
    Entry(ListEntry),
    /// The event is not sold out and the list is empty: seats are free or held, or no
    /// report is fresh.
    NotSoldOut,
    /// The sale is not open (closed, cancelled, or not opened yet).
    Closed,
}

impl Store {
    /// Joins `fan` to `event`'s waiting list (idempotent: a known fan keeps its entry).
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Redis`]; [`Error::Internal`] for a bad reply.
    pub async fn join_waiting_list(&self, event: &EventId, fan: &FanId) -> Result<ListJoin, Error> {
        let reply: Vec<String> = self
            .scripts
            .waiting_list
            .join
            .key(self.key(event, "cfg"))
            .key(self.waiting_list_keys(event))
            .arg(fan.as_str())
            .arg(self.now_arg())
            .invoke_async(&mut self.conn.clone())
            .await?;
        match reply.first().map(String::as_str) {
            Some("missing") => Err(Error::EventNotFound(event.to_string())),
            Some("closed") => Ok(ListJoin::Closed),
            Some("not_sold_out") => Ok(ListJoin::NotSoldOut),
            _ => parse_entry(&reply).map(ListJoin::Entry),
        }
    }

    /// `fan`'s entry on `event`'s waiting list, the list first brought up to now.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Redis`]; [`Error::Internal`] for a bad reply.
    pub async fn waiting_list_entry(
        &self,
        event: &EventId,
        fan: &FanId,
    ) -> Result<ListEntry, Error> {
        let reply: Vec<String> = self
            .scripts
            .waiting_list
            .status
            .key(self.key(event, "cfg"))
            .key(self.waiting_list_keys(event))
            .arg(fan.as_str())
            .arg(self.now_arg())
            .invoke_async(&mut self.conn.clone())
            .await?;
        self.entry_reply(event, &reply)
    }

    /// Stores `token` (with `jti`, expiring at `exp_ms`) as the admission of `fan`'s
    /// open offer unless one is stored, and returns the fan's entry (with the one
    /// stored token when the offer is open).
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Redis`]; [`Error::Internal`] for a bad reply.
    pub async fn store_offer_token(
        &self,
        event: &EventId,
        fan: &FanId,
        jti: &str,
        exp_ms: u64,
        token: &str,
    ) -> Result<ListEntry, Error> {
        let reply: Vec<String> = self
            .scripts
            .waiting_list
            .token
            .key(self.key(event, "cfg"))
            .key(self.waiting_list_keys(event))
            .arg(fan.as_str())
            .arg(self.now_arg())
            .arg(jti)
            .arg(exp_ms)
            .arg(token)
            .invoke_async(&mut self.conn.clone())
            .await?;
        self.entry_reply(event, &reply)
    }

    /// `event`'s waiting list in figures, brought up to now.
    ///
    /// # Errors
    /// [`Error::EventNotFound`]; [`Error::Redis`]; [`Error::Internal`] for a bad reply.
    pub async fn waiting_list_stats(&self, event: &EventId) -> Result<ListStats, Error> {
        let reply: Vec<String> = self
            .scripts
            .waiting_list
            .stats
            .key(self.key(event, "cfg"))
            .key(self.waiting_list_keys(event))
            .arg(self.now_arg())
            .invoke_async(&mut self.conn.clone())
            .await?;
        match reply.first().map(String::as_str) {
            Some("missing") => Err(Error::EventNotFound(event.to_string())),
            Some("ok") => Ok(ListStats {
                waiting: field(&reply, 1, "waiting")?,
                open_offers: field(&reply, 2, "open offers")?,
                offered: field(&reply, 3, "offered")?,
                used: field(&reply, 4, "used")?,
                lapsed: field(&reply, 5, "lapsed")?,
                seats_per_offer: field(&reply, 6, "seats per offer")?,
                offer_ms: field(&reply, 7, "offer window")?,
                as_of_ms: field(&reply, 8, "now")?,
            }),
            _ => Err(Error::Internal(format!("waiting list answered {reply:?}"))),
        }
    }

    fn entry_reply(&self, event: &EventId, reply: &[String]) -> Result<ListEntry, Error> {
        match reply.first().map(String::as_str) {
            Some("missing") => Err(Error::EventNotFound(event.to_string())),
            _ => parse_entry(reply),
        }
    }
}

fn parse_entry(reply: &[String]) -> Result<ListEntry, Error> {
    match reply.first().map(String::as_str) {
        Some("waiting") => Ok(ListEntry::Waiting {
            position: field(reply, 1, "position")?,
        }),
        Some("offer") => Ok(ListEntry::Offer {
            ends_ms: field(reply, 1, "offer end")?,
            token: reply.get(2).filter(|t| !t.is_empty()).cloned(),
        }),
        Some("ended") => match reply.get(1).map(String::as_str) {
            Some("used") => Ok(ListEntry::Ended(OfferEnd::Used)),
            Some("lapsed") => Ok(ListEntry::Ended(OfferEnd::Lapsed)),
            _ => Err(Error::Internal(format!("bad offer end {reply:?}"))),
        },
        Some("absent") => Ok(ListEntry::Absent),
        _ => Err(Error::Internal(format!("waiting list answered {reply:?}"))),
    }
}
