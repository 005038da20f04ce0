//! Per-RPC latency: one HDR histogram per RPC name, in microseconds, summarised as
//! p50/p99 in milliseconds for the report.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency recorded exactly: one hour, in microseconds (longer values are
/// clamped to it).
const MAX_MICROS: u64 = 3_600_000_000;

/// Latency of one RPC over a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// The RPC, `Service/Method`, e.g. `Holds/ClaimSeats`.
    pub rpc: String,
    /// Calls recorded (successful or not).
    pub count: u64,
    /// Median, milliseconds.
    pub p50_ms: f64,
    /// 99th percentile, milliseconds.
    pub p99_ms: f64,
    /// Slowest call, milliseconds.
    pub max_ms: f64,
}

/// Collects latencies from many tasks at once.
#[derive(Debug, Default)]
pub struct LatencyRecorder {
    histograms: Mutex<BTreeMap<&'static str, Histogram<u64>>>,
}

impl LatencyRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one call of `rpc` that took `elapsed`.
    pub fn record(&self, rpc: &'static str, elapsed: Duration) {
        let micros = u64::try_from(elapsed.as_micros())
            .unwrap_or(u64::MAX)
            .clamp(1, MAX_MICROS);
        let mut map = self
            .histograms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let histogram = map.entry(rpc).or_insert_with(|| {
            // 3 significant digits over 1 µs ..= 1 h: bounds are valid constants.
            Histogram::new_with_bounds(1, MAX_MICROS, 3)
                .unwrap_or_else(|_| Histogram::new(3).expect("3 significant figures"))
        });
        histogram.saturating_record(micros);
    }

    /// One summary per RPC, sorted by RPC name.
    pub fn summaries(&self) -> Vec<LatencySummary> {
        let map = self
            .histograms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.iter().map(|(rpc, h)| summarise(rpc, h)).collect()
    }
}

/// The summary of one histogram of microseconds.
pub fn summarise(rpc: &str, h: &Histogram<u64>) -> LatencySummary {
    let ms = |micros: u64| micros as f64 / 1_000.0;
    LatencySummary {
        rpc: rpc.to_owned(),
        count: h.len(),
        p50_ms: ms(h.value_at_quantile(0.50)),
        p99_ms: ms(h.value_at_quantile(0.99)),
        max_ms: ms(h.max()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_spread() {
        let rec = LatencyRecorder::new();
        for ms in 1..=100u64 {
            rec.record("Holds/ClaimSeats", Duration::from_millis(ms));
        }
        rec.record("Payments/Confirm", Duration::from_millis(7));
        let s = rec.summaries();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].rpc, "Holds/ClaimSeats");
        assert_eq!(s[0].count, 100);
        // HDR keeps 3 significant digits: within 0.1 %.
        assert!((s[0].p50_ms - 50.0).abs() < 0.1, "{}", s[0].p50_ms);
        assert!((s[0].p99_ms - 99.0).abs() < 0.1, "{}", s[0].p99_ms);
        assert!((s[0].max_ms - 100.0).abs() < 0.1, "{}", s[0].max_ms);
        assert!((s[1].p50_ms - 7.0).abs() < 0.01);
    }

    #[test]
    fn extreme_values_are_clamped_not_lost() {
        let rec = LatencyRecorder::new();
        rec.record("X/Y", Duration::ZERO);
        rec.record("X/Y", Duration::from_secs(10 * 3600));
        let s = &rec.summaries()[0];
        assert_eq!(s.count, 2);
        assert!(s.max_ms >= 3_599_000.0);
    }
}
