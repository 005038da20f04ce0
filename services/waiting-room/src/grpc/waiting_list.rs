//! The waiting list's wire answers: a fan's entry as a `QueueStatus` (once, or as a
//! stream), the list's figures as a `GetWaitingListResponse`.

use std::sync::Arc;
use std::time::Duration;

use stadium_proto::waiting_room::v1 as pb;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tonic::Status;

use super::convert::timestamp;
use crate::domain::{EventId, FanId, ListEntry, ListStats};
use crate::error::Error;
use crate::service::{FanStatus, WaitingRoomService};

/// Shortest pause between two checks of a `WatchWaitingList` stream: offers come from
/// inventory reports, which the box office sends about once a second.
pub const WATCH_INTERVAL: Duration = Duration::from_secs(1);

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
        ListEntry::Cancelled => status.state = pb::QueueState::Cancelled as i32,
    }
    status
}

/// A queue poll's answer: the queue's `status`, or, while the fan is on the event's
/// waiting list and the list is in play (see [`WaitingRoomService::entry_beside`]),
/// the list's entry with the fan's queue number and ticket, so the offer is announced
/// on the queue's status stream too.
///
/// # Errors
/// As the store.
pub async fn queue_status(
    service: &WaitingRoomService,
    fan: &FanId,
    status: FanStatus,
) -> Result<pb::QueueStatus, Error> {
    let Some(entry) = service.entry_beside(fan, &status).await? else {
        return Ok(super::convert::fan_status(status));
    };
    let now_ms = crate::clock::unix_ms(service.clock().now());
    let mut answer = entry_status(&status.event, entry, now_ms);
    answer.queue_number = status.queue_number;
    answer.queue_ticket = status.queue_ticket;
    Ok(answer)
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

/// Streams `fan`'s entry on `event`'s waiting list from `first`, checked every
/// `interval`, sending each change of state or position; ends after an offer with its
/// token, an ended entry or the event's cancellation, on an error (sent), when the client leaves, or at
/// `shutdown`.
pub fn watch(
    service: Arc<WaitingRoomService>,
    event: EventId,
    fan: FanId,
    first: ListEntry,
    interval: Duration,
    shutdown: CancellationToken,
) -> mpsc::Receiver<Result<pb::WatchWaitingListResponse, Status>> {
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(async move {
        let mut entry = first;
        let mut last_sent: Option<(i32, u64)> = None;
        loop {
            let now_ms = crate::clock::unix_ms(service.clock().now());
            let status = entry_status(&event, entry, now_ms);
            let done = status.state == pb::QueueState::WaitingListEnded as i32
                || status.state == pb::QueueState::Cancelled as i32
                || !status.admission_token.is_empty();
            let key = (status.state, status.position);
            if last_sent != Some(key) || done {
                let message = pb::WatchWaitingListResponse {
                    status: Some(status),
                };
                if tx.send(Ok(message)).await.is_err() {
                    return;
                }
                last_sent = Some(key);
            }
            if done {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = tx.closed() => return,
                () = shutdown.cancelled() => return,
            }
            entry = match service.waiting_list_entry(&event, &fan).await {
                Ok(entry) => entry,
                Err(error) => {
                    let _ = tx.send(Err(error.into())).await;
                    return;
                }
            };
        }
    });
    rx
}
