//! What a run found ([`RunReport`]) and its renderings: a terminal table
//! ([`RunReport::to_text`]), JSON ([`RunReport::to_json`]) and an SVG chart of
//! admitted, held and sold over time ([`RunReport::to_svg`]).

mod memory;
mod queue;
mod svg;
mod text;

pub use memory::{MemoryReport, ProcessMemory};
pub use queue::QueueSummary;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::invariants::InvariantCheck;
use crate::latency::LatencySummary;
use crate::stats::ErrorCount;

/// gRPC codes (as [`ErrorCount::code`] spells them) that only a fault answers with:
/// `INTERNAL`, `UNKNOWN`, `DATA_LOSS`.
pub const SERVER_FAULTS: [&str; 3] = ["Internal", "Unknown", "DataLoss"];

/// One timeline sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Milliseconds since the run started.
    pub t_ms: u64,
    /// Fans admitted so far (see [`RunReport::timeline_sources`]).
    pub admitted: u64,
    /// Seats held and not yet paid or lapsed.
    pub held: u64,
    /// Seats sold.
    pub sold: u64,
    /// Claims made so far (picked seats and best available).
    #[serde(default)]
    pub claims: u64,
    /// Claims answered `SEAT_TAKEN` so far.
    #[serde(default)]
    pub seat_taken: u64,
    /// Fans the waiting room has taken in so far (0 when it did not answer).
    #[serde(default)]
    pub joined: u64,
    /// Fans waiting in the queue (0 when the waiting room did not answer).
    #[serde(default)]
    pub waiting: u64,
    /// The configured admission rate, fans/min (0 when the waiting room did not
    /// answer).
    #[serde(default)]
    pub fans_per_minute: u32,
    /// Redis's `used_memory`, bytes (0 when not read).
    #[serde(default)]
    pub redis_used_bytes: u64,
    /// Whether the waiting room had a fresh inventory report of the event (the seats
    /// its admission is capped by); false when it had none or did not answer.
    #[serde(default)]
    pub inventory_fresh: bool,
    /// When the waiting room took its counts (`as_of`), ms since the run started by the
    /// wall clock; `None` when it did not answer. The admission bound is checked on
    /// these times: a sample's own `t_ms` is taken after its answer, late by the call.
    #[serde(default)]
    pub queue_as_of_ms: Option<u64>,
}

/// Late payers: fans who confirmed after their hold lapsed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LateSummary {
    /// Late confirms sent.
    pub payments: u64,
    /// Answered with an order REFUNDED for HOLD_EXPIRED (charged, then refunded).
    pub refunded: u64,
    /// Seats of those refunded orders.
    pub refunded_seats: u64,
    /// Answered FAILED_PRECONDITION/HOLD_EXPIRED (refused before any charge).
    pub rejected: u64,
    /// Answered PAID: an expired hold was booked (must be 0).
    pub paid_anyway: u64,
}

/// How long fans waited for a final answer about their payment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalAnswers {
    /// The most a fan may wait, from its first Confirm, ms
    /// ([`crate::OnSaleOptions::final_answer_bound`]).
    pub bound_ms: u64,
    /// Fans whose payment got a final answer (paid, refunded, failed, refused) within
    /// the bound.
    pub answered: u64,
    /// The longest of those waits, ms.
    pub max_ms: u64,
    /// Fans still without a final answer at the bound (must be 0).
    pub past_bound: u64,
    /// Fans who left after an open answer and looked their order up later.
    pub walked_away: u64,
    /// Of them, those who found their order paid, refunded or failed.
    pub walked_away_settled: u64,
}

/// Fans who sent two confirms at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoubleConfirmSummary {
    /// Pairs sent.
    pub pairs: u64,
    /// Pairs whose both answers named the same order (one charge by the hold key).
    pub same_order: u64,
    /// Pairs refused alike (same code and reason, e.g. the hold had lapsed).
    pub same_refusal: u64,
    /// Pairs answered with different orders, or an order and a refusal (must be 0).
    pub inconsistent: u64,
}

