//! The service's own metrics (the kit already records per-RPC counts and latency):
//! availability cache hits and misses, database loads per section, and the age of what
//! was served. Exported through OpenTelemetry; totals are also kept in process so tests
//! and the benchmark can read them.

use std::sync::atomic::{AtomicU64, Ordering};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter};

/// Served-age bucket bounds, in milliseconds.
const AGE_BOUNDS_MS: &[f64] = &[
    1.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2000.0, 5000.0,
];

/// In-process totals since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Availability answers served from a cached snapshot.
    pub availability_hits: u64,
    /// Availability answers that had to wait for a load (theirs or a coalesced one).
    pub availability_misses: u64,
    /// Database reads of availability (one per section and load).
    pub availability_loads: u64,
    /// Database reads of layouts (one per event and load).
    pub layout_loads: u64,
}

/// The instruments and their in-process totals.
#[derive(Debug)]
pub struct Metrics {
    cache: Counter<u64>,
    loads: Counter<u64>,
    age: Histogram<f64>,
    hits: AtomicU64,
    misses: AtomicU64,
    availability_loads: AtomicU64,
    layout_loads: AtomicU64,
}

impl Metrics {
    /// Instruments built from `meter` (e.g. `stadium_telemetry::meter("seat-map")`).
    pub fn new(meter: &Meter) -> Self {
        Self {
            cache: meter
                .u64_counter("seat_map.cache")
                .with_description("availability cache lookups by result (hit, miss)")
                .with_unit("{lookup}")
                .build(),
            loads: meter
                .u64_counter("seat_map.db_loads")
                .with_description(
                    "database reads by kind (availability per section, layout per event)",
                )
                .with_unit("{query}")
                .build(),
            age: meter
                .f64_histogram("seat_map.served_age")
                .with_description("age of the availability served (staleness), per section answer")
                .with_unit("ms")
                .with_boundaries(AGE_BOUNDS_MS.to_vec())
                .build(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            availability_loads: AtomicU64::new(0),
            layout_loads: AtomicU64::new(0),
        }
    }

    pub(crate) fn cache_lookup(&self, hit: bool) {
        let (counter, result) = if hit {
            (&self.hits, "hit")
        } else {
            (&self.misses, "miss")
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.cache.add(1, &[KeyValue::new("result", result)]);
    }

    pub(crate) fn availability_load(&self, event_id: i64, section_id: u64) {
        self.availability_loads.fetch_add(1, Ordering::Relaxed);
        self.loads.add(
            1,
            &[
                KeyValue::new("kind", "availability"),
                KeyValue::new("event_id", event_id),
                KeyValue::new("section_id", section_id as i64),
            ],
        );
    }

    pub(crate) fn layout_load(&self) {
        self.layout_loads.fetch_add(1, Ordering::Relaxed);
        self.loads.add(1, &[KeyValue::new("kind", "layout")]);
    }

    pub(crate) fn served_age(&self, age_ms: u64) {
        self.age.record(age_ms as f64, &[]);
    }

    /// The totals so far.
    pub fn totals(&self) -> Totals {
        Totals {
            availability_hits: self.hits.load(Ordering::Relaxed),
            availability_misses: self.misses.load(Ordering::Relaxed),
            availability_loads: self.availability_loads.load(Ordering::Relaxed),
            layout_loads: self.layout_loads.load(Ordering::Relaxed),
        }
    }
}
