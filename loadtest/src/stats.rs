//! The run's own counters, shared by every fan task, and the tally of RPC errors by
//! gRPC code and `ErrorInfo` reason.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use tonic::Status;

/// Counters updated by fans as things happen (relaxed atomics: each is a tally, none
/// orders another).
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub started: AtomicU64,
    pub joined: AtomicU64,
    pub admitted: AtomicU64,
    pub finished: AtomicU64,
    pub gave_up: AtomicU64,
    pub claim_attempts: AtomicU64,
    pub seat_taken: AtomicU64,
    pub queued_for_returns: AtomicU64,
    pub served_from_queue: AtomicU64,
    pub claim_rounds_lost: AtomicU64,
    pub admission_expired: AtomicU64,
    pub out_of_time: AtomicU64,
    pub told_sold_out: AtomicU64,
    pub holds_made: AtomicU64,
    pub seats_held_now: AtomicU64,
    /// Fans with a claim in holds' returns queue (see `returns_line`): a gauge.
    pub fans_in_returns_line: AtomicU64,
    pub seats_sold: AtomicU64,
    pub orders_paid: AtomicU64,
    pub holds_expired: AtomicU64,
    pub seats_expired: AtomicU64,
    pub late_payments: AtomicU64,
    pub late_refunded: AtomicU64,
    pub late_refunded_seats: AtomicU64,
    pub late_rejected: AtomicU64,
    pub late_paid: AtomicU64,
    pub unexpected_refunds: AtomicU64,
    pub unexpected_refund_seats: AtomicU64,
    pub double_confirms: AtomicU64,
    pub double_same_order: AtomicU64,
    pub double_same_refusal: AtomicU64,
    pub double_inconsistent: AtomicU64,
    pub pay_failed: AtomicU64,
    pub final_answers: AtomicU64,
    pub final_answer_max_ms: AtomicU64,
    pub past_final_bound: AtomicU64,
    pub walked_away: AtomicU64,
    pub walked_away_settled: AtomicU64,
    errors: Mutex<BTreeMap<(String, String, String), u64>>,
}

/// Adds one to a counter.
pub(crate) fn inc(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Adds `n` to a counter.
pub(crate) fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

/// Subtracts `n` from a gauge, stopping at 0.
pub(crate) fn sub(counter: &AtomicU64, n: u64) {
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        Some(v.saturating_sub(n))
    });
}

/// Reads a counter.
pub(crate) fn get(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

/// How often one RPC failed with one code and reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCount {
    /// The RPC, e.g. `Holds/ClaimSeats`.
    pub rpc: String,
    /// gRPC code name, e.g. `AlreadyExists`.
    pub code: String,
    /// `ErrorInfo.reason`, e.g. `SEAT_TAKEN`; empty when the status had none.
    pub reason: String,
    /// Occurrences.
    pub count: u64,
}

/// The `ErrorInfo.reason` of a status, or `""`.
pub(crate) fn reason(status: &Status) -> String {
    stadium_kit::status::error_info(status)
        .map(|info| info.reason)
        .unwrap_or_default()
}

impl Stats {
    /// Counts a failed call of `rpc`.
    pub fn error(&self, rpc: &str, status: &Status) {
        let key = (
            rpc.to_owned(),
            format!("{:?}", status.code()),
            reason(status),
        );
        let mut map = self
            .errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *map.entry(key).or_default() += 1;
    }

    /// Every error tally, sorted by RPC, code and reason.
    pub fn errors(&self) -> Vec<ErrorCount> {
        let map = self
            .errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.iter()
            .map(|((rpc, code, reason), count)| ErrorCount {
                rpc: rpc.clone(),
                code: code.clone(),
                reason: reason.clone(),
                count: *count,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use stadium_kit::Reason;
    use stadium_kit::status::error_status;
    use tonic::Code;

    use super::*;

    #[test]
    fn errors_are_tallied_by_code_and_reason() {
        let stats = Stats::default();
        let taken = error_status(Code::AlreadyExists, Reason::SeatTaken, "taken", []);
        stats.error("Holds/ClaimSeats", &taken);
        stats.error("Holds/ClaimSeats", &taken);
        stats.error("Payments/Confirm", &Status::unavailable("down"));
        let errors = stats.errors();
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].reason, "SEAT_TAKEN");
        assert_eq!(errors[0].code, "AlreadyExists");
        assert_eq!(errors[0].count, 2);
        assert_eq!(errors[1].reason, "");
    }

    #[test]
    fn gauges_never_go_below_zero() {
        let g = AtomicU64::new(2);
        sub(&g, 5);
        assert_eq!(get(&g), 0);
    }
}
