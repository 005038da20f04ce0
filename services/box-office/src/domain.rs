//! The box office's own types: events, their sale status and its transitions, price
//! categories. No wire or database types here; [`crate::grpc`] converts from the wire
//! (rejecting bad input there) and [`crate::store`] reads and writes these.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// Longest hold a fan may get, in milliseconds (one hour).
pub const MAX_HOLD_TTL_MS: u64 = 3_600_000;
/// Longest absolute hold lifetime an event may set, in milliseconds (2 h).
pub const MAX_HOLD_LIFETIME_MS: u64 = 7_200_000;
/// Most seats one claim may take.
pub const MAX_SEATS_PER_CLAIM: u32 = 100;
/// Most seats one fan may hold or buy for one event.
pub const MAX_SEATS_PER_FAN: u32 = 1_000;
/// Highest admission rate, fans per minute.
pub const MAX_ADMISSION_RATE: u32 = 1_000_000;
/// Default admission token lifetime, milliseconds (ten minutes).
pub const DEFAULT_ADMISSION_TTL_MS: u64 = 600_000;
/// Longest admission token lifetime, milliseconds (one day).
pub const MAX_ADMISSION_TTL_MS: u64 = 86_400_000;
/// Default waiting-list offer window, milliseconds (ten minutes).
pub const DEFAULT_WAITING_LIST_OFFER_MS: u64 = 600_000;

/// The sale status of an event (`catalog.events.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventStatus {
    /// Being set up; fans see nothing.
    Draft,
    /// The presale before the general on-sale: only fans with a presale code or a
    /// channel's key claim, and only that channel's seats. From `onsale_at` every claim
    /// is accepted (holds decides by the time), and the box office records the event
    /// as on sale within its resync period.
    Presale,
    /// Open: the queue admits fans at the configured rate.
    OnSale,
    /// Admission and new claims stop; existing holds may still pay.
    Paused,
    /// Over.
    Closed,
    /// Called off: final. Every paid order is refunded and every ticket voided by the
    /// cancellation's worker (`catalog.event_cancellations`).
    Cancelled,
}

impl EventStatus {
    /// The database spelling: `draft`, `presale`, `on_sale`, `paused`, `closed`,
    /// `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Presale => "presale",
            Self::OnSale => "on_sale",
            Self::Paused => "paused",
            Self::Closed => "closed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Parses the database spelling; `None` for anything else.
    pub fn from_db(s: &str) -> Option<Self> {
        match s {
            "draft" => Some(Self::Draft),
            "presale" => Some(Self::Presale),
            "on_sale" => Some(Self::OnSale),
            "paused" => Some(Self::Paused),
            "closed" => Some(Self::Closed),
            "cancelled" => Some(Self::Cancelled),
            _ => None,
        }
    }
}

/// A sale control change; each is one conditional update from its allowed statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// draft → presale.
    StartPresale,
    /// draft or presale → on_sale.
    Open,
    /// on_sale or presale → paused (the event remembers which).
    Pause,
    /// paused → what was paused: presale or on_sale.
    Resume,
    /// draft, presale, on_sale or paused → closed.
    Close,
}

impl Transition {
    /// The statuses this change may start from.
    pub fn from(self) -> &'static [EventStatus] {
        match self {
            Self::StartPresale => &[EventStatus::Draft],
            Self::Open => &[EventStatus::Draft, EventStatus::Presale],
            Self::Pause => &[EventStatus::OnSale, EventStatus::Presale],
            Self::Resume => &[EventStatus::Paused],
            Self::Close => &[
                EventStatus::Draft,
                EventStatus::Presale,
                EventStatus::OnSale,
                EventStatus::Paused,
            ],
        }
    }

    /// The status it leads to; for `Resume`, on_sale unless the event paused a presale
    /// ([`crate::store::events::set_status`] resumes what was paused).
    pub fn to(self) -> EventStatus {
        match self {
            Self::StartPresale => EventStatus::Presale,
            Self::Open | Self::Resume => EventStatus::OnSale,
            Self::Pause => EventStatus::Paused,
            Self::Close => EventStatus::Closed,
        }
    }

    /// The audit action name, e.g. `open_sale`.
    pub fn action(self) -> &'static str {
        match self {
            Self::StartPresale => "start_presale",
            Self::Open => "open_sale",
            Self::Pause => "pause_sale",
            Self::Resume => "resume_sale",
            Self::Close => "close_sale",
        }
    }
}

