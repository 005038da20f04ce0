//! The service's own metrics (the kit records per-RPC counts and latency already):
//! claims by outcome, `SEAT_TAKEN` answers, expiries by who marked them, transaction
//! retries by SQLSTATE, claim latency and the size of claim batches. Exported through
//! OpenTelemetry; the totals are also kept in process so tests and logs can read them,
//! and each claim is also counted per section for `holds.section_load`
//! ([`crate::section_load`]), where the box office sums every replica's counts.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Gauge, Histogram, Meter};
use stadium_db::{CLAIM_LATENCY_BOUNDS_MS, DbFailure, LockWaits};

use crate::section_load::SectionLoad;

/// In-process totals since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Claims that created a hold.
    pub claimed: u64,
    /// Claims refused with `SEAT_TAKEN`.
    pub seat_taken: u64,
    /// Rows marked expired by claims (lazy expiry).
    pub expired_lazily: u64,
    /// Rows marked expired by the sweeper or `SweepExpired`.
    pub expired_by_sweeper: u64,
    /// Transactions retried after 40001.
    pub retries_40001: u64,
    /// Transactions retried after 40P01 (should stay zero: the lock order prevents it).
    pub retries_40p01: u64,
    /// Batches of fans' claims run (one transaction each, a lone claim included).
    pub claim_batches: u64,
    /// Fans' claims run in those batches (claims per batch = this ÷ `claim_batches`).
    pub batched_claims: u64,
}

/// Where a claim was made: the attributes of its metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The event.
    pub event: i64,
    /// The section asked for or held; `None` for a price category that found none.
    pub section: Option<i64>,
    /// The database of the section (`main` or a shard's name; `unknown` when the
    /// route could not be read).
    pub shard: String,
}

/// The instruments and their in-process totals.
#[derive(Debug)]
pub struct Metrics {
    claims: Counter<u64>,
    seat_taken: Counter<u64>,
    expiries: Counter<u64>,
    retries: Counter<u64>,
    claim_latency: Histogram<f64>,
    batch_size: Histogram<u64>,
    lock_waits: Gauge<u64>,
    /// The lock waits last recorded above zero, so that their places are recorded back
    /// to zero once nobody waits there (and so that tests and logs can read them).
    waiting_places: Mutex<Vec<LockWaits>>,
    claimed_total: AtomicU64,
    seat_taken_total: AtomicU64,
    expired_lazily_total: AtomicU64,
    expired_by_sweeper_total: AtomicU64,
    retries_40001_total: AtomicU64,
    retries_40p01_total: AtomicU64,
    claim_batches_total: AtomicU64,
    batched_claims_total: AtomicU64,
    section_load: Arc<SectionLoad>,
}