/// Everything a run measured. Counts come from the run's own bookkeeping of the
/// answers the services gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// The event run against.
    pub event_id: String,
    /// Its venue's name.
    pub venue_name: String,
    /// Seats in the venue.
    pub venue_seats: u64,
    /// The seed of the run.
    pub seed: u64,
    /// The time compression of the fans' timing.
    pub time_scale: f64,
    /// Fans simulated.
    pub fans: u64,
    /// Fans who got a place in the queue.
    pub joined: u64,
    /// Fans admitted (own count).
    pub admitted: u64,
    /// Fans who left without a hold (sold out, refused, waited too long).
    pub gave_up: u64,
    /// Rounds of `max_claim_attempts` claims that ended without a hold, after which the
    /// fan stepped back and tried again (the sale was still on).
    pub claim_rounds_lost: u64,
    /// Of the fans who left without a hold, those whose admission lapsed: its token
    /// refused by holds while they were still trying, or the waiting room answering
    /// `ADMISSION_EXPIRED` to the poll that came to take it.
    pub admission_expired: u64,
    /// Of the fans who left without a hold, those still trying after `max_queue_wait`.
    pub out_of_time: u64,
    /// Fans the waiting room told `SOLD_OUT` while they queued (they went home
    /// without being admitted).
    pub told_sold_out: u64,
    /// Claims made (ClaimSeats and ClaimBestAvailable calls).
    pub claim_attempts: u64,
    /// Claims answered SEAT_TAKEN.
    pub seat_taken: u64,
    /// `seat_taken / claim_attempts` (0 without claims).
    pub seat_taken_rate: f64,
    /// Best-available claims that found no block anywhere while seats were held and
    /// waited in the returns queue instead of being answered SEAT_TAKEN (counted once
    /// per claim, however often the fan then looked).
    pub queued_for_returns: u64,
    /// Holds the returns queue made for waiting fans.
    pub served_from_queue: u64,
    /// Holds obtained.
    pub holds_made: u64,
    /// Seats in paid orders (each double confirm counted once).
    pub seats_sold: u64,
    /// Paid orders.
    pub orders_paid: u64,
    /// Abandoned holds that lapsed.
    pub holds_expired: u64,
    /// Seats of those holds.
    pub seats_expired: u64,
    /// Seats the run still held when it ended (0 when every hold was settled).
    pub seats_held_at_end: u64,
    /// Late payers.
    pub late: LateSummary,
    /// Timely confirms answered with a refund (the hold lapsed during the payment).
    pub unexpected_refunds: u64,
    /// Seats of those refunds.
    pub unexpected_refund_seats: u64,
    /// Payments that ended without an order (declined, expired, errors).
    pub pay_failed: u64,
    /// Double confirms.
    pub double_confirm: DoubleConfirmSummary,
    /// Fans' waits for a final answer about their payment.
    #[serde(default)]
    pub final_answers: FinalAnswers,
    /// Failed RPCs by RPC, code and reason (SEAT_TAKEN included).
    pub errors: Vec<ErrorCount>,
    /// Latency per RPC.
    pub latency: Vec<LatencySummary>,
    /// Run duration, seconds.
    pub wall_time_s: f64,
    /// Seconds from the start to when the seat map first showed no free seat.
    pub sold_out_after_s: Option<f64>,
    /// Seats sold per second between the opening and the last sale.
    pub throughput_seats_per_s: f64,
    /// Samples every ~250 ms.
    pub timeline: Vec<TimelinePoint>,
    /// The queue's figures, from the timeline.
    #[serde(default)]
    pub queue: QueueSummary,
    /// Memory figures, when the runner measured them.
    #[serde(default)]
    pub memory: Option<MemoryReport>,
    /// Where the timeline's numbers come from.
    pub timeline_sources: String,
    /// The invariant canary and the comparison with the box office, once checked.
    pub invariants: Option<InvariantCheck>,
}

impl RunReport {
    /// The report as pretty-printed JSON.
    ///
    /// Errors: [`crate::LoadtestError::Json`] (not expected: every field serialises).
    pub fn to_json(&self) -> Result<String> {
        Ok(serde_json::to_string_pretty(self)?)
    }

    /// Whether the run found nothing wrong: the invariant check ran and passed, no
    /// late payment was booked, every double confirm answered one order, every fan who
    /// confirmed had a final answer within the bound, and no service answered with a
    /// fault ([`SERVER_FAULTS`]).
    pub fn is_ok(&self) -> bool {
        self.invariants.as_ref().is_some_and(InvariantCheck::is_ok)
            && self.late.paid_anyway == 0
            && self.final_answers.past_bound == 0
            && self.double_confirm.inconsistent == 0
            && self.server_faults() == 0
    }

