//! The service's own metrics (the kit records per-RPC counts and latency already):
//! confirms by outcome, charges by outcome, refunds by reason, reconciler actions,
//! notices by outcome, and provider call latency. Exported through OpenTelemetry.

use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};

/// Provider latency bucket bounds, in milliseconds.
const LATENCY_BOUNDS_MS: &[f64] = &[
    1.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0,
];

/// The instruments.
#[derive(Debug)]
pub struct Metrics {
    confirms: Counter<u64>,
    charges: Counter<u64>,
    refunds: Counter<u64>,
    reconciler: Counter<u64>,
    notices: Counter<u64>,
    provider_latency: Histogram<f64>,
}

impl Metrics {
    /// Instruments built from `meter` (e.g. `stadium_telemetry::meter("payments")`).
    pub fn new(meter: &Meter) -> Self {
        Self {
            confirms: meter
                .u64_counter("payments.confirms")
                .with_description("Confirm calls by outcome (new, duplicate, refused)")
                .with_unit("{confirm}")
                .build(),
            charges: meter
                .u64_counter("payments.charges")
                .with_description("provider charges by outcome (succeeded, declined, error)")
                .with_unit("{charge}")
                .build(),
            refunds: meter
                .u64_counter("payments.refunds")
                .with_description("refunds completed, by reason")
                .with_unit("{refund}")
                .build(),
            reconciler: meter
                .u64_counter("payments.reconciler.actions")
                .with_description("reconciler actions (captured, refunded, failed, skipped, error, other_provider)")
                .with_unit("{action}")
                .build(),
            notices: meter
                .u64_counter("payments.notices")
                .with_description("provider notices by outcome (applied, duplicate, deferred, noted, rejected, refused)")
                .with_unit("{notice}")
                .build(),
            provider_latency: meter
                .f64_histogram("payments.provider.duration")
                .with_description("payment provider call latency, by operation")
                .with_unit("ms")
                .with_boundaries(LATENCY_BOUNDS_MS.to_vec())
                .build(),
        }
    }

    /// One `Confirm` with `outcome`.
    pub fn confirm(&self, outcome: &'static str) {
        self.confirms.add(1, &[KeyValue::new("outcome", outcome)]);
    }

    /// One provider charge with `outcome`.
    pub fn charge(&self, outcome: &'static str) {
        self.charges.add(1, &[KeyValue::new("outcome", outcome)]);
    }

    /// One refund completed for `reason`.
    pub fn refund(&self, reason: &'static str) {
        self.refunds.add(1, &[KeyValue::new("reason", reason)]);
    }

    /// One reconciler action.
    pub fn reconciled(&self, action: &'static str) {
        self.reconciler.add(1, &[KeyValue::new("action", action)]);
    }

    /// One provider notice with `outcome`.
    pub fn notice(&self, outcome: &'static str) {
        self.notices.add(1, &[KeyValue::new("outcome", outcome)]);
    }

    /// One provider call `operation` (`charge`, `refund`, `lookup`) that took `elapsed`.
    pub fn provider_call(&self, operation: &'static str, elapsed: Duration) {
        self.provider_latency.record(
            elapsed.as_secs_f64() * 1000.0,
            &[KeyValue::new("operation", operation)],
        );
    }
}
