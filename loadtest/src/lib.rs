//! Fans simulated over gRPC against a stadium deployment: the on-sale scenario and its
//! report.
//!
//! A run has three steps, each usable alone (the all-in-one runner calls them after
//! starting the services; the `loadtest` binary against any deployment):
//! 1. [`setup_event`]: import the venue, create the event with prices, open the sale a
//!    few seconds ahead;
//! 2. [`run_onsale`]: fans join the waiting room (most before
//!    opening), wait for admission, read the seat map, claim seats skewed toward the
//!    best sections, then pay, abandon, pay late or confirm twice;
//! 3. [`check_invariants`]: the box office's invariant canary plus the report's counts
//!    compared with the box office's sales report.
//!
//! The [`RunReport`] renders as a terminal table, JSON and an SVG chart.
//!
//! ```no_run
//! # async fn onsale() -> loadtest::Result<bool> {
//! use loadtest::{
//!     Credentials, EventOptions, OnSaleOptions, Targets, VenueSource, check_invariants,
//!     run_onsale, setup_event,
//! };
//!
//! let targets = Targets {
//!     waiting_room: "http://127.0.0.1:50051".into(),
//!     seat_map: "http://127.0.0.1:50052".into(),
//!     holds: "http://127.0.0.1:50053".into(),
//!     payments: "http://127.0.0.1:50054".into(),
//!     box_office: "http://127.0.0.1:50055".into(),
//!     ca_pem: None,
//! };
//! // The seed the services' dev issuer was started with.
//! let creds = Credentials::from_seed_hex(&"07".repeat(32))?;
//! let venue = VenueSource::generated(50_000, 100)?;
//! let event = setup_event(&targets, &creds, venue, &EventOptions::default()).await?;
//! let options = OnSaleOptions { fans: 100_000, time_scale: 10.0, ..OnSaleOptions::default() };
//! let mut report = run_onsale(&targets, &creds, &event, &options, true).await?;
//! report.invariants = Some(check_invariants(&targets, &creds, &event, &report).await?);
//! println!("{}", report.to_text());
//! Ok(report.is_ok())
//! # }
//! ```
//!
//! Time: [`OnSaleOptions::time_scale`] compresses only the fans' own timing (arrivals,
//! think times). The event's hold TTL and admission rate are the server's; compress
//! them through [`EventOptions`] when a short run is wanted.

mod budget;
mod claim;
pub mod cli;
mod credentials;
mod error;
mod fan;
mod final_answer;
pub mod floor;
mod invariants;
mod latency;
mod levels;
mod mix;
mod options;
mod pay;
mod queue;
mod redis_memory;
mod report;
mod returns_line;
mod run;
mod seatmap;
mod setup;
mod skew;
mod stats;
mod targets;
mod venue;

pub use credentials::{ADMIN_SUBJECT, Credentials};
pub use error::{LoadtestError, Result};
pub use invariants::{
    Disagreement, InvariantCheck, SalesTotals, ViolationSummary, check_invariants,
};
pub use latency::{LatencyRecorder, LatencySummary};
pub use mix::{Behaviour, FanPlan, plan_fan, plan_fans};
pub use options::{BehaviourShares, EventOptions, FINAL_ANSWER_BOUND, OnSaleOptions};
pub use report::{
    DoubleConfirmSummary, FinalAnswers, LateSummary, MemoryReport, ProcessMemory, QueueSummary,
    RunReport, TimelinePoint,
};
pub use run::{run_onsale, run_scenario};
pub use setup::{EventSetup, PricedCategory, setup_event};
pub use skew::{Candidate, pick_section, rank_sections};
pub use stats::ErrorCount;
pub use targets::{Clients, Targets};
pub use venue::{VenueFormat, VenueSource, plan_to_csv};