    /// Answers whose gRPC code is one of [`SERVER_FAULTS`]: a bug or a broken
    /// deployment, never a fan's expected outcome.
    pub fn server_faults(&self) -> u64 {
        self.errors
            .iter()
            .filter(|e| SERVER_FAULTS.contains(&e.code.as_str()))
            .map(|e| e.count)
            .sum()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::invariants::{Disagreement, SalesTotals, ViolationSummary};

    /// A small made-up report for the renderer tests.
    pub(crate) fn synthetic() -> RunReport {
        RunReport {
            event_id: "ev-1".into(),
            venue_name: "Test <Arena> & Co".into(),
            venue_seats: 500,
            seed: 7,
            time_scale: 10.0,
            fans: 2_000,
            joined: 2_000,
            admitted: 900,
            gave_up: 1_200,
            claim_rounds_lost: 5,
            admission_expired: 3,
            out_of_time: 1,
            told_sold_out: 10,
            claim_attempts: 1_000,
            seat_taken: 100,
            seat_taken_rate: 0.1,
            queued_for_returns: 40,
            served_from_queue: 30,
            holds_made: 800,
            seats_sold: 450,
            orders_paid: 200,
            holds_expired: 40,
            seats_expired: 80,
            seats_held_at_end: 0,
            late: LateSummary {
                payments: 10,
                refunded: 6,
                refunded_seats: 12,
                rejected: 4,
                paid_anyway: 0,
            },
            unexpected_refunds: 0,
            unexpected_refund_seats: 0,
            pay_failed: 1,
            double_confirm: DoubleConfirmSummary {
                pairs: 12,
                same_order: 11,
                same_refusal: 1,
                inconsistent: 0,
            },
            final_answers: FinalAnswers {
                bound_ms: 120_000,
                answered: 290,
                max_ms: 4_200,
                past_bound: 0,
                walked_away: 3,
                walked_away_settled: 3,
            },
            errors: vec![ErrorCount {
                rpc: "Holds/ClaimSeats".into(),
                code: "AlreadyExists".into(),
                reason: "SEAT_TAKEN".into(),
                count: 100,
            }],
            latency: vec![LatencySummary {
                rpc: "Holds/ClaimSeats".into(),
                count: 1_000,
                p50_ms: 3.2,
                p99_ms: 41.0,
                max_ms: 80.5,
            }],
            wall_time_s: 42.5,
            sold_out_after_s: Some(30.0),
            throughput_seats_per_s: 15.0,
            timeline: (0..=20)
                .map(|i| TimelinePoint {
                    t_ms: i * 250,
                    admitted: i * 45,
                    held: (i * 10).min(100),
                    sold: i * 22,
                    claims: i * 30,
                    seat_taken: i * 3,
                    joined: 2_000,
                    waiting: 2_000 - i * 45,
                    fans_per_minute: 12_000,
                    redis_used_bytes: 1_000_000 + i * 2_000,
                    inventory_fresh: true,
                    queue_as_of_ms: Some(i * 250),
                })
                .collect(),
            queue: QueueSummary {
                joined: 2_000,
                peak_joins_per_s: 4_000.0,
                peak_waiting: 1_990,
                peak_waiting_at_ms: 500,
                rate_per_s: 200.0,
                peak_admitted_per_s: 180.0,
                samples_over_rate: 0,
                redis_bytes_per_fan: Some(80.0),
                longest_without_inventory: None,
            },
            memory: Some(MemoryReport {
                processes: vec![ProcessMemory {
                    name: "simulator".into(),
                    peak_rss_bytes: 52_428_800,
                }],
            }),
            timeline_sources: "admitted: GetQueueStats; held, sold: run counters".into(),
            invariants: Some(InvariantCheck {
                checked: true,
                violations: vec![ViolationSummary {
                    invariant: "two_active_claims".into(),
                    description: "seat 12 twice".into(),
                    rows: vec!["seat 12".into()],
                }],
                disagreements: vec![Disagreement {
                    what: "seats sold".into(),
                    report: 450,
                    database: 448,
                }],
                sales: Some(SalesTotals {
                    seats: 500,
                    available: 50,
                    held: 0,
                    sold: 448,
                    blocked: 2,
                    refunded_seats: 12,
                }),
                problems: vec![],
            }),
        }
    }

    #[test]
    fn json_round_trips() {
        let report = synthetic();
        let json = report.to_json().unwrap();
        let back: RunReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report);
        assert!(json.contains("\"seat_taken_rate\": 0.1"));
    }

    #[test]
    fn a_violation_fails_the_run() {
        let mut report = synthetic();
        assert!(!report.is_ok());
        let check = report.invariants.as_mut().unwrap();
        check.violations.clear();
        check.disagreements.clear();
        assert!(report.is_ok());
        report.invariants = None;
        assert!(!report.is_ok());
    }

    #[test]
    fn a_server_fault_fails_the_run() {
        let mut report = synthetic();
        let check = report.invariants.as_mut().unwrap();
        check.violations.clear();
        check.disagreements.clear();
        assert!(report.is_ok());
        report.errors.push(ErrorCount {
            rpc: "Holds/ClaimSeats".into(),
            code: "Internal".into(),
            reason: "INTERNAL".into(),
            count: 634,
        });
        assert_eq!(report.server_faults(), 634);
        assert!(!report.is_ok());
        assert!(report.to_text().contains("SERVER FAULTS 634"));
    }
}
