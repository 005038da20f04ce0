//! The queue's figures of a run, from the timeline's samples of the waiting room's own
//! counts (`GetQueueStats`): how fast fans joined, how long the queue grew, and how
//! admission kept to the configured rate at every sample.

use serde::{Deserialize, Serialize};

use super::TimelinePoint;

/// What the queue did over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueSummary {
    /// Fans the waiting room numbered or pre-queued by the last sample.
    pub joined: u64,
    /// Fastest join rate between two samples, fans/s.
    pub peak_joins_per_s: f64,
    /// Longest queue seen (fans waiting), and when (ms after the start).
    pub peak_waiting: u64,
    /// When the queue was longest, ms after the start.
    pub peak_waiting_at_ms: u64,
    /// The configured admission rate at the last sample, fans/s.
    pub rate_per_s: f64,
    /// Fastest admission between two samples, fans/s (sampling jitter can put one
    /// interval above the rate; the bound below is the check).
    pub peak_admitted_per_s: f64,
    /// Samples at which the fans admitted since the first admission exceeded the rate
    /// times the time since then, plus one (0 when admission kept to the rate).
    pub samples_over_rate: u64,
    /// Redis bytes per fan in the queue's store when the queue was longest: what
    /// `used_memory` grew by since the first sample, over the fans joined by then
    /// (queued and admitted: an admitted fan's token is in it too); `None` when Redis
    /// was not read, or its memory did not grow (freed memory, other keys expiring and
    /// allocator reuse hide the queue's share: nothing can be said per fan).
    #[serde(default)]
    pub redis_bytes_per_fan: Option<f64>,
    /// The longest stretch, after the first fresh inventory report and while fans
    /// still waited, over which the waiting room had no fresh report (its admission
    /// then keeps to the rate alone): (ms, ms after the start it began); `None` when
    /// every such sample had one.
    #[serde(default)]
    pub longest_without_inventory: Option<(u64, u64)>,
}

impl QueueSummary {
    /// The summary of `timeline` (samples in time order; those without the waiting
    /// room's counts, `fans_per_minute` 0, are skipped).
    pub fn from_timeline(timeline: &[TimelinePoint]) -> Self {
        let samples: Vec<&TimelinePoint> =
            timeline.iter().filter(|p| p.fans_per_minute > 0).collect();
        let mut summary = QueueSummary::default();
        for pair in samples.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let dt = b.t_ms.saturating_sub(a.t_ms) as f64 / 1_000.0;
            if dt <= 0.0 {
                continue;
            }
            let joins = b.joined.saturating_sub(a.joined) as f64 / dt;
            let admitted = b.admitted.saturating_sub(a.admitted) as f64 / dt;
            summary.peak_joins_per_s = summary.peak_joins_per_s.max(joins);
            summary.peak_admitted_per_s = summary.peak_admitted_per_s.max(admitted);
        }
        let mut peak = None;
        for p in &samples {
            if p.waiting > summary.peak_waiting {
                summary.peak_waiting = p.waiting;
                summary.peak_waiting_at_ms = p.t_ms;
                peak = Some(*p);
            }
        }
        let first_read = samples.iter().find(|p| p.redis_used_bytes > 0);
        if let (Some(first), Some(peak)) = (first_read, peak)
            && peak.redis_used_bytes > first.redis_used_bytes
            && peak.joined > first.joined
        {
            let grown = peak.redis_used_bytes.saturating_sub(first.redis_used_bytes);
            summary.redis_bytes_per_fan =
                Some(grown as f64 / peak.joined.saturating_sub(first.joined) as f64);
        }
        if let Some(last) = samples.last() {
            summary.joined = last.joined;
            summary.rate_per_s = f64::from(last.fans_per_minute) / 60.0;
        }
        summary.longest_without_inventory = longest_without_inventory(&samples);
        // The bound counts from the sample before the first admission: admission can
        // only have started after it.
        // Times are the waiting room's own (when it took its counts) where it gave them.
        let at = |p: &TimelinePoint| p.queue_as_of_ms.unwrap_or(p.t_ms);
        if let Some(start) = samples.iter().rposition(|p| p.admitted == 0) {
            let origin = samples[start];
            summary.samples_over_rate = samples[start..]
                .iter()
                .filter(|p| {
                    let elapsed_min = at(p).saturating_sub(at(origin)) as f64 / 60_000.0;
                    let allowed = f64::from(p.fans_per_minute) * elapsed_min + 1.0;
                    p.admitted as f64 > allowed
                })
                .count() as u64;
        }
        summary
    }
}