impl Metrics {
    /// Instruments built from `meter` (e.g. `stadium_telemetry::meter("holds")`).
    pub fn new(meter: &Meter) -> Self {
        Self {
            claims: meter
                .u64_counter("holds.claims")
                .with_description("seat claims by outcome (held, seat_taken, refused, shed, error)")
                .with_unit("{claim}")
                .build(),
            seat_taken: meter
                .u64_counter("holds.seat_taken")
                .with_description("claims answered SEAT_TAKEN")
                .with_unit("{claim}")
                .build(),
            expiries: meter
                .u64_counter("holds.expiries")
                .with_description(
                    "seat rows marked expired, by source (claim: also per event, section and shard; sweeper)",
                )
                .with_unit("{seat}")
                .build(),
            retries: meter
                .u64_counter("holds.tx_retries")
                .with_description("transactions retried, by SQLSTATE (40001, 40P01)")
                .with_unit("{retry}")
                .build(),
            claim_latency: meter
                .f64_histogram("holds.claim.duration")
                .with_description("claim latency including retries")
                .with_unit("ms")
                .with_boundaries(CLAIM_LATENCY_BOUNDS_MS.to_vec())
                .build(),
            batch_size: meter
                .u64_histogram("holds.claim.batch_size")
                .with_description("fans' claims per batch (one transaction)")
                .with_unit("{claim}")
                .with_boundaries(vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
                .build(),
            lock_waits: meter
                .u64_gauge("holds.section.lock_waits")
                .with_description(
                    "claims waiting now for a seat lock another claim holds, per event, section and shard",
                )
                .with_unit("{claim}")
                .build(),
            waiting_places: Mutex::new(Vec::new()),
            claimed_total: AtomicU64::new(0),
            seat_taken_total: AtomicU64::new(0),
            expired_lazily_total: AtomicU64::new(0),
            expired_by_sweeper_total: AtomicU64::new(0),
            retries_40001_total: AtomicU64::new(0),
            retries_40p01_total: AtomicU64::new(0),
            claim_batches_total: AtomicU64::new(0),
            batched_claims_total: AtomicU64::new(0),
            section_load: Arc::new(SectionLoad::new()),
        }
    }

    /// Records one finished claim at `place`: `outcome` is `held`, `seat_taken`,
    /// `refused`, `shed` (the claims gate's `OVERLOADED`) or `error`; `elapsed_ms` its latency. Counted and timed per outcome,
    /// event, section and shard, so an SRE sees each section's claims/s, `SEAT_TAKEN`
    /// rate and p99 (`holds.claims`, `holds.claim.duration`); also counted in
    /// [`Self::section_load`].
    pub fn claim(&self, outcome: &'static str, elapsed_ms: f64, place: &Place) {
        self.section_load.claim(outcome, elapsed_ms, place);
        let [event, section, shard] = place_attributes(place);
        let attrs = [KeyValue::new("outcome", outcome), event, section, shard];
        self.claims.add(1, &attrs);
        self.claim_latency.record(elapsed_ms, &attrs);
        match outcome {
            "held" => {
                self.claimed_total.fetch_add(1, Ordering::Relaxed);
            }
            "seat_taken" => {
                self.seat_taken.add(1, &attrs[1..]);
                self.seat_taken_total.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }

    /// Records `n` rows of `place` marked expired by the sweeper or `SweepExpired`,
    /// counted per event, section and shard (`holds.expiries`, source `sweeper`) and
    /// in [`Self::section_load`].
    pub fn expired_by_sweeper(&self, n: u64, place: &Place) {
        if n == 0 {
            return;
        }
        let [event, section, shard] = place_attributes(place);
        self.expiries.add(
            n,
            &[KeyValue::new("source", "sweeper"), event, section, shard],
        );
        self.expired_by_sweeper_total
            .fetch_add(n, Ordering::Relaxed);
        self.section_load.expired(n, place);
    }

    /// Records `n` rows a claim at `place` marked expired on its way (lazy expiry),
    /// counted per event, section and shard (`holds.expiries`, source `claim`) and in
    /// [`Self::section_load`].
    pub fn expired_by_claim(&self, n: u64, place: &Place) {
        if n == 0 {
            return;
        }
        let [event, section, shard] = place_attributes(place);
        self.expiries.add(
            n,
            &[KeyValue::new("source", "claim"), event, section, shard],
        );
        self.expired_lazily_total.fetch_add(n, Ordering::Relaxed);
        self.section_load.expired(n, place);
    }

    /// Records the claims waiting now for a seat's lock, per event, section and shard
    /// (`holds.section.lock_waits`, read by the section load writer from every
    /// database), and 0 for each place that had waiters at the last call and has none.
    pub fn lock_waits(&self, waits: &[LockWaits]) {
        let mut last = self
            .waiting_places
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now: HashSet<(&str, i64, i64)> = waits
            .iter()
            .map(|w| (w.shard.as_str(), w.event_id, w.section_id))
            .collect();
        let gone = last
            .iter()
            .filter(|w| !now.contains(&(w.shard.as_str(), w.event_id, w.section_id)))
            .map(|w| LockWaits {
                waiting: 0,
                ..w.clone()
            });
        for w in gone.chain(waits.iter().cloned()) {
            let place = Place {
                event: w.event_id,
                section: Some(w.section_id),
                shard: w.shard,
            };
            let waiting = u64::try_from(w.waiting).unwrap_or(0);
            self.lock_waits.record(waiting, &place_attributes(&place));
        }
        *last = waits.to_vec();
    }

    /// The lock waits last recorded (see [`Self::lock_waits`]); empty when nobody
    /// waited then.
    pub fn lock_waits_now(&self) -> Vec<LockWaits> {
        self.waiting_places
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// This process's per-section counts, for the writer of `holds.section_load`.
    pub fn section_load(&self) -> &Arc<SectionLoad> {
        &self.section_load
    }

    /// Records a batch of `claims` fans' claims about to run.
    pub fn claim_batch(&self, claims: usize) {
        let claims = u64::try_from(claims).unwrap_or(u64::MAX);
        self.batch_size.record(claims, &[]);
        self.claim_batches_total.fetch_add(1, Ordering::Relaxed);
        self.batched_claims_total
            .fetch_add(claims, Ordering::Relaxed);
    }

    /// Records a retried transaction.
    pub fn retry(&self, failure: &DbFailure) {
        self.retries.add(
            1,
            &[KeyValue::new("sqlstate", failure.sqlstate().to_owned())],
        );
        tracing::warn!(
            sqlstate = failure.sqlstate(),
            "retrying a claim transaction"
        );
        match failure {
            DbFailure::SerializationFailure => {
                self.retries_40001_total.fetch_add(1, Ordering::Relaxed);
            }
            DbFailure::DeadlockDetected => {
                self.retries_40p01_total.fetch_add(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }

    /// The in-process totals.
    pub fn totals(&self) -> Totals {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Totals {
            claimed: get(&self.claimed_total),
            seat_taken: get(&self.seat_taken_total),
            expired_lazily: get(&self.expired_lazily_total),
            expired_by_sweeper: get(&self.expired_by_sweeper_total),
            retries_40001: get(&self.retries_40001_total),
            retries_40p01: get(&self.retries_40p01_total),
            claim_batches: get(&self.claim_batches_total),
            batched_claims: get(&self.batched_claims_total),
        }
    }
}

/// `event_id`, `section_id` (`any` without a section) and `shard` of `place`.
fn place_attributes(place: &Place) -> [KeyValue; 3] {
    [
        KeyValue::new("event_id", place.event),
        KeyValue::new(
            "section_id",
            place
                .section
                .map_or_else(|| "any".to_owned(), |s| s.to_string()),
        ),
        KeyValue::new("shard", place.shard.clone()),
    ]
}

#[cfg(test)]
mod tests {
    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
    use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

    use super::*;

    /// (name, attributes as `key=value`, sorted) of every counter point exported.
    fn points(exporter: &InMemoryMetricExporter) -> Vec<(String, Vec<String>, u64)> {
        let mut out = Vec::new();
        for resource in exporter.get_finished_metrics().unwrap() {
            for metric in resource.scope_metrics().flat_map(|s| s.metrics()) {
                if let AggregatedMetrics::U64(MetricData::Sum(sum)) = metric.data() {
                    for point in sum.data_points() {
                        let mut attrs: Vec<String> = point
                            .attributes()
                            .map(|kv| format!("{}={}", kv.key, kv.value))
                            .collect();
                        attrs.sort();
                        out.push((metric.name().to_owned(), attrs, point.value()));
                    }
                }
            }
        }
        out.sort();
        out
    }

    /// (attributes as `key=value`, sorted; value) of every `holds.section.lock_waits`
    /// point exported.
    fn lock_wait_points(exporter: &InMemoryMetricExporter) -> Vec<(Vec<String>, u64)> {
        let mut out = Vec::new();
        for resource in exporter.get_finished_metrics().unwrap() {
            for metric in resource.scope_metrics().flat_map(|s| s.metrics()) {
                if let AggregatedMetrics::U64(MetricData::Gauge(gauge)) = metric.data() {
                    assert_eq!(metric.name(), "holds.section.lock_waits");
                    for point in gauge.data_points() {
                        let mut attrs: Vec<String> = point
                            .attributes()
                            .map(|kv| format!("{}={}", kv.key, kv.value))
                            .collect();
                        attrs.sort();
                        out.push((attrs, point.value()));
                    }
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn lock_waits_are_gauged_per_place_and_go_back_to_zero() {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        let metrics = Metrics::new(&provider.meter("holds-test"));
        let waits = |shard: &str, section: i64, waiting: i64| LockWaits {
            shard: shard.into(),
            event_id: 7,
            section_id: section,
            waiting,
        };
        let attrs = |shard: &str, section: i64| {
            vec![
                "event_id=7".to_owned(),
                format!("section_id={section}"),
                format!("shard={shard}"),
            ]
        };
        metrics.lock_waits(&[waits("east", 12, 3), waits("main", 13, 1)]);
        provider.force_flush().unwrap();
        assert_eq!(
            lock_wait_points(&exporter),
            [(attrs("east", 12), 3), (attrs("main", 13), 1)]
        );
        // Nobody waits in 13 any more: it reads 0, not its last count.
        exporter.reset();
        metrics.lock_waits(&[waits("east", 12, 2)]);
        provider.force_flush().unwrap();
        assert_eq!(
            lock_wait_points(&exporter),
            [(attrs("east", 12), 2), (attrs("main", 13), 0)]
        );
    }

    #[test]
    fn claims_are_counted_per_event_section_and_shard() {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        let metrics = Metrics::new(&provider.meter("holds-test"));
        let east = Place {
            event: 7,
            section: Some(12),
            shard: "east".into(),
        };
        metrics.claim("held", 2.0, &east);
        metrics.claim("seat_taken", 3.0, &east);
        metrics.claim("seat_taken", 3.0, &east);
        let anywhere = Place {
            event: 7,
            section: None,
            shard: "unknown".into(),
        };
        metrics.claim("seat_taken", 1.0, &anywhere);
        metrics.expired_by_claim(4, &east);
        metrics.expired_by_sweeper(2, &east);
        provider.force_flush().unwrap();

        let points = points(&exporter);
        let at = |name: &str, attrs: &[&str]| {
            points
                .iter()
                .find(|(n, a, _)| n == name && a == attrs)
                .map(|p| p.2)
        };
        assert_eq!(
            at(
                "holds.claims",
                &[
                    "event_id=7",
                    "outcome=seat_taken",
                    "section_id=12",
                    "shard=east"
                ]
            ),
            Some(2),
            "{points:?}"
        );
        assert_eq!(
            at(
                "holds.claims",
                &["event_id=7", "outcome=held", "section_id=12", "shard=east"]
            ),
            Some(1)
        );
        assert_eq!(
            at(
                "holds.seat_taken",
                &["event_id=7", "section_id=12", "shard=east"]
            ),
            Some(2)
        );
        assert_eq!(
            at(
                "holds.seat_taken",
                &["event_id=7", "section_id=any", "shard=unknown"]
            ),
            Some(1)
        );
        assert_eq!(
            at(
                "holds.expiries",
                &["event_id=7", "section_id=12", "shard=east", "source=claim"]
            ),
            Some(4)
        );
        assert_eq!(
            at(
                "holds.expiries",
                &[
                    "event_id=7",
                    "section_id=12",
                    "shard=east",
                    "source=sweeper"
                ]
            ),
            Some(2)
        );
        let totals = metrics.totals();
        assert_eq!(totals.seat_taken, 3);
        assert_eq!((totals.expired_lazily, totals.expired_by_sweeper), (4, 2));
    }
}
