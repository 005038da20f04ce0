//! The seat report: about once a second it counts the seats of every event on
//! sale (free, held, holds) and reports them to the waiting room (`ReportInventory`),
//! which admits no more fans than those seats can serve and tells the queue when the
//! event is sold out. A report that does not get through is simply replaced by the
//! next; the waiting room ignores reports once they are stale, so a silent reporter
//! never stops a sale. Each answer also raises where the queue stood
//! ([`super::marks`]).

use std::time::Duration;

use stadium_kit::outbound::{Bearer, as_service};
use stadium_proto::waiting_room::v1::waiting_room_client::WaitingRoomClient;
use stadium_proto::waiting_room::v1::{InventoryReport, ReportInventoryRequest};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

use crate::error::{Error, Result};
use crate::grpc::convert::timestamp;
use crate::service::BoxOfficeService;
use crate::store::seat_counts::SeatCounts;

/// How long one event's report may take (the default interval between rounds is 1 s).
const REPORT_DEADLINE: Duration = Duration::from_secs(2);

/// Reports seat counts to the waiting room as the box office's service identity.
#[derive(Clone)]
pub struct Reporter {
    office: BoxOfficeService,
    client: WaitingRoomClient<Channel>,
    token: Option<Bearer>,
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reporter").finish_non_exhaustive()
    }
}

impl Reporter {
    /// A reporter reading through `office` and calling the waiting room on `channel`
    /// with `token` (an admin token with role `service`, development only; `None` when
    /// the client certificate names the box office).
    pub fn new(office: BoxOfficeService, channel: Channel, token: Option<Bearer>) -> Self {
        Self {
            office,
            client: WaitingRoomClient::new(channel),
            token,
        }
    }

    /// Counts and reports every event on sale or paused; the counts sent, by event.
    ///
    /// # Errors
    /// [`Error::Database`] when counting fails; [`Error::Upstream`] with the waiting
    /// room's answer (the round stops at the first failure).
    pub async fn round(&self) -> Result<Vec<(i64, SeatCounts)>> {
        let mut sent = Vec::new();
        for event_id in self.office.live_events().await? {
            let counts = self.office.seat_counts(event_id).await?;
            let request = ReportInventoryRequest {
                event_id: event_id.to_string(),
                inventory: Some(InventoryReport {
                    free_seats: counts.free_seats,
                    held_seats: counts.held_seats,
                    holds: counts.holds,
                    as_of: Some(timestamp(counts.as_of)),
                    max_seats_per_claim: counts.max_seats_per_claim,
                }),
            };
            let request = as_service(request, self.token.as_ref(), Some(REPORT_DEADLINE));
            let answer = self
                .client
                .clone()
                .report_inventory(request)
                .await
                .map_err(|status| Error::Upstream {
                    service: "waiting-room",
                    status,
                })?
                .into_inner();
            super::marks::record(self.office.pool(), event_id, answer.stats.as_ref()).await;
            sent.push((event_id, counts));
        }
        Ok(sent)
    }
}

/// Runs rounds every `interval` until `shutdown` is cancelled; a failed round is
/// logged once (WARN) until a round succeeds again.
pub fn spawn(
    reporter: Reporter,
    interval: Duration,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut failing = false;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = ticks.tick() => {}
            }
            match reporter.round().await {
                Ok(_) if failing => {
                    tracing::info!("inventory reports get through again");
                    failing = false;
                }
                Ok(_) => {}
                Err(error) if !failing => {
                    tracing::warn!(%error, "inventory report failed; retrying every round");
                    failing = true;
                }
                Err(_) => {}
            }
        }
    })
}
