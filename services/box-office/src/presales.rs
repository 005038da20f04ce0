//! The end of presales: every [`CHECK_EVERY`] the box office records as on sale each
//! presale whose general on-sale time has come (audit actor `schedule`) and tells the
//! waiting room, which closes the presale's queue. Claims never wait for this: holds
//! reads the on-sale time itself, so the record follows within about a second.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::service::BoxOfficeService;

/// How often due presales are looked for.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Ends due presales every [`CHECK_EVERY`] until `shutdown` is cancelled; a failing
/// round is logged and the next one retries.
pub fn spawn(office: BoxOfficeService, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(CHECK_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = ticks.tick() => {}
            }
            if let Err(error) = office.open_due_presales().await {
                tracing::warn!(%error, "presales not ended; the next round retries");
            }
        }
    })
}
