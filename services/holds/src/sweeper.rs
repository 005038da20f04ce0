//! The background sweeper: every interval, marks lapsed holds expired (small batches,
//! short transactions, `SKIP LOCKED`), then serves the returns queue in order with the
//! seats that came back, checks the fans' holds whose check across shards never
//! finished (every 5th pass), releases channels past their `release_at` to general sale, and every 60th
//! pass (once a minute at the default interval) trims the seat history to its retention
//! and drops day-old check marks, until shutdown. Claims never wait for it: a lapsed hold is already free
//! to them.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::service::{HoldsService, ServedReturns};

/// Sweeper passes between two looks for holds left unchecked across shards (the first
/// pass looks).
const CHECK_EVERY: u32 = 5;

/// Sweeper passes between two trims of the seat history (the first pass trims).
const TRIM_EVERY: u32 = 60;

/// Starts the sweeper; it stops when `shutdown` is cancelled (mid-sleep at once,
/// mid-batch after that batch's transaction). `history_keep` is how long seat-history
/// rows are kept.
pub fn spawn(
    service: Arc<HoldsService>,
    interval: Duration,
    batch: u32,
    history_keep: Duration,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut pass: u32 = 0;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(interval) => {}
            }
            match service.sweep(batch).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(expired = n, "swept lapsed holds"),
                Err(error) => tracing::warn!(%error, "sweep failed; next interval retries"),
            }
            match service.serve_returns(batch).await {
                Ok(pass) if pass == ServedReturns::default() => {}
                Ok(pass) => tracing::info!(
                    served = pass.served,
                    refused = pass.refused,
                    lapsed = pass.lapsed,
                    "served the returns queue"
                ),
                Err(error) => {
                    tracing::warn!(%error, "serving the returns queue failed; next interval retries");
                }
            }
            if pass.is_multiple_of(CHECK_EVERY) {
                match service.check_unchecked_holds(batch).await {
                    Ok((0, _)) => {}
                    Ok((checked, withdrawn)) => tracing::info!(
                        checked,
                        withdrawn,
                        "checked holds whose check across shards never finished"
                    ),
                    Err(error) => {
                        tracing::warn!(%error, "checking unchecked holds failed; a later pass retries");
                    }
                }
            }
            match service.release_due_channels().await {
                Ok(0) => {}
                Ok(n) => tracing::info!(seats = n, "released channels past their release time"),
                Err(error) => {
                    tracing::warn!(%error, "releasing channels failed; next interval retries");
                }
            }
            pass = pass.wrapping_add(1);
            if pass % TRIM_EVERY == 1 {
                match service.trim_history(history_keep, batch).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(deleted = n, "trimmed the seat history"),
                    Err(error) => {
                        tracing::warn!(%error, "trimming the seat history failed; next trim retries");
                    }
                }
                if let Err(error) = service.forget_old_checks().await {
                    tracing::warn!(%error, "dropping old check marks failed; next trim retries");
                }
            }
        }
        tracing::debug!("sweeper stopped");
    })
}
