//! The report as a terminal table.

use std::fmt::Write;

use super::RunReport;

/// `part / whole` as a percentage with one decimal, or `-` without a whole.
fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.1} %", part as f64 * 100.0 / whole as f64)
    }
}

impl RunReport {
    /// A readable table for a terminal: the counts, the checks, errors and latencies.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = self.write_text(&mut out);
        out
    }

    fn write_text(&self, out: &mut String) -> std::fmt::Result {
        let row =
            |out: &mut String, name: &str, value: String| writeln!(out, "  {name:<34} {value}");
        writeln!(
            out,
            "On-sale report: event {} at {}",
            self.event_id, self.venue_name
        )?;
        writeln!(
            out,
            "  seed {}, time scale {}, wall time {:.1} s",
            self.seed, self.time_scale, self.wall_time_s
        )?;
        writeln!(out, "\nFans")?;
        row(out, "fans", self.fans.to_string())?;
        row(out, "joined the queue", self.joined.to_string())?;
        row(out, "admitted", self.admitted.to_string())?;
        row(
            out,
            "told sold out in the queue",
            self.told_sold_out.to_string(),
        )?;
        row(
            out,
            "left without a hold",
            format!(
                "{} ({} admission lapsed, {} out of time, the others at the sell-out or refused)",
                self.gave_up, self.admission_expired, self.out_of_time
            ),
        )?;
        row(
            out,
            "claim rounds lost",
            format!(
                "{} (the fan stepped back and tried again)",
                self.claim_rounds_lost
            ),
        )?;
        let q = &self.queue;
        writeln!(out, "\nQueue (the waiting room's counts)")?;
        row(
            out,
            "joined",
            format!("{}, at most {:.0}/s", q.joined, q.peak_joins_per_s),
        )?;
        row(
            out,
            "longest queue",
            format!(
                "{} fans waiting, {:.1} s after the start",
                q.peak_waiting,
                q.peak_waiting_at_ms as f64 / 1_000.0
            ),
        )?;
        row(
            out,
            "admitted per second",
            format!(
                "at most {:.0}/s between two samples, rate {:.0}/s; {} samples past \
                 rate x elapsed + 1",
                q.peak_admitted_per_s, q.rate_per_s, q.samples_over_rate
            ),
        )?;
        row(
            out,
            "inventory report",
            match q.longest_without_inventory {
                None => "fresh at every sample while fans waited".into(),
                Some((ms, from_ms)) => format!(
                    "none fresh for up to {:.1} s (from {:.1} s after the start): admission \
                     kept to the rate alone",
                    ms as f64 / 1_000.0,
                    from_ms as f64 / 1_000.0
                ),
            },
        )?;
        row(
            out,
            "Redis per fan in the store",
            q.redis_bytes_per_fan.map_or_else(
                || "not measured".into(),
                |bytes| format!("{bytes:.0} bytes, at the longest queue"),
            ),
        )?;
        if let Some(memory) = &self.memory {
            writeln!(out, "\nMemory (peak resident)")?;
            for process in &memory.processes {
                row(
                    out,
                    &process.name,
                    format!("{:.1} MiB", process.peak_rss_bytes as f64 / 1_048_576.0),
                )?;
            }
        }
        writeln!(out, "\nSeats ({} in the venue)", self.venue_seats)?;
        row(
            out,
            "sold",
            format!(
                "{} ({}) in {} orders",
                self.seats_sold,
                percent(self.seats_sold, self.venue_seats),
                self.orders_paid
            ),
        )?;
        row(out, "holds made", self.holds_made.to_string())?;
        row(
            out,
            "holds expired (abandoned)",
            format!("{} ({} seats)", self.holds_expired, self.seats_expired),
        )?;
        row(
            out,
            "still held at the end",
            self.seats_held_at_end.to_string(),
        )?;
        row(
            out,
            "claims / SEAT_TAKEN",
            format!(
                "{} / {} ({:.1} %)",
                self.claim_attempts,
                self.seat_taken,
                self.seat_taken_rate * 100.0
            ),
        )?;
        row(
            out,
            "queued for returns",
            format!(
                "{} ({} served a hold from the line)",
                self.queued_for_returns, self.served_from_queue
            ),
        )?;
        row(
            out,
            "throughput",
            format!("{:.1} seats/s", self.throughput_seats_per_s),
        )?;
        row(
            out,
            "sold out after",
            self.sold_out_after_s
                .map_or_else(|| "not sold out".into(), |s| format!("{s:.1} s")),
        )?;
        writeln!(out, "\nPayments")?;
        row(
            out,
            "late payments",
            format!(
                "{}: {} refunded ({} seats), {} refused, {} booked",
                self.late.payments,
                self.late.refunded,
                self.late.refunded_seats,
                self.late.rejected,
                self.late.paid_anyway
            ),
        )?;
        row(
            out,
            "double confirms",
            format!(
                "{}: {} one order, {} refused alike, {} inconsistent",
                self.double_confirm.pairs,
                self.double_confirm.same_order,
                self.double_confirm.same_refusal,
                self.double_confirm.inconsistent
            ),
        )?;
        row(
            out,
            "refunds of timely payments",
            format!(
                "{} ({} seats)",
                self.unexpected_refunds, self.unexpected_refund_seats
            ),
        )?;
        row(out, "payments without order", self.pay_failed.to_string())?;
        let f = &self.final_answers;
        row(
            out,
            "final answers",
            format!(
                "{} within {:.0} s of the first Confirm (longest {:.1} s), {} past it",
                f.answered,
                f.bound_ms as f64 / 1_000.0,
                f.max_ms as f64 / 1_000.0,
                f.past_bound
            ),
        )?;
        row(
            out,
            "walked away, looked later",
            format!("{}: {} found settled", f.walked_away, f.walked_away_settled),
        )?;

        writeln!(out, "\nInvariants")?;
        match &self.invariants {
            None => writeln!(out, "  not checked")?,
            Some(check) => {
                if let Some(s) = &check.sales {
                    row(
                        out,
                        "box office totals",
                        format!(
                            "seats {} = sold {} + held {} + available {} + blocked {}; refunded {}",
                            s.seats, s.sold, s.held, s.available, s.blocked, s.refunded_seats
                        ),
                    )?;
                }
                if check.checked && check.violations.is_empty() {
                    row(out, "canary", "every invariant holds".into())?;
                }
                for v in &check.violations {
                    writeln!(out, "  VIOLATION {}: {}", v.invariant, v.description)?;
                    for r in v.rows.iter().take(10) {
                        writeln!(out, "      {r}")?;
                    }
                }
                for d in &check.disagreements {
                    writeln!(
                        out,
                        "  DISAGREEMENT {}: report {}, box office {}",
                        d.what, d.report, d.database
                    )?;
                }
                for p in &check.problems {
                    writeln!(out, "  NOT CHECKED {p}")?;
                }
            }
        }
        let faults = self.server_faults();
        if faults > 0 {
            writeln!(
                out,
                "  SERVER FAULTS {faults} answers were INTERNAL, UNKNOWN or DATA_LOSS (see Errors)"
            )?;
        }
        writeln!(
            out,
            "  result: {}",
            if self.is_ok() { "OK" } else { "FAILED" }
        )?;

        writeln!(out, "\nLatency (ms)")?;
        writeln!(
            out,
            "  {:<32} {:>9} {:>9} {:>9} {:>9}",
            "rpc", "calls", "p50", "p99", "max"
        )?;
        for l in &self.latency {
            writeln!(
                out,
                "  {:<32} {:>9} {:>9.2} {:>9.2} {:>9.2}",
                l.rpc, l.count, l.p50_ms, l.p99_ms, l.max_ms
            )?;
        }
        writeln!(out, "\nErrors")?;
        if self.errors.is_empty() {
            writeln!(out, "  none")?;
        }
        for e in &self.errors {
            let reason = if e.reason.is_empty() { "-" } else { &e.reason };
            writeln!(
                out,
                "  {:<32} {:<18} {:<24} {:>9}",
                e.rpc, e.code, reason, e.count
            )?;
        }
        writeln!(
            out,
            "\nTimeline: {} samples; {}",
            self.timeline.len(),
            self.timeline_sources
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::report::tests::synthetic;

    #[test]
    fn text_names_the_numbers_and_the_verdict() {
        let text = synthetic().to_text();
        assert!(text.contains("On-sale report: event ev-1"));
        assert!(text.contains("450 (90.0 %) in 200 orders"), "{text}");
        assert!(text.contains("1000 / 100 (10.0 %)"));
        assert!(
            text.contains("40 (30 served a hold from the line)"),
            "{text}"
        );
        assert!(text.contains("VIOLATION two_active_claims"));
        assert!(text.contains("DISAGREEMENT seats sold: report 450, box office 448"));
        assert!(text.contains("result: FAILED"));
        assert!(text.contains("Holds/ClaimSeats"));
        assert!(text.contains("SEAT_TAKEN"));
        assert!(text.contains("2000, at most 4000/s"), "{text}");
        assert!(
            text.contains("1990 fans waiting, 0.5 s after the start"),
            "{text}"
        );
        assert!(text.contains("rate 200/s; 0 samples past"), "{text}");
        assert!(text.contains("80 bytes, at the longest queue"), "{text}");
        assert!(text.contains("  simulator "), "{text}");
        assert!(text.contains("50.0 MiB"), "{text}");
    }
}
