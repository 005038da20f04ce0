//! The periodic invariant canary: every interval it checks each event whose sale runs
//! and exports the number of violations found as the gauge
//! `stadium.box_office.invariant_violations` (attribute `event_id`), logging ERROR when
//! it is not zero, since a person must look.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Gauge, Meter};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::service::BoxOfficeService;

/// Counts of the last canary round.
#[derive(Debug, Default)]
pub struct CanaryStatus {
    rounds: AtomicU64,
    violations: AtomicU64,
}

impl CanaryStatus {
    /// Rounds completed.
    pub fn rounds(&self) -> u64 {
        self.rounds.load(Ordering::Acquire)
    }

    /// Violations found by the last completed round, over all live events.
    pub fn violations(&self) -> u64 {
        self.violations.load(Ordering::Acquire)
    }
}

/// Runs one round: checks every live event, records the gauge per event, and returns
/// the total number of violations (rows of broken invariants are logged).
///
/// # Errors
/// The first database failure (the round stops there).
pub async fn round(office: &BoxOfficeService, gauge: &Gauge<u64>) -> crate::error::Result<u64> {
    let mut total = 0u64;
    for event_id in office.live_events().await? {
        let violations = office.check_invariants(event_id).await?;
        let count = violations.len() as u64;
        gauge.record(count, &[KeyValue::new("event_id", event_id.to_string())]);
        for v in &violations {
            tracing::error!(event_id, invariant = v.invariant, rows = ?v.rows, "invariant violated");
        }
        total += count;
    }
    Ok(total)
}

/// Starts the canary; it stops when `shutdown` is cancelled.
pub fn spawn(
    office: BoxOfficeService,
    meter: &Meter,
    interval: Duration,
    status: Arc<CanaryStatus>,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    let gauge = meter
        .u64_gauge("stadium.box_office.invariant_violations")
        .with_description("Invariant violations found by the last canary round, per event")
        .build();
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                _ = ticks.tick() => {}
            }
            match round(&office, &gauge).await {
                Ok(found) => {
                    status.violations.store(found, Ordering::Release);
                    status.rounds.fetch_add(1, Ordering::AcqRel);
                }
                Err(error) => tracing::warn!(%error, "canary round failed; next round retries"),
            }
        }
    })
}
