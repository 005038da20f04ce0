//! The background reconciler: one pass at start (payments a crash left behind), then
//! one pass per interval until shutdown. A pass dropped mid-way by shutdown is safe:
//! every step it takes is leased, conditional and idempotent.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::service::PaymentsService;

/// Runs passes of up to `batch` payments: at start, then every `interval`, until `stop`
/// is cancelled.
pub async fn run(
    core: Arc<PaymentsService>,
    interval: Duration,
    batch: u32,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            result = core.reconcile_once(i64::from(batch)) => {
                if let Err(error) = result {
                    tracing::warn!(%error, "reconciler pass failed; will retry");
                }
            }
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
    }
}
