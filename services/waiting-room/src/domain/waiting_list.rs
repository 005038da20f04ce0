//! The waiting list of a sold-out event, as a fan and as the box office see it.

/// How a fan's one waiting-list offer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfferEnd {
    /// A claim succeeded with the offer's admission (a sale through the list).
    Used,
    /// The offer's window passed unused; it went to the next entry.
    Lapsed,
}

/// A fan's entry on an event's waiting list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListEntry {
    /// Waiting for returned seats; `position` is the entries ahead plus one.
    Waiting {
        /// 1-based place in join order among the fans still waiting.
        position: u64,
    },
    /// Offered an admission until `ends_ms` (Unix ms).
    Offer {
        /// When the offer lapses, Unix ms (the admission token's `exp` once issued).
        ends_ms: u64,
        /// The offer's admission token (EdDSA JWT, typ `admission`); `None` until one
        /// is issued, and when less than a second of the offer is left (a token lives
        /// whole seconds and must not outlive its offer).
        token: Option<String>,
    },
    /// The fan's offer is over.
    Ended(OfferEnd),
    /// The event is cancelled: the list is over for everyone on it.
    Cancelled,
    /// The fan never joined the list.
    Absent,
}

/// An event's waiting list in figures (`GetWaitingList`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListStats {
    /// Entries waiting for an offer.
    pub waiting: u64,
    /// Offers neither used nor lapsed.
    pub open_offers: u64,
    /// Offers made so far.
    pub offered: u64,
    /// Offers used: sales through the list.
    pub used: u64,
    /// Offers that lapsed unused.
    pub lapsed: u64,
    /// Seats each open offer counts against the returned seats (>= 1).
    pub seats_per_offer: u32,
    /// The offer window, ms.
    pub offer_ms: u64,
    /// When the figures were read, Unix ms.
    pub as_of_ms: u64,
}