/// A price for the seats of one venue category at one event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PriceCategory {
    /// The category code the venue's seats carry.
    pub code: String,
    /// Display name (the code when none was given).
    pub name: String,
    /// Price in minor units of `currency`, never negative.
    pub price_minor: i64,
    /// ISO 4217 code, three upper-case letters.
    pub currency: String,
}

/// An event's settings as validated at the gRPC edge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventSettings {
    /// Display name, 1 to 200 characters.
    pub name: String,
    /// When the event starts.
    pub starts_at: DateTime<Utc>,
    /// When the queue opens; never after `starts_at`.
    pub onsale_at: DateTime<Utc>,
    /// Hold lifetime, 1 to [`MAX_HOLD_TTL_MS`] milliseconds.
    pub hold_ttl_ms: u32,
    /// How far a fan may extend a hold, milliseconds from the claim, `hold_ttl_ms` to
    /// [`MAX_HOLD_LIFETIME_MS`]; `None`: 30 min, or the hold TTL when that is longer.
    pub max_hold_lifetime_ms: Option<u32>,
    /// Seats per claim, 1 to [`MAX_SEATS_PER_CLAIM`].
    pub max_seats_per_claim: u32,
    /// Seats per fan, `max_seats_per_claim` to [`MAX_SEATS_PER_FAN`].
    pub max_seats_per_fan: u32,
    /// Fans admitted per minute, 1 to [`MAX_ADMISSION_RATE`].
    pub admission_rate_per_min: u32,
    /// Admitted fans not yet done at once; 0 = no cap.
    pub active_fan_cap: u32,
    /// Admission token lifetime, milliseconds.
    pub admission_ttl_ms: u32,
    /// How long an admitted fan may go without a claim before the waiting room takes
    /// the admission back, milliseconds, 0 to [`MAX_ADMISSION_TTL_MS`]; 0 = never.
    pub admission_no_show_ms: u32,
    /// How long a waiting-list offer stays valid, milliseconds, 1,000 to
    /// [`MAX_ADMISSION_TTL_MS`] (default [`DEFAULT_WAITING_LIST_OFFER_MS`]).
    pub waiting_list_offer_ms: u32,
    /// ISO 4217 currency of every price.
    pub currency: String,
}

/// An event as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    /// `catalog.events.event_id`.
    pub event_id: i64,
    /// The venue it takes place in.
    pub venue_id: i64,
    /// Sale status.
    pub status: EventStatus,
    /// While paused: what was paused, a presale or the sale (`None` otherwise).
    pub paused_from: Option<EventStatus>,
    /// When the event's presale began (`None`: it has had none).
    pub presale_started_at: Option<DateTime<Utc>>,
    /// Settings.
    pub settings: EventSettings,
    /// Prices, by category code.
    pub price_categories: Vec<PriceCategory>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

/// True for an ISO 4217 alphabetic code shape: exactly three ASCII upper-case letters.
pub fn is_currency(code: &str) -> bool {
    code.len() == 3 && code.bytes().all(|b| b.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip() {
        for s in [
            EventStatus::Draft,
            EventStatus::Presale,
            EventStatus::OnSale,
            EventStatus::Paused,
            EventStatus::Closed,
            EventStatus::Cancelled,
        ] {
            assert_eq!(EventStatus::from_db(s.as_str()), Some(s));
        }
        assert_eq!(EventStatus::from_db("open"), None);
    }

    #[test]
    fn transitions_never_leave_closed() {
        for t in [
            Transition::StartPresale,
            Transition::Open,
            Transition::Pause,
            Transition::Resume,
            Transition::Close,
        ] {
            assert!(!t.from().contains(&EventStatus::Closed), "{t:?}");
            assert!(!t.from().contains(&t.to()), "{t:?} is not a no-op");
        }
    }

    #[test]
    fn currency_shape() {
        assert!(is_currency("EUR"));
        for bad in ["eur", "EU", "EURO", "E1R", "", "ÉUR"] {
            assert!(!is_currency(bad), "{bad}");
        }
    }
}