/// See [`QueueSummary::longest_without_inventory`]: a stretch runs from the first
/// sample without a fresh report to the next one with it (or to the last sample with
/// fans waiting).
fn longest_without_inventory(samples: &[&TimelinePoint]) -> Option<(u64, u64)> {
    let first = samples.iter().position(|p| p.inventory_fresh)?;
    let end = samples.iter().rposition(|p| p.waiting > 0)?;
    let mut longest: Option<(u64, u64)> = None;
    let mut since = None;
    for p in samples.get(first..=end)? {
        match (p.inventory_fresh, since) {
            (true, Some(from)) => {
                since = None;
                let gap = p.t_ms.saturating_sub(from);
                if longest.is_none_or(|(ms, _)| gap > ms) {
                    longest = Some((gap, from));
                }
            }
            (true, None) => {}
            (false, None) => since = Some(p.t_ms),
            (false, Some(_)) => {}
        }
    }
    if let Some(from) = since {
        let gap = samples[end].t_ms.saturating_sub(from);
        if longest.is_none_or(|(ms, _)| gap > ms) {
            longest = Some((gap, from));
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t_ms: u64, joined: u64, waiting: u64, admitted: u64) -> TimelinePoint {
        TimelinePoint {
            t_ms,
            admitted,
            joined,
            waiting,
            fans_per_minute: 600,
            redis_used_bytes: 1_000_000 + joined * 80,
            ..TimelinePoint::default()
        }
    }

    #[test]
    fn rates_peaks_and_the_bound_come_from_the_samples() {
        let timeline = [
            sample(0, 0, 0, 0),
            sample(1_000, 500, 500, 0),
            sample(2_000, 2_000, 2_000, 0),
            sample(3_000, 2_500, 2_490, 10),
            sample(4_000, 2_500, 2_480, 20),
        ];
        let s = QueueSummary::from_timeline(&timeline);
        assert_eq!(s.joined, 2_500);
        assert_eq!(s.peak_joins_per_s, 1_500.0);
        assert_eq!((s.peak_waiting, s.peak_waiting_at_ms), (2_490, 3_000));
        assert_eq!(s.rate_per_s, 10.0);
        assert_eq!(s.peak_admitted_per_s, 10.0);
        assert_eq!(s.samples_over_rate, 0);
        assert_eq!(s.redis_bytes_per_fan, Some(80.0));
        let unread: Vec<TimelinePoint> = timeline
            .iter()
            .map(|p| TimelinePoint {
                redis_used_bytes: 0,
                ..*p
            })
            .collect();
        assert_eq!(
            QueueSummary::from_timeline(&unread).redis_bytes_per_fan,
            None
        );
        // Memory that did not grow (or shrank) with the queue says nothing per fan.
        let shrinking: Vec<TimelinePoint> = timeline
            .iter()
            .map(|p| TimelinePoint {
                redis_used_bytes: 5_000_000 - p.joined,
                ..*p
            })
            .collect();
        assert_eq!(
            QueueSummary::from_timeline(&shrinking).redis_bytes_per_fan,
            None
        );
        let flat: Vec<TimelinePoint> = timeline
            .iter()
            .map(|p| TimelinePoint {
                redis_used_bytes: 5_000_000,
                ..*p
            })
            .collect();
        assert_eq!(QueueSummary::from_timeline(&flat).redis_bytes_per_fan, None);
    }

    #[test]
    fn admission_past_the_rate_is_counted_and_samples_without_counts_are_skipped() {
        let mut unanswered = sample(2_500, 0, 0, 0);
        unanswered.fans_per_minute = 0;
        let timeline = [
            sample(0, 100, 100, 0),
            sample(1_000, 100, 80, 20),
            unanswered,
            sample(2_000, 100, 75, 25),
        ];
        let s = QueueSummary::from_timeline(&timeline);
        // 20 admitted 1 s after the last sample with none: 10/s allows 11.
        assert_eq!(s.samples_over_rate, 2);
        assert_eq!(s.peak_admitted_per_s, 20.0);
    }

    #[test]
    fn the_bound_is_checked_on_the_waiting_rooms_times_of_its_counts() {
        // The sample before the first admission was answered 900 ms after the waiting
        // room took its counts: by the samples' own times 20 fans came in 1.1 s and 30
        // in 2.1 s (10/s allows 12 and 22), by the waiting room's in 2 s and 3 s
        // (allows 21 and 31).
        let answered = |t_ms, as_of_ms, admitted| TimelinePoint {
            queue_as_of_ms: Some(as_of_ms),
            ..sample(t_ms, 100, 100 - admitted, admitted)
        };
        let timeline = [
            answered(1_000, 100, 0),
            answered(2_100, 2_100, 20),
            answered(3_100, 3_100, 30),
        ];
        assert_eq!(QueueSummary::from_timeline(&timeline).samples_over_rate, 0);
        let by_sample_times: Vec<TimelinePoint> = timeline
            .iter()
            .map(|p| TimelinePoint {
                queue_as_of_ms: None,
                ..*p
            })
            .collect();
        assert_eq!(
            QueueSummary::from_timeline(&by_sample_times).samples_over_rate,
            2
        );
    }

    #[test]
    fn the_longest_stretch_without_a_fresh_inventory_report_is_found() {
        let at = |t_ms, inventory_fresh, waiting| TimelinePoint {
            inventory_fresh,
            ..sample(t_ms, 100, waiting, 0)
        };
        let timeline = [
            at(0, false, 100), // before the first report: not counted
            at(1_000, true, 100),
            at(2_000, false, 90),
            at(3_000, true, 80),
            at(4_000, false, 70),
            at(5_000, false, 60),
            at(6_500, true, 50),
            at(7_000, false, 0), // nobody waits any more: not counted
        ];
        assert_eq!(
            QueueSummary::from_timeline(&timeline).longest_without_inventory,
            Some((2_500, 4_000))
        );
        let fresh: Vec<TimelinePoint> = timeline
            .iter()
            .map(|p| TimelinePoint {
                inventory_fresh: true,
                ..*p
            })
            .collect();
        assert_eq!(
            QueueSummary::from_timeline(&fresh).longest_without_inventory,
            None
        );
    }
}
