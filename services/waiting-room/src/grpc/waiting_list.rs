//! The waiting list's wire answers: a fan's entry as a `QueueStatus`, the list's figures
//! as a `GetWaitingListResponse`.

use stadium_proto::waiting_room::v1 as pb;

use super::convert::timestamp;
use crate::domain::{EventId, ListEntry, ListStats};

/// How often a waiting fan should ask again, ms: seats come back at the pace of
/// lapsing holds and refunds, and the box office reports them once a second.
pub const WAITING_POLL_MS: u64 = 5_000;

/// A fan's waiting-list entry at `now_ms` as the fan sees it: state, position, and the
/// offer's admission token with its time left.
pub fn entry_status(event: &EventId, entry: ListEntry, now_ms: u64) -> pb::QueueStatus {
    let mut status = pb::QueueStatus {
        event_id: event.to_string(),
        as_of: Some(timestamp(now_ms)),
        ..Default::default()
    };
    match entry {
        ListEntry::Waiting { position } => {
            status.state = pb::QueueState::WaitingList as i32;
            status.position = position;
            status.poll_after_ms = WAITING_POLL_MS;
        }
        ListEntry::Offer { ends_ms, token } => {
            status.state = pb::QueueState::WaitingListOffer as i32;
            status.admission_expires_in_ms = ends_ms.saturating_sub(now_ms);
            match token {
                Some(token) => status.admission_token = token,
                // Under a second left and no token: ask again once the offer is over.
                None => status.poll_after_ms = status.admission_expires_in_ms.max(1),
            }
        }
        ListEntry::Ended(_) | ListEntry::Absent => {
            status.state = pb::QueueState::WaitingListEnded as i32;
        }
    }
    status
}

/// The list's figures.
pub fn stats(event: &EventId, stats: &ListStats) -> pb::GetWaitingListResponse {
    pb::GetWaitingListResponse {
        event_id: event.to_string(),
        waiting: stats.waiting,
        open_offers: stats.open_offers,
        offers_made: stats.offered,
        offers_used: stats.used,
        offers_lapsed: stats.lapsed,
        seats_per_offer: stats.seats_per_offer,
        offer_ms: stats.offer_ms,
        as_of: Some(timestamp(stats.as_of_ms)),
    }
}
