//! OpenTelemetry instruments of the waiting room (exported by the telemetry crate's
//! meter provider when OTLP is configured; per-RPC counts and latencies come from the
//! service kit).

use opentelemetry::{
    KeyValue,
    metrics::{Counter, Gauge, Meter},
};

use crate::domain::{EventId, QueueSnapshot};

/// The instruments; cheap to clone.
#[derive(Debug, Clone)]
pub struct Metrics {
    joins: Counter<u64>,
    admissions: Counter<u64>,
    completions: Counter<u64>,
    joined: Gauge<u64>,
    admitted: Gauge<u64>,
    active: Gauge<u64>,
    rate: Gauge<u64>,
}

impl Metrics {
    /// Instruments on `meter` (usually `opentelemetry::global::meter("waiting-room")`).
    pub fn new(meter: &Meter) -> Self {
        Self {
            joins: meter
                .u64_counter("waiting_room.joins")
                .with_description("Join calls answered, by event (re-joins included)")
                .with_unit("{call}")
                .build(),
            admissions: meter
                .u64_counter("waiting_room.admission_tokens")
                .with_description("Admission tokens issued (first issue per fan), by event")
                .with_unit("{token}")
                .build(),
            completions: meter
                .u64_counter("waiting_room.completions")
                .with_description("Admissions reported complete that freed a place, by event")
                .with_unit("{admission}")
                .build(),
            joined: meter
                .u64_gauge("waiting_room.joined")
                .with_description("Fans who joined the event's queue")
                .with_unit("{fan}")
                .build(),
            admitted: meter
                .u64_gauge("waiting_room.frontier")
                .with_description("Fans admitted so far (the admission frontier)")
                .with_unit("{fan}")
                .build(),
            active: meter
                .u64_gauge("waiting_room.active_admitted")
                .with_description("Admitted fans neither done nor expired")
                .with_unit("{fan}")
                .build(),
            rate: meter
                .u64_gauge("waiting_room.rate")
                .with_description("Configured admission rate")
                .with_unit("{fan}/min")
                .build(),
        }
    }

    fn attrs(event: &EventId) -> [KeyValue; 1] {
        [KeyValue::new("event_id", event.to_string())]
    }

    /// Records a queue snapshot's gauges.
    pub fn snapshot(&self, event: &EventId, snap: &QueueSnapshot) {
        let attrs = Self::attrs(event);
        self.joined.record(snap.joined, &attrs);
        self.admitted.record(snap.frontier, &attrs);
        self.active.record(snap.active, &attrs);
        self.rate.record(u64::from(snap.fans_per_minute), &attrs);
    }

    /// Counts a join.
    pub fn joined(&self, event: &EventId) {
        self.joins.add(1, &Self::attrs(event));
    }

    /// Counts a newly issued admission token.
    pub fn admitted(&self, event: &EventId) {
        self.admissions.add(1, &Self::attrs(event));
    }

    /// Counts a completion that freed a place.
    pub fn completed(&self, event: &EventId) {
        self.completions.add(1, &Self::attrs(event));
    }
}
